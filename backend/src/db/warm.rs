//! Connections the hot paths' one statements give back to themselves,
//! skipping sqlx's ping on release: the callback's first statement, the pay's
//! attempt and hold, and each signed-in request's session load
//! ([`crate::http::auth::session::Sessions`]).
//!
//! sqlx (0.8) returns every pooled connection through a task that sends a bare
//! `Sync` and waits for `ReadyForQuery` before the connection is idle again: a
//! second round trip to PostgreSQL for every statement run on the pool, with no
//! switch to turn it off (`test_before_acquire(false)` only removes the one at
//! checkout). On the new-callback path it cost 5-10 % of the throughput
//! (docs/BENCHMARKS.md, "What each design choice bought").
//!
//! [`WarmConnections`] keeps the connections of those statements checked out
//! between them instead: a statement that completed (answered, or refused by
//! the database) leaves its connection in a small stash, and the next one takes
//! it from there before asking the pool. The statements take turns, first come
//! first served, and at most `max` hold a connection at once (the stash's
//! size), so a statement that waited for a connection is never overtaken by one
//! that arrived later and found the stash full (without the turns the p99 of
//! callbacks at 32 clients went from 16 to 140 ms). A turn lasts one statement,
//! never a transaction or a request, so no holder waits for a second one. A
//! connection that is not reused within [`WARM_FOR`] goes back to the pool
//! (with sqlx's ping), so the stash holds connections only while these paths
//! keep them busy, and the session store's writes, the transactions and the
//! workers always find the rest of the pool ([`WarmConnections::max_for_pool`]
//! leaves them four).
//!
//! What the ping was for still holds without it: a connection whose statement
//! failed in any way other than a refusal by the database ([`is_refusal`]) is
//! closed, a statement cut mid-way (a cancelled request) drops its connection
//! through sqlx as before, and `PgConnection` reads up to `ReadyForQuery`
//! before each statement it sends. A connection that died while stashed fails its next
//! statement: that callback answers 503 and the platform sends it again, as
//! with any dead pooled connection (the pool does not test at checkout either).

use sqlx::pool::PoolConnection;
use sqlx::{PgConnection, PgPool, Postgres};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long a stashed connection waits for the next callback before it goes
/// back to the pool.
pub const WARM_FOR: Duration = Duration::from_millis(20);

/// A stash of checked-out connections in front of the pool. Cheap to clone (shared).
#[derive(Clone)]
pub struct WarmConnections {
    pool: PgPool,
    inner: Arc<Inner>,
}

struct Inner {
    /// Most recently given back last; each with the time it was given back.
    stash: Mutex<Vec<(PoolConnection<Postgres>, Instant)>>,
    max: usize,
    /// One per connection this path may hold; waited for in arrival order, so
    /// a statement never overtakes one that waited longer (`None`: stash off).
    turns: Option<Arc<Semaphore>>,
    /// Wakes the sweeper when the stash stops being empty.
    filled: tokio::sync::Notify,
}

impl std::fmt::Debug for WarmConnections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarmConnections")
            .field("stashed", &self.stashed())
            .field("max", &self.inner.max)
            .finish_non_exhaustive()
    }
}

impl WarmConnections {
    /// A stash of at most `max` connections of `pool`, which is also the most
    /// this path holds at once (0 turns it off: connections come from the pool
    /// and go straight back to it).
    pub fn new(pool: PgPool, max: usize) -> Self {
        Self {
            pool,
            inner: Arc::new(Inner {
                stash: Mutex::new(Vec::with_capacity(max)),
                max,
                turns: (max > 0).then(|| Arc::new(Semaphore::new(max))),
                filled: tokio::sync::Notify::new(),
            }),
        }
    }

    /// The stash size for a pool of `pool_max` connections: all but four, so
    /// the session store and the workers always have connections of their own.
    pub fn max_for_pool(pool_max: u32) -> usize {
        usize::try_from(pool_max.saturating_sub(4)).unwrap_or(0)
    }

    /// Waits for this path's turn (first come, first served; no longer than
    /// the pool's acquire timeout), then takes the most recently stashed
    /// connection, or one from the pool.
    pub async fn acquire(&self) -> sqlx::Result<WarmConnection> {
        let turn = match &self.inner.turns {
            Some(turns) => Some(
                tokio::time::timeout(
                    self.pool.options().get_acquire_timeout(),
                    Arc::clone(turns).acquire_owned(),
                )
                .await
                .map_err(|_| sqlx::Error::PoolTimedOut)?
                .map_err(|_| sqlx::Error::PoolClosed)?,
            ),
            None => None,
        };
        let warm = self.lock().pop();
        let conn = match warm {
            Some((conn, _)) => conn,
            None => self.pool.acquire().await?,
        };
        Ok(WarmConnection { conn, _turn: turn })
    }

