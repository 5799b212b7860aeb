//! `openai_chat`: one model call with the prepared task; no environment interaction — but
//! when the agent is handed MCP servers, a model-only run uses them too: their tools are
//! offered with the task's and called until a reply calls none of them (module `mcp_loop`).

mod mcp_loop;

use agentcompass_plugin_api::contracts::{
    ComponentInfo, ConfigField, ConfigSchema, ConfigType, EnvironmentSpec, ExecutionIssue,
    HarnessPlan, IssuePhase, JsonMap, Message, ModelRequest, ModelResponse, PreparedTask,
    RunRequest, RunResult, TaskInput, ToolDef, Trajectory, TrajectoryStep,
};
use agentcompass_plugin_api::sdk::{
    async_trait, Ctx, SessionHarness, SessionRef, StartInput, TaskCall,
};
use agentcompass_plugin_api::{Error, ErrorKind, Result};
use serde_json::{json, Value};

use crate::params::Params;
use crate::trajectory::{assistant_content, iso_now, model_error_issue, model_metric};

/// Registry id.
pub const ID: &str = "openai_chat";

/// Keys of `metadata.kwargs` that are never generation params.
const RESERVED_KWARGS: &[&str] = &["model", "messages", "tools", "stream", "stream_options"];

/// The public parameters.
pub fn schema() -> ConfigSchema {
    ConfigSchema::empty()
        .field(ConfigField::new(
            "request_timeout_seconds",
            ConfigType::Number,
            json!(null),
            "Per-call model request timeout in seconds (default: the gateway's)",
        ))
        .field(ConfigField::new(
            "max_retries",
            ConfigType::Integer,
            json!(null),
            "Retries of a failed model call (upstream's parameter; default: the gateway's \
             model.params.max_retries, 3)",
        ))
        .field(ConfigField::new(
            "task_kwargs",
            ConfigType::Boolean,
            json!(true),
            "Use the task's metadata.kwargs as generation params and metadata.tools as tools \
             when the input has none (upstream special_pattern_check compatibility)",
        ))
}

/// Registry entry.
pub fn info() -> ComponentInfo {
    crate::harness_info(
        ID,
        "One model call with the task's messages and tools; the answer is the reply text \
         (no environment interaction)",
        schema(),
    )
    .with_model_use(agentcompass_plugin_api::contracts::ModelUse::Required)
    .with_agent_inputs(agentcompass_plugin_api::contracts::AgentInputSupport {
        mcp_servers: true,
        mcp_headers: true,
        skills: false,
    })
}

/// Validated params (the harness session).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    request_timeout_seconds: Option<f64>,
    max_retries: Option<u32>,
    task_kwargs: bool,
}

impl Settings {
    fn read(req: &RunRequest) -> Result<Self> {
        let params = Params::read(ID, &schema(), req)?;
        Ok(Settings {
            request_timeout_seconds: params.positive_number("request_timeout_seconds")?,
            max_retries: match params.integer("max_retries", 0)? {
                Some(n) if n <= 20 => Some(n as u32),
                Some(n) => {
                    return Err(params.error(
                        "max_retries",
                        format!("must be an integer from 0 to 20 (found {n})"),
                    ))
                }
                None => None,
            },
            task_kwargs: params.boolean("task_kwargs")?.unwrap_or(true),
        })
    }
}

/// The harness.
pub struct OpenAiChat;

/// The conversation to send: the input's messages if any, else the prompt decoded as a JSON
/// message list (upstream compatibility), else `[system_prompt?, user prompt]`.
pub(crate) fn build_messages(input: &TaskInput) -> Result<Vec<Message>> {
    if !input.messages.is_empty() {
        return Ok(input.messages.clone());
    }
    let system = input
        .system_prompt
        .as_ref()
        .filter(|s| !s.trim().is_empty())
        .map(|s| Message::new("system", s.clone()));
    if let Some(mut decoded) = decode_message_list(&input.prompt) {
        if let Some(system) = system {
            if !decoded.iter().any(|m| m.role == "system") {
                decoded.insert(0, system);
            }
        }
        return Ok(decoded);
    }
    if input.prompt.trim().is_empty() {
        return Err(Error::invalid_input(format!(
            "{ID}: the task has neither a prompt nor messages"
        )));
    }
    Ok(system
        .into_iter()
        .chain(std::iter::once(Message::new("user", input.prompt.clone())))
        .collect())
}

/// `prompt` as a non-empty JSON list of messages, if it is one.
fn decode_message_list(prompt: &str) -> Option<Vec<Message>> {
    let trimmed = prompt.trim();
    if !trimmed.starts_with('[') {
        return None;
    }
    serde_json::from_str::<Vec<Message>>(trimmed)
        .ok()
        .filter(|list| !list.is_empty())
}

