//! Results: `RunResult` (one attempt), issues, trajectories and command execution.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::JsonMap;

/// Status of one attempt.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Ran and was evaluated.
    #[default]
    Completed,
    /// Failed before or during the run phase.
    RunError,
    /// Failed during evaluation.
    EvalError,
    /// Failed in both phases or the stage cannot be narrowed (`run_error_or_eval_error`).
    #[serde(rename = "run_error_or_eval_error")]
    Error,
    /// Not executed.
    Skipped,
}

impl TaskStatus {
    /// The serialised name.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Completed => "completed",
            TaskStatus::RunError => "run_error",
            TaskStatus::EvalError => "eval_error",
            TaskStatus::Error => "run_error_or_eval_error",
            TaskStatus::Skipped => "skipped",
        }
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Severity of an issue; ordered `Warning < Error < Fatal`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IssueSeverity {
    /// Informational; does not affect status.
    Warning,
    /// An error (retryable when matched by `retry_pattern_list`).
    Error,
    /// Invalidates the attempt (always retryable).
    Fatal,
}

/// Phase in which an issue occurred.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IssuePhase {
    /// Environment opening / task preparation.
    Setup,
    /// Agent run.
    Run,
    /// Result or artifact collection.
    Collect,
    /// Evaluation.
    Evaluate,
    /// Teardown.
    Cleanup,
}

/// One problem recorded on a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionIssue {
    /// Severity.
    pub severity: IssueSeverity,
    /// Phase.
    pub phase: IssuePhase,
    /// Machine-readable code.
    pub code: String,
    /// Human-readable message (must not contain secrets).
    pub message: String,
}

impl ExecutionIssue {
    /// An issue of the given severity.
    pub fn new(
        severity: IssueSeverity,
        phase: IssuePhase,
        code: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        ExecutionIssue {
            severity,
            phase,
            code: code.into(),
            message: message.into(),
        }
    }

    /// A fatal issue.
    pub fn fatal(phase: IssuePhase, code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(IssueSeverity::Fatal, phase, code, message)
    }

    /// An error issue.
    pub fn error(phase: IssuePhase, code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(IssueSeverity::Error, phase, code, message)
    }

    /// A warning.
    pub fn warning(phase: IssuePhase, code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(IssueSeverity::Warning, phase, code, message)
    }
}

/// The assistant's output in one step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AssistantContent {
    /// Visible text.
    pub content: Option<String>,
    /// Reasoning text.
    pub reasoning_content: Option<String>,
    /// Tool calls (provider-shaped JSON).
    pub tool_calls: serde_json::Value,
}

/// Per-step measurements.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TrajectoryMetric {
    /// Prompt tokens.
    pub prompt_tokens_len: Option<u64>,
    /// Completion tokens.
    pub completion_tokens_len: Option<u64>,
    /// LLM latency in milliseconds.
    pub llm_infer_ms: Option<f64>,
    /// Environment action latency in milliseconds.
    pub env_action_ms: Option<f64>,
    /// Why generation stopped.
    pub stop_reason: Option<String>,
}

/// One agent step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TrajectoryStep {
    /// Step number.
    pub step_id: u64,
    /// System prompt in effect.
    pub system_prompt: Option<String>,
    /// User content sent in this step.
    pub user_content: serde_json::Value,
    /// Tools offered in this step.
    pub tools: serde_json::Value,
    /// Assistant output.
    pub assistant_content: AssistantContent,
    /// Tool/environment observations.
    pub observation: Vec<serde_json::Value>,
    /// Measurements.
    pub metric: TrajectoryMetric,
    /// ISO start time.
    pub started_at: Option<String>,
    /// ISO end time.
    pub finished_at: Option<String>,
}

impl TrajectoryStep {
    /// Step 1 of an agent that answers in one action: `prompt` as the user content, `answer`
    /// as the assistant's content, stop reason `stop`, and the action's `env_action_ms`.
    pub fn answer(prompt: impl Into<String>, answer: Option<String>, env_action_ms: f64) -> Self {
        TrajectoryStep {
            step_id: 1,
            user_content: serde_json::Value::String(prompt.into()),
            assistant_content: AssistantContent {
                content: answer,
                ..AssistantContent::default()
            },
            metric: TrajectoryMetric {
                env_action_ms: Some(env_action_ms),
                stop_reason: Some("stop".to_string()),
                ..TrajectoryMetric::default()
            },
            ..TrajectoryStep::default()
        }
    }
}

