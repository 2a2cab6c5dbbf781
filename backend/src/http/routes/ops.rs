//! `/api/ops/*`: the operator console's API. The admin token is exchanged
//! once for an operator session (the shoppers' cookie, CSRF and sign-in rate
//! limits); every other route wants that session ([`Operator`]), and a
//! shopper's session is not one.

use crate::db::{self, review};
use crate::error::ApiError;
use crate::http::auth::session::{self, Operator};
use crate::http::extract::{AppJson, AppPath, AppQuery, ClientIp, OrderNoPath, plain_text};
use crate::http::openapi::ShopperErrors;
use crate::state::AppState;
use api_types::AnomalyKind;
use api_types::api::Reconciliation;
use api_types::ops::{
    Activity, AnomalyState, Books, OperatorInfo, OperatorSignIn, OrderTimeline, ResolveAnomaly,
    ReviewAnomaly, SearchHit,
};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use secrecy::ExposeSecret;
use subtle::ConstantTimeEq;
use tower_sessions::Session;

/// Longest operator name kept with a resolution.
pub const MAX_NAME_CHARS: usize = 64;
/// Longest resolution note.
pub const MAX_NOTE_CHARS: usize = 2000;
/// Longest search text.
pub const MAX_SEARCH_CHARS: usize = 200;

/// `POST /api/ops/session`: the admin token (compared in constant time) for an
/// operator session with a new id, empty but for the operator. The session
/// keeps a fingerprint of the token, never the token, and ends when
/// `ADMIN_TOKEN` changes or `OPS_SESSION_MAX_SECS` after sign-in
/// ([`crate::http::auth::operator::OperatorSessions`]). Wrong tokens count against the client's
/// address like a shopper's wrong passwords (429 once over the limit).
#[utoipa::path(post, path = "/ops/session", tag = "ops", request_body = OperatorSignIn,
    responses((status = 200, description = "Signed in; the session cookie is set", body = OperatorInfo),
        (status = 400, description = "BAD_REQUEST: the name is empty, too long or has control characters", body = api_types::ErrorBody),
        (status = 401, description = "INVALID_CREDENTIALS: not the admin token", body = api_types::ErrorBody),
        (status = 404, description = "NOT_FOUND: no ADMIN_TOKEN is configured, so there is no console", body = api_types::ErrorBody),
        (status = 429, description = "RATE_LIMITED: too many wrong tokens from this address", body = api_types::ErrorBody),
        ShopperErrors))]
pub async fn sign_in(
    State(state): State<AppState>,
    ClientIp(client): ClientIp,
    session: Session,
    AppJson(body): AppJson<OperatorSignIn>,
) -> Result<Json<OperatorInfo>, ApiError> {
    let (Some(expected), Some(fingerprint)) = (
        state.admin_token.as_deref(),
        state.operator_sessions.fingerprint(),
    ) else {
        return Err(ApiError::NotFound);
    };
    state.limits.signin_ip.check(&client)?;
    let name = plain_text(&body.name, "name", MAX_NAME_CHARS)?;
    let presented = body.admin_token.as_bytes();
    if !bool::from(presented.ct_eq(expected.expose_secret().as_bytes())) {
        tracing::warn!(%client, "operator sign-in failed");
        state.limits.signin_ip.record_failure(&client)?;
        return Err(ApiError::InvalidCredentials);
    }
    session::sign_in_operator(&session, name, fingerprint).await?;
    tracing::info!(operator = name, %client, "operator signed in");
    Ok(Json(OperatorInfo {
        operator: name.to_owned(),
    }))
}

/// `DELETE /api/ops/session` -> 204; the session is deleted on the server.
#[utoipa::path(delete, path = "/ops/session", tag = "ops", security(("session" = [])),
    responses((status = 204, description = "Signed out"), ShopperErrors))]
