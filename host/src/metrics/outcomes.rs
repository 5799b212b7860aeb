//! The metric outcomes of a published task, read back from its attempts' `result.json`.

use std::collections::BTreeMap;

use agentcompass_plugin_api::contracts::{ExecutionIssue, MetricValue, TokenUsage};
use serde_json::Value;

use super::AttemptOutcome;

/// What a published attempt's `result.json` says about its outcome.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AttemptRecord {
    /// Observations by metric id.
    pub metrics: BTreeMap<String, MetricValue>,
    /// Every issue.
    pub issues: Vec<ExecutionIssue>,
    /// `telemetry.model_usage`.
    pub usage: TokenUsage,
}

impl AttemptRecord {
    /// The attempt's metric outcome.
    pub fn outcome(&self) -> AttemptOutcome {
        AttemptOutcome::from_parts(self.metrics.clone(), &self.issues, self.usage)
    }
}

/// The parts of a `result.json` a record needs; everything else (the trajectory, most of
/// `meta`) is skipped while parsing, never built.
#[derive(serde::Deserialize)]
struct ResultHead {
    #[serde(default)]
    metrics: Value,
    #[serde(default)]
    issues: Value,
    #[serde(default)]
    meta: Option<MetaHead>,
}

#[derive(serde::Deserialize)]
struct MetaHead {
    #[serde(default)]
    harness: Option<HarnessHead>,
}

#[derive(serde::Deserialize)]
struct HarnessHead {
    #[serde(default)]
    telemetry: Option<TelemetryHead>,
}

#[derive(serde::Deserialize)]
struct TelemetryHead {
    #[serde(default)]
    model_usage: Value,
}

/// The record of the attempt whose result is at `path`; `None` when the file cannot be read
/// or is not a JSON object of that shape.
fn read_record(path: &std::path::Path) -> Option<AttemptRecord> {
    let bytes = std::fs::read(path).ok()?;
    let head: ResultHead = serde_json::from_slice(&bytes).ok()?;
    let usage = head
        .meta
        .and_then(|m| m.harness)
        .and_then(|h| h.telemetry)
        .map(|t| t.model_usage)
        .unwrap_or(Value::Null);
    Some(AttemptRecord {
        metrics: serde_json::from_value(head.metrics).unwrap_or_default(),
        issues: serde_json::from_value(head.issues).unwrap_or_default(),
        usage: serde_json::from_value(usage).unwrap_or_default(),
    })
}

/// `task.json`'s map of attempt number to directory, in attempt order; `None` when an entry
/// is not a number and a plain directory name.
fn numbered_dirs(attempts: &Value) -> Option<Vec<(u32, String)>> {
    let map = attempts.as_object()?;
    let mut numbered = Vec::with_capacity(map.len());
    for (n, d) in map {
        let d = d.as_str()?;
        if d.is_empty() || d == "." || d == ".." || d.contains(['/', '\\']) {
            return None;
        }
        numbered.push((n.parse().ok()?, d.to_string()));
    }
    numbered.sort();
    Some(numbered)
}

/// The records of a published task's attempts (`attempts`: `task.json`'s map of attempt
/// number to directory), in attempt order; unreadable ones are left out.
pub fn attempt_records(dir: &std::path::Path, attempts: &Value) -> Vec<AttemptRecord> {
    let Some(map) = attempts.as_object() else {
        return Vec::new();
    };
    let mut numbered: Vec<(u32, String)> = map
        .iter()
        .filter_map(|(n, d)| Some((n.parse().ok()?, d.as_str()?.to_string())))
        .collect();
    numbered.sort();
    numbered
        .into_iter()
        .filter_map(|(_, d)| read_record(&dir.join(d).join("result.json")))
        .collect()
}

/// The records of every attempt of a published task, each `result.json` read once, or
/// `None` when the task is not complete: no attempts, an entry that is not a number and a
/// plain directory name, or an attempt whose `result.json` is missing or not an object.
pub fn complete_attempt_records(
    dir: &std::path::Path,
    attempts: &Value,
) -> Option<Vec<AttemptRecord>> {
    let numbered = numbered_dirs(attempts)?;
    if numbered.is_empty() {
        return None;
    }
    numbered
        .into_iter()
        .map(|(_, d)| read_record(&dir.join(d).join("result.json")))
        .collect()
}

/// The metric outcomes of a published task's attempts, read from its `result.json` files.
pub fn outcomes_from_results(dir: &std::path::Path, attempts: &Value) -> Vec<AttemptOutcome> {
    attempt_records(dir, attempts)
        .iter()
        .map(AttemptRecord::outcome)
        .collect()
}
