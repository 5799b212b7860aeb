//! Every issue code the host records on a task's attempts. The codes are public: users match
//! them with `--retry-pattern-list`, and the README's "Issue codes" table is this list (a
//! test keeps the two equal). Components add their own codes (a plugin's documentation lists
//! them).

use agentcompass_plugin_api::contracts::{ExecutionIssue, IssuePhase};

/// An issue code and what it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IssueCode {
    /// The code, as recorded in `result.json` `issues[].code`.
    pub code: &'static str,
    /// One sentence for users.
    pub meaning: &'static str,
}

impl IssueCode {
    /// A FATAL issue of this code (the attempt failed; runtime retries apply).
    pub fn fatal(self, phase: IssuePhase, message: impl Into<String>) -> ExecutionIssue {
        ExecutionIssue::fatal(phase, self.code, message)
    }

    /// An ERROR issue of this code (the attempt is scored, with an error).
    pub fn error(self, phase: IssuePhase, message: impl Into<String>) -> ExecutionIssue {
        ExecutionIssue::error(phase, self.code, message)
    }

    /// A WARNING issue of this code.
    pub fn warning(self, phase: IssuePhase, message: impl Into<String>) -> ExecutionIssue {
        ExecutionIssue::warning(phase, self.code, message)
    }
}

