//! The incident's run: `concurrency` identical callbacks per order at once, then
//! the platform's retries on a schedule, then a backend restart, then one more
//! retry. Afterwards the database is asked what happened.

use crate::platform::{Answer, Callback, Sender};
use crate::processes::BackendProcess;
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
        }
    }
}

/// The backend under test.
pub struct Target {
    /// Its base URL.
    pub url: String,
    /// The Standard Webhooks secret it verifies with.
    pub webhook_secret: String,
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

    /// Deliveries answered 200.
    pub fn ok(&self) -> usize {
        self.answers.get(&Answer::Status(200)).copied().unwrap_or(0)
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
    /// What should have been deducted: one charge per order.
    pub expected_deduction_cents: i64,
    /// The backend's invariant checker over the whole database.
    pub invariants: Result<InvariantReport, Violations>,
}

impl StormReport {
    /// Everything that is not exactly-once; empty means the run passed.
    pub fn violations(&self) -> Vec<String> {
        let mut found = Vec::new();
        for phase in &self.phases {
            for (answer, count) in &phase.answers {
                if *answer != Answer::Status(200) {
                    found.push(format!(
                        "{}: {count} deliveries answered {answer}",
                        phase.name
                    ));
                }
            }
        }
        for order in &self.orders {
            if order.ledger_rows != 1 || order.status != "PAID" {
                found.push(format!(
                    "order {} is {} with {} ledger rows",
                    order.order_no, order.status, order.ledger_rows
                ));
            }
        }
        if self.deducted_cents != self.expected_deduction_cents {
            found.push(format!(
                "balance went down by {} instead of {}",
                self.deducted_cents, self.expected_deduction_cents
            ));
        }
        if let Err(violations) = &self.invariants {
            found.extend(violations.0.iter().cloned());
        }
        found
    }

    /// The summary table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "{:<34} {:>6} {:>6} {:>8}\n",
            "phase", "sent", "200", "other"
        ));
        for phase in &self.phases {
            out.push_str(&format!(
                "{:<34} {:>6} {:>6} {:>8}\n",
                phase.name,
                phase.sent(),
                phase.ok(),
                phase.sent() - phase.ok()
            ));
        }
        out.push('\n');
        out.push_str(&format!(
            "{:<38} {:<8} {:>11} {:>9}\n",
            "order", "status", "ledger rows", "charged"
        ));
        for order in &self.orders {
            out.push_str(&format!(
                "{:<38} {:<8} {:>11} {:>9}\n",
                order.order_no, order.status, order.ledger_rows, order.charged_cents
            ));
        }
        out.push_str(&format!(
            "\nbalance deducted: {} (expected {})\n",
            self.deducted_cents, self.expected_deduction_cents
        ));
        match &self.invariants {
            Ok(report) => out.push_str(&format!(
                "invariants: hold ({} orders, {} paid, {} charges, {} accounts)\n",
                report.orders, report.paid, report.charges, report.accounts
            )),
            Err(violations) => out.push_str(&format!("invariants: VIOLATED\n{violations}\n")),
        }
        out
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

/// Runs the incident against `target` and reports what the database says.
pub async fn run(
    target: &Target,
    incident: &Incident,
    mut restart: Restart<'_>,
    show_progress: bool,
) -> anyhow::Result<StormReport> {
    let total = incident.amount_cents * incident.orders as i64;
    let shopper = crate::shop::open_shopper(&target.url, &target.admin_token, total * 2).await?;
    let order_nos = crate::shop::place_orders(
        &target.url,
        &target.merchant_key,
        &shopper,
        incident.orders,
        incident.amount_cents,
    )
    .await?;
    let mut callbacks = Vec::with_capacity(incident.orders);
    for order_no in &order_nos {
        callbacks.push(Callback::success(
            order_no,
            incident.amount_cents,
            "EUR".parse()?,
        ));
    }

    let deliveries = incident.orders * (incident.concurrency + incident.retries.len() + 1);
    let bar = progress(deliveries as u64, show_progress);
    let mut sender = Sender::new(&target.url, &target.webhook_secret)?;
    let mut phases = Vec::new();

    bar.set_message(format!(
        "{} identical callbacks at once per order",
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
            "burst: {} at once x {} order(s)",
            incident.concurrency, incident.orders
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
        for cb in &callbacks {
            retry_answers.push(sender.deliver(cb).await);
            bar.inc(1);
        }
    }
    phases.push(tally(
        format!("retries: {}", incident.retries.len()),
        retry_answers,
    ));

    bar.set_message("restarting the backend");
    let restarted = match &mut restart {
        Restart::Skip => false,
        Restart::Command(command) => {
            let status = tokio::process::Command::new("sh")
                .arg("-c")
                .arg(command.as_str())
                .status()
                .await?;
            anyhow::ensure!(status.success(), "restart command failed: {status}");
            wait_healthy(&shopper.client, &target.url).await?;
            true
        }
        Restart::Managed(backend) => {
            backend.restart().await?;
            sender = Sender::new(&backend.url(), &target.webhook_secret)?;
            true
        }
    };
    bar.set_message("one more retry");
    let mut last = Vec::new();
    for cb in &callbacks {
        last.push(sender.deliver(cb).await);
        bar.inc(1);
    }
    let label = if restarted {
        "after restart: 1 more"
    } else {
        "1 more (no restart)"
    };
    phases.push(tally(label.to_owned(), last));
    bar.finish_and_clear();

    let mut orders = Vec::new();
    for cb in &callbacks {
        let (status, ledger_rows, charged_cents): (String, i64, i64) = sqlx::query_as(
            "SELECT o.status, count(l.entry_id), coalesce(sum(l.amount_cents), 0)::bigint
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
        });
    }
    let deducted_cents: i64 = sqlx::query_scalar(
        "SELECT opening_balance_cents - balance_cents FROM accounts WHERE shopper_id = $1::uuid",
    )
    .bind(&shopper.shopper_id)
    .fetch_one(&target.db)
    .await?;
    Ok(StormReport {
        phases,
        orders,
        deducted_cents,
        expected_deduction_cents: total,
        invariants: invariants::check(&target.db).await?,
    })
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
            }],
            deducted_cents: deducted,
            expected_deduction_cents: 100,
            invariants: Ok(InvariantReport::default()),
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
}
