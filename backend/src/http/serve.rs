//! The HTTP/1 serve loop: what `axum::serve` did, plus the limits it lacks.
//!
//! - **Header-read timeout.** A connection must deliver a complete request head
//!   within [`Limits::header_read_timeout`] of the moment the server starts
//!   waiting for one (the connection is accepted, or the previous response was
//!   sent), or it is closed without an answer. Slow-loris clients that open a
//!   connection and never finish their headers, and idle keep-alive
//!   connections, cannot hold a slot for longer than that.
//! - **Write-progress timeout.** A response write that makes no progress for
//!   [`Limits::write_stall_timeout`] (the client stopped reading: its receive
//!   window and our send buffer are full) ends the connection. A client that
//!   pipelines requests and never reads its answers cannot hold a slot, or
//!   megabytes of unsent answers, for longer than that.
//! - **Connection cap.** At most [`Limits::max_connections`] connections are
//!   served at once. When every slot is taken the loop stops calling `accept`:
//!   new connections wait in the kernel's accept backlog (and are refused by the
//!   kernel when that is full too) until a slot frees up.
//! - **Cap per client address.** One peer address holds at most
//!   [`Limits::max_connections_per_client`] of those slots; a connection beyond
//!   that is closed as soon as it is accepted (the address is only known then),
//!   so one client cannot take every slot. The load balancers of
//!   `TRUSTED_PROXIES` are exempt: every client behind them shares their address,
//!   and they enforce their own limits (docs/SECURITY.md).
//! - **Graceful shutdown with a deadline.** When `shutdown` completes, the
//!   listener is closed, idle connections are closed, and requests in flight
//!   run to completion before [`serve`] returns, for at most
//!   [`Limits::shutdown_deadline`]: connections still busy then are cut (axum's
//!   own graceful shutdown waits for ever).
//! - **Peer address.** Every request carries
//!   [`ConnectInfo<SocketAddr>`](axum::extract::ConnectInfo) in its extensions,
//!   exactly as `Router::into_make_service_with_connect_info::<SocketAddr>()`
//!   would put it there, so handlers and middleware can extract it.
//!
//! Only HTTP/1.1 (and 1.0) is spoken, as before: the backend sits behind a
//! reverse proxy or is called by the payment platform, both HTTP/1 clients.

use crate::http::extract::TrustedProxies;
use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::{Service, ServiceExt};

/// The limits one [`serve`] loop enforces.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Time a connection has to deliver a complete request head.
    pub header_read_timeout: Duration,
    /// Time a response write may make no progress before the connection ends.
    pub write_stall_timeout: Duration,
    /// Connections served at once; more wait in the accept backlog.
    pub max_connections: usize,
    /// Connections one peer address may hold at once; more are closed on accept.
    pub max_connections_per_client: usize,
    /// Peers exempt from the cap per client (the load balancers).
    pub trusted_proxies: TrustedProxies,
    /// Longest wait for requests in flight once `shutdown` completed.
    pub shutdown_deadline: Duration,
}

/// The connections each peer address holds now (addresses with none are removed).
#[derive(Clone, Default)]
struct PerClient(Arc<Mutex<HashMap<IpAddr, usize>>>);

/// One connection counted against its peer's cap, given back when dropped.
struct ClientSlot {
    counts: PerClient,
    ip: IpAddr,
}

impl PerClient {
    /// Counts a new connection from `ip`, or `None` when `ip` holds `cap` already.
    fn take(&self, ip: IpAddr, cap: usize) -> Option<ClientSlot> {
        let mut counts = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let held = counts.entry(ip).or_default();
        if *held >= cap {
            return None;
        }
        *held += 1;
        Some(ClientSlot {
            counts: self.clone(),
            ip,
        })
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut counts = self
            .counts
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(held) = counts.get_mut(&self.ip) {
            *held -= 1;
            if *held == 0 {
                counts.remove(&self.ip);
            }
        }
    }
}

/// Serves `router` on `listener` within `limits` until `shutdown` completes,
/// then finishes the requests in flight (within [`Limits::shutdown_deadline`]) and returns.
///
/// Accept errors are not fatal: a connection that failed before it was
/// accepted is skipped, and any other error (such as running out of file
/// descriptors) is logged and retried after a second, as `axum::serve` does.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let per_client = PerClient::default();
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    // Adds `ConnectInfo<SocketAddr>` to every request of a connection.
    let mut make_service = router.into_make_service_with_connect_info::<SocketAddr>();
    let mut shutdown = std::pin::pin!(shutdown);

    loop {
        // A slot first, then accept: a full server leaves new connections in the backlog.
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => slot,
            () = &mut shutdown => break,
        };
        let Ok(slot) = slot else {
            // The semaphore is never closed.
            break;
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    handle_accept_error(err).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let client_slot = if limits.trusted_proxies.trusts(peer.ip()) {
            None
        } else {
            match per_client.take(peer.ip().to_canonical(), limits.max_connections_per_client) {
                Some(slot) => Some(slot),
                None => {
                    tracing::debug!(%peer, cap = limits.max_connections_per_client,
                        "connection closed: the client holds as many connections as one may");
                    continue;
                }
            }
        };
        // Responses go out as soon as they are written, never held back by Nagle.
        let _ = stream.set_nodelay(true);
        let mut stream = tokio_io_timeout::TimeoutStream::new(stream);
        stream.set_write_timeout(Some(limits.write_stall_timeout));

        let service = match ServiceExt::<SocketAddr>::ready(&mut make_service).await {
            Ok(ready) => match ready.call(peer).await {
                Ok(service) => service,
                Err(never) => match never {},
            },
            Err(never) => match never {},
        };
        let connection = builder.serve_connection(
            TokioIo::new(Box::pin(stream)),
            TowerToHyperService::new(service),
        );
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                // Header timeouts, resets and malformed requests end up here.
                tracing::debug!(%peer, error = %err, "connection ended with an error");
            }
            drop(client_slot);
            drop(slot);
        });
    }

    drop(listener);
    let open = graceful.count();
    tracing::info!(
        connections = open,
        deadline_secs = limits.shutdown_deadline.as_secs_f64(),
        "listener closed; finishing requests in flight"
    );
    if tokio::time::timeout(limits.shutdown_deadline, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            deadline_secs = limits.shutdown_deadline.as_secs_f64(),
            "requests still in flight at the deadline were cut"
        );
    }
    Ok(())
}

async fn handle_accept_error(err: io::Error) {
    if matches!(
        err.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %err, "accept failed; retrying in a second");
    tokio::time::sleep(Duration::from_secs(1)).await;
}
