//! The keys both platforms sign and encrypt with, and a key set for local runs.
//!
//! **RSA.** WeChat Pay (API v3) and Alipay (RSA2) both sign with RSA PKCS#1 v1.5
//! over SHA-256 ("SHA256withRSA"), with keys of 2048 bits. The merchant signs its
//! requests with its private key; the platform signs its answers and notifications
//! with the platform private key, and the merchant verifies them with the platform
//! public key (WeChat Pay: "微信支付公钥" or the platform certificate's key; Alipay:
//! "支付宝公钥"). Keys come as PEM:
//!
//! | PEM label | form | accepted by |
//! |---|---|---|
//! | `PRIVATE KEY` | PKCS#8 (WeChat Pay's `apiclient_key.pem`) | [`PrivateKey::from_pem`] |
//! | `RSA PRIVATE KEY` | PKCS#1 | [`PrivateKey::from_pem`] |
//! | `PUBLIC KEY` | SubjectPublicKeyInfo (X.509 SPKI) | [`PublicKey::from_pem`] |
//! | `RSA PUBLIC KEY` | PKCS#1 | [`PublicKey::from_pem`] |
//!
//! Encrypted private keys and certificates are refused with a message saying so.
//! Keys under 2048 bits are refused. Decoding is RustCrypto's (`rsa`, `pkcs8`,
//! `pkcs1`, `pem-rfc7468`).
//!
//! **The APIv3 key** ("APIv3密钥") is WeChat Pay's symmetric secret: 32 ASCII letters
//! and digits, used as the AES-256-GCM key of notification resources
//! ([`ApiV3Key`]).
//!
//! **Secrets stay out of logs.** [`PrivateKey`] and [`ApiV3Key`] print
//! `[REDACTED]` in `Debug`; no error message contains key text, and errors about
//! files name the path only.
//!
//! **Local runs.** [`generate`] writes a matching set into a directory (the files
//! are listed at [`LocalKeys`]); [`LocalKeys::load`] reads it back. The simulator's
//! `keys DIR` command and the backend's local configuration use the same names.

use crate::crypto;
use rsa::pkcs1::{DecodeRsaPrivateKey, DecodeRsaPublicKey};
use rsa::pkcs1v15::{Signature, SigningKey, VerifyingKey};
use rsa::pkcs8::der::pem;
use rsa::pkcs8::{
    DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey, LineEnding,
};
use rsa::rand_core::OsRng;
use rsa::signature::{RandomizedSigner, SignatureEncoding, Verifier};
use rsa::traits::PublicKeyParts;
use rsa::{RsaPrivateKey, RsaPublicKey};
use secrecy::zeroize::Zeroizing;
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The smallest RSA modulus accepted, in bits. Both platforms use 2048-bit keys
/// (WeChat Pay's scheme is even named `...-RSA2048`).
pub const MIN_RSA_BITS: usize = 2048;

/// The size of keys [`generate`] makes, in bits.
pub const GENERATED_RSA_BITS: usize = 2048;

