//! An agent phase from its ATIF trajectory: the phase span (`AGENT`), one `LLM` span per
//! agent step that made a model call, one `TOOL` span per tool call, siblings under the
//! phase as `harbor-atif2otel` places them. A step runs from the step before it to its own
//! timestamp; its model call takes the recorded inference time (`llm_infer_ms`) at the start,
//! its tool calls follow for their recorded durations.

use std::time::{Duration, SystemTime};

use agentcompass_schema::atif::{ObservationResult, Source, Step, ToolCall, Trajectory};
use opentelemetry::trace::SpanId;
use serde_json::Value;

use crate::attr;
use crate::spans::{millis, parse_time, Attrs, NewSpan, Spans};
use crate::tree::SpanOptions;

/// The first and last step timestamps of `trajectory`.
pub(crate) fn trajectory_bounds(trajectory: &Trajectory) -> Option<(SystemTime, SystemTime)> {
    let times: Vec<SystemTime> = trajectory
        .steps
        .iter()
        .filter_map(|s| parse_time(s.timestamp.as_deref()))
        .collect();
    Some((*times.iter().min()?, *times.iter().max()?))
}

/// The agent phase of `trajectory` under the attempt `parent`, in `window` (else its steps'
/// own bounds).
pub(crate) fn agent_phase(
    spans: &mut Spans,
    parent: SpanId,
    key: &str,
    step: Option<&str>,
    trajectory: &Trajectory,
    window: Option<(SystemTime, SystemTime)>,
    options: SpanOptions,
) {
    let Some((start, end)) = window.or_else(|| trajectory_bounds(trajectory)) else {
        return;
    };
    let phase_id = spans.id(key);
    let mut previous = start;
    for (i, s) in trajectory.steps.iter().enumerate() {
        let at = parse_time(s.timestamp.as_deref())
            .unwrap_or(previous)
            .clamp(start, end.max(start));
        if s.source == Source::Agent {
            let step_key = format!("{key}:step:{i}");
            step_spans(
                spans,
                phase_id,
                &step_key,
                trajectory,
                i,
                (previous, at),
                options,
            );
        }
        previous = at;
    }
    let attrs = agent_attrs(trajectory, step, options);
    let name = match step {
        Some(step) => format!("agent run ({step})"),
        None => "agent run".to_string(),
    };
    spans.push(NewSpan {
        key: key.to_string(),
        parent: Some(parent),
        name,
        start,
        end,
        attrs,
        error: None,
    });
}

/// The agent phase's attributes: the agent, its session and model, the trajectory's totals,
/// its first instruction and last answer (contents only).
fn agent_attrs(trajectory: &Trajectory, step: Option<&str>, options: SpanOptions) -> Attrs {
    let mut attrs = Attrs::default();
    let agent = &trajectory.agent;
    let totals = trajectory.final_metrics.clone().unwrap_or_default();
    attrs
        .str(attr::SPAN_KIND, attr::AGENT)
        .str(attr::AGENT_NAME, agent.name.clone())
        .str(attr::AGENT_VERSION, agent.version.clone())
        .opt_str(attr::SESSION_ID, trajectory.session_id.as_deref())
        .opt_str(attr::LLM_MODEL, agent.model_name.as_deref())
        .opt_str(attr::STEP, step)
        .str(attr::GEN_AI_OPERATION, "invoke_agent")
        .str(attr::GEN_AI_AGENT_NAME, agent.name.clone())
        .opt_str(attr::GEN_AI_REQUEST_MODEL, agent.model_name.as_deref());
    tokens(
        &mut attrs,
        totals.total_prompt_tokens,
        totals.total_completion_tokens,
        totals.total_cached_tokens,
    );
    attrs.float(attr::LLM_COST, totals.total_cost_usd);
    if options.content {
        let first_user = trajectory.steps.iter().find(|s| s.source == Source::User);
        let last_agent = trajectory
            .steps
            .iter()
            .rev()
            .find(|s| s.source == Source::Agent);
        attrs
            .opt_str(
                attr::INPUT_VALUE,
                first_user.map(|s| message_text(&s.message)).as_deref(),
            )
            .opt_str(
                attr::OUTPUT_VALUE,
                last_agent.map(|s| message_text(&s.message)).as_deref(),
            );
    }
    attrs
}

/// Token counts in both conventions.
fn tokens(attrs: &mut Attrs, prompt: Option<u64>, completion: Option<u64>, cached: Option<u64>) {
    let total = match (prompt, completion) {
        (None, None) => None,
        (p, c) => Some(p.unwrap_or(0) + c.unwrap_or(0)),
    };
    attrs
        .int(attr::LLM_PROMPT_TOKENS, prompt)
        .int(attr::LLM_COMPLETION_TOKENS, completion)
        .int(attr::LLM_TOTAL_TOKENS, total)
        .int(attr::LLM_CACHE_READ, cached)
        .int(attr::GEN_AI_INPUT_TOKENS, prompt)
        .int(attr::GEN_AI_OUTPUT_TOKENS, completion)
        .int(attr::GEN_AI_CACHE_READ, cached);
}

