//! ATIF, Harbor's Agent Trajectory Interchange Format (`agent/trajectory.json`, version
//! [`ATIF_SCHEMA_VERSION`]): the trajectory every attempt writes next to its `result.json`,
//! which Harbor's viewer, `harbor traces export`, `harbor-atif2otel`, Phoenix and Inspect
//! Scout read. The types follow Harbor 0.25's pydantic models (`models/trajectories/*`, every
//! one `extra="forbid"`), field for field; `None` fields are left out when written, as
//! Harbor's `Trajectory.to_json_dict()` (`exclude_none`) leaves them out.
//!
//! What Harbor's validator checks beyond the shapes, and what [`Trajectory::problems`]
//! checks too (the writer's tests run it on every document they build): step ids are 1, 2,
//! …; only `agent` steps carry `model_name`, `reasoning_effort`, `reasoning_content`,
//! `tool_calls` or `metrics`; an agent step with `llm_call_count` 0 carries no `metrics` or
//! `reasoning_content`; every observation's `source_call_id` names a tool call of its step;
//! every subagent trajectory has a `trajectory_id` of its own.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The ATIF version written (Harbor 0.25 reads `ATIF-v1.0` … `ATIF-v1.8`).
pub const ATIF_SCHEMA_VERSION: &str = "ATIF-v1.8";

/// Where an attempt's (or a step's) trajectory lives, relative to its directory.
pub const ATIF_PATH: &str = "agent/trajectory.json";

/// A whole trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trajectory {
    /// [`ATIF_SCHEMA_VERSION`].
    pub schema_version: String,
    /// The agent's session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// This trajectory's id (required of a subagent's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trajectory_id: Option<String>,
    /// The agent.
    pub agent: Agent,
    /// At least one step, numbered from 1.
    pub steps: Vec<Step>,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    /// Totals over the steps and the subagents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_metrics: Option<FinalMetrics>,
    /// The file this one continues in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continued_trajectory_ref: Option<String>,
    /// Anything else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
    /// The subagents' own trajectories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent_trajectories: Option<Vec<Trajectory>>,
}

/// The agent of a trajectory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Agent {
    /// Its name (`terminus`, `claude-code`, ...).
    pub name: String,
    /// Its version (`unknown` when not detected, as Harbor writes).
    pub version: String,
    /// The model it used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    /// The tools it offered, as OpenAI function schemas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_definitions: Option<Vec<Value>>,
    /// Anything else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

/// Who a step is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// A system prompt.
    System,
    /// The user (the task's instruction, a simulated user's answer).
    User,
    /// The agent (a model call, or an action without one).
    Agent,
}

/// One step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// 1, 2, … in order.
    pub step_id: u64,
    /// ISO 8601.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// Who.
    pub source: Source,
    /// The model of this step (agent steps only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    /// The reasoning effort asked (agent steps only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<Value>,
    /// The text (a string, or content parts).
    pub message: Value,
    /// The model's reasoning (agent steps only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// The tools called (agent steps only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// What the calls returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<Observation>,
    /// Tokens and cost (agent steps only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    /// A step copied from an earlier context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_copied_context: Option<bool>,
    /// How many model calls the step made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_call_count: Option<u64>,
    /// Anything else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

impl Step {
    /// A step from `source` with `message` and nothing else.
    pub fn new(step_id: u64, source: Source, message: Value) -> Step {
        Step {
            step_id,
            timestamp: None,
            source,
            model_name: None,
            reasoning_effort: None,
            message,
            reasoning_content: None,
            tool_calls: None,
            observation: None,
            metrics: None,
            is_copied_context: None,
            llm_call_count: None,
            extra: None,
        }
    }
}

/// One tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Its id (what an observation's `source_call_id` names).
    pub tool_call_id: String,
    /// The tool.
    pub function_name: String,
    /// Its arguments (an object, possibly empty).
    pub arguments: Map<String, Value>,
    /// Anything else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

/// What a step's tool calls returned.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// One result per call (or per event without a call).
    pub results: Vec<ObservationResult>,
}

/// One result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ObservationResult {
    /// The call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_call_id: Option<String>,
    /// What the agent saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
    /// The subagent trajectories the call started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent_trajectory_ref: Option<Vec<SubagentTrajectoryRef>>,
    /// Anything else (exit code, error flag, duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

/// A reference to a subagent's trajectory (by id, or by file).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SubagentTrajectoryRef {
    /// The subagent trajectory's `trajectory_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trajectory_id: Option<String>,
    /// Its session (informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Its file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trajectory_path: Option<String>,
    /// Anything else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

