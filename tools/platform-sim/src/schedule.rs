//! Retry schedules: when a callback that was not acknowledged is tried again.
//!
//! The named schedules copy what real platforms publish, so a receiver can be
//! tested against the storm it will really see. A schedule lists the waits
//! *between* attempts; the first attempt always goes out at once, which is why
//! `standard` (published as "0, 5 s, 5 min, ...") holds one entry fewer here.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

const SECOND: u64 = 1;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;

/// WeChat Pay: 15 retries over about 24 hours.
const WECHAT: [u64; 15] = [
    15 * SECOND,
    15 * SECOND,
    30 * SECOND,
    3 * MINUTE,
    10 * MINUTE,
    20 * MINUTE,
    30 * MINUTE,
    30 * MINUTE,
    30 * MINUTE,
    60 * MINUTE,
    3 * HOUR,
    3 * HOUR,
    3 * HOUR,
    6 * HOUR,
    6 * HOUR,
];

/// Alipay: 7 retries over about 25 hours.
const ALIPAY: [u64; 7] = [
    4 * MINUTE,
    10 * MINUTE,
    10 * MINUTE,
    HOUR,
    2 * HOUR,
    6 * HOUR,
    15 * HOUR,
];

/// Standard Webhooks' recommendation, after the immediate first attempt.
const STANDARD: [u64; 9] = [
    5 * SECOND,
    5 * MINUTE,
    30 * MINUTE,
    2 * HOUR,
    5 * HOUR,
    10 * HOUR,
    14 * HOUR,
    20 * HOUR,
    24 * HOUR,
];

/// When unacknowledged callbacks are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Schedule {
    /// `wechat`: 15s, 15s, 30s, 3m, 10m, 20m, 30m, 30m, 30m, 60m, 3h, 3h, 3h, 6h, 6h.
    Wechat,
    /// `alipay`: 4m, 10m, 10m, 1h, 2h, 6h, 15h.
    Alipay,
    /// `standard`: 5s, 5m, 30m, 2h, 5h, 10h, 14h, 20h, 24h.
    #[default]
    Standard,
    /// `fixed:<interval>x<count>`: `count` retries, `interval` apart.
    Fixed {
        /// The wait before each retry.
        interval: Duration,
        /// How many retries follow the first attempt.
        count: u32,
    },
}

impl Schedule {
    /// The wait before each retry, in order; its length is the number of retries.
    pub fn retry_delays(&self) -> Vec<Duration> {
        let secs = |table: &[u64]| table.iter().copied().map(Duration::from_secs).collect();
        match self {
            Self::Wechat => secs(&WECHAT),
            Self::Alipay => secs(&ALIPAY),
            Self::Standard => secs(&STANDARD),
            Self::Fixed { interval, count } => vec![*interval; *count as usize],
        }
    }
}

impl FromStr for Schedule {
    type Err = ScheduleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "wechat" => Ok(Self::Wechat),
            "alipay" => Ok(Self::Alipay),
            "standard" => Ok(Self::Standard),
            other => {
                let spec = other
                    .strip_prefix("fixed:")
                    .ok_or_else(|| ScheduleError::UnknownSchedule(other.to_owned()))?;
                let (interval, count) = parse_repeat(spec)?;
                Ok(Self::Fixed { interval, count })
            }
        }
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Wechat => f.write_str("wechat"),
            Self::Alipay => f.write_str("alipay"),
            Self::Standard => f.write_str("standard"),
            Self::Fixed { interval, count } => {
                write!(f, "fixed:{}x{count}", format_duration(*interval))
            }
        }
    }
}

/// A schedule, duration or repeat spec that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// Not one of the named schedules nor `fixed:...`.
    #[error(
        "unknown schedule {0:?}: expected wechat, alipay, standard or fixed:<interval>x<count>"
    )]
    UnknownSchedule(String),
    /// Not `<interval>x<count>`.
    #[error("{0:?} is not <interval>x<count>, e.g. 500msx10")]
    BadRepeat(String),
    /// Not a whole number followed by `ms`, `s`, `m` or `h`.
    #[error("{0:?} is not a duration such as 500ms, 10s, 3m or 2h")]
    BadDuration(String),
}

/// Parses `<interval>x<count>`, e.g. `500msx10`: the shape of `fixed:` schedules and of redelivery knobs.
pub fn parse_repeat(spec: &str) -> Result<(Duration, u32), ScheduleError> {
    let bad = || ScheduleError::BadRepeat(spec.to_owned());
    // Split at the last `x`: no duration unit contains one.
    let (interval, count) = spec.trim().rsplit_once('x').ok_or_else(bad)?;
    let interval = parse_duration(interval)?;
    let count = count.parse().map_err(|_| bad())?;
    Ok((interval, count))
}

