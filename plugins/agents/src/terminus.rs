//! `terminus`: a bash-tool agent loop in the spirit of Terminus-2 / mini-swe-agent. The model
//! (through the host's gateway) calls `bash` to run commands in the task environment and
//! `done` (alias `submit`) to finish.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use agentcompass_plugin_api::contracts::{
    tool_result_message, ComponentInfo, ComponentKind, ConfigField, ConfigSchema, ConfigType,
    EnvironmentSpec, ExecRequest, ExecResult, ExecutionIssue, HarnessPlan, IssuePhase, Message,
    ModelRequest, ModelResponse, ModelSpec, PreparedTask, RunRequest, RunResult, ToolCall, ToolDef,
    Trajectory, TrajectoryStep,
};
use agentcompass_plugin_api::sdk::{async_trait, Ctx, Harness, HarnessSession, SessionRef};
use agentcompass_plugin_api::{Error, ErrorKind, Result};
use serde_json::{json, Value};

use crate::oracle::runs_bash;
use crate::params::Params;
use crate::text::truncate_middle;
use crate::trajectory::{assistant_content, iso_now, model_error_issue, model_metric};

/// Registry id.
pub const ID: &str = "terminus";

/// Fallback run timeout when neither the task nor the benchmark gives one.
const DEFAULT_RUN_TIMEOUT_SECONDS: f64 = 3600.0;

/// The user turn sent after a reply that called no tool.
pub(crate) const NUDGE: &str = "Your last reply called no tool. Use the `bash` tool to work on \
the task, or call `done` when the task is complete.";

/// The public parameters.
pub fn schema() -> ConfigSchema {
    ConfigSchema::empty()
        .field(ConfigField::new(
            "max_turns",
            ConfigType::Integer,
            json!(30),
            "Model calls before the run stops with a `turn_limit` issue",
        ))
        .field(ConfigField::new(
            "command_timeout_seconds",
            ConfigType::Number,
            json!(120),
            "Timeout of one bash command (also capped by the remaining run time)",
        ))
        .field(ConfigField::new(
            "max_output_chars",
            ConfigType::Integer,
            json!(10_000),
            "Command output shown to the model, in characters (head and tail kept)",
        ))
        .field(ConfigField::new(
            "cost_limit_usd",
            ConfigType::Number,
            json!(null),
            "Stop with a `cost_limit` issue once the summed model cost exceeds this (needs \
             prices known to the gateway)",
        ))
        .field(ConfigField::new(
            "request_timeout_seconds",
            ConfigType::Number,
            json!(null),
            "Per-call model request timeout in seconds (default: the gateway's)",
        ))
}

/// Registry entry.
pub fn info() -> ComponentInfo {
    let mut info = ComponentInfo::new(
        ComponentKind::Harness,
        ID,
        "Agent loop with a `bash` tool run in the task environment and a `done` tool \
         (Terminus-2 / mini-swe-agent style), through the host's model gateway",
    )
    .with_schema(schema());
    info.parallel_attempts_safe = true;
    info
}

/// Validated params.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Settings {
    max_turns: u64,
    command_timeout_seconds: f64,
    max_output_chars: usize,
    cost_limit_usd: Option<f64>,
    request_timeout_seconds: Option<f64>,
}

impl Settings {
    pub(crate) fn read(req: &RunRequest) -> Result<Self> {
        let params = Params::read(ID, &schema(), req)?;
        let max_output_chars = params.integer("max_output_chars", 100)?.unwrap_or(10_000);
        Ok(Settings {
            max_turns: params.integer("max_turns", 1)?.unwrap_or(30),
            command_timeout_seconds: params
                .positive_number("command_timeout_seconds")?
                .unwrap_or(120.0),
            max_output_chars: usize::try_from(max_output_chars)
                .map_err(|_| params.error("max_output_chars", "is too large"))?,
            cost_limit_usd: params.positive_number("cost_limit_usd")?,
            request_timeout_seconds: params.positive_number("request_timeout_seconds")?,
        })
    }
}

/// The harness.
pub struct Terminus;

struct TerminusSession {
    settings: Settings,
    env: SessionRef,
    /// Copies of the finished steps, so `collect_result` can keep them when the host's
    /// watchdog cut `execute_task` short.
    journal: Journal,
}

/// Finished steps, shared between the loop and `collect_result`.
type Journal = Arc<Mutex<Vec<TrajectoryStep>>>;

#[async_trait]
impl Harness for Terminus {
    fn supports(&self, environment: &EnvironmentSpec, _model: &ModelSpec) -> Result<bool> {
        Ok(runs_bash(environment))
    }

    fn build_plan(&self, req: &RunRequest, _environment: &EnvironmentSpec) -> Result<HarnessPlan> {
        Settings::read(req)?;
        Ok(HarnessPlan {
            default_run_timeout_seconds: Some(DEFAULT_RUN_TIMEOUT_SECONDS),
            ..HarnessPlan::default()
        })
    }

