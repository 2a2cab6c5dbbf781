//! RSA2 over sorted parameters: the signed content, signing a request (the
//! merchant application's side) and verifying one (the gateway's side).

use super::{AlipayError, CHARSET, FORMAT, Method, SIGN_TYPE_RSA2, VERSION};
use crate::keys::{PrivateKey, PublicKey};
use serde::Serialize;
use serde::de::DeserializeOwned;
use time::macros::{format_description, offset};
use time::{OffsetDateTime, PrimitiveDateTime, UtcOffset};

/// Beijing time, the zone of Alipay's `timestamp`, `notify_time` and `gmt_*` fields.
pub const BEIJING: UtcOffset = offset!(+8);

/// The signed content of a parameter list: every parameter whose name is not in
/// `excluded` and whose value is not empty, sorted by name (byte order, which is
/// ASCII order), as `name=value` joined by `&`, values raw (already URL-decoded).
///
/// Requests exclude `sign`; notifications exclude `sign` and `sign_type`. Refuses a
/// list with a repeated or empty name: which value was signed would be ambiguous.
pub fn sign_content(params: &[(String, String)], excluded: &[&str]) -> Result<String, AlipayError> {
    let mut kept: Vec<(&str, &str)> = Vec::with_capacity(params.len());
    let mut seen: Vec<&str> = Vec::with_capacity(params.len());
    for (name, value) in params {
        if name.is_empty() {
            return Err(AlipayError::EmptyParameterName);
        }
        if seen.contains(&name.as_str()) {
            return Err(AlipayError::DuplicateParameter(name.clone()));
        }
        seen.push(name);
        if !excluded.contains(&name.as_str()) && !value.is_empty() {
            kept.push((name, value));
        }
    }
    kept.sort_unstable_by(|left, right| left.0.as_bytes().cmp(right.0.as_bytes()));
    Ok(kept
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect::<Vec<_>>()
        .join("&"))
}

/// The value of `name`, if present and not empty.
pub(crate) fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
        .filter(|value| !value.is_empty())
}

/// Formats a time as Alipay's `yyyy-MM-dd HH:mm:ss` in Beijing time.
pub fn format_timestamp(at: OffsetDateTime) -> String {
    let format = format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
    // The format has only numeric components, which always format.
    at.to_offset(BEIJING)
        .format(&format)
        .unwrap_or_else(|_| String::new())
}

/// Parses Alipay's `yyyy-MM-dd HH:mm:ss` as Beijing time.
pub fn parse_timestamp(text: &str) -> Result<OffsetDateTime, AlipayError> {
    let format = format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
    PrimitiveDateTime::parse(text, &format)
        .map(|local| local.assume_offset(BEIJING))
        .map_err(|_| AlipayError::Timestamp(text.to_owned()))
}

/// Signs a request: the common parameters, `biz_content` (the serialized `biz`),
/// and `sign` over them, in the order the SDKs send them. `timestamp` is the current
/// time (a parameter so tests are deterministic).
pub fn sign_request<B: Serialize>(
    app_id: &str,
    app_private_key: &PrivateKey,
    method: Method,
    biz: &B,
    notify_url: Option<&str>,
    timestamp: OffsetDateTime,
) -> Result<Vec<(String, String)>, AlipayError> {
    let mut params: Vec<(String, String)> = vec![
        ("app_id".into(), app_id.into()),
        ("method".into(), method.as_str().into()),
        ("format".into(), FORMAT.into()),
        ("charset".into(), CHARSET.into()),
        ("sign_type".into(), SIGN_TYPE_RSA2.into()),
        ("timestamp".into(), format_timestamp(timestamp)),
        ("version".into(), VERSION.into()),
    ];
    if let Some(url) = notify_url {
        params.push(("notify_url".into(), url.into()));
    }
    params.push(("biz_content".into(), serde_json::to_string(biz)?));
    let content = sign_content(&params, &["sign"])?;
    let sign = app_private_key.sign_rsa_sha256_base64(content.as_bytes());
    params.push(("sign".into(), sign));
    Ok(params)
}

/// The parameters as an `application/x-www-form-urlencoded` body (or query string).
pub fn to_form(params: &[(String, String)]) -> Result<String, AlipayError> {
    serde_urlencoded::to_string(params).map_err(|error| AlipayError::Form(error.to_string()))
}

/// Decodes an `application/x-www-form-urlencoded` body into its parameters, in
/// order, refusing a repeated name.
pub fn parse_form(body: &str) -> Result<Vec<(String, String)>, AlipayError> {
    let params: Vec<(String, String)> =
        serde_urlencoded::from_str(body).map_err(|error| AlipayError::Form(error.to_string()))?;
    for (index, (name, _)) in params.iter().enumerate() {
        if params[..index].iter().any(|(earlier, _)| earlier == name) {
            return Err(AlipayError::DuplicateParameter(name.clone()));
        }
    }
    Ok(params)
}

