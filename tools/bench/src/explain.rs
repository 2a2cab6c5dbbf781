//! `EXPLAIN (ANALYZE, BUFFERS)` of every statement of one new callback, with the
//! values the handler would bind, inside a transaction that is rolled back.

use crate::handler_sql::NEW_CHARGE_SQL;
use crate::pgbench::{self, BODY_SHA256, CallbackPath, EVENT_TYPE};
use crate::postgres::{CALLBACK_PREFIX, order_no, order_no_sql};
use anyhow::{Context, bail};
use checkout_rules::charge::Decision;
use sqlx::{PgPool, Row};
use uuid::Uuid;

enum Value {
    Text(String),
    Uuid(Uuid),
    Int(i64),
    Small(i16),
    NullText,
}

struct Order {
    order_no: String,
    account_id: Uuid,
    amount_cents: i64,
    currency: String,
}

/// The plans of the statements of a new callback for order `k`, in order.
pub async fn new_callback(pool: &PgPool, k: i64) -> anyhow::Result<Vec<(String, String)>> {
    let mut tx = pool.begin().await?;
    let order_no = order_no(k);
    let row = sqlx::query(
        "SELECT account_id, amount_cents, currency FROM orders WHERE order_no = $1 AND status = 'PENDING'",
    )
    .bind(&order_no)
    .fetch_optional(&mut *tx)
    .await?
    .with_context(|| format!("no PENDING order {order_no} to explain"))?;
    let order = Order {
        order_no,
        account_id: row.try_get("account_id")?,
        amount_cents: row.try_get("amount_cents")?,
        currency: row.try_get("currency")?,
    };
    let mut plans = Vec::new();
    for sql in NEW_CHARGE_SQL.statements() {
        let explain = format!("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) {sql}");
        let mut query = sqlx::query(&explain);
        for expression in pgbench::bound_expressions(sql, CallbackPath::New)? {
            query = match resolve(&expression, k, &order)? {
                Value::Text(v) => query.bind(v),
                Value::Uuid(v) => query.bind(v),
                Value::Int(v) => query.bind(v),
                Value::Small(v) => query.bind(v),
                Value::NullText => query.bind(None::<String>),
            };
        }
        let lines: Vec<String> = query
            .fetch_all(&mut *tx)
            .await
            .with_context(|| format!("EXPLAIN failed for:\n{sql}"))?
            .iter()
            .map(|row| row.try_get::<String, _>(0))
            .collect::<Result<_, _>>()?;
        plans.push((sql.to_owned(), lines.join("\n")));
    }
    tx.rollback().await?;
    Ok(plans)
}

/// The value of one pgbench expression for order `k` (the values the handler binds).
fn resolve(expression: &str, k: i64, order: &Order) -> anyhow::Result<Value> {
    if let Some(prefix) = expression
        .strip_prefix("('")
        .and_then(|rest| rest.strip_suffix("' || :k)"))
    {
        return Ok(Value::Text(format!("{prefix}{k}")));
    }
    if expression == order_no_sql(":k") {
        return Ok(Value::Text(order_no(k)));
    }
    Ok(match expression {
        ":order_no" => Value::Text(order.order_no.clone()),
        ":account_id" => Value::Uuid(order.account_id),
        ":amount_cents" | ":amount" => Value::Int(order.amount_cents),
        "'EUR'" => Value::Text("EUR".into()),
        "NULL" => Value::NullText,
        ":currency" => Value::Text(order.currency.clone()),
        ":body_sha256" => Value::Text(BODY_SHA256.into()),
        ":event_type" => Value::Text(EVENT_TYPE.into()),
        ":outcome" => Value::Text(Decision::Charge.outcome().as_str().into()),
        ":http_status" => Value::Small(200),
        other => bail!("no value for {other} (callback ids are {CALLBACK_PREFIX}<k>)"),
    })
}
