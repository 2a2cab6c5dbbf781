//! The incident's run: the shopper pays each order, then `concurrency`
//! identical callbacks per order at once, then the platform's retries on a
//! schedule, then a backend restart, then one more retry. Afterwards the
//! database is asked what happened.
//!
//! With [`Arrival::Late`] no callback comes in time: the run waits until the
//! backend's active query has settled every order, and only then delivers the
//! same callbacks, which must change nothing.
//!
//! [`deliver_storm`] is the platform's side alone (burst, retries, restart, one
//! more) for any set of callbacks: the refund incident (`crate::refunds`) sends
//! its refund results through it too.

use crate::platform::{Answer, Callback, Notifier, Sender};
use crate::processes::BackendProcess;
use crate::shop::{PaidOrder, PaymentIds, Shopper};
use api_types::PaymentMethod;
use backend::invariants::{self, Report as InvariantReport, Violations};
use futures::future::join_all;
use indicatif::{ProgressBar, ProgressStyle};
use sqlx::PgPool;
use std::collections::BTreeMap;
use std::time::Duration;

/// What to replay.
#[derive(Debug, Clone)]
pub struct Incident {
    /// Orders, each with its own callback.
    pub orders: usize,
    /// Identical deliveries per order in the opening burst.
    pub concurrency: usize,
    /// Waits before each retry (the incident: ten of 10 s).
    pub retries: Vec<Duration>,
    /// Multiplies every wait (0.01 runs the incident a hundred times faster).
    pub time_scale: f64,
    /// Amount of each order, in minor units.
    pub amount_cents: i64,
    /// When the callbacks arrive.
    pub arrival: Arrival,
}

/// When the incident's callbacks arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Right after the pay: the callbacks settle the orders (the incident).
    OnTime,
    /// Never in time: the backend must settle each order by asking the platform
    /// (its active query) within `settle_within`; the callbacks come after that.
    Late {
        /// How long to wait for the active query to settle every order.
        settle_within: Duration,
    },
}

impl Default for Incident {
    /// The incident exactly: 100 concurrent identical callbacks, 10 retries every 10 s.
    fn default() -> Self {
        Self {
            orders: 1,
            concurrency: 100,
            retries: vec![Duration::from_secs(10); 10],
            time_scale: 1.0,
            amount_cents: 4_999,
            arrival: Arrival::OnTime,
        }
    }
}

/// The backend under test.
pub struct Target {
    /// Its base URL.
    pub url: String,
    /// The platform whose notifications it takes, with the keys it verifies
    /// them with (the Standard Webhooks secret, or a real platform's keys).
    pub notifier: Notifier,
    /// Where the run learns the platform's id for each payment.
    pub payment_ids: PaymentIds,
    /// Its admin bearer token (to create the shopper).
    pub admin_token: String,
    /// Its merchant API key (to place the orders).
    pub merchant_key: String,
    /// Its database, for the checks afterwards.
    pub db: PgPool,
}

/// How the backend is restarted between the retries and the last delivery.
pub enum Restart<'a> {
    /// Not restarted.
    Skip,
    /// A shell command (e.g. `systemctl restart checkout`); the backend is then polled until healthy.
    Command(String),
    /// A backend this run started itself.
    Managed(&'a mut BackendProcess),
}

/// Answers of one phase.
#[derive(Debug, Clone)]
pub struct Phase {
    /// What the phase did.
    pub name: String,
    /// Count of each answer.
    pub answers: BTreeMap<Answer, usize>,
}

impl Phase {
    /// Deliveries sent in the phase.
    pub fn sent(&self) -> usize {
        self.answers.values().sum()
    }

    /// Deliveries acknowledged by the platform's rule (200; WeChat Pay 200
    /// or 204; Alipay 200 `success`).
    pub fn ok(&self) -> usize {
        self.answers
            .iter()
            .filter(|(answer, _)| answer.is_success())
            .map(|(_, count)| count)
            .sum()
    }
}

/// What booked an order's charge, read from its ledger row's callback id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettledBy {
    /// A platform callback (any id but a query's).
    Callback,
    /// The backend's active query (`query:<payment id>:<event>`).
    Query,
    /// Nothing: no ledger row.
    Nothing,
}

impl SettledBy {
    /// Judged from the callback id of an order's ledger row, if it has one.
    pub fn of(callback_id: Option<&str>) -> Self {
        match callback_id {
            Some(id) if id.starts_with("query:") => Self::Query,
            Some(_) => Self::Callback,
            None => Self::Nothing,
        }
    }
}

