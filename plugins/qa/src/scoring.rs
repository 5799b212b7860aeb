//! Scoring: the `match` modes and how a final answer is compared with the acceptable answers.

use agentcompass_plugin_api::contracts::{json_type_name, RunRequest, TaskSpec};
use agentcompass_plugin_api::{Error, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The default `match` mode.
pub const DEFAULT_MATCH: &str = "normalized";

/// Punctuation stripped from both ends of an answer by `normalized` matching.
const SURROUNDING_PUNCTUATION: &[char] = &['.', ',', ';', ':', '!', '?', '"', '\''];

/// The answer prefix dropped by `normalized` matching (after lowercasing).
const ANSWER_PREFIX: &str = "the answer is";

/// How a final answer is compared with an acceptable answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum MatchMode {
    /// Identical strings.
    Exact,
    /// Identical after [`normalize`].
    Normalized,
}

impl MatchMode {
    /// The mode named `name` (`exact` or `normalized`).
    fn parse(name: &str) -> Result<MatchMode> {
        match name {
            "exact" => Ok(MatchMode::Exact),
            "normalized" => Ok(MatchMode::Normalized),
            other => Err(Error::invalid_input(format!(
                "unknown match \"{other}\" (allowed: exact, normalized)"
            ))),
        }
    }
}

/// The `match` param (default `normalized`).
pub(crate) fn match_mode(req: &RunRequest) -> Result<MatchMode> {
    match req.benchmark.params.get("match") {
        None | Some(Value::Null) => MatchMode::parse(DEFAULT_MATCH),
        Some(Value::String(name)) => MatchMode::parse(name),
        Some(other) => Err(Error::invalid_input(format!(
            "param \"match\" must be a string, found {} (allowed: exact, normalized)",
            json_type_name(other)
        ))),
    }
}

/// Unicode lowercase, trim, collapse internal whitespace, strip surrounding punctuation
/// (`.,;:!?"'`) and a leading "the answer is".
pub(crate) fn normalize(text: &str) -> String {
    fn strip(text: &str) -> &str {
        text.trim_matches(|c: char| c.is_whitespace() || SURROUNDING_PUNCTUATION.contains(&c))
    }
    let collapsed = text
        .to_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let mut text = strip(&collapsed);
    if let Some(rest) = text.strip_prefix(ANSWER_PREFIX) {
        // Only the whole words: "the answer island" keeps its prefix.
        if rest
            .chars()
            .next()
            .is_none_or(|c| c.is_whitespace() || SURROUNDING_PUNCTUATION.contains(&c))
        {
            text = strip(rest);
        }
    }
    text.to_string()
}

/// Whether `answer` matches `expected` under `mode`.
pub(crate) fn matches(answer: &str, expected: &str, mode: MatchMode) -> bool {
    match mode {
        MatchMode::Exact => answer == expected,
        MatchMode::Normalized => normalize(answer) == normalize(expected),
    }
}

/// The acceptable answers stored in a task's ground truth.
pub(crate) fn expected_answers(task: &TaskSpec) -> Result<Vec<String>> {
    let invalid = || {
        Error::invalid_input(format!(
            "task {}: ground truth must be a string or a list of strings",
            task.task_id
        ))
    };
    match &task.ground_truth {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|item| item.as_str().map(str::to_string).ok_or_else(invalid))
            .collect(),
        _ => Err(invalid()),
    }
}
