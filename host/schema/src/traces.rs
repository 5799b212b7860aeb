//! One row of `export traces` (training data): the columns Harbor's `harbor traces export`
//! writes, one row per episode (an agent step and everything before it) of an attempt's ATIF
//! trajectory, plus the attempt's numeric `reward` (Harbor's rows carry it only as the
//! `result` string).

use serde::{Deserialize, Serialize};

/// A conversation's message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// Its text (an assistant's reasoning in `<think>`, its calls in `<tool_call>` blocks).
    pub content: String,
}

/// One training row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceRow {
    /// The conversation up to and including the episode's agent turn.
    pub conversations: Vec<TraceMessage>,
    /// The agent (the trajectory's `agent.name`).
    pub agent: String,
    /// The model (provider stripped).
    pub model: String,
    /// The model's provider (`unknown-provider` when not known).
    pub model_provider: String,
    /// When the attempt started.
    pub date: String,
    /// The task.
    pub task: String,
    /// `episode-N` (from 0).
    pub episode: String,
    /// The run.
    pub run_id: String,
    /// The attempt (`<task>__attempt-<n>`).
    pub trial_name: String,
    /// The reward as Python prints it (`1.0`), or the attempt's failure.
    pub result: Option<String>,
    /// The attempt's reward.
    pub reward: Option<f64>,
    /// The tools offered, as JSON (OpenAI function schemas), when the trajectory lists them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_definitions: Option<String>,
}
