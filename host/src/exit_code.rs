//! The process exit codes of `agentcompass-host`.

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
