//! When payments are handed over: right after an attempt commits
//! ([`dispatch`]), and, forever in the background, again for attempts a crash or
//! a platform outage left committed but unsubmitted ([`run`]).

use super::{HandOverSlot, Platform};
use crate::db::attempts::{self, AttemptRow, Submitted};
use crate::infra::group_commit::GroupCommit;
use sqlx::PgPool;
use std::time::Duration;
use tracing::Instrument;

/// Most hand-overs one statement records.
pub const SUBMITTED_BATCH_MAX: usize = 256;
/// Batches of hand-overs recorded at once.
pub const SUBMITTED_WRITERS: usize = 2;
/// How long a batch of hand-over records gathers rows after its first: the
/// record is written after the shopper has the answer, and each statement
/// costs PostgreSQL a plan and a commit whatever its size (see
/// `docs/BENCHMARKS.md`, "What each design choice bought": 4-5 rows per
/// statement without it).
pub const SUBMITTED_LINGER: Duration = Duration::from_millis(10);

/// The record of accepted hand-overs, by group commit
/// ([`crate::infra::group_commit`]): the hand-overs answered within
/// [`SUBMITTED_LINGER`] of each other are recorded by one `UPDATE ... FROM
/// UNNEST` and one commit ([`attempts::mark_submitted`]). Cheap to clone
/// (shared).
#[derive(Clone, Debug)]
pub struct Submissions(GroupCommit<Submitted>);

impl Submissions {
    /// Starts the writer on `db`.
    pub fn new(db: PgPool) -> Self {
        Self(GroupCommit::start(
            "hand-overs accepted",
            db,
            SUBMITTED_BATCH_MAX,
            SUBMITTED_WRITERS,
            SUBMITTED_LINGER,
            |db, rows| async move { attempts::mark_submitted(&db, &rows).await },
        ))
    }
}

/// How old an unsubmitted attempt must be before the dispatcher hands it over
/// again: younger ones are still being handed over by the request that made them.
const DISPATCH_MIN_AGE_SECS: i64 = 5;

/// Hands one committed attempt to the platform and records when that is done,
/// in `slot` (released once the platform has answered: waiting for the record
/// holds no hand-over slot). Concurrent calls for the same attempt in this
/// process collapse into one.
#[tracing::instrument(name = "dispatch", skip_all,
    fields(order_no = %attempt.order_no, payment_id = %attempt.payment_id))]
pub async fn dispatch(
    db: &PgPool,
    platform: &Platform,
    submissions: &Submissions,
    attempt: &AttemptRow,
    slot: HandOverSlot,
) -> anyhow::Result<()> {
    if !platform.handing_over().insert(attempt.payment_id) {
        return Ok(());
    }
    let result = platform.hand_over(attempt).await;
    platform.handing_over().remove(&attempt.payment_id);
    drop(slot);
    let handed_over = match result {
        Ok(handed_over) => handed_over,
        Err(err @ super::HandOverError::Unknown(_)) => {
            if attempts::mark_unknown(db, attempt.payment_id).await? {
                tracing::warn!(payment_id = %attempt.payment_id, error = %err,
                    "hand-over outcome unknown: the attempt is UNKNOWN (not failed) and will be sent again with the same key");
            }
            return Err(err.into());
        }
        Err(err) => return Err(err.into()),
    };
    let qr_code = handed_over.qr_code.is_some();
    let platform_payment_id = handed_over.platform_payment_id.clone();
    submissions
        .0
        .write(Submitted {
            payment_id: attempt.payment_id,
            platform_payment_id: handed_over.platform_payment_id,
            qr_code: handed_over.qr_code,
        })
        .await?;
    tracing::info!(payment_id = %attempt.payment_id, order_no = %attempt.order_no,
        platform_payment_id = platform_payment_id.as_ref().map_or("(none yet)", |id| id.as_str()),
        qr_code, "payment handed to the platform");
    Ok(())
}

/// Hands `attempt` over in a task of its own, in `span`, when one of the
/// [`super::HAND_OVERS_IN_FLIGHT_MAX`] hand-over slots is free. Returns false,
/// having started nothing, when every slot is taken: the attempt is committed
/// and the next sweep of [`run`] hands it over.
pub fn spawn_dispatch(
    db: &PgPool,
    platform: &Platform,
    submissions: &Submissions,
    attempt: AttemptRow,
    span: tracing::Span,
) -> bool {
    let Some(slot) = platform.hand_over_slot() else {
        return false;
    };
    let (db, platform, submissions) = (db.clone(), platform.clone(), submissions.clone());
    tokio::spawn(
        async move {
            if let Err(err) = dispatch(&db, &platform, &submissions, &attempt, slot).await {
                // The next sweep of `run` sends it again.
                tracing::warn!(error = %err, "hand-over to the platform failed; will retry");
            }
        }
        .instrument(span),
    );
    true
}

/// Until `stop` drains: hands over again the attempts that a crash (or a platform outage)
/// left committed but unsubmitted.
pub async fn run(
    db: PgPool,
    platform: Platform,
    submissions: Submissions,
    stop: crate::infra::shutdown::Shutdown,
) {
    let mut tick = tokio::time::interval(Duration::from_secs(2));
    while stop.tick(&mut tick).await {
        let stuck = match attempts::list_unsubmitted(&db, DISPATCH_MIN_AGE_SECS, 100).await {
            Ok(rows) => rows,
            Err(err) => {
                tracing::warn!(error = %err, "dispatcher could not list unsubmitted attempts");
                continue;
            }
        };
        for attempt in stuck {
            // Still in flight here (a slow platform): no second slot for it.
            if platform.is_handing_over(attempt.payment_id) {
                continue;
            }
            let span = tracing::info_span!("dispatcher.resend",
                order_no = %attempt.order_no, payment_id = %attempt.payment_id);
            if !spawn_dispatch(&db, &platform, &submissions, attempt, span.clone()) {
                tracing::info!(
                    in_flight = super::HAND_OVERS_IN_FLIGHT_MAX,
                    "hand-overs in flight at the limit; the rest wait for the next sweep"
                );
                break;
            }
            span.in_scope(|| tracing::info!("handing over an attempt left unsubmitted"));
        }
    }
}
