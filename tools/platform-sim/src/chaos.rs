//! Chaos knobs: the ways real platforms misbehave when delivering callbacks
//! and answering merchants.
//!
//! Each knob reproduces something a merchant must survive:
//!
//! - callbacks: the same callback several times at once
//!   ([`Chaos::concurrent_copies`]), the same callback over a second route
//!   ([`Chaos::second_path_delay`]), a false failure before the success
//!   ([`Chaos::reorder`]), a second success under a new id
//!   ([`Chaos::second_success`]), repeated deliveries after the receiver
//!   already said yes ([`Chaos::redeliver_after_success`]), and no callback at
//!   all, so the merchant must query ([`Chaos::drop_callbacks`]);
//! - creation: the answer lost after the payment or refund was accepted
//!   ([`Chaos::lose_create_answer`]);
//! - queries and closes: a payment that stays PROCESSING until the merchant
//!   gives up on it ([`Chaos::hold_processing`]), a shopper who pays just as
//!   the merchant closes ([`Chaos::succeed_on_close`]), and slow answers that
//!   let a merchant's concurrent queries overlap ([`Chaos::query_latency`]);
//! - the daily bill ([`crate::bill`]): a payment or refund missing from it
//!   ([`Chaos::bill_omit`]), or listed with another amount than it moved
//!   ([`Chaos::bill_amount_delta_cents`]). With [`Chaos::drop_callbacks`] (and
//!   a merchant that does not query in time) a payment is on the bill although
//!   the merchant never booked it.
//!
//! The callback and creation knobs, [`Chaos::hold_processing`] and
//! [`Chaos::query_latency`] apply to refunds as they do to payments (a
//! refund's false failure is a `refund.failed`, its second success a
//! `refund.succeeded`). Every payment and every refund takes a copy of the
//! knobs when it is created, so changing them at runtime (`POST /v1/chaos`)
//! affects only later ones.
//!
//! WeChat Pay payments and refunds (`/v3`, [`crate::wechatpay`]) take the same
//! knobs, with one exception: WeChat Pay sends no notification of a failed
//! payment, so [`Chaos::reorder`] leaves them alone. Copies and redeliveries keep
//! the notification's `id`; a second success is a new notification with a new `id`;
//! a lost creation answer is a 500 `SYSTEM_ERROR`.
//!
//! Alipay trades and refunds (`/gateway.do`, [`crate::alipay`]) take them too,
//! with two exceptions: Alipay sends no notification of an unpaid trade, so
//! [`Chaos::reorder`] leaves them alone, and a refund is decided on arrival, so
//! [`Chaos::hold_processing`] does not hold it. Copies and redeliveries keep the
//! `notify_id`; a second success is a new notification with a new `notify_id`
//! (as is the later `TRADE_FINISHED`); a lost creation answer is a 20000
//! `isp.unknow-error` (the trade or refund was stored all the same).

use crate::schedule::{ScheduleError, format_duration, parse_duration, parse_repeat};
use serde::{Deserialize, Serialize};
use std::str::FromStr;
use std::time::Duration;

/// The misbehaviours to apply to every callback of a payment or refund. `Chaos::default()` is a well-behaved platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Chaos {
    /// How many copies of each callback go out at the same instant, each retried on its own (1 = normal).
    pub concurrent_copies: u32,
    /// When set, the same callback also travels a second path, starting this much later
    /// (scaled by the time scale) and retried on its own.
    #[serde(with = "optional_duration_text")]
    pub second_path_delay: Option<Duration>,
    /// For a successful payment, deliver a `payment.failed` (with its own callback id) first,
    /// and for a successful refund a `refund.failed`; the success follows once the
    /// failure's first attempt has ended (answered or not).
    pub reorder: bool,
    /// For a successful payment or refund, deliver a second success (`payment.succeeded`,
    /// `refund.succeeded`) with a new callback id after the first one's delivery has finished.
    pub second_success: bool,
    /// After a 2xx, keep delivering the same callback (same id and body) this many more times.
    pub redeliver_after_success: Option<Redeliver>,
    /// Accept a new payment or refund but answer its first creation request
    /// with a 503, as if the answer were lost on the way back: the merchant
    /// cannot know whether the platform has it. A retry with the same
    /// `Idempotency-Key` gets it as usual.
    pub lose_create_answer: bool,
    /// Decide outcomes as usual but never send a callback: a platform whose
    /// notifications never arrive, so the merchant must query.
    pub drop_callbacks: bool,
    /// Keep payments and refunds PROCESSING this long instead of the configured
    /// processing delay (scaled by the time scale like every other wait):
    /// `"1h"` holds a payment until the merchant closes it.
    #[serde(with = "optional_duration_text")]
    pub hold_processing: Option<Duration>,
    /// A close that finds the payment PROCESSING decides it SUCCEEDED at that
    /// moment (its success callback goes out as usual unless callbacks are
    /// dropped) and is refused with 409 `PAYMENT_ALREADY_SUCCEEDED`: the
    /// shopper paid at the last second.
    pub succeed_on_close: bool,
    /// Every query and close of the payment, and every query of the refund,
    /// waits this long before it is carried out and answered. Real time, not
    /// scaled by the time scale: it is how long the merchant's own request
    /// takes, like the request timeout.
    #[serde(with = "optional_duration_text")]
    pub query_latency: Option<Duration>,
    /// Leave the payment's (or refund's) row out of the daily bill, as a
    /// platform whose bill lost a row: the merchant booked money the bill does
    /// not list.
    pub bill_omit: bool,
    /// List the payment (or refund) on the daily bill with its amount changed by
    /// this many minor units (0 = the true amount; the listed amount never goes
    /// below 0).
    pub bill_amount_delta_cents: i64,
}

