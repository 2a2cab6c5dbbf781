//! Group commit: small writes whose callers each wait until their row is
//! committed share one statement and one commit.
//!
//! A [`GroupCommit`] hands each row to a writer task. With a free slot (of
//! `writers`), the writer takes the first row waiting and every other row
//! already waiting (up to `batch_max`), writes them with one call of its
//! `write` function (one statement: `INSERT ... SELECT FROM UNNEST`, `UPDATE
//! ... FROM UNNEST`) and tells every waiter how it went. Rows arriving while
//! every slot is busy wait together for the next batch, and batches in flight
//! at once share PostgreSQL's own group commit. Alone, a row costs what it
//! would have cost written by itself (one statement); under load the database
//! sees about one commit per batch instead of one per row.
//!
//! A writer whose callers need not hear back at once (the hand-over record,
//! written after the shopper has the answer) may also *linger*: once the first
//! row of a batch arrives it waits up to `linger` for more (or until
//! `batch_max` are waiting) before writing. Each statement costs PostgreSQL a
//! parse, a plan and a commit whatever its size, so fewer, larger batches cost
//! less per row; a caller waits at most `linger` longer.
//!
//! A failed batch fails every row in it: each waiter gets the error, as if its
//! own statement had failed.

use sqlx::PgPool;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// One row waiting for the writer, and who to tell.
struct Waiting<T> {
    row: T,
    done: oneshot::Sender<Result<(), String>>,
}

/// The writer of one kind of row. Cheap to clone (shared); the writer task
/// ends when the last clone is dropped.
pub struct GroupCommit<T> {
    what: &'static str,
    sender: mpsc::Sender<Waiting<T>>,
}

impl<T> Clone for GroupCommit<T> {
    fn clone(&self) -> Self {
        Self {
            what: self.what,
            sender: self.sender.clone(),
        }
    }
}

impl<T> std::fmt::Debug for GroupCommit<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit")
            .field("what", &self.what)
            .finish_non_exhaustive()
    }
}

/// Why a row was not written.
#[derive(Debug, thiserror::Error)]
pub enum GroupCommitError {
    /// The statement of the row's batch failed (the database's message).
    #[error("{what}: {message}")]
    Failed {
        /// What was being written.
        what: &'static str,
        /// The database's error.
        message: String,
    },
    /// The writer task is gone (the process is stopping).
    #[error("{what}: the writer stopped")]
    Stopped {
        /// What was being written.
        what: &'static str,
    },
}

impl<T: Send + 'static> GroupCommit<T> {
    /// Starts the writer of `what` on `db`: batches of at most `batch_max`
    /// rows, at most `writers` of them at once, each gathered for up to
    /// `linger` after its first row (`Duration::ZERO`: only the rows already
    /// waiting) and written by `write`.
    pub fn start<W, F>(
        what: &'static str,
        db: PgPool,
        batch_max: usize,
        writers: usize,
        linger: Duration,
        write: W,
    ) -> Self
    where
        W: Fn(PgPool, Vec<T>) -> F + Send + Sync + 'static,
        F: Future<Output = sqlx::Result<()>> + Send + 'static,
    {
        let (sender, rows) = mpsc::channel(4 * batch_max);
        let batching = Batching {
            max: batch_max,
            writers,
            linger,
        };
        tokio::spawn(write_batches(what, db, rows, batching, write));
        Self { what, sender }
    }

    /// Writes `row` and returns once it is committed, sharing the statement
    /// and the commit with every row waiting at the same time.
    pub async fn write(&self, row: T) -> Result<(), GroupCommitError> {
        let what = self.what;
        let (done, answer) = oneshot::channel();
        self.sender
            .send(Waiting { row, done })
            .await
            .map_err(|_| GroupCommitError::Stopped { what })?;
        match answer
            .await
            .map_err(|_| GroupCommitError::Stopped { what })?
        {
            Ok(()) => Ok(()),
            Err(message) => Err(GroupCommitError::Failed { what, message }),
        }
    }
}

/// How a writer gathers its batches (see [`GroupCommit::start`]).
#[derive(Clone, Copy)]
struct Batching {
    max: usize,
    writers: usize,
    linger: Duration,
}

