//! `platform-sim keys DIR`: writes a matching key set for local runs of the
//! backend against the simulator, and says which file is which.
//!
//! The files and their names are `platform_protocols::keys::LocalKeys`'s; this
//! module only writes them and describes them. The simulator reads the same
//! directory back with `--wechatpay-keys DIR` and `--alipay-keys DIR` (Alipay
//! uses the two RSA key pairs: the merchant's is the application's key, the
//! platform's is Alipay's).

use platform_protocols::keys::{
    self, KeyError, LocalKeys, MERCHANT_PRIVATE_KEY_FILE, MERCHANT_PUBLIC_KEY_FILE,
    MERCHANT_SERIAL_FILE, PLATFORM_PRIVATE_KEY_FILE, PLATFORM_PUBLIC_KEY_FILE,
    PLATFORM_SERIAL_FILE, WECHATPAY_APIV3_KEY_FILE,
};
use std::fmt::Write;
use std::path::Path;

/// Generates a key set into `dir` (created if missing; nothing is overwritten)
/// and returns the keys with a description of the files for the operator.
pub fn write_local_keys(dir: &Path) -> Result<(LocalKeys, String), KeyError> {
    let generated = keys::generate(dir)?;
    let report = describe(dir, &generated);
    Ok((generated, report))
}

/// Which file is which, who needs it, and the two serial numbers.
pub fn describe(dir: &Path, keys: &LocalKeys) -> String {
    let file = |name: &str| dir.join(name).display().to_string();
    let mut text = String::new();
    // Writing to a String cannot fail.
    let _ = writeln!(
        text,
        "Wrote a key set for local runs into {}:",
        dir.display()
    );
    let _ = writeln!(text);
    let _ = writeln!(text, "For the backend (the merchant):");
    let _ = writeln!(
        text,
        "  merchant private key (signs requests)   {}",
        file(MERCHANT_PRIVATE_KEY_FILE)
    );
    let _ = writeln!(
        text,
        "  merchant serial number                  {} ({})",
        file(MERCHANT_SERIAL_FILE),
        keys.merchant_serial_no
    );
    let _ = writeln!(
        text,
        "  platform public key (verifies answers)  {}",
        file(PLATFORM_PUBLIC_KEY_FILE)
    );
    let _ = writeln!(
        text,
        "  platform serial number                  {} ({})",
        file(PLATFORM_SERIAL_FILE),
        keys.platform_serial_no
    );
    let _ = writeln!(
        text,
        "  WeChat Pay APIv3 key (decrypts notices) {}",
        file(WECHATPAY_APIV3_KEY_FILE)
    );
    let _ = writeln!(text);
    let _ = writeln!(text, "For the simulator (the platform):");
    let _ = writeln!(
        text,
        "  merchant public key (verifies requests) {}",
        file(MERCHANT_PUBLIC_KEY_FILE)
    );
    let _ = writeln!(
        text,
        "  platform private key (signs answers)    {}",
        file(PLATFORM_PRIVATE_KEY_FILE)
    );
    let _ = writeln!(text, "  the serial numbers and the APIv3 key above");
    let _ = writeln!(text);
    let _ = writeln!(
        text,
        "Serve WeChat Pay with: platform-sim --wechatpay-keys {} --wechatpay-mchid <MCHID> --wechatpay-appid <APPID>",
        dir.display()
    );
    let _ = writeln!(
        text,
        "Serve Alipay with:     platform-sim --alipay-keys {} --alipay-app-id <APP_ID>",
        dir.display()
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_loadable_set_names_every_file_and_refuses_to_overwrite() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let target = dir.path().join("keys");

        let (written, report) = write_local_keys(&target).expect("keys written");
        let loaded = LocalKeys::load(&target).expect("the set loads back");
        let again = write_local_keys(&target);

        assert_eq!(loaded.merchant_serial_no, written.merchant_serial_no);
        assert_eq!(loaded.platform_public, written.platform_public);
        for name in [
            MERCHANT_PRIVATE_KEY_FILE,
            MERCHANT_PUBLIC_KEY_FILE,
            PLATFORM_PRIVATE_KEY_FILE,
            PLATFORM_PUBLIC_KEY_FILE,
            WECHATPAY_APIV3_KEY_FILE,
            MERCHANT_SERIAL_FILE,
            PLATFORM_SERIAL_FILE,
        ] {
            assert!(report.contains(name), "{name} is not named in:\n{report}");
        }
        assert!(report.contains(&written.merchant_serial_no));
        assert!(report.contains(&written.platform_serial_no));
        assert!(
            !report.contains(written.apiv3_key.expose()),
            "the report must not print the APIv3 key"
        );
        assert!(matches!(again, Err(KeyError::Exists(_))));
    }
}
