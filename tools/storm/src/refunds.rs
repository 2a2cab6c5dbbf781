//! The refund incident, replayed after the payment incident has PAID every
//! order: the merchant asks for a full refund of each (one `Idempotency-Key`
//! per order, the same request sent twice: the second must be the stored
//! answer, replayed); once the backend has handed each refund to the platform,
//! the same signed `refund.succeeded` callback per refund arrives as the
//! payment's did ([`crate::incident::deliver_storm`]: many at once, the
//! retries, a backend restart, one more). Afterwards the database is asked what
//! happened: per order one refund, one REFUND ledger row, REFUNDED, the
//! account credited once.
//!
//! The backend's active query may settle a refund before the callbacks
//! arrive; the result must be the same, so what booked each refund is shown,
//! not required.

use crate::incident::{
    self, Incident, IncidentRun, Phase, Restart, SettledBy, Target, invariant_violations,
    invariants_line, phase_table, phase_violations,
};
use crate::platform::Callback;
use crate::shop::{self, HandedOverRefund};
use backend::invariants::{self, Report as InvariantReport, Violations};
use futures::{StreamExt, TryStreamExt};
use std::time::Duration;

/// The reason every refund of a run gives.
pub const REASON: &str = "storm: the refund incident";

/// How long the platform may take to accept the hand-overs of a run's refunds.
const HAND_OVER_WITHIN: Duration = Duration::from_secs(30);

/// Asks for at most this many refunds at once.
const REQUESTS_AT_ONCE: usize = 8;

/// The second request of a refund, with the first one's key and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replay {
    /// The order refunded.
    pub order_no: String,
    /// The refund number the first request got.
    pub refund_no: String,
    /// Whether the second answer was a 202 carrying `Idempotent-Replayed: true`.
    pub replayed: bool,
    /// Whether it named the same refund, with the same body.
    pub same_refund: bool,
}

/// What the database says about one refunded order afterwards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefundOutcome {
    /// The order.
    pub order_no: String,
    /// Its status (REFUNDED when all of the charge went back).
    pub status: String,
    /// Its amount: what the refund asked for.
    pub amount_cents: i64,
    /// `orders.refunded_cents`.
    pub refunded_cents: i64,
    /// Refunds the order has (the replayed request must not add one).
    pub refunds: i64,
    /// The status of the run's refund of it.
    pub refund_status: String,
    /// REFUND rows in the ledger for it.
    pub refund_rows: i64,
    /// What booked the refund: a callback or the backend's active query.
    pub settled_by: SettledBy,
}

/// Everything the refund run found.
#[derive(Debug, Clone)]
pub struct RefundReport {
    /// The second request of each refund.
    pub replays: Vec<Replay>,
    /// Answers to the refund callbacks, per phase.
    pub phases: Vec<Phase>,
    /// Per order.
    pub refunds: Vec<RefundOutcome>,
    /// Current balance minus the balance before the refunds were asked for.
    pub credited_cents: i64,
    /// What should have come back: the refunds' amounts, once each.
    pub expected_credit_cents: i64,
    /// Opening balance minus current balance of the run's account afterwards.
    pub deducted_cents: i64,
    /// Charged minus refunded: 0 when every order was refunded in full.
    pub expected_deduction_cents: i64,
    /// The backend's invariant checker over the whole database.
    pub invariants: Result<InvariantReport, Violations>,
}

impl RefundReport {
    /// Everything that is not exactly-once; empty means the run passed.
    pub fn violations(&self) -> Vec<String> {
        let mut found = Vec::new();
        for replay in &self.replays {
            if !replay.replayed || !replay.same_refund {
                found.push(format!(
                    "the second request of refund {} of {} (same Idempotency-Key) was {}",
                    replay.refund_no,
                    replay.order_no,
                    if replay.replayed {
                        "replayed with another refund"
                    } else {
                        "not answered as a replay"
                    }
                ));
            }
        }
        found.extend(phase_violations(&self.phases));
        for order in &self.refunds {
            if order.refunds != 1
                || order.refund_rows != 1
                || order.refund_status != "SUCCEEDED"
                || order.status != "REFUNDED"
                || order.refunded_cents != order.amount_cents
            {
                found.push(format!(
                    "order {} is {} with {} refund(s), its refund {}, {} REFUND row(s), refunded {} of {}",
                    order.order_no,
                    order.status,
                    order.refunds,
                    order.refund_status,
                    order.refund_rows,
                    order.refunded_cents,
                    order.amount_cents
                ));
            }
        }
        if self.credited_cents != self.expected_credit_cents {
            found.push(format!(
                "balance went up by {} instead of {}",
                self.credited_cents, self.expected_credit_cents
            ));
        }
        if self.deducted_cents != self.expected_deduction_cents {
            found.push(format!(
                "balance is {} below its opening value instead of {}",
                self.deducted_cents, self.expected_deduction_cents
            ));
        }
        found.extend(invariant_violations(&self.invariants));
        found
    }

