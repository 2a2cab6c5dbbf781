//! WeChat Pay API v3: signatures against openssl, AES-GCM against a vector from a
//! second implementation, every refusal, and the notification round trip.

use crate::helpers::{self, base64, require_openssl, unbase64};
use http::{HeaderMap, HeaderValue, Method};
use platform_protocols::ApiV3Key;
use platform_protocols::wechatpay::resource::{decrypt_resource_json, generate_resource_nonce};
use platform_protocols::wechatpay::{
    self, Authorization, EncryptedResource, EventType, MerchantKey, MerchantSigner, Notification,
    NotificationPayload, OutTradeNo, PlatformKey, PlatformSignature, PlatformSigner,
    RefundNotification, RefundNotificationAmount, RefundStatus, ResourceError, TradeState,
    TradeType, Transaction, VerifyError, decrypt_resource, encrypt_resource,
    verify_platform_message,
};
use time::OffsetDateTime;

const MCHID: &str = "1900009191";
const MERCHANT_SERIAL: &str = "1DDE55AD98ED71D6EDD4A4A16996DE7B47773A8C";
const PLATFORM_SERIAL: &str = "5157F09EFDC096DE15EBE81A47057A7232F1B8E1";
const NOW: i64 = 1_554_208_460;
const NONCE: &str = "593BEC0C930BF1AFEB40B4A08C8FB242";
const PREPAY_BODY: &str = r#"{"appid":"wxd678efh567hg6787","mchid":"1900009191","description":"Image形象店-深圳腾大-QQ公仔","out_trade_no":"1217752501201407033233368018","notify_url":"https://www.weixin.qq.com/wxpay/pay.php","amount":{"total":100,"currency":"CNY"}}"#;

fn merchant_signer() -> MerchantSigner {
    MerchantSigner {
        mchid: MCHID.into(),
        serial_no: MERCHANT_SERIAL.into(),
        key: helpers::merchant().private_key(),
    }
}

fn merchant_key() -> MerchantKey {
    MerchantKey {
        mchid: MCHID.into(),
        serial_no: MERCHANT_SERIAL.into(),
        public_key: helpers::merchant().public_key(),
    }
}

fn platform_signer() -> PlatformSigner {
    PlatformSigner {
        serial: PLATFORM_SERIAL.into(),
        key: helpers::platform().private_key(),
    }
}

fn platform_key() -> PlatformKey {
    PlatformKey {
        serial: PLATFORM_SERIAL.into(),
        public_key: helpers::platform().public_key(),
    }
}

fn headers_of(signature: &PlatformSignature) -> HeaderMap {
    let mut headers = HeaderMap::new();
    signature
        .insert_into(&mut headers)
        .expect("valid header values");
    headers
}

// ---- Request signatures (the Authorization header) ----

#[test]
fn our_request_signature_is_byte_identical_to_openssls_and_openssl_verifies_it() {
    require_openssl!();
    // The message written out from the documentation, not by the code under test.
    let message = format!("POST\n/v3/pay/transactions/native\n{NOW}\n{NONCE}\n{PREPAY_BODY}\n");
    let ours = merchant_signer().sign_request(
        &Method::POST,
        "/v3/pay/transactions/native",
        PREPAY_BODY.as_bytes(),
        NOW,
        NONCE,
    );
    let ours_bytes = unbase64(&ours.signature);
    assert_eq!(ours_bytes.len(), 256);
    assert!(helpers::merchant().openssl_verifies(message.as_bytes(), &ours_bytes));
    assert_eq!(
        ours_bytes,
        helpers::merchant().openssl_sign(message.as_bytes())
    );
    assert_eq!(
        ours.header_value(),
        format!(
            "WECHATPAY2-SHA256-RSA2048 mchid=\"{MCHID}\",nonce_str=\"{NONCE}\",signature=\"{}\",timestamp=\"{NOW}\",serial_no=\"{MERCHANT_SERIAL}\"",
            ours.signature
        )
    );
}

