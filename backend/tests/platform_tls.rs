//! The connectors reach their platforms over HTTPS, verifying the platform's
//! certificate: the real WeChat Pay and Alipay APIs (their default URLs) and a
//! `PLATFORM=remote` platform behind TLS are `https://` URLs.
//!
//! The trusted case runs in a child process of this test binary, with
//! `SSL_CERT_FILE` (where the connectors' HTTP client reads the system's root
//! certificates, besides the roots it carries) naming the test's authority:
//! as an operator would set it, and without changing this process's
//! environment under the other tests.

use api_types::{
    Currency,
    platform::{CreatePayment, PaymentState, PaymentStatus},
};
use backend::platform::{CloseAnswer, PaymentRef, Platform};
use platform_sim::{SimConfig, Simulator};
use std::{process::Command, sync::Arc, time::Duration};
use tokio::net::TcpListener;
use tokio_rustls::{TlsAcceptor, rustls};
use uuid::Uuid;

/// A certificate for `localhost`, signed by nobody a client trusts.
struct TestCertificate {
    cert_pem: String,
    acceptor: TlsAcceptor,
}

fn certificate_for_localhost() -> TestCertificate {
    let rcgen::CertifiedKey { cert, signing_key } =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
            .expect("a self-signed certificate");
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(signing_key.serialize_der().into());
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], key)
        .expect("a server certificate");
    TestCertificate {
        cert_pem: cert.pem(),
        acceptor: TlsAcceptor::from(Arc::new(config)),
    }
}

/// Serves the simulator's API over TLS only; returns its `https://` base URL.
async fn serve_over_tls(simulator: &Simulator, acceptor: TlsAcceptor) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("address").port();
    let service = hyper_util::service::TowerToHyperService::new(simulator.router());
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let (acceptor, service) = (acceptor.clone(), service.clone());
            tokio::spawn(async move {
                // A client that refuses the certificate ends the handshake here.
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    format!("https://localhost:{port}")
}

/// A payment the platform holds (undecided for an hour), as the checkout names
/// it, and the platform's id for it.
async fn payment_at(simulator: &Simulator) -> (String, Uuid, String) {
    let (order_no, payment_id) = (
        format!("ORD-TLS-{}", Uuid::new_v4().simple()),
        Uuid::new_v4(),
    );
    let (created, _) = simulator
        .create_payment(
            &Uuid::new_v4().to_string(),
            CreatePayment {
                order_no: order_no.clone(),
                amount_cents: 2_500,
                currency: Currency::EUR,
                notify_url: "http://127.0.0.1:9/api/payments/callback".into(),
                merchant_reference: Some(payment_id.to_string()),
            },
        )
        .await
        .expect("the platform takes the payment");
    (order_no, payment_id, created.payment_id)
}

/// Set in the child process: the platform's base URL, the order and payment
/// to ask about (`base url|order no|payment id`).
const CHILD_CASE: &str = "CHECKOUT_TEST_TLS_PLATFORM";
const TEST_NAME: &str =
    "connectors_speak_tls_to_the_platform_and_refuse_a_certificate_nobody_vouches_for";

#[tokio::test]
async fn connectors_speak_tls_to_the_platform_and_refuse_a_certificate_nobody_vouches_for() {
    if let Ok(case) = std::env::var(CHILD_CASE) {
        return query_and_close_over_tls_trusting_ssl_cert_file(&case).await;
    }
    let simulator = Simulator::new(SimConfig {
        processing_delay: Duration::from_secs(3600),
        ..SimConfig::default()
    });
    let certificate = certificate_for_localhost();
    let base_url = serve_over_tls(&simulator, certificate.acceptor.clone()).await;
    let (order_no, payment_id, platform_payment_id) = payment_at(&simulator).await;

    // Nobody the client trusts signed the certificate: no answer, and the
    // request never reached the platform.
    let untrusted = Platform::remote(&base_url, "http://127.0.0.1:9".into()).expect("connector");
    let payment = PaymentRef {
        order_no: &order_no,
        payment_id,
    };
    let refused = untrusted
        .query(payment)
        .await
        .expect_err("an unverified certificate is no answer");
    let reason = format!("{refused:#}").to_lowercase();
    assert!(
        reason.contains("certificate"),
        "the query failed for another reason than the certificate: {reason}"
    );
    assert!(matches!(
        untrusted.close(payment).await,
        Err(refused) if format!("{refused:#}").to_lowercase().contains("certificate")
    ));
    let unchanged = simulator.payment(&platform_payment_id).expect("payment");
    assert_eq!(
        (unchanged.queries, unchanged.closes, unchanged.status),
        (0, 0, PaymentStatus::Processing),
        "a request reached the platform"
    );

    // The operator trusts the platform's authority (SSL_CERT_FILE): a process
    // started with it queries and closes the payment over TLS.
    let dir = std::env::temp_dir().join(format!("checkout-tls-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let ca_file = dir.join("platform-ca.pem");
    std::fs::write(&ca_file, &certificate.cert_pem).expect("write the test authority");
    let output = tokio::task::spawn_blocking(move || {
        Command::new(std::env::current_exe().expect("this test binary"))
            .args([TEST_NAME, "--exact", "--nocapture", "--test-threads=1"])
            .env("SSL_CERT_FILE", &ca_file)
            .env(CHILD_CASE, format!("{base_url}|{order_no}|{payment_id}"))
            .output()
            .expect("run the trusted case")
    })
    .await
    .expect("the child ran");
    std::fs::remove_dir_all(&dir).ok();
    assert!(
        output.status.success(),
        "the trusted case failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let after = simulator.payment(&platform_payment_id).expect("payment");
    assert_eq!(
        (after.queries, after.closes, after.status),
        (1, 1, PaymentStatus::Closed),
        "the trusted connector's query and close did not reach the platform"
    );
}

/// The child's half: the connector trusts the authority in `SSL_CERT_FILE`.
async fn query_and_close_over_tls_trusting_ssl_cert_file(case: &str) {
    let mut parts = case.split('|');
    let (Some(base_url), Some(order_no), Some(payment_id)) =
        (parts.next(), parts.next(), parts.next())
    else {
        panic!("{CHILD_CASE} is not base url|order no|payment id: {case}");
    };
    let payment = PaymentRef {
        order_no,
        payment_id: payment_id.parse().expect("a payment id"),
    };
    let trusted = Platform::remote(base_url, "http://127.0.0.1:9".into()).expect("connector");
    let state = trusted
        .query(payment)
        .await
        .expect("an answer over TLS")
        .expect("the platform has the payment");
    assert_eq!(
        (state.order_no.as_str(), state.status),
        (order_no, PaymentStatus::Processing)
    );
    assert_eq!(
        trusted.close(payment).await.expect("an answer over TLS"),
        CloseAnswer::Closed(PaymentState {
            status: PaymentStatus::Closed,
            ..state
        })
    );
}