/// Why a key could not be loaded, generated or written. Never contains key text.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The text is not a PEM document (no `-----BEGIN ...-----` line, bad base64...).
    #[error("not a PEM document: {0}")]
    NotPem(String),
    /// A PEM document of another kind than expected (a certificate, an EC key...).
    #[error("a PEM {found:?} block where {expected} was expected")]
    UnexpectedLabel {
        /// The label found after `BEGIN`.
        found: String,
        /// What would have been accepted.
        expected: &'static str,
    },
    /// An `ENCRYPTED PRIVATE KEY`: this crate has no passphrase to open it.
    #[error(
        "encrypted private keys are not supported; store it decrypted with mode 0600 (openssl pkey -in KEY -out PLAIN)"
    )]
    Encrypted,
    /// The PEM label was right but the content is not a valid RSA key.
    #[error("the {label} PEM block does not hold a valid RSA key: {reason}")]
    Invalid {
        /// The PEM label.
        label: &'static str,
        /// The decoder's reason (an ASN.1 position or kind, never key bytes).
        reason: String,
    },
    /// The modulus is shorter than [`MIN_RSA_BITS`].
    #[error("the RSA key has {bits} bits; at least {MIN_RSA_BITS} are required")]
    TooSmall {
        /// The modulus size found.
        bits: usize,
    },
    /// The APIv3 key is not 32 ASCII letters and digits.
    #[error("a WeChat Pay APIv3 key is exactly 32 ASCII letters and digits")]
    ApiV3Key,
    /// A certificate serial number that is empty or has characters other than
    /// ASCII letters, digits and `_`.
    #[error("a serial number is ASCII letters, digits and '_', and not empty")]
    Serial,
    /// A key file could not be read, or its content was refused.
    #[error("key file {}: {source}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: Box<KeyError>,
    },
    /// Reading or writing a file failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A public key that is not the half of the private key it was stored beside.
    #[error("the public key is not the one of the private key beside it")]
    Mismatch,
    /// [`generate`] found a file it would have written.
    #[error("{} already exists; refusing to overwrite key material", .0.display())]
    Exists(PathBuf),
    /// The RSA key generator failed.
    #[error("RSA key generation failed: {0}")]
    Generate(String),
}

impl KeyError {
    fn in_file(self, path: &Path) -> KeyError {
        KeyError::File {
            path: path.to_owned(),
            source: Box::new(self),
        }
    }
}

/// The signature does not verify with this public key (or is not a signature at
/// all: wrong length, bad base64).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the signature does not match the message and public key")]
pub struct SignatureError;

/// The PEM label, from RustCrypto's RFC 7468 decoder.
fn label_of(pem_text: &str) -> Result<&str, KeyError> {
    pem::decode_label(pem_text.as_bytes()).map_err(|error| KeyError::NotPem(error.to_string()))
}

fn read_secret_file(path: &Path) -> Result<Zeroizing<String>, KeyError> {
    std::fs::read_to_string(path)
        .map(Zeroizing::new)
        .map_err(|error| KeyError::Io(error).in_file(path))
}

/// An RSA private key that signs with PKCS#1 v1.5 over SHA-256. `Debug` shows its
/// size only.
#[derive(Clone)]
pub struct PrivateKey {
    signing: SigningKey<Sha256>,
}

impl PrivateKey {
    /// Loads a private key from PEM: PKCS#8 (`BEGIN PRIVATE KEY`) or PKCS#1
    /// (`BEGIN RSA PRIVATE KEY`).
    pub fn from_pem(pem_text: &str) -> Result<Self, KeyError> {
        let key = match label_of(pem_text)? {
            "PRIVATE KEY" => {
                RsaPrivateKey::from_pkcs8_pem(pem_text).map_err(|error| KeyError::Invalid {
                    label: "PRIVATE KEY",
                    reason: error.to_string(),
                })?
            }
            "RSA PRIVATE KEY" => {
                RsaPrivateKey::from_pkcs1_pem(pem_text).map_err(|error| KeyError::Invalid {
                    label: "RSA PRIVATE KEY",
                    reason: error.to_string(),
                })?
            }
            "ENCRYPTED PRIVATE KEY" => return Err(KeyError::Encrypted),
            other => {
                return Err(KeyError::UnexpectedLabel {
                    found: other.to_owned(),
                    expected: "PRIVATE KEY (PKCS#8) or RSA PRIVATE KEY (PKCS#1)",
                });
            }
        };
        Self::from_rsa(key)
    }

    /// Loads a private key from a PEM file; errors name the path, never the key.
    pub fn from_pem_file(path: impl AsRef<Path>) -> Result<Self, KeyError> {
        let path = path.as_ref();
        let text = read_secret_file(path)?;
        Self::from_pem(&text).map_err(|error| error.in_file(path))
    }