#[test]
fn a_request_signed_by_openssl_is_accepted_with_its_query_string_and_empty_body() {
    require_openssl!();
    let path = "/v3/pay/transactions/out-trade-no/1217752501201407033233368018?mchid=1900009191";
    let message = format!("GET\n{path}\n{NOW}\n{NONCE}\n\n");
    let signature = base64(&helpers::merchant().openssl_sign(message.as_bytes()));
    // Written by hand in the Go SDK's parameter order.
    let header = format!(
        "WECHATPAY2-SHA256-RSA2048 mchid=\"{MCHID}\",nonce_str=\"{NONCE}\",timestamp=\"{NOW}\",serial_no=\"{MERCHANT_SERIAL}\",signature=\"{signature}\""
    );
    let verified = merchant_key()
        .verify_request(Some(&header), &Method::GET, path, b"", NOW + 10)
        .expect("openssl's signature verifies");
    assert_eq!(verified.nonce_str, NONCE);
    // The same through a HeaderMap.
    let mut headers = HeaderMap::new();
    headers.insert(
        http::header::AUTHORIZATION,
        HeaderValue::from_str(&header).expect("ASCII"),
    );
    assert!(
        merchant_key()
            .verify_request_headers(&headers, &Method::GET, path, b"", NOW)
            .is_ok()
    );
}

fn signed_prepay() -> String {
    merchant_signer()
        .sign_request(
            &Method::POST,
            "/v3/pay/transactions/native",
            PREPAY_BODY.as_bytes(),
            NOW,
            NONCE,
        )
        .header_value()
}

fn verify_prepay(
    header: &str,
    path: &str,
    body: &str,
    now: i64,
) -> Result<Authorization, VerifyError> {
    merchant_key().verify_request(Some(header), &Method::POST, path, body.as_bytes(), now)
}

#[test]
fn a_request_with_a_tampered_body_path_or_method_is_refused() {
    require_openssl!();
    let header = signed_prepay();
    let path = "/v3/pay/transactions/native";
    assert!(verify_prepay(&header, path, PREPAY_BODY, NOW).is_ok());
    let tampered = PREPAY_BODY.replace("\"total\":100", "\"total\":1");
    assert_eq!(
        verify_prepay(&header, path, &tampered, NOW),
        Err(VerifyError::BadSignature)
    );
    assert_eq!(
        verify_prepay(&header, "/v3/pay/transactions/jsapi", PREPAY_BODY, NOW),
        Err(VerifyError::BadSignature)
    );
    assert_eq!(
        merchant_key().verify_request(
            Some(&header),
            &Method::PUT,
            path,
            PREPAY_BODY.as_bytes(),
            NOW
        ),
        Err(VerifyError::BadSignature)
    );
    let other_nonce = header.replace(NONCE, "593BEC0C930BF1AFEB40B4A08C8FB243");
    assert_eq!(
        verify_prepay(&other_nonce, path, PREPAY_BODY, NOW),
        Err(VerifyError::BadSignature)
    );
}

#[test]
fn a_request_signed_with_another_key_is_refused() {
    require_openssl!();
    let stranger = MerchantSigner {
        key: helpers::stranger().private_key(),
        ..merchant_signer()
    };
    let header = stranger
        .sign_request(
            &Method::POST,
            "/v3/pay/transactions/native",
            PREPAY_BODY.as_bytes(),
            NOW,
            NONCE,
        )
        .header_value();
    assert_eq!(
        verify_prepay(&header, "/v3/pay/transactions/native", PREPAY_BODY, NOW),
        Err(VerifyError::BadSignature)
    );
}

#[test]
fn a_request_naming_another_serial_or_merchant_is_refused() {
    require_openssl!();
    let path = "/v3/pay/transactions/native";
    let wrong_serial = MerchantSigner {
        serial_no: "0000000000000000000000000000000000000000".into(),
        ..merchant_signer()
    }
    .sign_request(&Method::POST, path, PREPAY_BODY.as_bytes(), NOW, NONCE)
    .header_value();
    assert!(matches!(
        verify_prepay(&wrong_serial, path, PREPAY_BODY, NOW),
        Err(VerifyError::WrongSerial { .. })
    ));
    let wrong_merchant = MerchantSigner {
        mchid: "1900000000".into(),
        ..merchant_signer()
    }
    .sign_request(&Method::POST, path, PREPAY_BODY.as_bytes(), NOW, NONCE)
    .header_value();
    assert!(matches!(
        verify_prepay(&wrong_merchant, path, PREPAY_BODY, NOW),
        Err(VerifyError::WrongMerchant { .. })
    ));
}

