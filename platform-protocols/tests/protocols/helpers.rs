//! Test fixtures made by `openssl` at test time, and `openssl` as the second
//! implementation of SHA256withRSA.

use platform_protocols::{PrivateKey, PublicKey};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Whether the `openssl` command runs here.
pub fn openssl_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        Command::new("openssl")
            .arg("version")
            .output()
            .map(|output| output.status.success())
            .unwrap_or(false)
    })
}

/// Returns from the test, saying why, when `openssl` is missing.
macro_rules! require_openssl {
    () => {
        if !$crate::helpers::openssl_available() {
            eprintln!(
                "SKIPPED: the openssl command is not installed; this test cross-checks against it"
            );
            return;
        }
    };
}
pub(crate) use require_openssl;

/// Runs `openssl` with `args` in `dir` and returns stdout; panics with stderr on failure.
pub fn openssl(dir: &Path, args: &[&str]) -> Vec<u8> {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl runs");
    assert!(
        output.status.success(),
        "openssl {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// One RSA key pair made by `openssl`, in the four PEM forms.
pub struct OpensslKey {
    /// `BEGIN PRIVATE KEY` (PKCS#8), as `openssl genpkey` writes it.
    pub private_pkcs8: String,
    /// `BEGIN RSA PRIVATE KEY` (PKCS#1).
    pub private_pkcs1: String,
    /// `BEGIN PUBLIC KEY` (SPKI).
    pub public_spki: String,
    /// `BEGIN RSA PUBLIC KEY` (PKCS#1).
    pub public_pkcs1: String,
}

impl OpensslKey {
    fn generate(bits: u32) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path();
        let bits = format!("rsa_keygen_bits:{bits}");
        openssl(
            path,
            &[
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                &bits,
                "-out",
                "key.pem",
            ],
        );
        openssl(
            path,
            &[
                "rsa",
                "-in",
                "key.pem",
                "-traditional",
                "-out",
                "key_pkcs1.pem",
            ],
        );
        openssl(
            path,
            &["pkey", "-in", "key.pem", "-pubout", "-out", "pub.pem"],
        );
        openssl(
            path,
            &[
                "rsa",
                "-in",
                "key.pem",
                "-RSAPublicKey_out",
                "-out",
                "pub_pkcs1.pem",
            ],
        );
        let read = |name: &str| std::fs::read_to_string(path.join(name)).expect("openssl wrote it");
        Self {
            private_pkcs8: read("key.pem"),
            private_pkcs1: read("key_pkcs1.pem"),
            public_spki: read("pub.pem"),
            public_pkcs1: read("pub_pkcs1.pem"),
        }
    }

    /// The private key loaded by this crate.
    pub fn private_key(&self) -> PrivateKey {
        PrivateKey::from_pem(&self.private_pkcs8).expect("openssl's PKCS#8 key loads")
    }

    /// The public key loaded by this crate.
    pub fn public_key(&self) -> PublicKey {
        PublicKey::from_pem(&self.public_spki).expect("openssl's SPKI key loads")
    }

    /// Signs `message` with `openssl dgst -sha256 -sign`.
    pub fn openssl_sign(&self, message: &[u8]) -> Vec<u8> {
        self.openssl_sign_with("-sha256", message)
    }

    /// Signs `message` with `openssl dgst <digest> -sign` (for SHA-1 refusals).
    pub fn openssl_sign_with(&self, digest: &str, message: &[u8]) -> Vec<u8> {
        let dir = tempfile::tempdir().expect("a temporary directory");
        std::fs::write(dir.path().join("key.pem"), &self.private_pkcs8).expect("writes");
        std::fs::write(dir.path().join("message"), message).expect("writes");
        openssl(
            dir.path(),
            &[
                "dgst", digest, "-sign", "key.pem", "-out", "sig.bin", "message",
            ],
        );
        std::fs::read(dir.path().join("sig.bin")).expect("openssl wrote it")
    }

    /// Whether `openssl dgst -sha256 -verify` accepts `signature` over `message`.
    pub fn openssl_verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        let dir = tempfile::tempdir().expect("a temporary directory");
        std::fs::write(dir.path().join("pub.pem"), &self.public_spki).expect("writes");
        std::fs::write(dir.path().join("message"), message).expect("writes");
        std::fs::write(dir.path().join("sig.bin"), signature).expect("writes");
        let output = Command::new("openssl")
            .args([
                "dgst",
                "-sha256",
                "-verify",
                "pub.pem",
                "-signature",
                "sig.bin",
                "message",
            ])
            .current_dir(dir.path())
            .output()
            .expect("openssl runs");
        output.status.success() && String::from_utf8_lossy(&output.stdout).contains("Verified OK")
    }
}

/// The merchant's key pair, made once per test run.
pub fn merchant() -> &'static OpensslKey {
    static KEY: OnceLock<OpensslKey> = OnceLock::new();
    KEY.get_or_init(|| OpensslKey::generate(2048))
}

/// The platform's key pair, made once per test run.
pub fn platform() -> &'static OpensslKey {
    static KEY: OnceLock<OpensslKey> = OnceLock::new();
    KEY.get_or_init(|| OpensslKey::generate(2048))
}

/// A key pair nobody configured: signatures made with it must fail.
pub fn stranger() -> &'static OpensslKey {
    static KEY: OnceLock<OpensslKey> = OnceLock::new();
    KEY.get_or_init(|| OpensslKey::generate(2048))
}

/// A 1024-bit key pair, too small to accept.
pub fn small_key() -> OpensslKey {
    OpensslKey::generate(1024)
}

/// Standard padded base64, written with the `base64` crate (not the code under test).
pub fn base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decodes standard padded base64.
pub fn unbase64(text: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .expect("valid base64")
}

/// A path inside a fresh temporary directory, kept alive by the returned guard.
pub fn temp_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().to_owned();
    (dir, path)
}
