//! The metric outcomes of a published task, read back from its attempts' `result.json`.

use std::collections::BTreeMap;
use std::path::Path;

use agentcompass_plugin_api::contracts::{ExecutionIssue, MetricValue, TokenUsage};
use agentcompass_schema::attempt::{AttemptHead, RESULT_FILE};
use agentcompass_schema::task::TaskRecord;

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

/// The record of the attempt whose result is at `path`; `None` when the file cannot be read
/// or is not a JSON object.
fn read_record(path: &Path) -> Option<AttemptRecord> {
    let bytes = std::fs::read(path).ok()?;
    let head: AttemptHead = serde_json::from_slice(&bytes).ok()?;
    Some(AttemptRecord {
        metrics: head.metrics,
        issues: head.issues,
        usage: head.usage,
    })
}

/// The records of a published task's attempts, in attempt order; unreadable ones are left
/// out.
pub fn attempt_records(dir: &Path, task: &TaskRecord) -> Vec<AttemptRecord> {
    task.valid_attempts()
        .into_iter()
        .filter_map(|(_, d)| read_record(&dir.join(d).join(RESULT_FILE)))
        .collect()
}

/// The records of every attempt of a published task, each `result.json` read once, or
/// `None` when the task is not complete: no attempts, an entry that is not a number and a
/// plain directory name, or an attempt whose `result.json` is missing or not an object.
pub fn complete_attempt_records(dir: &Path, task: &TaskRecord) -> Option<Vec<AttemptRecord>> {
    let numbered = task.numbered_attempts()?;
    if numbered.is_empty() {
        return None;
    }
    numbered
        .into_iter()
        .map(|(_, d)| read_record(&dir.join(d).join(RESULT_FILE)))
        .collect()
}

/// The metric outcomes of a published task's attempts, read from its `result.json` files.
pub fn outcomes_from_results(dir: &Path, task: &TaskRecord) -> Vec<AttemptOutcome> {
    attempt_records(dir, task)
        .iter()
        .map(AttemptRecord::outcome)
        .collect()
}
