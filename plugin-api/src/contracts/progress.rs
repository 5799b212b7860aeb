//! Progress events and log levels.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One progress event (a line of `progress.jsonl`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProgressEvent {
    /// Run id.
    pub run_id: String,
    /// Event name (`run_started`, `phase_changed`, `task_finished`, …).
    pub event: String,
    /// Unix time in seconds.
    #[serde(default)]
    pub timestamp: f64,
    /// Task id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Task category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Semantic attempt number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// Phase name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Event-specific data.
    #[serde(default)]
    pub payload: serde_json::Value,
}

impl ProgressEvent {
    /// An event without task fields or payload.
    pub fn new(run_id: impl Into<String>, event: impl Into<String>, timestamp: f64) -> Self {
        ProgressEvent {
            run_id: run_id.into(),
            event: event.into(),
            timestamp,
            ..ProgressEvent::default()
        }
    }
}

/// Log verbosity, ordered `Trace < … < Error`; `as u8` gives 0..=4.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
#[repr(u8)]
pub enum LogLevel {
    /// Most verbose.
    Trace = 0,
    /// Debugging detail.
    Debug = 1,
    /// Normal operation.
    #[default]
    Info = 2,
    /// Something unexpected.
    Warn = 3,
    /// A failure.
    Error = 4,
}

impl LogLevel {
    /// All levels, from most to least verbose.
    pub const ALL: [LogLevel; 5] = [
        LogLevel::Trace,
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Warn,
        LogLevel::Error,
    ];

    /// The numeric level (0..=4).
    pub fn as_u8(self) -> u8 {
        self as u8
    }

    /// The level with the given number, if in 0..=4.
    pub fn from_u8(value: u8) -> Option<LogLevel> {
        LogLevel::ALL.get(usize::from(value)).copied()
    }

    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Trace => "trace",
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn event_serialisation_skips_unset_options() {
        let event = ProgressEvent::new("r", "run_started", 1.5);
        let value = serde_json::to_value(&event).unwrap();
        assert_eq!(
            value,
            json!({"run_id": "r", "event": "run_started", "timestamp": 1.5, "payload": null})
        );
        let mut event = event;
        event.task_id = Some("t".into());
        event.attempt = Some(2);
        event.payload = json!({"index": 1});
        let back: ProgressEvent =
            serde_json::from_value(serde_json::to_value(&event).unwrap()).unwrap();
        assert_eq!(back, event);
    }

    #[test]
    fn log_level_conversions() {
        for level in LogLevel::ALL {
            assert_eq!(LogLevel::from_u8(level as u8), Some(level));
            assert_eq!(LogLevel::from_u8(level.as_u8()), Some(level));
            assert_eq!(serde_json::to_value(level).unwrap(), json!(level.as_str()));
        }
        assert_eq!(LogLevel::Warn.as_u8(), 3);
        assert_eq!(LogLevel::from_u8(5), None);
        assert!(LogLevel::Trace < LogLevel::Error);
    }
}
