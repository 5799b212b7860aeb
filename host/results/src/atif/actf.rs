//! The other way: an ATIF trajectory (a Harbor job's `agent/trajectory.json`) as this host's
//! trajectory (ACTF), so that `view`, `report` and `analysis` show a Harbor trial as they show
//! an attempt. Each agent step becomes a step, carrying the system and user messages before
//! it; its calls become OpenAI-shaped tool calls (arguments as a JSON string), its results
//! the observations answering them, its tokens the step's metric. User messages after the
//! last agent step make a step of their own.

use agentcompass_plugin_api::contracts::{
    AssistantContent, Trajectory as Actf, TrajectoryMetric, TrajectoryStep,
};
use agentcompass_schema::atif::{Source, Step, Trajectory};
use serde::Serialize;
use serde_json::{Map, Value};

#[derive(Serialize)]
struct OpenAiCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: OpenAiFunction<'a>,
}

#[derive(Serialize)]
struct OpenAiFunction<'a> {
    name: &'a str,
    arguments: String,
}

#[derive(Serialize)]
struct Answer<'a> {
    tool_call_id: Option<&'a str>,
    output: String,
}

/// `doc` as an ACTF trajectory.
pub fn to_actf(doc: &Trajectory) -> Actf {
    let mut steps = Vec::new();
    let mut system: Option<String> = None;
    let mut user: Vec<String> = Vec::new();
    for step in &doc.steps {
        match step.source {
            Source::System => system = Some(message_text(&step.message)),
            Source::User => user.push(message_text(&step.message)),
            Source::Agent => {
                let mut converted = agent_step(step, steps.len() as u64 + 1);
                converted.system_prompt = system.take();
                if !user.is_empty() {
                    converted.user_content = Value::String(std::mem::take(&mut user).join("\n\n"));
                }
                steps.push(converted);
            }
        }
    }
    if !user.is_empty() || system.is_some() {
        steps.push(TrajectoryStep {
            step_id: steps.len() as u64 + 1,
            system_prompt: system,
            user_content: Value::String(user.join("\n\n")),
            ..TrajectoryStep::default()
        });
    }
    let times: Vec<&str> = doc
        .steps
        .iter()
        .filter_map(|s| s.timestamp.as_deref())
        .collect();
    Actf {
        started_at: times.first().map(|t| t.to_string()),
        finished_at: times.last().map(|t| t.to_string()),
        ..Actf::new(steps)
    }
}

/// A message's text: a string as it is, content parts' texts joined.
fn message_text(message: &Value) -> String {
    match message {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn agent_step(step: &Step, step_id: u64) -> TrajectoryStep {
    let calls: Vec<Value> = step
        .tool_calls
        .iter()
        .flatten()
        .filter_map(|call| {
            serde_json::to_value(OpenAiCall {
                id: &call.tool_call_id,
                kind: "function",
                function: OpenAiFunction {
                    name: &call.function_name,
                    arguments: Value::Object(call.arguments.clone()).to_string(),
                },
            })
            .ok()
        })
        .collect();
    let observation: Vec<Value> = step
        .observation
        .iter()
        .flat_map(|o| &o.results)
        .filter_map(|result| {
            serde_json::to_value(Answer {
                tool_call_id: result.source_call_id.as_deref(),
                output: result
                    .content
                    .as_ref()
                    .map(message_text)
                    .unwrap_or_default(),
            })
            .ok()
        })
        .collect();
    let text = message_text(&step.message);
    let metrics = step.metrics.as_ref();
    TrajectoryStep {
        step_id,
        assistant_content: AssistantContent {
            content: (!text.is_empty()).then_some(text),
            reasoning_content: step.reasoning_content.clone(),
            tool_calls: if calls.is_empty() {
                Value::Null
            } else {
                Value::Array(calls)
            },
        },
        observation,
        metric: TrajectoryMetric {
            prompt_tokens_len: metrics.and_then(|m| m.prompt_tokens),
            completion_tokens_len: metrics.and_then(|m| m.completion_tokens),
            stop_reason: metrics
                .and_then(|m| m.extra.as_ref())
                .and_then(|e: &Map<String, Value>| e.get("stop_reason"))
                .and_then(Value::as_str)
                .map(str::to_string),
            ..TrajectoryMetric::default()
        },
        started_at: step.timestamp.clone(),
        finished_at: step.timestamp.clone(),
        ..TrajectoryStep::default()
    }
}
