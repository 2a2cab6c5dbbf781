//! Small shared helpers: standard base64 and random printable strings.
//!
//! Both platforms write signatures and ciphertexts in standard base64 with padding
//! (RFC 4648 section 4), and use random alphanumeric strings as nonces.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rand::Rng;
use rand::distr::Alphanumeric;

/// Standard base64 with padding.
pub(crate) fn encode_base64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Decodes standard base64 with padding; `None` for anything else.
pub(crate) fn decode_base64(text: &str) -> Option<Vec<u8>> {
    STANDARD.decode(text).ok()
}

/// `len` random ASCII letters and digits from the thread's CSPRNG (`rand::rng()`,
/// ChaCha seeded from the operating system).
pub(crate) fn random_alphanumeric(len: usize) -> String {
    rand::rng()
        .sample_iter(&Alphanumeric)
        .take(len)
        .map(char::from)
        .collect()
}

/// `bytes` random bytes as upper-case hex, like a certificate serial number.
pub(crate) fn random_upper_hex(bytes: usize) -> String {
    let mut rng = rand::rng();
    (0..bytes)
        .map(|_| format!("{:02X}", rng.random::<u8>()))
        .collect()
}
