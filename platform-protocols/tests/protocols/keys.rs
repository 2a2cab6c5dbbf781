//! Keys: the PEM forms openssl writes, the generated local set, and redaction.

use crate::helpers::{self, openssl, require_openssl};
use platform_protocols::keys::{
    self, LocalKeys, MERCHANT_PRIVATE_KEY_FILE, MERCHANT_PUBLIC_KEY_FILE, MERCHANT_SERIAL_FILE,
    PLATFORM_PRIVATE_KEY_FILE, PLATFORM_PUBLIC_KEY_FILE, PLATFORM_SERIAL_FILE,
    WECHATPAY_APIV3_KEY_FILE,
};
use platform_protocols::{ApiV3Key, KeyError, PrivateKey, PublicKey};

/// The base64 lines of a PEM document: the key material itself.
fn pem_body_lines(pem: &str) -> Vec<&str> {
    pem.lines()
        .filter(|line| !line.starts_with("-----") && line.len() >= 16)
        .collect()
}

#[test]
fn all_four_pem_forms_openssl_writes_load_as_one_key_pair() {
    require_openssl!();
    let key = helpers::merchant();
    let from_pkcs8 = PrivateKey::from_pem(&key.private_pkcs8).expect("PKCS#8 loads");
    let from_pkcs1 = PrivateKey::from_pem(&key.private_pkcs1).expect("PKCS#1 loads");
    let spki = PublicKey::from_pem(&key.public_spki).expect("SPKI loads");
    let pkcs1 = PublicKey::from_pem(&key.public_pkcs1).expect("PKCS#1 public loads");
    assert_eq!(from_pkcs8.public_key(), spki);
    assert_eq!(from_pkcs1.public_key(), spki);
    assert_eq!(pkcs1, spki);
    assert_eq!(from_pkcs8.bits(), 2048);
    assert_ne!(spki, helpers::platform().public_key());
}

#[test]
fn the_public_pem_we_write_is_the_one_openssl_derives() {
    require_openssl!();
    let key = helpers::merchant();
    let ours = key
        .private_key()
        .public_key()
        .to_spki_pem()
        .expect("encodes");
    assert_eq!(ours, key.public_spki);
}

#[test]
fn the_private_pem_we_write_passes_openssl_check_and_derives_the_same_public_key() {
    require_openssl!();
    let key = helpers::merchant();
    let pem = key.private_key().to_pkcs8_pem().expect("encodes");
    let (_guard, dir) = helpers::temp_dir();
    std::fs::write(dir.join("ours.pem"), pem.as_bytes()).expect("writes");
    openssl(&dir, &["pkey", "-in", "ours.pem", "-check", "-noout"]);
    let public = openssl(&dir, &["pkey", "-in", "ours.pem", "-pubout"]);
    assert_eq!(
        String::from_utf8(public).expect("PEM is ASCII"),
        key.public_spki
    );
}

#[test]
fn keys_under_2048_bits_are_refused() {
    require_openssl!();
    let small = helpers::small_key();
    assert!(matches!(
        PrivateKey::from_pem(&small.private_pkcs8),
        Err(KeyError::TooSmall { bits: 1024 })
    ));
    assert!(matches!(
        PublicKey::from_pem(&small.public_spki),
        Err(KeyError::TooSmall { bits: 1024 })
    ));
}

#[test]
fn a_public_key_is_refused_where_a_private_one_belongs_and_the_reverse() {
    require_openssl!();
    let key = helpers::merchant();
    assert!(matches!(
        PrivateKey::from_pem(&key.public_spki),
        Err(KeyError::UnexpectedLabel { .. })
    ));
    assert!(matches!(
        PublicKey::from_pem(&key.private_pkcs8),
        Err(KeyError::UnexpectedLabel { .. })
    ));
}

#[test]
fn debug_output_and_errors_never_contain_key_material() {
    require_openssl!();
    let key = helpers::merchant();
    let private = key.private_key();
    let shown = format!("{private:?} {:#?}", private);
    assert!(shown.contains("REDACTED"), "{shown}");
    for line in pem_body_lines(&key.private_pkcs8) {
        assert!(!shown.contains(line), "Debug shows key material: {shown}");
    }
    // rsa's own Debug prints the private exponent as limbs; ours must not.
    assert!(shown.len() < 200, "Debug is suspiciously long: {shown}");

    let apiv3 = ApiV3Key::parse("TestApiV3Key0123456789abcdefABCD").expect("valid");
    let shown = format!("{apiv3:?}");
    assert!(!shown.contains("TestApiV3Key"), "{shown}");

    // A corrupted key's error names the problem, not the text.
    let mut corrupted = key.private_pkcs8.clone();
    corrupted.replace_range(40..60, "AAAAAAAAAAAAAAAAAAAA");
    let error = PrivateKey::from_pem(&corrupted).expect_err("corrupted");
    let message = format!("{error} {error:?}");
    for line in pem_body_lines(&corrupted) {
        assert!(
            !message.contains(line),
            "the error shows key material: {message}"
        );
    }
}

