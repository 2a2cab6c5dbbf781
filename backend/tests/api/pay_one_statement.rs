//! Pay's one statement (`sql/pay/start_attempt.sql`) against pay's general
//! transaction.
//!
//! Every case (order status × expiry × what the token says of amount and
//! currency × an attempt already there × funds × the token used before on
//! another order × the payment method) is set up three times, on three twin orders with accounts
//! of their own, and fed:
//! - to pay as the handler runs it (`pay::start_attempt`: the one statement
//!   first, the general transaction for what it leaves alone);
//! - to the general transaction alone (`pay::start_attempt_in_tx`, where every
//!   check is a step of its own);
//! - to the one statement alone (`attempts::start_in_one`).
//!
//! The first two must answer the same and leave the same rows (order, account,
//! attempts). The third must start the attempt (and, for the wallet, hold the
//! amount) exactly where the general transaction makes a new attempt, writing what it writes,
//! and write nothing at all in every other case.

use crate::helpers::{equivalence, seeds};
use api_types::{Currency, OrderStatus, PaymentMethod};
use backend::db::attempts::{self, NewAttempt};
use backend::db::warm::WarmConnections;
use backend::infra::tokens::TokenBinding;
use backend::pay::{self, Started};
use sqlx::PgPool;
use uuid::Uuid;

const AMOUNT: i64 = 300;

/// What the token was issued for, next to the order as it is now.
#[derive(Debug, Clone, Copy)]
enum Binding {
    Same,
    OtherAmount,
    OtherCurrency,
}

#[derive(Debug, Clone, Copy)]
enum Funds {
    /// Balance enough, nothing held.
    Enough,
    /// Balance enough, but most of it held for another payment.
    HeldElsewhere,
    /// Less than the amount.
    Short,
}

#[derive(Debug, Clone, Copy)]
struct Case {
    status: OrderStatus,
    expired: bool,
    binding: Binding,
    /// The order has an attempt already (a concurrent submit's, with another token).
    has_attempt: bool,
    funds: Funds,
    /// The token already made an attempt for another order.
    token_used: bool,
    /// What pays: the wallet (held at pay) or the platform (nothing held).
    method: PaymentMethod,
}

fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    for status in OrderStatus::ALL {
        for expired in [false, true] {
            for binding in [Binding::Same, Binding::OtherAmount, Binding::OtherCurrency] {
                for has_attempt in [false, true] {
                    for funds in [Funds::Enough, Funds::HeldElsewhere, Funds::Short] {
                        for token_used in [false, true] {
                            for &method in PaymentMethod::ALL {
                                all.push(Case {
                                    status,
                                    expired,
                                    binding,
                                    has_attempt,
                                    funds,
                                    token_used,
                                    method,
                                });
                            }
                        }
                    }
                }
            }
        }
    }
    all
}

/// Inserts an order of `status` with an account of its own holding `funds`.
async fn order(db: &PgPool, order_no: &str, status: OrderStatus, expired: bool, funds: Funds) {
    let (balance, held) = match funds {
        Funds::Enough => (1_000, 0),
        Funds::HeldElsewhere => (1_000, 800),
        Funds::Short => (AMOUNT - 1, 0),
    };
    let account_id = seeds::account(db, "EUR", balance, held).await;
    sqlx::query(
        "INSERT INTO orders (order_no, account_id, amount_cents, currency, status, expires_at, paid_at,
                             failure_reason, refund_reserved_cents, refunded_cents)
         VALUES ($1, $2, $3, 'EUR', $4,
                 now() + CASE WHEN $5 THEN interval '-1 minute' ELSE interval '1 hour' END,
                 CASE WHEN $4 IN ('PAID', 'REFUNDED') THEN now() END,
                 CASE WHEN $4 = 'FAILED' THEN 'PAYMENT_FAILED' END,
                 CASE WHEN $4 = 'REFUNDED' THEN $3 ELSE 0 END,
                 CASE WHEN $4 = 'REFUNDED' THEN $3 ELSE 0 END)",
    )
    .bind(order_no)
    .bind(account_id)
    .bind(AMOUNT)
    .bind(status.as_str())
    .bind(expired)
    .execute(db)
    .await
    .expect("order");
}