macro_rules! issue_codes {
    ($($(#[$doc:meta])* $name:ident = $code:literal, $meaning:literal;)*) => {
        $(
            $(#[$doc])*
            pub const $name: IssueCode = IssueCode { code: $code, meaning: $meaning };
        )*
        /// Every code, in the order the README lists them.
        pub const ALL: &[IssueCode] = &[$($name),*];
    };
}

issue_codes! {
    /// Planning failed (a recipe, the benchmark's or the harness's plan).
    SETUP_FAILED = "setup_failed", "planning the attempt failed (benchmark, harness or recipe plan)";
    /// The provider cannot enforce what the plan asks for.
    UNSUPPORTED = "unsupported", "the environment provider cannot enforce the plan (network policy, OS, resources) or a binding is unset";
    /// Opening the environment failed.
    ENVIRONMENT_FAILED = "environment_failed", "the environment did not open";
    /// The model endpoint the environment needs could not be served.
    MODEL_ENDPOINT_FAILED = "model_endpoint_failed", "the model endpoint inside the environment could not be served (socket, port)";
    /// The agent's last model call through the in-environment endpoint failed after the
    /// gateway's retries (the agent most likely stopped on it).
    MODEL_FAILED = "model_failed", "the agent's last call to the model endpoint inside the environment failed after the gateway's retries";
    /// A tool the harness needs could not be installed into the install cache.
    AGENT_INSTALL_FAILED = "agent_install_failed", "a package the harness runs in the environment could not be installed (the message names it and the installer's last error line)";
    /// Installing a tool the harness needs exceeded its timeout.
    AGENT_INSTALL_TIMEOUT = "agent_install_timeout", "installing a package the harness needs exceeded its install timeout";
    /// Opening the environment exceeded its build timeout.
    ENVIRONMENT_TIMEOUT = "environment_timeout", "opening the environment exceeded `build_timeout_seconds`";
    /// `prepare_task` failed.
    PREPARE_FAILED = "prepare_failed", "the benchmark could not prepare the task in the environment";
    /// `prepare_task` timed out.
    PREPARE_TIMEOUT = "prepare_timeout", "preparing the task timed out";
    /// A phase's network policy could not be applied.
    NETWORK_POLICY_FAILED = "network_policy_failed", "the run or evaluation network policy could not be applied";
    /// A phase's environment bindings could not be resolved.
    ENV_BINDINGS_FAILED = "env_bindings_failed", "the phase's environment variables could not be resolved";
    /// A harness-free benchmark's `run_task` failed.
    RUN_FAILED = "run_failed", "a harness-free benchmark's `run_task` failed";
    /// The run phase exceeded its watchdog or the agent reported a timeout.
    RUN_TIMEOUT = "run_timeout", "the run phase exceeded `run_timeout_seconds` (the agent was stopped)";
    /// The harness failed to start, run or exist.
    HARNESS_FAILED = "harness_failed", "the harness failed to start its session or to run the agent";
    /// `collect_result` failed or timed out.
    RESULT_COLLECTION_FAILED = "result_collection_failed", "the harness's saved result could not be recovered within `harness_result_timeout_seconds`";
    /// `close_session` failed.
    CLOSE_SESSION_FAILED = "close_session_failed", "the harness session did not close cleanly";
    /// `close_session` exceeded the cleanup grace.
    CLOSE_SESSION_TIMEOUT = "close_session_timeout", "closing the harness session exceeded the cleanup grace";
    /// An artifact collection command failed.
    ARTIFACT_COLLECT_FAILED = "artifact_collect_failed", "an `artifact_collect` command failed or exited non-zero";
    /// The artifact collection commands exceeded their budget.
    ARTIFACT_COLLECT_TIMEOUT = "artifact_collect_timeout", "the `artifact_collect` commands exceeded `artifact_collect_timeout_seconds`";
    /// A declared artifact could not be captured.
    ARTIFACT_CAPTURE_FAILED = "artifact_capture_failed", "a declared artifact could not be captured (links escaping it, special files, I/O)";
    /// A declared artifact exceeded the artifact limits.
    ARTIFACT_LIMIT_EXCEEDED = "artifact_limit_exceeded", "the artifacts exceeded `artifact_limits.max_mb` or `max_files`";
    /// Downloading the artifacts failed.
    ARTIFACT_DOWNLOAD_FAILED = "artifact_download_failed", "downloading the declared artifacts failed";
    /// Downloading the artifacts exceeded its budget.
    ARTIFACT_DOWNLOAD_TIMEOUT = "artifact_download_timeout", "downloading the artifacts exceeded `artifact_limits.timeout_seconds`";
    /// The artifact manifest could not be written.
    ARTIFACT_MANIFEST_FAILED = "artifact_manifest_failed", "the artifact manifest could not be written";
    /// The collected artifacts do not match their manifest.
    ARTIFACT_VERIFICATION_FAILED = "artifact_verification_failed", "the collected artifacts do not match their manifest (fresh evaluation refused)";
    /// Restoring the artifacts into a fresh evaluation environment failed.
    ARTIFACT_RESTORE_FAILED = "artifact_restore_failed", "restoring the artifacts into the fresh evaluation environment failed";
    /// Restoring the artifacts exceeded its budget.
    ARTIFACT_RESTORE_TIMEOUT = "artifact_restore_timeout", "restoring the artifacts exceeded `artifact_limits.timeout_seconds`";
    /// The evaluation checkpoint could not be written.
    CHECKPOINT_FAILED = "checkpoint_failed", "the evaluation checkpoint could not be written (the attempt cannot be resumed)";
    /// The fresh evaluation environment did not open.
    EVALUATION_ENVIRONMENT_FAILED = "evaluation_environment_failed", "the fresh evaluation environment did not open";
    /// `evaluate` failed.
    EVALUATE_FAILED = "evaluate_failed", "the benchmark's evaluation failed";
    /// `evaluate` exceeded its watchdog.
    EVALUATE_TIMEOUT = "evaluate_timeout", "the evaluation exceeded `evaluation_timeout_seconds`";
    /// Closing an environment failed.
    ENVIRONMENT_CLOSE_FAILED = "environment_close_failed", "an environment did not close cleanly (`env close` releases it)";
    /// Closing an environment exceeded the cleanup grace.
    ENVIRONMENT_CLOSE_TIMEOUT = "environment_close_timeout", "closing an environment exceeded the cleanup grace";
    /// The run was cancelled during the attempt.
    CANCELLED = "cancelled", "the run was cancelled during the attempt";
    /// Every cluster job that took the task ended without publishing it (`max_resubmits`
    /// exceeded).
    JOB_LOST = "job_lost", "every Slurm job that took the task ended without publishing it (node failures, jobs killed; `runtime.slurm.max_resubmits` resubmissions)";
    /// The host itself panicked during the attempt (a bug in the host; the task still publishes).
    HOST_PANIC = "host_panic", "the host itself failed during the attempt (a bug: please report it); the task is still published";
}

/// The README's "Issue codes" table: one row per code.
pub fn markdown_table() -> String {
    let mut table = String::from("| code | meaning |\n|---|---|\n");
    for code in ALL {
        table.push_str(&format!("| `{}` | {} |\n", code.code, code.meaning));
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_snake_case() {
        let mut seen = std::collections::HashSet::new();
        for code in ALL {
            assert!(seen.insert(code.code), "{} twice", code.code);
            assert!(
                code.code
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '_'),
                "{}",
                code.code
            );
        }
    }

    #[test]
    fn the_readme_lists_every_code() {
        let readme = include_str!("../../README.md");
        assert!(
            readme.contains(&markdown_table()),
            "README.md must contain the issue-code table of host/src/issue_codes.rs:\n{}",
            markdown_table()
        );
    }
}