    /// A fresh random key of [`GENERATED_RSA_BITS`] bits from the operating
    /// system's random source. Slow in debug builds (seconds).
    pub fn generate() -> Result<Self, KeyError> {
        let key = RsaPrivateKey::new(&mut OsRng, GENERATED_RSA_BITS)
            .map_err(|error| KeyError::Generate(error.to_string()))?;
        Self::from_rsa(key)
    }

    fn from_rsa(key: RsaPrivateKey) -> Result<Self, KeyError> {
        let bits = key.size() * 8;
        if bits < MIN_RSA_BITS {
            return Err(KeyError::TooSmall { bits });
        }
        Ok(Self {
            signing: SigningKey::new(key),
        })
    }

    /// The matching public key.
    pub fn public_key(&self) -> PublicKey {
        PublicKey::from_rsa(RsaPublicKey::from(self.signing.as_ref()))
    }

    /// The modulus size in bits.
    pub fn bits(&self) -> usize {
        self.signing.as_ref().size() * 8
    }

    /// The key as PKCS#8 PEM (`BEGIN PRIVATE KEY`), in memory that is wiped on drop.
    pub fn to_pkcs8_pem(&self) -> Result<Zeroizing<String>, KeyError> {
        self.signing
            .as_ref()
            .to_pkcs8_pem(LineEnding::LF)
            .map(|pem_text| Zeroizing::new(pem_text.as_str().to_owned()))
            .map_err(|error| KeyError::Generate(error.to_string()))
    }

    /// Signs `message` with RSASSA-PKCS1-v1_5 over SHA-256 ("SHA256withRSA", Alipay's
    /// "RSA2"); the signature has the modulus's length. Blinded with the operating
    /// system's random source. PKCS#1 v1.5 is deterministic, so the bytes equal
    /// those of any other implementation (`openssl dgst -sha256 -sign`).
    ///
    /// # Panics
    /// Only if the operating system's random source fails.
    pub fn sign_rsa_sha256(&self, message: &[u8]) -> Vec<u8> {
        self.signing.sign_with_rng(&mut OsRng, message).to_vec()
    }
}

impl fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PrivateKey(RSA-{}, [REDACTED])", self.bits())
    }
}

/// An RSA public key that verifies PKCS#1 v1.5 SHA-256 signatures. `Debug` shows its
/// size and a fingerprint (the first bytes of the SHA-256 of its SPKI DER form).
#[derive(Clone)]
pub struct PublicKey {
    verifying: VerifyingKey<Sha256>,
}

impl PartialEq for PublicKey {
    fn eq(&self, other: &Self) -> bool {
        self.rsa() == other.rsa()
    }
}

impl Eq for PublicKey {}

impl PublicKey {
    /// Loads a public key from PEM: SubjectPublicKeyInfo (`BEGIN PUBLIC KEY`) or
    /// PKCS#1 (`BEGIN RSA PUBLIC KEY`).
    pub fn from_pem(pem_text: &str) -> Result<Self, KeyError> {
        let key = match label_of(pem_text)? {
            "PUBLIC KEY" => {
                RsaPublicKey::from_public_key_pem(pem_text).map_err(|error| KeyError::Invalid {
                    label: "PUBLIC KEY",
                    reason: error.to_string(),
                })?
            }
            "RSA PUBLIC KEY" => {
                RsaPublicKey::from_pkcs1_pem(pem_text).map_err(|error| KeyError::Invalid {
                    label: "RSA PUBLIC KEY",
                    reason: error.to_string(),
                })?
            }
            other => {
                return Err(KeyError::UnexpectedLabel {
                    found: other.to_owned(),
                    expected: "PUBLIC KEY (SPKI) or RSA PUBLIC KEY (PKCS#1)",
                });
            }
        };
        let bits = key.size() * 8;
        if bits < MIN_RSA_BITS {
            return Err(KeyError::TooSmall { bits });
        }
        Ok(Self::from_rsa(key))
    }