/// An attempt of `order_no` made with `token`, in the state its order's status implies.
async fn attempt(db: &PgPool, order_no: &str, token: Uuid, status: OrderStatus) {
    let attempt_status = match status {
        OrderStatus::Pending => "SUBMITTED",
        OrderStatus::Paid | OrderStatus::Refunded => "SUCCEEDED",
        OrderStatus::Failed => "FAILED",
        OrderStatus::Closed => "CLOSED",
    };
    sqlx::query(
        "INSERT INTO payment_attempts (payment_id, request_token, order_no, amount_cents, currency, method,
                                       response_status, response_body, status, submitted_at)
         VALUES ($1, $2, $3, $4, 'EUR', 'wallet', 202, '{}', $5, now())",
    )
    .bind(Uuid::new_v4())
    .bind(token)
    .bind(order_no)
    .bind(AMOUNT)
    .bind(attempt_status)
    .execute(db)
    .await
    .expect("attempt");
}

/// One twin in the case's state; returns its order number and token.
async fn set_up(db: &PgPool, case: &Case, twin: &str, n: usize) -> (String, Uuid) {
    let order_no = format!("peq_{n}_{twin}");
    let token = Uuid::new_v4();
    order(db, &order_no, case.status, case.expired, case.funds).await;
    if case.has_attempt {
        attempt(db, &order_no, Uuid::new_v4(), case.status).await;
    }
    if case.token_used {
        let elsewhere = format!("{order_no}_elsewhere");
        order(db, &elsewhere, OrderStatus::Closed, false, Funds::Enough).await;
        attempt(db, &elsewhere, token, OrderStatus::Closed).await;
    }
    (order_no, token)
}

fn binding(case: &Case, order_no: &str) -> TokenBinding {
    let (amount_cents, currency) = match case.binding {
        Binding::Same => (AMOUNT, Currency::EUR),
        Binding::OtherAmount => (AMOUNT + 1, Currency::EUR),
        Binding::OtherCurrency => (AMOUNT, Currency::CNY),
    };
    TokenBinding {
        order_no: order_no.to_owned(),
        shopper_id: Uuid::new_v4(),
        amount_cents,
        currency,
    }
}

/// Everything a pay can write about one order, its account and its token, as text.
async fn rows(db: &PgPool, order_no: &str, token: Uuid) -> Vec<String> {
    let rows: Vec<(String,)> = sqlx::query_as(
        "SELECT 'order ' || status FROM orders WHERE order_no = $1
         UNION ALL SELECT 'account ' || a.balance_cents || ' held ' || a.held_cents
           FROM accounts a JOIN orders o ON o.account_id = a.account_id WHERE o.order_no = $1
         UNION ALL SELECT 'attempt ' || status || ' ' || amount_cents || ' ' || currency || ' '
                          || method || ' ' || response_status || ' ours ' || (request_token = $2)
           FROM payment_attempts WHERE order_no = $1
         UNION ALL SELECT 'token attempts ' || count(*) FROM payment_attempts WHERE request_token = $2
         UNION ALL SELECT 'transfer ' || t.kind || ' ' || d.kind || ' -> ' || c.kind || ' ' || t.amount_cents
                          || ' ' || t.currency || ' of our attempt ' || (t.transfer_id = 'hold:' || p.payment_id)
           FROM transfers t JOIN ledger_accounts d ON d.ledger_account_id = t.debit_account_id
                JOIN ledger_accounts c ON c.ledger_account_id = t.credit_account_id
                LEFT JOIN payment_attempts p ON p.order_no = t.order_no
           WHERE t.order_no = $1
         ORDER BY 1",
    )
    .bind(order_no)
    .bind(token)
    .fetch_all(db)
    .await
    .expect("rows");
    rows.into_iter().map(|(row,)| row).collect()
}

