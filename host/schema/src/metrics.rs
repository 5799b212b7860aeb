//! `metrics.json`: the request-level metric report. Its record is the plugin API's
//! [`MetricReport`] (a benchmark may compute it itself), re-exported here so every reader
//! names one type.

use std::collections::BTreeMap;

use agentcompass_plugin_api::contracts::TokenUsage;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use agentcompass_plugin_api::contracts::{
    MetricKind, MetricReport, MetricSeries, METRIC_REPORT_SCHEMA_VERSION,
};

/// The file name of the report.
pub const METRICS_FILE: &str = "metrics.json";

/// The series named `metric`: by series id first (`correct.avg@4`), else by metric id.
pub fn find_series<'a>(report: &'a MetricReport, metric: &str) -> Option<&'a MetricSeries> {
    report
        .series
        .iter()
        .find(|s| s.series_id == metric)
        .or_else(|| report.series.iter().find(|s| s.metric_id == metric))
}

/// The host's own entries of a report's `extra` (a benchmark's report may hold others): the
/// run's model usage, the tasks not scored by failure class, and the tasks not run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostExtras {
    /// `extra.model_usage`: every attempt's model usage, summed (absent without model calls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_usage: Option<TokenUsage>,
    /// `extra.not_scored` (absent when every task was scored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_scored: Option<NotScored>,
    /// `extra.skipped` (absent when every task ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<Skipped>,
    /// `extra.rate_limits`: how the model endpoint rate-limited the run (absent when it
    /// never did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limits: Option<RateLimits>,
    /// `extra.dataset_metrics`: Harbor's own metrics of the run (absent for runs without
    /// Harbor rewards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_metrics: Option<Vec<DatasetMetric>>,
    /// `extra.pass_at_k`: Harbor's pass@k by k (absent unless k > 1 and every reward is a
    /// single 0 or 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_at_k: Option<BTreeMap<String, f64>>,
    /// `extra.pricing`: the prices `model_usage.cost_usd` was computed with and where they
    /// came from (absent when the model had no price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pricing: Option<PriceRecord>,
}

/// The prices a run's model calls were priced at (`metrics.json` `extra.pricing`, `run_info.json`
/// `provenance.model.pricing`), in US dollars per million tokens as `model.params.pricing`
/// takes them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PriceRecord {
    /// `model.params.pricing`, or the price table and its LiteLLM release (`litellm@1.110.2`).
    #[serde(default)]
    pub source: String,
    /// The table's entry that priced the model (`claude-sonnet-4-5`; absent for
    /// `model.params.pricing`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// Uncached input tokens.
    #[serde(default)]
    pub input: f64,
    /// Output tokens.
    #[serde(default)]
    pub output: f64,
    /// Cached (cache-read) input tokens.
    #[serde(default)]
    pub cached_input: f64,
}

/// One row of `extra.dataset_metrics`: one Harbor metric of the run — a dataset's declared
/// kind (`mean`, `sum`, `min`, `max`), Harbor's default `mean` of a local dataset (`adhoc`),
/// or a `uv-script` (`script`) — and its value: `{"mean": x}` for single-key rewards, one
/// entry per key for multi-key ones, a script's own object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DatasetMetric {
    /// `NAME@VERSION` of a registry dataset, `adhoc`, or `run` (a run's script).
    #[serde(default)]
    pub dataset: String,
    /// The metric's kind.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// A `uv-script`'s file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
    /// The value.
    #[serde(default)]
    pub value: Map<String, Value>,
}

/// `extra.rate_limits`: the model endpoint's rate limits over the run (shared with the other
/// requests of a `launch` that call the same endpoint with the same key).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RateLimits {
    /// The endpoint's URL.
    #[serde(default)]
    pub endpoint: String,
    /// Rate-limit answers (429, 529, rate-limit errors).
    #[serde(default)]
    pub answers: u64,
    /// Total time calls waited for the endpoint's limit, in seconds.
    #[serde(default)]
    pub waited_seconds: f64,
    /// The adaptive limit at the end.
    #[serde(default)]
    pub limit: u32,
    /// Its maximum.
    #[serde(default)]
    pub max: u32,
}

