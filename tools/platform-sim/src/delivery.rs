//! The retrying sender: signs each callback afresh, posts it, retries on the
//! schedule, applies the chaos knobs, and logs every attempt.
//!
//! Delivery is at least once: an attempt counts as delivered only when it is
//! answered 2xx; any other status, a timeout or a connection error is retried
//! after the next wait of the schedule, until the schedule runs out.
//!
//! Payments and refunds go through the same sender: each is a `Subject`
//! that gives its body, its `notify_url` and the knobs it copied.
//!
//! A callback speaks one of three protocols. Standard Webhooks (`/v1` payments
//! and refunds): `webhook-*` headers, any 2xx acknowledges. WeChat Pay (payments
//! and refunds made through `/v3`): the body is a `Notification` whose resource
//! is encrypted with the APIv3 key, the `Wechatpay-*` headers sign it with the
//! platform key afresh at each attempt, only 200 and 204 acknowledge, and
//! there is no notification of a failed payment (so chaos `reorder` does not
//! apply to it). Alipay (trades and refunds made through `/gateway.do`): the
//! body is a form-encoded `TradeNotification` with `notify_time` renewed and
//! `sign` made with the platform key afresh at each attempt (its `notify_id`,
//! the callback id, stays), and only an HTTP 200 whose body is exactly the 7
//! bytes `success` acknowledges; there is no notification of an unpaid trade,
//! so `reorder` does not apply to it either.

use crate::chaos::{Chaos, Redeliver};
use crate::config::{AlipayConfig, ConfigError, SimConfig, WechatPayConfig};
use crate::lock;
use crate::payment::CallbackRecord;
use crate::schedule::scale;
use api_types::api::CallbackType;
use callback_signing::CallbackSecret;
use platform_protocols::alipay::{self, TradeNotification};
use platform_protocols::wechatpay::resource::generate_resource_nonce;
use platform_protocols::wechatpay::{EventType, Notification, NotificationPayload, generate_nonce};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use time::OffsetDateTime;
use tokio::sync::oneshot;
use uuid::Uuid;

/// How many attempts the log keeps; older ones are forgotten so a long storm cannot exhaust memory.
const MAX_LOGGED_ATTEMPTS: usize = 100_000;

/// How much of a refused Alipay reply is kept in the log.
const MAX_REPLY_LOGGED: usize = 64;

/// How one HTTP attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// The receiver answered with this status.
    Answered(u16),
    /// No answer: timeout, connection refused, or the like.
    NoAnswer(String),
    /// Answered with this status, but with a reply that is not the protocol's
    /// acknowledgement (Alipay: a body other than exactly `success`); retried.
    Unacknowledged {
        /// The HTTP status.
        status: u16,
        /// The start of the reply, lossily decoded.
        reply: String,
    },
}

impl AttemptOutcome {
    /// True for a 2xx answer: the only outcome that stops the retries.
    pub fn is_success(&self) -> bool {
        matches!(self, Self::Answered(status) if (200..300).contains(status))
    }

    /// The answered status, if there was an answer.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Answered(status) | Self::Unacknowledged { status, .. } => Some(*status),
            Self::NoAnswer(_) => None,
        }
    }
}

/// What a callback reports on: a payment, or a refund of one.
pub(crate) trait Subject {
    /// The payment reported on (for a refund, the refunded payment).
    fn payment_id(&self) -> &str;
    /// The merchant's order number the payment (or the refunded payment) is for.
    fn order_no(&self) -> &str;
    /// The refund reported on; None for a payment's callbacks.
    fn refund_id(&self) -> Option<&str>;
    /// Where its callbacks are posted.
    fn notify_url(&self) -> &str;
    /// The chaos knobs it copied when it was created.
    fn chaos(&self) -> &Chaos;
    /// The JSON body of a `kind` callback about it, stamped `at`.
    fn body(&self, kind: CallbackType, at: OffsetDateTime) -> Vec<u8>;
    /// Which API it was made through, so which protocol its callbacks speak.
    fn platform(&self) -> Platform {
        Platform::Standard
    }
    /// The WeChat Pay notification reporting `kind`: its event type and its
    /// resource before encryption; None when WeChat Pay sends none for it.
    fn wechat_notification(&self, _kind: CallbackType) -> Option<(EventType, NotificationPayload)> {
        None
    }
    /// The Alipay notification reporting `kind`, without `notify_id` and
    /// `notify_time` (the sender fills them in); None when Alipay sends none
    /// for it. Only [`AlipayNotice`] has one: a notification tells the trade's
    /// state, which a refund alone does not hold.
    fn alipay_notification(&self, _kind: CallbackType) -> Option<TradeNotification> {
        None
    }
}