    /// Loads a public key from a PEM file; errors name the path.
    pub fn from_pem_file(path: impl AsRef<Path>) -> Result<Self, KeyError> {
        let path = path.as_ref();
        let text =
            std::fs::read_to_string(path).map_err(|error| KeyError::Io(error).in_file(path))?;
        Self::from_pem(&text).map_err(|error| error.in_file(path))
    }

    fn from_rsa(key: RsaPublicKey) -> Self {
        Self {
            verifying: VerifyingKey::new(key),
        }
    }

    fn rsa(&self) -> &RsaPublicKey {
        self.verifying.as_ref()
    }

    /// The modulus size in bits.
    pub fn bits(&self) -> usize {
        self.rsa().size() * 8
    }

    /// The key as SubjectPublicKeyInfo PEM (`BEGIN PUBLIC KEY`), the form
    /// `openssl pkey -pubout` writes.
    pub fn to_spki_pem(&self) -> Result<String, KeyError> {
        self.rsa()
            .to_public_key_pem(LineEnding::LF)
            .map_err(|error| KeyError::Generate(error.to_string()))
    }

    /// Upper-case hex of the first 8 bytes of the SHA-256 of the SPKI DER: enough to
    /// tell keys apart in a log line.
    pub fn fingerprint(&self) -> String {
        match self.rsa().to_public_key_der() {
            Ok(der) => Sha256::digest(der.as_bytes())[..8]
                .iter()
                .map(|byte| format!("{byte:02X}"))
                .collect(),
            Err(_) => "?".to_owned(),
        }
    }

    /// Verifies an RSASSA-PKCS1-v1_5 SHA-256 signature over `message`.
    pub fn verify_rsa_sha256(
        &self,
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), SignatureError> {
        let signature = Signature::try_from(signature).map_err(|_| SignatureError)?;
        self.verifying
            .verify(message, &signature)
            .map_err(|_| SignatureError)
    }

    /// Verifies a base64 (standard, padded) RSASSA-PKCS1-v1_5 SHA-256 signature.
    pub fn verify_rsa_sha256_base64(
        &self,
        message: &[u8],
        signature_base64: &str,
    ) -> Result<(), SignatureError> {
        let signature = crypto::decode_base64(signature_base64).ok_or(SignatureError)?;
        self.verify_rsa_sha256(message, &signature)
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey(RSA-{}, {})", self.bits(), self.fingerprint())
    }
}

impl PrivateKey {
    /// Signs like [`PrivateKey::sign_rsa_sha256`] and encodes the signature in
    /// standard padded base64, the form both platforms put on the wire.
    pub fn sign_rsa_sha256_base64(&self, message: &[u8]) -> String {
        crypto::encode_base64(&self.sign_rsa_sha256(message))
    }
}

/// WeChat Pay's APIv3 key ("APIv3密钥"): 32 ASCII letters and digits, the AES-256-GCM
/// key of notification resources. `Debug` prints `[REDACTED]`.
#[derive(Clone)]
pub struct ApiV3Key(SecretString);

impl ApiV3Key {
    /// The key's length in characters (and in AES key bytes).
    pub const LEN: usize = 32;

    /// Accepts exactly [`ApiV3Key::LEN`] ASCII letters and digits; the merchant
    /// platform allows nothing else.
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        if text.len() != Self::LEN || !text.bytes().all(|byte| byte.is_ascii_alphanumeric()) {
            return Err(KeyError::ApiV3Key);
        }
        Ok(Self(SecretString::from(text)))
    }

    /// Reads the key from a file; surrounding whitespace (a final newline) is ignored.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, KeyError> {
        let path = path.as_ref();
        let text = read_secret_file(path)?;
        Self::parse(text.trim()).map_err(|error| error.in_file(path))
    }

    /// A fresh random key.
    pub fn generate() -> Self {
        Self(SecretString::from(crypto::random_alphanumeric(Self::LEN)))
    }

    /// The key's bytes: the AES-256 key itself (the ASCII text is the key).
    pub(crate) fn aes_key(&self) -> &[u8] {
        self.0.expose_secret().as_bytes()
    }

    /// The key's text, for writing it to a configuration file.
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }
}