    async fn start_session(
        &self,
        _ctx: &Ctx,
        env: &SessionRef,
        req: &RunRequest,
        _plan: &HarnessPlan,
    ) -> Result<HarnessSession> {
        Ok(Arc::new(TerminusSession {
            settings: Settings::read(req)?,
            env: env.clone(),
            journal: Journal::default(),
        }))
    }

    async fn execute_task(
        &self,
        ctx: &Ctx,
        session: &HarnessSession,
        prepared: &PreparedTask,
        _req: &RunRequest,
        plan: &HarnessPlan,
    ) -> Result<RunResult> {
        let session = session
            .downcast_ref::<TerminusSession>()
            .ok_or_else(|| Error::msg(format!("{ID}: foreign harness session")))?;
        Agent::new(ctx, &session.env, &session.settings, prepared, plan)
            .with_journal(session.journal.clone())
            .run()
            .await
    }

    /// After a run the host cut short (no trajectory), keeps the steps finished so far.
    async fn collect_result(
        &self,
        _ctx: &Ctx,
        session: &HarnessSession,
        _prepared: &PreparedTask,
        _req: &RunRequest,
        _plan: &HarnessPlan,
        mut result: RunResult,
    ) -> Result<RunResult> {
        if result.trajectory.is_some() {
            return Ok(result);
        }
        let session = session
            .downcast_ref::<TerminusSession>()
            .ok_or_else(|| Error::msg(format!("{ID}: foreign harness session")))?;
        let steps = session
            .journal
            .lock()
            .map(|steps| steps.clone())
            .unwrap_or_default();
        if !steps.is_empty() {
            result.telemetry.insert("turns".into(), json!(steps.len()));
            result.trajectory = Some(Trajectory {
                steps,
                ..Trajectory::default()
            });
        }
        Ok(result)
    }
}

/// The two tools offered to the model.
pub(crate) fn tool_defs() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "bash".into(),
            description: "Run one bash command (`bash -c`) in the task environment and get its \
                          exit code and output. Each call starts a fresh shell."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command to run"}
                },
                "required": ["command"]
            }),
        },
        ToolDef {
            name: "done".into(),
            description: "Declare the task complete. Call it once, after verifying your work."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "summary": {
                        "type": "string",
                        "description": "What you did, or the answer when the task asks for one"
                    }
                }
            }),
        },
    ]
}

/// The system prompt: how to work, the tools, the limits, then the task's own system prompt.
fn system_prompt(settings: &Settings, workdir: Option<&str>, task_system: &[String]) -> String {
    let place = workdir.map_or_else(
        || "the environment's default working directory".to_string(),
        |dir| format!("`{dir}`"),
    );
    let mut prompt = format!(
        "You are an autonomous agent solving a task inside a Linux environment. You act only \
         through tools:\n\
         - `bash`: runs one command with `bash -c` in {place} and returns its exit code and \
         output (stdout, then stderr; at most {chars} characters, long output keeps its head \
         and tail). Every call starts a fresh shell: `cd` and variables do not persist, so \
         chain commands with `&&` or use absolute paths. A command is stopped after {timeout} \
         seconds; never start interactive programs (editors, pagers, REPLs) - use \
         non-interactive flags instead.\n\
         - `done`: call it once the task is complete, with an optional `summary` of what you \
         did (put the answer there when the task asks for one).\n\
         Work step by step: inspect, act, then verify the result before calling `done`. Nobody \
         will answer questions; decide yourself. You have at most {turns} replies.",
        chars = settings.max_output_chars,
        timeout = settings.command_timeout_seconds,
        turns = settings.max_turns,
    );
    for extra in task_system.iter().filter(|s| !s.trim().is_empty()) {
        prompt.push_str("\n\nTask instructions:\n");
        prompt.push_str(extra);
    }
    prompt
}

/// The `command` argument of a `bash` call (arguments may arrive as raw JSON text).
fn bash_command(call: &ToolCall) -> Option<String> {
    let parsed;
    let args = match &call.arguments {
        Value::String(raw) => {
            parsed = serde_json::from_str::<Value>(raw).ok()?;
            &parsed
        }
        other => other,
    };
    args.get("command")
        .and_then(Value::as_str)
        .filter(|c| !c.trim().is_empty())
        .map(str::to_string)
}

/// The optional `summary` argument of a `done` call.
fn done_summary(call: &ToolCall) -> Option<String> {
    let summary = match &call.arguments {
        Value::String(raw) => serde_json::from_str::<Value>(raw)
            .ok()
            .and_then(|v| v.get("summary").and_then(Value::as_str).map(str::to_string))
            .or_else(|| Some(raw.clone())),
        other => other
            .get("summary")
            .and_then(Value::as_str)
            .map(str::to_string),
    };
    summary.filter(|s| !s.trim().is_empty())
}