/// The API a payment or refund was made through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Platform {
    /// `/v1`: Standard Webhooks callbacks.
    Standard,
    /// WeChat Pay API v3.
    Wechat,
    /// The Alipay gateway.
    Alipay,
}

/// A subject with the Alipay notification written for it when it was decided
/// (by [`crate::alipay`], from the trade as it stood then); None when Alipay
/// notifies nothing of this outcome.
pub(crate) struct AlipayNotice<S> {
    pub subject: S,
    pub notification: Option<TradeNotification>,
}

impl<S: Subject> Subject for AlipayNotice<S> {
    fn payment_id(&self) -> &str {
        self.subject.payment_id()
    }

    fn order_no(&self) -> &str {
        self.subject.order_no()
    }

    fn refund_id(&self) -> Option<&str> {
        self.subject.refund_id()
    }

    fn notify_url(&self) -> &str {
        self.subject.notify_url()
    }

    fn chaos(&self) -> &Chaos {
        self.subject.chaos()
    }

    fn body(&self, kind: CallbackType, at: OffsetDateTime) -> Vec<u8> {
        self.subject.body(kind, at)
    }

    fn platform(&self) -> Platform {
        Platform::Alipay
    }

    fn alipay_notification(&self, _kind: CallbackType) -> Option<TradeNotification> {
        self.notification.clone()
    }
}

/// How a callback is written, signed and acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    /// `webhook-id`, `webhook-timestamp`, `webhook-signature`; any 2xx acknowledges.
    StandardWebhooks,
    /// `Wechatpay-*` headers over an encrypted notification; 200 or 204 acknowledges.
    WechatPay,
    /// A signed form; only 200 with the body `success` acknowledges.
    Alipay,
}

impl Protocol {
    /// Whether the receiver's answer acknowledges the callback.
    fn accepts(self, outcome: &AttemptOutcome) -> bool {
        match self {
            Self::StandardWebhooks => outcome.is_success(),
            Self::WechatPay => matches!(outcome, AttemptOutcome::Answered(200 | 204)),
            // `attempt` turns a 200 whose body is not `success` into `Unacknowledged`.
            Self::Alipay => matches!(outcome, AttemptOutcome::Answered(200)),
        }
    }
}

/// The false failure chaos `reorder` sends before a success of this kind;
/// None for a failure, which nothing precedes.
fn false_failure_before(kind: CallbackType) -> Option<CallbackType> {
    match kind {
        CallbackType::PaymentSucceeded => Some(CallbackType::PaymentFailed),
        CallbackType::RefundSucceeded => Some(CallbackType::RefundFailed),
        CallbackType::PaymentFailed | CallbackType::RefundFailed => None,
    }
}

/// One HTTP request that carried a callback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryAttempt {
    /// The callback's id (`webhook-id`).
    pub callback_id: String,
    /// The payment it reports on (for a refund's callback, the refunded payment).
    pub payment_id: String,
    /// The refund it reports on; None for a payment's callback.
    pub refund_id: Option<String>,
    /// `payment.*` or `refund.*`.
    pub kind: CallbackType,
    /// Which path carried it: `0..concurrent_copies` are the simultaneous copies,
    /// `concurrent_copies` is the delayed second path.
    pub path: u32,
    /// 1 for the first try on this path, counting retries and redeliveries.
    pub attempt: u32,
    /// How it ended.
    pub outcome: AttemptOutcome,
    /// When the answer (or the failure) came.
    pub at: OffsetDateTime,
}

/// Every callback created and every attempt made, shared by all of a simulator's deliveries.
#[derive(Debug, Clone, Default)]
pub struct DeliveryLog {
    inner: Arc<Mutex<LogBook>>,
}

