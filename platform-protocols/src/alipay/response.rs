//! Gateway answers: the exact bytes of the response node, their signature, and the
//! answer text the simulator sends.
//!
//! An answer is `{"<node>":{...},"sign":"..."}` where `<node>` is the method's
//! [`Method::response_node`] or `error_response`. Alipay signs the node's text as it
//! stands in the answer. The node's span is found with `serde_json::value::RawValue`,
//! which keeps the exact text of a value (the JSON parser finds where it starts and
//! ends; nothing here scans JSON by hand), and the signature is verified over those
//! bytes.

use super::{AlipayError, ERROR_RESPONSE_NODE, Method};
use crate::keys::{PrivateKey, PublicKey};
use serde::de::{DeserializeOwned, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use std::fmt;

/// The top-level members of an answer, in order, each value's exact text kept.
/// Refuses a repeated member name (JSON allows it; which one was meant would not
/// be clear).
struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MembersVisitor;

        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = Members<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut members: Vec<(String, &'de RawValue)> = Vec::new();
                while let Some((name, value)) = map.next_entry::<String, &'de RawValue>()? {
                    if members.iter().any(|(seen, _)| *seen == name) {
                        return Err(serde::de::Error::custom(format!(
                            "member {name:?} appears twice"
                        )));
                    }
                    members.push((name, value));
                }
                Ok(Members(members))
            }
        }

        deserializer.deserialize_map(MembersVisitor)
    }
}

/// The response node of an answer, its exact text, and the answer's `sign`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseNode<'a> {
    /// The node's name: the method's node or `error_response`.
    pub name: &'static str,
    /// The node's JSON text exactly as in the answer: the bytes Alipay signed.
    pub json: &'a str,
    /// The answer's `sign`, if it had one.
    pub sign: Option<String>,
}

impl ResponseNode<'_> {
    /// Whether the node is `error_response` rather than the method's.
    pub fn is_error_response(&self) -> bool {
        self.name == ERROR_RESPONSE_NODE
    }

    /// Parses the node. Every answer type flattens [`super::CommonResponse`] and
    /// makes the rest optional, so an `error_response` node parses as any of them.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, AlipayError> {
        Ok(serde_json::from_str(self.json)?)
    }
}

/// Finds the node of `method`'s answer (or `error_response`) and `sign` in the raw
/// answer text, without verifying anything. Use [`verify_response`] for answers you
/// act on; this is for reading an unsigned gateway error, which proves only that the
/// call failed.
pub fn extract_response(body: &str, method: Method) -> Result<ResponseNode<'_>, AlipayError> {
    let Members(members) = serde_json::from_str(body)?;
    let find = |wanted: &str| {
        members
            .iter()
            .find(|(name, _)| name == wanted)
            .map(|(_, value)| *value)
    };
    let (name, raw) = match (find(method.response_node()), find(ERROR_RESPONSE_NODE)) {
        (Some(raw), _) => (method.response_node(), raw),
        (None, Some(raw)) => (ERROR_RESPONSE_NODE, raw),
        (None, None) => return Err(AlipayError::MissingResponseNode(method.response_node())),
    };
    if !raw.get().starts_with('{') {
        return Err(AlipayError::MissingResponseNode(method.response_node()));
    }
    let sign = match find("sign") {
        Some(raw_sign) => Some(serde_json::from_str::<String>(raw_sign.get())?),
        None => None,
    };
    Ok(ResponseNode {
        name,
        json: raw.get(),
        sign,
    })
}

/// Verifies an answer (the merchant's side): finds the node of `method` (or
/// `error_response`) and checks `sign` with the Alipay public key over the node's
/// exact bytes. Returns the node for parsing. An answer without `sign` is refused
/// with [`AlipayError::MissingSign`].
pub fn verify_response<'a>(
    body: &'a str,
    method: Method,
    alipay_public_key: &PublicKey,
) -> Result<ResponseNode<'a>, AlipayError> {
    let node = extract_response(body, method)?;
    let sign = node.sign.as_deref().ok_or(AlipayError::MissingSign)?;
    alipay_public_key
        .verify_rsa_sha256_base64(node.json.as_bytes(), sign)
        .map_err(|_| AlipayError::BadSignature)?;
    Ok(node)
}

