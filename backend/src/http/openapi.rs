//! The OpenAPI 3.1 description of the HTTP API, generated from the code: every
//! route is registered through `utoipa_axum::routes!` together with its
//! `#[utoipa::path]` description ([`crate::http::routes::api`]), so a route cannot
//! exist undescribed. Served at `GET /api/openapi.json`; `scripts/test.sh`
//! runs `schemathesis` against it.

use api_types::ErrorBody;
use axum::body::Bytes;
use axum::http::header;
use axum::response::IntoResponse;
use std::collections::BTreeMap;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};
use utoipa::{IntoResponses, Modify, OpenApi, ToSchema};

/// The document's fixed parts: info, tags, security schemes, the error body.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Exactly-once checkout",
        description = "Orders, one-time request tokens, pay-now and payment callbacks: every order is charged once and only once. Errors are always `{\"error\":{\"code\",\"message\"}}` with a stable code.",
        license(name = "MIT")
    ),
    components(schemas(ErrorBody)),
    modifiers(&SecuritySchemes),
    tags(
        (name = "shopper", description = "A signed-in shopper (session cookie)"),
        (name = "merchant", description = "A merchant's server, by its own API key (Bearer, one per merchant: POST /api/admin/merchants); it sees only its own orders"),
        (name = "admin", description = "The operator (Bearer ADMIN_TOKEN)"),
        (name = "ops", description = "The operator console (an operator session: POST /api/ops/session with ADMIN_TOKEN)"),
        (name = "platform", description = "Payment platforms (signed callbacks)"),
        (name = "public", description = "No credentials")
    )
)]
pub struct ApiDoc;

/// Names of the security schemes, as handlers' `security(...)` use them.
pub const SESSION: &str = "session";
/// The admin bearer token.
pub const ADMIN: &str = "admin_token";
/// A merchant's own bearer key.
pub const MERCHANT: &str = "merchant_key";
/// The callback signature.
pub const SIGNATURE: &str = "webhook_signature";

struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            SESSION,
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                crate::http::auth::session::COOKIE_NAME,
                "The session cookie POST /api/session sets",
            ))),
        );
        for (name, what) in [
            (ADMIN, "Authorization: Bearer <ADMIN_TOKEN>"),
            (
                MERCHANT,
                "Authorization: Bearer <the merchant's own API key>: one merchant per key \
                 (mk_<8 characters>_<secret>, made by POST /api/admin/merchants, rotated by \
                 POST /api/admin/merchants/{merchant_id}/keys); every answer is about that \
                 merchant's orders only. MERCHANT_API_KEY, when set, is a key of the shop itself.",
            ),
        ] {
            components.add_security_scheme(
                name,
                SecurityScheme::Http(
                    HttpBuilder::new()
                        .scheme(HttpAuthScheme::Bearer)
                        .description(Some(what.to_owned()))
                        .build(),
                ),
            );
        }
        components.add_security_scheme(
            SIGNATURE,
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                callback_signing::HEADER_SIGNATURE,
                "Standard Webhooks signature (with webhook-id and webhook-timestamp) over the raw body",
            ))),
        );
    }
}

fn error(description: &str) -> RefOr<Response> {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name(ErrorBody::name())))
                .build(),
        )
        .build()
        .into()
}

fn errors(list: &[(&str, &str)]) -> BTreeMap<String, RefOr<Response>> {
    list.iter()
        .map(|(status, description)| ((*status).to_owned(), error(description)))
        .collect()
}

const BAD_REQUEST: (&str, &str) = ("400", "Malformed body, parameter or header");
const UNAUTHENTICATED: (&str, &str) = ("401", "UNAUTHENTICATED: no live session");
const CSRF: (&str, &str) = ("403", "CSRF_REJECTED: a cross-site request");
const NOT_FOUND: (&str, &str) = (
    "404",
    "Not found (another shopper's order is not found either)",
);
const TOO_LARGE: (&str, &str) = ("413", "PAYLOAD_TOO_LARGE: body over 64 KiB");
const MEDIA_TYPE: (&str, &str) = ("415", "UNSUPPORTED_MEDIA_TYPE: the body is not JSON");
const RATE_LIMITED: (&str, &str) = ("429", "RATE_LIMITED: retry after Retry-After seconds");
const INTERNAL: (&str, &str) = ("500", "INTERNAL: logged on our side");
const UNAVAILABLE: (&str, &str) = (
    "503",
    "A dependency is down; retry after Retry-After seconds",
);

/// Errors of a shopper's route.
pub struct ShopperErrors;

impl IntoResponses for ShopperErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[
            BAD_REQUEST,
            UNAUTHENTICATED,
            CSRF,
            NOT_FOUND,
            TOO_LARGE,
            MEDIA_TYPE,
            RATE_LIMITED,
            INTERNAL,
            UNAVAILABLE,
        ])
    }
}

/// Errors of a bearer-authenticated route (admin, merchant).
pub struct BearerErrors;

impl IntoResponses for BearerErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[
            BAD_REQUEST,
            ("401", "UNAUTHORIZED: missing or wrong bearer key"),
            (
                "404",
                "Not found, or this API is switched off (no ADMIN_TOKEN configured)",
            ),
            TOO_LARGE,
            RATE_LIMITED,
            INTERNAL,
            UNAVAILABLE,
        ])
    }
}

/// Errors of a route anybody may call.
pub struct PublicErrors;

impl IntoResponses for PublicErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[INTERNAL, UNAVAILABLE])
    }
}

/// `GET /api/openapi.json`: this document.
#[utoipa::path(get, path = "/openapi.json", tag = "public",
    responses((status = 200, description = "The OpenAPI 3.1 description of this API", content_type = "application/json")))]
pub async fn document(axum::Extension(doc): axum::Extension<Document>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], doc.0)
}

/// The document as served: serialised once at start, shared by every request.
#[derive(Debug, Clone)]
pub struct Document(Bytes);

impl Document {
    /// Serialises `doc` (plain data: maps, strings and numbers, nothing that can fail to serialise).
    pub fn new(doc: &utoipa::openapi::OpenApi) -> Self {
        Self(Bytes::from(serde_json::to_vec(doc).unwrap_or_default()))
    }
}