#[derive(Debug, Default)]
struct LogBook {
    callbacks: HashMap<String, CallbackRecord>,
    /// Payment or refund id -> its callback ids in creation order. A payment's
    /// list holds its own callbacks, not its refunds'.
    by_subject: HashMap<String, Vec<String>>,
    attempts: VecDeque<DeliveryAttempt>,
}

impl DeliveryLog {
    /// Every attempt so far (up to the last 100 000), oldest first.
    pub fn attempts(&self) -> Vec<DeliveryAttempt> {
        lock(&self.inner).attempts.iter().cloned().collect()
    }

    /// The callbacks about a payment (not its refunds) or about a refund, by
    /// its id, in creation order, with their delivery summary.
    pub fn callbacks(&self, id: &str) -> Vec<CallbackRecord> {
        let book = lock(&self.inner);
        book.by_subject
            .get(id)
            .into_iter()
            .flatten()
            .filter_map(|id| book.callbacks.get(id).cloned())
            .collect()
    }

    fn register(&self, callback: &Callback) {
        let mut book = lock(&self.inner);
        book.callbacks.insert(
            callback.id.clone(),
            CallbackRecord {
                callback_id: callback.id.clone(),
                kind: callback.kind,
                attempts: 0,
                delivered: false,
                last_status: None,
            },
        );
        book.by_subject
            .entry(callback.subject_id().to_owned())
            .or_default()
            .push(callback.id.clone());
    }

    fn record(&self, attempt: DeliveryAttempt, accepted: bool) {
        let mut book = lock(&self.inner);
        if let Some(record) = book.callbacks.get_mut(&attempt.callback_id) {
            record.attempts += 1;
            record.delivered |= accepted;
            if let Some(status) = attempt.outcome.status() {
                record.last_status = Some(status);
            }
        }
        if book.attempts.len() == MAX_LOGGED_ATTEMPTS {
            book.attempts.pop_front();
        }
        book.attempts.push_back(attempt);
    }
}

/// One callback: an id and a body fixed at creation, re-signed at every attempt.
#[derive(Debug)]
struct Callback {
    id: String,
    kind: CallbackType,
    payment_id: String,
    /// The merchant's order number, named on every log line about the callback.
    order_no: String,
    refund_id: Option<String>,
    notify_url: String,
    body: Vec<u8>,
    protocol: Protocol,
    /// An Alipay notification, signed anew (with a fresh `notify_time`) at each attempt.
    alipay: Option<TradeNotification>,
}

impl Callback {
    /// The id it is filed under in the log: the refund's, else the payment's.
    fn subject_id(&self) -> &str {
        self.refund_id.as_deref().unwrap_or(&self.payment_id)
    }
}

/// Sends callbacks for one simulator.
pub(crate) struct Deliverer {
    http: reqwest::Client,
    signer: CallbackSecret,
    wechat: Option<WechatPayConfig>,
    alipay: Option<AlipayConfig>,
    retry_delays: Vec<Duration>,
    time_scale: f64,
    log: DeliveryLog,
}

impl Deliverer {
    /// A sender signing with the configured secret and retrying on the configured schedule.
    pub fn new(config: &SimConfig, log: DeliveryLog) -> Result<Self, ConfigError> {
        let signer = config.secret.clone();
        let http = reqwest::Client::builder()
            .timeout(config.request_timeout)
            .build()
            .map_err(|err| ConfigError::HttpClient(err.to_string()))?;
        Ok(Self {
            http,
            signer,
            wechat: config.wechatpay.clone(),
            alipay: config.alipay.clone(),
            retry_delays: config.schedule.retry_delays(),
            time_scale: config.time_scale,
            log,
        })
    }

