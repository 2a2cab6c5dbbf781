//! `orders` and their conditional state changes (the SQL mirror of `api_types::OrderStatus`).

use crate::infra::tokens::TokenFingerprint;
use api_types::{AttemptStatus, Currency, OrderStatus, PaymentMethod, PlatformPaymentId};
use checkout_rules::charge::Reference;
use sqlx::PgExecutor;
use time::OffsetDateTime;
use uuid::Uuid;

/// A row of `orders`.
#[derive(Debug, Clone)]
pub struct OrderRow {
    /// Unguessable order number.
    pub order_no: String,
    /// The account it charges.
    pub account_id: Uuid,
    /// The shopper who owns it (`None` only for orders placed before shoppers existed).
    pub shopper_id: Option<Uuid>,
    /// Amount in minor units.
    pub amount_cents: i64,
    /// Currency of the amount.
    pub currency: Currency,
    /// Where the order stands.
    pub status: OrderStatus,
    /// Why it failed.
    pub failure_reason: Option<String>,
    /// What is being bought.
    pub description: Option<String>,
    /// Creation time.
    pub created_at: OffsetDateTime,
    /// When it was charged.
    pub paid_at: Option<OffsetDateTime>,
    /// When it stops being payable.
    pub expires_at: OffsetDateTime,
    /// Its payment attempt's status, if a pay started one.
    pub payment_status: Option<AttemptStatus>,
    /// What pays for it (its attempt's method), if a pay started one.
    pub payment_method: Option<PaymentMethod>,
    /// What refunds gave back so far.
    pub refunded_cents: i64,
    /// Where the page sends the shopper once the order is final, if the merchant gave it.
    pub return_url: Option<String>,
    /// Where the page sends a shopper who gives up, if the merchant gave it.
    pub cancel_url: Option<String>,
    /// The merchant's name, for "Return to ...", when the order has either URL.
    pub merchant_name: Option<String>,
}

impl OrderRow {
    /// The wire form; `public_origin` makes its `pay_url`.
    pub fn to_dto(&self, public_origin: &str) -> api_types::api::Order {
        api_types::api::Order {
            order_no: self.order_no.clone(),
            account_id: self.account_id,
            amount_cents: self.amount_cents,
            currency: self.currency,
            status: self.status,
            created_at: self.created_at,
            paid_at: self.paid_at,
            expires_at: self.expires_at,
            failure_reason: self.failure_reason.clone(),
            description: self.description.clone(),
            pay_url: format!("{public_origin}/pay/{}", self.order_no),
            payment_status: self.payment_status,
            payment_method: self.payment_method,
            refunded_cents: self.refunded_cents,
            merchant_name: self.merchant_name.clone(),
            return_url: self.return_url.clone(),
            cancel_url: self.cancel_url.clone(),
        }
    }
}

/// A new order: who owns it, what it charges, what it is for.
#[derive(Debug, Clone)]
pub struct NewOrder<'a> {
    /// Unguessable order number.
    pub order_no: &'a str,
    /// The owner.
    pub shopper_id: Uuid,
    /// The owner's account in `currency`.
    pub account_id: Uuid,
    /// Amount in minor units.
    pub amount_cents: i64,
    /// Currency.
    pub currency: Currency,
    /// What is being bought.
    pub description: &'a str,
    /// Seconds it stays payable.
    pub ttl_secs: u64,
    /// The merchant whose sale it is.
    pub merchant_id: Uuid,
    /// The merchant's own id for it, if given (unique per merchant).
    pub merchant_reference: Option<&'a str>,
    /// Where the shopper goes back to once it is final (checked against the merchant's origins).
    pub return_url: Option<&'a str>,
    /// Where a shopper who gives up goes (checked likewise).
    pub cancel_url: Option<&'a str>,
}

/// `orders_merchant_reference_once`: a merchant's reference names one order.
pub const MERCHANT_REFERENCE_UNIQUE: &str = "orders_merchant_reference_once";

