//! The metric outcomes of a published task, read back from its attempts' `result.json`.

use agentcompass_plugin_api::contracts::{ExecutionIssue, MetricValue};
use serde_json::Value;

use super::AttemptOutcome;

/// The metric outcomes of a published task's attempts, read from its `result.json` files.
pub fn outcomes_from_results(dir: &std::path::Path, attempts: &Value) -> Vec<AttemptOutcome> {
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
            let metrics: std::collections::BTreeMap<String, MetricValue> =
                serde_json::from_value(value["metrics"].clone()).unwrap_or_default();
            let issues: Vec<ExecutionIssue> =
                serde_json::from_value(value["issues"].clone()).unwrap_or_default();
            let usage = serde_json::from_value(
                value["meta"]["harness"]["telemetry"]["model_usage"].clone(),
            )
            .unwrap_or_default();
            Some(AttemptOutcome::from_parts(metrics, &issues, usage))
        })
        .collect()
}