    /// Delivers every callback a decided payment or refund produces, under the knobs it
    /// copied, in the order they ask: the false failure first (reorder), then the real
    /// result, then a second success.
    pub async fn deliver_result(&self, subject: &impl Subject, kind: CallbackType) {
        let chaos = subject.chaos();
        let platform = subject.platform();
        let silent = match platform {
            Platform::Standard => false,
            Platform::Wechat => subject.wechat_notification(kind).is_none(),
            Platform::Alipay => subject.alipay_notification(kind).is_none(),
        };
        if silent {
            tracing::info!(
                payment_id = subject.payment_id(),
                order_no = subject.order_no(),
                refund_id = subject.refund_id(),
                outcome = kind.as_str(),
                ?platform,
                "the platform sends no notification for this outcome"
            );
            return;
        }
        // Only a success has a false failure that can precede it; WeChat Pay and
        // Alipay have no failure notification of a payment, so reorder leaves them alone.
        let failure_kind = false_failure_before(kind);
        let succeeded = failure_kind.is_some();
        let false_failure = failure_kind
            .filter(|_| chaos.reorder && platform == Platform::Standard)
            .map(|failure| self.new_callback(failure, subject));
        let (answered, failure_answered) = oneshot::channel();

        // The false failure keeps retrying on its own; the real result waits only until the
        // failure's first attempt has ended, so a receiver that refuses the failure forever
        // cannot hold the success back for a day.
        let failure_delivery = async {
            if let Some(callback) = &false_failure {
                self.deliver(callback, chaos, Some(answered)).await;
            }
        };
        let result_delivery = async {
            if false_failure.is_some() {
                // An error only means the failure's path ended before signalling: go on anyway.
                let _ = failure_answered.await;
            }
            self.deliver(&self.new_callback(kind, subject), chaos, None)
                .await;
            if succeeded && chaos.second_success {
                self.deliver(&self.new_callback(kind, subject), chaos, None)
                    .await;
            }
        };
        tokio::join!(failure_delivery, result_delivery);
    }

    /// A new callback about `subject`, registered in the log so it shows before its first attempt.
    fn new_callback(&self, kind: CallbackType, subject: &impl Subject) -> Callback {
        let now = OffsetDateTime::now_utc();
        let wechat = subject
            .wechat_notification(kind)
            .zip(self.wechat.as_ref())
            .and_then(|((event, payload), config)| {
                let id = Uuid::new_v4().to_string();
                let encrypted = Notification::encrypt(
                    &id,
                    now,
                    event,
                    &payload,
                    &config.apiv3_key,
                    &generate_resource_nonce(),
                );
                match encrypted.map(|notification| serde_json::to_vec(&notification)) {
                    Ok(Ok(body)) => Some((id, body)),
                    Ok(Err(err)) => {
                        tracing::error!(error = %err, "cannot write a WeChat Pay notification");
                        None
                    }
                    Err(err) => {
                        tracing::error!(error = %err, "cannot encrypt a WeChat Pay notification");
                        None
                    }
                }
            });
        let alipay = subject
            .alipay_notification(kind)
            .filter(|_| self.alipay.is_some())
            .map(|mut notification| {
                let id = Uuid::new_v4().simple().to_string();
                notification.notify_id.clone_from(&id);
                notification.notify_time = alipay::format_timestamp(now);
                (id, notification)
            });
        let (id, body, protocol, alipay) = match (wechat, alipay) {
            (Some((id, body)), _) => (id, body, Protocol::WechatPay, None),
            (None, Some((id, notification))) => {
                (id, Vec::new(), Protocol::Alipay, Some(notification))
            }
            (None, None) => (
                format!("evt_{}", Uuid::new_v4().simple()),
                subject.body(kind, now),
                Protocol::StandardWebhooks,
                None,
            ),
        };
        let callback = Callback {
            id,
            kind,
            payment_id: subject.payment_id().to_owned(),
            order_no: subject.order_no().to_owned(),
            refund_id: subject.refund_id().map(str::to_owned),
            notify_url: subject.notify_url().to_owned(),
            body,
            protocol,
            alipay,
        };
        self.log.register(&callback);
        callback
    }

    /// Sends one callback over every path the chaos knobs ask for, until each path ends.
    async fn deliver(
        &self,
        callback: &Callback,
        chaos: &Chaos,
        mut first_answered: Option<oneshot::Sender<()>>,
    ) {
        let copies = chaos.concurrent_copies.max(1);
        // Only the first copy redelivers after success, so `count` means `count` extra
        // deliveries per callback, not per copy.
        let mut paths: Vec<_> = (0..copies)
            .map(|path| {
                let (redeliver, signal) = if path == 0 {
                    (chaos.redeliver_after_success, first_answered.take())
                } else {
                    (None, None)
                };
                self.path(callback, path, Duration::ZERO, redeliver, signal)
            })
            .collect();
        if let Some(delay) = chaos.second_path_delay {
            paths.push(self.path(callback, copies, delay, None, None));
        }
        // Polled together in this task, so the copies leave at the same instant.
        futures::future::join_all(paths).await;
    }