/// `extra.not_scored`: `{"tasks": N, "classes": {CLASS: {"tasks": N, "reasons": {..}}}}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NotScored {
    /// Tasks without a score.
    #[serde(default)]
    pub tasks: u64,
    /// By failure class (`model`, `environment`, ...).
    #[serde(default)]
    pub classes: BTreeMap<String, ReasonCounts>,
}

/// `extra.skipped`: `{"tasks": N, "reasons": {REASON: N}}`.
pub type Skipped = ReasonCounts;

/// A task count and its reasons.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReasonCounts {
    /// Tasks.
    #[serde(default)]
    pub tasks: u64,
    /// Tasks by reason (an issue code).
    #[serde(default)]
    pub reasons: BTreeMap<String, u64>,
}

impl HostExtras {
    /// The host's entries of `report.extra` (one of the wrong shape reads as absent).
    pub fn of(report: &MetricReport) -> HostExtras {
        let entry = |key: &str| report.extra.get(key).cloned().unwrap_or(Value::Null);
        HostExtras {
            model_usage: serde_json::from_value(entry("model_usage")).unwrap_or_default(),
            not_scored: serde_json::from_value(entry("not_scored")).unwrap_or_default(),
            skipped: serde_json::from_value(entry("skipped")).unwrap_or_default(),
            rate_limits: serde_json::from_value(entry("rate_limits")).unwrap_or_default(),
            dataset_metrics: serde_json::from_value(entry("dataset_metrics")).unwrap_or_default(),
            pass_at_k: serde_json::from_value(entry("pass_at_k")).unwrap_or_default(),
            pricing: serde_json::from_value(entry("pricing")).unwrap_or_default(),
        }
    }

    /// Writes the present entries into `extra`.
    pub fn write_into(&self, extra: &mut Map<String, Value>) {
        if let Ok(Value::Object(entries)) = serde_json::to_value(self) {
            extra.extend(entries);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn host_extras_round_trip_through_a_reports_extra() {
        let extras = HostExtras {
            model_usage: None,
            not_scored: Some(NotScored {
                tasks: 3,
                classes: BTreeMap::from([(
                    "model".to_string(),
                    ReasonCounts {
                        tasks: 3,
                        reasons: BTreeMap::from([("rate_limited".to_string(), 3)]),
                    },
                )]),
            }),
            skipped: Some(ReasonCounts {
                tasks: 1,
                reasons: BTreeMap::from([("budget_exhausted".to_string(), 1)]),
            }),
            rate_limits: Some(RateLimits {
                endpoint: "http://127.0.0.1:9/v1/chat/completions".into(),
                answers: 61,
                waited_seconds: 12.5,
                limit: 3,
                max: 32,
            }),
            dataset_metrics: None,
            pass_at_k: None,
            pricing: Some(PriceRecord {
                source: "litellm@1.110.2".into(),
                entry: Some("gpt-4o".into()),
                input: 2.5,
                output: 10.0,
                cached_input: 1.25,
            }),
        };
        let mut report = MetricReport::default();
        report.extra.insert("benchmark_own".into(), json!(1));
        extras.write_into(&mut report.extra);
        assert_eq!(
            serde_json::to_value(&report.extra).unwrap(),
            json!({
                "benchmark_own": 1,
                "not_scored": {"tasks": 3, "classes": {"model": {"tasks": 3, "reasons": {"rate_limited": 3}}}},
                "skipped": {"tasks": 1, "reasons": {"budget_exhausted": 1}},
                "rate_limits": {"endpoint": "http://127.0.0.1:9/v1/chat/completions",
                                "answers": 61, "waited_seconds": 12.5, "limit": 3, "max": 32},
                "pricing": {"source": "litellm@1.110.2", "entry": "gpt-4o", "input": 2.5,
                            "output": 10.0, "cached_input": 1.25},
            })
        );
        assert_eq!(HostExtras::of(&report), extras);
        report.extra.insert("skipped".into(), json!("odd"));
        assert_eq!(HostExtras::of(&report).skipped, None);
    }
}