/// Creates a PENDING order.
#[tracing::instrument(name = "db.orders.insert", skip(db))]
pub async fn insert(db: impl PgExecutor<'_>, new: &NewOrder<'_>) -> sqlx::Result<OrderRow> {
    sqlx::query_as!(
        OrderRow,
        r#"INSERT INTO orders (order_no, shopper_id, account_id, amount_cents, currency, description, expires_at,
                               merchant_id, merchant_reference, return_url, cancel_url)
           VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7), $8, $9, $10, $11)
           RETURNING order_no, account_id, shopper_id, amount_cents, currency AS "currency: Currency",
                     status AS "status: OrderStatus", failure_reason, description, created_at, paid_at, expires_at,
                     NULL::text AS "payment_status?: AttemptStatus",
                     NULL::text AS "payment_method?: PaymentMethod", refunded_cents, return_url, cancel_url,
                     CASE WHEN return_url IS NOT NULL OR cancel_url IS NOT NULL
                          THEN (SELECT m.name FROM merchants m WHERE m.merchant_id = orders.merchant_id) END
                         AS merchant_name"#,
        new.order_no,
        new.shopper_id,
        new.account_id,
        new.amount_cents,
        new.currency.as_str(),
        new.description,
        new.ttl_secs as f64,
        new.merchant_id,
        new.merchant_reference,
        new.return_url,
        new.cancel_url,
    )
    .fetch_one(db)
    .await
}

/// Reads one order.
#[tracing::instrument(name = "db.orders.find", skip(db))]
pub async fn find(db: impl PgExecutor<'_>, order_no: &str) -> sqlx::Result<Option<OrderRow>> {
    sqlx::query_as!(
        OrderRow,
        r#"SELECT o.order_no, o.account_id, o.shopper_id, o.amount_cents, o.currency AS "currency: Currency",
                  o.status AS "status: OrderStatus", o.failure_reason, o.description, o.created_at, o.paid_at,
                  o.expires_at, p.status AS "payment_status?: AttemptStatus",
                  p.method AS "payment_method?: PaymentMethod", o.refunded_cents, o.return_url, o.cancel_url,
                  CASE WHEN o.return_url IS NOT NULL OR o.cancel_url IS NOT NULL
                       THEN (SELECT m.name FROM merchants m WHERE m.merchant_id = o.merchant_id) END AS merchant_name
           FROM orders o LEFT JOIN payment_attempts p ON p.order_no = o.order_no WHERE o.order_no = $1"#,
        order_no,
    )
    .fetch_optional(db)
    .await
}

/// Reads one order if `shopper_id` owns it: `None` both for no such order and
/// for somebody else's, so the API cannot tell them apart.
#[tracing::instrument(name = "db.orders.find_owned", skip(db))]
pub async fn find_owned(
    db: impl PgExecutor<'_>,
    order_no: &str,
    shopper_id: Uuid,
) -> sqlx::Result<Option<OrderRow>> {
    sqlx::query_as!(
        OrderRow,
        r#"SELECT o.order_no, o.account_id, o.shopper_id, o.amount_cents, o.currency AS "currency: Currency",
                  o.status AS "status: OrderStatus", o.failure_reason, o.description, o.created_at, o.paid_at,
                  o.expires_at, p.status AS "payment_status?: AttemptStatus",
                  p.method AS "payment_method?: PaymentMethod", o.refunded_cents, o.return_url, o.cancel_url,
                  CASE WHEN o.return_url IS NOT NULL OR o.cancel_url IS NOT NULL
                       THEN (SELECT m.name FROM merchants m WHERE m.merchant_id = o.merchant_id) END AS merchant_name
           FROM orders o LEFT JOIN payment_attempts p ON p.order_no = o.order_no
           WHERE o.order_no = $1 AND o.shopper_id = $2"#,
        order_no,
        shopper_id,
    )
    .fetch_optional(db)
    .await
}