/// What the model sees of a finished command.
fn render_observation(outcome: &ExecResult, timeout: f64, max_chars: usize) -> (String, String) {
    let mut output = outcome.stdout.clone();
    if !outcome.stderr.is_empty() {
        if !output.is_empty() && !output.ends_with('\n') {
            output.push('\n');
        }
        output.push_str("[stderr]\n");
        output.push_str(&outcome.stderr);
    }
    let output = truncate_middle(&output, max_chars);
    let status = if outcome.timed_out {
        format!(
            "exit_code: {} (timed out after {timeout}s)",
            outcome.returncode
        )
    } else {
        format!("exit_code: {}", outcome.returncode)
    };
    let text = if output.is_empty() {
        format!("{status}\n(no output)")
    } else {
        format!("{status}\n{output}")
    };
    (text, output)
}

/// Why the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Finish {
    Done,
    NoToolCalls,
    TurnLimit,
    CostLimit,
    ModelError,
    EnvironmentError,
    RunTimeout,
}

impl Finish {
    fn as_str(self) -> &'static str {
        match self {
            Finish::Done => "done",
            Finish::NoToolCalls => "no_tool_calls",
            Finish::TurnLimit => "turn_limit",
            Finish::CostLimit => "cost_limit",
            Finish::ModelError => "model_error",
            Finish::EnvironmentError => "environment_error",
            Finish::RunTimeout => "run_timeout",
        }
    }
}

/// The state of one run of the loop.
pub(crate) struct Agent<'a> {
    ctx: &'a Ctx,
    env: &'a SessionRef,
    settings: &'a Settings,
    prepared: &'a PreparedTask,
    run_timeout_seconds: Option<f64>,
    started: Instant,
    cwd: Option<String>,
    system: String,
    messages: Vec<Message>,
    tools: Vec<ToolDef>,
    result: RunResult,
    steps: Vec<TrajectoryStep>,
    pending_user: Value,
    summary: Option<String>,
    last_content: Option<String>,
    cost_usd: f64,
    no_tool_replies: u32,
    tool_calls: u64,
    bash_calls: u64,
    journal: Option<Journal>,
}

impl<'a> Agent<'a> {
    pub(crate) fn new(
        ctx: &'a Ctx,
        env: &'a SessionRef,
        settings: &'a Settings,
        prepared: &'a PreparedTask,
        plan: &HarnessPlan,
    ) -> Self {
        let input = &prepared.input;
        let cwd = input.workspace.clone().filter(|w| !w.trim().is_empty());
        let workdir = cwd.clone().or_else(|| env.info().default_workdir);
        let mut task_system: Vec<String> = input.system_prompt.iter().cloned().collect();
        let mut conversation = Vec::new();
        for message in &input.messages {
            match (&message.role[..], &message.content) {
                ("system", Value::String(text)) => task_system.push(text.clone()),
                _ => conversation.push(message.clone()),
            }
        }
        let pending_user = if conversation.is_empty() {
            conversation.push(Message::new("user", input.prompt.clone()));
            json!(input.prompt)
        } else {
            serde_json::to_value(&conversation).unwrap_or(Value::Null)
        };
        let system = system_prompt(settings, workdir.as_deref(), &task_system);
        let mut messages = vec![Message::new("system", system.clone())];
        messages.extend(conversation);
        let mut result = RunResult::new(prepared.task_id.clone());
        result.category = prepared.category.clone();
        Agent {
            ctx,
            env,
            settings,
            prepared,
            run_timeout_seconds: plan.run_timeout_seconds,
            started: Instant::now(),
            cwd,
            system,
            messages,
            tools: tool_defs(),
            result,
            steps: Vec::new(),
            pending_user,
            summary: None,
            last_content: None,
            cost_usd: 0.0,
            no_tool_replies: 0,
            tool_calls: 0,
            bash_calls: 0,
            journal: None,
        }
    }

    /// Also records each finished step in `journal`.
    fn with_journal(mut self, journal: Journal) -> Self {
        if let Ok(mut steps) = journal.lock() {
            steps.clear();
        }
        self.journal = Some(journal);
        self
    }

    /// Appends a finished step.
    fn push_step(&mut self, step: TrajectoryStep) {
        if let Some(journal) = &self.journal {
            if let Ok(mut steps) = journal.lock() {
                steps.push(step.clone());
            }
        }
        self.steps.push(step);
    }

    /// Seconds left of the run timeout (`None`: no timeout).
    fn seconds_left(&self) -> Option<f64> {
        self.run_timeout_seconds
            .map(|run| run - self.started.elapsed().as_secs_f64())
    }