    /// One path: attempts until a 2xx or the schedule runs out, then any redeliveries.
    async fn path(
        &self,
        callback: &Callback,
        path: u32,
        start_after: Duration,
        redeliver: Option<Redeliver>,
        mut first_answered: Option<oneshot::Sender<()>>,
    ) {
        tokio::time::sleep(scale(start_after, self.time_scale)).await;
        let mut waits = self
            .retry_delays
            .iter()
            .map(|wait| scale(*wait, self.time_scale));
        let mut attempt = 0;
        loop {
            attempt += 1;
            let outcome = self.attempt(callback).await;
            if let Some(answered) = first_answered.take() {
                // The receiver of this signal may have stopped waiting; nothing to do then.
                let _ = answered.send(());
            }
            let accepted = callback.protocol.accepts(&outcome);
            let next_wait = if accepted { None } else { waits.next() };
            self.record(callback, path, attempt, outcome.clone());
            log_attempt(callback, path, attempt, &outcome, accepted, next_wait);
            if accepted {
                break;
            }
            match next_wait {
                Some(wait) => tokio::time::sleep(wait).await,
                None => return,
            }
        }
        let Some(redeliver) = redeliver else { return };
        for _ in 0..redeliver.count {
            tokio::time::sleep(scale(redeliver.interval, self.time_scale)).await;
            attempt += 1;
            let outcome = self.attempt(callback).await;
            self.record(callback, path, attempt, outcome.clone());
            tracing::info!(
                callback_id = %callback.id,
                payment_id = %callback.payment_id,
                order_no = %callback.order_no,
                refund_id = callback.refund_id.as_deref(),
                kind = callback.kind.as_str(),
                path,
                attempt,
                status = outcome.status(),
                error = outcome_error(&outcome),
                "callback redelivered after success (chaos)"
            );
        }
    }

    /// One signed POST. Signed now, so the timestamp is fresh even on the tenth retry.
    async fn attempt(&self, callback: &Callback) -> AttemptOutcome {
        let mut request = self.http.post(&callback.notify_url);
        let mut body = callback.body.clone();
        let mut content_type = "application/json";
        match (callback.protocol, &self.wechat, &self.alipay) {
            (Protocol::WechatPay, Some(config), _) => {
                let signature = config.platform_signer.sign(
                    &callback.body,
                    OffsetDateTime::now_utc().unix_timestamp(),
                    &generate_nonce(),
                );
                for (name, value) in signature.header_pairs() {
                    request = request.header(name, value);
                }
            }
            (Protocol::Alipay, _, Some(config)) => {
                let Some(notification) = &callback.alipay else {
                    return AttemptOutcome::NoAnswer("no Alipay notification to send".into());
                };
                let mut notification = notification.clone();
                notification.notify_time = alipay::format_timestamp(OffsetDateTime::now_utc());
                match alipay::sign_notification(&notification, &config.platform_private) {
                    Ok(form) => body = form.into_bytes(),
                    Err(err) => return AttemptOutcome::NoAnswer(format!("cannot sign: {err}")),
                }
                content_type = "application/x-www-form-urlencoded; charset=utf-8";
            }
            (Protocol::WechatPay | Protocol::Alipay, _, _) => {
                return AttemptOutcome::NoAnswer(
                    "cannot sign: the platform is not configured".into(),
                );
            }
            (Protocol::StandardWebhooks, _, _) => {
                let signed = match self.signer.sign_now(&callback.id, &callback.body) {
                    Ok(signed) => signed,
                    Err(err) => return AttemptOutcome::NoAnswer(format!("cannot sign: {err}")),
                };
                for (name, value) in signed.pairs() {
                    request = request.header(name, value);
                }
            }
        }
        let sent = request
            .header(reqwest::header::CONTENT_TYPE, content_type)
            .body(body)
            .send()
            .await;
        match sent {
            Ok(response) if callback.protocol == Protocol::Alipay => alipay_reply(response).await,
            Ok(response) => AttemptOutcome::Answered(response.status().as_u16()),
            Err(err) => AttemptOutcome::NoAnswer(describe(&err)),
        }
    }