/// A shopper's newest orders.
#[tracing::instrument(name = "db.orders.list_for_shopper", skip(db))]
pub async fn list_for_shopper(
    db: impl PgExecutor<'_>,
    shopper_id: Uuid,
    limit: i64,
) -> sqlx::Result<Vec<OrderRow>> {
    sqlx::query_as!(
        OrderRow,
        r#"SELECT o.order_no, o.account_id, o.shopper_id, o.amount_cents, o.currency AS "currency: Currency",
                  o.status AS "status: OrderStatus", o.failure_reason, o.description, o.created_at, o.paid_at,
                  o.expires_at, p.status AS "payment_status?: AttemptStatus",
                  p.method AS "payment_method?: PaymentMethod", o.refunded_cents, o.return_url, o.cancel_url,
                  CASE WHEN o.return_url IS NOT NULL OR o.cancel_url IS NOT NULL
                       THEN (SELECT m.name FROM merchants m WHERE m.merchant_id = o.merchant_id) END AS merchant_name
           FROM orders o LEFT JOIN payment_attempts p ON p.order_no = o.order_no
           WHERE o.shopper_id = $1 ORDER BY o.created_at DESC, o.order_no LIMIT $2"#,
        shopper_id,
        limit,
    )
    .fetch_all(db)
    .await
}

/// An order of a merchant, with the merchant's reference for it.
#[derive(Debug, Clone)]
pub struct MerchantOrderRow {
    /// The order.
    pub order: OrderRow,
    /// The merchant's own id for it.
    pub merchant_reference: Option<String>,
}

/// The columns of a merchant's order, as `query!` reads them.
macro_rules! merchant_order_row {
    ($row:expr) => {
        MerchantOrderRow {
            order: OrderRow {
                order_no: $row.order_no,
                account_id: $row.account_id,
                shopper_id: $row.shopper_id,
                amount_cents: $row.amount_cents,
                currency: $row.currency,
                status: $row.status,
                failure_reason: $row.failure_reason,
                description: $row.description,
                created_at: $row.created_at,
                paid_at: $row.paid_at,
                expires_at: $row.expires_at,
                payment_status: $row.payment_status,
                payment_method: $row.payment_method,
                refunded_cents: $row.refunded_cents,
                return_url: $row.return_url,
                cancel_url: $row.cancel_url,
                merchant_name: $row.merchant_name,
            },
            merchant_reference: $row.merchant_reference,
        }
    };
}

/// Reads one order if `merchant_id` owns it: `None` both for no such order and
/// for another merchant's, so a merchant cannot tell them apart.
#[tracing::instrument(name = "db.orders.find_of_merchant", skip(db))]
pub async fn find_of_merchant(
    db: impl PgExecutor<'_>,
    order_no: &str,
    merchant_id: Uuid,
) -> sqlx::Result<Option<MerchantOrderRow>> {
    let row = sqlx::query!(
        r#"SELECT o.order_no, o.account_id, o.shopper_id, o.amount_cents, o.currency AS "currency: Currency",
                  o.status AS "status: OrderStatus", o.failure_reason, o.description, o.created_at, o.paid_at,
                  o.expires_at, p.status AS "payment_status?: AttemptStatus",
                  p.method AS "payment_method?: PaymentMethod", o.refunded_cents, o.merchant_reference,
                  o.return_url, o.cancel_url,
                  CASE WHEN o.return_url IS NOT NULL OR o.cancel_url IS NOT NULL
                       THEN (SELECT m.name FROM merchants m WHERE m.merchant_id = o.merchant_id) END AS merchant_name
           FROM orders o LEFT JOIN payment_attempts p ON p.order_no = o.order_no
           WHERE o.order_no = $1 AND o.merchant_id = $2"#,
        order_no,
        merchant_id,
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map(|row| merchant_order_row!(row)))
}

/// Which of a merchant's orders to list, newest first.
#[derive(Debug, Clone, Default)]
pub struct MerchantOrderFilter {
    /// Only orders in this status.
    pub status: Option<OrderStatus>,
    /// Only orders created after this.
    pub created_after: Option<OffsetDateTime>,
    /// Only orders older than this one (the cursor: its creation time and number).
    pub before: Option<(OffsetDateTime, String)>,
}