    /// Runs the loop to its end and returns the result.
    pub(crate) async fn run(mut self) -> Result<RunResult> {
        let started_at = iso_now();
        let mut finish = Finish::TurnLimit;
        let mut turns = 0;
        for turn in 1..=self.settings.max_turns {
            if self.ctx.is_cancelled() {
                return Err(Error::cancelled());
            }
            if self.seconds_left().is_some_and(|left| left <= 0.0) {
                self.result.push_issue(ExecutionIssue::error(
                    IssuePhase::Run,
                    "run_timeout",
                    format!(
                        "{ID}: the run timeout ({}s) was used up after {turns} turn(s)",
                        self.run_timeout_seconds.unwrap_or_default()
                    ),
                ));
                finish = Finish::RunTimeout;
                break;
            }
            turns = turn;
            if let Some(end) = self.turn(turn).await? {
                finish = end;
                break;
            }
            if let Some(limit) = self.settings.cost_limit_usd {
                if self.cost_usd > limit {
                    self.result.push_issue(ExecutionIssue::error(
                        IssuePhase::Run,
                        "cost_limit",
                        format!(
                            "{ID}: model cost ${:.4} exceeded cost_limit_usd ${limit} after {turn} turn(s)",
                            self.cost_usd
                        ),
                    ));
                    finish = Finish::CostLimit;
                    break;
                }
            }
        }
        if finish == Finish::TurnLimit {
            self.result.push_issue(ExecutionIssue::error(
                IssuePhase::Run,
                "turn_limit",
                format!(
                    "{ID}: reached max_turns ({}) without calling `done`",
                    self.settings.max_turns
                ),
            ));
        }
        self.result.final_answer = self.summary.take().or_else(|| self.last_content.take());
        let telemetry = &mut self.result.telemetry;
        telemetry.insert("agent".into(), json!(ID));
        telemetry.insert("turns".into(), json!(turns));
        telemetry.insert("tool_calls".into(), json!(self.tool_calls));
        telemetry.insert("bash_calls".into(), json!(self.bash_calls));
        telemetry.insert("nudges".into(), json!(self.no_tool_replies.min(1)));
        telemetry.insert("finish_reason".into(), json!(finish.as_str()));
        self.result.trajectory = Some(Trajectory {
            steps: std::mem::take(&mut self.steps),
            started_at: Some(started_at),
            finished_at: Some(iso_now()),
            ..Trajectory::default()
        });
        Ok(self.result)
    }

    /// One model call and its tool calls; `Some` ends the loop.
    async fn turn(&mut self, turn: u64) -> Result<Option<Finish>> {
        self.ctx.progress(json!({
            "step": "turn", "turn": turn, "task_id": self.prepared.task_id
        }));
        let request = ModelRequest {
            messages: self.messages.clone(),
            tools: self.tools.clone(),
            timeout_seconds: self.model_timeout(),
            ..ModelRequest::default()
        };
        let mut step = TrajectoryStep {
            step_id: turn,
            system_prompt: (turn == 1).then(|| self.system.clone()),
            user_content: std::mem::take(&mut self.pending_user),
            tools: if turn == 1 {
                serde_json::to_value(&self.tools)?
            } else {
                Value::Null
            },
            started_at: Some(iso_now()),
            ..TrajectoryStep::default()
        };
        let response = match self.ctx.generate(&request).await {
            Ok(response) => response,
            Err(err) if err.kind == ErrorKind::Cancelled => return Err(err),
            Err(err) => {
                self.result.push_issue(model_error_issue(ID, &err));
                step.finished_at = Some(iso_now());
                self.push_step(step);
                return Ok(Some(Finish::ModelError));
            }
        };
        self.cost_usd += response.usage.cost_usd.unwrap_or(0.0);
        step.assistant_content = assistant_content(&response);
        step.metric = model_metric(&response);
        self.messages.push(response.assistant_message());
        if !response.content.trim().is_empty() {
            self.last_content = Some(response.content.clone());
        }
        let end = if response.tool_calls.is_empty() {
            self.no_tool_replies += 1;
            if self.no_tool_replies >= 2 {
                Some(Finish::NoToolCalls)
            } else {
                self.messages.push(Message::new("user", NUDGE));
                self.pending_user = json!(NUDGE);
                None
            }
        } else {
            self.run_tools(&response, &mut step).await?
        };
        step.finished_at = Some(iso_now());
        self.push_step(step);
        Ok(end)
    }

