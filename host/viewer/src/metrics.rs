//! What the viewer reads of a run's `metrics.json` (written when the run ends): its headline
//! series, read leniently, and the run's primary metric.

use std::path::Path;

use agentcompass_schema::metrics::METRICS_FILE;
use serde::Deserialize;
use serde_json::Value;

use crate::tasks::read_json;

/// A series of a `metrics.json` as the run list shows it: read leniently (a report of another
/// tool may name its ids `id` and `metric`, or lack a kind), so it is not the full
/// [`agentcompass_schema::metrics::MetricSeries`].
#[derive(Debug, Default, serde::Deserialize, serde::Serialize)]
#[serde(default)]
struct ShownSeries {
    #[serde(alias = "id")]
    series_id: Value,
    #[serde(alias = "metric")]
    metric_id: Value,
    #[serde(skip_serializing)]
    role: Value,
    /// `binary_success` or `scalar` (null when the report has none): how the value is shown.
    kind: Value,
    value: Value,
    /// The value over the scored tasks when evaluation failed (`value` is then null).
    reference_value: Value,
}

/// The series of a report whose role is `headline`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct ShownReport {
    series: Vec<ShownSeries>,
}

/// The series of a `metrics.json` whose role is `headline`, as
/// `{series_id, metric_id, kind, value, reference_value}`.
pub fn headline(metrics: &Value) -> Option<Value> {
    let report = ShownReport::deserialize(metrics).ok()?;
    let found = report
        .series
        .into_iter()
        .find(|s| s.role.as_str() == Some("headline"))?;
    serde_json::to_value(found).ok()
}

/// The run's primary metric: the headline metric of its `metrics.json`, else the first metric
/// of [`crate::tasks::PRIMARY_FALLBACK`] a task has.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PrimaryMetric {
    /// The metric id (empty: no task has one yet).
    pub id: String,
    /// Whether it is binary (`binary_success`, or its values are booleans).
    pub binary: bool,
    /// Whether `metrics.json` named it (else it is guessed from the tasks).
    pub declared: bool,
}

impl PrimaryMetric {
    /// The headline metric of the `metrics.json` of `run_dir` (`None`: none yet).
    pub fn declared(run_dir: &Path) -> Option<PrimaryMetric> {
        let metrics: Value = read_json(&run_dir.join(METRICS_FILE))?;
        let series = headline(&metrics)?;
        let id = series.get("metric_id").and_then(Value::as_str)?.to_string();
        let binary = series.get("kind").and_then(Value::as_str) == Some("binary_success");
        Some(PrimaryMetric {
            id,
            binary,
            declared: true,
        })
    }

    /// The kind's name as `metrics.json` spells it.
    pub fn kind(&self) -> &'static str {
        if self.binary {
            "binary_success"
        } else {
            "scalar"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn headline_series() {
        let m = json!({"series": [{"series_id": "s", "metric_id": "acc", "role": "headline", "value": 0.5, "kind": "binary_success"}]});
        let shown = headline(&m).unwrap();
        assert_eq!(shown["value"], 0.5);
        assert_eq!(shown["kind"], "binary_success");
        assert!(headline(&json!({})).is_none());
    }

    #[test]
    fn the_declared_primary_metric() {
        let dir = tempfile::tempdir().unwrap();
        assert!(PrimaryMetric::declared(dir.path()).is_none());
        std::fs::write(
            dir.path().join(METRICS_FILE),
            r#"{"series": [{"metric_id": "reward", "kind": "scalar", "role": "headline"}]}"#,
        )
        .unwrap();
        let metric = PrimaryMetric::declared(dir.path()).unwrap();
        assert_eq!((metric.id.as_str(), metric.kind()), ("reward", "scalar"));
    }
}