impl std::fmt::Display for SettledBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Callback => "callback",
            Self::Query => "query",
            Self::Nothing => "-",
        })
    }
}

/// What the database says about one order afterwards.
#[derive(Debug, Clone)]
pub struct OrderOutcome {
    /// The order.
    pub order_no: String,
    /// Its status.
    pub status: String,
    /// Ledger rows for it.
    pub ledger_rows: i64,
    /// Money charged for it.
    pub charged_cents: i64,
    /// What booked the charge.
    pub settled_by: SettledBy,
}

/// How the wait for the active query went ([`Arrival::Late`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryWait {
    /// How long the run waited.
    pub waited: Duration,
    /// Orders no longer PENDING when it stopped waiting.
    pub settled: usize,
    /// Orders it waited for.
    pub orders: usize,
}

/// Everything a run found.
#[derive(Debug, Clone)]
pub struct StormReport {
    /// Answers per phase.
    pub phases: Vec<Phase>,
    /// Per order.
    pub orders: Vec<OrderOutcome>,
    /// Opening balance minus current balance of the storm's account.
    pub deducted_cents: i64,
    /// What should have been deducted: one charge per order when the wallet
    /// pays, nothing when the platform does.
    pub expected_deduction_cents: i64,
    /// The backend's invariant checker over the whole database.
    pub invariants: Result<InvariantReport, Violations>,
    /// What must have booked every charge, when the run knows (`Query` for late callbacks).
    pub expected_settlement: Option<SettledBy>,
    /// The wait for the active query, when the callbacks came late.
    pub query_wait: Option<QueryWait>,
}

impl StormReport {
    /// Everything that is not exactly-once; empty means the run passed.
    pub fn violations(&self) -> Vec<String> {
        let mut found = phase_violations(&self.phases);
        for order in &self.orders {
            if order.ledger_rows != 1 || order.status != "PAID" {
                found.push(format!(
                    "order {} is {} with {} ledger rows",
                    order.order_no, order.status, order.ledger_rows
                ));
            }
            if let Some(expected) = self.expected_settlement
                && order.ledger_rows == 1
                && order.settled_by != expected
            {
                found.push(format!(
                    "order {} was settled by {}, not by {expected}",
                    order.order_no, order.settled_by
                ));
            }
        }
        if let Some(wait) = self.query_wait
            && wait.settled < wait.orders
        {
            found.push(format!(
                "the active query settled {} of {} orders within {:.1} s \
                 (is the backend's QUERY_AFTER_SECS short enough, and are its callbacks dropped?)",
                wait.settled,
                wait.orders,
                wait.waited.as_secs_f64()
            ));
        }
        if self.deducted_cents != self.expected_deduction_cents {
            found.push(format!(
                "balance went down by {} instead of {}",
                self.deducted_cents, self.expected_deduction_cents
            ));
        }
        found.extend(invariant_violations(&self.invariants));
        found
    }

    /// The summary table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        if let Some(wait) = self.query_wait {
            out.push_str(&format!(
                "no callback in time: the active query settled {}/{} order(s) in {:.1} s\n\n",
                wait.settled,
                wait.orders,
                wait.waited.as_secs_f64()
            ));
        }
        out.push_str(&phase_table(&self.phases));
        out.push('\n');
        out.push_str(&format!(
            "{:<38} {:<8} {:>11} {:>9}  {}\n",
            "order", "status", "ledger rows", "charged", "settled by"
        ));
        for order in &self.orders {
            out.push_str(&format!(
                "{:<38} {:<8} {:>11} {:>9}  {}\n",
                order.order_no,
                order.status,
                order.ledger_rows,
                order.charged_cents,
                order.settled_by
            ));
        }
        out.push_str(&format!(
            "\nbalance deducted: {} (expected {})\n",
            self.deducted_cents, self.expected_deduction_cents
        ));
        out.push_str(&invariants_line(&self.invariants));
        out
    }
}

/// Every delivery of `phases` not acknowledged, counted per phase and answer.
pub(crate) fn phase_violations(phases: &[Phase]) -> Vec<String> {
    let mut found = Vec::new();
    for phase in phases {
        for (answer, count) in &phase.answers {
            if !answer.is_success() {
                found.push(format!(
                    "{}: {count} deliveries answered {answer}",
                    phase.name
                ));
            }
        }
    }
    found
}

