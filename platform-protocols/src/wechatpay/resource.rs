//! `AEAD_AES_256_GCM` resources: the encrypted part of a WeChat Pay notification
//! ("证书和回调报文解密").
//!
//! The key is the merchant's APIv3 key (its 32 ASCII characters are the 32 key
//! bytes); `nonce` is a 12-character string whose bytes are the 96-bit GCM nonce;
//! `associated_data` (possibly empty) is the additional authenticated data; and
//! `ciphertext` is standard base64 of the ciphertext followed by the 16-byte tag.
//! AES-GCM is RustCrypto's `aes-gcm`.

use crate::crypto;
use crate::keys::ApiV3Key;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The only `algorithm` WeChat Pay uses.
pub const AEAD_AES_256_GCM: &str = "AEAD_AES_256_GCM";

/// The GCM nonce length in bytes (and the `nonce` string's length in characters).
pub const NONCE_LEN: usize = 12;

/// The GCM tag length appended to the ciphertext.
pub const TAG_LEN: usize = 16;

/// The `resource` object of a notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EncryptedResource {
    /// Always [`AEAD_AES_256_GCM`].
    pub algorithm: String,
    /// Base64 of ciphertext and tag.
    pub ciphertext: String,
    /// The 12-character nonce.
    pub nonce: String,
    /// The additional authenticated data; may be empty.
    #[serde(default)]
    pub associated_data: String,
    /// What the plaintext is: `transaction` or `refund`.
    pub original_type: String,
}

/// Why a resource could not be decrypted (or encrypted).
#[derive(Debug, thiserror::Error)]
pub enum ResourceError {
    /// `algorithm` is not [`AEAD_AES_256_GCM`].
    #[error("unsupported resource algorithm {0:?}; only {AEAD_AES_256_GCM} is known")]
    UnsupportedAlgorithm(String),
    /// The nonce is not 12 bytes.
    #[error("the resource nonce must be {NONCE_LEN} bytes, got {0}")]
    NonceLength(usize),
    /// `ciphertext` is not standard base64.
    #[error("the resource ciphertext is not base64")]
    Base64,
    /// The ciphertext is shorter than the tag.
    #[error("the resource ciphertext is shorter than the {TAG_LEN}-byte tag")]
    Truncated,
    /// The tag does not verify: the wrong APIv3 key, nonce or associated data, or a
    /// tampered ciphertext. GCM cannot tell these apart.
    #[error(
        "the resource does not authenticate (wrong APIv3 key, nonce or associated_data, or tampered)"
    )]
    Authentication,
    /// `original_type` is not what the event type carries.
    #[error("the resource is a {got:?}, but the event carries a {expected:?}")]
    OriginalType {
        /// What the event type carries.
        expected: &'static str,
        /// What `original_type` says.
        got: String,
    },
    /// The plaintext is not the expected JSON.
    #[error("the decrypted resource is not the expected JSON: {0}")]
    Json(#[from] serde_json::Error),
}

fn nonce_of(nonce: &str) -> Result<&Nonce<aes_gcm::aead::consts::U12>, ResourceError> {
    let bytes = nonce.as_bytes();
    if bytes.len() != NONCE_LEN {
        return Err(ResourceError::NonceLength(bytes.len()));
    }
    Ok(Nonce::from_slice(bytes))
}

fn cipher(key: &ApiV3Key) -> Aes256Gcm {
    // ApiV3Key guarantees 32 bytes, which is all `new_from_slice` checks.
    Aes256Gcm::new(aes_gcm::Key::<Aes256Gcm>::from_slice(key.aes_key()))
}

/// Decrypts a resource and returns the plaintext bytes (JSON).
pub fn decrypt_resource(
    key: &ApiV3Key,
    resource: &EncryptedResource,
) -> Result<Vec<u8>, ResourceError> {
    if resource.algorithm != AEAD_AES_256_GCM {
        return Err(ResourceError::UnsupportedAlgorithm(
            resource.algorithm.clone(),
        ));
    }
    let nonce = nonce_of(&resource.nonce)?;
    let sealed = crypto::decode_base64(&resource.ciphertext).ok_or(ResourceError::Base64)?;
    if sealed.len() < TAG_LEN {
        return Err(ResourceError::Truncated);
    }
    cipher(key)
        .decrypt(
            nonce,
            Payload {
                msg: &sealed,
                aad: resource.associated_data.as_bytes(),
            },
        )
        .map_err(|_| ResourceError::Authentication)
}

/// Decrypts a resource and parses the plaintext as `T`.
pub fn decrypt_resource_json<T: DeserializeOwned>(
    key: &ApiV3Key,
    resource: &EncryptedResource,
) -> Result<T, ResourceError> {
    Ok(serde_json::from_slice(&decrypt_resource(key, resource)?)?)
}

/// Encrypts `plaintext` into a resource (the simulator's side). `nonce` must be 12
/// bytes; [`generate_resource_nonce`] makes one. Never reuse a nonce with the same
/// key: GCM's security depends on it.
pub fn encrypt_resource(
    key: &ApiV3Key,
    original_type: &str,
    associated_data: &str,
    nonce: &str,
    plaintext: &[u8],
) -> Result<EncryptedResource, ResourceError> {
    let sealed = cipher(key)
        .encrypt(
            nonce_of(nonce)?,
            Payload {
                msg: plaintext,
                aad: associated_data.as_bytes(),
            },
        )
        .map_err(|_| ResourceError::Authentication)?;
    Ok(EncryptedResource {
        algorithm: AEAD_AES_256_GCM.to_owned(),
        ciphertext: crypto::encode_base64(&sealed),
        nonce: nonce.to_owned(),
        associated_data: associated_data.to_owned(),
        original_type: original_type.to_owned(),
    })
}

/// A fresh resource nonce: 12 random ASCII letters and digits (the form WeChat Pay
/// sends).
pub fn generate_resource_nonce() -> String {
    crypto::random_alphanumeric(NONCE_LEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Test Case 16 of McGrew and Viega, "The Galois/Counter Mode of Operation
    /// (GCM)" (the NIST submission): AES-256, 96-bit IV, with AAD.
    #[test]
    fn aes_gcm_matches_the_published_test_case_16() {
        let hex = |text: &str| -> Vec<u8> {
            (0..text.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
                .collect()
        };
        let key = hex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308");
        let iv = hex("cafebabefacedbaddecaf888");
        let plaintext = hex(concat!(
            "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72",
            "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
        ));
        let aad = hex("feedfacedeadbeeffeedfacedeadbeefabaddad2");
        let expected = hex(concat!(
            "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa",
            "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
            "76fc6ece0f4e1768cddf8853bb2d551b"
        ));
        let cipher = Aes256Gcm::new(aes_gcm::Key::<Aes256Gcm>::from_slice(&key));
        let sealed = cipher
            .encrypt(
                Nonce::from_slice(&iv),
                Payload {
                    msg: &plaintext,
                    aad: &aad,
                },
            )
            .expect("encrypts");
        assert_eq!(sealed, expected);
        let opened = cipher
            .decrypt(
                Nonce::from_slice(&iv),
                Payload {
                    msg: &expected,
                    aad: &aad,
                },
            )
            .expect("decrypts");
        assert_eq!(opened, plaintext);
    }
}
