//! The incident through HAProxy, in front of three backends (the repository's
//! `deploy/haproxy.cfg`), with one fault each: a backend killed with `kill -9`,
//! a backend drained with SIGTERM, the Redis primary killed (Sentinel fails
//! over; the backends find Redis through `REDIS_SENTINELS`), PostgreSQL restarted. During each, every paid order's success
//! callback arrives 100 times at once and is retried until acknowledged, and
//! shoppers pay other orders through the balancer, retrying as the page does.
//! Each ends with the invariant checker and one charge per order.

use crate::rig::{Binary, PayStep, Platform, Pressed, Rig, RigOptions, order_nos, press_pay_now};
use api_types::Currency;
use futures::future::join_all;
use serde_json::{Value, json};
use std::sync::Mutex;
use std::time::Duration;
use storm::platform::{Answer, Callback, Sender};
use storm::processes::{self, OwnedHaproxy, OwnedPostgres, RedisSentinelGroup};
use storm::shop::{PaidOrder, Shopper};
use tokio::time::Instant;
use uuid::Uuid;

const AMOUNT: i64 = 1_500;
/// Orders whose callbacks storm in (paid before the fault).
const STORMED: usize = 8;
/// Copies of each stormed order's callback, sent at once.
const COPIES: usize = 100;
/// Orders shoppers pay while the storm and the fault go on.
const PAID_DURING: usize = 8;
/// Between the start of one order's storm (or pay) and the next one's.
const STAGGER: Duration = Duration::from_millis(250);

/// What one request of the run got, and when.
#[derive(Debug, Clone, Copy)]
struct Record {
    at: Instant,
    step: Step,
    answer: Answer,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Callback,
    Token,
    Pay,
}

/// Every answer of a run, in arrival order.
#[derive(Default)]
struct Log(Mutex<Vec<Record>>);

impl Log {
    fn push(&self, step: Step, answer: Answer) {
        let record = Record {
            at: Instant::now(),
            step,
            answer,
        };
        self.0.lock().expect("log lock").push(record);
    }

    fn records(&self) -> Vec<Record> {
        self.0.lock().expect("log lock").clone()
    }

    fn failures(&self) -> Vec<Record> {
        self.records()
            .into_iter()
            .filter(|r| !r.answer.is_success())
            .collect()
    }
}

/// Three backends of one database behind HAProxy, an outside platform that
/// decides payments but posts nothing (the test's storm is the platform).
struct Cluster {
    rig: Rig,
    haproxy: OwnedHaproxy,
}

impl Cluster {
    async fn start(postgres: Option<&OwnedPostgres>, env: Vec<(String, String)>) -> Cluster {
        let rig = Rig::start(RigOptions {
            postgres: postgres.map_or_else(processes::postgres_server_url, |pg| {
                pg.url("").trim_end_matches('/').to_owned()
            }),
            backends: 3,
            binary: Binary::Ordinary,
            platform: Platform::outside(),
            env,
            ..RigOptions::default()
        })
        .await;
        let mut ports = Vec::new();
        for backend in &rig.backends {
            ports.push(backend.lock().await.port());
        }
        let haproxy = OwnedHaproxy::start(&ports).await.expect("haproxy starts");
        Cluster { rig, haproxy }
    }

    fn url(&self) -> String {
        self.haproxy.url()
    }

    /// The run: `STORMED` orders paid first; then at once: their callbacks,
    /// `COPIES` each, staggered by order; shoppers paying `PAID_DURING` more
    /// orders through the balancer; and `fault`, 300 ms in. Then the paid
    /// orders' callbacks, and the checks every fault shares.
    async fn incident<F: Future<Output = ()>>(&self, fault: F) -> (Log, Vec<String>) {
        let stormed = self.rig.paid_orders(STORMED, AMOUNT).await;
        let during = self.rig.orders(PAID_DURING, AMOUNT).await;
        let shopper = self.rig.shopper().await;
        let log = Log::default();
        let sender = Sender::with_timeout(&self.url(), &self.rig.secret, Duration::from_secs(5))
            .expect("sender");

        let storm = join_all(stormed.iter().enumerate().map(|(n, order)| {
            let (sender, log) = (&sender, &log);
            async move {
                tokio::time::sleep(STAGGER * n as u32).await;
                let callback = Callback::success(order, AMOUNT, Currency::EUR);
                join_all((0..COPIES).map(|_| deliver(sender, &callback, log))).await
            }
        }));
        let url = self.url();
        let pays = join_all(during.iter().enumerate().map(|(n, order_no)| {
            let (url, log) = (&url, &log);
            async move {
                tokio::time::sleep(STAGGER * n as u32).await;
                pay(url, shopper, order_no, log).await
            }
        }));
        let fault = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            fault.await;
        };
        let (storm, pays, ()) = tokio::join!(storm, pays, fault);

