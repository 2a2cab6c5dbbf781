//! The simulator's HTTP API: create, query and close payments, create and
//! query refunds, change the chaos knobs. (The crate docs list every route
//! and its answers.)
//!
//! `POST /v1/payments` and `POST /v1/refunds` are idempotent by the
//! `Idempotency-Key` header, like the platforms it imitates: the same key and
//! body replay the payment or refund (200 with `Idempotent-Replayed: true`),
//! the same key with another body is refused (422). Every handler is thin: it
//! calls the [`Simulator`] method of the same name, so in-process callers get
//! the same counting, latency and answers.

use crate::Simulator;
use crate::chaos::Chaos;
use crate::error::SimError;
use crate::payment::{CreatePayment, Payment};
use crate::refund::{CreateRefund, Refund};
use axum::extract::{FromRequest, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;

/// The request header that makes `POST /v1/payments` and `POST /v1/refunds` idempotent.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
/// The answer header that marks a replayed payment or refund.
pub const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";

/// Every route of the simulator.
pub(crate) fn router(simulator: Simulator) -> Router {
    let wechatpay = if simulator.config().wechatpay.is_some() {
        crate::wechatpay::routes()
    } else {
        Router::new()
    };
    let alipay = if simulator.config().alipay.is_some() {
        crate::alipay::routes()
    } else {
        Router::new()
    };
    Router::new()
        .merge(wechatpay)
        .merge(alipay)
        .route("/healthz", get(healthz))
        .route("/v1/payments", post(create_payment))
        .route("/v1/payments/{payment_id}", get(get_payment))
        .route("/v1/payments/{payment_id}/close", post(close_payment))
        .route(
            "/v1/payments/by-reference/{merchant_reference}",
            get(get_payment_by_reference),
        )
        .route(
            "/v1/payments/by-reference/{merchant_reference}/close",
            post(close_payment_by_reference),
        )
        .route("/v1/refunds", post(create_refund))
        .route("/v1/refunds/{refund_id}", get(get_refund))
        .route(
            "/v1/refunds/by-reference/{refund_no}",
            get(get_refund_by_reference),
        )
        .route("/v1/bills/{date}", get(get_bill))
        .route("/v1/chaos", get(get_chaos).post(set_chaos))
        .fallback(|| async { SimError::NoRoute })
        .with_state(simulator.clone())
        .layer(axum::middleware::from_fn_with_state(
            simulator,
            crate::requests::record,
        ))
}

/// `Json`, but a body that does not parse answers with our error shape.
#[derive(FromRequest)]
#[from_request(via(axum::Json), rejection(SimError))]
struct AppJson<T>(T);

async fn healthz() -> &'static str {
    "ok"
}

/// The `Idempotency-Key` header, which every create requires.
fn idempotency_key(headers: &HeaderMap) -> Result<&str, SimError> {
    headers
        .get(IDEMPOTENCY_KEY)
        .ok_or_else(|| SimError::BadRequest("the Idempotency-Key header is required".into()))?
        .to_str()
        .map_err(|_| SimError::BadRequest("Idempotency-Key must be visible ASCII".into()))
}

/// The answer to a create: 201 for a new one, 200 marked replayed for a
/// replay; or, under chaos `lose_create_answer`, a 503 for a new one that
/// was accepted all the same (`id` names it in the log).
fn created_answer(
    simulator: &Simulator,
    replayed: bool,
    id: &str,
    body: &impl Serialize,
) -> Result<Response, SimError> {
    if !replayed && simulator.chaos().lose_create_answer {
        tracing::info!(id, "chaos: accepted, answering 503");
        return Err(SimError::AnswerLost);
    }
    Ok(if replayed {
        (StatusCode::OK, [(IDEMPOTENT_REPLAYED, "true")], Json(body)).into_response()
    } else {
        (StatusCode::CREATED, Json(body)).into_response()
    })
}

async fn create_payment(
    State(simulator): State<Simulator>,
    headers: HeaderMap,
    AppJson(request): AppJson<CreatePayment>,
) -> Result<Response, SimError> {
    let key = idempotency_key(&headers)?;
    let (payment, replayed) = simulator.create_payment(key, request).await?;
    created_answer(
        &simulator,
        replayed,
        &payment.payment_id,
        &payment.created(),
    )
}

async fn create_refund(
    State(simulator): State<Simulator>,
    headers: HeaderMap,
    AppJson(request): AppJson<CreateRefund>,
) -> Result<Response, SimError> {
    let key = idempotency_key(&headers)?;
    let (refund, replayed) = simulator.create_refund(key, request).await?;
    created_answer(&simulator, replayed, &refund.state.refund_id, &refund.state)
}

async fn get_refund(
    State(simulator): State<Simulator>,
    Path(refund_id): Path<String>,
) -> Result<Json<Refund>, SimError> {
    simulator.refund_by_id(&refund_id).await.map(Json)
}

async fn get_refund_by_reference(
    State(simulator): State<Simulator>,
    Path(refund_no): Path<String>,
) -> Result<Json<Refund>, SimError> {
    simulator.refund_by_reference(&refund_no).await.map(Json)
}

async fn get_payment(
    State(simulator): State<Simulator>,
    Path(payment_id): Path<String>,
) -> Result<Json<Payment>, SimError> {
    simulator.query_by_id(&payment_id).await.map(Json)
}

async fn get_payment_by_reference(
    State(simulator): State<Simulator>,
    Path(reference): Path<String>,
) -> Result<Json<Payment>, SimError> {
    simulator.query_by_reference(&reference).await.map(Json)
}

async fn close_payment(
    State(simulator): State<Simulator>,
    Path(payment_id): Path<String>,
) -> Result<Json<Payment>, SimError> {
    simulator.close_by_id(&payment_id).await.map(Json)
}

async fn close_payment_by_reference(
    State(simulator): State<Simulator>,
    Path(reference): Path<String>,
) -> Result<Json<Payment>, SimError> {
    simulator.close_by_reference(&reference).await.map(Json)
}

/// `GET /v1/bills/{date}`: the day's bill as CSV ([`crate::bill`]).
async fn get_bill(
    State(simulator): State<Simulator>,
    Path(date): Path<String>,
) -> Result<Response, SimError> {
    let date = crate::bill::parse_date(&date)?;
    Ok((
        [(axum::http::header::CONTENT_TYPE, "text/csv; charset=utf-8")],
        simulator.daily_bill(date),
    )
        .into_response())
}

async fn get_chaos(State(simulator): State<Simulator>) -> Json<Chaos> {
    Json(simulator.chaos())
}

/// Replaces every knob (absent fields take their defaults); later payments and refunds use the new ones.
async fn set_chaos(
    State(simulator): State<Simulator>,
    AppJson(chaos): AppJson<Chaos>,
) -> Json<Chaos> {
    simulator.set_chaos(chaos.clone());
    Json(chaos)
}
