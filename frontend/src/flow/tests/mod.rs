//! The pay flow as scenarios a shopper goes through: `rules.rs` checks what
//! the reducer does next, `view.rs` what the page then shows. Both use the
//! flow through `crate::flow`, as the page does; the fixtures below are the
//! answers the backend would give.

mod rules;
mod view;

use crate::api::ApiError;
use crate::api::RefundSummary;
use crate::flow::{Effect, Event, PayFlow};
use api_types::api::{Order, PayAccepted, PlatformInfo, RequestToken};
use api_types::{
    Currency, ErrorBody, ErrorCode, OrderStatus, PaymentMethod, RefundRequester, RefundStatus,
};
use time::macros::datetime;
use uuid::Uuid;

fn eur() -> Currency {
    "EUR".parse().expect("valid currency")
}

fn order(status: OrderStatus) -> Order {
    Order {
        order_no: "ORD1".into(),
        account_id: Uuid::nil(),
        amount_cents: 1_250,
        currency: eur(),
        status,
        created_at: datetime!(2025-01-31 14:00:00 UTC),
        paid_at: matches!(status, OrderStatus::Paid | OrderStatus::Refunded)
            .then_some(datetime!(2025-01-31 14:05:09.123 UTC)),
        expires_at: datetime!(2025-01-31 14:30:00 UTC),
        failure_reason: (status == OrderStatus::Failed).then(|| "card declined".into()),
        description: Some("Coffee beans, 1 kg".into()),
        pay_url: "http://127.0.0.1:3000/pay/ORD1".into(),
        payment_status: None,
        payment_method: None,
        refunded_cents: if status == OrderStatus::Refunded {
            1_250
        } else {
            0
        },
        merchant_name: None,
        return_url: None,
        cancel_url: None,
    }
}

/// A refund of ORD1's, in EUR, as the page reads it.
fn refund(amount_cents: i64, status: RefundStatus, requested_by: RefundRequester) -> RefundSummary {
    RefundSummary {
        amount_cents,
        currency: eur(),
        status,
        requested_by,
    }
}

fn token(n: u128) -> RequestToken {
    RequestToken {
        request_token: Uuid::from_u128(n),
        expires_at: datetime!(2025-01-31 14:15:00 UTC),
    }
}

fn accepted() -> PayAccepted {
    PayAccepted {
        order_no: "ORD1".into(),
        payment_id: Uuid::from_u128(99),
        status: OrderStatus::Pending,
        method: PaymentMethod::Wallet,
    }
}

/// `GET /api/platform` of a backend on `platform` offering `methods`.
fn platform(platform: &str, methods: &[PaymentMethod]) -> PlatformInfo {
    PlatformInfo {
        platform: platform.into(),
        sandbox: platform == "sandbox",
        pays_by_qr_code: matches!(platform, "wechatpay" | "alipay"),
        methods: methods.to_vec(),
        demo_shoppers: Vec::new(),
    }
}

/// The sandbox's answer: the wallet (its default) or its simulated platform.
fn sandbox() -> PlatformInfo {
    platform("sandbox", &[PaymentMethod::Wallet, PaymentMethod::Platform])
}

fn server_error(status: u16, code: ErrorCode) -> ApiError {
    ApiError::Server {
        status,
        body: ErrorBody::new(code, "x"),
        retry_after_secs: None,
    }
}

fn network() -> ApiError {
    ApiError::Network("connection refused".into())
}

/// A page that loaded a pending order and holds token 1.
fn ready() -> PayFlow {
    let mut flow = PayFlow::new();
    assert_eq!(
        flow.apply(Event::OrderFetched(order(OrderStatus::Pending))),
        vec![Effect::IssueToken]
    );
    assert!(flow.apply(Event::TokenIssued(token(1))).is_empty());
    flow
}
