//! The serve loop's limits, over real TCP: connections that never finish their
//! headers are closed after the header-read timeout, a client that never reads
//! its answers is cut after the write-progress timeout, the connection cap
//! makes new connections wait instead of piling up, one address cannot hold
//! more than its share, shutdown finishes requests in flight, and every
//! request carries its peer address as `ConnectInfo`.

use crate::helpers::spawn_app;
use axum::Router;
use axum::extract::ConnectInfo;
use axum::routing::get;
use backend::http::extract::TrustedProxies;
use backend::http::serve::{Limits, serve};
use backend::startup::HEADER_READ_TIMEOUT;
use futures::future::join_all;
use reqwest::StatusCode;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The start of a request head that never ends.
const UNFINISHED_HEAD: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n";

/// Reads until the server closes the stream (EOF or an error such as a reset);
/// `None` if it is still open at `deadline`. Returns what was read before.
async fn read_until_closed(stream: &mut TcpStream, deadline: Instant) -> Option<Vec<u8>> {
    let mut received = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0) | Err(_)) => return Some(received),
            Ok(Ok(n)) => received.extend_from_slice(&buf[..n]),
        }
    }
}

/// One request over a fresh connection (no pooled connection to race a close).
async fn healthz(address: &str) -> StatusCode {
    reqwest::Client::new()
        .get(format!("{address}/healthz"))
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .expect("a normal request is answered")
        .status()
}

#[tokio::test]
async fn connections_that_never_finish_their_headers_are_closed_after_the_header_read_timeout() {
    let app = spawn_app().await;
    let addr = app.address.trim_start_matches("http://").to_owned();
    let opened = Instant::now();
    let mut streams = Vec::new();
    for i in 0..20 {
        let mut stream = TcpStream::connect(&addr).await.expect("connects");
        // Most send half a head; some send nothing at all.
        if i % 4 != 0 {
            stream.write_all(UNFINISHED_HEAD).await.expect("writes");
        }
        streams.push(stream);
    }

    // Normal requests are answered all the while.
    let (stop_tx, mut stop_rx) = oneshot::channel::<()>();
    let address = app.address.clone();
    let meanwhile: JoinHandle<u32> = tokio::spawn(async move {
        let mut answered = 0;
        loop {
            assert_eq!(healthz(&address).await, StatusCode::OK);
            answered += 1;
            tokio::select! {
                _ = &mut stop_rx => return answered,
                () = tokio::time::sleep(Duration::from_millis(500)) => {}
            }
        }
    });

    let deadline = opened + HEADER_READ_TIMEOUT + Duration::from_secs(3);
    let closed = join_all(
        streams
            .iter_mut()
            .map(|stream| read_until_closed(stream, deadline)),
    )
    .await;
    let elapsed = opened.elapsed();

    for (i, received) in closed.iter().enumerate() {
        let received = received
            .as_ref()
            .unwrap_or_else(|| panic!("connection {i} still open after {elapsed:?}"));
        assert!(
            received.is_empty(),
            "connection {i} got an answer to an unfinished head: {:?}",
            String::from_utf8_lossy(received)
        );
    }
    assert!(
        elapsed >= HEADER_READ_TIMEOUT,
        "closed after {elapsed:?}, before the timeout"
    );
    let _ = stop_tx.send(());
    let answered = meanwhile.await.expect("requests meanwhile all succeeded");
    assert!(
        answered >= 10,
        "only {answered} requests answered meanwhile"
    );
    assert_eq!(healthz(&app.address).await, StatusCode::OK, "and after");
}

/// Starts [`serve`] on a fresh port with `router`; returns its address, the
/// shutdown trigger and the serve task.
async fn start(
    router: Router,
    limits: Limits,
) -> (
    SocketAddr,
    oneshot::Sender<()>,
    JoinHandle<std::io::Result<()>>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
    let addr = listener.local_addr().expect("bound");
    let (shutdown_tx, shutdown_rx) = oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, router, limits, async {
        let _ = shutdown_rx.await;
    }));
    (addr, shutdown_tx, server)
}

/// Limits no test reaches unless it lowers one.
fn relaxed() -> Limits {
    Limits {
        header_read_timeout: Duration::from_secs(60),
        write_stall_timeout: Duration::from_secs(60),
        max_connections: 64,
        max_connections_per_client: 64,
        trusted_proxies: TrustedProxies::default(),
        shutdown_deadline: Duration::from_secs(30),
    }
}