fn answer(result: Result<Started, backend::error::ApiError>) -> String {
    match result {
        Ok(Started::New(attempt)) => {
            format!(
                "new {} {} {}",
                attempt.amount_cents,
                attempt.currency.as_str(),
                attempt.method
            )
        }
        Ok(Started::Joined(_)) => "joined".to_owned(),
        Err(err) => format!("{:?}", err.status_and_code()),
    }
}

async fn run_case(
    db: &PgPool,
    warm: &WarmConnections,
    n: usize,
    case: Case,
) -> Result<bool, String> {
    let (order_a, token_a) = set_up(db, &case, "a", n).await;
    let (order_b, token_b) = set_up(db, &case, "b", n).await;
    let (order_c, token_c) = set_up(db, &case, "c", n).await;
    let body = serde_json::json!({"payment": "answer"});

    let handler =
        answer(pay::start_attempt(db, warm, token_a, &binding(&case, &order_a), case.method).await);
    let binding_b = binding(&case, &order_b);
    let new_b = NewAttempt {
        payment_id: Uuid::new_v4(),
        request_token: token_b,
        order_no: &binding_b.order_no,
        amount_cents: binding_b.amount_cents,
        currency: binding_b.currency,
        method: case.method,
        response_status: 202,
        response_body: &body,
    };
    let general = answer(pay::start_attempt_in_tx(db, new_b).await);
    if handler != general {
        return Err(format!(
            "{case:?}: handler answered {handler}, general path {general}"
        ));
    }
    let (rows_a, rows_b) = (
        rows(db, &order_a, token_a).await,
        rows(db, &order_b, token_b).await,
    );
    if rows_a != rows_b {
        return Err(format!(
            "{case:?}:\n handler wrote {rows_a:#?}\n general path wrote {rows_b:#?}"
        ));
    }

    let binding_c = binding(&case, &order_c);
    let new_c = NewAttempt {
        payment_id: Uuid::new_v4(),
        request_token: token_c,
        order_no: &binding_c.order_no,
        amount_cents: binding_c.amount_cents,
        currency: binding_c.currency,
        method: case.method,
        response_status: 202,
        response_body: &body,
    };
    let common = general.starts_with("new ");
    let before = rows(db, &order_c, token_c).await;
    let started = attempts::start_in_one(db, new_c, time::OffsetDateTime::now_utc())
        .await
        .map_err(|err| format!("{case:?}: the one statement failed: {err}"))?;
    let after = rows(db, &order_c, token_c).await;
    match started {
        Some(_) if common => {
            if after != rows_b {
                return Err(format!(
                    "{case:?}: one statement wrote {after:#?}, the general path {rows_b:#?}"
                ));
            }
            Ok(true)
        }
        None if !common => {
            if after != before {
                return Err(format!(
                    "{case:?}: left to the general path, yet it wrote {before:#?} -> {after:#?}"
                ));
            }
            Ok(false)
        }
        other => Err(format!(
            "{case:?}: one statement started {:?}; the general path answered {general}",
            other.map(|attempt| attempt.order_no)
        )),
    }
}

#[tokio::test]
async fn pays_one_statement_and_its_general_transaction_agree_on_every_case() {
    // A database with no backend beside it: its workers (expiry, the
    // dispatcher) would change one twin's rows between its pay and the comparison.
    let (_database, db) = seeds::database_with_pool(16).await;
    let warm = WarmConnections::new(db.clone(), 4);
    let all = cases();
    let started = equivalence::cases_agree(&all, |n, case| run_case(&db, &warm, n, case)).await;
    // A PENDING, unexpired order with no attempt, the token's amount and
    // currency and a fresh token: by the wallet with the amount available (one
    // case), by the platform whatever the wallet holds (three).
    assert_eq!(started, 4, "cases the one statement started by itself");
}