    /// Executes the reply's tool calls in order, answering each one.
    async fn run_tools(
        &mut self,
        response: &ModelResponse,
        step: &mut TrajectoryStep,
    ) -> Result<Option<Finish>> {
        let mut end = None;
        let mut env_ms = 0.0;
        for call in &response.tool_calls {
            self.tool_calls += 1;
            if end.is_some() {
                step.observation.push(json!({
                    "tool_call_id": call.id, "tool": call.name, "skipped": true
                }));
                self.messages
                    .push(tool_result_message(call, "skipped: the run already ended"));
                continue;
            }
            match call.name.as_str() {
                "bash" => {
                    let Some(command) = bash_command(call) else {
                        let error = "error: `bash` needs a non-empty string argument `command`";
                        step.observation.push(json!({
                            "tool_call_id": call.id, "tool": "bash", "error": error
                        }));
                        self.messages.push(tool_result_message(call, error));
                        continue;
                    };
                    self.bash_calls += 1;
                    let timeout = self.command_timeout();
                    let mut request = ExecRequest::argv(["bash", "-c", command.as_str()]);
                    request.cwd = self.cwd.clone();
                    request.timeout_seconds = Some(timeout);
                    let clock = Instant::now();
                    let outcome = self.env.exec(request).await;
                    let duration_ms = clock.elapsed().as_millis();
                    env_ms += duration_ms as f64;
                    match outcome {
                        Ok(outcome) => {
                            let (text, output) = render_observation(
                                &outcome,
                                timeout,
                                self.settings.max_output_chars,
                            );
                            step.observation.push(json!({
                                "tool_call_id": call.id,
                                "tool": "bash",
                                "command": command,
                                "exit_code": outcome.returncode,
                                "timed_out": outcome.timed_out,
                                "output": output,
                                "duration_ms": duration_ms,
                            }));
                            self.messages.push(tool_result_message(call, text));
                        }
                        Err(err) if err.kind == ErrorKind::Cancelled => return Err(err),
                        Err(err) => {
                            let message = format!(
                                "{ID}: the environment failed running a command: {}",
                                err.message
                            );
                            step.observation.push(json!({
                                "tool_call_id": call.id, "tool": "bash", "command": command,
                                "error": message, "duration_ms": duration_ms,
                            }));
                            self.messages
                                .push(tool_result_message(call, "error: the environment failed"));
                            self.result.push_issue(ExecutionIssue::fatal(
                                IssuePhase::Run,
                                "environment_failed",
                                message,
                            ));
                            end = Some(Finish::EnvironmentError);
                        }
                    }
                }
                "done" | "submit" => {
                    self.summary = done_summary(call);
                    step.observation.push(json!({
                        "tool_call_id": call.id, "tool": call.name, "summary": self.summary
                    }));
                    self.messages.push(tool_result_message(call, "ok"));
                    end = Some(Finish::Done);
                }
                other => {
                    let error =
                        format!("error: unknown tool `{other}`; the tools are `bash` and `done`");
                    step.observation.push(json!({
                        "tool_call_id": call.id, "tool": other, "error": error
                    }));
                    self.messages.push(tool_result_message(call, error));
                }
            }
        }
        step.metric.env_action_ms = Some(env_ms);
        Ok(end)
    }

    /// The per-command timeout, capped by what is left of the run timeout.
    fn command_timeout(&self) -> f64 {
        let configured = self.settings.command_timeout_seconds;
        match self.seconds_left() {
            Some(left) => configured.min(left.floor().max(1.0)),
            None => configured,
        }
    }