/// Parses a whole number with a unit: `ms`, `s`, `m` or `h` (`0` alone is also accepted).
pub fn parse_duration(text: &str) -> Result<Duration, ScheduleError> {
    let text = text.trim();
    let bad = || ScheduleError::BadDuration(text.to_owned());
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| bad())?;
    let millis_per_unit = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(bad()),
    };
    number
        .checked_mul(millis_per_unit)
        .map(Duration::from_millis)
        .ok_or_else(bad)
}

/// Writes a duration the way [`parse_duration`] reads it, in the largest exact unit.
pub fn format_duration(duration: Duration) -> String {
    let millis = duration.as_millis();
    let units = [(3_600_000, "h"), (60_000, "m"), (1_000, "s")];
    match units
        .iter()
        .find(|(size, _)| millis != 0 && millis.is_multiple_of(*size))
    {
        Some((size, unit)) => format!("{}{unit}", millis / size),
        None => format!("{millis}ms"),
    }
}

/// Multiplies a delay by the simulator's time scale, so tests can run a day of retries in seconds.
pub fn scale(delay: Duration, time_scale: f64) -> Duration {
    // `mul_f64` panics on overflow; a delay too long to represent is simply "never".
    Duration::try_from_secs_f64(delay.as_secs_f64() * time_scale).unwrap_or(Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Schedule {
        text.parse()
            .unwrap_or_else(|err| panic!("{text} should parse: {err}"))
    }

    #[test]
    fn named_schedules_hold_the_published_waits() {
        let wechat = parsed("wechat").retry_delays();
        assert_eq!(wechat.len(), 15);
        assert_eq!(wechat[0], Duration::from_secs(15));
        assert_eq!(wechat[3], Duration::from_secs(180));
        assert_eq!(wechat[14], Duration::from_secs(6 * 3600));

        let alipay = parsed("alipay").retry_delays();
        assert_eq!(alipay.len(), 7);
        assert_eq!(alipay[0], Duration::from_secs(240));
        assert_eq!(alipay[6], Duration::from_secs(15 * 3600));

        let standard = parsed("standard").retry_delays();
        assert_eq!(standard.len(), 9);
        assert_eq!(standard[0], Duration::from_secs(5));
        assert_eq!(standard[8], Duration::from_secs(24 * 3600));
    }

    #[test]
    fn wechat_retries_span_about_a_day() {
        let total: Duration = parsed("wechat").retry_delays().iter().sum();
        assert_eq!(total, Duration::from_secs(24 * 3600 + 4 * 60));
    }

    #[test]
    fn fixed_schedules_parse_interval_and_count() {
        assert_eq!(
            parsed("fixed:500msx10"),
            Schedule::Fixed {
                interval: Duration::from_millis(500),
                count: 10
            }
        );
        assert_eq!(
            parsed("fixed:10sx3").retry_delays(),
            vec![Duration::from_secs(10); 3]
        );
        assert!(parsed("fixed:1mx0").retry_delays().is_empty());
    }

    #[test]
    fn schedules_display_as_they_parse() {
        for text in [
            "wechat",
            "alipay",
            "standard",
            "fixed:500msx10",
            "fixed:2hx3",
        ] {
            assert_eq!(parsed(text).to_string(), text);
        }
    }

    #[test]
    fn malformed_schedules_are_rejected() {
        for text in [
            "",
            "daily",
            "fixed:",
            "fixed:10s",
            "fixed:x3",
            "fixed:10sx",
            "fixed:10sx-1",
            "fixed:10dx3",
            "fixed:1.5sx3",
        ] {
            assert!(
                text.parse::<Schedule>().is_err(),
                "{text:?} should not parse"
            );
        }
    }

    #[test]
    fn durations_take_a_unit() {
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("7s"), Ok(Duration::from_secs(7)));
        assert_eq!(parse_duration("3m"), Ok(Duration::from_secs(180)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("99999999999999999999h").is_err());
    }

    #[test]
    fn durations_format_in_the_largest_exact_unit() {
        assert_eq!(format_duration(Duration::ZERO), "0ms");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
        assert_eq!(format_duration(Duration::from_secs(90)), "90s");
        assert_eq!(format_duration(Duration::from_secs(3600)), "1h");
    }

    #[test]
    fn time_scale_compresses_delays_and_never_panics() {
        assert_eq!(
            scale(Duration::from_secs(3600), 0.001),
            Duration::from_millis(3600)
        );
        assert_eq!(scale(Duration::from_secs(5), 0.0), Duration::ZERO);
        assert_eq!(scale(Duration::MAX, 2.0), Duration::MAX);
    }
}
