//! Password hashing with argon2id at OWASP's parameters (19 MiB, 2 passes, 1 lane).
//! Hashing costs tens of milliseconds of CPU on purpose, so it runs on the
//! blocking pool, never on the async workers.

use crate::error::ApiError;
use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use secrecy::{ExposeSecret, SecretString};
use std::sync::OnceLock;

/// Shortest password a shopper may be given.
pub const MIN_PASSWORD_CHARS: usize = 12;
/// Longest password accepted (hashing cost grows with it).
pub const MAX_PASSWORD_CHARS: usize = 256;

fn argon2() -> Argon2<'static> {
    // OWASP Password Storage Cheat Sheet: m=19456 KiB, t=2, p=1.
    let params = Params::new(19_456, 2, 1, None).unwrap_or_default();
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// The argon2id PHC string of `password`.
pub async fn hash(password: SecretString) -> Result<String, ApiError> {
    tokio::task::spawn_blocking(move || {
        let salt = SaltString::generate(&mut OsRng);
        argon2()
            .hash_password(password.expose_secret().as_bytes(), &salt)
            .map(|hash| hash.to_string())
            .map_err(|err| ApiError::internal(anyhow::anyhow!("argon2: {err}")))
    })
    .await
    .map_err(ApiError::internal)?
}

/// True when `password` matches `stored`. With no stored hash (unknown email)
/// it verifies against a fixed hash anyway, so both answers take as long.
pub async fn verify(password: SecretString, stored: Option<String>) -> Result<bool, ApiError> {
    tokio::task::spawn_blocking(move || {
        let known = stored.is_some();
        let text = stored.unwrap_or_else(|| dummy_hash().to_owned());
        let Ok(parsed) = PasswordHash::new(&text) else {
            return false;
        };
        let matches = argon2()
            .verify_password(password.expose_secret().as_bytes(), &parsed)
            .is_ok();
        known && matches
    })
    .await
    .map_err(ApiError::internal)
}

/// A hash of a random password, made once per process.
fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| {
        let salt = SaltString::generate(&mut OsRng);
        argon2()
            .hash_password(salt.as_str().as_bytes(), &salt)
            .map(|hash| hash.to_string())
            .unwrap_or_default()
    })
}

/// Checks a new password's length; the message says what is wrong.
pub fn check_new(password: &str) -> Result<(), ApiError> {
    let chars = password.chars().count();
    if chars < MIN_PASSWORD_CHARS {
        return Err(ApiError::BadRequest(format!(
            "password must be at least {MIN_PASSWORD_CHARS} characters"
        )));
    }
    if chars > MAX_PASSWORD_CHARS {
        return Err(ApiError::BadRequest(format!(
            "password must be at most {MAX_PASSWORD_CHARS} characters"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hash_is_argon2id_at_owasp_parameters_and_verifies_only_its_password() {
        let hashed = hash(SecretString::from("correct horse battery"))
            .await
            .expect("hashes");
        assert!(
            hashed.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{hashed}"
        );
        assert!(
            verify(
                SecretString::from("correct horse battery"),
                Some(hashed.clone())
            )
            .await
            .expect("verifies")
        );
        assert!(
            !verify(SecretString::from("correct horse batterY"), Some(hashed))
                .await
                .expect("verifies")
        );
        assert!(
            !verify(SecretString::from("anything"), None)
                .await
                .expect("verifies")
        );
    }

    #[test]
    fn new_passwords_must_have_a_sensible_length() {
        assert!(check_new("short").is_err());
        assert!(check_new(&"x".repeat(MAX_PASSWORD_CHARS + 1)).is_err());
        assert!(check_new("twelve chars").is_ok());
    }
}