#[test]
fn a_request_with_an_old_or_future_timestamp_is_refused() {
    require_openssl!();
    let header = signed_prepay();
    let path = "/v3/pay/transactions/native";
    assert!(verify_prepay(&header, path, PREPAY_BODY, NOW + 299).is_ok());
    assert!(verify_prepay(&header, path, PREPAY_BODY, NOW - 299).is_ok());
    assert_eq!(
        verify_prepay(&header, path, PREPAY_BODY, NOW + 300),
        Err(VerifyError::StaleTimestamp {
            timestamp: NOW,
            now: NOW + 300
        })
    );
    assert_eq!(
        verify_prepay(&header, path, PREPAY_BODY, NOW - 300),
        Err(VerifyError::FutureTimestamp {
            timestamp: NOW,
            now: NOW - 300
        })
    );
}

#[test]
fn a_request_without_or_with_a_malformed_authorization_is_refused() {
    require_openssl!();
    let path = "/v3/pay/transactions/native";
    let key = merchant_key();
    assert_eq!(
        key.verify_request(None, &Method::POST, path, b"", NOW),
        Err(VerifyError::MissingHeader("Authorization"))
    );
    assert_eq!(
        key.verify_request(Some(""), &Method::POST, path, b"", NOW),
        Err(VerifyError::MissingHeader("Authorization"))
    );
    let header = signed_prepay();
    for malformed in [
        header.replacen("WECHATPAY2-SHA256-RSA2048", "WECHATPAY2-SHA256-RSA", 1),
        header.replacen(",serial_no=", ",serial=", 1),
        header.replacen("timestamp=\"", "timestamp=\"+", 1),
        header.replacen("mchid=\"1900009191\",", "", 1),
        format!("{header},mchid=\"{MCHID}\""),
    ] {
        assert!(
            matches!(
                verify_prepay(&malformed, path, PREPAY_BODY, NOW),
                Err(VerifyError::MalformedAuthorization(_))
            ),
            "{malformed}"
        );
    }
}

// ---- Answer and notification signatures (the Wechatpay-* headers) ----

#[test]
fn our_answer_signature_is_byte_identical_to_openssls_and_openssl_verifies_it() {
    require_openssl!();
    let body = r#"{"code_url":"weixin://wxpay/bizpayurl?pr=p4lpSuKzz"}"#;
    let message = format!("{NOW}\n{NONCE}\n{body}\n");
    let signed = platform_signer().sign(body.as_bytes(), NOW, NONCE);
    let bytes = unbase64(&signed.signature);
    assert!(helpers::platform().openssl_verifies(message.as_bytes(), &bytes));
    assert_eq!(bytes, helpers::platform().openssl_sign(message.as_bytes()));
    let headers = headers_of(&signed);
    assert_eq!(headers["Wechatpay-Timestamp"], NOW.to_string().as_str());
    assert_eq!(headers["Wechatpay-Nonce"], NONCE);
    assert_eq!(headers["Wechatpay-Serial"], PLATFORM_SERIAL);
    assert_eq!(
        headers["Wechatpay-Signature-Type"],
        "WECHATPAY2-SHA256-RSA2048"
    );
}

#[test]
fn an_answer_signed_by_openssl_is_accepted_including_an_empty_204_body() {
    require_openssl!();
    for body in [
        "",
        r#"{"code_url":"weixin://wxpay/bizpayurl?pr=p4lpSuKzz"}"#,
    ] {
        let message = format!("{NOW}\n{NONCE}\n{body}\n");
        let signature = base64(&helpers::platform().openssl_sign(message.as_bytes()));
        let mut headers = HeaderMap::new();
        headers.insert("wechatpay-timestamp", HeaderValue::from(NOW));
        headers.insert("wechatpay-nonce", HeaderValue::from_static(NONCE));
        headers.insert(
            "wechatpay-serial",
            HeaderValue::from_static(PLATFORM_SERIAL),
        );
        headers.insert(
            "wechatpay-signature",
            HeaderValue::from_str(&signature).expect("base64 is ASCII"),
        );
        let verified = verify_platform_message(&headers, body.as_bytes(), &platform_key(), NOW - 5)
            .expect("openssl's signature verifies");
        assert_eq!(verified.timestamp, NOW);
    }
}

