//! An attempt's `result.json` — exactly upstream's field set, which its strict reader
//! requires — as [`AttemptRecord`] (what the host writes) and [`AttemptHead`] (what the
//! metric readers parse: metrics, issues and model usage, the trajectory skipped unbuilt).

use std::collections::BTreeMap;

use agentcompass_plugin_api::contracts::{ExecutionIssue, MetricValue, TaskStatus, TokenUsage};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The file name of an attempt's result.
pub const RESULT_FILE: &str = "result.json";
/// Schema of retry records (`attempt-N/retries/retry-M.json`).
pub const RETRY_SCHEMA: &str = "agentcompass.retry.v1";
/// Schema of evaluation checkpoints.
pub const CHECKPOINT_SCHEMA: &str = "agentcompass.evaluation_checkpoint.v4";
/// Schema of a multi-step attempt's step checkpoint (`attempt-N/steps/checkpoint.json`).
pub const STEPS_CHECKPOINT_SCHEMA: &str = "agentcompass.steps_checkpoint.v1";
/// Where a multi-step attempt's per-step records live in `result.json`: `meta.benchmark.steps`.
pub const STEPS_META_KEY: &str = "steps";

/// The fields of an attempt's `result.json`, exactly upstream's set (its strict reader refuses
/// any other): the task-level `ground_truth` lives in `task.json`, a multi-step attempt's
/// per-step records under `meta.benchmark.steps`.
pub const ATTEMPT_FIELDS: [&str; 9] = [
    "status",
    "metrics",
    "final_answer",
    "trajectory",
    "issues",
    "artifacts",
    "meta",
    "analysis_result",
    "retry_count",
];

/// The contents of `result.json`. The parts that may hold secrets (trajectory, issues,
/// artifacts, meta) are JSON values, so the writer redacts them before they are built into
/// the record. Fields are declared in the order the file has always had (alphabetical).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptRecord {
    /// Upstream's analysis slot (always `{}` here; `analyze` writes its own files).
    #[serde(default)]
    pub analysis_result: Value,
    /// The attempt's artifacts map.
    #[serde(default)]
    pub artifacts: Value,
    /// The final answer, if any.
    #[serde(default)]
    pub final_answer: Option<String>,
    /// The issues (a list of `ExecutionIssue`).
    #[serde(default)]
    pub issues: Value,
    /// The benchmark's and the harness's records.
    #[serde(default)]
    pub meta: AttemptMeta,
    /// Observations by metric id.
    #[serde(default)]
    pub metrics: BTreeMap<String, MetricValue>,
    /// Runtime retries before this attempt's result.
    #[serde(default)]
    pub retry_count: u32,
    /// The attempt's status.
    #[serde(default)]
    pub status: TaskStatus,
    /// The trajectory, or null.
    #[serde(default)]
    pub trajectory: Value,
}

/// `result.json` `meta`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AttemptMeta {
    /// The benchmark's extras (and `steps` of a multi-step attempt).
    #[serde(default)]
    pub benchmark: Value,
    /// The harness's record.
    #[serde(default)]
    pub harness: HarnessMeta,
}

/// `result.json` `meta.harness`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HarnessMeta {
    /// The harness's telemetry (`model_usage`, `duration_seconds`, ...).
    #[serde(default)]
    pub telemetry: Value,
}

/// The parts of a `result.json` the metric readers need; everything else (the trajectory,
/// most of `meta`) is skipped while parsing, never built. A part of the wrong shape reads as
/// empty.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct AttemptHead {
    /// Observations by metric id.
    #[serde(default, deserialize_with = "lenient")]
    pub metrics: BTreeMap<String, MetricValue>,
    /// Every issue.
    #[serde(default, deserialize_with = "lenient")]
    pub issues: Vec<ExecutionIssue>,
    /// `meta.harness.telemetry.model_usage`.
    #[serde(default, rename = "meta", deserialize_with = "usage_of_meta")]
    pub usage: TokenUsage,
}

fn lenient<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned + Default,
{
    Ok(serde_json::from_value(Value::deserialize(d)?).unwrap_or_default())
}

fn usage_of_meta<'de, D: serde::Deserializer<'de>>(d: D) -> Result<TokenUsage, D::Error> {
    #[derive(Deserialize, Default)]
    struct Meta {
        #[serde(default)]
        harness: Option<Harness>,
    }
    #[derive(Deserialize, Default)]
    struct Harness {
        #[serde(default)]
        telemetry: Option<Telemetry>,
    }
    #[derive(Deserialize, Default)]
    struct Telemetry {
        #[serde(default, deserialize_with = "lenient")]
        model_usage: TokenUsage,
    }
    let meta = Option::<Meta>::deserialize(d).unwrap_or_default();
    Ok(meta
        .and_then(|m| m.harness)
        .and_then(|h| h.telemetry)
        .map(|t| t.model_usage)
        .unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentcompass_plugin_api::contracts::{IssuePhase, IssueSeverity};
    use serde_json::json;

    #[test]
    fn the_record_has_exactly_upstreams_fields() {
        let record: AttemptRecord = serde_json::from_value(json!({})).unwrap();
        let value = serde_json::to_value(&record).unwrap();
        let mut keys: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut expected = ATTEMPT_FIELDS.to_vec();
        keys.sort();
        expected.sort();
        assert_eq!(keys, expected);
    }

    #[test]
    fn the_head_reads_metrics_issues_and_usage_and_tolerates_odd_parts() {
        let head: AttemptHead = serde_json::from_value(json!({
            "metrics": {"correct": true, "reward": 0.5},
            "issues": [ExecutionIssue::new(IssueSeverity::Error, IssuePhase::Run, "x", "m")],
            "trajectory": {"steps": [1, 2, 3]},
            "meta": {"harness": {"telemetry": {"model_usage": {"prompt_tokens": 3, "completion_tokens": 4}}}},
        }))
        .unwrap();
        assert_eq!(head.metrics.len(), 2);
        assert_eq!(head.issues.len(), 1);
        assert_eq!(head.usage.prompt_tokens, 3);
        let odd: AttemptHead =
            serde_json::from_value(json!({"metrics": 3, "issues": "no", "meta": null})).unwrap();
        assert_eq!(odd, AttemptHead::default());
    }
}
