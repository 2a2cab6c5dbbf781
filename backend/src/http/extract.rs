//! Extractors that answer malformed input with our error body instead of axum's plain text.

use crate::error::ApiError;
use axum::extract::path::ErrorKind;
use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::extract::{FromRequest, FromRequestParts, Path, RawPathParams, Request};
use axum::http::request::Parts;
use checkout_rules::order_no::OrderNo;
use serde::de::DeserializeOwned;

/// Largest request body any endpoint reads (callbacks are held to this too).
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// A line of text a person gave (a name, a description): trimmed, 1 to `max`
/// characters, none of them control characters; else `400 BAD_REQUEST`
/// saying so of `field`.
pub fn plain_text<'a>(text: &'a str, field: &str, max: usize) -> Result<&'a str, ApiError> {
    let text = text.trim();
    let chars = text.chars().count();
    if chars == 0 || chars > max || text.chars().any(char::is_control) {
        return Err(ApiError::BadRequest(format!(
            "{field} must be 1 to {max} characters without control characters"
        )));
    }
    Ok(text)
}

/// `Json<T>` whose rejection is a 400 (or 413) in the shared error shape.
#[derive(Debug, Clone, Copy, Default)]
pub struct AppJson<T>(pub T);

impl<S, T> FromRequest<S> for AppJson<T>
where
    axum::Json<T>: FromRequest<S, Rejection = JsonRejection>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(value)) => Ok(Self(value)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
}

fn json_rejection(rejection: JsonRejection) -> ApiError {
    match rejection {
        JsonRejection::BytesRejection(bytes)
            if bytes.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE =>
        {
            ApiError::PayloadTooLarge(MAX_BODY_BYTES)
        }
        other => ApiError::BadRequest(other.body_text()),
    }
}

/// `Path<T>` whose rejection (e.g. a segment that is not UTF-8 once
/// percent-decoded) is a 400 in the shared error shape.
///
/// A segment holding a control character once percent-decoded (`%00`, which
/// PostgreSQL text cannot hold, `%0A`, ...) is refused here too, whatever `T`
/// is: no path parameter names anything with one, and none reaches a query.
#[derive(Debug, Clone, Copy, Default)]
pub struct AppPath<T>(pub T);

impl<S, T> FromRequestParts<S> for AppPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        if let Ok(raw) = RawPathParams::from_request_parts(parts, state).await
            && raw
                .iter()
                .any(|(_, value)| value.chars().any(char::is_control))
        {
            return Err(ApiError::BadRequest(
                "a path parameter must not contain control characters".into(),
            ));
        }
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(Self(value)),
            Err(PathRejection::FailedToDeserializePathParams(failed))
                if !matches!(failed.kind(), ErrorKind::WrongNumberOfParameters { .. }) =>
            {
                Err(ApiError::BadRequest(failed.body_text()))
            }
            // The route and the handler disagree: our bug, not the caller's.
            Err(other) => Err(ApiError::internal(other)),
        }
    }
}

/// `Query<T>` whose rejection (an unknown value, a number that is not one) is a
/// 400 in the shared error shape.
#[derive(Debug, Clone, Copy, Default)]
pub struct AppQuery<T>(pub T);

impl<S, T> FromRequestParts<S> for AppQuery<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Query(value)| Self(value))
            .map_err(|rejection| ApiError::BadRequest(rejection.body_text()))
    }
}

/// The `{order_no}` of the route as an [`OrderNo`], parsed before any database
/// or Redis call. Anything that is not a well-formed order number, down to a
/// segment that is not UTF-8, is `404 ORDER_NOT_FOUND`, the answer an unknown
/// order gets. (A wrapper because `OrderNo` lives in checkout-rules, which
/// knows nothing of axum.)
#[derive(Debug, Clone)]
pub struct OrderNoPath(pub OrderNo);

impl<S> FromRequestParts<S> for OrderNoPath
where
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match AppPath::<String>::from_request_parts(parts, state).await {
            Ok(AppPath(text)) => OrderNo::parse(&text)
                .map(Self)
                .ok_or(ApiError::OrderNotFound),
            Err(ApiError::BadRequest(_)) => Err(ApiError::OrderNotFound),
            Err(other) => Err(other),
        }
    }
}

/// The client's IP address: the peer of the TCP connection (`ConnectInfo`),
/// or, when that peer is a trusted proxy ([`TrustedProxies`]), the address it
/// put in `X-Forwarded-For`; the unspecified address when the server was
/// started without `ConnectInfo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientIp(pub std::net::IpAddr);

