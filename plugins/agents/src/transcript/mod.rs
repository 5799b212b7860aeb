//! Reading an agent CLI's own record of one run into ACTF trajectory steps.
//!
//! - [`stream_json`]: Claude Code and Qwen Code `stream-json` stdout (one JSON object a line).
//! - [`codex_events`]: `codex exec --json` stdout (`thread.*`, `turn.*`, `item.*` events).
//! - [`mini_trajectory`]: a mini-swe-agent 2.x trajectory file (`-o traj.json`).
//!
//! All three are pure functions of the text: no I/O. The line-based ones never fail: lines that
//! are not JSON (console text, a truncated last line), unknown events and missing fields are
//! skipped and counted in [`Transcript::warnings`].

mod codex;
mod mini;
mod stream_json;
#[cfg(test)]
mod tests;

use agentcompass_plugin_api::contracts::{AssistantContent, TrajectoryMetric, TrajectoryStep};
use serde_json::{json, Map, Value};

pub(crate) use codex::codex_events;
pub(crate) use mini::mini_trajectory;
pub(crate) use stream_json::stream_json;

use crate::text::{one_line_tail, truncate_middle};

/// Observation outputs longer than this (characters) are cut in the middle.
pub(crate) const MAX_OBSERVATION_CHARS: usize = 20_000;

/// A failure or warning message longer than this (characters, folded onto one line) keeps
/// only its tail.
const MAX_MESSAGE_CHARS: usize = 1_000;

/// What an agent CLI's own record of one run says.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Transcript {
    /// One step per model turn, in order: `assistant_content` (text in `content`,
    /// reasoning/thinking in `reasoning_content`, tool calls as a JSON array of
    /// `{"id","name","arguments"}` in `tool_calls`, `Null` when there are none), `observation`
    /// = the tool results of that turn's calls, each `{"tool_call_id", "output"}` plus
    /// `"exit_code"` / `"is_error"` when known; `metric.prompt_tokens_len` /
    /// `completion_tokens_len` when the record gives per-turn usage; `step_id` from 1;
    /// `user_content` = the task prompt for step 1 when known (else `Null`).
    pub steps: Vec<TrajectoryStep>,
    /// The shell commands the agent ran, in order.
    pub commands: Vec<String>,
    /// The agent's final message.
    pub final_answer: Option<String>,
    /// The agent's own failure, one line; `None` when it finished normally (or the record
    /// does not say).
    pub failure: Option<String>,
    /// Non-fatal notices (warnings the agent printed, retries, skipped lines).
    pub warnings: Vec<String>,
    /// The agent's own usage totals when it reports them; informational only.
    pub reported_usage: Option<ReportedUsage>,
}

/// Usage totals as the agent itself reports them.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ReportedUsage {
    /// Input (prompt) tokens, cached ones included.
    pub input_tokens: u64,
    /// Output (completion) tokens.
    pub output_tokens: u64,
    /// The agent's own cost figure in USD, when it gives one.
    pub cost_usd: Option<f64>,
}

impl ReportedUsage {
    /// Adds one call's tokens to the totals.
    fn add(&mut self, input: u64, output: u64) {
        self.input_tokens = self.input_tokens.saturating_add(input);
        self.output_tokens = self.output_tokens.saturating_add(output);
    }
}

/// A step being assembled; becomes a [`TrajectoryStep`] at the end.
#[derive(Debug, Clone, Default)]
struct StepDraft {
    /// The message id this step came from (stream-json merges lines by it).
    message_id: Option<String>,
    /// Visible text blocks, in order.
    content: Vec<String>,
    /// Reasoning/thinking blocks, in order.
    reasoning: Vec<String>,
    /// Tool calls `{"id","name","arguments"}`.
    tool_calls: Vec<Value>,
    /// Tool results of this step's calls.
    observations: Vec<Value>,
    /// Prompt tokens of this model call.
    prompt_tokens: Option<u64>,
    /// Completion tokens of this model call.
    completion_tokens: Option<u64>,
    /// The user content (the task prompt, step 1 only).
    user_content: Value,
    /// The system prompt, when the record has it.
    system_prompt: Option<String>,
}

