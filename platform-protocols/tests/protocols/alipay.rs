//! Alipay RSA2: requests, answers and notifications against openssl, every refusal,
//! and the round trips.

use crate::helpers::{self, base64, require_openssl, unbase64};
use platform_protocols::Yuan;
use platform_protocols::alipay::{
    self, AlipayError, CommonResponse, FundChange, Method, PrecreateBiz, PrecreateResponse,
    QueryResponse, RefundResponse, TradeNotification, TradeStatus, extract_response, parse_form,
    sign_content, sign_method_response, sign_notification, sign_request, sign_response, to_form,
    verify_notification, verify_request, verify_response,
};
use time::OffsetDateTime;

const APP_ID: &str = "2014072300007148";

/// 2014-07-24 03:07:50 in Beijing.
fn at() -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(1_406_142_470).expect("valid")
}

fn precreate_biz() -> PrecreateBiz {
    PrecreateBiz {
        out_trade_no: "20150320010101001".into(),
        total_amount: "88.88".parse().expect("an amount"),
        subject: "Iphone6 16G".into(),
        timeout_express: None,
        passback_params: None,
    }
}

fn signed_precreate() -> Vec<(String, String)> {
    sign_request(
        APP_ID,
        &helpers::merchant().private_key(),
        Method::TradePrecreate,
        &precreate_biz(),
        Some("https://shop.example/notify/alipay"),
        at(),
    )
    .expect("signs")
}

fn get<'a>(params: &'a [(String, String)], name: &str) -> &'a str {
    params
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
        .expect("present")
}

fn set(params: &mut [(String, String)], name: &str, value: &str) {
    params
        .iter_mut()
        .find(|(key, _)| key == name)
        .expect("present")
        .1 = value.to_owned();
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect()
}

// ---- Requests ----

#[test]
fn our_request_signature_covers_the_documented_content_and_matches_openssl_byte_for_byte() {
    require_openssl!();
    let params = signed_precreate();
    // The content written out by hand from the rule: sorted, raw values, no sign.
    let content = concat!(
        "app_id=2014072300007148",
        "&biz_content={\"out_trade_no\":\"20150320010101001\",\"total_amount\":\"88.88\",\"subject\":\"Iphone6 16G\"}",
        "&charset=utf-8&format=JSON&method=alipay.trade.precreate",
        "&notify_url=https://shop.example/notify/alipay",
        "&sign_type=RSA2&timestamp=2014-07-24 03:07:50&version=1.0"
    );
    assert_eq!(
        sign_content(&params, &["sign"]).expect("no duplicates"),
        content
    );
    let ours = unbase64(get(&params, "sign"));
    assert!(helpers::merchant().openssl_verifies(content.as_bytes(), &ours));
    assert_eq!(ours, helpers::merchant().openssl_sign(content.as_bytes()));
}

#[test]
fn a_request_signed_by_openssl_is_verified_and_its_biz_content_read() {
    require_openssl!();
    let biz = r#"{"out_trade_no":"T-1","total_amount":"0.01","subject":"测试 & 标题"}"#;
    let mut params = pairs(&[
        ("version", "1.0"),
        ("timestamp", "2014-07-24 03:07:50"),
        ("sign_type", "RSA2"),
        ("method", "alipay.trade.precreate"),
        ("format", "JSON"),
        ("charset", "utf-8"),
        ("biz_content", biz),
        ("app_id", APP_ID),
    ]);
    let content = format!(
        "app_id={APP_ID}&biz_content={biz}&charset=utf-8&format=JSON&method=alipay.trade.precreate&sign_type=RSA2&timestamp=2014-07-24 03:07:50&version=1.0"
    );
    params.push((
        "sign".into(),
        base64(&helpers::merchant().openssl_sign(content.as_bytes())),
    ));
    // Through the wire form and back, as the gateway receives it.
    let received = parse_form(&to_form(&params).expect("encodes")).expect("decodes");
    let verified = verify_request(&received, APP_ID, &helpers::merchant().public_key())
        .expect("openssl's signature verifies");
    assert_eq!(verified.method, Method::TradePrecreate);
    assert_eq!(verified.notify_url, None);
    let read: PrecreateBiz = verified.biz().expect("biz_content parses");
    assert_eq!(read.total_amount.fen(), 1);
    assert_eq!(read.subject, "测试 & 标题");
}

