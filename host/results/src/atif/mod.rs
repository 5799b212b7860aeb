//! An attempt's trajectory in ATIF (`agentcompass_schema::atif`), converted from the record
//! the attempt already wrote (`result.json`, redacted and scrubbed: nothing reaches the ATIF
//! file that is not in the record), so it is the same for a live run and for `export harbor`
//! of a finished one, and needs nothing of the harness.
//!
//! The conversion (module `steps` for one step):
//! - a step's `system_prompt` becomes a `system` step when it differs from the one before;
//!   its `user_content` a `user` step; its assistant output, tool calls and observations one
//!   `agent` step, with the step's tokens as `metrics` (and its latencies and stop reason in
//!   `metrics.extra`);
//! - an observation answering a call (`tool_call_id`) is that call's result; one answering
//!   none (the oracle's command, a CLI's action recorded without a call) gets a call of its
//!   own (`<step>-<i>`: `bash` with `{"command"}` when it ran a command), so every result
//!   names the call it answers; exit code, error flag, timeout and duration go to the
//!   result's `extra`;
//! - `final_metrics` are the attempt's recorded model usage (`meta.harness.telemetry.
//!   model_usage`: prompt tokens with the cached ones, cached, completion, cost), else the
//!   steps' sums; `total_steps` the ATIF steps.
//!
//! An attempt with no step (the agent never ran) has no ATIF document (ATIF needs one step).

mod actf;
mod steps;

pub use actf::to_actf;

use agentcompass_schema::atif::{Agent, FinalMetrics, Step, Trajectory, ATIF_SCHEMA_VERSION};
use serde_json::{Map, Value};

/// Who ran an attempt, as its ATIF `agent` names it.
#[derive(Debug, Clone, PartialEq)]
pub struct AtifAgent {
    /// The agent's name (Harbor's name for it when it has one, see [`harbor_agent_name`]).
    pub name: String,
    /// Its version (`unknown` when not known).
    pub version: String,
    /// The model it was given.
    pub model_name: Option<String>,
}

impl AtifAgent {
    /// The agent of a run from its `run_info.json` `provenance` (the harness's id and
    /// version, the model's id) and its harness parameters (an installed agent's pinned CLI
    /// `version` wins over the plugin's). A run without a harness is named for the host.
    pub fn from_provenance(provenance: &Value, harness_params: &Map<String, Value>) -> AtifAgent {
        let harness = provenance.pointer("/components/harness");
        let id = harness.and_then(|h| h.get("id")).and_then(Value::as_str);
        let version = harness_params
            .get("version")
            .and_then(Value::as_str)
            .or_else(|| {
                harness
                    .and_then(|h| h.get("version"))
                    .and_then(Value::as_str)
            });
        AtifAgent {
            name: id
                .map_or("agentcompass-host", harbor_agent_name)
                .to_string(),
            version: version.unwrap_or("unknown").to_string(),
            model_name: provenance
                .pointer("/model/id")
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
                .map(str::to_string),
        }
    }
}

/// Harbor's name of a harness (`AgentName`), for the harnesses that are Harbor's agents;
/// others keep their own id (Harbor's `traces export` exports only agents it knows).
pub fn harbor_agent_name(harness: &str) -> &str {
    match harness {
        "claude_code" => "claude-code",
        "mini_swe_agent" => "mini-swe-agent",
        "qwen_code" => "qwen-coder",
        "terminus" => "terminus-2",
        other => other,
    }
}

/// The ATIF document of one attempt (or step) record, or `None` when it has no step.
pub fn attempt_trajectory(
    record: &Value,
    agent: &AtifAgent,
    session_id: &str,
) -> Option<Trajectory> {
    let recorded = record.get("trajectory")?.get("steps")?.as_array()?;
    let mut sink = steps::Sink {
        agent,
        session: session_id,
        system: None,
        steps: Vec::new(),
        subagents: Vec::new(),
    };
    for step in recorded {
        steps::convert(step, &mut sink);
    }
    let (out, subagents) = (sink.steps, sink.subagents);
    if out.is_empty() {
        return None;
    }
    let telemetry = record.pointer("/meta/harness/telemetry");
    let mut final_metrics = usage_totals(telemetry).unwrap_or_else(|| summed(&out));
    final_metrics.total_steps = Some(out.len() as u64);
    let tool_definitions = recorded
        .first()
        .and_then(|s| s.get("tools"))
        .and_then(steps::tool_definitions);
    let mut extra = Map::new();
    extra.insert("producer".into(), Value::from("agentcompass-host"));
    if let Some(schema) = record.pointer("/trajectory/schema_version") {
        extra.insert("source_schema_version".into(), schema.clone());
    }
    Some(Trajectory {
        schema_version: ATIF_SCHEMA_VERSION.to_string(),
        session_id: Some(session_id.to_string()),
        trajectory_id: None,
        agent: Agent {
            name: agent.name.clone(),
            version: agent.version.clone(),
            model_name: agent.model_name.clone(),
            tool_definitions,
            extra: None,
        },
        steps: out,
        notes: None,
        final_metrics: Some(final_metrics),
        continued_trajectory_ref: None,
        extra: Some(extra),
        subagent_trajectories: (!subagents.is_empty()).then_some(subagents),
    })
}

/// The attempt's recorded model usage as totals.
fn usage_totals(telemetry: Option<&Value>) -> Option<FinalMetrics> {
    let usage = telemetry?.get("model_usage")?.as_object()?;
    let count = |key: &str| usage.get(key).and_then(Value::as_u64);
    Some(FinalMetrics {
        total_prompt_tokens: count("prompt_tokens"),
        total_completion_tokens: count("completion_tokens"),
        total_cached_tokens: count("cached_tokens"),
        total_cost_usd: usage.get("cost_usd").and_then(Value::as_f64),
        ..FinalMetrics::default()
    })
}

/// The steps' token sums (an attempt that recorded no usage).
fn summed(steps: &[Step]) -> FinalMetrics {
    let metrics: Vec<_> = steps.iter().filter_map(|s| s.metrics.as_ref()).collect();
    let sum = |get: fn(&agentcompass_schema::atif::Metrics) -> Option<u64>| {
        let values: Vec<u64> = metrics.iter().filter_map(|m| get(m)).collect();
        (!values.is_empty()).then(|| values.iter().sum())
    };
    FinalMetrics {
        total_prompt_tokens: sum(|m| m.prompt_tokens),
        total_completion_tokens: sum(|m| m.completion_tokens),
        total_cached_tokens: sum(|m| m.cached_tokens),
        ..FinalMetrics::default()
    }
}

#[cfg(test)]
mod tests;
