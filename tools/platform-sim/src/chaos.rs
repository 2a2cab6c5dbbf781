//! Chaos knobs: the ways real platforms misbehave when delivering callbacks.
//!
//! Each knob reproduces something a receiver must survive: the same callback
//! several times at once, the same callback over a second route, a false
//! failure before the success, a second success under a new id, and repeated
//! deliveries after the receiver already said yes; and, on the way in, a
//! creation answer lost after the payment was accepted. Every payment takes a copy
//! of the knobs when it is created, so changing them at runtime (`POST
//! /v1/chaos`) affects only later payments.

use crate::schedule::{ScheduleError, format_duration, parse_duration, parse_repeat};
use serde::{Deserialize, Serialize};
use std::str::FromStr;
use std::time::Duration;

/// The misbehaviours to apply to every callback of a payment. `Chaos::default()` is a well-behaved platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Chaos {
    /// How many copies of each callback go out at the same instant, each retried on its own (1 = normal).
    pub concurrent_copies: u32,
    /// When set, the same callback also travels a second path, starting this much later
    /// (scaled by the time scale) and retried on its own.
    #[serde(with = "optional_duration_text")]
    pub second_path_delay: Option<Duration>,
    /// For a successful payment, deliver a `payment.failed` (with its own callback id) first;
    /// the success follows once the failure's first attempt has ended (answered or not).
    pub reorder: bool,
    /// For a successful payment, deliver a second `payment.succeeded` with a new callback id
    /// after the first success's delivery has finished.
    pub second_success: bool,
    /// After a 2xx, keep delivering the same callback (same id and body) this many more times.
    pub redeliver_after_success: Option<Redeliver>,
    /// Accept a new payment but answer its first creation request with a 503,
    /// as if the answer were lost on the way back: the merchant cannot know
    /// whether the platform has the payment. A retry with the same
    /// `Idempotency-Key` gets the payment as usual.
    pub lose_create_answer: bool,
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
    use serde_json::json;

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
    fn unknown_knobs_and_bad_durations_are_rejected() {
        assert!(serde_json::from_value::<Chaos>(json!({"copies": 2})).is_err());
        assert!(serde_json::from_value::<Chaos>(json!({"second_path_delay": "soon"})).is_err());
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