/// The invariant checker's violations, if any.
pub(crate) fn invariant_violations(
    invariants: &Result<InvariantReport, Violations>,
) -> Vec<String> {
    match invariants {
        Ok(_) => Vec::new(),
        Err(violations) => violations.0.clone(),
    }
}

/// The answers per phase: sent, acknowledged (200 for the checkout's own
/// callbacks), anything else.
pub(crate) fn phase_table(phases: &[Phase]) -> String {
    let mut out = format!(
        "{:<40} {:>6} {:>6} {:>8}\n",
        "phase", "sent", "acked", "other"
    );
    for phase in phases {
        out.push_str(&format!(
            "{:<40} {:>6} {:>6} {:>8}\n",
            phase.name,
            phase.sent(),
            phase.ok(),
            phase.sent() - phase.ok()
        ));
    }
    out
}

/// The invariant checker's verdict in one line (and its violations, if any).
pub(crate) fn invariants_line(invariants: &Result<InvariantReport, Violations>) -> String {
    match invariants {
        Ok(report) => format!(
            "invariants: hold ({} orders, {} paid, {} charges, {} accounts)\n",
            report.orders, report.paid, report.charges, report.accounts
        ),
        Err(violations) => format!("invariants: VIOLATED\n{violations}\n"),
    }
}