impl StepDraft {
    /// True when the step has neither text, reasoning, calls nor observations.
    fn is_empty(&self) -> bool {
        self.content.is_empty()
            && self.reasoning.is_empty()
            && self.tool_calls.is_empty()
            && self.observations.is_empty()
    }

    /// The finished step, numbered `step_id`.
    fn into_step(self, step_id: u64) -> TrajectoryStep {
        TrajectoryStep {
            step_id,
            system_prompt: self.system_prompt,
            user_content: self.user_content,
            assistant_content: AssistantContent {
                content: joined(self.content),
                reasoning_content: joined(self.reasoning),
                tool_calls: if self.tool_calls.is_empty() {
                    Value::Null
                } else {
                    Value::Array(self.tool_calls)
                },
            },
            observation: self.observations,
            metric: TrajectoryMetric {
                prompt_tokens_len: self.prompt_tokens,
                completion_tokens_len: self.completion_tokens,
                ..TrajectoryMetric::default()
            },
            ..TrajectoryStep::default()
        }
    }
}

/// The drafts as numbered steps (from 1).
fn finish_steps(drafts: Vec<StepDraft>) -> Vec<TrajectoryStep> {
    drafts
        .into_iter()
        .zip(1u64..)
        .map(|(draft, id)| draft.into_step(id))
        .collect()
}

/// The parts joined by newlines, or `None` when there are none.
fn joined(parts: Vec<String>) -> Option<String> {
    (!parts.is_empty()).then(|| parts.join("\n"))
}

/// A tool call in the transcript's shape.
fn tool_call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"id": id, "name": name, "arguments": arguments})
}

/// A tool result in the transcript's shape, its output cut to [`MAX_OBSERVATION_CHARS`].
fn observation(
    tool_call_id: &str,
    output: &str,
    exit_code: Option<i64>,
    is_error: Option<bool>,
) -> Value {
    let mut obs = Map::new();
    obs.insert("tool_call_id".into(), tool_call_id.into());
    obs.insert(
        "output".into(),
        truncate_middle(output, MAX_OBSERVATION_CHARS).into(),
    );
    if let Some(code) = exit_code {
        obs.insert("exit_code".into(), code.into());
    }
    if let Some(flag) = is_error {
        obs.insert("is_error".into(), flag.into());
    }
    Value::Object(obs)
}

/// The JSON objects among the lines of `text`, and how many non-blank lines were not JSON
/// objects.
fn json_lines(text: &str) -> (Vec<Map<String, Value>>, usize) {
    let mut objects = Vec::new();
    let mut skipped = 0;
    for line in text.lines().map(str::trim).filter(|line| !line.is_empty()) {
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(object)) => objects.push(object),
            _ => skipped += 1,
        }
    }
    (objects, skipped)
}

/// The warning for `skipped` lines that were not JSON, if any.
fn skipped_warning(skipped: usize) -> Option<String> {
    match skipped {
        0 => None,
        1 => Some("1 line was not JSON".to_string()),
        n => Some(format!("{n} lines were not JSON")),
    }
}

/// `text` folded onto one line (and cut to its tail when very long).
fn one_line(text: &str) -> String {
    one_line_tail(text, MAX_MESSAGE_CHARS)
}

/// The string at `key`, if it is one.
fn str_at<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// The non-negative integer at `key`, if it is one.
fn u64_at(value: &Value, key: &str) -> Option<u64> {
    value.get(key).and_then(Value::as_u64)
}

/// A tool call's arguments as JSON: a string that holds JSON is parsed, anything else is kept.
fn arguments_value(arguments: Option<&Value>) -> Value {
    match arguments {
        Some(Value::String(raw)) => {
            serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.clone()))
        }
        Some(other) => other.clone(),
        None => Value::Object(Map::new()),
    }
}