/// The model call of agent step `index` (when it made one) and its tool calls, in `window`.
fn step_spans(
    spans: &mut Spans,
    parent: SpanId,
    key: &str,
    trajectory: &Trajectory,
    index: usize,
    window: (SystemTime, SystemTime),
    options: SpanOptions,
) {
    let step = &trajectory.steps[index];
    let (start, end) = window;
    let mut cursor = start;
    let made_call = step.llm_call_count != Some(0) && step.metrics.is_some();
    if made_call {
        let infer = step
            .metrics
            .as_ref()
            .and_then(|m| m.extra.as_ref())
            .and_then(|e| e.get("llm_infer_ms"))
            .and_then(Value::as_f64);
        let llm_end = millis(infer).map_or(end, |d| (start + d).min(end));
        llm_span(
            spans,
            parent,
            key,
            trajectory,
            index,
            (start, llm_end),
            options,
        );
        cursor = llm_end;
    }
    for (i, call) in step.tool_calls.iter().flatten().enumerate() {
        let result = step
            .observation
            .iter()
            .flat_map(|o| &o.results)
            .find(|r| r.source_call_id.as_deref() == Some(call.tool_call_id.as_str()));
        let duration = result
            .and_then(|r| r.extra.as_ref())
            .and_then(|e| e.get("duration_ms"))
            .and_then(Value::as_f64);
        let call_end = millis(duration).map_or(end, |d| (cursor + d).min(end));
        let tool_key = format!("{key}:tool:{i}");
        tool_span(
            spans,
            parent,
            &tool_key,
            step,
            call,
            result,
            (cursor, call_end),
            options,
        );
        cursor = call_end.max(cursor + Duration::from_nanos(1)).min(end);
    }
}

/// One model call.
fn llm_span(
    spans: &mut Spans,
    parent: SpanId,
    key: &str,
    trajectory: &Trajectory,
    index: usize,
    (start, end): (SystemTime, SystemTime),
    options: SpanOptions,
) {
    let step = &trajectory.steps[index];
    let model = step
        .model_name
        .as_deref()
        .or(trajectory.agent.model_name.as_deref());
    let metrics = step.metrics.clone().unwrap_or_default();
    let mut attrs = Attrs::default();
    attrs
        .str(attr::SPAN_KIND, attr::LLM)
        .opt_str(attr::LLM_MODEL, model)
        .str(attr::GEN_AI_OPERATION, "chat")
        .opt_str(attr::GEN_AI_REQUEST_MODEL, model)
        .int(attr::ATIF_STEP, Some(step.step_id));
    tokens(
        &mut attrs,
        metrics.prompt_tokens,
        metrics.completion_tokens,
        metrics.cached_tokens,
    );
    attrs.float(attr::LLM_COST, metrics.cost_usd);
    if options.content {
        let input: Vec<Value> = trajectory.steps[..index]
            .iter()
            .rev()
            .take_while(|s| s.source != Source::Agent)
            .collect::<Vec<&Step>>()
            .into_iter()
            .rev()
            .map(|s| {
                let role = if s.source == Source::System {
                    "system"
                } else {
                    "user"
                };
                let mut message = serde_json::Map::new();
                message.insert("role".into(), Value::from(role));
                message.insert("content".into(), Value::from(message_text(&s.message)));
                Value::Object(message)
            })
            .collect();
        attrs
            .str(attr::INPUT_VALUE, Value::Array(input).to_string())
            .str(attr::INPUT_MIME, "application/json")
            .str(attr::OUTPUT_VALUE, message_text(&step.message))
            .opt_str(attr::REASONING, step.reasoning_content.as_deref());
    }
    spans.push(NewSpan {
        key: format!("{key}:llm"),
        parent: Some(parent),
        name: model.unwrap_or("llm").to_string(),
        start,
        end,
        attrs,
        error: None,
    });
}

/// One tool call and what it returned.
#[allow(clippy::too_many_arguments)]
fn tool_span(
    spans: &mut Spans,
    parent: SpanId,
    key: &str,
    step: &Step,
    call: &ToolCall,
    result: Option<&ObservationResult>,
    (start, end): (SystemTime, SystemTime),
    options: SpanOptions,
) {
    let extra = result.and_then(|r| r.extra.as_ref());
    let flag = |k: &str| extra.and_then(|e| e.get(k)).and_then(Value::as_bool);
    let exit_code = extra
        .and_then(|e| e.get("exit_code"))
        .and_then(Value::as_i64);
    let mut attrs = Attrs::default();
    attrs
        .str(attr::SPAN_KIND, attr::TOOL)
        .str(attr::TOOL_NAME, call.function_name.clone())
        .str(attr::GEN_AI_OPERATION, "execute_tool")
        .str(attr::GEN_AI_TOOL_NAME, call.function_name.clone())
        .str(attr::GEN_AI_TOOL_CALL_ID, call.tool_call_id.clone())
        .int(attr::ATIF_STEP, Some(step.step_id))
        .boolean(attr::TIMED_OUT, flag("timed_out"));
    if let Some(code) = exit_code {
        attrs.dynamic(attr::EXIT_CODE.to_string(), opentelemetry::Value::I64(code));
    }
    if options.content {
        let arguments = Value::Object(call.arguments.clone()).to_string();
        attrs
            .str(attr::TOOL_PARAMETERS, arguments.clone())
            .str(attr::INPUT_VALUE, arguments)
            .str(attr::INPUT_MIME, "application/json");
        if let Some(content) = result.and_then(|r| r.content.as_ref()) {
            attrs.str(attr::OUTPUT_VALUE, message_text(content));
        }
    }
    let failed = flag("is_error") == Some(true) || flag("timed_out") == Some(true);
    spans.push(NewSpan {
        key: key.to_string(),
        parent: Some(parent),
        name: call.function_name.clone(),
        start,
        end,
        attrs,
        error: failed.then(|| format!("tool {} failed", call.function_name)),
    });
}

/// A message as text: a string as it is, content parts' texts joined, anything else as JSON.
fn message_text(message: &Value) -> String {
    match message {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str).or_else(|| p.as_str()))
            .collect::<Vec<_>>()
            .join(""),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