/// The default trajectory schema version.
pub const TRAJECTORY_SCHEMA_VERSION: &str = "ACTF_v1.0";

/// An agent trajectory in the ACTF_v1.0 format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Trajectory {
    /// Schema version.
    pub schema_version: String,
    /// Steps in order.
    pub steps: Vec<TrajectoryStep>,
    /// ISO start time.
    pub started_at: Option<String>,
    /// ISO end time.
    pub finished_at: Option<String>,
}

impl Default for Trajectory {
    fn default() -> Self {
        Trajectory::new(Vec::new())
    }
}

impl Trajectory {
    /// A trajectory of `steps` in the default schema, with no start or end time.
    pub fn new(steps: Vec<TrajectoryStep>) -> Self {
        Trajectory {
            schema_version: TRAJECTORY_SCHEMA_VERSION.to_string(),
            steps,
            started_at: None,
            finished_at: None,
        }
    }
}

/// Token usage and cost of LLM calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct UsageInfo {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Cached prompt tokens.
    pub cache_tokens: u64,
    /// Cost in US dollars, when known.
    pub cost_usd: Option<f64>,
}

/// A metric observation: strict bool for binary metrics, a number for scalars.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MetricValue {
    /// A binary observation.
    Bool(bool),
    /// An integer observation.
    Int(i64),
    /// A floating-point observation.
    Float(f64),
}

impl MetricValue {
    /// The value as a number (`true` = 1.0).
    pub fn as_f64(self) -> f64 {
        match self {
            MetricValue::Bool(b) => f64::from(u8::from(b)),
            // Precision loss above 2^53 is acceptable for metrics.
            MetricValue::Int(i) => i as f64,
            MetricValue::Float(f) => f,
        }
    }
}

impl From<bool> for MetricValue {
    fn from(v: bool) -> Self {
        MetricValue::Bool(v)
    }
}

impl From<i64> for MetricValue {
    fn from(v: i64) -> Self {
        MetricValue::Int(v)
    }
}

impl From<f64> for MetricValue {
    fn from(v: f64) -> Self {
        MetricValue::Float(v)
    }
}

/// The result of one execution/evaluation attempt.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// Task id.
    pub task_id: String,
    /// Status (derived from issues by [`RunResult::push_issue`]).
    #[serde(default)]
    pub status: TaskStatus,
    /// Category.
    #[serde(default)]
    pub category: String,
    /// The agent's final answer.
    #[serde(default)]
    pub final_answer: Option<String>,
    /// Publishable reference answer.
    #[serde(default)]
    pub ground_truth: Option<serde_json::Value>,
    /// Agent trajectory.
    #[serde(default)]
    pub trajectory: Option<Trajectory>,
    /// Recorded issues.
    #[serde(default)]
    pub issues: Vec<ExecutionIssue>,
    /// Artifact records.
    #[serde(default)]
    pub artifacts: JsonMap,
    /// Benchmark observations (by metric id).
    #[serde(default)]
    pub metrics: BTreeMap<String, MetricValue>,
    /// Harness diagnostics.
    #[serde(default)]
    pub telemetry: JsonMap,
    /// Benchmark-specific extras.
    #[serde(default)]
    pub extra: JsonMap,
    /// The finished steps of a multi-step task, in order (empty for a single-step task).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<super::StepResult>,
}

impl RunResult {
    /// A completed result with nothing recorded.
    pub fn new(task_id: impl Into<String>) -> Self {
        RunResult {
            task_id: task_id.into(),
            ..RunResult::default()
        }
    }

    /// A completed result of the `prepared` task with nothing recorded but its id and
    /// category (what a harness's `execute_task` starts from).
    pub fn for_task(prepared: &super::PreparedTask) -> Self {
        RunResult {
            category: prepared.category.clone(),
            ..RunResult::new(prepared.task_id.clone())
        }
    }

    /// Records an issue and re-derives [`RunResult::status`].
    pub fn push_issue(&mut self, issue: ExecutionIssue) {
        self.issues.push(issue);
        self.refresh_status();
    }

    /// Re-derives `status` from the non-warning issues: evaluate-only → `eval_error`, only other
    /// phases → `run_error`, both → `run_error_or_eval_error`; no such issue keeps the status.
    pub fn refresh_status(&mut self) {
        let failing = self
            .issues
            .iter()
            .filter(|i| i.severity != IssueSeverity::Warning);
        let (mut eval, mut run) = (false, false);
        for issue in failing {
            if issue.phase == IssuePhase::Evaluate {
                eval = true;
            } else {
                run = true;
            }
        }
        self.status = match (run, eval) {
            (true, true) => TaskStatus::Error,
            (true, false) => TaskStatus::RunError,
            (false, true) => TaskStatus::EvalError,
            (false, false) => self.status,
        };
    }