    /// The summary table, in the payment incident's style.
    pub fn table(&self) -> String {
        let replayed = self
            .replays
            .iter()
            .filter(|r| r.replayed && r.same_refund)
            .count();
        let mut out = format!(
            "refund requests: {} asked twice with one Idempotency-Key each: {replayed}/{} replayed \
             (Idempotent-Replayed: true, same refund_no)\n\n",
            self.replays.len(),
            self.replays.len()
        );
        out.push_str(&phase_table(&self.phases));
        out.push('\n');
        out.push_str(&format!(
            "{:<38} {:<8} {:>7} {:>11} {:>9}  {}\n",
            "order", "status", "refunds", "REFUND rows", "refunded", "settled by"
        ));
        for order in &self.refunds {
            out.push_str(&format!(
                "{:<38} {:<8} {:>7} {:>11} {:>9}  {}\n",
                order.order_no,
                order.status,
                order.refunds,
                order.refund_rows,
                order.refunded_cents,
                order.settled_by
            ));
        }
        out.push_str(&format!(
            "\nbalance credited: {} (expected {}); below opening: {} (expected {})\n",
            self.credited_cents,
            self.expected_credit_cents,
            self.deducted_cents,
            self.expected_deduction_cents
        ));
        out.push_str(&invariants_line(&self.invariants));
        out
    }
}

/// Refunds every order `paid` left PAID, in full, and replays the incident
/// with the refunds' results: `incident.concurrency` identical callbacks per
/// refund at once, the retries, `restart`, one more. Reads the outcome from
/// `target`'s database.
pub async fn run(
    target: &Target,
    incident: &Incident,
    paid: &IncidentRun,
    restart: &mut Restart<'_>,
    show_progress: bool,
) -> anyhow::Result<RefundReport> {
    let deducted_before = incident::deducted(&target.db, &paid.shopper).await?;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()?;
    let requested: Vec<(String, Replay)> = futures::stream::iter(&paid.paid)
        .map(|order| ask_twice(&http, target, &order.order_no, incident.amount_cents))
        .buffered(REQUESTS_AT_ONCE)
        .try_collect()
        .await?;
    let refund_nos: Vec<String> = requested.iter().map(|(no, _)| no.clone()).collect();
    let handed_over =
        shop::wait_refunds_handed_over(&target.db, &refund_nos, HAND_OVER_WITHIN).await?;
    let callbacks = handed_over
        .iter()
        .zip(&paid.paid)
        .map(|(refund, order)| target.notifier.refund_success(refund, order))
        .collect::<anyhow::Result<Vec<Callback>>>()?;

    let phases = incident::deliver_storm(
        target,
        &callbacks,
        incident,
        restart,
        "refund",
        show_progress,
    )
    .await?;

    let mut refunds = Vec::with_capacity(handed_over.len());
    for refund in &handed_over {
        refunds.push(outcome(target, refund).await?);
    }
    let deducted_cents = incident::deducted(&target.db, &paid.shopper).await?;
    // A refund credits the wallet only when the wallet paid.
    let expected_credit_cents: i64 = if paid.by_wallet {
        handed_over.iter().map(|r| r.amount_cents).sum()
    } else {
        0
    };
    Ok(RefundReport {
        replays: requested.into_iter().map(|(_, replay)| replay).collect(),
        phases,
        refunds,
        credited_cents: deducted_before - deducted_cents,
        expected_credit_cents,
        deducted_cents,
        expected_deduction_cents: paid.report.expected_deduction_cents - expected_credit_cents,
        invariants: invariants::check(&target.db).await?,
    })
}

