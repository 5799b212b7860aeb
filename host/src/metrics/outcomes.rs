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
        .filter_map(|(_, d)| {
            let text = std::fs::read_to_string(dir.join(d).join("result.json")).ok()?;
            let value: Value = serde_json::from_str(&text).ok()?;
            Some(AttemptRecord {
                metrics: serde_json::from_value(value["metrics"].clone()).unwrap_or_default(),
                issues: serde_json::from_value(value["issues"].clone()).unwrap_or_default(),
                usage: serde_json::from_value(
                    value["meta"]["harness"]["telemetry"]["model_usage"].clone(),
                )
                .unwrap_or_default(),
            })
        })
        .collect()
}

/// The metric outcomes of a published task's attempts, read from its `result.json` files.
pub fn outcomes_from_results(dir: &std::path::Path, attempts: &Value) -> Vec<AttemptOutcome> {
    attempt_records(dir, attempts)
        .iter()
        .map(AttemptRecord::outcome)
        .collect()
}