/// A step's tokens and cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Prompt tokens, cached ones included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// Completion tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// Cached prompt tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// US dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Anything else (latencies, stop reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

/// A trajectory's totals.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FinalMetrics {
    /// Prompt tokens, cached ones included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_prompt_tokens: Option<u64>,
    /// Completion tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_completion_tokens: Option<u64>,
    /// Cached prompt tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_cached_tokens: Option<u64>,
    /// US dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_cost_usd: Option<f64>,
    /// Steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_steps: Option<u64>,
    /// Anything else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

impl Trajectory {
    /// What Harbor's model validators would refuse in this document (empty: nothing), one
    /// line each, located as Harbor locates them.
    pub fn problems(&self) -> Vec<String> {
        let mut found = Vec::new();
        if self.steps.is_empty() {
            found.push("trajectory.steps: at least one step".to_string());
        }
        for (i, step) in self.steps.iter().enumerate() {
            step_problems(i, step, &mut found);
        }
        let mut ids = std::collections::BTreeSet::new();
        for (i, sub) in self.subagent_trajectories.iter().flatten().enumerate() {
            match &sub.trajectory_id {
                None => found.push(format!(
                    "trajectory.subagent_trajectories.{i}: no trajectory_id"
                )),
                Some(id) if !ids.insert(id.clone()) => found.push(format!(
                    "trajectory.subagent_trajectories.{i}: trajectory_id `{id}` repeated"
                )),
                Some(_) => {}
            }
            found.extend(
                sub.problems()
                    .into_iter()
                    .map(|p| format!("subagent {i}: {p}")),
            );
        }
        found
    }
}

fn step_problems(i: usize, step: &Step, found: &mut Vec<String>) {
    let at = format!("trajectory.steps.{i}");
    if step.step_id != i as u64 + 1 {
        found.push(format!(
            "{at}: step_id {} (expected {})",
            step.step_id,
            i + 1
        ));
    }
    if step.source != Source::Agent
        && (step.model_name.is_some()
            || step.reasoning_effort.is_some()
            || step.reasoning_content.is_some()
            || step.tool_calls.is_some()
            || step.metrics.is_some())
    {
        found.push(format!(
            "{at}: agent-only fields on a {:?} step",
            step.source
        ));
    }
    if step.llm_call_count == Some(0)
        && (step.metrics.is_some() || step.reasoning_content.is_some())
    {
        found.push(format!("{at}: metrics or reasoning with llm_call_count 0"));
    }
    let calls: Vec<&str> = step
        .tool_calls
        .iter()
        .flatten()
        .map(|c| c.tool_call_id.as_str())
        .collect();
    for result in step.observation.iter().flat_map(|o| &o.results) {
        if let Some(id) = &result.source_call_id {
            if !calls.contains(&id.as_str()) {
                found.push(format!(
                    "{at}: source_call_id `{id}` is no tool call of the step"
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn absent_fields_are_left_out_and_the_rules_hold() {
        let mut agent_step = Step::new(2, Source::Agent, json!(""));
        agent_step.tool_calls = Some(vec![ToolCall {
            tool_call_id: "c1".into(),
            function_name: "bash".into(),
            arguments: Map::new(),
            extra: None,
        }]);
        agent_step.observation = Some(Observation {
            results: vec![ObservationResult {
                source_call_id: Some("c1".into()),
                content: Some(json!("ok")),
                ..Default::default()
            }],
        });
        let doc = Trajectory {
            schema_version: ATIF_SCHEMA_VERSION.into(),
            session_id: None,
            trajectory_id: None,
            agent: Agent {
                name: "terminus".into(),
                version: "0.1.0".into(),
                ..Default::default()
            },
            steps: vec![Step::new(1, Source::User, json!("do it")), agent_step],
            notes: None,
            final_metrics: None,
            continued_trajectory_ref: None,
            extra: None,
            subagent_trajectories: None,
        };
        assert_eq!(doc.problems(), Vec::<String>::new());
        let written = serde_json::to_value(&doc).unwrap();
        assert_eq!(
            written["steps"][0],
            json!({"step_id": 1, "source": "user", "message": "do it"})
        );
        let mut bad = doc.clone();
        bad.steps[0].metrics = Some(Metrics::default());
        bad.steps[1].observation.as_mut().unwrap().results[0].source_call_id = Some("x".into());
        assert_eq!(bad.problems().len(), 2, "{:?}", bad.problems());
        let back: Trajectory = serde_json::from_value(written).unwrap();
        assert_eq!(back, doc);
    }
}
