//! Duplicates answered without a lookup: the callback ids this instance saw
//! processed, in memory, and their deliveries logged by group commit.
//!
//! Platforms repeat a notification many times (the incident: three in one
//! second; retries for a day), so most callbacks in a storm are duplicates.
//! The database stays the authority: an id enters [`SeenCallbacks`] only after
//! the transaction that claimed it committed, or after the database said it
//! was processed, and a processed id never changes (`payment_callbacks` is
//! append-only), so a remembered answer can never be wrong. What it saves is
//! the lookup; an id this instance has not seen (another instance processed
//! it, or this one restarted) goes to the database as before.
//!
//! A duplicate's delivery is still logged before it is answered, but many
//! duplicates share one statement and one commit ([`crate::infra::group_commit`]):
//! [`SeenCallbacks::log`] hands the row to a writer that inserts every row
//! waiting (up to [`BATCH_MAX`]) in one `INSERT ... SELECT FROM UNNEST`, up to
//! [`WRITERS`] batches at once, then answers each waiter. Under a storm of `n`
//! concurrent duplicates the database writes about one commit per batch
//! instead of one per delivery; alone, a duplicate costs what it did (one
//! statement).
//!
//! The log is an audit trail, not money, so its commits do not wait for a WAL
//! flush (`sql/callback/record_deliveries.sql` commits asynchronously): a
//! duplicate is answered once its row is committed and visible, and the row
//! reaches the disk with the next flush, a fraction of a second later. Only a
//! crash of the database server in that window could lose it. A/B in the
//! benchmark: 1.7-2.0x the duplicates per second at 8 clients, 1.6x at 32.

use crate::db::deliveries::Delivery;
use crate::infra::group_commit::GroupCommit;
use api_types::{CallbackOutcome, CallbackType};
use sqlx::PgPool;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Ids remembered per generation; two generations are kept, so between
/// `GENERATION` and twice that many of the newest ids are remembered (a few MiB).
pub const GENERATION: usize = 25_000;
/// Most deliveries one statement logs.
pub const BATCH_MAX: usize = 256;
/// Batches written at once (each on a pool connection of its own). Fewer
/// batches in flight make bigger ones: in single A/B rounds of the benchmark 2
/// answered 0.74-0.82x of pgbench's duplicate at 8 clients where 4 answered
/// 0.69-0.71x and 8 answered 0.54-0.59x, and more at 32 and 100 clients too;
/// the 3-round run after it, on another host, gave 0.64x at 8 clients, and
/// 0.82x once the log's commits stopped waiting for a WAL flush
/// (docs/BENCHMARKS.md, "What each design choice bought").
pub const WRITERS: usize = 2;

/// What a processed callback id was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// SHA-256 of the body first processed under the id, hex.
    pub body_sha256: String,
    /// What was done with it.
    pub outcome: CallbackOutcome,
}

/// One delivery row for the writer.
struct DeliveryRow {
    callback_id: String,
    order_no: Option<String>,
    event_type: Option<CallbackType>,
    outcome: CallbackOutcome,
    http_status: i16,
}

#[derive(Default)]
struct Generations {
    current: HashMap<String, Seen>,
    previous: HashMap<String, Seen>,
}

/// Processed callback ids this instance knows of, and the group-commit writer
/// of duplicate deliveries. Cheap to clone (shared).
#[derive(Clone)]
pub struct SeenCallbacks {
    seen: Arc<Mutex<Generations>>,
    writer: GroupCommit<DeliveryRow>,
}

impl std::fmt::Debug for SeenCallbacks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeenCallbacks").finish_non_exhaustive()
    }
}

impl SeenCallbacks {
    /// Starts the writer task on `db`; it ends when the last clone is dropped.
    pub fn new(db: PgPool) -> Self {
        Self {
            seen: Arc::new(Mutex::new(Generations::default())),
            writer: GroupCommit::start(
                "duplicate deliveries",
                db,
                BATCH_MAX,
                WRITERS,
                std::time::Duration::ZERO,
                |db, rows| async move { insert(&db, &rows).await },
            ),
        }
    }

    /// What `callback_id` was, if this instance knows it was processed.
    pub fn get(&self, callback_id: &str) -> Option<Seen> {
        let seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        seen.current
            .get(callback_id)
            .or_else(|| seen.previous.get(callback_id))
            .cloned()
    }

    /// Remembers a processed id. Call only after the database has it committed.
    pub fn remember(&self, callback_id: &str, body_sha256: &str, outcome: CallbackOutcome) {
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if seen.current.len() >= GENERATION {
            let full = std::mem::take(&mut seen.current);
            seen.previous = full;
        }
        seen.current.insert(
            callback_id.to_owned(),
            Seen {
                body_sha256: body_sha256.to_owned(),
                outcome,
            },
        );
    }

    /// Logs one delivery and returns once it is committed, sharing the
    /// statement and the commit with every delivery waiting at the same time.
    pub async fn log(&self, delivery: Delivery<'_>) -> Result<(), crate::error::ApiError> {
        let row = DeliveryRow {
            callback_id: delivery.callback_id.to_owned(),
            order_no: delivery.order_no.map(str::to_owned),
            event_type: delivery.event_type,
            outcome: delivery.outcome,
            http_status: i16::try_from(delivery.http_status).unwrap_or(i16::MAX),
        };
        Ok(self.writer.write(row).await?)
    }
}

async fn insert(db: &PgPool, batch: &[DeliveryRow]) -> sqlx::Result<()> {
    let ids: Vec<&str> = batch.iter().map(|p| p.callback_id.as_str()).collect();
    let orders: Vec<Option<&str>> = batch.iter().map(|p| p.order_no.as_deref()).collect();
    let events: Vec<Option<&str>> = batch
        .iter()
        .map(|p| p.event_type.map(CallbackType::as_str))
        .collect();
    let outcomes: Vec<&str> = batch.iter().map(|p| p.outcome.as_str()).collect();
    let statuses: Vec<i16> = batch.iter().map(|p| p.http_status).collect();
    sqlx::query_file!(
        "sql/callback/record_deliveries.sql",
        &ids as &[&str],
        &orders as &[Option<&str>],
        &events as &[Option<&str>],
        &outcomes as &[&str],
        &statuses,
    )
    .execute(db)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache() -> SeenCallbacks {
        SeenCallbacks::new(crate::infra::group_commit::no_database())
    }

    #[tokio::test]
    async fn a_remembered_id_is_found_with_its_body_and_outcome() {
        let seen = cache();
        assert_eq!(seen.get("cb_1"), None);
        seen.remember("cb_1", "abc", CallbackOutcome::Charged);
        assert_eq!(
            seen.get("cb_1"),
            Some(Seen {
                body_sha256: "abc".into(),
                outcome: CallbackOutcome::Charged
            })
        );
    }

    #[tokio::test]
    async fn memory_is_bounded_to_two_generations_keeping_the_newest() {
        let seen = cache();
        for i in 0..(3 * GENERATION) {
            seen.remember(&format!("cb_{i}"), "h", CallbackOutcome::Charged);
        }
        let kept = {
            let g = seen.seen.lock().expect("lock");
            g.current.len() + g.previous.len()
        };
        assert!(kept <= 2 * GENERATION, "{kept}");
        assert!(seen.get(&format!("cb_{}", 3 * GENERATION - 1)).is_some());
        assert!(
            seen.get(&format!("cb_{}", GENERATION - 1)).is_none(),
            "the oldest are forgotten"
        );
    }
}
