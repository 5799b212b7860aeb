//! The environment-session contract as one suite that any provider, first- or third-party,
//! runs against itself (feature `contract-kit`).
//!
//! [`run_session_contract`] opens sessions of a provider with the caller's
//! [`OpenEnvironmentRequest`] (one fresh session per check, closed after it) and runs every
//! check of [`CHECKS`]: the command contract (argv without a shell, a string through
//! `/bin/sh`; return code, stdout, stderr and `timed_out`), working directories, the layering
//! of environment bindings, timeouts, cancellation and detached commands, file and directory
//! transfers (bytes, modes, symlinks, merging), text I/O, probes, the session's own
//! directories, and closing (idempotent,
//! and from persisted `close_params` after a crash). It returns a [`ContractReport`] when
//! every check passed, else a [`ContractFailure`] listing each failed check with what it
//! observed. Provider-specific behaviour (names, isolation, networks, images) stays in the
//! provider's own tests.
//!
//! ```text
//! use agentcompass_plugin_api::contract_kit::{run_session_contract, ContractOptions, ProcessProbe};
//!
//! #[tokio::test(flavor = "multi_thread")]
//! async fn keeps_the_session_contract() {
//!     let request = OpenEnvironmentRequest::new("run", "task/1", EnvironmentSpec::new(ID));
//!     let options = ContractOptions::default().processes(ProcessProbe::Host);
//!     let report = run_session_contract(&MyProvider, &request, &options).await.unwrap();
//!     assert_eq!(report.passed(), CHECKS.len());
//! }
//! ```
//!
//! What a session must have for the checks: a POSIX `/bin/sh` with `cat`, `printf`, `echo`,
//! `mkdir`, `ln`, `stat -c`, `sleep`, `test`, `true` and `false`, a writable default working
//! directory (absolute, reported by [`SessionInfo::default_workdir`]), and relative paths
//! resolved against it. The kit's own files live in a private directory under the system
//! temporary directory, removed at the end. The futures need no particular executor (timers
//! run on [`crate::sdk::runtime`]); [`block_on`] drives one on a plain test thread, as the host
//! polls a plugin.
//!
//! [`SessionInfo::default_workdir`]: crate::contracts::SessionInfo::default_workdir

pub mod egress;
mod exec;
mod files;
mod guard;
mod lifecycle;
mod report;
mod support;
#[cfg(test)]
mod tests;

use std::time::{Duration, Instant};

use crate::contracts::OpenEnvironmentRequest;
use crate::sdk::EnvironmentProvider;

/// Drives a future on a plain test thread, as the host polls a plugin (the SDK's
/// [`crate::sdk::testing::block_on`], kept here for the kit's users).
pub use crate::sdk::testing::block_on;
pub use guard::ClosedOnDrop;
pub use report::{CheckOutcome, ContractFailure, ContractReport, Outcome};
use support::{CheckFn, Kit};

/// One named check of the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Check {
    /// Its name (what [`ContractOptions::skip`] takes).
    pub name: &'static str,
    /// What it checks, in one line.
    pub summary: &'static str,
}

const fn check(name: &'static str, summary: &'static str) -> Check {
    Check { name, summary }
}

/// Every check, in the order they run.
pub const CHECKS: &[Check] = &[
    check(
        "info",
        "info() names the provider and an absolute default working directory",
    ),
    check(
        "exec_argv_and_shell",
        "argv runs without a shell, a string through /bin/sh; return code, stdout, stderr \
         (lossy UTF-8) and 128 + the signal of a killed command",
    ),
    check(
        "exec_errors",
        "an empty argv, a negative timeout, a missing program or working directory are errors, \
         not exit codes",
    ),
    check(
        "cwd",
        "the default cwd is the default working directory; relative cwds resolve against it",
    ),
    check(
        "env_layering",
        "call env < session bindings < required_env; conflicts are refused naming the variable, \
         never a value",
    ),
    check(
        "timeout",
        "a timed-out command returns 124 with timed_out and its output so far; it and its \
         children are killed",
    ),
    check(
        "background_output",
        "a background child holding the output delays the result by the output grace at most",
    ),
    check(
        "cancel",
        "dropping an exec future kills the command and its children",
    ),
    check(
        "detach",
        "a detached command returns at once, keeps running across other commands and is killed \
         by close",
    ),
    check(
        "file_transfer",
        "upload/download keep bytes and mode, create parents, go into existing directories and \
         through symlinks; errors name the path",
    ),
    check(
        "tree_transfer",
        "upload_dir/download_dir merge and keep modes and symlinks; a file is not a directory",
    ),
    check(
        "text_and_probes",
        "write_text/read_text on relative, absolute and unnormalised paths; is_file/is_dir; \
         invalid UTF-8 and missing files are errors",
    ),
    check(
        "session_dirs",
        "info().dirs: the workspace is the default working directory; tests, solution, logs \
         and tmp are absolute and take files commands see",
    ),
    check("endpoint", "endpoint() is None"),
    check(
        "network_policy",
        "set_network_policy accepts the policy the session was opened with",
    ),
    check(
        "concurrent_operations",
        "concurrent exec and file operations on one session all succeed",
    ),
    check(
        "close",
        "close is idempotent and an exec after it is an error",
    ),
    check(
        "crash_cleanup",
        "the provider's close(close_params) releases a dropped session, twice; close(null) is \
         fine",
    ),
];