pub async fn sign_out(operator: Operator) -> Result<StatusCode, ApiError> {
    session::sign_out(&operator.session).await?;
    tracing::info!(operator = %operator.name, "operator signed out");
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /api/ops/me` -> who is signed in.
#[utoipa::path(get, path = "/ops/me", tag = "ops", security(("session" = [])),
    responses((status = 200, description = "The operator", body = OperatorInfo), ShopperErrors))]
pub async fn me(operator: Operator) -> Json<OperatorInfo> {
    Json(OperatorInfo {
        operator: operator.name,
    })
}

/// Filters of the anomalies queue.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AnomalyFilter {
    /// `open` (default), `resolved` or `all`.
    #[serde(default)]
    #[param(inline)]
    pub state: AnomalyState,
    /// Only this kind.
    #[param(inline)]
    pub kind: Option<AnomalyKind>,
    /// At most this many, 1 to 500 (default 100).
    pub limit: Option<i64>,
    /// Only anomalies of this merchant's orders.
    pub merchant_id: Option<uuid::Uuid>,
}

/// `GET /api/ops/anomalies` -> the queue, newest first.
#[utoipa::path(get, path = "/ops/anomalies", tag = "ops", security(("session" = [])),
    params(AnomalyFilter),
    responses((status = 200, description = "The anomalies", body = Vec<ReviewAnomaly>),
        (status = 400, description = "BAD_REQUEST: an unknown state or kind, or a limit out of range", body = api_types::ErrorBody),
        ShopperErrors))]
pub async fn list_anomalies(
    State(state): State<AppState>,
    _operator: Operator,
    AppQuery(filter): AppQuery<AnomalyFilter>,
) -> Result<Json<Vec<ReviewAnomaly>>, ApiError> {
    let limit = filter.limit.unwrap_or(100);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::BadRequest("limit must be 1 to 500".into()));
    }
    Ok(Json(
        review::anomalies(
            &state.db,
            filter.state,
            filter.kind,
            filter.merchant_id,
            limit,
        )
        .await?,
    ))
}

/// `GET /api/ops/anomalies/{anomaly_id}` -> one anomaly and its facts.
#[utoipa::path(get, path = "/ops/anomalies/{anomaly_id}", tag = "ops", security(("session" = [])),
    params(("anomaly_id" = i64, Path, description = "The anomaly's number")),
    responses((status = 200, description = "The anomaly", body = ReviewAnomaly),
        (status = 404, description = "NOT_FOUND", body = api_types::ErrorBody),
        ShopperErrors))]
pub async fn get_anomaly(
    State(state): State<AppState>,
    _operator: Operator,
    AppPath(anomaly_id): AppPath<String>,
) -> Result<Json<ReviewAnomaly>, ApiError> {
    let anomaly_id = anomaly_id.parse().map_err(|_| ApiError::NotFound)?;
    review::anomaly(&state.db, anomaly_id)
        .await?
        .map(Json)
        .ok_or(ApiError::NotFound)
}

/// `POST /api/ops/anomalies/{anomaly_id}/resolve` -> resolved, by the signed-in
/// operator, now, with the note. Once only: the resolution is never rewritten
/// (409), and no anomaly is ever deleted.
#[utoipa::path(post, path = "/ops/anomalies/{anomaly_id}/resolve", tag = "ops", security(("session" = [])),
    params(("anomaly_id" = i64, Path, description = "The anomaly's number")),
    request_body = ResolveAnomaly,
    responses((status = 200, description = "Resolved", body = ReviewAnomaly),
        (status = 400, description = "BAD_REQUEST: an empty or too long note", body = api_types::ErrorBody),
        (status = 404, description = "NOT_FOUND", body = api_types::ErrorBody),
        (status = 409, description = "ANOMALY_ALREADY_RESOLVED", body = api_types::ErrorBody),
        ShopperErrors))]
pub async fn resolve_anomaly(
    State(state): State<AppState>,
    operator: Operator,
    AppPath(anomaly_id): AppPath<String>,
    AppJson(body): AppJson<ResolveAnomaly>,
) -> Result<Json<ReviewAnomaly>, ApiError> {
    let anomaly_id: i64 = anomaly_id.parse().map_err(|_| ApiError::NotFound)?;
    let note = body.note.trim();
    if note.is_empty() || note.chars().count() > MAX_NOTE_CHARS || note.contains('\0') {
        return Err(ApiError::BadRequest(format!(
            "note must be 1 to {MAX_NOTE_CHARS} characters"
        )));
    }
    match review::resolve(&state.db, anomaly_id, &operator.name, note).await? {
        Some(resolved) => {
            tracing::info!(anomaly_id, operator = %operator.name, kind = resolved.kind.as_str(),
                order_no = %resolved.order_no, "anomaly resolved");
            Ok(Json(resolved))
        }
        None => match review::anomaly(&state.db, anomaly_id).await? {
            Some(_) => Err(ApiError::AnomalyAlreadyResolved),
            None => Err(ApiError::NotFound),
        },
    }
}

/// `GET /api/ops/orders/{order_no}/timeline` -> everything that happened to the order.
#[utoipa::path(get, path = "/ops/orders/{order_no}/timeline", tag = "ops", security(("session" = [])),
    params(("order_no" = String, Path, description = "The order number")),
    responses((status = 200, description = "The order and its events, oldest first", body = OrderTimeline),
        (status = 404, description = "ORDER_NOT_FOUND", body = api_types::ErrorBody),
        ShopperErrors))]
pub async fn timeline(
    State(state): State<AppState>,
    _operator: Operator,
    OrderNoPath(order_no): OrderNoPath,
) -> Result<Json<OrderTimeline>, ApiError> {
    let order = review::order(&state.db, order_no.as_str())
        .await?
        .ok_or(ApiError::OrderNotFound)?;
    let rows = review::timeline(&state.db, order_no.as_str()).await?;
    let events = review::events(rows).map_err(ApiError::internal)?;
    Ok(Json(OrderTimeline { order, events }))
}

/// What to search for.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchQuery {
    /// An order number, a callback id, our or the platform's payment id, or a
    /// shopper's email; may be left out when `merchant_id` is given.
    #[serde(default)]
    pub q: Option<String>,
    /// Only this merchant's orders (alone: its newest orders).
    pub merchant_id: Option<uuid::Uuid>,
}

/// `GET /api/ops/search?q=&merchant_id=` -> the orders `q` names (of that
/// merchant, when given; without `q`, the merchant's newest), newest first, at most 50.
#[utoipa::path(get, path = "/ops/search", tag = "ops", security(("session" = [])),
    params(SearchQuery),
    responses((status = 200, description = "The orders found", body = Vec<SearchHit>),
        (status = 400, description = "BAD_REQUEST: q empty (without merchant_id) or longer than 200 characters", body = api_types::ErrorBody),
        ShopperErrors))]
pub async fn search(
    State(state): State<AppState>,
    _operator: Operator,
    AppQuery(query): AppQuery<SearchQuery>,
) -> Result<Json<Vec<SearchHit>>, ApiError> {
    let q = query.q.as_deref().map(str::trim).filter(|q| !q.is_empty());
    let bad = match q {
        Some(q) => q.chars().count() > MAX_SEARCH_CHARS || q.contains('\0'),
        None => query.merchant_id.is_none(),
    };
    if bad {
        return Err(ApiError::BadRequest(format!(
            "q must be 1 to {MAX_SEARCH_CHARS} characters (it may be left out with merchant_id)"
        )));
    }
    let hits = review::search(&state.db, q, query.merchant_id)
        .await?
        .into_iter()
        .map(|(order, matched_by)| SearchHit { order, matched_by })
        .collect();
    Ok(Json(hits))
}

/// `GET /api/ops/activity` -> the last hour, minute by minute.
#[utoipa::path(get, path = "/ops/activity", tag = "ops", security(("session" = [])),
    responses((status = 200, description = "60 minutes, the current one last", body = Activity),
        ShopperErrors))]
pub async fn activity(
    State(state): State<AppState>,
    _operator: Operator,
) -> Result<Json<Activity>, ApiError> {
    let mut minutes = review::activity(&state.db).await?;
    for minute in &mut minutes {
        minute.replays = crate::infra::metrics::RECENT_REPLAYS.of_minute(minute.minute);
    }
    Ok(Json(Activity { minutes }))
}

/// `GET /api/ops/books` -> every ledger account's balance, read from its
/// entries (`ledger_balances`), the wallets summed per currency.
#[utoipa::path(get, path = "/ops/books", tag = "ops", security(("session" = [])),
    responses((status = 200, description = "The books' balances, by currency", body = Books),
        ShopperErrors))]
pub async fn books(
    State(state): State<AppState>,
    _operator: Operator,
) -> Result<Json<Books>, ApiError> {
    let accounts = db::books::balances(&state.db).await?;
    Ok(Json(Books { accounts }))
}

/// `GET /api/ops/merchants` -> every merchant with its keys' prefixes, dates
/// and last use, as `GET /api/admin/merchants` gives them: never a key.
#[utoipa::path(get, path = "/ops/merchants", tag = "ops", security(("session" = [])),
    responses((status = 200, description = "Every merchant, oldest first", body = Vec<api_types::merchant::Merchant>),
        ShopperErrors))]
pub async fn merchants(
    State(state): State<AppState>,
    _operator: Operator,
) -> Result<Json<Vec<api_types::merchant::Merchant>>, ApiError> {
    Ok(Json(db::merchants::list(&state.db).await?))
}

/// `GET /api/ops/reconciliations/{date}` -> the day's reconciliation, as
/// `GET /api/admin/reconciliations/{date}` gives it.
#[utoipa::path(get, path = "/ops/reconciliations/{date}", tag = "ops", security(("session" = [])),
    params(("date" = String, Path, description = "The bill's day, YYYY-MM-DD (UTC)")),
    responses((status = 200, description = "The day's reconciliation", body = Reconciliation),
        (status = 400, description = "BAD_REQUEST: not a date written YYYY-MM-DD", body = api_types::ErrorBody),
        ShopperErrors))]
pub async fn reconciliation(
    State(state): State<AppState>,
    _operator: Operator,
    AppPath(date): AppPath<String>,
) -> Result<Json<Reconciliation>, ApiError> {
    let date = checkout_rules::reconcile::parse_date(&date).map_err(ApiError::BadRequest)?;
    Ok(Json(db::reconciliation::view(&state.db, date).await?))
}
