//! One run of the agent loop: model turns, their tool calls, the limits (turns, cost, run
//! time) and the trajectory.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use agentcompass_plugin_api::contracts::{
    tool_result_message, ExecRequest, ExecutionIssue, HarnessPlan, IssuePhase, Message,
    ModelRequest, ModelResponse, PreparedTask, RunResult, ToolCall, ToolDef, Trajectory,
    TrajectoryStep,
};
use agentcompass_plugin_api::sdk::{Ctx, SessionRef};
use agentcompass_plugin_api::{Error, ErrorKind, Result};
use serde_json::{json, Value};

use super::prompt::{system_prompt, NUDGE};
use super::settings::{Settings, ID};
use super::tools::{bash_command, done_summary, render_observation, tool_defs};
use crate::mcp::McpTools;
use crate::text::scrubbed_outcome;
use crate::trajectory::{assistant_content, iso_now, model_error_issue, model_metric};

/// Finished steps, shared between the loop and `collect_result`.
pub(super) type Journal = Arc<Mutex<Vec<TrajectoryStep>>>;

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
    /// The task's and the run's MCP servers and their tools.
    mcp: McpTools,
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
            result: RunResult::for_task(prepared),
            steps: Vec::new(),
            pending_user,
            summary: None,
            last_content: None,
            cost_usd: 0.0,
            no_tool_replies: 0,
            tool_calls: 0,
            bash_calls: 0,
            journal: None,
            mcp: McpTools::default(),
        }
    }

    /// Also records each finished step in `journal`.
    pub(super) fn with_journal(mut self, journal: Journal) -> Self {
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

    /// Connects the MCP servers (their tools join `bash` and `done`) and lists the skills in
    /// the first prompt, as Harbor's terminus-2 lists them.
    async fn agent_inputs(&mut self) {
        let inputs = &self.prepared.agent_inputs;
        if let Some(dir) = inputs.skills_dir.clone() {
            let section = super::skills::section(self.env, &dir).await;
            if let (false, Some(first)) = (section.is_empty(), self.messages.get_mut(1)) {
                if let Value::String(text) = &mut first.content {
                    text.push_str(&section);
                    self.pending_user = json!(text.clone());
                }
            }
        }
        if inputs.mcp_servers.is_empty() {
            return;
        }
        let timeout = self.command_timeout();
        self.mcp = McpTools::connect(self.env, inputs, timeout).await;
        self.tools.extend(self.mcp.defs().cloned());
        if !self.mcp.warnings.is_empty() {
            let warnings = json!(self.mcp.warnings);
            self.result
                .telemetry
                .insert("mcp_warnings".into(), warnings);
        }
    }

    /// Runs the loop to its end and returns the result.
    pub(crate) async fn run(mut self) -> Result<RunResult> {
        self.agent_inputs().await;
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
        if finish == Finish::TurnLimit && self.settings.turns_limited_by_request {
            self.result.push_issue(ExecutionIssue::error(
                IssuePhase::Run,
                "limit_exceeded",
                format!(
                    "execution.limits.max_turns ({}) reached: {turns} turns without calling `done`",
                    self.settings.max_turns
                ),
            ));
        } else if finish == Finish::TurnLimit {
            self.result.push_issue(ExecutionIssue::error(
                IssuePhase::Run,
                "turn_limit",
                format!(
                    "{ID}: reached max_turns ({}) without calling `done`",
                    self.settings.max_turns
                ),
            ));
        }
        Ok(self.finish(finish, turns, started_at))
    }

    /// The result of the ended loop: the final answer (the `done` summary, else the last
    /// reply's text), the telemetry and the trajectory.
    fn finish(mut self, finish: Finish, turns: u64, started_at: String) -> RunResult {
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
        self.result
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

    /// Executes the reply's tool calls in order, answering each one (the calls after the one
    /// that ended the run are answered as skipped).
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
            end = match call.name.as_str() {
                "bash" => self.run_bash(call, step, &mut env_ms).await?,
                "done" | "submit" => Some(self.done(call, step)),
                name if self.mcp.owns(name) => {
                    self.run_mcp(call, step, &mut env_ms).await;
                    None
                }
                other => {
                    let error =
                        format!("error: unknown tool `{other}`; the tools are `bash` and `done`");
                    step.observation.push(json!({
                        "tool_call_id": call.id, "tool": other, "error": error
                    }));
                    self.messages.push(tool_result_message(call, error));
                    None
                }
            };
        }
        step.metric.env_action_ms = Some(env_ms);
        Ok(end)
    }

    /// Runs one `bash` call and answers it, adding its duration to `env_ms`; `Some` when the
    /// environment failed (which ends the run).
    async fn run_bash(
        &mut self,
        call: &ToolCall,
        step: &mut TrajectoryStep,
        env_ms: &mut f64,
    ) -> Result<Option<Finish>> {
        let Some(command) = bash_command(call) else {
            let error = "error: `bash` needs a non-empty string argument `command`";
            step.observation.push(json!({
                "tool_call_id": call.id, "tool": "bash", "error": error
            }));
            self.messages.push(tool_result_message(call, error));
            return Ok(None);
        };
        self.bash_calls += 1;
        let timeout = self.command_timeout();
        let mut request = ExecRequest::argv(["bash", "-c", command.as_str()]);
        // The run's `--agent-env` in every command, as Harbor's `--ae` in the agent's phase.
        request.env = self.prepared.agent_inputs.env.clone();
        request.cwd = self.cwd.clone();
        request.timeout_seconds = Some(timeout);
        let clock = Instant::now();
        let outcome = self.env.exec(request).await;
        let duration_ms = clock.elapsed().as_millis();
        *env_ms += duration_ms as f64;
        match outcome {
            Ok(outcome) => {
                let outcome = scrubbed_outcome(self.ctx, outcome, "").await;
                let (text, output) =
                    render_observation(&outcome, timeout, self.settings.max_output_chars);
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
                Ok(None)
            }
            Err(err) if err.kind == ErrorKind::Cancelled => Err(err),
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
                Ok(Some(Finish::EnvironmentError))
            }
        }
    }

    /// Calls one MCP tool and answers it, adding its duration to `env_ms`: a step records the
    /// server, the tool, the arguments and the result.
    async fn run_mcp(&mut self, call: &ToolCall, step: &mut TrajectoryStep, env_ms: &mut f64) {
        let timeout = self.command_timeout();
        let clock = Instant::now();
        let called = self
            .mcp
            .call(self.env, &call.name, &call.arguments, timeout)
            .await;
        let duration_ms = clock.elapsed().as_millis();
        *env_ms += duration_ms as f64;
        let Some(called) = called else { return };
        let text = self.ctx.scrub(&called.text).await;
        step.observation.push(json!({
            "tool_call_id": call.id, "tool": call.name, "server": called.server,
            "mcp_tool": called.tool, "arguments": call.arguments, "output": text,
            "is_error": called.is_error, "duration_ms": duration_ms,
        }));
        self.messages.push(tool_result_message(call, text));
    }

    /// Answers a `done` (or `submit`) call, keeping its summary.
    fn done(&mut self, call: &ToolCall, step: &mut TrajectoryStep) -> Finish {
        self.summary = done_summary(call);
        step.observation.push(json!({
            "tool_call_id": call.id, "tool": call.name, "summary": self.summary
        }));
        self.messages.push(tool_result_message(call, "ok"));
        Finish::Done
    }

    /// The per-command timeout, capped by what is left of the run timeout.
    pub(super) fn command_timeout(&self) -> f64 {
        let configured = self.settings.command_timeout_seconds;
        match self.seconds_left() {
            Some(left) => configured.min(left.floor().max(1.0)),
            None => configured,
        }
    }

    /// The model request timeout: the configured one, capped by what is left of the run.
    pub(super) fn model_timeout(&self) -> Option<f64> {
        let left = self.seconds_left().map(|left| left.ceil().max(1.0));
        match (self.settings.request_timeout_seconds, left) {
            (Some(configured), Some(left)) => Some(configured.min(left)),
            (configured, left) => configured.or(left),
        }
    }
}