/// The tools to offer: the input's, else (with `task_kwargs`) `metadata.tools` in OpenAI
/// (`{"type": "function", "function": {...}}`) or Anthropic (`input_schema`) shape.
pub(crate) fn build_tools(prepared: &PreparedTask, task_kwargs: bool) -> Vec<ToolDef> {
    if !prepared.input.tools.is_empty() || !task_kwargs {
        return prepared.input.tools.clone();
    }
    let Some(Value::Array(items)) = prepared.metadata.get("tools") else {
        return Vec::new();
    };
    items.iter().filter_map(tool_from_json).collect()
}

fn tool_from_json(value: &Value) -> Option<ToolDef> {
    let spec = value.get("function").unwrap_or(value);
    let name = spec.get("name")?.as_str()?.to_string();
    let description = spec
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let parameters = spec
        .get("parameters")
        .or_else(|| spec.get("input_schema"))
        .cloned()
        .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
    Some(ToolDef {
        name,
        description,
        parameters,
    })
}

/// Generation params from `metadata.kwargs` (reserved keys dropped).
pub(crate) fn build_params(prepared: &PreparedTask, task_kwargs: bool) -> JsonMap {
    match prepared.metadata.get("kwargs") {
        Some(Value::Object(kwargs)) if task_kwargs => kwargs
            .iter()
            .filter(|(k, v)| !RESERVED_KWARGS.contains(&k.as_str()) && !v.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        _ => JsonMap::new(),
    }
}

fn text_of(message: &Message) -> Option<String> {
    match &message.content {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// A started session: the settings, and the environment (reached only for MCP servers).
pub struct ChatSession {
    settings: Settings,
    env: SessionRef,
}

#[async_trait]
impl SessionHarness for OpenAiChat {
    type Session = ChatSession;

    fn build_plan(&self, req: &RunRequest, _environment: &EnvironmentSpec) -> Result<HarnessPlan> {
        Settings::read(req)?;
        // The environment's network policy does not reach the model call, and a notice
        // appended to a JSON message-list prompt would break its decoding.
        Ok(HarnessPlan {
            inject_network_restriction_notice: false,
            ..HarnessPlan::default()
        })
    }

    async fn start(&self, _ctx: &Ctx, input: StartInput<'_>) -> Result<ChatSession> {
        Ok(ChatSession {
            settings: Settings::read(input.req)?,
            env: input.env.clone(),
        })
    }

    async fn execute(
        &self,
        ctx: &Ctx,
        session: &ChatSession,
        call: TaskCall<'_>,
    ) -> Result<RunResult> {
        if call.prepared.agent_inputs.mcp_servers.is_empty() {
            run(ctx, &session.settings, call.prepared).await
        } else {
            mcp_loop::run(ctx, &session.settings, &session.env, call.prepared).await
        }
    }

    fn label(&self) -> &str {
        ID
    }
}

/// Records the model's reply: the step's content and metrics, the telemetry, the final answer
/// and the issues of an empty or truncated reply.
fn record_response(result: &mut RunResult, step: &mut TrajectoryStep, response: &ModelResponse) {
    step.assistant_content = assistant_content(response);
    step.metric = model_metric(response);
    // Upstream's `artifacts.raw_result`: the reply as the model gave it.
    result.artifacts.insert(
        "raw_result".into(),
        json!({
            "content": response.content,
            "reasoning_content": response.reasoning,
            "stop_reason": response.stop_reason,
            "usage": response.usage,
            "tool_calls": response.tool_calls,
        }),
    );
    result
        .telemetry
        .insert("llm_infer_ms".into(), json!(response.latency_ms));
    result
        .telemetry
        .insert("model_retries".into(), json!(response.retries));
    let empty = response.content.trim().is_empty() && response.tool_calls.is_empty();
    if empty {
        result.push_issue(ExecutionIssue::error(
            IssuePhase::Run,
            "model_empty_output",
            format!(
                "{ID}: the model returned no content and no tool calls (stop_reason `{}`)",
                response.stop_reason
            ),
        ));
    } else {
        result.final_answer = Some(response.content.clone());
    }
    if response.stop_reason == "length" {
        result.push_issue(ExecutionIssue::warning(
            IssuePhase::Run,
            "model_output_truncated",
            format!("{ID}: the answer was cut at the output token limit"),
        ));
    }
}

/// One model call with the prepared task, recorded as a one-step trajectory.
async fn run(ctx: &Ctx, settings: &Settings, prepared: &PreparedTask) -> Result<RunResult> {
    let messages = build_messages(&prepared.input)?;
    let request = ModelRequest {
        tools: build_tools(prepared, settings.task_kwargs),
        params: build_params(prepared, settings.task_kwargs),
        timeout_seconds: settings.request_timeout_seconds,
        max_retries: settings.max_retries,
        messages,
    };
    let mut result = RunResult::for_task(prepared);
    result.telemetry.insert("agent".into(), json!(ID));
    if !prepared.input.media.is_empty() {
        result.push_issue(ExecutionIssue::warning(
            IssuePhase::Run,
            "media_ignored",
            format!(
                "{ID}: {} media input(s) were not sent (text-only harness)",
                prepared.input.media.len()
            ),
        ));
    }
    if ctx.is_cancelled() {
        return Err(Error::cancelled());
    }
    let started_at = iso_now();
    let answer = ctx.generate(&request).await;
    // As upstream's `openai_chat`: one step numbered 0 whose user content is the messages sent,
    // as JSON text.
    let mut step = TrajectoryStep {
        step_id: 0,
        system_prompt: request
            .messages
            .iter()
            .find(|m| m.role == "system")
            .and_then(text_of),
        user_content: Value::String(serde_json::to_string(&request.messages)?),
        tools: if request.tools.is_empty() {
            Value::Null
        } else {
            serde_json::to_value(&request.tools)?
        },
        started_at: Some(started_at),
        ..TrajectoryStep::default()
    };
    match answer {
        Err(err) if err.kind == ErrorKind::Cancelled => return Err(err),
        Err(err) => result.push_issue(model_error_issue(ID, &err)),
        Ok(response) => record_response(&mut result, &mut step, &response),
    }
    step.finished_at = Some(iso_now());
    result.trajectory = Some(Trajectory {
        started_at: step.started_at.clone(),
        finished_at: step.finished_at.clone(),
        steps: vec![step],
        ..Trajectory::default()
    });
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{block_on, text_answer, tool_answer, FakeHost};
    use agentcompass_plugin_api::contracts::{IssueSeverity, TaskStatus};
    use std::sync::Arc;

    fn prepared(input: TaskInput) -> PreparedTask {
        PreparedTask::new("t1", input)
    }

    fn execute(host: &Arc<FakeHost>, prepared: &PreparedTask, params: Value) -> Result<RunResult> {
        let mut req = RunRequest::default();
        req.harness.params = params.as_object().cloned().unwrap_or_default();
        let settings = Settings::read(&req)?;
        block_on(run(&host.ctx(), &settings, prepared))
    }

    #[test]
    fn plain_prompt_with_system_prompt() {
        let mut input = TaskInput::new("What is 2+2?");
        input.system_prompt = Some("Be brief.".into());
        let messages = build_messages(&input).unwrap();
        assert_eq!(
            messages,
            vec![
                Message::new("system", "Be brief."),
                Message::new("user", "What is 2+2?")
            ]
        );
        let plain = build_messages(&TaskInput::new("[not json")).unwrap();
        assert_eq!(plain, vec![Message::new("user", "[not json")]);
        assert!(build_messages(&TaskInput::new("  ")).is_err());
    }

    #[test]
    fn json_prompt_is_decoded_as_messages() {
        let prompt = json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": "again"}
        ])
        .to_string();
        let mut input = TaskInput::new(prompt);
        input.system_prompt = Some("sys".into());
        let messages = build_messages(&input).unwrap();
        assert_eq!(messages.len(), 4);
        assert_eq!(messages[0], Message::new("system", "sys"));
        assert_eq!(messages[3], Message::new("user", "again"));
        // A JSON list of non-messages is plain text.
        let numbers = build_messages(&TaskInput::new("[1, 2]")).unwrap();
        assert_eq!(numbers, vec![Message::new("user", "[1, 2]")]);
    }

    #[test]
    fn input_messages_and_tools_win() {
        let mut input = TaskInput::new("ignored");
        input.system_prompt = Some("ignored too".into());
        input.messages = vec![Message::new("user", "from messages")];
        input.tools = vec![ToolDef {
            name: "lookup".into(),
            description: "Looks up".into(),
            parameters: json!({"type": "object"}),
        }];
        let host = FakeHost::new(vec![text_answer("done")]);
        let result = execute(&host, &prepared(input), json!({})).unwrap();
        let sent = &host.requests()[0];
        assert_eq!(sent.messages, vec![Message::new("user", "from messages")]);
        assert_eq!(sent.tools[0].name, "lookup");
        assert_eq!(result.final_answer.as_deref(), Some("done"));
        assert_eq!(result.status, TaskStatus::Completed);
        let traj = result.trajectory.unwrap();
        assert_eq!(traj.steps.len(), 1);
        let step = &traj.steps[0];
        let sent: Value = serde_json::from_str(step.user_content.as_str().unwrap()).unwrap();
        assert_eq!(sent[0]["content"], "from messages");
        assert_eq!(step.step_id, 0);
        assert_eq!(result.artifacts["raw_result"]["content"], "done");
        assert_eq!(step.tools[0]["name"], "lookup");
        assert_eq!(step.metric.prompt_tokens_len, Some(10));
        assert_eq!(step.metric.completion_tokens_len, Some(2));
        assert_eq!(step.metric.llm_infer_ms, Some(5.0));
        assert_eq!(step.metric.stop_reason.as_deref(), Some("stop"));
        assert_eq!(step.assistant_content.content.as_deref(), Some("done"));
    }

    #[test]
    fn metadata_kwargs_and_tools() {
        let mut task = prepared(TaskInput::new("q"));
        task.metadata.insert(
            "kwargs".into(),
            json!({"temperature": 0.2, "messages": [], "model": "x", "tool_choice": "auto"}),
        );
        task.metadata.insert(
            "tools".into(),
            json!([
                {"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}},
                {"name": "b", "description": "B", "input_schema": {"type": "object"}},
                {"bogus": true}
            ]),
        );
        let tools = build_tools(&task, true);
        assert_eq!(
            tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(tools[1].parameters, json!({"type": "object"}));
        let params = build_params(&task, true);
        assert_eq!(
            Value::Object(params),
            json!({"temperature": 0.2, "tool_choice": "auto"})
        );
        assert!(build_tools(&task, false).is_empty());
        assert!(build_params(&task, false).is_empty());
        let host = FakeHost::new(vec![text_answer("ok")]);
        execute(&host, &task, json!({"request_timeout_seconds": 30})).unwrap();
        let sent = &host.requests()[0];
        assert_eq!(sent.timeout_seconds, Some(30.0));
        assert_eq!(sent.params["temperature"], 0.2);
    }

    #[test]
    fn tool_calls_without_content_are_an_answer() {
        let host = FakeHost::new(vec![tool_answer("c1", "lookup", json!({"q": 1}))]);
        let result = execute(&host, &prepared(TaskInput::new("q")), json!({})).unwrap();
        assert_eq!(result.status, TaskStatus::Completed);
        let step = &result.trajectory.unwrap().steps[0];
        assert_eq!(step.assistant_content.tool_calls[0]["id"], "c1");
    }

    #[test]
    fn empty_output_is_a_run_error() {
        let host = FakeHost::new(vec![text_answer("  ")]);
        let result = execute(&host, &prepared(TaskInput::new("q")), json!({})).unwrap();
        assert_eq!(result.status, TaskStatus::RunError);
        assert_eq!(result.issues[0].code, "model_empty_output");
        assert_eq!(result.final_answer, None);
        assert_eq!(result.trajectory.unwrap().steps.len(), 1);
    }

    #[test]
    fn gateway_errors_become_issues() {
        let host = FakeHost::new(vec![Err(Error::new(
            ErrorKind::Timeout,
            "model.generate: timed out after 3 attempts",
        ))]);
        let result = execute(&host, &prepared(TaskInput::new("q")), json!({})).unwrap();
        assert_eq!(result.status, TaskStatus::RunError);
        assert_eq!(result.issues[0].code, "model_timeout");
        assert_eq!(result.issues[0].severity, IssueSeverity::Error);
        assert!(result.issues[0]
            .message
            .contains("timed out after 3 attempts"));
        let host = FakeHost::new(vec![Err(Error::cancelled())]);
        let err = execute(&host, &prepared(TaskInput::new("q")), json!({})).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Cancelled);
    }

    #[test]
    fn params_are_validated() {
        let host = FakeHost::new(vec![]);
        let err = execute(
            &host,
            &prepared(TaskInput::new("q")),
            json!({"request_timeout_seconds": 0}),
        )
        .unwrap_err();
        assert_eq!(
            err.message,
            "harness `openai_chat`: parameter `request_timeout_seconds` must be a number greater than 0 (found 0)"
        );
        let err = execute(
            &host,
            &prepared(TaskInput::new("q")),
            json!({"max_turns": 3}),
        )
        .unwrap_err();
        assert!(err
            .message
            .starts_with("harness `openai_chat`: unknown parameter `max_turns`"));
    }
}