/// Like [`raw_get`], but a connection the server closes unanswered (or
/// resets) reads as an empty answer instead of failing the test.
async fn raw_get_or_closed(stream: &mut TcpStream, path: &str) -> String {
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).await.is_err() {
        return String::new();
    }
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    String::from_utf8_lossy(&answer).into_owned()
}

/// Sends one complete `GET path` that closes the connection; returns the whole answer.
async fn raw_get(stream: &mut TcpStream, path: &str) -> String {
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("writes");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.expect("reads");
    String::from_utf8(answer).expect("text answer")
}

#[tokio::test]
async fn every_request_carries_the_peer_address_as_connect_info() {
    let router = Router::new().route(
        "/peer",
        get(|ConnectInfo(peer): ConnectInfo<SocketAddr>| async move { format!("peer={peer}") }),
    );
    let (addr, _shutdown, _server) = start(router, relaxed()).await;

    for _ in 0..3 {
        let mut stream = TcpStream::connect(addr).await.expect("connects");
        let local = stream.local_addr().expect("local address");
        let answer = raw_get(&mut stream, "/peer").await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with(&format!("peer={local}")), "{answer}");
    }
}

#[tokio::test]
async fn when_every_connection_slot_is_taken_a_new_connection_waits_until_one_frees() {
    let router = Router::new().route("/", get(|| async { "served" }));
    let limits = Limits {
        max_connections: 2,
        ..relaxed()
    };
    let (addr, _shutdown, _server) = start(router, limits).await;
    let first = TcpStream::connect(addr).await.expect("connects");
    let _second = TcpStream::connect(addr).await.expect("connects");

    // The kernel completes the handshake, but the server does not accept it yet.
    let mut third = TcpStream::connect(addr).await.expect("connects");
    third
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .expect("writes");
    let mut buf = [0u8; 256];
    let early = tokio::time::timeout(Duration::from_millis(700), third.read(&mut buf)).await;
    assert!(
        early.is_err(),
        "answered while both slots were taken: {early:?}"
    );

    drop(first);
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), third.read_to_end(&mut answer))
        .await
        .expect("answered once a slot freed")
        .expect("reads");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("served"), "{answer}");
}

#[tokio::test]
async fn shutdown_finishes_requests_in_flight_then_stops_accepting() {
    let router = Router::new().route(
        "/slow",
        get(|| async {
            tokio::time::sleep(Duration::from_millis(600)).await;
            "finished"
        }),
    );
    let (addr, shutdown, server) = start(router, relaxed()).await;
    // An idle connection must not hold the shutdown up.
    let mut idle = TcpStream::connect(addr).await.expect("connects");
    let in_flight = tokio::spawn(async move {
        let mut stream = TcpStream::connect(addr).await.expect("connects");
        raw_get(&mut stream, "/slow").await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;

    shutdown.send(()).expect("server still running");

    let answer = in_flight.await.expect("request task");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("finished"), "{answer}");
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("serve returns once the request finished")
        .expect("serve task")
        .expect("serve ends without error");
    assert!(
        read_until_closed(&mut idle, Instant::now() + Duration::from_secs(1))
            .await
            .is_some(),
        "the idle connection is closed"
    );
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "no longer listening"
    );
}

#[tokio::test]
async fn shutdown_cuts_requests_still_in_flight_at_the_deadline() {
    let router = Router::new().route(
        "/stuck",
        get(|| async {
            tokio::time::sleep(Duration::from_secs(600)).await;
            "never"
        }),
    );
    let limits = Limits {
        shutdown_deadline: Duration::from_millis(500),
        ..relaxed()
    };
    let (addr, shutdown, server) = start(router, limits).await;
    let in_flight = tokio::spawn(async move {
        let mut stream = TcpStream::connect(addr).await.expect("connects");
        raw_get(&mut stream, "/stuck").await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;

    let started = Instant::now();
    shutdown.send(()).expect("server still running");
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("serve returns at the deadline, not when the request ends")
        .expect("serve task")
        .expect("serve ends without error");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(450) && took < Duration::from_secs(3),
        "returned after {took:?}"
    );
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "no longer listening"
    );
    in_flight.abort();
}

/// A response body far larger than a socket's buffers can hold.
const LARGE_BODY_BYTES: usize = 4 * 1024 * 1024;