    /// The model request timeout: the configured one, capped by what is left of the run.
    fn model_timeout(&self) -> Option<f64> {
        let left = self.seconds_left().map(|left| left.ceil().max(1.0));
        match (self.settings.request_timeout_seconds, left) {
            (Some(configured), Some(left)) => Some(configured.min(left)),
            (configured, left) => configured.or(left),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{
        bash_answer, block_on, script_of, text_answer, tool_answer, FakeHost, FakeSession,
    };
    use agentcompass_plugin_api::contracts::{IssueSeverity, TaskInput, TaskStatus, TokenUsage};

    fn settings(params: Value) -> Settings {
        let mut req = RunRequest::default();
        req.harness.params = params.as_object().cloned().unwrap_or_default();
        Settings::read(&req).unwrap()
    }

    fn task() -> PreparedTask {
        let mut input = TaskInput::new("Create /app/hello.txt containing hello");
        input.system_prompt = Some("Stay in /app.".into());
        PreparedTask::new("hello", input)
    }

    fn run_agent(
        host: &Arc<FakeHost>,
        fake: &Arc<FakeSession>,
        settings: &Settings,
        plan: &HarnessPlan,
    ) -> Result<RunResult> {
        let ctx = host.ctx();
        let env = fake.session_ref();
        let task = task();
        block_on(Agent::new(&ctx, &env, settings, &task, plan).run())
    }

    /// A shell that knows `ls`, `echo hello > hello.txt` and `cat hello.txt`.
    fn shell() -> Arc<FakeSession> {
        FakeSession::new(|req| {
            let script = script_of(req);
            Ok(match script.as_str() {
                "ls" => ExecResult::new(0, "README.md\n", ""),
                "echo hello > hello.txt" => ExecResult::new(0, "", ""),
                "cat hello.txt" => ExecResult::new(0, "hello\n", ""),
                "sleep 999" => ExecResult::timeout("", ""),
                _ => ExecResult::new(127, "", format!("bash: {script}: command not found")),
            })
        })
    }

    #[test]
    fn solves_a_scripted_multi_step_task() {
        let host = FakeHost::new(vec![
            bash_answer("c1", "ls"),
            bash_answer("c2", "echo hello > hello.txt"),
            bash_answer("c3", "cat hello.txt"),
            tool_answer("c4", "done", json!({"summary": "wrote hello.txt"})),
        ]);
        let fake = shell();
        let plan = HarnessPlan::default();
        let result = run_agent(&host, &fake, &settings(json!({})), &plan).unwrap();
        assert_eq!(result.status, TaskStatus::Completed, "{:?}", result.issues);
        assert_eq!(result.final_answer.as_deref(), Some("wrote hello.txt"));
        assert_eq!(
            fake.scripts(),
            ["ls", "echo hello > hello.txt", "cat hello.txt"]
        );
        let crate::testkit::Call::Exec(first) = &fake.calls()[0] else {
            panic!("expected exec");
        };
        assert_eq!(
            first.command,
            agentcompass_plugin_api::contracts::ExecCommand::Argv(vec![
                "bash".into(),
                "-c".into(),
                "ls".into()
            ])
        );
        assert_eq!(first.timeout_seconds, Some(120.0));
        assert_eq!(first.cwd, None);

        // The conversation grows with each assistant turn and tool result.
        let requests = host.requests();
        assert_eq!(requests.len(), 4);
        assert_eq!(requests[0].messages.len(), 2);
        assert!(requests[0].messages[0]
            .content
            .as_str()
            .unwrap()
            .contains("Stay in /app."));
        assert!(requests[0].messages[0]
            .content
            .as_str()
            .unwrap()
            .contains("`/app`"));
        assert_eq!(requests[0].tools.len(), 2);
        let last = &requests[3].messages;
        assert_eq!(last.len(), 2 + 3 * 2);
        assert_eq!(last[3].role, "tool");
        assert_eq!(last[3].tool_call_id.as_deref(), Some("c1"));
        assert_eq!(last[3].content, "exit_code: 0\nREADME.md\n");
        assert_eq!(last[7].content, "exit_code: 0\nhello\n");

        let traj = result.trajectory.unwrap();
        assert_eq!(traj.steps.len(), 4);
        assert_eq!(
            traj.steps.iter().map(|s| s.step_id).collect::<Vec<_>>(),
            [1, 2, 3, 4]
        );
        let first = &traj.steps[0];
        assert_eq!(
            first.user_content,
            json!("Create /app/hello.txt containing hello")
        );
        assert!(first.system_prompt.is_some() && traj.steps[1].system_prompt.is_none());
        assert_eq!(first.tools[0]["name"], "bash");
        assert_eq!(first.observation[0]["command"], "ls");
        assert_eq!(first.observation[0]["exit_code"], 0);
        assert_eq!(first.observation[0]["output"], "README.md\n");
        assert!(first.observation[0]["duration_ms"].is_u64());
        assert_eq!(first.metric.prompt_tokens_len, Some(10));
        assert_eq!(first.metric.llm_infer_ms, Some(5.0));
        assert!(first.metric.env_action_ms.is_some());
        assert_eq!(
            first.assistant_content.tool_calls[0]["function"]["name"],
            "bash"
        );
        assert_eq!(traj.steps[3].observation[0]["summary"], "wrote hello.txt");
        assert_eq!(result.telemetry["turns"], 4);
        assert_eq!(result.telemetry["tool_calls"], 4);
        assert_eq!(result.telemetry["bash_calls"], 3);
        assert_eq!(result.telemetry["finish_reason"], "done");
    }

    #[test]
    fn failing_and_timed_out_commands_are_observed() {
        let host = FakeHost::new(vec![
            bash_answer("c1", "frobnicate"),
            bash_answer("c2", "sleep 999"),
            tool_answer("c3", "bash", json!({})),
            tool_answer("c4", "python", json!({"code": "1"})),
            tool_answer("c5", "submit", json!("{\"summary\": \"gave up\"}")),
        ]);
        let fake = shell();
        let plan = HarnessPlan {
            run_timeout_seconds: Some(1000.0),
            ..HarnessPlan::default()
        };
        let settings = settings(json!({"command_timeout_seconds": 7}));
        let result = run_agent(&host, &fake, &settings, &plan).unwrap();
        assert_eq!(result.status, TaskStatus::Completed);
        assert_eq!(result.final_answer.as_deref(), Some("gave up"));
        let last = host.requests().pop().unwrap().messages;
        let tool_texts: Vec<String> = last
            .iter()
            .filter(|m| m.role == "tool")
            .map(|m| m.content.as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            tool_texts[0],
            "exit_code: 127\n[stderr]\nbash: frobnicate: command not found"
        );
        assert_eq!(
            tool_texts[1],
            "exit_code: 124 (timed out after 7s)\n(no output)"
        );
        assert!(tool_texts[2].contains("needs a non-empty string argument `command`"));
        assert!(tool_texts[3].contains("unknown tool `python`"));
        let traj = result.trajectory.unwrap();
        assert_eq!(traj.steps[1].observation[0]["timed_out"], true);
        assert_eq!(traj.steps[1].observation[0]["exit_code"], 124);
    }

    #[test]
    fn the_run_timeout_caps_the_command_timeout() {
        let ctx = Ctx::detached();
        let fake = shell();
        let env = fake.session_ref();
        let settings = settings(json!({}));
        let task = task();
        let plan = |run: Option<f64>| HarnessPlan {
            run_timeout_seconds: run,
            ..HarnessPlan::default()
        };
        let capped = Agent::new(&ctx, &env, &settings, &task, &plan(Some(50.0)));
        let timeout = capped.command_timeout();
        assert!((49.0..=50.0).contains(&timeout), "{timeout}");
        let spent = Agent::new(&ctx, &env, &settings, &task, &plan(Some(0.5)));
        assert_eq!(spent.command_timeout(), 1.0);
        let free = Agent::new(&ctx, &env, &settings, &task, &plan(None));
        assert_eq!(free.command_timeout(), 120.0);
    }

    #[test]
    fn turn_limit() {
        let host = FakeHost::new(vec![
            bash_answer("c1", "ls"),
            bash_answer("c2", "ls"),
            bash_answer("c3", "ls"),
        ]);
        let fake = shell();
        let result = run_agent(
            &host,
            &fake,
            &settings(json!({"max_turns": 2})),
            &HarnessPlan::default(),
        )
        .unwrap();
        assert_eq!(result.status, TaskStatus::RunError);
        assert_eq!(result.issues.len(), 1);
        assert_eq!(result.issues[0].code, "turn_limit");
        assert_eq!(
            result.issues[0].message,
            "terminus: reached max_turns (2) without calling `done`"
        );
        assert_eq!(host.requests().len(), 2);
        assert_eq!(result.trajectory.unwrap().steps.len(), 2);
        assert_eq!(result.telemetry["finish_reason"], "turn_limit");
    }

    #[test]
    fn cost_limit() {
        let priced = |id: &str, cost: f64| {
            let mut answer = bash_answer(id, "ls").unwrap();
            answer.usage = TokenUsage {
                cost_usd: Some(cost),
                requests: 1,
                ..TokenUsage::default()
            };
            Ok(answer)
        };
        let host = FakeHost::new(vec![
            priced("c1", 0.4),
            priced("c2", 0.4),
            priced("c3", 0.4),
        ]);
        let fake = shell();
        let result = run_agent(
            &host,
            &fake,
            &settings(json!({"cost_limit_usd": 0.5})),
            &HarnessPlan::default(),
        )
        .unwrap();
        assert_eq!(result.issues.len(), 1, "{:?}", result.issues);
        assert_eq!(result.issues[0].code, "cost_limit");
        assert!(result.issues[0].message.contains("after 2 turn(s)"));
        assert_eq!(host.requests().len(), 2);
        assert_eq!(result.telemetry["finish_reason"], "cost_limit");
    }

    #[test]
    fn nudges_once_then_treats_a_second_toolless_reply_as_done() {
        let host = FakeHost::new(vec![
            text_answer("I think I should look around."),
            bash_answer("c1", "ls"),
            text_answer("The answer is 42."),
        ]);
        let fake = shell();
        let result =
            run_agent(&host, &fake, &settings(json!({})), &HarnessPlan::default()).unwrap();
        assert_eq!(result.status, TaskStatus::Completed);
        assert_eq!(result.final_answer.as_deref(), Some("The answer is 42."));
        let requests = host.requests();
        assert_eq!(requests.len(), 3);
        let nudge = &requests[1].messages[3];
        assert_eq!(
            (nudge.role.as_str(), nudge.content.as_str()),
            ("user", Some(NUDGE))
        );
        let traj = result.trajectory.unwrap();
        assert_eq!(traj.steps[1].user_content, json!(NUDGE));
        assert_eq!(result.telemetry["nudges"], 1);
        assert_eq!(result.telemetry["finish_reason"], "no_tool_calls");
    }

    #[test]
    fn output_is_truncated_keeping_head_and_tail() {
        let big: String = format!("HEAD{}TAIL", "x".repeat(5000));
        let fake = FakeSession::new(move |_| Ok(ExecResult::new(0, big.clone(), "")));
        let host = FakeHost::new(vec![
            bash_answer("c1", "cat big"),
            tool_answer("c2", "done", json!({})),
        ]);
        let result = run_agent(
            &host,
            &fake,
            &settings(json!({"max_output_chars": 200})),
            &HarnessPlan::default(),
        )
        .unwrap();
        let tool = host.requests()[1].messages[3]
            .content
            .as_str()
            .unwrap()
            .to_string();
        assert!(tool.starts_with("exit_code: 0\nHEAD"), "{tool}");
        assert!(tool.ends_with("TAIL"), "{tool}");
        assert!(
            tool.contains("[... 4808 characters truncated ...]"),
            "{tool}"
        );
        assert!(tool.len() < 300);
        let traj = result.trajectory.unwrap();
        let observed = traj.steps[0].observation[0]["output"].as_str().unwrap();
        assert!(observed.len() < 300);
        // No summary and no content: no final answer.
        assert_eq!(result.final_answer, None);
    }

    #[test]
    fn gateway_and_environment_failures_end_the_run() {
        let host = FakeHost::new(vec![bash_answer("c1", "ls"), Err(Error::msg("HTTP 503"))]);
        let result = run_agent(
            &host,
            &shell(),
            &settings(json!({})),
            &HarnessPlan::default(),
        )
        .unwrap();
        assert_eq!(result.issues[0].code, "model_failed");
        assert_eq!(result.issues[0].severity, IssueSeverity::Fatal);
        assert_eq!(result.trajectory.unwrap().steps.len(), 2);

        let broken = FakeSession::new(|_| Err(Error::environment("container is gone")));
        let host = FakeHost::new(vec![bash_answer("c1", "ls")]);
        let result = run_agent(
            &host,
            &broken,
            &settings(json!({})),
            &HarnessPlan::default(),
        )
        .unwrap();
        assert_eq!(result.issues[0].code, "environment_failed");
        assert!(result.issues[0].message.contains("container is gone"));
        assert_eq!(result.telemetry["finish_reason"], "environment_error");
    }

    #[test]
    fn cancellation_stops_the_loop() {
        let host = FakeHost::new(vec![bash_answer("c1", "ls"), bash_answer("c2", "ls")]);
        *host.cancel_after.lock().unwrap() = Some(1);
        let err = run_agent(
            &host,
            &shell(),
            &settings(json!({})),
            &HarnessPlan::default(),
        )
        .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Cancelled);
        assert_eq!(host.requests().len(), 1);
    }

    #[test]
    fn a_spent_run_budget_stops_the_loop_gracefully() {
        let host = FakeHost::new(vec![bash_answer("c1", "ls")]);
        let plan = HarnessPlan {
            run_timeout_seconds: Some(1e-9),
            ..HarnessPlan::default()
        };
        let result = run_agent(&host, &shell(), &settings(json!({})), &plan).unwrap();
        assert_eq!(result.issues[0].code, "run_timeout");
        assert_eq!(result.telemetry["finish_reason"], "run_timeout");
        assert!(host.requests().is_empty());
        // The model timeout follows the remaining budget.
        let ctx = Ctx::detached();
        let fake = shell();
        let env = fake.session_ref();
        let task = task();
        let configured = settings(json!({"request_timeout_seconds": 30}));
        let long = HarnessPlan {
            run_timeout_seconds: Some(1000.0),
            ..HarnessPlan::default()
        };
        let agent = Agent::new(&ctx, &env, &configured, &task, &long);
        assert_eq!(agent.model_timeout(), Some(30.0));
        let short = HarnessPlan {
            run_timeout_seconds: Some(10.0),
            ..HarnessPlan::default()
        };
        let agent = Agent::new(&ctx, &env, &configured, &task, &short);
        assert_eq!(agent.model_timeout(), Some(10.0));
        let defaults = settings(json!({}));
        let agent = Agent::new(&ctx, &env, &defaults, &task, &HarnessPlan::default());
        assert_eq!(agent.model_timeout(), None);
    }

    #[test]
    fn collect_result_keeps_the_steps_of_an_interrupted_run() {
        let host = FakeHost::new(vec![bash_answer("c1", "ls"), bash_answer("c2", "ls")]);
        let fake = shell();
        let req = RunRequest::default();
        let ctx = host.ctx();
        let session = block_on(Terminus.start_session(
            &ctx,
            &fake.session_ref(),
            &req,
            &HarnessPlan::default(),
        ))
        .unwrap();
        // The script runs out after two turns: the loop ends with a model error, but the
        // journal has both steps whatever happens to the returned result.
        let executed =
            block_on(Terminus.execute_task(&ctx, &session, &task(), &req, &HarnessPlan::default()))
                .unwrap();
        assert_eq!(executed.trajectory.unwrap().steps.len(), 3);
        let interrupted = RunResult::new("hello");
        let collected = block_on(Terminus.collect_result(
            &ctx,
            &session,
            &task(),
            &req,
            &HarnessPlan::default(),
            interrupted,
        ))
        .unwrap();
        let steps = collected.trajectory.unwrap().steps;
        assert_eq!(steps.len(), 3);
        assert_eq!(steps[0].observation[0]["command"], "ls");
    }

    #[test]
    fn params_are_validated() {
        let mut req = RunRequest::default();
        req.harness.params = json!({"max_turns": 0}).as_object().cloned().unwrap();
        assert_eq!(
            Settings::read(&req).unwrap_err().message,
            "harness `terminus`: parameter `max_turns` must be an integer of at least 1 (found 0)"
        );
        req.harness.params = json!({"cost_limit_usd": "1"}).as_object().cloned().unwrap();
        assert_eq!(
            Settings::read(&req).unwrap_err().message,
            "harness `terminus`: parameter `cost_limit_usd` expects number, found string"
        );
        let defaults = settings(json!({}));
        assert_eq!(defaults.max_turns, 30);
        assert_eq!(defaults.command_timeout_seconds, 120.0);
        assert_eq!(defaults.max_output_chars, 10_000);
        assert_eq!(defaults.cost_limit_usd, None);
    }
}