#[test]
fn an_answer_with_a_tampered_body_or_another_key_is_refused() {
    require_openssl!();
    let body = br#"{"code_url":"weixin://wxpay/bizpayurl?pr=p4lpSuKzz"}"#;
    let headers = headers_of(&platform_signer().sign(body, NOW, NONCE));
    assert!(verify_platform_message(&headers, body, &platform_key(), NOW).is_ok());
    assert_eq!(
        verify_platform_message(
            &headers,
            br#"{"code_url":"weixin://wxpay/bizpayurl?pr=evil"}"#,
            &platform_key(),
            NOW
        ),
        Err(VerifyError::BadSignature)
    );
    // Trailing whitespace is a different body.
    assert_eq!(
        verify_platform_message(
            &headers,
            &[body.as_slice(), b"\n"].concat(),
            &platform_key(),
            NOW
        ),
        Err(VerifyError::BadSignature)
    );
    let stranger = PlatformSigner {
        serial: PLATFORM_SERIAL.into(),
        key: helpers::stranger().private_key(),
    };
    let forged = headers_of(&stranger.sign(body, NOW, NONCE));
    assert_eq!(
        verify_platform_message(&forged, body, &platform_key(), NOW),
        Err(VerifyError::BadSignature)
    );
}

#[test]
fn an_answer_with_another_serial_is_refused() {
    require_openssl!();
    let body = b"{}";
    let other = PlatformSigner {
        serial: "PUB_KEY_ID_0114232001422025031600000000000000".into(),
        ..platform_signer()
    };
    let headers = headers_of(&other.sign(body, NOW, NONCE));
    assert_eq!(
        verify_platform_message(&headers, body, &platform_key(), NOW),
        Err(VerifyError::WrongSerial {
            expected: PLATFORM_SERIAL.into(),
            got: "PUB_KEY_ID_0114232001422025031600000000000000".into(),
        })
    );
}

#[test]
fn an_answer_with_an_old_or_future_timestamp_is_refused() {
    require_openssl!();
    let body = b"{}";
    let headers = headers_of(&platform_signer().sign(body, NOW, NONCE));
    assert!(verify_platform_message(&headers, body, &platform_key(), NOW + 299).is_ok());
    assert!(matches!(
        verify_platform_message(&headers, body, &platform_key(), NOW + 301),
        Err(VerifyError::StaleTimestamp { .. })
    ));
    assert!(matches!(
        verify_platform_message(&headers, body, &platform_key(), NOW - 301),
        Err(VerifyError::FutureTimestamp { .. })
    ));
}

#[test]
fn each_missing_or_malformed_header_is_named() {
    require_openssl!();
    let body = b"{}";
    let complete = headers_of(&platform_signer().sign(body, NOW, NONCE));
    for name in [
        "Wechatpay-Timestamp",
        "Wechatpay-Nonce",
        "Wechatpay-Signature",
        "Wechatpay-Serial",
    ] {
        let mut headers = complete.clone();
        headers.remove(name);
        assert_eq!(
            verify_platform_message(&headers, body, &platform_key(), NOW),
            Err(VerifyError::MissingHeader(match name {
                "Wechatpay-Timestamp" => wechatpay::HEADER_TIMESTAMP,
                "Wechatpay-Nonce" => wechatpay::HEADER_NONCE,
                "Wechatpay-Signature" => wechatpay::HEADER_SIGNATURE,
                _ => wechatpay::HEADER_SERIAL,
            })),
            "{name}"
        );
    }
    let mut headers = complete.clone();
    headers.insert(
        "wechatpay-timestamp",
        HeaderValue::from_static("1554208460.5"),
    );
    assert!(matches!(
        verify_platform_message(&headers, body, &platform_key(), NOW),
        Err(VerifyError::MalformedHeader {
            header: "Wechatpay-Timestamp",
            ..
        })
    ));
    let mut headers = complete.clone();
    headers.insert(
        "wechatpay-signature-type",
        HeaderValue::from_static("WECHATPAY2-SM2-WITH-SM3"),
    );
    assert_eq!(
        verify_platform_message(&headers, body, &platform_key(), NOW),
        Err(VerifyError::UnsupportedSignatureType(
            "WECHATPAY2-SM2-WITH-SM3".into()
        ))
    );
    // Signature-Type may be absent.
    let mut headers = complete;
    headers.remove("wechatpay-signature-type");
    assert!(verify_platform_message(&headers, body, &platform_key(), NOW).is_ok());
}