/// Up to `limit` of a merchant's orders, newest first (creation time, then
/// order number, descending: a total order, so pages never overlap or skip).
#[tracing::instrument(name = "db.orders.list_for_merchant", skip(db))]
pub async fn list_for_merchant(
    db: impl PgExecutor<'_>,
    merchant_id: Uuid,
    filter: &MerchantOrderFilter,
    limit: i64,
) -> sqlx::Result<Vec<MerchantOrderRow>> {
    let (before_at, before_no) = filter
        .before
        .as_ref()
        .map_or((None, None), |(at, no)| (Some(*at), Some(no.as_str())));
    let rows = sqlx::query!(
        r#"SELECT o.order_no, o.account_id, o.shopper_id, o.amount_cents, o.currency AS "currency: Currency",
                  o.status AS "status: OrderStatus", o.failure_reason, o.description, o.created_at, o.paid_at,
                  o.expires_at, p.status AS "payment_status?: AttemptStatus",
                  p.method AS "payment_method?: PaymentMethod", o.refunded_cents, o.merchant_reference,
                  o.return_url, o.cancel_url,
                  CASE WHEN o.return_url IS NOT NULL OR o.cancel_url IS NOT NULL
                       THEN (SELECT m.name FROM merchants m WHERE m.merchant_id = o.merchant_id) END AS merchant_name
           FROM orders o LEFT JOIN payment_attempts p ON p.order_no = o.order_no
           WHERE o.merchant_id = $1
             AND ($2::text IS NULL OR o.status = $2)
             AND ($3::timestamptz IS NULL OR o.created_at > $3)
             AND ($4::timestamptz IS NULL OR (o.created_at, o.order_no) < ($4, $5::text))
           ORDER BY o.created_at DESC, o.order_no DESC
           LIMIT $6"#,
        merchant_id,
        filter.status.map(OrderStatus::as_str),
        filter.created_after,
        before_at,
        before_no,
        limit,
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| merchant_order_row!(row))
        .collect())
}

/// An order locked together with its account's balance, for deciding a state change.
#[derive(Debug, Clone)]
pub struct LockedOrder {
    /// Order number.
    pub order_no: String,
    /// The account charged.
    pub account_id: Uuid,
    /// Amount in minor units.
    pub amount_cents: i64,
    /// Currency of the amount.
    pub currency: Currency,
    /// Current status.
    pub status: OrderStatus,
    /// The account's balance, read under the same lock.
    pub balance_cents: i64,
    /// What the account holds for payments in flight (all its orders').
    pub held_cents: i64,
    /// What this order holds: its amount while it is PENDING with a payment
    /// attempt (the pay that made the attempt held it), else 0.
    pub hold_cents: i64,
    /// When it stops being payable.
    pub expires_at: OffsetDateTime,
    /// What refunds pending or done take of the charge.
    pub refund_reserved_cents: i64,
    /// The order's payment attempt (our payment id), if it has one.
    pub attempt_payment_id: Option<Uuid>,
    /// The platform's id for that payment, once recorded.
    pub attempt_platform_payment_id: Option<PlatformPaymentId>,
    /// What pays for the attempt: the wallet (held at pay) or the platform.
    pub attempt_method: Option<PaymentMethod>,
}

impl LockedOrder {
    /// What pays for this order, as the charge rule weighs it: the platform, or
    /// the wallet spending its available money plus the order's own hold.
    pub fn funds(&self) -> checkout_rules::charge::Funds {
        checkout_rules::charge::Funds::of(
            self.attempt_method,
            checkout_rules::charge::spendable_cents(
                self.balance_cents,
                self.held_cents,
                self.hold_cents,
            ),
        )
    }

    /// Whether the wallet pays for this order (and a success deducts it, a
    /// refund credits it back).
    pub fn paid_by_wallet(&self) -> bool {
        self.attempt_method != Some(PaymentMethod::Platform)
    }

    /// Whether a result naming `platform_payment_id` (and, when the platform
    /// echoes it, our `merchant_reference`) is about this order's attempt.
    ///
    /// Both names are compared when both sides have them; a result that names
    /// neither in a comparable way (a platform that does not echo our reference,
    /// for an attempt whose hand-over answer was lost) is taken as the attempt's,
    /// since only one payment per order was ever handed over.
    pub fn reference(
        &self,
        platform_payment_id: &PlatformPaymentId,
        merchant_reference: Option<&str>,
    ) -> Reference {
        let Some(ours) = self.attempt_payment_id else {
            return Reference::NoAttempt;
        };
        if let Some(reference) = merchant_reference
            && Uuid::parse_str(reference).ok() != Some(ours)
        {
            return Reference::Mismatch;
        }
        match &self.attempt_platform_payment_id {
            Some(recorded) if recorded != platform_payment_id => Reference::Mismatch,
            _ => Reference::Matches,
        }
    }
}