#[test]
fn parameter_order_does_not_change_the_content_or_the_signature() {
    require_openssl!();
    let params = signed_precreate();
    let mut reversed = params.clone();
    reversed.reverse();
    let mut rotated = params.clone();
    rotated.rotate_left(3);
    let content = sign_content(&params, &["sign"]).expect("no duplicates");
    for reordered in [&reversed, &rotated] {
        assert_eq!(
            sign_content(reordered, &["sign"]).expect("no duplicates"),
            content
        );
        assert!(verify_request(reordered, APP_ID, &helpers::merchant().public_key()).is_ok());
    }
}

#[test]
fn a_request_with_a_changed_value_is_refused() {
    require_openssl!();
    let public = helpers::merchant().public_key();
    for (name, value) in [
        (
            "biz_content",
            r#"{"out_trade_no":"20150320010101001","total_amount":"0.01","subject":"Iphone6 16G"}"#,
        ),
        ("timestamp", "2014-07-24 03:07:51"),
        ("notify_url", "https://evil.example/notify"),
        ("method", "alipay.trade.query"),
    ] {
        let mut params = signed_precreate();
        set(&mut params, name, value);
        assert!(
            matches!(
                verify_request(&params, APP_ID, &public),
                Err(AlipayError::BadSignature)
            ),
            "{name}"
        );
    }
}

#[test]
fn a_request_with_a_missing_or_extra_parameter_is_refused() {
    require_openssl!();
    let public = helpers::merchant().public_key();
    let mut missing = signed_precreate();
    missing.retain(|(name, _)| name != "notify_url");
    assert!(matches!(
        verify_request(&missing, APP_ID, &public),
        Err(AlipayError::BadSignature)
    ));
    let mut extra = signed_precreate();
    extra.push(("return_url".into(), "https://shop.example/back".into()));
    assert!(matches!(
        verify_request(&extra, APP_ID, &public),
        Err(AlipayError::BadSignature)
    ));
    // An extra parameter with an empty value is not part of the content.
    let mut empty = signed_precreate();
    empty.push(("app_auth_token".into(), String::new()));
    assert!(verify_request(&empty, APP_ID, &public).is_ok());
    let mut unsigned = signed_precreate();
    unsigned.retain(|(name, _)| name != "sign");
    assert!(matches!(
        verify_request(&unsigned, APP_ID, &public),
        Err(AlipayError::MissingParameter("sign"))
    ));
}

#[test]
fn a_request_with_sign_type_altered_is_refused() {
    require_openssl!();
    let public = helpers::merchant().public_key();
    for altered in ["RSA", "rsa2", "RSA2 ", "SM2"] {
        let mut params = signed_precreate();
        set(&mut params, "sign_type", altered);
        assert!(
            matches!(
                verify_request(&params, APP_ID, &public),
                Err(AlipayError::UnsupportedSignType(_))
            ),
            "{altered:?}"
        );
    }
}