#[test]
fn wechat_pays_signature_probe_fails_verification() {
    require_openssl!();
    let body = b"{}";
    let mut headers = headers_of(&platform_signer().sign(body, NOW, NONCE));
    headers.insert(
        "wechatpay-signature",
        HeaderValue::from_static("WECHATPAY/SIGNTEST/abcdefghijklmnopqrstuvwxyz"),
    );
    assert_eq!(
        verify_platform_message(&headers, body, &platform_key(), NOW),
        Err(VerifyError::BadSignature)
    );
}

// ---- Resources (AEAD_AES_256_GCM) ----

/// A vector made with a second implementation, Python's `cryptography` 48.0.0
/// (OpenSSL underneath): `AESGCM(KEY).encrypt(NONCE, PLAINTEXT, AAD)`, base64.
const VECTOR_KEY: &str = "TestApiV3Key0123456789abcdefABCD";
const VECTOR_NONCE: &str = "a1b2c3d4e5f6";
const VECTOR_AAD: &str = "transaction";
const VECTOR_PLAINTEXT: &str = r#"{"mchid":"1230000109","appid":"wxd678efh567hg6787","out_trade_no":"ORD_2024_000001","transaction_id":"4200000001202401010000000001","trade_type":"NATIVE","trade_state":"SUCCESS","trade_state_desc":"支付成功","bank_type":"OTHERS","success_time":"2024-01-01T12:00:05+08:00","payer":{"openid":"oUpF8uMuAJO_M2pxb1Q9zNjWeS6o"},"amount":{"total":1250,"payer_total":1250,"currency":"CNY","payer_currency":"CNY"}}"#;
const VECTOR_CIPHERTEXT: &str = "IZ6xv7e9rNtUYkKbqKrmyQgKR5BxU9Okp3h2mhpSOAJf/E1KNfw+sTOaPQ3kGuzIZdwLEBTw/MjQddaylq8i1fO701TzOMeLtBQPm9zmF2hJ0+9bJ5CkhixgkXrqibvaqx7lJKAfrJSEcY/kg0kssjB2hDkTfqJhnIp1hq2+Q3/YhYAU8WGcj3T0EqQe8mGzPtNz6+SKkb9vd50KMIyadfPHwE3ypwPsYwaMtFzA5WoA/MulakY3+0WHoe2ZWjCio56ngLndSc0vkFXJFpjmtM6EY47N6O75fQlIX3ZQV+iCA6NiQ0w+/JKJ8NC3TXbSKIRR2kZgfqm94flMr5qyC0hT9O7bYCDP+tK7gan6y8mm0ccUWnsShhnLG+Kj4+7QE7CjBxEZ357rlv4CoL7VNKs7PuWITD7l+J9m55dSVh4kxbm95Ln9qWEKupkkz0qd8e0hHmhiDXL1GELEOx4q7Ubwr4meUWhGEXtSWsTrXM4bd0nAl2YMOyQlC4KJ/5P/8j7I7PzofiVMFEB6MlJwjbjwbhXQLL6X4faX80cMhJ0kqLAxWighgD0=";

fn vector_key() -> ApiV3Key {
    ApiV3Key::parse(VECTOR_KEY).expect("32 letters and digits")
}

fn vector_resource() -> EncryptedResource {
    EncryptedResource {
        algorithm: "AEAD_AES_256_GCM".into(),
        ciphertext: VECTOR_CIPHERTEXT.into(),
        nonce: VECTOR_NONCE.into(),
        associated_data: VECTOR_AAD.into(),
        original_type: "transaction".into(),
    }
}

#[test]
fn decrypts_the_second_implementations_vector_into_a_transaction() {
    let plaintext = decrypt_resource(&vector_key(), &vector_resource()).expect("authenticates");
    assert_eq!(plaintext, VECTOR_PLAINTEXT.as_bytes());
    let transaction: Transaction =
        decrypt_resource_json(&vector_key(), &vector_resource()).expect("a transaction");
    assert_eq!(transaction.trade_state, TradeState::Success);
    assert_eq!(transaction.trade_type, Some(TradeType::Native));
    assert_eq!(transaction.amount.total, 1250);
    assert_eq!(transaction.amount.payer_total, Some(1250));
    assert_eq!(transaction.out_trade_no.as_str(), "ORD_2024_000001");
    assert_eq!(
        transaction.success_time.map(OffsetDateTime::unix_timestamp),
        Some(1_704_081_605)
    );
}