    fn record(&self, callback: &Callback, path: u32, attempt: u32, outcome: AttemptOutcome) {
        let accepted = callback.protocol.accepts(&outcome);
        self.log.record(
            DeliveryAttempt {
                callback_id: callback.id.clone(),
                payment_id: callback.payment_id.clone(),
                refund_id: callback.refund_id.clone(),
                kind: callback.kind,
                path,
                attempt,
                outcome,
                at: OffsetDateTime::now_utc(),
            },
            accepted,
        );
    }
}

fn log_attempt(
    callback: &Callback,
    path: u32,
    attempt: u32,
    outcome: &AttemptOutcome,
    accepted: bool,
    next_wait: Option<Duration>,
) {
    let id = &callback.id;
    let payment_id = &callback.payment_id;
    let order_no = &callback.order_no;
    let refund_id = callback.refund_id.as_deref();
    let kind = callback.kind.as_str();
    let status = outcome.status();
    let error = outcome_error(outcome);
    if accepted {
        tracing::info!(callback_id = %id, %payment_id, %order_no, refund_id, kind, path, attempt, status, "callback delivered");
    } else if let Some(wait) = next_wait {
        tracing::warn!(callback_id = %id, %payment_id, %order_no, refund_id, kind, path, attempt, status, error,
            next_retry_in = ?wait, "callback not acknowledged; will retry");
    } else {
        tracing::error!(callback_id = %id, %payment_id, %order_no, refund_id, kind, path, attempt, status, error,
            "callback not acknowledged and the schedule is exhausted; giving up");
    }
}

fn outcome_error(outcome: &AttemptOutcome) -> Option<&str> {
    match outcome {
        AttemptOutcome::NoAnswer(error) => Some(error),
        AttemptOutcome::Unacknowledged { reply, .. } => Some(reply),
        AttemptOutcome::Answered(_) => None,
    }
}

/// Reads an Alipay merchant's reply: a 200 acknowledges only when its body is
/// exactly `success` (nothing trimmed, no other case); any other 200 is
/// [`AttemptOutcome::Unacknowledged`]. Reads at most a few bytes past that.
async fn alipay_reply(mut response: reqwest::Response) -> AttemptOutcome {
    let status = response.status().as_u16();
    if status != 200 {
        return AttemptOutcome::Answered(status);
    }
    let mut reply = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                reply.extend_from_slice(&chunk);
                if reply.len() > MAX_REPLY_LOGGED {
                    break;
                }
            }
            Ok(None) => break,
            Err(err) => return AttemptOutcome::NoAnswer(describe(&err)),
        }
    }
    if reply == alipay::NOTIFY_SUCCESS.as_bytes() {
        return AttemptOutcome::Answered(status);
    }
    reply.truncate(MAX_REPLY_LOGGED);
    AttemptOutcome::Unacknowledged {
        status,
        reply: String::from_utf8_lossy(&reply).into_owned(),
    }
}

/// reqwest's top-level message ("error sending request") hides the cause; name it.
fn describe(err: &reqwest::Error) -> String {
    if err.is_timeout() {
        return "timed out".into();
    }
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wechat_pay_is_acknowledged_only_by_200_and_204() {
        let answered = AttemptOutcome::Answered;
        for status in [200, 204] {
            assert!(Protocol::WechatPay.accepts(&answered(status)), "{status}");
        }
        for status in [201, 202, 400, 500] {
            assert!(!Protocol::WechatPay.accepts(&answered(status)), "{status}");
        }
        assert!(Protocol::StandardWebhooks.accepts(&answered(202)));
        assert!(!Protocol::WechatPay.accepts(&AttemptOutcome::NoAnswer("timed out".into())));
    }

    #[test]
    fn alipay_is_acknowledged_only_by_a_200_read_as_success() {
        assert!(Protocol::Alipay.accepts(&AttemptOutcome::Answered(200)));
        for status in [204, 201, 500] {
            assert!(
                !Protocol::Alipay.accepts(&AttemptOutcome::Answered(status)),
                "{status}"
            );
        }
        let refused = AttemptOutcome::Unacknowledged {
            status: 200,
            reply: "fail".into(),
        };
        assert!(!Protocol::Alipay.accepts(&refused));
        assert!(!Protocol::StandardWebhooks.accepts(&refused));
        assert_eq!(refused.status(), Some(200));
        assert!(!refused.is_success());
    }
}