/// Asks for a full refund of `order_no`, then asks again with the same key
/// and body; returns the refund number and how the second answer went.
async fn ask_twice(
    http: &reqwest::Client,
    target: &Target,
    order_no: &str,
    amount_cents: i64,
) -> anyhow::Result<(String, Replay)> {
    let key = uuid::Uuid::new_v4().to_string();
    let ask = || {
        shop::request_refund(
            http,
            &target.url,
            &target.merchant_key,
            order_no,
            &key,
            amount_cents,
            REASON,
        )
    };
    let first = ask().await?;
    let Some(refund) = first.refund.filter(|_| !first.replayed) else {
        anyhow::bail!(
            "the refund of {order_no} answered {} (replayed: {}): {}",
            first.status,
            first.replayed,
            first.body
        );
    };
    let second = ask().await?;
    let replay = Replay {
        order_no: order_no.to_owned(),
        refund_no: refund.refund_no.clone(),
        replayed: second.replayed && second.status == reqwest::StatusCode::ACCEPTED,
        same_refund: second.refund.as_ref() == Some(&refund),
    };
    Ok((refund.refund_no, replay))
}

/// What the database says about `refund`'s order.
async fn outcome(target: &Target, refund: &HandedOverRefund) -> anyhow::Result<RefundOutcome> {
    let (status, amount_cents, refunded_cents, refunds, refund_status, refund_rows, first_callback): (
        String,
        i64,
        i64,
        i64,
        String,
        i64,
        Option<String>,
    ) = sqlx::query_as(
        "SELECT o.status, o.amount_cents, o.refunded_cents,
                (SELECT count(*) FROM refunds r WHERE r.order_no = o.order_no),
                (SELECT r.status FROM refunds r WHERE r.refund_no = $2),
                (SELECT count(*) FROM payment_ledger l WHERE l.order_no = o.order_no AND l.kind = 'REFUND'),
                (SELECT min(l.callback_id) FROM payment_ledger l
                  WHERE l.order_no = o.order_no AND l.kind = 'REFUND')
         FROM orders o WHERE o.order_no = $1",
    )
    .bind(&refund.order_no)
    .bind(&refund.refund_no)
    .fetch_one(&target.db)
    .await?;
    Ok(RefundOutcome {
        order_no: refund.order_no.clone(),
        status,
        amount_cents,
        refunded_cents,
        refunds,
        refund_status,
        refund_rows,
        settled_by: SettledBy::of(first_callback.as_deref()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::Answer;

    fn report() -> RefundReport {
        RefundReport {
            replays: vec![Replay {
                order_no: "ord_1".into(),
                refund_no: "rfd_1".into(),
                replayed: true,
                same_refund: true,
            }],
            phases: vec![Phase {
                name: "burst".into(),
                answers: [(Answer::Status(200), 100)].into_iter().collect(),
            }],
            refunds: vec![RefundOutcome {
                order_no: "ord_1".into(),
                status: "REFUNDED".into(),
                amount_cents: 100,
                refunded_cents: 100,
                refunds: 1,
                refund_status: "SUCCEEDED".into(),
                refund_rows: 1,
                settled_by: SettledBy::Callback,
            }],
            credited_cents: 100,
            expected_credit_cents: 100,
            deducted_cents: 0,
            expected_deduction_cents: 0,
            invariants: Ok(InvariantReport::default()),
        }
    }

    #[test]
    fn a_clean_refund_run_has_no_violations() {
        let clean = report();
        assert!(clean.violations().is_empty(), "{:?}", clean.violations());
        assert!(clean.table().contains("1/1 replayed"));
    }

    #[test]
    fn a_second_refund_row_a_double_credit_and_a_fresh_answer_to_a_replay_are_each_violations() {
        let mut twice = report();
        twice.replays[0].replayed = false;
        twice.refunds[0].refund_rows = 2;
        twice.credited_cents = 200;
        twice.deducted_cents = -100;
        let violations = twice.violations();
        assert_eq!(violations.len(), 4, "{violations:?}");
        assert!(violations[0].contains("not answered as a replay"));
        assert!(violations[1].contains("2 REFUND row(s)"));
        assert!(violations[2].contains("went up by 200 instead of 100"));
        assert!(violations[3].contains("-100 below its opening value instead of 0"));
    }

    #[test]
    fn an_order_left_paid_is_a_violation() {
        let mut pending = report();
        pending.refunds[0].status = "PAID".into();
        pending.refunds[0].refund_status = "PENDING".into();
        pending.refunds[0].refunded_cents = 0;
        pending.refunds[0].refund_rows = 0;
        let violations = pending.violations();
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].contains("is PAID with 1 refund(s), its refund PENDING"));
    }
}
