//! Logging, filtered by `RUST_LOG` (default `info`), in the format
//! `LOG_FORMAT` names: `text` (the default, human-readable lines) or `json`
//! (one JSON object per line, for machines).
//!
//! A JSON line is self-contained: besides the event's own `fields` it carries
//! `span` (the innermost span, with its fields) and `spans` (every span from the
//! root to the innermost, each with its fields), so a reader finds a callback's
//! `callback_id`, `order_no` and `outcome`, or a pay's `order_no` and
//! `payment_id`, on the line itself without joining it to other lines.

use std::fmt;
use std::str::FromStr;
use tracing_subscriber::EnvFilter;

/// The output format of the logs (`LOG_FORMAT`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines (the default).
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// A `LOG_FORMAT` that is neither `text` nor `json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidLogFormat(pub String);

impl fmt::Display for InvalidLogFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}={:?} is not a log format: use `text` or `json`",
            crate::env::LOG_FORMAT,
            self.0
        )
    }
}

impl std::error::Error for InvalidLogFormat {}

impl FromStr for LogFormat {
    type Err = InvalidLogFormat;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "" | "text" => Ok(Self::Text),
            "json" => Ok(Self::Json),
            _ => Err(InvalidLogFormat(text.to_owned())),
        }
    }
}

impl LogFormat {
    /// The format `LOG_FORMAT` names; unset (or empty) is `text`.
    ///
    /// # Errors
    /// A value other than `text` or `json` (or one that is not UTF-8).
    pub fn from_env() -> Result<Self, InvalidLogFormat> {
        match std::env::var(crate::env::LOG_FORMAT) {
            Ok(text) => text.parse(),
            Err(std::env::VarError::NotPresent) => Ok(Self::Text),
            Err(std::env::VarError::NotUnicode(text)) => {
                Err(InvalidLogFormat(text.to_string_lossy().into_owned()))
            }
        }
    }
}

/// Installs the global subscriber once in the format `LOG_FORMAT` names; later
/// calls (e.g. from several tests) are ignored. An invalid `LOG_FORMAT` falls
/// back to `text` here; the backend refuses it with [`try_init`] before this.
pub fn init() {
    install(LogFormat::from_env().unwrap_or_default());
}

/// [`init`], refusing an invalid `LOG_FORMAT` (the backend's start).
///
/// # Errors
/// `LOG_FORMAT` is neither `text` nor `json`; nothing is installed.
pub fn try_init() -> Result<(), InvalidLogFormat> {
    install(LogFormat::from_env()?);
    Ok(())
}

/// Installs the global subscriber in `format`, unless one is installed already.
pub fn install(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_http=info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(true);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .try_init(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_json_are_the_formats_and_text_is_the_default() {
        assert_eq!("text".parse(), Ok(LogFormat::Text));
        assert_eq!("json".parse(), Ok(LogFormat::Json));
        assert_eq!(" JSON ".parse(), Ok(LogFormat::Json));
        assert_eq!("".parse(), Ok(LogFormat::Text));
        assert_eq!(LogFormat::default(), LogFormat::Text);
    }

    #[test]
    fn log_format_xml_is_refused_with_a_message_naming_log_format() {
        let err = "xml".parse::<LogFormat>().expect_err("xml is refused");
        let message = err.to_string();
        assert!(message.contains("LOG_FORMAT"), "{message}");
        assert!(message.contains("xml"), "{message}");
        assert!(message.contains("json"), "{message}");
    }
}