fn progress(total: u64, visible: bool) -> ProgressBar {
    if !visible {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// What a run of the incident leaves behind: its report, and the shopper and
/// paid orders for a scenario that goes on from there (the refunds).
#[derive(Debug, Clone)]
pub struct IncidentRun {
    /// What the database said right after the incident.
    pub report: StormReport,
    /// The run's shopper, who paid every order.
    pub shopper: Shopper,
    /// The orders, as paid, in the order they were placed.
    pub paid: Vec<PaidOrder>,
    /// Whether the shopper's wallet paid them (else the platform did, and no
    /// wallet changes, not by the charges and not by refunds).
    pub by_wallet: bool,
}

/// Runs the incident against `target` and reports what the database says.
/// `restart` is used once, between the retries and the last delivery.
pub async fn run(
    target: &Target,
    incident: &Incident,
    restart: &mut Restart<'_>,
    show_progress: bool,
) -> anyhow::Result<IncidentRun> {
    let total = incident.amount_cents * incident.orders as i64;
    let by_wallet = crate::shop::default_method(&target.url).await? == PaymentMethod::Wallet;
    let currency = target.notifier.kind().currency();
    let shopper =
        crate::shop::open_shopper(&target.url, &target.admin_token, total * 2, currency).await?;
    let order_nos = crate::shop::place_orders(
        &target.url,
        &target.merchant_key,
        &shopper,
        incident.orders,
        incident.amount_cents,
        currency,
    )
    .await?;
    let paid = crate::shop::pay_orders(
        &target.url,
        &shopper,
        &target.db,
        &order_nos,
        HAND_OVER_WITHIN,
        &target.payment_ids,
    )
    .await?;
    let callbacks = paid
        .iter()
        .map(|order| {
            target
                .notifier
                .success(order, incident.amount_cents, currency)
        })
        .collect::<anyhow::Result<Vec<Callback>>>()?;

    let query_wait = match incident.arrival {
        Arrival::OnTime => None,
        Arrival::Late { settle_within } => {
            let bar = progress(paid.len() as u64, show_progress);
            bar.set_message("no callback comes: waiting for the active query");
            let wait = wait_settled(&target.db, &paid, settle_within, &bar).await?;
            bar.finish_and_clear();
            Some(wait)
        }
    };

    let phases = deliver_storm(
        target,
        &callbacks,
        incident,
        restart,
        "order",
        show_progress,
    )
    .await?;

    let mut orders = Vec::new();
    for cb in &callbacks {
        let (status, ledger_rows, charged_cents, first_callback): (
            String,
            i64,
            i64,
            Option<String>,
        ) = sqlx::query_as(
            "SELECT o.status, count(l.entry_id), coalesce(sum(l.amount_cents), 0)::bigint,
                    min(l.callback_id)
             FROM orders o LEFT JOIN payment_ledger l ON l.order_no = o.order_no
             WHERE o.order_no = $1 GROUP BY o.status",
        )
        .bind(&cb.order_no)
        .fetch_one(&target.db)
        .await?;
        orders.push(OrderOutcome {
            order_no: cb.order_no.clone(),
            status,
            ledger_rows,
            charged_cents,
            settled_by: SettledBy::of(first_callback.as_deref()),
        });
    }
    let deducted_cents = deducted(&target.db, &shopper).await?;
    let report = StormReport {
        phases,
        orders,
        deducted_cents,
        expected_deduction_cents: if by_wallet { total } else { 0 },
        invariants: invariants::check(&target.db).await?,
        expected_settlement: query_wait.map(|_| SettledBy::Query),
        query_wait,
    };
    Ok(IncidentRun {
        report,
        shopper,
        paid,
        by_wallet,
    })
}

/// Opening balance minus current balance of `shopper`'s account.
pub(crate) async fn deducted(db: &PgPool, shopper: &Shopper) -> anyhow::Result<i64> {
    Ok(sqlx::query_scalar(
        "SELECT opening_balance_cents - balance_cents FROM accounts WHERE shopper_id = $1::uuid",
    )
    .bind(&shopper.shopper_id)
    .fetch_one(db)
    .await?)
}

/// The platform's side of the incident, for any callbacks: each one
/// `incident.concurrency` times at once, then once per retry after each of
/// `incident.retries` (scaled by `incident.time_scale`), then `restart`, then
/// once more. Every delivery is signed afresh in the target's platform's
/// format, with the same id and content. The
/// phases name what each callback is about, `subject` ("order", "refund"),
/// and are marked late for [`Arrival::Late`].
pub async fn deliver_storm(
    target: &Target,
    callbacks: &[Callback],
    incident: &Incident,
    restart: &mut Restart<'_>,
    subject: &str,
    show_progress: bool,
) -> anyhow::Result<Vec<Phase>> {
    let late = if matches!(incident.arrival, Arrival::Late { .. }) {
        " (late)"
    } else {
        ""
    };
    let deliveries = callbacks.len() * (incident.concurrency + incident.retries.len() + 1);
    let bar = progress(deliveries as u64, show_progress);
    let mut sender = Sender::for_platform(
        &target.url,
        target.notifier.clone(),
        Duration::from_secs(30),
    )?;
    let mut phases = Vec::new();

    bar.set_message(format!(
        "{} identical callbacks at once per {subject}",
        incident.concurrency
    ));
    let burst = join_all(
        callbacks
            .iter()
            .flat_map(|cb| std::iter::repeat_n(cb, incident.concurrency))
            .map(|cb| {
                let (sender, bar) = (&sender, &bar);
                async move {
                    let answer = sender.deliver(cb).await;
                    bar.inc(1);
                    answer
                }
            }),
    )
    .await;
    phases.push(tally(
        format!(
            "burst: {} at once x {} {subject}(s){late}",
            incident.concurrency,
            callbacks.len()
        ),
        burst,
    ));

    let mut retry_answers = Vec::new();
    for (n, wait) in incident.retries.iter().enumerate() {
        let wait = wait.mul_f64(incident.time_scale);
        bar.set_message(format!(
            "retry {}/{} after {wait:?}",
            n + 1,
            incident.retries.len()
        ));
        tokio::time::sleep(wait).await;
        for cb in callbacks {
            retry_answers.push(sender.deliver(cb).await);
            bar.inc(1);
        }
    }
    phases.push(tally(
        format!("retries: {}{late}", incident.retries.len()),
        retry_answers,
    ));

    bar.set_message("restarting the backend");
    let restarted = match restart {
        Restart::Skip => false,
        Restart::Command(command) => {
            let status = tokio::process::Command::new("sh")
                .arg("-c")
                .arg(command.as_str())
                .status()
                .await?;
            anyhow::ensure!(status.success(), "restart command failed: {status}");
            wait_healthy(&reqwest::Client::new(), &target.url).await?;
            true
        }
        Restart::Managed(backend) => {
            backend.restart().await?;
            sender = sender.to(&backend.url());
            true
        }
    };
    bar.set_message("one more retry");
    let mut last = Vec::new();
    for cb in callbacks {
        last.push(sender.deliver(cb).await);
        bar.inc(1);
    }
    let label = if restarted {
        "after restart: 1 more"
    } else {
        "1 more (no restart)"
    };
    phases.push(tally(format!("{label}{late}"), last));
    bar.finish_and_clear();
    Ok(phases)
}

/// How long the platform may take to accept the hand-overs of a run's payments.
const HAND_OVER_WITHIN: Duration = Duration::from_secs(30);

/// Polls the orders' statuses until none is PENDING or `deadline` passes,
/// moving `bar` as they settle.
async fn wait_settled(
    db: &PgPool,
    paid: &[PaidOrder],
    deadline: Duration,
    bar: &ProgressBar,
) -> anyhow::Result<QueryWait> {
    let order_nos: Vec<&str> = paid.iter().map(|p| p.order_no.as_str()).collect();
    let started = tokio::time::Instant::now();
    loop {
        let settled: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM orders WHERE order_no = ANY($1) AND status <> 'PENDING'",
        )
        .bind(&order_nos)
        .fetch_one(db)
        .await?;
        let settled = usize::try_from(settled).unwrap_or(0);
        bar.set_position(settled as u64);
        if settled == paid.len() || started.elapsed() >= deadline {
            return Ok(QueryWait {
                waited: started.elapsed(),
                settled,
                orders: paid.len(),
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn tally(name: String, answers: Vec<Answer>) -> Phase {
    let mut counts = BTreeMap::new();
    for answer in answers {
        *counts.entry(answer).or_insert(0) += 1;
    }
    Phase {
        name,
        answers: counts,
    }
}

/// Polls `/healthz` until it answers 200 (60 s at most).
pub async fn wait_healthy(http: &reqwest::Client, url: &str) -> anyhow::Result<()> {
    for _ in 0..600 {
        if let Ok(response) = http.get(format!("{url}/healthz")).send().await
            && response.status().is_success()
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("backend at {url} did not become healthy within 60 s")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(answers: &[(Answer, usize)], ledger_rows: i64, deducted: i64) -> StormReport {
        StormReport {
            phases: vec![Phase {
                name: "burst".into(),
                answers: answers.iter().copied().collect(),
            }],
            orders: vec![OrderOutcome {
                order_no: "ord_1".into(),
                status: "PAID".into(),
                ledger_rows,
                charged_cents: 100 * ledger_rows,
                settled_by: SettledBy::Callback,
            }],
            deducted_cents: deducted,
            expected_deduction_cents: 100,
            invariants: Ok(InvariantReport::default()),
            expected_settlement: None,
            query_wait: None,
        }
    }

    #[test]
    fn a_clean_run_has_no_violations() {
        assert!(
            report(&[(Answer::Status(200), 100)], 1, 100)
                .violations()
                .is_empty()
        );
    }

    #[test]
    fn a_double_charge_a_wrong_deduction_and_a_non_200_answer_are_each_violations() {
        let violations = report(
            &[(Answer::Status(200), 99), (Answer::Status(500), 1)],
            2,
            200,
        )
        .violations();
        assert_eq!(violations.len(), 3, "{violations:?}");
        assert!(violations[0].contains("answered 500"));
        assert!(violations[1].contains("2 ledger rows"));
        assert!(violations[2].contains("went down by 200 instead of 100"));
    }

    #[test]
    fn the_ledger_rows_callback_id_tells_a_query_from_a_callback() {
        assert_eq!(
            SettledBy::of(Some(
                "query:2b7c4f1e-0000-4000-8000-000000000000:payment.succeeded"
            )),
            SettledBy::Query
        );
        assert_eq!(SettledBy::of(Some("evt_123")), SettledBy::Callback);
        assert_eq!(SettledBy::of(None), SettledBy::Nothing);
    }

    #[test]
    fn late_callbacks_must_find_every_order_settled_by_the_query() {
        let mut late = report(&[(Answer::Status(200), 100)], 1, 100);
        late.expected_settlement = Some(SettledBy::Query);
        late.query_wait = Some(QueryWait {
            waited: Duration::from_secs(3),
            settled: 1,
            orders: 1,
        });
        late.orders[0].settled_by = SettledBy::Query;
        assert!(late.violations().is_empty(), "{:?}", late.violations());
        assert!(
            late.table()
                .contains("the active query settled 1/1 order(s)")
        );

        // The query never came: the late callback charged it.
        late.orders[0].settled_by = SettledBy::Callback;
        late.query_wait = Some(QueryWait {
            waited: Duration::from_secs(30),
            settled: 0,
            orders: 1,
        });
        let violations = late.violations();
        assert_eq!(violations.len(), 2, "{violations:?}");
        assert!(violations[0].contains("settled by callback, not by query"));
        assert!(violations[1].contains("settled 0 of 1 orders"));
    }
}