impl<S: Send + Sync> FromRequestParts<S> for ClientIp {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let peer = parts
            .extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map_or(std::net::IpAddr::from([0, 0, 0, 0]), |info| info.0.ip());
        let client = match parts.extensions.get::<TrustedProxies>() {
            Some(trusted) => trusted.client(peer, &parts.headers),
            None => peer,
        };
        Ok(Self(client))
    }
}

/// The load balancers whose `X-Forwarded-For` is believed (`TRUSTED_PROXIES`),
/// an extension on every request.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies(std::sync::Arc<[std::net::IpAddr]>);

impl TrustedProxies {
    /// These addresses (IPv4-mapped IPv6 ones taken as IPv4).
    pub fn new(addresses: &[std::net::IpAddr]) -> Self {
        Self(addresses.iter().map(|ip| ip.to_canonical()).collect())
    }

    /// Whether `ip` is one of them.
    pub fn trusts(&self, ip: std::net::IpAddr) -> bool {
        self.0.contains(&ip.to_canonical())
    }

    /// The client of a request `peer` sent with these headers: `peer` itself
    /// unless it is trusted; else the right-most `X-Forwarded-For` entry that
    /// is not a trusted proxy (each proxy appends the address it saw; what is
    /// left of that was written by the client and proves nothing). A header
    /// that is missing, or garbled where it matters, leaves the proxy's address.
    pub fn client(
        &self,
        peer: std::net::IpAddr,
        headers: &axum::http::HeaderMap,
    ) -> std::net::IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        let mut hops: Vec<&str> = Vec::new();
        for value in headers.get_all("x-forwarded-for") {
            let Ok(text) = value.to_str() else {
                return peer;
            };
            hops.extend(text.split(',').map(str::trim));
        }
        for hop in hops.into_iter().rev() {
            match hop.parse::<std::net::IpAddr>() {
                Ok(ip) if self.trusts(ip) => {}
                Ok(ip) => return ip.to_canonical(),
                Err(_) => return peer,
            }
        }
        peer
    }
}

#[cfg(test)]
mod tests {
    use super::TrustedProxies;
    use axum::http::{HeaderMap, HeaderValue};
    use std::net::IpAddr;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an IP address")
    }

    fn forwarded(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(
                "x-forwarded-for",
                HeaderValue::from_str(value).expect("a header value"),
            );
        }
        headers
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_forwards() {
        let trusted = TrustedProxies::new(&[ip("10.0.0.1")]);
        let spoofed = forwarded(&["203.0.113.9"]);
        assert_eq!(
            trusted.client(ip("198.51.100.4"), &spoofed),
            ip("198.51.100.4")
        );
        assert_eq!(
            TrustedProxies::default().client(ip("127.0.0.1"), &spoofed),
            ip("127.0.0.1")
        );
    }

    #[test]
    fn behind_a_trusted_proxy_the_client_is_the_right_most_untrusted_hop() {
        let trusted = TrustedProxies::new(&[ip("127.0.0.1"), ip("10.0.0.2")]);
        let proxy = ip("127.0.0.1");
        assert_eq!(
            trusted.client(proxy, &forwarded(&["203.0.113.7"])),
            ip("203.0.113.7")
        );
        // The client wrote the left part itself: it proves nothing.
        assert_eq!(
            trusted.client(proxy, &forwarded(&["198.51.100.1, 203.0.113.7"])),
            ip("203.0.113.7")
        );
        assert_eq!(
            trusted.client(proxy, &forwarded(&["198.51.100.1", "203.0.113.7"])),
            ip("203.0.113.7")
        );
        // Two proxies in a row: skip the inner one.
        assert_eq!(
            trusted.client(proxy, &forwarded(&["203.0.113.7, 10.0.0.2"])),
            ip("203.0.113.7")
        );
        assert_eq!(
            trusted.client(ip("::ffff:127.0.0.1"), &forwarded(&["::ffff:203.0.113.7"])),
            ip("203.0.113.7")
        );
    }

    #[test]
    fn a_missing_or_garbled_header_leaves_the_proxy_as_the_client() {
        let trusted = TrustedProxies::new(&[ip("127.0.0.1")]);
        let proxy = ip("127.0.0.1");
        assert_eq!(trusted.client(proxy, &HeaderMap::new()), proxy);
        assert_eq!(
            trusted.client(proxy, &forwarded(&["not-an-address"])),
            proxy
        );
        assert_eq!(
            trusted.client(proxy, &forwarded(&["203.0.113.7, junk"])),
            proxy
        );
    }
}