impl fmt::Debug for ApiV3Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiV3Key([REDACTED])")
    }
}

/// Checks a certificate serial number (`serial_no`, `Wechatpay-Serial`): not empty,
/// ASCII letters, digits and `_` only (hex serials like `1DDE55AD98ED71D6EDD4A4A16996DE7B47773A8C`
/// and public key ids like `PUB_KEY_ID_0114232001422025031600000000000000`).
pub fn check_serial(serial: &str) -> Result<(), KeyError> {
    if serial.is_empty()
        || !serial
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
    {
        return Err(KeyError::Serial);
    }
    Ok(())
}

/// File name of the merchant's RSA private key (PKCS#8 PEM, mode 0600).
pub const MERCHANT_PRIVATE_KEY_FILE: &str = "merchant_private_key.pem";
/// File name of the merchant's RSA public key (SPKI PEM).
pub const MERCHANT_PUBLIC_KEY_FILE: &str = "merchant_public_key.pem";
/// File name of the platform's RSA private key (PKCS#8 PEM, mode 0600).
pub const PLATFORM_PRIVATE_KEY_FILE: &str = "platform_private_key.pem";
/// File name of the platform's RSA public key (SPKI PEM).
pub const PLATFORM_PUBLIC_KEY_FILE: &str = "platform_public_key.pem";
/// File name of the WeChat Pay APIv3 key (32 characters and a newline, mode 0600).
pub const WECHATPAY_APIV3_KEY_FILE: &str = "wechatpay_apiv3_key.txt";
/// File name of the merchant certificate serial number (`serial_no` in WeChat Pay's
/// `Authorization` header).
pub const MERCHANT_SERIAL_FILE: &str = "merchant_serial_no.txt";
/// File name of the platform key's serial number (WeChat Pay's `Wechatpay-Serial`).
pub const PLATFORM_SERIAL_FILE: &str = "platform_serial_no.txt";

/// A matching key set for local runs of the backend against the simulator.
///
/// One merchant key pair and one platform key pair serve both platforms: for WeChat
/// Pay the merchant key is the API certificate key (`apiclient_key.pem`) and the
/// platform key is the WeChat Pay public key; for Alipay the merchant key is the
/// application private key ("应用私钥") and the platform key is the Alipay public key
/// ("支付宝公钥"). The backend needs the merchant private key, the platform public
/// key, the APIv3 key and both serials; the simulator needs the merchant public key,
/// the platform private key, the APIv3 key and both serials.
///
/// In a directory, [`LocalKeys::write`] and [`LocalKeys::load`] use these files:
///
/// | file | content | mode |
/// |---|---|---|
/// | [`MERCHANT_PRIVATE_KEY_FILE`] `merchant_private_key.pem` | PKCS#8 PEM | 0600 |
/// | [`MERCHANT_PUBLIC_KEY_FILE`] `merchant_public_key.pem` | SPKI PEM | 0644 |
/// | [`PLATFORM_PRIVATE_KEY_FILE`] `platform_private_key.pem` | PKCS#8 PEM | 0600 |
/// | [`PLATFORM_PUBLIC_KEY_FILE`] `platform_public_key.pem` | SPKI PEM | 0644 |
/// | [`WECHATPAY_APIV3_KEY_FILE`] `wechatpay_apiv3_key.txt` | 32 letters and digits | 0600 |
/// | [`MERCHANT_SERIAL_FILE`] `merchant_serial_no.txt` | 40 upper-case hex digits | 0644 |
/// | [`PLATFORM_SERIAL_FILE`] `platform_serial_no.txt` | 40 upper-case hex digits | 0644 |
#[derive(Debug, Clone)]
pub struct LocalKeys {
    /// The merchant's signing key.
    pub merchant_private: PrivateKey,
    /// The merchant's public key (the platform verifies requests with it).
    pub merchant_public: PublicKey,
    /// The platform's signing key.
    pub platform_private: PrivateKey,
    /// The platform's public key (the merchant verifies answers with it).
    pub platform_public: PublicKey,
    /// The WeChat Pay APIv3 key.
    pub apiv3_key: ApiV3Key,
    /// The merchant certificate serial number.
    pub merchant_serial_no: String,
    /// The platform key's serial number.
    pub platform_serial_no: String,
}

