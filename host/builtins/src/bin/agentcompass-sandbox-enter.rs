//! `agentcompass-sandbox-enter`: the small program through which a `sandbox` command enters
//! its prepared namespace (see `agentcompass_builtins::sandbox` and ARCHITECTURE.md). The host
//! starts it next to itself when it is there: it loads far faster than the host binary, which
//! serves the same entries otherwise.

use std::process::ExitCode;

fn main() -> ExitCode {
    agentcompass_builtins::sandbox::enter_if_requested();
    eprintln!(
        "agentcompass-sandbox-enter: started by the host's `sandbox` environment only (expected `{}`)",
        agentcompass_builtins::sandbox::ENTRY_ARG
    );
    ExitCode::from(2)
}
