//! The process exit codes of `agentcompass-host`, and which one an error ends a command with.

use agentcompass_results::store::StoreError;

/// Everything completed.
pub const SUCCESS: i32 = 0;
/// The run failed (a request failed, a task ended with a final FATAL issue, the deadline
/// passed) or a command could not do its work.
pub const FAILURE: i32 = 1;
/// Bad input: a file, field, flag or plugin was refused; nothing was written.
pub const USAGE: i32 = 2;
/// A CI gate failed: `--fail-under` (the metric is below the threshold) or `--baseline`
/// (significantly worse than the baseline run).
pub const GATE_FAILED: i32 = 3;
/// Cancelled by the user (Ctrl-C, SIGTERM): 128 + SIGINT.
pub const CANCELLED: i32 = 130;
/// Standard output was closed by its reader (as a SIGPIPE would end the process).
pub const CLOSED_STDOUT: i32 = 141;

/// Every exit code with what it means, in order: the man page's EXIT STATUS section and the
/// `run`/`launch` help list them from here.
pub const EXIT_CODES: [(i32, &str); 6] = [
    (SUCCESS, "everything completed"),
    (
        FAILURE,
        "the run failed (a request failed, a task ended with a final FATAL issue, the deadline \
         passed) or the command could not do its work",
    ),
    (
        USAGE,
        "bad input: a file, field, flag or plugin was refused before anything was written",
    ),
    (
        GATE_FAILED,
        "a CI gate failed (--fail-under, or --baseline with --max-regression)",
    ),
    (CANCELLED, "cancelled by the user (Ctrl-C, SIGTERM)"),
    (CLOSED_STDOUT, "standard output was closed by its reader"),
];

/// The exit code an error ends the command with. A refusal of bad input is [`USAGE`] (the
/// default of an error that does not say otherwise: the CLI's own one-line refusals); a
/// failure of the machine rather than of the input — a results directory that cannot be
/// written, an installer that failed — is [`FAILURE`]; a cancelled one [`CANCELLED`].
pub trait ExitStatus {
    /// The exit code.
    fn exit_code(&self) -> i32;
}

impl ExitStatus for StoreError {
    fn exit_code(&self) -> i32 {
        match self {
            StoreError::Io { .. } => FAILURE,
            _ => USAGE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_io_failures_are_1_other_refusals_2() {
        let io = StoreError::Io {
            op: "create directory",
            path: "/results".into(),
            cause: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        };
        assert_eq!(io.exit_code(), FAILURE);
        let taken = StoreError::RunExists {
            path: "/results/run".into(),
        };
        assert_eq!(taken.exit_code(), USAGE);
    }
}
