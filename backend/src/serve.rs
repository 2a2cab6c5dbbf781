//! The HTTP/1 serve loop: what `axum::serve` did, plus the limits it lacks.
//!
//! - **Header-read timeout.** A connection must deliver a complete request head
//!   within [`Limits::header_read_timeout`] of the moment the server starts
//!   waiting for one (the connection is accepted, or the previous response was
//!   sent), or it is closed without an answer. Slow-loris clients that open a
//!   connection and never finish their headers, and idle keep-alive
//!   connections, cannot hold a slot for longer than that.
//! - **Connection cap.** At most [`Limits::max_connections`] connections are
//!   served at once. When every slot is taken the loop stops calling `accept`:
//!   new connections wait in the kernel's accept backlog (and are refused by the
//!   kernel when that is full too) until a slot frees up. No connection is
//!   accepted only to be closed.
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

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::{Service, ServiceExt};

/// The limits one [`serve`] loop enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Time a connection has to deliver a complete request head.
    pub header_read_timeout: Duration,
    /// Connections served at once; more wait in the accept backlog.
    pub max_connections: usize,
    /// Longest wait for requests in flight once `shutdown` completed.
    pub shutdown_deadline: Duration,
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
        // Responses go out as soon as they are written, never held back by Nagle.
        let _ = stream.set_nodelay(true);

        let service = match ServiceExt::<SocketAddr>::ready(&mut make_service).await {
            Ok(ready) => match ready.call(peer).await {
                Ok(service) => service,
                Err(never) => match never {},
            },
            Err(never) => match never {},
        };
        let connection =
            builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                // Header timeouts, resets and malformed requests end up here.
                tracing::debug!(%peer, error = %err, "connection ended with an error");
            }
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
