//! One recorded (ACTF) step as ATIF steps: `system`, `user`, then `agent` (module doc of
//! `atif`).

use agentcompass_schema::atif::{
    Metrics, Observation, ObservationResult, Source, Step, SubagentTrajectoryRef, ToolCall,
    Trajectory,
};
use serde_json::{Map, Value};

use super::AtifAgent;

/// The keys of an observation that say how its call went (copied to the result's `extra`).
const OUTCOME_KEYS: [&str; 7] = [
    "exit_code",
    "is_error",
    "timed_out",
    "duration_ms",
    "tool",
    "server",
    "command",
];

/// Where a trajectory's steps and subagents are being collected.
pub(super) struct Sink<'a> {
    /// The agent.
    pub(super) agent: &'a AtifAgent,
    /// The trajectory's session (its subagents' ids derive from it).
    pub(super) session: &'a str,
    /// The system prompt in effect (a new one becomes a `system` step).
    pub(super) system: Option<String>,
    /// The steps so far.
    pub(super) steps: Vec<Step>,
    /// The subagents' trajectories so far.
    pub(super) subagents: Vec<Trajectory>,
}

/// Appends the ATIF steps of one recorded step to `sink`.
pub(super) fn convert(step: &Value, sink: &mut Sink<'_>) {
    let agent = sink.agent;
    let system = &mut sink.system;
    let out = &mut sink.steps;
    let started = text(step.get("started_at"));
    if let Some(prompt) = text(step.get("system_prompt")).filter(|p| !p.is_empty()) {
        if system.as_deref() != Some(prompt.as_str()) {
            *system = Some(prompt.clone());
            push(out, Source::System, Value::String(prompt), started.clone());
        }
    }
    if let Some(message) = step.get("user_content").and_then(user_message) {
        push(out, Source::User, message, started.clone());
    }
    let assistant = step.get("assistant_content");
    let content = text(assistant.and_then(|a| a.get("content")));
    let reasoning = text(assistant.and_then(|a| a.get("reasoning_content")));
    let mut calls: Vec<ToolCall> = assistant
        .and_then(|a| a.get("tool_calls"))
        .and_then(Value::as_array)
        .map(|calls| calls.iter().filter_map(tool_call).collect())
        .unwrap_or_default();
    let observations = step.get("observation").and_then(Value::as_array);
    let number = out.len() as u64 + 1;
    let results: Vec<ObservationResult> = observations
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, obs)| result_of(obs, number, i, &mut calls))
        .collect();
    let mut results = results;
    for (result, obs) in results.iter_mut().zip(observations.into_iter().flatten()) {
        if let Some(sub) = subagent_of(obs, agent, sink.session, sink.subagents.len()) {
            result.subagent_trajectory_ref = Some(vec![SubagentTrajectoryRef {
                trajectory_id: sub.trajectory_id.clone(),
                session_id: sub.session_id.clone(),
                ..SubagentTrajectoryRef::default()
            }]);
            sink.subagents.push(sub);
        }
    }
    let out = &mut sink.steps;
    let metrics = metrics_of(step.get("metric"));
    if content.is_none() && reasoning.is_none() && calls.is_empty() && results.is_empty() {
        return;
    }
    let mut agent_step = Step::new(
        number,
        Source::Agent,
        Value::String(content.unwrap_or_default()),
    );
    agent_step.timestamp = text(step.get("finished_at")).or(started);
    agent_step.model_name = agent.model_name.clone();
    agent_step.reasoning_content = reasoning;
    agent_step.tool_calls = (!calls.is_empty()).then_some(calls);
    agent_step.observation = (!results.is_empty()).then_some(Observation { results });
    agent_step.metrics = metrics;
    out.push(agent_step);
}

/// The trajectory of the subagent an observation holds (`subagent.steps`), as the
/// `index`-th subagent of `session`.
fn subagent_of(obs: &Value, agent: &AtifAgent, session: &str, index: usize) -> Option<Trajectory> {
    let steps = obs.get("subagent")?.get("steps")?;
    let record = Value::Object(Map::from_iter([(
        "trajectory".to_string(),
        Value::Object(Map::from_iter([("steps".to_string(), steps.clone())])),
    )]));
    let id = format!("{session}__subagent-{}", index + 1);
    let mut sub = super::attempt_trajectory(&record, agent, &id)?;
    sub.trajectory_id = Some(id);
    Some(sub)
}

fn push(out: &mut Vec<Step>, source: Source, message: Value, timestamp: Option<String>) {
    let mut step = Step::new(out.len() as u64 + 1, source, message);
    step.timestamp = timestamp;
    out.push(step);
}

fn text(value: Option<&Value>) -> Option<String> {
    value.and_then(Value::as_str).map(str::to_string)
}

/// A user message: a string as it is, OpenAI-style content parts as their text, any other
/// value as its JSON; nothing for null or an empty string.
fn user_message(content: &Value) -> Option<Value> {
    match content {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::String(s) => Some(Value::String(s.clone())),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str).or_else(|| p.as_str()))
                .collect();
            (!texts.is_empty()).then(|| Value::String(texts.join("\n")))
        }
        other => Some(Value::String(other.to_string())),
    }
}