#[test]
fn encrypting_the_vectors_plaintext_gives_its_ciphertext() {
    let resource = encrypt_resource(
        &vector_key(),
        "transaction",
        VECTOR_AAD,
        VECTOR_NONCE,
        VECTOR_PLAINTEXT.as_bytes(),
    )
    .expect("encrypts");
    assert_eq!(resource, vector_resource());
}

#[test]
fn a_resource_with_the_wrong_associated_data_is_refused() {
    let mut resource = vector_resource();
    resource.associated_data = "refund".into();
    assert!(matches!(
        decrypt_resource(&vector_key(), &resource),
        Err(ResourceError::Authentication)
    ));
    resource.associated_data = String::new();
    assert!(matches!(
        decrypt_resource(&vector_key(), &resource),
        Err(ResourceError::Authentication)
    ));
}

#[test]
fn a_truncated_ciphertext_is_refused() {
    let sealed = unbase64(VECTOR_CIPHERTEXT);
    let mut resource = vector_resource();
    resource.ciphertext = base64(&sealed[..sealed.len() - 1]);
    assert!(matches!(
        decrypt_resource(&vector_key(), &resource),
        Err(ResourceError::Authentication)
    ));
    resource.ciphertext = base64(&sealed[..sealed.len() - 16]);
    assert!(matches!(
        decrypt_resource(&vector_key(), &resource),
        Err(ResourceError::Authentication)
    ));
    resource.ciphertext = base64(&sealed[..15]);
    assert!(matches!(
        decrypt_resource(&vector_key(), &resource),
        Err(ResourceError::Truncated)
    ));
    resource.ciphertext = "not base64!".into();
    assert!(matches!(
        decrypt_resource(&vector_key(), &resource),
        Err(ResourceError::Base64)
    ));
}

#[test]
fn a_tampered_ciphertext_is_refused() {
    let mut sealed = unbase64(VECTOR_CIPHERTEXT);
    sealed[10] ^= 0x01;
    let resource = EncryptedResource {
        ciphertext: base64(&sealed),
        ..vector_resource()
    };
    assert!(matches!(
        decrypt_resource(&vector_key(), &resource),
        Err(ResourceError::Authentication)
    ));
}

#[test]
fn a_resource_with_the_wrong_nonce_or_key_is_refused() {
    let resource = EncryptedResource {
        nonce: "a1b2c3d4e5f7".into(),
        ..vector_resource()
    };
    assert!(matches!(
        decrypt_resource(&vector_key(), &resource),
        Err(ResourceError::Authentication)
    ));
    let short = EncryptedResource {
        nonce: "a1b2c3".into(),
        ..vector_resource()
    };
    assert!(matches!(
        decrypt_resource(&vector_key(), &short),
        Err(ResourceError::NonceLength(6))
    ));
    let other_key = ApiV3Key::parse("TestApiV3Key0123456789abcdefABCE").expect("valid");
    assert!(matches!(
        decrypt_resource(&other_key, &vector_resource()),
        Err(ResourceError::Authentication)
    ));
    let other_algorithm = EncryptedResource {
        algorithm: "AEAD_SM4_GCM".into(),
        ..vector_resource()
    };
    assert!(matches!(
        decrypt_resource(&vector_key(), &other_algorithm),
        Err(ResourceError::UnsupportedAlgorithm(_))
    ));
}

#[test]
fn encrypt_then_decrypt_gives_back_any_plaintext() {
    let key = ApiV3Key::generate();
    for plaintext in [&b""[..], b"{}", VECTOR_PLAINTEXT.as_bytes(), &[0_u8; 4096]] {
        let nonce = generate_resource_nonce();
        let resource =
            encrypt_resource(&key, "refund", "refund", &nonce, plaintext).expect("encrypts");
        assert_eq!(
            decrypt_resource(&key, &resource).expect("decrypts"),
            plaintext
        );
    }
}

// ---- Notifications, end to end ----

fn paid_transaction() -> Transaction {
    serde_json::from_str(VECTOR_PLAINTEXT).expect("a transaction")
}