/// SQL of [`lock_with_account`], a step of the callback transaction (the benchmark replays it).
pub const LOCK_WITH_ACCOUNT_SQL: &str =
    include_str!("../../sql/callback/lock_order_with_account.sql");

/// Locks the order row and its account row (`FOR UPDATE`) until the transaction ends.
/// Every state change of an order happens under this lock, so two deliveries for
/// one order are applied one after the other, each seeing the other's result.
#[tracing::instrument(name = "db.orders.lock_with_account", skip(db))]
pub async fn lock_with_account(
    db: impl PgExecutor<'_>,
    order_no: &str,
) -> sqlx::Result<Option<LockedOrder>> {
    sqlx::query_file_as!(
        LockedOrder,
        "sql/callback/lock_order_with_account.sql",
        order_no
    )
    .fetch_optional(db)
    .await
}

/// SQL of [`mark_paid`], a step of the callback transaction (the benchmark replays it).
pub const MARK_PAID_SQL: &str = include_str!("../../sql/callback/mark_order_paid.sql");

/// `PENDING -> PAID`. Returns false when the order was not PENDING (someone else moved it).
#[tracing::instrument(name = "db.orders.mark_paid", skip(db))]
pub async fn mark_paid(db: impl PgExecutor<'_>, order_no: &str) -> sqlx::Result<bool> {
    let result = sqlx::query_file!("sql/callback/mark_order_paid.sql", order_no)
        .execute(db)
        .await?;
    Ok(result.rows_affected() == 1)
}