        let acknowledged = storm.iter().flatten().filter(|ok| **ok).count();
        assert_eq!(
            acknowledged,
            STORMED * COPIES,
            "every copy of every callback is acknowledged in the end"
        );
        let paid: Vec<PaidOrder> = pays
            .into_iter()
            .zip(&during)
            .map(|(payment_id, order_no)| PaidOrder {
                order_no: order_no.clone(),
                payment_id: payment_id
                    .unwrap_or_else(|err| panic!("the shopper could not pay {order_no}: {err:#}")),
                platform_payment_id: String::new(),
            })
            .collect();
        // The platform's results for what the shoppers paid, once it has them.
        let paid = self.handed_over(paid).await;
        let settled = join_all(paid.iter().map(|order| {
            let (sender, log) = (&sender, &log);
            async move {
                let callback = Callback::success(order, AMOUNT, Currency::EUR);
                deliver(sender, &callback, log).await
            }
        }))
        .await;
        assert!(settled.iter().all(|ok| *ok), "every result acknowledged");

        let orders = [order_nos(&stormed), during].concat();
        self.rig
            .assert_each_order_paid_once(&orders, "through HAProxy")
            .await;
        (log, orders)
    }

    /// `paid` with each payment's platform id, once the platform accepted it
    /// (a backend's dispatcher hands over what a dead one left).
    async fn handed_over(&self, paid: Vec<PaidOrder>) -> Vec<PaidOrder> {
        let started = Instant::now();
        loop {
            let ids: Vec<Uuid> = paid.iter().map(|p| p.payment_id).collect();
            let rows: Vec<(Uuid, Option<String>)> = sqlx::query_as(
                "SELECT payment_id, platform_payment_id FROM payment_attempts WHERE payment_id = ANY($1)",
            )
            .bind(&ids)
            .fetch_all(&self.rig.db)
            .await
            .unwrap_or_default();
            let known: std::collections::HashMap<Uuid, String> = rows
                .into_iter()
                .filter_map(|(id, platform)| Some((id, platform?)))
                .collect();
            if known.len() == paid.len() {
                return paid
                    .into_iter()
                    .map(|p| PaidOrder {
                        platform_payment_id: known[&p.payment_id].clone(),
                        ..p
                    })
                    .collect();
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "payments not handed over to the platform: {} of {}",
                paid.len() - known.len(),
                paid.len()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Delivers `callback` until acknowledged, as a platform does: retrying every
/// 200 ms, for at most a minute. True when acknowledged.
async fn deliver(sender: &Sender, callback: &Callback, log: &Log) -> bool {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        let answer = sender.deliver(callback).await;
        log.push(Step::Callback, answer);
        if answer.is_success() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    false
}

/// Presses "Pay now" as the page does ([`press_pay_now`]), logging each answer;
/// the payment id once accepted.
async fn pay(url: &str, shopper: &Shopper, order_no: &str, log: &Log) -> anyhow::Result<Uuid> {
    let record = |step, answer| {
        let step = match step {
            PayStep::Token => Step::Token,
            PayStep::Pay => Step::Pay,
        };
        log.push(step, answer);
    };
    match press_pay_now(&shopper.client, url, order_no, record).await? {
        Pressed::Accepted(payment_id) => Ok(payment_id),
        Pressed::NotPayable => anyhow::bail!("{order_no} was no longer payable"),
    }
}

fn count(records: &[Record], step: Step) -> usize {
    records.iter().filter(|r| r.step == step).count()
}

fn summary(log: &Log) -> String {
    let records = log.records();
    let mut failed = std::collections::BTreeMap::<String, usize>::new();
    for failure in log.failures() {
        *failed
            .entry(format!("{:?} {}", failure.step, failure.answer))
            .or_default() += 1;
    }
    format!(
        "{} callbacks, {} token requests, {} pays; failed: {failed:?}",
        count(&records, Step::Callback),
        count(&records, Step::Token),
        count(&records, Step::Pay),
    )
}

#[tokio::test]
async fn a_backend_killed_mid_storm_loses_no_charge_and_doubles_none() {
    let mut cluster = Cluster::start(None, Vec::new()).await;
    let victim = cluster.rig.backends[1].clone();
    let (log, _) = cluster
        .incident(async {
            victim.lock().await.kill9();
        })
        .await;
    cluster
        .haproxy
        .wait_for_server("backend2", "DOWN", Duration::from_secs(5))
        .await
        .expect("HAProxy took the dead backend out");
    // What failed was the dead backend's: HAProxy's 502 for requests it had in
    // flight, or 503 before its checks noticed; each was retried and answered.
    let failures = log.failures();
    assert!(
        failures
            .iter()
            .all(|r| matches!(r.answer, Answer::Status(502 | 503) | Answer::NoAnswer)),
        "{}",
        summary(&log)
    );
    println!("kill -9: {}", summary(&log));
}

#[tokio::test]
async fn a_backend_drained_with_sigterm_fails_no_request() {
    let cluster = Cluster::start(
        None,
        vec![(backend::env::DRAIN_SECS.to_owned(), "2".to_owned())],
    )
    .await;
    let victim = cluster.rig.backends[1].clone();
    let direct = reqwest::Client::new();
    let victim_url = victim.lock().await.url();
    let (log, _) = cluster
        .incident(async {
            let mut backend = victim.lock().await;
            let signalled = Instant::now();
            backend.signal_terminate();
            // Not ready any more at once, still alive and serving.
            let mut readiness = 0;
            while signalled.elapsed() < Duration::from_secs(1) {
                if let Ok(answer) = direct.get(format!("{victim_url}/readyz")).send().await {
                    readiness = answer.status().as_u16();
                    if readiness == 503 {
                        break;
                    }
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert_eq!(readiness, 503, "/readyz answers 503 once SIGTERM arrived");
            let status = backend
                .wait_for_exit(Duration::from_secs(30))
                .await
                .expect("the drained backend exits");
            assert!(status.success(), "a drain ends with exit 0: {status}");
            assert!(
                signalled.elapsed() >= Duration::from_secs(2),
                "it served for DRAIN_SECS before closing"
            );
        })
        .await;
    assert!(log.failures().is_empty(), "{}", summary(&log));
    println!("SIGTERM drain: {}", summary(&log));
}

#[tokio::test]
async fn postgres_restarted_behind_haproxy_answers_5xx_during_the_outage_only() {
    let pg = OwnedPostgres::start().expect("own PostgreSQL cluster");
    let cluster = Cluster::start(Some(&pg), Vec::new()).await;
    let outage = Mutex::new((None, None));
    let (log, _) = cluster
        .incident(async {
            let began = Instant::now();
            pg.stop().expect("PostgreSQL stops");
            tokio::time::sleep(Duration::from_secs(3)).await;
            pg.resume().expect("PostgreSQL starts again");
            *outage.lock().expect("outage lock") = (Some(began), Some(Instant::now()));
        })
        .await;
    let (Some(began), Some(ended)) = *outage.lock().expect("outage lock") else {
        panic!("the outage did not happen");
    };
    let records = log.records();
    assert!(
        !records
            .iter()
            .any(|r| r.step == Step::Callback && matches!(r.answer, Answer::Status(400..=499))),
        "a valid callback was refused with a 4xx (the platform would stop retrying): {}",
        summary(&log)
    );
    let failures = log.failures();
    assert!(
        !failures.is_empty(),
        "the outage was never seen: {}",
        summary(&log)
    );
    // Requests sent during the outage are answered within the pool's 3 s
    // acquire limit or the sender's 5 s timeout; pooled connections the
    // restart broke fail their next statement once, just after.
    let grace = Duration::from_secs(6);
    for failure in &failures {
        assert!(
            failure.at >= began && failure.at <= ended + grace,
            "a failure outside the outage: {failure:?}; {}",
            summary(&log)
        );
        // An outage is 503 (or a request cut); a 500 would be a bug showing.
        assert!(
            matches!(failure.answer, Answer::Status(502..=504) | Answer::NoAnswer),
            "{}",
            summary(&log)
        );
    }
    for backend in &cluster.rig.backends {
        assert_eq!(backend.lock().await.starts, 1, "no backend was restarted");
    }
    println!("PostgreSQL restart: {}", summary(&log));
}

/// Pays `order_no` once, nothing failing; returns the token it used and the payment id.
async fn pay_keeping_token(url: &str, shopper: &Shopper, order_no: &str) -> (Uuid, Uuid) {
    let token: Value = shopper
        .client
        .post(format!("{url}/api/orders/{order_no}/request-token"))
        .send()
        .await
        .expect("token sent")
        .error_for_status()
        .expect("token issued")
        .json()
        .await
        .expect("token body");
    let token: Uuid = token["request_token"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .expect("a request token");
    let paid: Value = shopper
        .client
        .post(format!("{url}/api/orders/{order_no}/pay"))
        .json(&json!({ "request_token": token }))
        .send()
        .await
        .expect("pay sent")
        .error_for_status()
        .expect("pay accepted")
        .json()
        .await
        .expect("pay body");
    let payment_id = paid["payment_id"]
        .as_str()
        .and_then(|id| id.parse().ok())
        .expect("a payment id");
    (token, payment_id)
}

#[tokio::test]
async fn the_redis_primary_killed_behind_haproxy_fails_over_with_503_only_meanwhile() {
    let mut redis = RedisSentinelGroup::start()
        .await
        .expect("Redis primary, replica and three sentinels");
    let cluster = Cluster::start(
        None,
        vec![
            (
                backend::env::REDIS_SENTINELS.to_owned(),
                redis.sentinel_addrs().join(","),
            ),
            (
                backend::env::REDIS_MASTER_NAME.to_owned(),
                redis.master_name().to_owned(),
            ),
        ],
    )
    .await;
    // Orders paid before the fault: their pays are sent again during it.
    let shopper = cluster.rig.shopper().await;
    let replayable = cluster.rig.orders(4, AMOUNT).await;
    let mut used = Vec::new();
    for order_no in &replayable {
        used.push(pay_keeping_token(&cluster.url(), shopper, order_no).await);
    }

    // An order whose page is loaded again and again during the fault: the
    // storm's own pays ask for their tokens early and may all have them
    // before the kill lands on a slow machine.
    let reloaded = cluster.rig.orders(1, AMOUNT).await.remove(0);

    let window = Mutex::new((None, None));
    let replays = Mutex::new(Vec::new());
    let reloads = Mutex::new(Vec::new());
    let (log, _) = cluster
        .incident(async {
            let began = Instant::now();
            redis.kill_primary().await.expect("the primary killed");
            let replaying = async {
                // Pay replays keep working: the database answers them, Redis or not.
                while began.elapsed() < Duration::from_secs(4) {
                    for (order_no, (token, payment_id)) in replayable.iter().zip(&used) {
                        let answer = shopper
                            .client
                            .post(format!("{}/api/orders/{order_no}/pay", cluster.url()))
                            .timeout(Duration::from_secs(5))
                            .json(&json!({ "request_token": token }))
                            .send()
                            .await;
                        let seen = match answer {
                            Ok(response) => {
                                let status = response.status().as_u16();
                                let replayed = response
                                    .headers()
                                    .get("idempotent-replayed")
                                    .is_some_and(|v| v == "true");
                                let body: Value = response.json().await.unwrap_or_default();
                                (status, replayed, body["payment_id"] == json!(payment_id))
                            }
                            Err(_) => (0, false, false),
                        };
                        replays.lock().expect("replays lock").push(seen);
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            };
            let reloading = async {
                // Token requests see the failover: 503 while no primary answers.
                while began.elapsed() < Duration::from_secs(4) {
                    let answer = shopper
                        .client
                        .post(format!(
                            "{}/api/orders/{reloaded}/request-token",
                            cluster.url()
                        ))
                        .timeout(Duration::from_secs(5))
                        .send()
                        .await
                        .map_or(0, |response| response.status().as_u16());
                    reloads
                        .lock()
                        .expect("reloads lock")
                        .push((Instant::now(), answer));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            };
            let (failed_over, (), ()) = tokio::join!(
                redis.wait_for_failover(Duration::from_secs(30)),
                replaying,
                reloading
            );
            failed_over.expect("Sentinel promoted the replica");
            *window.lock().expect("window lock") = (Some(began), Some(Instant::now()));
        })
        .await;
    let (Some(began), Some(promoted)) = *window.lock().expect("window lock") else {
        panic!("the failover did not happen");
    };

    let replays = replays.lock().expect("replays lock").clone();
    assert!(replays.len() >= 8, "replays were sent: {replays:?}");
    assert!(
        replays.iter().all(|seen| *seen == (202, true, true)),
        "every replay during the failover answered 202 Idempotent-Replayed with its payment: {replays:?}"
    );
    let failures = log.failures();
    assert!(
        failures.iter().all(|r| r.step != Step::Callback),
        "callbacks never touch Redis: {}",
        summary(&log)
    );
    // 503 during the failover only; the token store gives up on Redis after
    // 1 s, so a request sent just before the promotion ends up to 1 s after it.
    let during_failover = |at: Instant| at >= began && at <= promoted + Duration::from_secs(2);
    let reloads = reloads.lock().expect("reloads lock").clone();
    let answers: Vec<u16> = reloads.iter().map(|(_, status)| *status).collect();
    assert!(
        answers.contains(&503) && answers.iter().all(|status| matches!(status, 201 | 503)),
        "token requests during the failover answer 503 meanwhile, 201 otherwise: {answers:?}"
    );
    assert!(
        reloads
            .iter()
            .all(|(at, status)| *status != 503 || during_failover(*at)),
        "a token request answered 503 outside the failover: {answers:?}"
    );
    for failure in &failures {
        assert_eq!(failure.answer, Answer::Status(503), "{}", summary(&log));
        assert!(
            during_failover(failure.at),
            "a 503 outside the failover ({:?} after the kill, promoted after {:?}): {}",
            failure.at - began,
            promoted - began,
            summary(&log)
        );
    }
    println!(
        "Redis failover (promoted {:?} after the kill): {}; {} replays",
        promoted - began,
        summary(&log),
        replays.len()
    );
}