/// A request whose signature verified, with its common parameters read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedRequest {
    /// The application.
    pub app_id: String,
    /// The call.
    pub method: Method,
    /// The `timestamp` as sent (`yyyy-MM-dd HH:mm:ss`, Beijing time);
    /// [`parse_timestamp`] reads it.
    pub timestamp: String,
    /// Where notifications about this call go.
    pub notify_url: Option<String>,
    /// The call's parameters, a JSON text.
    pub biz_content: String,
}

impl VerifiedRequest {
    /// Parses `biz_content` as the call's parameter type.
    pub fn biz<T: DeserializeOwned>(&self) -> Result<T, AlipayError> {
        Ok(serde_json::from_str(&self.biz_content)?)
    }
}

/// Verifies a request (the gateway's side), given all its parameters (query string
/// and form body together, URL-decoded): `app_id` is `app_id`, `sign_type` is
/// `RSA2`, `charset`, `format` (when sent) and `version` are ours, `method` is known,
/// and `sign` verifies with the application's public key over every other
/// non-empty parameter. Checking `timestamp` against a clock is the caller's.
pub fn verify_request(
    params: &[(String, String)],
    app_id: &str,
    app_public_key: &PublicKey,
) -> Result<VerifiedRequest, AlipayError> {
    let required =
        |name: &'static str| param(params, name).ok_or(AlipayError::MissingParameter(name));
    let sign = required("sign")?;
    let sign_type = required("sign_type")?;
    if sign_type != SIGN_TYPE_RSA2 {
        return Err(AlipayError::UnsupportedSignType(sign_type.to_owned()));
    }
    let got_app_id = required("app_id")?;
    if got_app_id != app_id {
        return Err(AlipayError::WrongAppId {
            expected: app_id.to_owned(),
            got: got_app_id.to_owned(),
        });
    }
    let charset = required("charset")?;
    if !charset.eq_ignore_ascii_case(CHARSET) {
        return Err(AlipayError::UnsupportedValue {
            name: "charset",
            expected: CHARSET,
            got: charset.to_owned(),
        });
    }
    if let Some(format) = param(params, "format")
        && !format.eq_ignore_ascii_case(FORMAT)
    {
        return Err(AlipayError::UnsupportedValue {
            name: "format",
            expected: FORMAT,
            got: format.to_owned(),
        });
    }
    let version = required("version")?;
    if version != VERSION {
        return Err(AlipayError::UnsupportedValue {
            name: "version",
            expected: VERSION,
            got: version.to_owned(),
        });
    }
    let method: Method = required("method")?.parse()?;
    let timestamp = required("timestamp")?;
    let biz_content = required("biz_content")?;
    let content = sign_content(params, &["sign"])?;
    app_public_key
        .verify_rsa_sha256_base64(content.as_bytes(), sign)
        .map_err(|_| AlipayError::BadSignature)?;
    Ok(VerifiedRequest {
        app_id: got_app_id.to_owned(),
        method,
        timestamp: timestamp.to_owned(),
        notify_url: param(params, "notify_url").map(str::to_owned),
        biz_content: biz_content.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect()
    }

    #[test]
    fn content_is_sorted_raw_and_skips_sign_and_empty_values() {
        let params = pairs(&[
            ("method", "alipay.trade.query"),
            ("app_id", "2014072300007148"),
            ("sign", "abc"),
            ("notify_url", ""),
            ("biz_content", "{\"out_trade_no\":\"T 1&2\"}"),
            ("timestamp", "2014-07-24 03:07:50"),
        ]);
        assert_eq!(
            sign_content(&params, &["sign"]).expect("no duplicates"),
            "app_id=2014072300007148&biz_content={\"out_trade_no\":\"T 1&2\"}&method=alipay.trade.query&timestamp=2014-07-24 03:07:50"
        );
    }

    #[test]
    fn ascii_order_puts_capitals_and_underscores_where_bytes_say() {
        let params = pairs(&[
            ("b", "1"),
            ("a_b", "2"),
            ("aB", "3"),
            ("a", "4"),
            ("B", "5"),
        ]);
        assert_eq!(
            sign_content(&params, &[]).expect("no duplicates"),
            "B=5&a=4&aB=3&a_b=2&b=1"
        );
    }

    #[test]
    fn duplicate_and_nameless_parameters_are_refused() {
        assert!(matches!(
            sign_content(&pairs(&[("a", "1"), ("a", "2")]), &[]),
            Err(AlipayError::DuplicateParameter(name)) if name == "a"
        ));
        assert!(matches!(
            sign_content(&pairs(&[("", "1")]), &[]),
            Err(AlipayError::EmptyParameterName)
        ));
        assert!(matches!(
            parse_form("a=1&b=2&a=3"),
            Err(AlipayError::DuplicateParameter(name)) if name == "a"
        ));
    }

    #[test]
    fn timestamps_are_beijing_time() {
        let at = OffsetDateTime::from_unix_timestamp(1_406_142_470).expect("valid");
        assert_eq!(format_timestamp(at), "2014-07-24 03:07:50");
        assert_eq!(parse_timestamp("2014-07-24 03:07:50").expect("parses"), at);
        for bad in [
            "2014-07-24T03:07:50",
            "2014-07-24 03:07",
            "",
            "2014-13-01 00:00:00",
        ] {
            assert!(parse_timestamp(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