fn refund_payload(status: RefundStatus) -> RefundNotification {
    RefundNotification {
        mchid: "1230000109".into(),
        out_trade_no: OutTradeNo::parse("ORD_2024_000001").expect("valid"),
        transaction_id: "4200000001202401010000000001".into(),
        out_refund_no: "RF_2024_000001".into(),
        refund_id: "50000000382019052709732678859".into(),
        refund_status: status,
        success_time: (status == RefundStatus::Success)
            .then(|| OffsetDateTime::from_unix_timestamp(1_704_085_205).expect("valid")),
        user_received_account: Some("支付用户零钱".into()),
        amount: RefundNotificationAmount {
            total: 1250,
            refund: 250,
            payer_total: 1250,
            payer_refund: 250,
        },
    }
}

#[test]
fn a_notification_built_and_signed_by_the_platform_is_verified_and_decrypted_by_the_merchant() {
    require_openssl!();
    let key = ApiV3Key::generate();
    let created = OffsetDateTime::from_unix_timestamp(NOW)
        .expect("valid")
        .to_offset(time::macros::offset!(+8));
    let cases = [
        (
            EventType::TransactionSuccess,
            NotificationPayload::Transaction(paid_transaction()),
        ),
        (
            EventType::RefundSuccess,
            NotificationPayload::Refund(refund_payload(RefundStatus::Success)),
        ),
        (
            EventType::RefundAbnormal,
            NotificationPayload::Refund(refund_payload(RefundStatus::Abnormal)),
        ),
        (
            EventType::RefundClosed,
            NotificationPayload::Refund(refund_payload(RefundStatus::Closed)),
        ),
    ];
    for (event, payload) in cases {
        // The simulator's side.
        let notification = Notification::encrypt(
            "EV-2018022511223320873",
            created,
            event,
            &payload,
            &key,
            &generate_resource_nonce(),
        )
        .expect("encrypts");
        let body = serde_json::to_vec(&notification).expect("serializes");
        let headers = headers_of(&platform_signer().sign(&body, NOW, &wechatpay::generate_nonce()));

        // The merchant's side.
        verify_platform_message(&headers, &body, &platform_key(), NOW + 3).expect("verifies");
        let received: Notification = serde_json::from_slice(&body).expect("parses");
        assert_eq!(received.event_type, event);
        assert_eq!(received.resource_type, "encrypt-resource");
        assert_eq!(received.resource.algorithm, "AEAD_AES_256_GCM");
        assert_eq!(received.resource.original_type, event.original_type());
        let text = String::from_utf8(body.clone()).expect("UTF-8");
        assert!(
            text.contains("\"create_time\":\"2019-04-02T20:34:20+08:00\""),
            "{text}"
        );
        assert_eq!(received.decrypt(&key).expect("decrypts"), payload);
    }
}

#[test]
fn a_notification_whose_resource_type_contradicts_its_event_is_refused() {
    let key = vector_key();
    let notification = Notification {
        id: "EV-1".into(),
        create_time: OffsetDateTime::from_unix_timestamp(NOW).expect("valid"),
        event_type: EventType::RefundSuccess,
        resource_type: "encrypt-resource".into(),
        summary: "退款成功".into(),
        resource: vector_resource(),
    };
    assert!(matches!(
        notification.decrypt(&key),
        Err(ResourceError::OriginalType {
            expected: "refund",
            ..
        })
    ));
    assert!(matches!(
        Notification::encrypt(
            "EV-1",
            OffsetDateTime::from_unix_timestamp(NOW).expect("valid"),
            EventType::TransactionSuccess,
            &NotificationPayload::Refund(refund_payload(RefundStatus::Success)),
            &key,
            VECTOR_NONCE,
        ),
        Err(ResourceError::OriginalType { .. })
    ));
}

#[test]
fn reads_the_documented_notification_envelope() {
    let body = r#"{"id":"EV-2018022511223320873","create_time":"2015-05-20T13:29:35+08:00","resource_type":"encrypt-resource","event_type":"TRANSACTION.SUCCESS","summary":"支付成功","resource":{"original_type":"transaction","algorithm":"AEAD_AES_256_GCM","ciphertext":"","associated_data":"","nonce":""}}"#;
    let notification: Notification = serde_json::from_str(body).expect("the documented envelope");
    assert_eq!(notification.event_type, EventType::TransactionSuccess);
    assert_eq!(notification.create_time.unix_timestamp(), 1_432_099_775);
}
