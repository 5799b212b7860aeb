//! `openai_chat` with MCP servers: the servers' tools offered beside the task's, each reply's
//! calls of them made and answered, until a reply calls none (its text, or its other tool
//! calls, is the answer, as without servers) or [`MAX_ROUNDS`] replies. Each reply is a step
//! of the trajectory, its MCP calls' results the step's observations.

use agentcompass_plugin_api::contracts::{
    tool_result_message, ModelRequest, PreparedTask, RunResult, Trajectory, TrajectoryStep,
};
use agentcompass_plugin_api::sdk::{Ctx, SessionRef};
use agentcompass_plugin_api::{Error, ErrorKind, Result};
use serde_json::{json, Value};

use super::{build_messages, build_params, build_tools, record_response, Settings, ID};
use crate::mcp::McpTools;
use crate::trajectory::{iso_now, model_error_issue};

/// Most model replies of one run.
const MAX_ROUNDS: u64 = 16;

/// The timeout of one MCP exchange, in seconds.
const CALL_TIMEOUT_SECONDS: f64 = 120.0;

/// Runs the task with its MCP servers' tools.
pub(super) async fn run(
    ctx: &Ctx,
    settings: &Settings,
    env: &SessionRef,
    prepared: &PreparedTask,
) -> Result<RunResult> {
    let mut mcp = McpTools::connect(env, &prepared.agent_inputs, CALL_TIMEOUT_SECONDS).await;
    let mut tools = build_tools(prepared, settings.task_kwargs);
    tools.extend(mcp.defs().cloned());
    let mut messages = build_messages(&prepared.input)?;
    let mut result = RunResult::for_task(prepared);
    result.telemetry.insert("agent".into(), json!(ID));
    if !mcp.warnings.is_empty() {
        result
            .telemetry
            .insert("mcp_warnings".into(), json!(mcp.warnings));
    }
    let started_at = iso_now();
    let mut steps = Vec::new();
    let mut user_content = Value::String(serde_json::to_string(&messages)?);
    for round in 0..MAX_ROUNDS {
        if ctx.is_cancelled() {
            return Err(Error::cancelled());
        }
        let request = ModelRequest {
            tools: tools.clone(),
            params: build_params(prepared, settings.task_kwargs),
            timeout_seconds: settings.request_timeout_seconds,
            max_retries: settings.max_retries,
            messages: messages.clone(),
        };
        let mut step = TrajectoryStep {
            step_id: round,
            user_content: std::mem::take(&mut user_content),
            tools: if round == 0 {
                serde_json::to_value(&tools)?
            } else {
                Value::Null
            },
            started_at: Some(iso_now()),
            ..TrajectoryStep::default()
        };
        let response = match ctx.generate(&request).await {
            Err(err) if err.kind == ErrorKind::Cancelled => return Err(err),
            Err(err) => {
                result.push_issue(model_error_issue(ID, &err));
                step.finished_at = Some(iso_now());
                steps.push(step);
                break;
            }
            Ok(response) => response,
        };
        record_response(&mut result, &mut step, &response);
        let calls_tools = response.tool_calls.iter().any(|c| mcp.owns(&c.name));
        if calls_tools {
            messages.push(response.assistant_message());
            let mut answers = Vec::new();
            for call in &response.tool_calls {
                let text = match mcp
                    .call(env, &call.name, &call.arguments, CALL_TIMEOUT_SECONDS)
                    .await
                {
                    Some(called) => {
                        let text = ctx.scrub(&called.text).await;
                        step.observation.push(json!({
                            "tool_call_id": call.id, "tool": call.name, "server": called.server,
                            "mcp_tool": called.tool, "arguments": call.arguments,
                            "output": text, "is_error": called.is_error,
                        }));
                        text
                    }
                    None => format!("error: `{}` is not run by this harness", call.name),
                };
                answers.push(json!({"tool_call_id": call.id, "content": text}));
                messages.push(tool_result_message(call, text));
            }
            user_content = Value::Array(answers);
        }
        step.finished_at = Some(iso_now());
        steps.push(step);
        if !calls_tools {
            break;
        }
    }
    result.trajectory = Some(Trajectory {
        started_at: Some(started_at),
        finished_at: Some(iso_now()),
        steps,
        ..Trajectory::default()
    });
    Ok(result)
}