#[test]
fn an_rsa_sha1_request_is_refused_even_when_its_signature_is_valid() {
    require_openssl!();
    let mut params = pairs(&[
        ("app_id", APP_ID),
        ("method", "alipay.trade.query"),
        ("charset", "utf-8"),
        ("sign_type", "RSA"),
        ("timestamp", "2014-07-24 03:07:50"),
        ("version", "1.0"),
        ("biz_content", r#"{"out_trade_no":"T-1"}"#),
    ]);
    let content = sign_content(&params, &["sign"]).expect("no duplicates");
    params.push((
        "sign".into(),
        base64(&helpers::merchant().openssl_sign_with("-sha1", content.as_bytes())),
    ));
    assert!(matches!(
        verify_request(&params, APP_ID, &helpers::merchant().public_key()),
        Err(AlipayError::UnsupportedSignType(kind)) if kind == "RSA"
    ));
}

#[test]
fn a_request_for_another_app_or_signed_with_another_key_is_refused() {
    require_openssl!();
    assert!(matches!(
        verify_request(
            &signed_precreate(),
            "2088000000000000",
            &helpers::merchant().public_key()
        ),
        Err(AlipayError::WrongAppId { .. })
    ));
    assert!(matches!(
        verify_request(
            &signed_precreate(),
            APP_ID,
            &helpers::stranger().public_key()
        ),
        Err(AlipayError::BadSignature)
    ));
    let mut unknown = signed_precreate();
    set(&mut unknown, "method", "alipay.trade.pay");
    assert!(matches!(
        verify_request(&unknown, APP_ID, &helpers::merchant().public_key()),
        Err(AlipayError::UnknownMethod(_))
    ));
}

// ---- Answers ----

#[test]
fn an_answer_signed_by_openssl_over_odd_but_exact_bytes_is_verified() {
    require_openssl!();
    // Spacing, member order and escapes a re-serializer would change.
    let node = "{\"code\":\"10000\", \"msg\":\"Success\",\"qr_code\":\"https:\\/\\/qr.alipay.com\\/bax03431ljhokirwl38f00a7\",\"out_trade_no\":\"6823789339978248\",\"note\":\"\\u652f\\u4ed8\"}";
    let sign = base64(&helpers::platform().openssl_sign(node.as_bytes()));
    let body = format!("{{\"alipay_trade_precreate_response\":{node},\"sign\":\"{sign}\"}}");
    let verified = verify_response(
        &body,
        Method::TradePrecreate,
        &helpers::platform().public_key(),
    )
    .expect("openssl's signature over the exact bytes verifies");
    assert_eq!(verified.json, node);
    let answer: PrecreateResponse = verified.parse().expect("parses");
    assert_eq!(
        answer.qr_code.as_deref(),
        Some("https://qr.alipay.com/bax03431ljhokirwl38f00a7")
    );

    // The same node re-serialized is other bytes: the signature must not carry over.
    let reserialized: serde_json::Value = serde_json::from_str(node).expect("JSON");
    let body = format!(
        "{{\"alipay_trade_precreate_response\":{},\"sign\":\"{sign}\"}}",
        serde_json::to_string(&reserialized).expect("serializes")
    );
    assert!(matches!(
        verify_response(
            &body,
            Method::TradePrecreate,
            &helpers::platform().public_key()
        ),
        Err(AlipayError::BadSignature)
    ));
}

#[test]
fn our_answer_signature_is_openssls_and_every_method_round_trips() {
    require_openssl!();
    let private = helpers::platform().private_key();
    let public = helpers::platform().public_key();
    for method in Method::ALL {
        let response = QueryResponse {
            common: CommonResponse::success(),
            trade_no: Some("2013112011001004330000121536".into()),
            out_trade_no: Some("6823789339978248".into()),
            buyer_logon_id: None,
            trade_status: Some(TradeStatus::TradeSuccess),
            total_amount: Some("88.88".parse().expect("an amount")),
            receipt_amount: None,
            buyer_pay_amount: None,
            send_pay_date: None,
            buyer_user_id: None,
        };
        let body = sign_method_response(method, &response, &private).expect("signs");
        let node = serde_json::to_string(&response).expect("serializes");
        assert!(body.starts_with(&format!(
            "{{\"{}\":{node},\"sign\":\"",
            method.response_node()
        )));
        let verified = verify_response(&body, method, &public).expect("verifies");
        assert_eq!(verified.json, node);
        let sign = unbase64(verified.sign.as_deref().expect("signed"));
        assert!(helpers::platform().openssl_verifies(node.as_bytes(), &sign));
        assert_eq!(sign, helpers::platform().openssl_sign(node.as_bytes()));
        assert_eq!(verified.parse::<QueryResponse>().expect("parses"), response);
    }
}

#[test]
fn a_signed_error_response_verifies_and_parses_as_any_answer() {
    require_openssl!();
    let error = CommonResponse::business_failure("ACQ.TRADE_NOT_EXIST", "交易不存在");
    let node = serde_json::to_string(&error).expect("serializes");
    let body =
        sign_response("error_response", &node, &helpers::platform().private_key()).expect("signs");
    let verified = verify_response(
        &body,
        Method::TradeRefund,
        &helpers::platform().public_key(),
    )
    .expect("verifies");
    assert!(verified.is_error_response());
    let answer: RefundResponse = verified.parse().expect("parses with common fields only");
    assert!(!answer.common.is_success());
    assert_eq!(
        answer.common.sub_code.as_deref(),
        Some("ACQ.TRADE_NOT_EXIST")
    );
    assert_eq!(answer.fund_change, None);
}

#[test]
fn a_tampered_unsigned_or_foreign_answer_is_refused() {
    require_openssl!();
    let response = RefundResponse {
        common: CommonResponse::success(),
        trade_no: Some("2013112011001004330000121536".into()),
        out_trade_no: Some("6823789339978248".into()),
        buyer_logon_id: None,
        fund_change: Some(FundChange::Yes),
        refund_fee: Some("88.88".parse().expect("an amount")),
        gmt_refund_pay: None,
    };
    let body = sign_method_response(
        Method::TradeRefund,
        &response,
        &helpers::platform().private_key(),
    )
    .expect("signs");
    let public = helpers::platform().public_key();
    assert!(verify_response(&body, Method::TradeRefund, &public).is_ok());
    let tampered = body.replace("\"88.88\"", "\"888.88\"");
    assert!(matches!(
        verify_response(&tampered, Method::TradeRefund, &public),
        Err(AlipayError::BadSignature)
    ));
    assert!(matches!(
        verify_response(
            &body,
            Method::TradeRefund,
            &helpers::stranger().public_key()
        ),
        Err(AlipayError::BadSignature)
    ));
    // An answer for another method does not answer this one.
    assert!(matches!(
        verify_response(&body, Method::TradeQuery, &public),
        Err(AlipayError::MissingResponseNode(_))
    ));
    let unsigned = r#"{"error_response":{"code":"40002","msg":"Invalid Arguments","sub_code":"isv.invalid-signature","sub_msg":"验签出错"}}"#;
    assert!(matches!(
        verify_response(unsigned, Method::TradeRefund, &public),
        Err(AlipayError::MissingSign)
    ));
    // Readable without verification, marked as the error node.
    assert!(
        extract_response(unsigned, Method::TradeRefund)
            .expect("readable")
            .is_error_response()
    );
}

// ---- Notifications ----

fn paid_notification() -> TradeNotification {
    let mut notification = TradeNotification::new(
        "ac05099524730693a8b330c5ecf72da9786",
        "2015-04-27 15:45:58",
        APP_ID,
        "2013112011001004330000121536",
        "6823789339978248",
    );
    notification.trade_status = Some(TradeStatus::TradeSuccess);
    notification.total_amount = Some("20.00".parse().expect("an amount"));
    notification.receipt_amount = Some("15.00".parse().expect("an amount"));
    notification.buyer_pay_amount = Some("13.88".parse().expect("an amount"));
    notification.subject = Some("当面付 & QR+test".into());
    notification.gmt_payment = Some("2015-04-27 15:45:57".into());
    notification
}

#[test]
fn a_notification_built_by_the_platform_is_verified_and_read_by_the_merchant() {
    require_openssl!();
    let body =
        sign_notification(&paid_notification(), &helpers::platform().private_key()).expect("signs");
    assert!(body.contains("sign_type=RSA2"));
    let received =
        verify_notification(&body, APP_ID, &helpers::platform().public_key()).expect("verifies");
    assert_eq!(received, paid_notification());
    assert_eq!(received.total_amount.map(Yuan::fen), Some(2000));
}

#[test]
fn a_refund_notification_round_trips_with_its_refund_fields() {
    require_openssl!();
    let mut notification = paid_notification();
    notification.trade_status = Some(TradeStatus::TradeClosed);
    notification.out_biz_no = Some("HZ01RF001".into());
    notification.refund_fee = Some("20.00".parse().expect("an amount"));
    notification.gmt_refund = Some("2015-04-28 15:45:57.320".into());
    let body = sign_notification(&notification, &helpers::platform().private_key()).expect("signs");
    let received =
        verify_notification(&body, APP_ID, &helpers::platform().public_key()).expect("verifies");
    assert_eq!(received, notification);
}

/// A notification as Alipay posts it, signed by openssl over the decoded, sorted
/// fields without `sign` and `sign_type`.
fn openssl_signed_notification() -> String {
    let fields = pairs(&[
        ("gmt_create", "2015-04-27 15:45:57"),
        ("charset", "utf-8"),
        ("seller_email", "zen_gwen@hotmail.com"),
        ("subject", "当面付 & QR+test"),
        ("buyer_id", "2088102122524333"),
        ("invoice_amount", "10.00"),
        ("notify_id", "4a91b7a78a503640467525113fb7d8bg8e"),
        (
            "fund_bill_list",
            r#"[{"amount":"10.00","fundChannel":"ALIPAYACCOUNT"}]"#,
        ),
        ("notify_type", "trade_status_sync"),
        ("trade_status", "TRADE_SUCCESS"),
        ("receipt_amount", "10.00"),
        ("app_id", APP_ID),
        ("buyer_pay_amount", "10.00"),
        ("seller_id", "2088102119685838"),
        ("gmt_payment", "2015-04-27 15:45:57"),
        ("notify_time", "2015-04-27 15:45:58"),
        ("version", "1.0"),
        ("out_trade_no", "6823789339978248"),
        ("total_amount", "10.00"),
        ("trade_no", "2015042721001004330034000000"),
        ("auth_app_id", APP_ID),
        ("buyer_logon_id", "csq***@sandbox.com"),
        ("point_amount", "0.00"),
    ]);
    let mut sorted = fields.clone();
    sorted.sort();
    let content = sorted
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect::<Vec<_>>()
        .join("&");
    let sign = base64(&helpers::platform().openssl_sign(content.as_bytes()));
    let mut form = fields;
    form.push(("sign".into(), sign));
    form.push(("sign_type".into(), "RSA2".into()));
    to_form(&form).expect("encodes")
}

#[test]
fn a_notification_signed_by_openssl_is_verified_after_url_decoding() {
    require_openssl!();
    let body = openssl_signed_notification();
    // Encoded on the wire: the decoded values are what was signed.
    assert!(
        body.contains("subject=%E5%BD%93%E9%9D%A2%E4%BB%98+%26+QR%2Btest"),
        "{body}"
    );
    let notification =
        verify_notification(&body, APP_ID, &helpers::platform().public_key()).expect("verifies");
    assert_eq!(notification.subject.as_deref(), Some("当面付 & QR+test"));
    assert_eq!(notification.trade_status, Some(TradeStatus::TradeSuccess));
    assert_eq!(notification.receipt_amount.map(Yuan::fen), Some(1000));
}

fn reencode(body: &str, edit: impl FnOnce(&mut Vec<(String, String)>)) -> String {
    let mut params = parse_form(body).expect("decodes");
    edit(&mut params);
    to_form(&params).expect("encodes")
}

#[test]
fn a_tampered_or_foreign_notification_is_refused() {
    require_openssl!();
    let public = helpers::platform().public_key();
    let body = openssl_signed_notification();
    let changed = reencode(&body, |params| set(params, "total_amount", "100.00"));
    assert!(matches!(
        verify_notification(&changed, APP_ID, &public),
        Err(AlipayError::BadSignature)
    ));
    let missing = reencode(&body, |params| {
        params.retain(|(name, _)| name != "point_amount")
    });
    assert!(matches!(
        verify_notification(&missing, APP_ID, &public),
        Err(AlipayError::BadSignature)
    ));
    let extra = reencode(&body, |params| {
        params.push(("refund_fee".into(), "10.00".into()))
    });
    assert!(matches!(
        verify_notification(&extra, APP_ID, &public),
        Err(AlipayError::BadSignature)
    ));
    assert!(matches!(
        verify_notification(&body, APP_ID, &helpers::stranger().public_key()),
        Err(AlipayError::BadSignature)
    ));
    assert!(matches!(
        verify_notification(&body, "2088000000000000", &public),
        Err(AlipayError::WrongAppId { .. })
    ));
    let duplicated = format!("{body}&trade_status=TRADE_CLOSED");
    assert!(matches!(
        verify_notification(&duplicated, APP_ID, &public),
        Err(AlipayError::DuplicateParameter(_))
    ));
}

#[test]
fn a_notification_with_sign_type_altered_or_missing_is_refused() {
    require_openssl!();
    let public = helpers::platform().public_key();
    let body = openssl_signed_notification();
    // sign_type is outside the signed content, so only its check stops this.
    let rsa = reencode(&body, |params| set(params, "sign_type", "RSA"));
    assert!(matches!(
        verify_notification(&rsa, APP_ID, &public),
        Err(AlipayError::UnsupportedSignType(kind)) if kind == "RSA"
    ));
    let absent = reencode(&body, |params| {
        params.retain(|(name, _)| name != "sign_type")
    });
    assert!(matches!(
        verify_notification(&absent, APP_ID, &public),
        Err(AlipayError::MissingParameter("sign_type"))
    ));
    let unsigned = reencode(&body, |params| params.retain(|(name, _)| name != "sign"));
    assert!(matches!(
        verify_notification(&unsigned, APP_ID, &public),
        Err(AlipayError::MissingParameter("sign"))
    ));
}

#[test]
fn the_notification_replies_are_exactly_success_and_fail() {
    assert_eq!(alipay::NOTIFY_SUCCESS, "success");
    assert_eq!(alipay::NOTIFY_FAIL, "fail");
}