#[test]
fn generate_writes_a_set_openssl_reads_with_private_files_owner_only() {
    require_openssl!();
    let (_guard, dir) = helpers::temp_dir();
    let dir = dir.join("keys");
    let generated = keys::generate(&dir).expect("generates");

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |name: &str| {
            std::fs::metadata(dir.join(name))
                .expect("written")
                .permissions()
                .mode()
                & 0o777
        };
        for private in [
            MERCHANT_PRIVATE_KEY_FILE,
            PLATFORM_PRIVATE_KEY_FILE,
            WECHATPAY_APIV3_KEY_FILE,
        ] {
            assert_eq!(mode(private), 0o600, "{private}");
        }
        for public in [
            MERCHANT_PUBLIC_KEY_FILE,
            PLATFORM_PUBLIC_KEY_FILE,
            MERCHANT_SERIAL_FILE,
            PLATFORM_SERIAL_FILE,
        ] {
            assert_eq!(mode(public) & 0o077, 0o044, "{public}");
        }
    }

    for (private, public) in [
        (MERCHANT_PRIVATE_KEY_FILE, MERCHANT_PUBLIC_KEY_FILE),
        (PLATFORM_PRIVATE_KEY_FILE, PLATFORM_PUBLIC_KEY_FILE),
    ] {
        openssl(&dir, &["pkey", "-in", private, "-check", "-noout"]);
        let derived = openssl(&dir, &["pkey", "-in", private, "-pubout"]);
        let written = std::fs::read(dir.join(public)).expect("written");
        assert_eq!(
            derived, written,
            "{public} is not the public half of {private}"
        );
    }
    let text = openssl(
        &dir,
        &["pkey", "-in", MERCHANT_PRIVATE_KEY_FILE, "-text", "-noout"],
    );
    assert!(String::from_utf8_lossy(&text).contains("(2048 bit"));

    let loaded = LocalKeys::load(&dir).expect("loads back");
    assert_eq!(loaded.merchant_public, generated.merchant_public);
    assert_eq!(loaded.platform_public, generated.platform_public);
    assert_eq!(loaded.apiv3_key.expose(), generated.apiv3_key.expose());
    assert_eq!(loaded.merchant_serial_no, generated.merchant_serial_no);
    assert_eq!(loaded.platform_serial_no.len(), 40);
    assert!(
        loaded
            .platform_serial_no
            .bytes()
            .all(|byte| byte.is_ascii_hexdigit() && !byte.is_ascii_lowercase())
    );
    assert_ne!(loaded.merchant_public, loaded.platform_public);
    let shown = format!("{loaded:?}");
    assert!(!shown.contains(loaded.apiv3_key.expose()), "{shown}");
}

#[test]
fn generate_refuses_to_overwrite_an_existing_set() {
    require_openssl!();
    let (_guard, dir) = helpers::temp_dir();
    keys::generate(&dir).expect("generates");
    let before = std::fs::read(dir.join(MERCHANT_PRIVATE_KEY_FILE)).expect("written");
    let error = keys::generate(&dir).expect_err("the files exist");
    assert!(matches!(error, KeyError::Exists(_)), "{error}");
    let after = std::fs::read(dir.join(MERCHANT_PRIVATE_KEY_FILE)).expect("still there");
    assert_eq!(before, after);
}

#[test]
fn load_refuses_a_public_key_from_another_pair() {
    require_openssl!();
    let (_guard, dir) = helpers::temp_dir();
    keys::generate(&dir).expect("generates");
    std::fs::remove_file(dir.join(PLATFORM_PUBLIC_KEY_FILE)).expect("removes");
    std::fs::write(
        dir.join(PLATFORM_PUBLIC_KEY_FILE),
        &helpers::stranger().public_spki,
    )
    .expect("writes");
    let error = LocalKeys::load(&dir).expect_err("mismatched pair");
    assert!(
        error.to_string().contains(PLATFORM_PUBLIC_KEY_FILE),
        "{error}"
    );
}
