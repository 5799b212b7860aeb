//! Every issue code the host records on a task's attempts, and the failure class each code
//! belongs to. The codes are public: users match them with `--retry-pattern-list` and
//! `--rerun`, and the README's "Issue codes" and "Failure classes" tables are these lists (a
//! test keeps them equal). Components add their own codes (a plugin's documentation lists
//! them); [`class_of`] gives those a class too.

use agentcompass_plugin_api::contracts::{ExecutionIssue, IssuePhase, IssueSeverity};

/// Who failed, when an attempt did not end cleanly. Only [`FailureClass::Agent`] and
/// [`FailureClass::Limit`] outcomes are scored (as failures); the others leave the task
/// unscored and are counted per class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FailureClass {
    /// The agent failed the task (it crashed, timed out, gave up).
    Agent,
    /// The model endpoint failed (429, 5xx, timeouts) after the gateway's retries.
    Model,
    /// The infrastructure failed: sandbox start, exec transport, image build, a lost node.
    Environment,
    /// The verifier crashed or timed out.
    Evaluation,
    /// A plugin error or panic, or a bug in the host.
    Host,
    /// A limit of the attempt was reached (`execution.limits`, artifact limits).
    Limit,
    /// The request's or orchestration's budget was used up before the task ran.
    Budget,
    /// The run was cancelled during the attempt.
    Cancelled,
}

impl FailureClass {
    /// Every class, in the order the README lists them.
    pub const ALL: [FailureClass; 8] = [
        FailureClass::Agent,
        FailureClass::Model,
        FailureClass::Environment,
        FailureClass::Evaluation,
        FailureClass::Host,
        FailureClass::Limit,
        FailureClass::Budget,
        FailureClass::Cancelled,
    ];

    /// The class's name (`environment`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            FailureClass::Agent => "agent",
            FailureClass::Model => "model",
            FailureClass::Environment => "environment",
            FailureClass::Evaluation => "evaluation",
            FailureClass::Host => "host",
            FailureClass::Limit => "limit",
            FailureClass::Budget => "budget",
            FailureClass::Cancelled => "cancelled",
        }
    }

    /// Parses a class name.
    pub fn parse(name: &str) -> Option<FailureClass> {
        FailureClass::ALL.into_iter().find(|c| c.as_str() == name)
    }

    /// Whether an outcome of this class is scored (as a failure of the task).
    pub fn is_scored(self) -> bool {
        matches!(self, FailureClass::Agent | FailureClass::Limit)
    }

    /// One sentence for users.
    pub fn meaning(self) -> &'static str {
        match self {
            FailureClass::Agent => "the agent failed the task (crashed, timed out, gave up)",
            FailureClass::Model => "the model endpoint failed (429, 5xx, timeouts) after the gateway's retries",
            FailureClass::Environment => "the infrastructure failed: sandbox start, exec transport, image build, artifact transfer, a lost cluster job",
            FailureClass::Evaluation => "the verifier crashed or timed out",
            FailureClass::Host => "a plugin returned an error or panicked, or the host has a bug",
            FailureClass::Limit => "a limit of the attempt was reached (`execution.limits`, artifact limits)",
            FailureClass::Budget => "the budget was used up before the task ran (the task is `skipped`, never scored)",
            FailureClass::Cancelled => "the run was cancelled during the attempt",
        }
    }
}

