//! Readiness and drain: what an instance does between SIGTERM and its exit.
//!
//! ```text
//!  SIGTERM ─> Draining: /readyz answers 503 (the balancer takes the instance out),
//!             workers finish their round and claim no new rows,
//!             requests are still served for DRAIN_SECS
//!  (a second SIGTERM or SIGINT cuts DRAIN_SECS short)
//!         ─> Stopping: the listener closes; requests in flight finish, for at
//!             most DRAIN_DEADLINE_SECS; idle connections are closed
//!         ─> exit 0
//! ```
//!
//! The order matters behind a load balancer: the instance keeps accepting
//! while the balancer's health checks notice the 503, so no request is sent to
//! a closed port; by the time the listener closes, nothing new arrives.
//! `/healthz` stays the liveness check: a draining instance is alive.

use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Interval;

/// Where an instance is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Ready: serving and claiming work.
    Serving,
    /// SIGTERM arrived: still serving, not ready, workers stopped claiming.
    Draining,
    /// The listener is closed; requests in flight finish.
    Stopping,
}

/// A shared handle on the instance's [`Phase`]; clones see the same phase.
#[derive(Debug, Clone)]
pub struct Shutdown {
    phase: Arc<watch::Sender<Phase>>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Self::new()
    }
}

impl Shutdown {
    /// A handle in [`Phase::Serving`].
    pub fn new() -> Self {
        Self {
            phase: Arc::new(watch::Sender::new(Phase::Serving)),
        }
    }

    /// The phase now.
    pub fn phase(&self) -> Phase {
        *self.phase.borrow()
    }

    /// True from the first signal on: `/readyz` answers 503.
    pub fn is_draining(&self) -> bool {
        self.phase() >= Phase::Draining
    }

    /// Moves forward to `phase` (never back); true when this call moved it.
    pub fn advance(&self, phase: Phase) -> bool {
        self.phase.send_if_modified(|now| {
            if *now < phase {
                *now = phase;
                true
            } else {
                false
            }
        })
    }

    /// Waits until the phase is `phase` or later.
    pub async fn reached(&self, phase: Phase) {
        let mut seen = self.phase.subscribe();
        // The sender lives as long as `self`, so this cannot fail.
        let _ = seen.wait_for(|now| *now >= phase).await;
    }

    /// A worker's tick: waits for `interval`'s next tick and answers true, or
    /// answers false as soon as the instance drains (the worker then returns,
    /// having finished its last round, and claims no new rows).
    pub async fn tick(&self, interval: &mut Interval) -> bool {
        if self.is_draining() {
            return false;
        }
        tokio::select! {
            biased;
            () = self.reached(Phase::Draining) => false,
            _ = interval.tick() => true,
        }
    }

    /// Sleeps `duration`, or less when the instance drains; false when cut short.
    pub async fn sleep(&self, duration: Duration) -> bool {
        tokio::select! {
            biased;
            () = self.reached(Phase::Draining) => false,
            () = tokio::time::sleep(duration) => true,
        }
    }
}

/// The timing of a drain (`DRAIN_SECS`, `DRAIN_DEADLINE_SECS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrainTiming {
    /// From the first signal to the listener closing: long enough for the
    /// balancer's health checks to take the instance out.
    pub drain: Duration,
    /// From the listener closing to the exit at the latest: requests and
    /// worker rounds still running then are cut.
    pub deadline: Duration,
}

/// Follows SIGTERM and SIGINT for the life of the process: the first moves
/// `shutdown` to [`Phase::Draining`], the next one to [`Phase::Stopping`] at once.
pub async fn follow_signals(shutdown: Shutdown) {
    loop {
        termination_signal().await;
        if shutdown.advance(Phase::Draining) {
            tracing::info!(
                "draining: /readyz answers 503, workers claim no new rows, requests are still served"
            );
        } else if shutdown.advance(Phase::Stopping) {
            tracing::info!("second signal: closing the listener now");
        }
    }
}

/// Moves to [`Phase::Stopping`] `drain` after the drain began (or earlier, on
/// a second signal); returns once the phase is [`Phase::Stopping`]: the serve
/// loop's signal to close its listener.
pub async fn stop_after_drain(shutdown: Shutdown, drain: Duration) {
    shutdown.reached(Phase::Draining).await;
    tracing::info!(
        drain_secs = drain.as_secs_f64(),
        "the listener closes after DRAIN_SECS"
    );
    tokio::select! {
        () = tokio::time::sleep(drain) => {
            shutdown.advance(Phase::Stopping);
        }
        () = shutdown.reached(Phase::Stopping) => {}
    }
}

async fn termination_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => {},
            _ = int.recv() => {},
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_phase_only_moves_forward() {
        let shutdown = Shutdown::new();
        assert!(!shutdown.is_draining());
        assert!(shutdown.advance(Phase::Draining));
        assert!(!shutdown.advance(Phase::Draining));
        assert!(shutdown.advance(Phase::Stopping));
        assert!(!shutdown.advance(Phase::Draining));
        assert_eq!(shutdown.phase(), Phase::Stopping);
        assert!(shutdown.is_draining());
    }

    #[tokio::test]
    async fn a_worker_tick_ends_when_the_drain_begins() {
        let shutdown = Shutdown::new();
        let mut interval = tokio::time::interval(Duration::from_secs(60));
        assert!(
            shutdown.tick(&mut interval).await,
            "the first tick is at once"
        );
        let waiting = tokio::spawn({
            let shutdown = shutdown.clone();
            async move { shutdown.tick(&mut interval).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        shutdown.advance(Phase::Draining);
        let ended = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("the tick ends at the drain, not a minute later");
        assert!(!ended.expect("the tick task"));
    }

    #[tokio::test]
    async fn the_listener_closes_drain_after_the_signal_or_at_a_second_one() {
        let drain = Duration::from_millis(300);
        let shutdown = Shutdown::new();
        let stopper = tokio::spawn(stop_after_drain(shutdown.clone(), drain));
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(shutdown.phase(), Phase::Serving, "nothing before a signal");
        let began = std::time::Instant::now();
        shutdown.advance(Phase::Draining);
        shutdown.reached(Phase::Stopping).await;
        assert!(
            began.elapsed() >= drain,
            "stopped after {:?}",
            began.elapsed()
        );
        stopper.await.expect("stopper");

        let hurried = Shutdown::new();
        let stopper = tokio::spawn(stop_after_drain(hurried.clone(), Duration::from_secs(600)));
        hurried.advance(Phase::Draining);
        tokio::time::sleep(Duration::from_millis(50)).await;
        hurried.advance(Phase::Stopping);
        tokio::time::timeout(Duration::from_secs(5), stopper)
            .await
            .expect("a second signal ends the wait")
            .expect("stopper");
    }
}