impl Default for Chaos {
    fn default() -> Self {
        Self {
            concurrent_copies: 1,
            second_path_delay: None,
            reorder: false,
            second_success: false,
            redeliver_after_success: None,
            lose_create_answer: false,
            drop_callbacks: false,
            hold_processing: None,
            succeed_on_close: false,
            query_latency: None,
            bill_omit: false,
            bill_amount_delta_cents: 0,
        }
    }
}

/// Deliveries of an already acknowledged callback: `count` more, `interval` apart.
///
/// Written `<interval>x<count>` on the command line: `7sx1` is one more delivery 7 s after the 2xx.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Redeliver {
    /// How many extra deliveries.
    pub count: u32,
    /// The wait before each of them (scaled by the time scale).
    #[serde(with = "duration_text")]
    pub interval: Duration,
}

impl FromStr for Redeliver {
    type Err = ScheduleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (interval, count) = parse_repeat(s)?;
        Ok(Self { count, interval })
    }
}

/// Durations travel as text (`"1s"`, `"500ms"`) so chaos requests are easy to write by hand.
mod duration_text {
    use super::{Duration, format_duration, parse_duration};
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<S: Serializer>(value: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format_duration(*value))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(deserializer)?;
        parse_duration(&text).map_err(D::Error::custom)
    }
}

/// [`duration_text`] for an optional duration; `null` or absent means off.
mod optional_duration_text {
    use super::{Duration, format_duration, parse_duration};
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<S: Serializer>(
        value: &Option<Duration>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(duration) => serializer.serialize_str(&format_duration(*duration)),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Duration>, D::Error> {
        Option::<String>::deserialize(deserializer)?
            .map(|text| parse_duration(&text).map_err(D::Error::custom))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn the_default_is_a_well_behaved_platform() {
        let chaos: Chaos = serde_json::from_value(json!({})).expect("empty object parses");
        assert_eq!(chaos, Chaos::default());
        assert_eq!(chaos.concurrent_copies, 1);
    }

    #[test]
    fn knobs_read_and_write_durations_as_text() {
        let chaos: Chaos = serde_json::from_value(json!({
            "concurrent_copies": 3,
            "second_path_delay": "1s",
            "reorder": true,
            "second_success": true,
            "redeliver_after_success": {"count": 1, "interval": "7s"}
        }))
        .expect("parses");
        assert_eq!(chaos.second_path_delay, Some(Duration::from_secs(1)));
        assert_eq!(
            chaos.redeliver_after_success,
            Some(Redeliver {
                count: 1,
                interval: Duration::from_secs(7)
            })
        );
        let written = serde_json::to_value(&chaos).expect("serialises");
        assert_eq!(written["second_path_delay"], "1s");
        assert_eq!(written["redeliver_after_success"]["interval"], "7s");
    }

    #[test]
    fn query_and_close_knobs_round_trip_as_text() {
        let knobs = json!({
            "drop_callbacks": true,
            "hold_processing": "1h",
            "succeed_on_close": true,
            "query_latency": "250ms"
        });

        let chaos: Chaos = serde_json::from_value(knobs.clone()).expect("parses");

        assert_eq!(
            chaos,
            Chaos {
                drop_callbacks: true,
                hold_processing: Some(Duration::from_secs(3600)),
                succeed_on_close: true,
                query_latency: Some(Duration::from_millis(250)),
                ..Chaos::default()
            }
        );
        let written = serde_json::to_value(&chaos).expect("serialises");
        for (name, value) in knobs.as_object().expect("object") {
            assert_eq!(&written[name], value, "{name}");
        }
        let off = serde_json::to_value(Chaos::default()).expect("serialises");
        assert_eq!(off["hold_processing"], Value::Null);
        assert_eq!(off["query_latency"], Value::Null);
    }

    #[test]
    fn bill_knobs_default_to_a_true_bill_and_round_trip() {
        let chaos: Chaos = serde_json::from_value(json!({
            "bill_omit": true,
            "bill_amount_delta_cents": -5
        }))
        .expect("parses");
        assert!(chaos.bill_omit);
        assert_eq!(chaos.bill_amount_delta_cents, -5);
        let written = serde_json::to_value(&chaos).expect("serialises");
        assert_eq!(written["bill_omit"], true);
        assert_eq!(written["bill_amount_delta_cents"], -5);
        let off = Chaos::default();
        assert!(!off.bill_omit);
        assert_eq!(off.bill_amount_delta_cents, 0);
    }

    #[test]
    fn unknown_knobs_and_bad_durations_are_rejected() {
        assert!(serde_json::from_value::<Chaos>(json!({"copies": 2})).is_err());
        assert!(serde_json::from_value::<Chaos>(json!({"drop_callback": true})).is_err());
        assert!(serde_json::from_value::<Chaos>(json!({"second_path_delay": "soon"})).is_err());
        assert!(serde_json::from_value::<Chaos>(json!({"hold_processing": "1d"})).is_err());
        assert!(serde_json::from_value::<Chaos>(json!({"query_latency": 250})).is_err());
    }

    #[test]
    fn redelivery_parses_interval_then_count() {
        assert_eq!(
            "7sx2".parse(),
            Ok(Redeliver {
                count: 2,
                interval: Duration::from_secs(7)
            })
        );
        assert!("7s".parse::<Redeliver>().is_err());
    }
}