/// Waits for the first row, then gathers more into `batch` until it holds
/// `batching.max` rows or `batching.linger` has passed. Returns false when
/// every sender is gone and nothing is left.
async fn gather<T>(
    rows: &mut mpsc::Receiver<Waiting<T>>,
    batch: &mut Vec<Waiting<T>>,
    batching: Batching,
) -> bool {
    if rows.recv_many(batch, batching.max).await == 0 {
        return false;
    }
    if batching.linger.is_zero() {
        return true;
    }
    let deadline = tokio::time::Instant::now() + batching.linger;
    while batch.len() < batching.max {
        let room = batching.max - batch.len();
        match tokio::time::timeout_at(deadline, rows.recv_many(batch, room)).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    true
}

async fn write_batches<T, W, F>(
    what: &'static str,
    db: PgPool,
    mut rows: mpsc::Receiver<Waiting<T>>,
    batching: Batching,
    write: W,
) where
    T: Send + 'static,
    W: Fn(PgPool, Vec<T>) -> F + Send + Sync + 'static,
    F: Future<Output = sqlx::Result<()>> + Send + 'static,
{
    let slots = Arc::new(tokio::sync::Semaphore::new(batching.writers.max(1)));
    loop {
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        let mut batch = Vec::with_capacity(batching.max);
        if !gather(&mut rows, &mut batch, batching).await {
            return;
        }
        let (rows_of_batch, waiters): (Vec<T>, Vec<_>) =
            batch.into_iter().map(|w| (w.row, w.done)).unzip();
        let count = rows_of_batch.len();
        let written = write(db.clone(), rows_of_batch);
        tokio::spawn(async move {
            let result = written.await.map_err(|err| err.to_string());
            if let Err(err) = &result {
                tracing::warn!(error = %err, rows = count, "group commit of {what} failed");
            }
            for done in waiters {
                // A waiter that went away (its request was cut) needs no answer.
                let _ = done.send(result.clone());
            }
            drop(slot);
        });
    }
}

/// A pool that never connects, for unit tests of writers whose rows never
/// reach a database.
#[cfg(test)]
pub(crate) fn no_database() -> PgPool {
    sqlx::postgres::PgPoolOptions::new()
        .connect_lazy("postgres://nobody@127.0.0.1:1/none")
        .expect("lazy pool")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[tokio::test]
    async fn rows_waiting_together_share_one_write_and_each_waiter_hears_of_it() {
        let batches = Arc::new(Mutex::new(Vec::<Vec<u32>>::new()));
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let writer = GroupCommit::start("numbers", no_database(), 64, 1, Duration::ZERO, {
            let (batches, gate) = (Arc::clone(&batches), Arc::clone(&gate));
            move |_db, rows: Vec<u32>| {
                let (batches, gate) = (Arc::clone(&batches), Arc::clone(&gate));
                async move {
                    // The first batch waits for the gate, so the rest pile up.
                    gate.acquire().await.expect("gate").forget();
                    batches.lock().expect("lock").push(rows);
                    Ok(())
                }
            }
        });
        let first = tokio::spawn({
            let writer = writer.clone();
            async move { writer.write(0).await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let rest: Vec<_> = (1..=20)
            .map(|n| {
                let writer = writer.clone();
                tokio::spawn(async move { writer.write(n).await })
            })
            .collect();
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        gate.add_permits(2);
        first.await.expect("join").expect("first row written");
        for row in rest {
            row.await.expect("join").expect("row written");
        }
        let batches = batches.lock().expect("lock").clone();
        assert_eq!(batches.len(), 2, "{batches:?}");
        assert_eq!(batches[0], [0]);
        let mut second = batches[1].clone();
        second.sort_unstable();
        assert_eq!(second, (1..=20).collect::<Vec<u32>>());
    }

    /// The rows of each batch a writer was given, in order.
    type Batches = Arc<Mutex<Vec<Vec<u32>>>>;

    /// A writer that records the rows of each batch it is given.
    fn recording(batch_max: usize, linger: Duration) -> (GroupCommit<u32>, Batches) {
        let batches = Arc::new(Mutex::new(Vec::<Vec<u32>>::new()));
        let writer = GroupCommit::start("numbers", no_database(), batch_max, 1, linger, {
            let batches = Arc::clone(&batches);
            move |_db, rows: Vec<u32>| {
                let batches = Arc::clone(&batches);
                async move {
                    batches.lock().expect("lock").push(rows);
                    Ok(())
                }
            }
        });
        (writer, batches)
    }

    /// Writes 0, then 1 to 3 `gap` later, each from a task of its own, and
    /// answers how long until every row was written.
    async fn write_spaced(writer: &GroupCommit<u32>, gap: Duration) -> Duration {
        let started = std::time::Instant::now();
        let mut rows = Vec::new();
        for n in 0..=3 {
            let writer = writer.clone();
            rows.push(tokio::spawn(async move {
                writer.write(n).await.expect("row written");
            }));
            if n == 0 {
                tokio::time::sleep(gap).await;
            }
        }
        for row in rows {
            row.await.expect("join");
        }
        started.elapsed()
    }

    /// The batches written, each sorted.
    fn sorted(batches: &Batches) -> Vec<Vec<u32>> {
        let mut batches = batches.lock().expect("lock").clone();
        batches.iter_mut().for_each(|batch| batch.sort_unstable());
        batches
    }

    #[tokio::test]
    async fn a_lingering_writer_gathers_rows_that_arrive_after_the_first() {
        let (writer, batches) = recording(64, Duration::from_millis(300));
        let waited = write_spaced(&writer, Duration::from_millis(30)).await;
        assert_eq!(sorted(&batches), [[0, 1, 2, 3]]);
        // Written once the linger was up, not before and not long after.
        assert!(waited >= Duration::from_millis(300), "{waited:?}");
        assert!(waited < Duration::from_secs(2), "{waited:?}");

        // Without lingering, the first row goes alone.
        let (writer, batches) = recording(64, Duration::ZERO);
        write_spaced(&writer, Duration::from_millis(30)).await;
        let batches = sorted(&batches);
        assert_eq!(
            batches.first().map(Vec::as_slice),
            Some(&[0][..]),
            "{batches:?}"
        );
        assert_eq!(batches.concat().len(), 4, "{batches:?}");
    }

    #[tokio::test]
    async fn a_lingering_writer_writes_a_full_batch_at_once() {
        let (writer, batches) = recording(4, Duration::from_secs(30));
        let waited = write_spaced(&writer, Duration::from_millis(10)).await;
        assert!(
            waited < Duration::from_secs(5),
            "a full batch waited out the linger: {waited:?}"
        );
        assert_eq!(sorted(&batches), [[0, 1, 2, 3]]);
    }

    #[tokio::test]
    async fn a_failed_write_fails_every_row_of_its_batch() {
        let writer = GroupCommit::start(
            "numbers",
            no_database(),
            8,
            2,
            Duration::ZERO,
            |_db, _rows: Vec<u32>| async { Err(sqlx::Error::Protocol("refused".into())) },
        );
        let err = writer.write(7).await.expect_err("the batch failed");
        assert!(err.to_string().contains("refused"), "{err}");
        assert!(err.to_string().starts_with("numbers"), "{err}");
    }
}