#[tokio::test]
async fn a_client_that_never_reads_its_answers_is_cut_after_the_write_progress_timeout() {
    let router = Router::new().route("/big", get(|| async { vec![b'x'; LARGE_BODY_BYTES] }));
    let limits = Limits {
        write_stall_timeout: Duration::from_secs(2),
        ..relaxed()
    };
    let (addr, _shutdown, _server) = start(router, limits).await;
    // A 4 KB receive window, 40 pipelined requests, nothing read.
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .set_recv_buffer_size(4096)
        .expect("small receive buffer");
    let mut stream = socket.connect(addr).await.expect("connects");
    let pipelined = "GET /big HTTP/1.1\r\nHost: x\r\n\r\n".repeat(40);
    stream
        .write_all(pipelined.as_bytes())
        .await
        .expect("writes");
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(4)).await;

    // Now read: what the server sent before it gave up, then the close.
    let mut sink = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut sink)).await;
    let elapsed = started.elapsed();
    assert!(
        read.is_ok(),
        "the connection was still open {elapsed:?} after the client stopped reading"
    );
    assert!(
        sink.len() < 2 * LARGE_BODY_BYTES,
        "{} bytes sent: the server kept writing to a client that did not read",
        sink.len()
    );
    // The server still serves everyone else.
    let mut other = TcpStream::connect(addr).await.expect("connects");
    let answer = raw_get(&mut other, "/big").await;
    assert!(
        answer.starts_with("HTTP/1.1 200"),
        "{}",
        &answer[..answer.len().min(200)]
    );
}

#[tokio::test]
async fn a_client_that_reads_slowly_but_steadily_is_not_cut() {
    let router = Router::new().route("/big", get(|| async { vec![b'x'; LARGE_BODY_BYTES / 4] }));
    let limits = Limits {
        write_stall_timeout: Duration::from_secs(2),
        ..relaxed()
    };
    let (addr, _shutdown, _server) = start(router, limits).await;
    let mut stream = TcpStream::connect(addr).await.expect("connects");
    stream
        .write_all(b"GET /big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .expect("writes");
    // Progress every second, always under the stall timeout; the whole
    // answer takes longer than the timeout.
    let mut received = Vec::new();
    let mut buf = vec![0u8; 256 * 1024];
    let started = Instant::now();
    loop {
        let n = stream.read(&mut buf).await.expect("reads");
        if n == 0 {
            break;
        }
        received.extend_from_slice(&buf[..n]);
        tokio::time::sleep(Duration::from_millis(600)).await;
    }
    assert!(
        started.elapsed() > Duration::from_secs(2),
        "the answer came too fast to test anything"
    );
    let body_at = received
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head")
        + 4;
    assert_eq!(
        received.len() - body_at,
        LARGE_BODY_BYTES / 4,
        "the whole answer arrived"
    );
}

#[tokio::test]
async fn one_address_cannot_hold_more_than_its_share_of_the_connections() {
    let router = Router::new().route("/", get(|| async { "served" }));
    let limits = Limits {
        max_connections_per_client: 3,
        ..relaxed()
    };
    let (addr, _shutdown, _server) = start(router.clone(), limits.clone()).await;
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut stream = TcpStream::connect(addr).await.expect("connects");
        stream.write_all(UNFINISHED_HEAD).await.expect("writes");
        held.push(stream);
    }
    // Let the server accept and count them.
    tokio::time::sleep(Duration::from_millis(200)).await;

    // The fourth is closed without an answer.
    let mut fourth = TcpStream::connect(addr).await.expect("connects");
    let _ = fourth
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await;
    let closed = read_until_closed(&mut fourth, Instant::now() + Duration::from_secs(5)).await;
    assert_eq!(
        closed,
        Some(Vec::new()),
        "a fourth connection from one address was served"
    );

    // One of the three closes: once the server has seen it go, a new one is
    // served again.
    drop(held.pop());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut again = TcpStream::connect(addr).await.expect("connects");
        if raw_get_or_closed(&mut again, "/").await.ends_with("served") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no place freed after one of the three connections closed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // A trusted load balancer carries many clients on one address: not capped.
    let trusted = Limits {
        trusted_proxies: TrustedProxies::new(&["127.0.0.1".parse().expect("an address")]),
        ..limits
    };
    let (addr, _shutdown, _server) = start(router, trusted).await;
    let mut streams = Vec::new();
    for _ in 0..5 {
        let mut stream = TcpStream::connect(addr).await.expect("connects");
        stream.write_all(UNFINISHED_HEAD).await.expect("writes");
        streams.push(stream);
    }
    let mut sixth = TcpStream::connect(addr).await.expect("connects");
    assert!(raw_get(&mut sixth, "/").await.ends_with("served"));
}