/// Builds a signed answer (the simulator's side): `{"<node_name>":<node_json>,"sign":"..."}`
/// with `sign` over `node_json` exactly as it is placed in the answer.
/// `node_json` must be a JSON object; surrounding whitespace is dropped first (a
/// verifier's parser would not include it in the value's span).
pub fn sign_response(
    node_name: &str,
    node_json: &str,
    alipay_private_key: &PrivateKey,
) -> Result<String, AlipayError> {
    let node_json = node_json.trim_matches([' ', '\t', '\n', '\r']);
    let raw: &RawValue = serde_json::from_str(node_json)?;
    if !raw.get().starts_with('{') {
        return Err(AlipayError::Json(serde::de::Error::custom(
            "the response node must be a JSON object",
        )));
    }
    let sign = alipay_private_key.sign_rsa_sha256_base64(node_json.as_bytes());
    let name = serde_json::to_string(node_name)?;
    let sign = serde_json::to_string(&sign)?;
    Ok(format!("{{{name}:{node_json},\"sign\":{sign}}}"))
}

/// Serializes `response` as `method`'s node and signs it with [`sign_response`].
pub fn sign_method_response<T: Serialize>(
    method: Method,
    response: &T,
    alipay_private_key: &PrivateKey,
) -> Result<String, AlipayError> {
    sign_response(
        method.response_node(),
        &serde_json::to_string(response)?,
        alipay_private_key,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extracts_the_node_text_byte_for_byte() {
        let node = "{ \"code\" : \"10000\",\"msg\":\"Success\", \"qr_code\":\"https:\\/\\/qr.alipay.com\\/bax03431\",\"b\":1,\"a\":2 }";
        let body = format!(
            "{{\"alipay_trade_precreate_response\":  {node} ,\n\"sign\":\"c2lnbmF0dXJl\"}}"
        );
        let found = extract_response(&body, Method::TradePrecreate).expect("has the node");
        assert_eq!(found.json, node);
        assert_eq!(found.name, "alipay_trade_precreate_response");
        assert_eq!(found.sign.as_deref(), Some("c2lnbmF0dXJl"));
        assert!(!found.is_error_response());
    }

    #[test]
    fn falls_back_to_error_response() {
        let body = r#"{"error_response":{"code":"40002","msg":"Invalid Arguments","sub_code":"isv.invalid-app-id","sub_msg":"无效的AppID参数"}}"#;
        let found = extract_response(body, Method::TradeQuery).expect("has error_response");
        assert!(found.is_error_response());
        assert_eq!(found.sign, None);
        let common: super::super::CommonResponse = found.parse().expect("common fields");
        assert_eq!(common.sub_code.as_deref(), Some("isv.invalid-app-id"));
    }

    #[test]
    fn refuses_answers_without_the_node_or_with_a_repeated_member() {
        assert!(matches!(
            extract_response(
                r#"{"alipay_trade_query_response":{},"sign":"x"}"#,
                Method::TradeClose
            ),
            Err(AlipayError::MissingResponseNode(
                "alipay_trade_close_response"
            ))
        ));
        assert!(
            extract_response(
                r#"{"alipay_trade_query_response":{"code":"10000"},"alipay_trade_query_response":{"code":"40004"},"sign":"x"}"#,
                Method::TradeQuery
            )
            .is_err()
        );
        assert!(
            extract_response(
                r#"{"alipay_trade_query_response":"text","sign":"x"}"#,
                Method::TradeQuery
            )
            .is_err()
        );
        assert!(extract_response("not json", Method::TradeQuery).is_err());
    }
}