/// `PENDING -> FAILED` with a reason. Returns false when the order was not PENDING.
#[tracing::instrument(name = "db.orders.mark_failed", skip(db))]
pub async fn mark_failed(
    db: impl PgExecutor<'_>,
    order_no: &str,
    reason: &str,
) -> sqlx::Result<bool> {
    let result = sqlx::query!(
        "UPDATE orders SET status = 'FAILED', failure_reason = $2, updated_at = now()
         WHERE order_no = $1 AND status = 'PENDING'",
        order_no,
        reason,
    )
    .execute(db)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// A request token handed out for an order, to be recorded ([`record_tokens_issued`]).
#[derive(Clone)]
pub struct TokenIssued {
    /// The token (a bearer secret until used: never logged, not even by `Debug`).
    pub request_token: Uuid,
    /// The order it was issued for.
    pub order_no: String,
    /// When Redis forgets it.
    pub expires_at: OffsetDateTime,
}

/// The order and the token's fingerprint only: the token itself is a secret.
impl std::fmt::Debug for TokenIssued {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenIssued")
            .field("order_no", &self.order_no)
            .field("token_fp", &TokenFingerprint::of(self.request_token))
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// Records that request tokens were handed out, in one statement. The record
/// is part of no guarantee (people and tests count tokens with it), so its
/// transaction commits asynchronously (`synchronous_commit` off for it alone,
/// set inside the statement): the answer does not wait for a WAL flush, and
/// only a crash of the database server within a fraction of a second could
/// lose it. Written by group commit ([`TokenRecords`]) from the token route.
#[tracing::instrument(name = "db.orders.record_tokens_issued", skip_all, fields(tokens = issued.len()))]
pub async fn record_tokens_issued(
    db: impl PgExecutor<'_>,
    issued: &[TokenIssued],
) -> sqlx::Result<()> {
    let tokens: Vec<Uuid> = issued.iter().map(|t| t.request_token).collect();
    let orders: Vec<&str> = issued.iter().map(|t| t.order_no.as_str()).collect();
    let expiries: Vec<OffsetDateTime> = issued.iter().map(|t| t.expires_at).collect();
    sqlx::query!(
        "INSERT INTO request_tokens_issued (request_token, order_no, expires_at)
         SELECT * FROM UNNEST($1::uuid[], $2::text[], $3::timestamptz[])
         WHERE set_config('synchronous_commit', 'off', true) IS NOT NULL",
        &tokens,
        &orders as &[&str],
        &expiries,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Most token records one statement writes.
pub const TOKEN_RECORDS_BATCH_MAX: usize = 256;
/// Batches of token records written at once.
pub const TOKEN_RECORDS_WRITERS: usize = 2;

/// The record of issued request tokens, by group commit
/// ([`crate::infra::group_commit`]): every token issued at the same time is recorded
/// by one `INSERT ... SELECT FROM UNNEST` and one commit, and each issuing
/// request answers once its row is committed. Cheap to clone (shared).
#[derive(Clone, Debug)]
pub struct TokenRecords(crate::infra::group_commit::GroupCommit<TokenIssued>);

impl TokenRecords {
    /// Starts the writer on `db`.
    pub fn new(db: sqlx::PgPool) -> Self {
        Self(crate::infra::group_commit::GroupCommit::start(
            "request tokens issued",
            db,
            TOKEN_RECORDS_BATCH_MAX,
            TOKEN_RECORDS_WRITERS,
            std::time::Duration::ZERO,
            |db, rows| async move { record_tokens_issued(&db, &rows).await },
        ))
    }

    /// Records `issued`; returns once its row is committed.
    pub async fn record(
        &self,
        issued: TokenIssued,
    ) -> Result<(), crate::infra::group_commit::GroupCommitError> {
        self.0.write(issued).await
    }
}

/// Closes an order whose payment the platform closed (or never had): PENDING
/// -> CLOSED, its hold (`hold_cents`: 0 for a platform payment) released and
/// its attempt `CLOSED`, in the caller's
/// transaction (which holds the order's row lock). Returns false when the
/// order was no longer PENDING.
#[tracing::instrument(name = "db.orders.close_with_attempt", skip(tx))]
pub async fn close_with_attempt(
    tx: &mut sqlx::PgConnection,
    order_no: &str,
    account_id: Uuid,
    payment_id: Uuid,
    hold_cents: i64,
) -> sqlx::Result<bool> {
    let closed = sqlx::query!(
        "UPDATE orders SET status = 'CLOSED', updated_at = now()
         WHERE order_no = $1 AND status = 'PENDING'",
        order_no,
    )
    .execute(&mut *tx)
    .await?;
    if closed.rows_affected() != 1 {
        return Ok(false);
    }
    if !crate::db::accounts::release(&mut *tx, account_id, payment_id, hold_cents).await? {
        return Err(sqlx::Error::Protocol(format!(
            "order {order_no} is closing but its account does not hold {hold_cents}"
        )));
    }
    sqlx::query!(
        "UPDATE payment_attempts SET status = 'CLOSED'
         WHERE order_no = $1 AND status IN ('CREATED', 'SUBMITTED', 'UNKNOWN')",
        order_no,
    )
    .execute(&mut *tx)
    .await?;
    Ok(true)
}

/// Closes the expired PENDING orders nobody started paying, at most `limit`,
/// in one transaction; returns their numbers. Rows another transaction holds
/// (a pay deciding about that order, another instance's sweep) are skipped,
/// not waited for, and the attempt check runs after the lock, in a statement
/// of its own, so it sees a pay that committed a moment ago.
#[tracing::instrument(name = "db.orders.close_expired", skip(db))]
pub async fn close_expired(db: &sqlx::PgPool, limit: i64) -> sqlx::Result<Vec<String>> {
    let mut tx = db.begin().await?;
    let claimed: Vec<String> = sqlx::query_scalar!(
        "SELECT order_no FROM orders
         WHERE status = 'PENDING' AND expires_at <= now()
           AND NOT EXISTS (SELECT 1 FROM payment_attempts p WHERE p.order_no = orders.order_no)
         ORDER BY expires_at LIMIT $1
         FOR UPDATE SKIP LOCKED",
        limit,
    )
    .fetch_all(&mut *tx)
    .await?;
    if claimed.is_empty() {
        return Ok(claimed);
    }
    let closed = sqlx::query_scalar!(
        "UPDATE orders o SET status = 'CLOSED', updated_at = now()
         WHERE o.order_no = ANY($1) AND o.status = 'PENDING'
           AND NOT EXISTS (SELECT 1 FROM payment_attempts p WHERE p.order_no = o.order_no)
         RETURNING o.order_no",
        &claimed,
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(closed)
}
