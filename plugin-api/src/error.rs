//! The error type components return, on both sides of the plugin boundary.

use std::fmt;

/// What kind of failure a component reports. Carried across the ABI as a number, so new kinds
/// can be added without breaking built plugins (unknown numbers read back as [`ErrorKind::Failed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// An ordinary failure of the operation.
    Failed,
    /// The component panicked; the panic was contained.
    Panicked,
    /// An argument or a returned value could not be decoded, or failed validation.
    InvalidInput,
    /// The operation is not supported by this component.
    Unsupported,
    /// The operation was cancelled.
    Cancelled,
    /// The operation ran out of time.
    Timeout,
    /// The component's environment failed (sandbox, transport, provider).
    Environment,
    /// The model endpoint kept rate-limiting the call longer than the host waits
    /// (`model.params.max_rate_limit_wait_seconds`). Read back as [`ErrorKind::Failed`] by
    /// components built before it existed.
    RateLimited,
}

impl ErrorKind {
    /// The stable wire number of this kind.
    pub fn code(self) -> u32 {
        match self {
            ErrorKind::Failed => 0,
            ErrorKind::Panicked => 1,
            ErrorKind::InvalidInput => 2,
            ErrorKind::Unsupported => 3,
            ErrorKind::Cancelled => 4,
            ErrorKind::Timeout => 5,
            ErrorKind::Environment => 6,
            ErrorKind::RateLimited => 7,
        }
    }

    /// Reads a wire number back; unknown numbers become [`ErrorKind::Failed`].
    pub fn from_code(code: u32) -> ErrorKind {
        match code {
            1 => ErrorKind::Panicked,
            2 => ErrorKind::InvalidInput,
            3 => ErrorKind::Unsupported,
            4 => ErrorKind::Cancelled,
            5 => ErrorKind::Timeout,
            6 => ErrorKind::Environment,
            7 => ErrorKind::RateLimited,
            _ => ErrorKind::Failed,
        }
    }
}

/// An error returned by a component method. The message is one line and must never contain a
/// secret (API keys, resolved `${VAR}` values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// What kind of failure this is.
    pub kind: ErrorKind,
    /// Human-readable, single-line description.
    pub message: String,
}

/// Result alias used throughout the SDK.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A new error of the given kind.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: one_line(&message.into()),
        }
    }

    /// An ordinary failure.
    pub fn msg(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Failed, message)
    }

    /// Bad input (arguments, params, returned values).
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidInput, message)
    }

    /// The operation is not supported.
    pub fn unsupported(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Unsupported, message)
    }

    /// An environment (sandbox) failure.
    pub fn environment(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Environment, message)
    }

    /// The model endpoint kept rate-limiting the call.
    pub fn rate_limited(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::RateLimited, message)
    }

    /// The operation was cancelled.
    pub fn cancelled() -> Self {
        Error::new(ErrorKind::Cancelled, "cancelled")
    }

    /// A contained panic, from its payload (with the panic's source location when the SDK's
    /// panic hook recorded it on this thread).
    pub fn from_panic(payload: &(dyn std::any::Any + Send)) -> Self {
        let text = if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "panic with a non-string payload".to_string()
        };
        let location = PANIC_LOCATION
            .with(|cell| cell.borrow_mut().take())
            .map(|at| format!(" (at {at})"))
            .unwrap_or_default();
        Error::new(ErrorKind::Panicked, format!("panicked: {text}{location}"))
    }

    /// The same error with `context: ` put in front of the message.
    pub fn context(self, context: impl fmt::Display) -> Self {
        Error {
            kind: self.kind,
            message: format!("{context}: {}", self.message),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<serde_json::Error> for Error {
    fn from(err: serde_json::Error) -> Self {
        Error::invalid_input(format!("invalid JSON: {err}"))
    }
}

impl From<std::io::Error> for Error {
    fn from(err: std::io::Error) -> Self {
        Error::msg(err.to_string())
    }
}

thread_local! {
    static PANIC_LOCATION: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Remembers where the current thread's panic happened, for [`Error::from_panic`].
pub(crate) fn record_panic_location(location: String) {
    PANIC_LOCATION.with(|cell| *cell.borrow_mut() = Some(location));
}

/// Folds a multi-line message into one line (errors are printed one per line).
pub fn one_line(message: &str) -> String {
    if !message.contains(['\n', '\r']) {
        return message.to_string();
    }
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_and_unknown_codes_degrade() {
        for kind in [
            ErrorKind::Failed,
            ErrorKind::Panicked,
            ErrorKind::InvalidInput,
            ErrorKind::Unsupported,
            ErrorKind::Cancelled,
            ErrorKind::Timeout,
            ErrorKind::Environment,
            ErrorKind::RateLimited,
        ] {
            assert_eq!(ErrorKind::from_code(kind.code()), kind);
        }
        assert_eq!(ErrorKind::from_code(999), ErrorKind::Failed);
    }

    #[test]
    fn messages_are_single_line() {
        let err = Error::msg("first\n  second\n\nthird");
        assert_eq!(err.message, "first | second | third");
    }

    #[test]
    fn panic_payloads_become_messages() {
        let payload: Box<dyn std::any::Any + Send> = Box::new("boom");
        assert_eq!(
            Error::from_panic(payload.as_ref()).message,
            "panicked: boom"
        );
        let payload: Box<dyn std::any::Any + Send> = Box::new(String::from("bang"));
        assert_eq!(
            Error::from_panic(payload.as_ref()).kind,
            ErrorKind::Panicked
        );
    }
}