impl std::fmt::Display for FailureClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An issue code, its class and what it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IssueCode {
    /// The code, as recorded in `result.json` `issues[].code`.
    pub code: &'static str,
    /// Who failed.
    pub class: FailureClass,
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
    ($($(#[$doc:meta])* $name:ident = $code:literal, $class:ident, $meaning:literal;)*) => {
        $(
            $(#[$doc])*
            pub const $name: IssueCode = IssueCode {
                code: $code,
                class: FailureClass::$class,
                meaning: $meaning,
            };
        )*
        /// Every code, in the order the README lists them.
        pub const ALL: &[IssueCode] = &[$($name),*];
    };
}

issue_codes! {
    /// Planning failed (a recipe, the benchmark's or the harness's plan).
SETUP_FAILED = "setup_failed", Host, "planning the attempt failed (benchmark, harness or recipe plan)";
    /// The provider cannot enforce what the plan asks for.
UNSUPPORTED = "unsupported", Environment, "the environment provider cannot enforce the plan (network policy, OS, resources) or a binding is unset";
    /// Opening the environment failed.
ENVIRONMENT_FAILED = "environment_failed", Environment, "the environment did not open";
    /// The model endpoint the environment needs could not be served.
MODEL_ENDPOINT_FAILED = "model_endpoint_failed", Environment, "the model endpoint inside the environment could not be served (socket, port)";
    /// The agent's last model call through the in-environment endpoint failed after the
    /// gateway's retries (the agent most likely stopped on it).
MODEL_FAILED = "model_failed", Model, "the agent's last call to the model endpoint inside the environment failed after the gateway's retries";
    /// A model call (through `model.generate` or the endpoint inside the environment) was
    /// rate-limited by the endpoint for longer than `max_rate_limit_wait_seconds`.
MODEL_RATE_LIMITED = "model_rate_limited", Model, "the model endpoint kept rate-limiting a call (429, 529, a rate-limit error) for longer than `model.params.max_rate_limit_wait_seconds`; the endpoint's limit was already adapted (`--rerun model` runs the task again)";
    /// A tool the harness needs could not be installed into the install cache.
AGENT_INSTALL_FAILED = "agent_install_failed", Environment, "a package the harness runs in the environment could not be installed (the message names it and the installer's last error line)";
    /// Installing a tool the harness needs exceeded its timeout.
AGENT_INSTALL_TIMEOUT = "agent_install_timeout", Environment, "installing a package the harness needs exceeded its install timeout";
    /// Opening the environment exceeded its build timeout.
ENVIRONMENT_TIMEOUT = "environment_timeout", Environment, "opening the environment exceeded `build_timeout_seconds`";
    /// `prepare_task` failed.
PREPARE_FAILED = "prepare_failed", Environment, "the benchmark could not prepare the task in the environment";
    /// `prepare_task` timed out.
PREPARE_TIMEOUT = "prepare_timeout", Environment, "preparing the task timed out";
    /// A phase's network policy could not be applied.
NETWORK_POLICY_FAILED = "network_policy_failed", Environment, "the run or evaluation network policy could not be applied";
    /// A phase's environment bindings could not be resolved.
ENV_BINDINGS_FAILED = "env_bindings_failed", Environment, "the phase's environment variables could not be resolved";
    /// A harness-free benchmark's `run_task` failed.
RUN_FAILED = "run_failed", Agent, "a harness-free benchmark's `run_task` failed";
    /// The run phase exceeded its watchdog or the agent reported a timeout.
RUN_TIMEOUT = "run_timeout", Agent, "the run phase exceeded `run_timeout_seconds` (the agent was stopped)";
    /// The harness failed to start, run or exist.
HARNESS_FAILED = "harness_failed", Host, "the harness failed to start its session or to run the agent";
    /// `collect_result` failed or timed out.
RESULT_COLLECTION_FAILED = "result_collection_failed", Host, "the harness's saved result could not be recovered within `harness_result_timeout_seconds`";
    /// `close_session` failed.
CLOSE_SESSION_FAILED = "close_session_failed", Host, "the harness session did not close cleanly";
    /// `close_session` exceeded the cleanup grace.
CLOSE_SESSION_TIMEOUT = "close_session_timeout", Host, "closing the harness session exceeded the cleanup grace";
    /// An artifact collection command failed.
ARTIFACT_COLLECT_FAILED = "artifact_collect_failed", Environment, "an `artifact_collect` command failed or exited non-zero";
    /// The artifact collection commands exceeded their budget.
ARTIFACT_COLLECT_TIMEOUT = "artifact_collect_timeout", Environment, "the `artifact_collect` commands exceeded `artifact_collect_timeout_seconds`";
    /// A declared artifact could not be captured.
ARTIFACT_CAPTURE_FAILED = "artifact_capture_failed", Environment, "a declared artifact could not be captured (links escaping it, special files, I/O)";
    /// A declared artifact exceeded the artifact limits.
ARTIFACT_LIMIT_EXCEEDED = "artifact_limit_exceeded", Limit, "the artifacts exceeded `artifact_limits.max_mb` or `max_files`";
    /// Downloading the artifacts failed.
ARTIFACT_DOWNLOAD_FAILED = "artifact_download_failed", Environment, "downloading the declared artifacts failed";
    /// Downloading the artifacts exceeded its budget.
ARTIFACT_DOWNLOAD_TIMEOUT = "artifact_download_timeout", Environment, "downloading the artifacts exceeded `artifact_limits.timeout_seconds`";
    /// The artifact manifest could not be written.
ARTIFACT_MANIFEST_FAILED = "artifact_manifest_failed", Host, "the artifact manifest could not be written";
    /// The collected artifacts do not match their manifest.
ARTIFACT_VERIFICATION_FAILED = "artifact_verification_failed", Environment, "the collected artifacts do not match their manifest (fresh evaluation refused)";
    /// Restoring the artifacts into a fresh evaluation environment failed.
ARTIFACT_RESTORE_FAILED = "artifact_restore_failed", Environment, "restoring the artifacts into the fresh evaluation environment failed";
    /// Restoring the artifacts exceeded its budget.
ARTIFACT_RESTORE_TIMEOUT = "artifact_restore_timeout", Environment, "restoring the artifacts exceeded `artifact_limits.timeout_seconds`";
    /// The evaluation checkpoint could not be written.
CHECKPOINT_FAILED = "checkpoint_failed", Host, "the evaluation checkpoint could not be written (the attempt cannot be resumed)";
    /// The fresh evaluation environment did not open.
EVALUATION_ENVIRONMENT_FAILED = "evaluation_environment_failed", Environment, "the fresh evaluation environment did not open";
    /// `evaluate` failed.
EVALUATE_FAILED = "evaluate_failed", Evaluation, "the benchmark's evaluation failed";
    /// `evaluate` exceeded its watchdog.
EVALUATE_TIMEOUT = "evaluate_timeout", Evaluation, "the evaluation exceeded `evaluation_timeout_seconds`";
    /// Closing an environment failed.
ENVIRONMENT_CLOSE_FAILED = "environment_close_failed", Environment, "an environment did not close cleanly (`env close` releases it)";
    /// Closing an environment exceeded the cleanup grace.
ENVIRONMENT_CLOSE_TIMEOUT = "environment_close_timeout", Environment, "closing an environment exceeded the cleanup grace";
    /// The run was cancelled during the attempt.
CANCELLED = "cancelled", Cancelled, "the run was cancelled during the attempt";
    /// Every cluster job that took the task ended without publishing it (`max_resubmits`
    /// exceeded).
JOB_LOST = "job_lost", Environment, "every Slurm job that took the task ended without publishing it (node failures, jobs killed; `runtime.slurm.max_resubmits` resubmissions)";
    /// An `execution.limits` limit of the attempt was reached (the message names it).
    LIMIT_EXCEEDED = "limit_exceeded", Limit, "a limit of `execution.limits` was reached (`max_tokens`, `max_cost_usd`, `max_model_calls`, `max_turns`, `working_seconds`; the message names it); the agent was stopped and the attempt is evaluated as it stands";
    /// The task never ran: the budget was used up (the reason of a `skipped` task).
    BUDGET_EXHAUSTED = "budget_exhausted", Budget, "the request's or orchestration's budget was used up before the task started (the task is `skipped`, not scored; `--reuse` with a larger budget runs it)";
    /// `ctl cancel` named the task (the reason of a `skipped` task).
    CANCELLED_BY_USER = "cancelled_by_user", Cancelled, "`ctl RUN_DIR cancel TASK` dropped the task: a pending one never started, a running one was stopped and its work discarded (`skipped`, not scored; `--reuse` runs it)";
    /// Non-agent failures exceeded `--fail-on-error` (the reason of a `skipped` task).
    ERROR_RATE_EXCEEDED = "error_rate_exceeded", Cancelled, "non-agent failures exceeded `--fail-on-error`, so the task was not started (`skipped`; `--reuse` runs it)";
    /// The host itself panicked during the attempt (a bug in the host; the task still publishes).
HOST_PANIC = "host_panic", Host, "the host itself failed during the attempt (a bug: please report it); the task is still published";
}

/// The codes the bundled plugins record, with their classes (a plugin's other codes are
/// classed by their phase, see [`class_of`]).
const PLUGIN_CODES: &[(&str, FailureClass)] = &[
    ("model_failed", FailureClass::Model),
    ("model_timeout", FailureClass::Model),
    ("turn_limit", FailureClass::Limit),
    ("cost_limit", FailureClass::Limit),
    ("no_environment", FailureClass::Environment),
    ("verifier_timeout", FailureClass::Evaluation),
];

/// The class of an issue: the host's own codes by their table, the bundled plugins' known
/// codes by theirs, any other code by its phase (setup and cleanup: `environment`; run:
/// `agent`; collect: `host`; evaluate: `evaluation`).
pub fn class_of(issue: &ExecutionIssue) -> FailureClass {
    class_of_code(&issue.code).unwrap_or(match issue.phase {
        IssuePhase::Setup | IssuePhase::Cleanup => FailureClass::Environment,
        IssuePhase::Run => FailureClass::Agent,
        IssuePhase::Collect => FailureClass::Host,
        IssuePhase::Evaluate => FailureClass::Evaluation,
    })
}

/// The class of a code the host or a bundled plugin records (`None`: another plugin's code).
pub fn class_of_code(code: &str) -> Option<FailureClass> {
    ALL.iter()
        .find(|c| c.code == code)
        .map(|c| c.class)
        .or_else(|| {
            PLUGIN_CODES
                .iter()
                .find(|(c, _)| *c == code)
                .map(|(_, class)| *class)
        })
}

/// Why an attempt is not scored: its first FATAL, else first ERROR, issue whose class is not
/// scored (`None`: the attempt is scored, maybe as a failure).
pub fn unscored_issue(issues: &[ExecutionIssue]) -> Option<(&ExecutionIssue, FailureClass)> {
    [IssueSeverity::Fatal, IssueSeverity::Error]
        .into_iter()
        .flat_map(|severity| issues.iter().filter(move |i| i.severity == severity))
        .map(|issue| (issue, class_of(issue)))
        .find(|(_, class)| !class.is_scored())
}

/// A short reason for an unscored issue, for the terminal and the summary: `rate limited`,
/// `server errors` or `timed out` for the model's failures, else the code.
pub fn failure_detail(issue: &ExecutionIssue, class: FailureClass) -> String {
    let message = issue.message.as_str();
    if class == FailureClass::Model {
        if issue.code == MODEL_RATE_LIMITED.code
            || message.contains(" 429")
            || message.contains("rate limit")
        {
            return "rate limited".into();
        }
        if message.contains("answered 5") {
            return "server errors".into();
        }
        if message.contains("no answer within") || issue.code.ends_with("_timeout") {
            return "timed out".into();
        }
    }
    issue.code.clone()
}

/// The README's "Issue codes" table: one row per code.
pub fn markdown_table() -> String {
    let mut table = String::from("| code | class | meaning |\n|---|---|---|\n");
    for code in ALL {
        table.push_str(&format!(
            "| `{}` | {} | {} |\n",
            code.code, code.class, code.meaning
        ));
    }
    table
}

/// The README's "Failure classes" table: one row per class.
pub fn class_table() -> String {
    let mut table = String::from("| class | scored | meaning |\n|---|---|---|\n");
    for class in FailureClass::ALL {
        let scored = if class.is_scored() {
            "as a failure"
        } else {
            "no"
        };
        table.push_str(&format!("| `{class}` | {scored} | {} |\n", class.meaning()));
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
    fn issues_are_classed_by_code_then_by_phase() {
        let issue = |phase, code: &str| ExecutionIssue::error(phase, code, "m");
        assert_eq!(
            class_of(&issue(IssuePhase::Run, "environment_failed")),
            FailureClass::Environment
        );
        assert_eq!(
            class_of(&issue(IssuePhase::Run, "model_failed")),
            FailureClass::Model
        );
        assert_eq!(
            class_of(&issue(IssuePhase::Run, "claude_code_failed")),
            FailureClass::Agent
        );
        assert_eq!(
            class_of(&issue(IssuePhase::Evaluate, "reward_file_missing")),
            FailureClass::Evaluation
        );
        assert_eq!(
            class_of(&issue(IssuePhase::Setup, "docker_build_failed")),
            FailureClass::Environment
        );
        let issues = vec![
            ExecutionIssue::warning(IssuePhase::Run, "model_failed", "w"),
            issue(IssuePhase::Run, "run_timeout"),
            ExecutionIssue::error(
                IssuePhase::Run,
                "model_failed",
                "answered 429 slow down (gave up after 3 attempts)",
            ),
        ];
        let (unscored, class) = unscored_issue(&issues).unwrap();
        assert_eq!(
            (unscored.code.as_str(), class),
            ("model_failed", FailureClass::Model)
        );
        assert_eq!(failure_detail(unscored, class), "rate limited");
        assert!(
            unscored_issue(&issues[..2]).is_none(),
            "agent outcomes are scored"
        );
        for class in FailureClass::ALL {
            assert_eq!(FailureClass::parse(class.as_str()), Some(class));
        }
    }

    #[test]
    fn the_readme_lists_every_code() {
        let readme = include_str!("../../docs/src/issue-codes.md");
        assert!(
            readme.contains(&markdown_table()),
            "docs/src/issue-codes.md must contain the issue-code table of host/src/issue_codes.rs:\n{}",
            markdown_table()
        );
        assert!(
            readme.contains(&class_table()),
            "docs/src/issue-codes.md must contain the failure-class table of host/src/issue_codes.rs:\n{}",
            class_table()
        );
    }
}