    /// The most severe recorded issue severity.
    pub fn highest_severity(&self) -> Option<IssueSeverity> {
        self.issues.iter().map(|i| i.severity).max()
    }
}

/// The return code recorded for a timed-out command.
pub const TIMEOUT_RETURNCODE: i32 = 124;

/// The outcome of one command executed in an environment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecResult {
    /// Exit code ([`TIMEOUT_RETURNCODE`] on timeout).
    pub returncode: i32,
    /// Captured standard output.
    #[serde(default)]
    pub stdout: String,
    /// Captured standard error.
    #[serde(default)]
    pub stderr: String,
    /// Whether the command hit its timeout.
    #[serde(default)]
    pub timed_out: bool,
}

impl ExecResult {
    /// A finished command.
    pub fn new(returncode: i32, stdout: impl Into<String>, stderr: impl Into<String>) -> Self {
        ExecResult {
            returncode,
            stdout: stdout.into(),
            stderr: stderr.into(),
            timed_out: false,
        }
    }

    /// A command killed by its timeout.
    pub fn timeout(stdout: impl Into<String>, stderr: impl Into<String>) -> Self {
        ExecResult {
            timed_out: true,
            ..ExecResult::new(TIMEOUT_RETURNCODE, stdout, stderr)
        }
    }

    /// Exit code 0 and no timeout.
    pub fn success(&self) -> bool {
        self.returncode == 0 && !self.timed_out
    }
}

/// A command: an argv list (`shell = false`) or a shell string (`shell = true`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ExecCommand {
    /// Program and arguments.
    Argv(Vec<String>),
    /// A shell command line.
    Shell(String),
}

/// A command execution request for an environment session.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecRequest {
    /// The command.
    pub command: ExecCommand,
    /// Run through the shell (requires [`ExecCommand::Shell`]).
    #[serde(default)]
    pub shell: bool,
    /// Working directory (`None`: the session default).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Default environment variables for this call (overridden by session/task bindings).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Variables that must be set exactly; a conflicting binding is an error.
    #[serde(default)]
    pub required_env: BTreeMap<String, String>,
    /// Timeout in seconds.
    #[serde(default)]
    pub timeout_seconds: Option<f64>,
    /// Start in the background and return immediately.
    #[serde(default)]
    pub detach: bool,
    /// The active phase's bindings (agent run or evaluation), set by the host's phase scope:
    /// they override the call's defaults and the session's common bindings. Components leave
    /// this empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scope_env: BTreeMap<String, String>,
    /// The user the command runs as (a name or UID, `user:group` where the engine takes it);
    /// `None`: the session's default (the image's user). The host's phase scope sets the
    /// phase's user (Harbor's `[agent].user` / `[verifier].user`) on commands that name none.
    /// A provider that cannot switch users refuses a request naming one
    /// ([`super::ProviderCapabilities::exec_user`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

impl ExecRequest {
    fn with_command(command: ExecCommand, shell: bool) -> Self {
        ExecRequest {
            command,
            shell,
            cwd: None,
            env: BTreeMap::new(),
            required_env: BTreeMap::new(),
            timeout_seconds: None,
            detach: false,
            scope_env: BTreeMap::new(),
            user: None,
        }
    }

    /// Runs as `user` (a name or UID).
    pub fn user(mut self, user: impl Into<String>) -> Self {
        self.user = Some(user.into());
        self
    }

    /// An argv command (`shell = false`).
    pub fn argv<I, S>(argv: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::with_command(
            ExecCommand::Argv(argv.into_iter().map(Into::into).collect()),
            false,
        )
    }

    /// A shell command (`shell = true`).
    pub fn shell(command: impl Into<String>) -> Self {
        Self::with_command(ExecCommand::Shell(command.into()), true)
    }

    /// Sets the working directory.
    pub fn cwd(mut self, cwd: impl Into<String>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Adds one environment variable.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Adds one required environment variable.
    pub fn required_env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.required_env.insert(key.into(), value.into());
        self
    }

    /// Sets the timeout in seconds.
    pub fn timeout(mut self, seconds: f64) -> Self {
        self.timeout_seconds = Some(seconds);
        self
    }

    /// Runs detached.
    pub fn detach(mut self) -> Self {
        self.detach = true;
        self
    }