/// Generates a [`LocalKeys`] set and writes it into `dir` (created if missing).
/// Refuses to overwrite: if any of the files exists, nothing is written.
pub fn generate(dir: impl AsRef<Path>) -> Result<LocalKeys, KeyError> {
    let keys = LocalKeys::generate()?;
    keys.write(dir)?;
    Ok(keys)
}

impl LocalKeys {
    /// A fresh set in memory: two 2048-bit RSA key pairs, an APIv3 key, and two
    /// random 40-hex-digit serial numbers.
    pub fn generate() -> Result<Self, KeyError> {
        let merchant_private = PrivateKey::generate()?;
        let platform_private = PrivateKey::generate()?;
        Ok(Self {
            merchant_public: merchant_private.public_key(),
            platform_public: platform_private.public_key(),
            merchant_private,
            platform_private,
            apiv3_key: ApiV3Key::generate(),
            merchant_serial_no: crypto::random_upper_hex(20),
            platform_serial_no: crypto::random_upper_hex(20),
        })
    }

    /// Writes the set into `dir` (created if missing) under the file names in the
    /// table above; files with private material get mode 0600. Refuses, before
    /// writing anything, if any of the files exists.
    pub fn write(&self, dir: impl AsRef<Path>) -> Result<(), KeyError> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir).map_err(|error| KeyError::Io(error).in_file(dir))?;
        let files: [(&str, Zeroizing<String>, bool); 7] = [
            (
                MERCHANT_PRIVATE_KEY_FILE,
                self.merchant_private.to_pkcs8_pem()?,
                true,
            ),
            (
                MERCHANT_PUBLIC_KEY_FILE,
                Zeroizing::new(self.merchant_public.to_spki_pem()?),
                false,
            ),
            (
                PLATFORM_PRIVATE_KEY_FILE,
                self.platform_private.to_pkcs8_pem()?,
                true,
            ),
            (
                PLATFORM_PUBLIC_KEY_FILE,
                Zeroizing::new(self.platform_public.to_spki_pem()?),
                false,
            ),
            (
                WECHATPAY_APIV3_KEY_FILE,
                Zeroizing::new(format!("{}\n", self.apiv3_key.expose())),
                true,
            ),
            (
                MERCHANT_SERIAL_FILE,
                Zeroizing::new(format!("{}\n", self.merchant_serial_no)),
                false,
            ),
            (
                PLATFORM_SERIAL_FILE,
                Zeroizing::new(format!("{}\n", self.platform_serial_no)),
                false,
            ),
        ];
        for (name, _, _) in &files {
            let path = dir.join(name);
            if path.exists() {
                return Err(KeyError::Exists(path));
            }
        }
        for (name, content, private) in &files {
            let path = dir.join(name);
            write_new_file(&path, content.as_bytes(), *private)
                .map_err(|error| KeyError::Io(error).in_file(&path))?;
        }
        Ok(())
    }

    /// Reads a set written by [`LocalKeys::write`] (or by hand with the same names)
    /// and checks that each public key matches its private key.
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, KeyError> {
        let dir = dir.as_ref();
        let read_serial = |name: &str| -> Result<String, KeyError> {
            let path = dir.join(name);
            let text = std::fs::read_to_string(&path)
                .map_err(|error| KeyError::Io(error).in_file(&path))?;
            let serial = text.trim().to_owned();
            check_serial(&serial).map_err(|error| error.in_file(&path))?;
            Ok(serial)
        };
        let keys = Self {
            merchant_private: PrivateKey::from_pem_file(dir.join(MERCHANT_PRIVATE_KEY_FILE))?,
            merchant_public: PublicKey::from_pem_file(dir.join(MERCHANT_PUBLIC_KEY_FILE))?,
            platform_private: PrivateKey::from_pem_file(dir.join(PLATFORM_PRIVATE_KEY_FILE))?,
            platform_public: PublicKey::from_pem_file(dir.join(PLATFORM_PUBLIC_KEY_FILE))?,
            apiv3_key: ApiV3Key::from_file(dir.join(WECHATPAY_APIV3_KEY_FILE))?,
            merchant_serial_no: read_serial(MERCHANT_SERIAL_FILE)?,
            platform_serial_no: read_serial(PLATFORM_SERIAL_FILE)?,
        };
        for (private, public, name) in [
            (
                &keys.merchant_private,
                &keys.merchant_public,
                MERCHANT_PUBLIC_KEY_FILE,
            ),
            (
                &keys.platform_private,
                &keys.platform_public,
                PLATFORM_PUBLIC_KEY_FILE,
            ),
        ] {
            if private.public_key() != *public {
                return Err(KeyError::Mismatch.in_file(&dir.join(name)));
            }
        }
        Ok(keys)
    }
}