/// A recorded call (OpenAI's `{id, function: {name, arguments}}`, or `{id, name, input}`).
fn tool_call(call: &Value) -> Option<ToolCall> {
    let id = text(call.get("id")).or_else(|| text(call.get("tool_call_id")))?;
    let function = call.get("function");
    let name = text(function.and_then(|f| f.get("name"))).or_else(|| text(call.get("name")))?;
    let arguments = function
        .and_then(|f| f.get("arguments"))
        .or_else(|| call.get("arguments"))
        .or_else(|| call.get("input"));
    Some(ToolCall {
        tool_call_id: id,
        function_name: name,
        arguments: arguments_object(arguments),
        extra: None,
    })
}

/// Arguments as an object: a JSON object (or a string holding one) as it is, anything else
/// under `input`.
fn arguments_object(arguments: Option<&Value>) -> Map<String, Value> {
    let parsed = match arguments {
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::String(s.clone())),
        Some(other) => other.clone(),
        None => Value::Object(Map::new()),
    };
    match parsed {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        other => Map::from_iter([("input".to_string(), other)]),
    }
}

/// One observation as a result, answering its call, or a call of its own added to `calls`.
fn result_of(obs: &Value, step: u64, index: usize, calls: &mut Vec<ToolCall>) -> ObservationResult {
    let answered =
        text(obs.get("tool_call_id")).filter(|id| calls.iter().any(|c| &c.tool_call_id == id));
    let id = answered.unwrap_or_else(|| {
        let id = format!("{step}-{}", index + 1);
        calls.push(own_call(obs, id.clone()));
        id
    });
    let extra: Map<String, Value> = OUTCOME_KEYS
        .iter()
        .filter_map(|k| {
            obs.get(*k)
                .filter(|v| !v.is_null())
                .map(|v| (k.to_string(), v.clone()))
        })
        .collect();
    ObservationResult {
        source_call_id: Some(id),
        content: Some(Value::String(content_of(obs))),
        subagent_trajectory_ref: None,
        extra: (!extra.is_empty()).then_some(extra),
    }
}

/// The call an observation without one answers: the command it ran, else its tool.
fn own_call(obs: &Value, id: String) -> ToolCall {
    let command = obs.get("command").filter(|c| !c.is_null());
    let name = text(obs.get("tool")).unwrap_or_else(|| {
        if command.is_some() {
            "bash"
        } else {
            "environment"
        }
        .to_string()
    });
    let mut arguments = Map::new();
    if let Some(command) = command {
        arguments.insert("command".into(), command.clone());
    }
    ToolCall {
        tool_call_id: id,
        function_name: name,
        arguments,
        extra: None,
    }
}

/// What the agent saw of an observation: its `output`, else `content`, else its stdout and
/// stderr, else its JSON.
fn content_of(obs: &Value) -> String {
    for key in ["output", "content", "result"] {
        match obs.get(key) {
            Some(Value::String(s)) => return s.clone(),
            Some(Value::Null) | None => {}
            Some(other) => return other.to_string(),
        }
    }
    let streams: Vec<&str> = ["stdout", "stderr"]
        .iter()
        .filter_map(|k| obs.get(*k).and_then(Value::as_str))
        .filter(|s| !s.is_empty())
        .collect();
    if obs.get("stdout").is_some() || obs.get("stderr").is_some() {
        return streams.join("\n");
    }
    obs.to_string()
}

/// A step's tokens; latencies and the stop reason in `extra`.
fn metrics_of(metric: Option<&Value>) -> Option<Metrics> {
    let metric = metric?;
    let prompt = metric.get("prompt_tokens_len").and_then(Value::as_u64);
    let completion = metric.get("completion_tokens_len").and_then(Value::as_u64);
    if prompt.is_none() && completion.is_none() {
        return None;
    }
    let extra: Map<String, Value> = ["llm_infer_ms", "env_action_ms", "stop_reason"]
        .iter()
        .filter_map(|k| {
            metric
                .get(*k)
                .filter(|v| !v.is_null())
                .map(|v| (k.to_string(), v.clone()))
        })
        .collect();
    Some(Metrics {
        prompt_tokens: prompt,
        completion_tokens: completion,
        cached_tokens: metric.get("cached_tokens_len").and_then(Value::as_u64),
        cost_usd: None,
        extra: (!extra.is_empty()).then_some(extra),
    })
}

/// The tools a step offered as OpenAI function schemas (`{type: function, function}`).
pub(super) fn tool_definitions(tools: &Value) -> Option<Vec<Value>> {
    let tools = tools.as_array().filter(|t| !t.is_empty())?;
    Some(
        tools
            .iter()
            .map(|tool| {
                if tool.get("function").is_some() {
                    tool.clone()
                } else {
                    let mut wrapped = Map::new();
                    wrapped.insert("type".into(), Value::from("function"));
                    wrapped.insert("function".into(), tool.clone());
                    Value::Object(wrapped)
                }
            })
            .collect(),
    )
}
