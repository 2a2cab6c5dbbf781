//! Extractors that answer malformed input with our error body instead of axum's plain text.

use crate::error::ApiError;
use crate::order_no::OrderNo;
use axum::extract::path::ErrorKind;
use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

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
            ApiError::PayloadTooLarge(crate::startup::MAX_BODY_BYTES)
        }
        other => ApiError::BadRequest(other.body_text()),
    }
}

/// `Path<T>` whose rejection (e.g. a segment that is not UTF-8 once
/// percent-decoded) is a 400 in the shared error shape.
#[derive(Debug, Clone, Copy, Default)]
pub struct AppPath<T>(pub T);

impl<S, T> FromRequestParts<S> for AppPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
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

/// The `{order_no}` of the route, parsed before any database or Redis call.
/// Anything that is not a well-formed order number, down to a segment that is
/// not UTF-8, is `404 ORDER_NOT_FOUND`, the answer an unknown order gets.
impl<S> FromRequestParts<S> for OrderNo
where
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match AppPath::<String>::from_request_parts(parts, state).await {
            Ok(AppPath(text)) => OrderNo::parse(&text).ok_or(ApiError::OrderNotFound),
            Err(ApiError::BadRequest(_)) => Err(ApiError::OrderNotFound),
            Err(other) => Err(other),
        }
    }
}

/// The client's IP address: the peer of the TCP connection (`ConnectInfo`),
/// or the unspecified address when the server was started without it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientIp(pub std::net::IpAddr);

impl<S: Send + Sync> FromRequestParts<S> for ClientIp {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let ip = parts
            .extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map_or(std::net::IpAddr::from([0, 0, 0, 0]), |info| info.0.ip());
        Ok(Self(ip))
    }
}