/// Creates `path` (which must not exist) with `content`; mode 0600 when `private`.
fn write_new_file(path: &Path, content: &[u8], private: bool) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(if private { 0o600 } else { 0o644 });
    }
    #[cfg(not(unix))]
    let _ = private;
    let mut file = options.open(path)?;
    file.write_all(content)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_v3_key_accepts_32_letters_and_digits_only() {
        assert!(ApiV3Key::parse("0123456789abcdefABCDEF0123456789").is_ok());
        for bad in [
            "",
            "0123456789abcdefABCDEF012345678",
            "0123456789abcdefABCDEF01234567890",
            "0123456789abcdefABCDEF012345678!",
            "0123456789abcdefABCDEF01234567 9",
            "0123456789abcdefABCDEF0123456é",
        ] {
            assert!(ApiV3Key::parse(bad).is_err(), "{bad:?} was accepted");
        }
        assert_eq!(ApiV3Key::generate().expose().len(), ApiV3Key::LEN);
    }

    #[test]
    fn api_v3_key_debug_is_redacted() {
        let key = ApiV3Key::parse("0123456789abcdefABCDEF0123456789").expect("valid");
        let shown = format!("{key:?}");
        assert!(!shown.contains("0123456789abcdef"), "{shown}");
        assert!(shown.contains("REDACTED"));
    }

    #[test]
    fn serials_are_letters_digits_and_underscores() {
        assert!(check_serial("1DDE55AD98ED71D6EDD4A4A16996DE7B47773A8C").is_ok());
        assert!(check_serial("PUB_KEY_ID_0114232001422025031600000000000000").is_ok());
        for bad in ["", "AB CD", "AB\"CD", "AB,CD", "序列号"] {
            assert!(check_serial(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn pem_of_the_wrong_kind_is_refused_by_label() {
        let certificate = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        assert!(matches!(
            PublicKey::from_pem(certificate),
            Err(KeyError::UnexpectedLabel { .. })
        ));
        assert!(matches!(
            PrivateKey::from_pem(certificate),
            Err(KeyError::UnexpectedLabel { .. })
        ));
        let encrypted =
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n";
        assert!(matches!(
            PrivateKey::from_pem(encrypted),
            Err(KeyError::Encrypted)
        ));
        assert!(matches!(
            PrivateKey::from_pem("not pem at all"),
            Err(KeyError::NotPem(_))
        ));
        let garbage = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        assert!(matches!(
            PrivateKey::from_pem(garbage),
            Err(KeyError::Invalid { .. })
        ));
    }

    #[test]
    fn a_missing_key_file_is_named_in_the_error() {
        let error = PrivateKey::from_pem_file("/nonexistent/merchant_private_key.pem")
            .expect_err("no such file");
        assert!(
            error
                .to_string()
                .contains("/nonexistent/merchant_private_key.pem"),
            "{error}"
        );
    }
}