/// The implementation of each check of [`CHECKS`], in the same order.
const RUNS: [CheckFn; 18] = [
    lifecycle::info,
    exec::argv_and_shell,
    exec::errors,
    exec::cwd,
    exec::env_layering,
    exec::timeout,
    exec::background_output,
    exec::cancel,
    exec::detach,
    files::file_transfer,
    files::tree_transfer,
    files::text_and_probes,
    lifecycle::session_dirs,
    lifecycle::endpoint,
    lifecycle::network_policy,
    lifecycle::concurrent_operations,
    lifecycle::close,
    lifecycle::crash_cleanup,
];

const _: () = assert!(CHECKS.len() == RUNS.len());

/// How the checks that a process is gone (or still running) look for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProcessProbe {
    /// In this machine's `/proc`: the session's processes are visible here (a host process,
    /// a namespace sandbox, a container of a local daemon).
    Host,
    /// With a command in the session (a later command sees the processes of earlier ones: a
    /// container, a VM). Whether close killed a detached command is not checked.
    #[default]
    Session,
    /// Not checked.
    Off,
}

/// How the contract is run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ContractOptions {
    /// How processes are looked for.
    pub processes: ProcessProbe,
    /// Time allowed on top of a timeout or a grace period before a command must have returned
    /// (default 2 s; a remote backend wants more).
    pub slack: Duration,
    /// How long a provider waits for output after a command ended, while a background child
    /// still holds it (default 2 s).
    pub output_grace: Duration,
    /// Longest a check may take before it fails (default 120 s).
    pub check_timeout: Duration,
    /// Names of checks not run.
    pub skip: Vec<String>,
}

impl Default for ContractOptions {
    fn default() -> Self {
        ContractOptions {
            processes: ProcessProbe::default(),
            slack: Duration::from_secs(2),
            output_grace: Duration::from_secs(2),
            check_timeout: Duration::from_secs(120),
            skip: Vec::new(),
        }
    }
}

impl ContractOptions {
    /// Sets how processes are looked for.
    pub fn processes(mut self, probe: ProcessProbe) -> Self {
        self.processes = probe;
        self
    }

    /// Sets the time allowed on top of timeouts and grace periods.
    pub fn slack(mut self, slack: Duration) -> Self {
        self.slack = slack;
        self
    }

    /// Sets the provider's output grace period.
    pub fn output_grace(mut self, grace: Duration) -> Self {
        self.output_grace = grace;
        self
    }

    /// Sets the longest a check may take.
    pub fn check_timeout(mut self, limit: Duration) -> Self {
        self.check_timeout = limit;
        self
    }

    /// Does not run the check `name` (one of [`CHECKS`]).
    pub fn skip(mut self, name: &str) -> Self {
        self.skip.push(name.to_string());
        self
    }
}

/// Runs every check of [`CHECKS`] (but the skipped ones) against `provider`, each in a fresh
/// session opened with `request` (plus the kit's own session bindings `AC_SESSION` and
/// `AC_BOTH`). Ok when every check run passed.
pub async fn run_session_contract(
    provider: &dyn EnvironmentProvider,
    request: &OpenEnvironmentRequest,
    options: &ContractOptions,
) -> Result<ContractReport, ContractFailure> {
    let mut report = ContractReport {
        provider: request.environment.id.clone(),
        checks: Vec::new(),
    };
    for name in &options.skip {
        if !CHECKS.iter().any(|c| c.name == name) {
            report.push(
                "options",
                Outcome::Failed(format!("no check `{name}` to skip")),
                Duration::ZERO,
            );
        }
    }
    let kit = match Kit::new(provider, request, options) {
        Ok(kit) => kit,
        Err(message) => {
            report.push("setup", Outcome::Failed(message), Duration::ZERO);
            return Err(ContractFailure(report));
        }
    };
    for (check, run) in CHECKS.iter().zip(RUNS) {
        if options.skip.iter().any(|s| s == check.name) {
            report.push(check.name, Outcome::Skipped, Duration::ZERO);
            continue;
        }
        let started = Instant::now();
        let outcome = kit.run(run).await;
        report.push(check.name, outcome, started.elapsed());
    }
    report.into_result()
}