    /// The environment of the command, by precedence: the call's defaults (`env`), the
    /// session's bindings (`session`), the phase scope (`scope_env`), then `required_env`,
    /// which must agree with whatever else binds the same name. Errors name variables, never
    /// values. Every provider uses this, so the precedence is the same everywhere.
    pub fn effective_env(
        &self,
        session: &BTreeMap<String, String>,
    ) -> crate::Result<BTreeMap<String, String>> {
        let mut merged = self.env.clone();
        for layer in [session, &self.scope_env] {
            merged.extend(layer.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        for (key, value) in &self.required_env {
            if merged.get(key).is_some_and(|bound| bound != value) {
                return Err(crate::Error::invalid_input(format!(
                    "exec: required environment variable `{key}` conflicts with another binding \
                     of the same name"
                )));
            }
            merged.insert(key.clone(), value.clone());
        }
        for (key, value) in &merged {
            if key.is_empty() || key.contains(['=', '\0']) {
                return Err(crate::Error::invalid_input(format!(
                    "exec: invalid environment variable name `{}`",
                    key.escape_debug()
                )));
            }
            if value.contains('\0') {
                return Err(crate::Error::invalid_input(format!(
                    "exec: the value of environment variable `{key}` contains a NUL byte"
                )));
            }
        }
        Ok(merged)
    }

    /// Checks that the command form matches `shell`.
    pub fn validate(&self) -> Result<(), String> {
        match (&self.command, self.shell) {
            (ExecCommand::Shell(_), true) => Ok(()),
            (ExecCommand::Argv(argv), false) if !argv.is_empty() => Ok(()),
            (ExecCommand::Argv(_), false) => Err("exec: empty argv".to_string()),
            (ExecCommand::Argv(_), true) => {
                Err("exec: shell=true requires a command string".to_string())
            }
            (ExecCommand::Shell(_), false) => {
                Err("exec: shell=false requires an argv list".to_string())
            }
        }
    }
}

/// Variable values are hidden (they may hold resolved secrets).
impl fmt::Debug for ExecRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecRequest")
            .field("command", &self.command)
            .field("shell", &self.shell)
            .field("cwd", &self.cwd)
            .field("env", &super::RedactedMap(&self.env))
            .field("required_env", &super::RedactedMap(&self.required_env))
            .field("scope_env", &super::RedactedMap(&self.scope_env))
            .field("timeout_seconds", &self.timeout_seconds)
            .field("detach", &self.detach)
            .field("user", &self.user)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn effective_env_layers_call_session_scope_then_required() {
        let session: BTreeMap<String, String> = [("A", "session"), ("B", "session")]
            .map(|(k, v)| (k.into(), v.into()))
            .into();
        let mut request = ExecRequest::shell("true")
            .env("A", "call")
            .env("C", "call")
            .required_env("D", "required");
        request.scope_env.insert("B".into(), "scope".into());
        let env = request.effective_env(&session).unwrap();
        let get = |k: &str| env.get(k).map(String::as_str);
        assert_eq!(
            (get("A"), get("B"), get("C"), get("D")),
            (
                Some("session"),
                Some("scope"),
                Some("call"),
                Some("required")
            )
        );
        let clash = ExecRequest::shell("true").required_env("B", "other-secret-value");
        let err = clash.effective_env(&session).unwrap_err().message;
        assert!(
            err.contains("`B`") && !err.contains("other-secret-value"),
            "{err}"
        );
        let bad = ExecRequest::shell("true").env("X=Y", "v");
        assert!(bad.effective_env(&BTreeMap::new()).is_err());
    }

    #[test]
    fn task_status_strings() {
        let all = [
            (TaskStatus::Completed, "completed"),
            (TaskStatus::RunError, "run_error"),
            (TaskStatus::EvalError, "eval_error"),
            (TaskStatus::Error, "run_error_or_eval_error"),
            (TaskStatus::Skipped, "skipped"),
        ];
        for (status, name) in all {
            assert_eq!(serde_json::to_value(status).unwrap(), json!(name));
            assert_eq!(status.to_string(), name);
            assert_eq!(
                serde_json::from_value::<TaskStatus>(json!(name)).unwrap(),
                status
            );
        }
    }

    #[test]
    fn status_derivation() {
        use IssuePhase::*;
        let derive = |phases: &[(IssueSeverity, IssuePhase)]| {
            let mut r = RunResult::new("t");
            for &(sev, phase) in phases {
                r.push_issue(ExecutionIssue::new(sev, phase, "c", "m"));
            }
            r.status
        };
        let (w, e, f) = (
            IssueSeverity::Warning,
            IssueSeverity::Error,
            IssueSeverity::Fatal,
        );
        assert_eq!(derive(&[]), TaskStatus::Completed);
        assert_eq!(derive(&[(w, Run), (w, Evaluate)]), TaskStatus::Completed);
        assert_eq!(derive(&[(e, Evaluate)]), TaskStatus::EvalError);
        assert_eq!(derive(&[(e, Run)]), TaskStatus::RunError);
        assert_eq!(derive(&[(f, Setup), (w, Evaluate)]), TaskStatus::RunError);
        assert_eq!(derive(&[(e, Collect), (f, Evaluate)]), TaskStatus::Error);
        assert_eq!(derive(&[(e, Cleanup)]), TaskStatus::RunError);

        let mut skipped = RunResult::new("t");
        skipped.status = TaskStatus::Skipped;
        skipped.push_issue(ExecutionIssue::warning(Run, "w", "note"));
        assert_eq!(skipped.status, TaskStatus::Skipped);
        assert_eq!(skipped.highest_severity(), Some(IssueSeverity::Warning));
        skipped.push_issue(ExecutionIssue::fatal(Setup, "boom", "x"));
        assert_eq!(skipped.highest_severity(), Some(IssueSeverity::Fatal));
        assert_eq!(RunResult::new("t").highest_severity(), None);
    }

    #[test]
    fn run_result_round_trip() {
        let mut r = RunResult::new("t");
        r.final_answer = Some("Paris".into());
        r.metrics.insert("correct".into(), true.into());
        r.metrics.insert("steps".into(), 3i64.into());
        r.metrics.insert("score".into(), 0.5.into());
        r.push_issue(ExecutionIssue::error(
            IssuePhase::Evaluate,
            "eval_failed",
            "bad",
        ));
        r.trajectory = Some(Trajectory {
            steps: vec![TrajectoryStep {
                step_id: 1,
                ..Default::default()
            }],
            ..Default::default()
        });
        let value = serde_json::to_value(&r).unwrap();
        assert_eq!(value["status"], "eval_error");
        assert_eq!(
            value["metrics"],
            json!({"correct": true, "score": 0.5, "steps": 3})
        );
        assert_eq!(value["trajectory"]["schema_version"], "ACTF_v1.0");
        assert_eq!(value["issues"][0]["severity"], "error");
        let back: RunResult = serde_json::from_value(value).unwrap();
        assert_eq!(back, r);
        assert_eq!(back.metrics["steps"], MetricValue::Int(3));
        assert_eq!(back.metrics["correct"].as_f64(), 1.0);
        let minimal: RunResult = serde_json::from_str(r#"{"task_id":"t"}"#).unwrap();
        assert_eq!(minimal, RunResult::new("t"));
        let traj: Trajectory = serde_json::from_str("{}").unwrap();
        assert_eq!(traj.schema_version, TRAJECTORY_SCHEMA_VERSION);
    }

    #[test]
    fn exec_request_and_result() {
        let req = ExecRequest::argv(["ls", "-la"])
            .cwd("/app")
            .env("TOKEN", "s3cr3t")
            .timeout(5.0);
        assert!(req.validate().is_ok());
        assert!(!format!("{req:?}").contains("s3cr3t"));
        assert!(ExecRequest::shell("echo hi").validate().is_ok());
        assert!(ExecRequest::argv(Vec::<String>::new()).validate().is_err());
        let mut bad = ExecRequest::shell("echo");
        bad.shell = false;
        assert!(bad.validate().is_err());
        let back: ExecRequest =
            serde_json::from_value(serde_json::to_value(&req).unwrap()).unwrap();
        assert_eq!(back, req);
        let parsed: ExecRequest =
            serde_json::from_value(json!({"command": "echo hi", "shell": true})).unwrap();
        assert_eq!(parsed, ExecRequest::shell("echo hi"));

        assert!(ExecResult::new(0, "ok", "").success());
        assert!(!ExecResult::new(1, "", "err").success());
        let t = ExecResult::timeout("", "");
        assert_eq!(
            (t.returncode, t.timed_out, t.success()),
            (TIMEOUT_RETURNCODE, true, false)
        );
        let r: ExecResult = serde_json::from_str(r#"{"returncode":0}"#).unwrap();
        assert_eq!(r, ExecResult::new(0, "", ""));
    }
}
