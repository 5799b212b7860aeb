//! bwrap's set-up failures read from a command's result: the error a failed set-up step is,
//! and a cover of a host socket that went away.

use std::path::{Path, PathBuf};

use agentcompass_plugin_api::contracts::ExecResult;
use agentcompass_plugin_api::Error;

/// bwrap's own messages for a sandbox it could not finish (mounts, working directory,
/// namespaces) or a command it could not start.
pub(in crate::sandbox) const SETUP_FAILURES: [&str; 4] =
    ["execvp ", "Can't ", "No permissions ", "Creating new "];

/// If bwrap itself failed before the command started (it exits 1 with one `bwrap: ` line
/// naming a set-up step), the error to return instead of an exit code.
pub(in crate::sandbox) fn setup_failure(
    result: &ExecResult,
    program: &str,
    cwd: &Path,
) -> Option<Error> {
    if result.timed_out || result.returncode != 1 || !result.stdout.is_empty() {
        return None;
    }
    let line = result.stderr.strip_suffix('\n')?;
    if line.contains('\n') {
        return None;
    }
    let detail = line.strip_prefix("bwrap: ")?;
    if !SETUP_FAILURES.iter().any(|s| detail.starts_with(s)) {
        return None;
    }
    let cwd = cwd.display();
    Some(match detail.strip_prefix("execvp ") {
        Some(rest) => {
            let reason = rest
                .strip_prefix(program)
                .and_then(|r| r.strip_prefix(": "))
                .unwrap_or(rest);
            Error::environment(format!(
                "exec: cannot start `{program}` in `{cwd}` (sandbox): {reason}"
            ))
        }
        None => Error::environment(format!(
            "exec: the sandbox could not be set up in `{cwd}`: {detail}"
        )),
    })
}

/// Whether bwrap failed to set the sandbox up at the cover of one of the host sockets `masks`
/// (it was removed after it was listed).
pub(in crate::sandbox) fn cover_failed(result: &ExecResult, masks: &[PathBuf]) -> bool {
    result.returncode == 1
        && result.stdout.is_empty()
        && result.stderr.starts_with("bwrap: ")
        && masks
            .iter()
            .any(|m| result.stderr.contains(&*m.to_string_lossy()))
}
