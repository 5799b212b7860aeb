//! The `exec` conventions every provider keeps.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;

use crate::{Error, Result};

/// An `exec` timeout as a duration: `None` is no limit, and so is a value too large to
/// represent; a negative or NaN value is refused.
pub fn timeout_duration(seconds: Option<f64>) -> Result<Option<Duration>> {
    match seconds {
        None => Ok(None),
        Some(s) if s.is_nan() || s < 0.0 => Err(Error::invalid_input(format!(
            "exec: timeout_seconds must be a non-negative number, got {s}"
        ))),
        // Too large to represent (or infinite): no limit.
        Some(s) => Ok(Duration::try_from_secs_f64(s).ok()),
    }
}

/// The shell convention: the exit code, or 128 + the signal that ended the process.
pub fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(-1)
}

/// The error for a command that could not be started: `exec: cannot start `{program}` in
/// `{cwd}`: {e}`.
pub fn spawn_error(program: &str, cwd: &Path, e: io::Error) -> Error {
    Error::environment(format!(
        "exec: cannot start `{program}` in `{}`: {e}",
        cwd.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts() {
        assert_eq!(timeout_duration(None).unwrap(), None);
        assert_eq!(
            timeout_duration(Some(1.5)).unwrap(),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(timeout_duration(Some(f64::INFINITY)).unwrap(), None);
        assert!(timeout_duration(Some(-1.0)).is_err());
        assert!(timeout_duration(Some(f64::NAN)).is_err());
    }

    #[test]
    fn signalled_processes_exit_with_128_plus_the_signal() {
        assert_eq!(exit_code(ExitStatus::from_raw(3 << 8)), 3);
        assert_eq!(exit_code(ExitStatus::from_raw(9)), 137);
    }
}