    /// Takes back the connection of a statement that completed with `outcome`:
    /// stashed after an answer or a refusal by the database ([`is_refusal`]),
    /// closed after anything else. (The stash is never full while it is on: the
    /// turns keep stashed plus held connections at most `max`; with `max` 0 every
    /// connection goes back to the pool here.)
    pub fn give_back<T>(&self, warm: WarmConnection, outcome: &sqlx::Result<T>) {
        // The turn ends when this returns: after the connection is stashed, so
        // the next in line finds it.
        let WarmConnection { mut conn, _turn } = warm;
        if let Err(err) = outcome
            && !is_refusal(err)
        {
            conn.close_on_drop();
            return;
        }
        let mut stash = self.lock();
        if stash.len() >= self.inner.max {
            drop(stash);
            drop(conn);
            return;
        }
        stash.push((conn, Instant::now()));
        let was_empty = stash.len() == 1;
        drop(stash);
        if was_empty {
            self.inner.filled.notify_one();
        }
    }

    /// Runs one statement on a connection of this stash ([`Self::acquire`]) and
    /// gives the connection back after it ([`Self::give_back`]).
    pub async fn run<T>(
        &self,
        statement: impl AsyncFnOnce(&mut PgConnection) -> sqlx::Result<T>,
    ) -> sqlx::Result<T> {
        let mut warm = self.acquire().await?;
        let outcome = statement(&mut warm).await;
        self.give_back(warm, &outcome);
        outcome
    }

    /// Connections stashed now.
    pub fn stashed(&self) -> usize {
        self.lock().len()
    }

    /// Gives the connections idle for [`WARM_FOR`] back to the pool, for as long
    /// as `stop` has not reached [`crate::infra::shutdown::Phase::Stopping`]; then all of them.
    pub async fn sweep(self, stop: crate::infra::shutdown::Shutdown) {
        let stopping = stop.reached(crate::infra::shutdown::Phase::Stopping);
        tokio::pin!(stopping);
        loop {
            let idle_for = self.give_back_idle();
            let wait = async {
                match idle_for {
                    // The oldest stashed connection is due then.
                    Some(left) => tokio::time::sleep(left).await,
                    None => self.inner.filled.notified().await,
                }
            };
            tokio::select! {
                () = &mut stopping => break,
                () = wait => {}
            }
        }
        let all = std::mem::take(&mut *self.lock());
        drop(all);
    }

    /// Drops the connections idle for [`WARM_FOR`] (sqlx gives them back to the
    /// pool); returns how long until the oldest remaining one is due, if any.
    fn give_back_idle(&self) -> Option<Duration> {
        let now = Instant::now();
        let mut stash = self.lock();
        let fresh_from = stash
            .iter()
            .position(|(_, at)| now.duration_since(*at) < WARM_FOR)
            .unwrap_or(stash.len());
        stash.drain(..fresh_from);
        stash
            .first()
            .map(|(_, at)| WARM_FOR.saturating_sub(now.duration_since(*at)))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(PoolConnection<Postgres>, Instant)>> {
        self.inner
            .stash
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A connection of [`WarmConnections`], held during this path's turn; give it
/// back with [`WarmConnections::give_back`]. Dropped instead (a cancelled
/// request), it goes back to the pool through sqlx, ping included.
pub struct WarmConnection {
    conn: PoolConnection<Postgres>,
    _turn: Option<OwnedSemaphorePermit>,
}

impl std::ops::Deref for WarmConnection {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        &self.conn
    }
}

impl std::ops::DerefMut for WarmConnection {
    fn deref_mut(&mut self) -> &mut PgConnection {
        &mut self.conn
    }
}

/// An error the database answered for one statement, leaving the connection
/// usable (a constraint, a raised exception): not an I/O or protocol failure,
/// and not a `FATAL` or `PANIC` report, which PostgreSQL sends as it ends the
/// session (e.g. `pg_terminate_backend`, a server shutdown).
pub fn is_refusal(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Database(db) => db
            .try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
            .is_some_and(|pg| {
                !matches!(
                    pg.severity(),
                    sqlx::postgres::PgSeverity::Fatal | sqlx::postgres::PgSeverity::Panic
                )
            }),
        _ => false,
    }
}
