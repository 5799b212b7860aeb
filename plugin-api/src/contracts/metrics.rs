//! Metric declarations and the request-level metric report.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{AttemptStrategy, JsonMap, RunResult};

/// The kind of a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricKind {
    /// A strict boolean per attempt (reducers `avg`, `pass`).
    BinarySuccess,
    /// A finite number per attempt (reducer `avg`).
    Scalar,
}

/// One declared metric.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetricSpec {
    /// Metric id (`correct` / `score` are reserved for the primary).
    pub id: String,
    /// Kind.
    pub kind: MetricKind,
    /// Whether this is the headline metric.
    #[serde(default)]
    pub primary: bool,
    /// Display label.
    #[serde(default)]
    pub label: String,
    /// Description.
    #[serde(default)]
    pub description: String,
}

impl MetricSpec {
    /// A non-primary metric labelled with its id.
    pub fn new(id: impl Into<String>, kind: MetricKind) -> Self {
        let id = id.into();
        MetricSpec {
            label: id.clone(),
            id,
            kind,
            primary: false,
            description: String::new(),
        }
    }
}

impl MetricSpec {
    /// How its series are shown: the label (the id when empty) and the description.
    pub fn display(&self) -> MetricDisplay {
        MetricDisplay {
            label: if self.label.is_empty() {
                self.id.clone()
            } else {
                self.label.clone()
            },
            description: (!self.description.is_empty()).then(|| self.description.clone()),
            unit: None,
            precision: None,
        }
    }
}

/// The metrics a benchmark declares.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct MetricContract {
    /// Declared metrics (exactly one primary).
    pub metrics: Vec<MetricSpec>,
}

impl MetricContract {
    /// The default contract: a single primary binary metric `correct`.
    pub fn correct() -> Self {
        MetricContract {
            metrics: vec![MetricSpec {
                primary: true,
                label: "Correct".to_string(),
                ..MetricSpec::new("correct", MetricKind::BinarySuccess)
            }],
        }
    }

    /// Adds a scalar metric described by `description` (builder style); the first metric
    /// added to an empty contract is its primary.
    ///
    /// ```
    /// use agentcompass_plugin_api::contracts::MetricContract;
    /// let contract = MetricContract::correct()
    ///     .with_scalar("reward", "Fraction of hidden tests passed")
    ///     .with_primary("reward");
    /// assert_eq!(contract.primary().map(|m| m.id.as_str()), Some("reward"));
    /// assert_eq!(contract.metrics.len(), 2);
    /// ```
    pub fn with_scalar(mut self, id: impl Into<String>, description: impl Into<String>) -> Self {
        let primary = self.metrics.is_empty();
        self.metrics.push(MetricSpec {
            primary,
            description: description.into(),
            ..MetricSpec::new(id, MetricKind::Scalar)
        });
        self
    }

    /// Makes metric `id` the only primary one (builder style; an unknown id changes nothing).
    pub fn with_primary(mut self, id: &str) -> Self {
        if self.get(id).is_some() {
            for metric in &mut self.metrics {
                metric.primary = metric.id == id;
            }
        }
        self
    }

    /// The primary metric.
    pub fn primary(&self) -> Option<&MetricSpec> {
        self.metrics.iter().find(|m| m.primary)
    }

    /// Looks a metric up by id.
    pub fn get(&self, id: &str) -> Option<&MetricSpec> {
        self.metrics.iter().find(|m| m.id == id)
    }
}

/// Per-series task counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SeriesCounts {
    /// Tasks considered.
    pub total: u64,
    /// Tasks with a value.
    pub evaluated: u64,
    /// Tasks that errored.
    pub error: u64,
    /// Tasks without a value for other reasons.
    pub unavailable: u64,
    /// Tasks invalidated by a fatal issue.
    pub invalidated: u64,
}

/// A category's (or hierarchy node's) share of a series, in upstream's `MetricBreakdown`
/// shape. Reads a bare number (or `null`) too: the value alone, as earlier hosts and plugins
/// built against them write it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CategoryBreakdown {
    /// Mean over the category's evaluated tasks (`None` when none, or evaluation failed).
    pub value: Option<f64>,
    /// The value over non-invalidated tasks when evaluation failed.
    pub reference_value: Option<f64>,
    /// The category's task counts.
    pub counts: SeriesCounts,
    /// Its weight in the aggregation (`micro_weighted`: its evaluated tasks).
    pub aggregation_weight: Option<f64>,
}

impl CategoryBreakdown {
    /// A breakdown holding only a value.
    pub fn value(value: Option<f64>) -> Self {
        CategoryBreakdown {
            value,
            ..Default::default()
        }
    }

    /// The value, else the reference value.
    pub fn any_value(&self) -> Option<f64> {
        self.value.or(self.reference_value)
    }
}

impl<'de> Deserialize<'de> for CategoryBreakdown {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Default, Deserialize)]
        #[serde(default)]
        struct Full {
            value: Option<f64>,
            reference_value: Option<f64>,
            counts: SeriesCounts,
            aggregation_weight: Option<f64>,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Bare(Option<f64>),
            Full(Full),
        }
        Ok(match Either::deserialize(deserializer)? {
            Either::Bare(value) => CategoryBreakdown::value(value),
            Either::Full(f) => CategoryBreakdown {
                value: f.value,
                reference_value: f.reference_value,
                counts: f.counts,
                aggregation_weight: f.aggregation_weight,
            },
        })
    }
}

/// How a series is shown (upstream's `MetricDisplay`); it never changes what is computed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct MetricDisplay {
    /// Label.
    pub label: String,
    /// Description.
    pub description: Option<String>,
    /// Unit.
    pub unit: Option<String>,
    /// Decimal places.
    pub precision: Option<u32>,
}

/// One reduced metric series (`<metric>.<reducer>@<k>`), in upstream's `MetricSeries` shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricSeries {
    /// Series id, e.g. `correct.avg@4`.
    pub series_id: String,
    /// Metric id.
    pub metric_id: String,
    /// Metric kind.
    pub kind: MetricKind,
    /// Reducer (`native`, `avg`, `pass`).
    #[serde(default)]
    pub reducer: String,
    /// `headline` or `auxiliary`.
    #[serde(default)]
    pub role: String,
    /// How tasks were aggregated (`micro_weighted`, ...).
    #[serde(default)]
    pub aggregation: String,
    /// Label and description of the metric.
    #[serde(default)]
    pub display: Option<MetricDisplay>,
    /// Attempts per task.
    #[serde(default)]
    pub k: u32,
    /// Aggregated value (`None` when unavailable or evaluation failed).
    #[serde(default)]
    pub value: Option<f64>,
    /// Value over non-invalidated tasks when evaluation failed.
    #[serde(default)]
    pub reference_value: Option<f64>,
    /// Task counts.
    #[serde(default)]
    pub counts: SeriesCounts,
    /// Per-category breakdowns.
    #[serde(default)]
    pub categories: BTreeMap<String, CategoryBreakdown>,
    /// Per-node breakdowns of a category hierarchy (`path` → breakdown).
    #[serde(default)]
    pub hierarchy: BTreeMap<String, CategoryBreakdown>,
    /// Series-specific extras.
    #[serde(default)]
    pub extra: JsonMap,
}

impl MetricSeries {
    /// A series `<metric_id>.<reducer>@<k>` with no values yet.
    pub fn new(
        metric_id: impl Into<String>,
        kind: MetricKind,
        reducer: impl Into<String>,
        k: u32,
    ) -> Self {
        let (metric_id, reducer) = (metric_id.into(), reducer.into());
        MetricSeries {
            series_id: format!("{metric_id}.{reducer}@{k}"),
            metric_id,
            kind,
            reducer,
            role: String::new(),
            aggregation: "micro_weighted".to_string(),
            display: None,
            k,
            value: None,
            reference_value: None,
            counts: SeriesCounts::default(),
            categories: BTreeMap::new(),
            hierarchy: BTreeMap::new(),
            extra: JsonMap::new(),
        }
    }
}

/// The default metric report schema version.
pub const METRIC_REPORT_SCHEMA_VERSION: &str = "agentcompass.metrics.v1";

/// The request-level metric report (`metrics.json`, upstream's `MetricReport` shape).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MetricReport {
    /// Schema version (not written: upstream's report has no such field and refuses unknown
    /// ones).
    #[serde(skip_serializing)]
    pub schema_version: String,
    /// Attempts per task.
    pub k: u32,
    /// Attempt strategy.
    pub strategy: AttemptStrategy,
    /// Aggregation (`micro_weighted`, `category_mean`, `category_hierarchy`).
    pub aggregation: String,
    /// Series.
    pub series: Vec<MetricSeries>,
    /// Some task was invalidated; values moved to `reference_value`.
    pub evaluation_failed: bool,
    /// Benchmark-specific extras.
    pub extra: JsonMap,
}

impl Default for MetricReport {
    fn default() -> Self {
        MetricReport {
            schema_version: METRIC_REPORT_SCHEMA_VERSION.to_string(),
            k: 1,
            strategy: AttemptStrategy::default(),
            aggregation: "micro_weighted".to_string(),
            series: Vec::new(),
            evaluation_failed: false,
            extra: JsonMap::new(),
        }
    }
}

impl MetricReport {
    /// The headline series, if any.
    pub fn headline(&self) -> Option<&MetricSeries> {
        self.series.iter().find(|s| s.role == "headline")
    }
}

/// All attempts of one task (input of metric aggregation).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskAttempts {
    /// Task id.
    pub task_id: String,
    /// Category.
    #[serde(default)]
    pub category: String,
    /// Attempt results in order.
    #[serde(default)]
    pub attempts: Vec<RunResult>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn contract_and_report() {
        let contract = MetricContract::correct();
        let primary = contract.primary().unwrap();
        assert_eq!(
            (primary.id.as_str(), primary.kind),
            ("correct", MetricKind::BinarySuccess)
        );
        assert_eq!(
            serde_json::to_value(primary.kind).unwrap(),
            "binary_success"
        );
        let back: MetricContract =
            serde_json::from_value(serde_json::to_value(&contract).unwrap()).unwrap();
        assert_eq!(back, contract);

        let report: MetricReport = serde_json::from_str("{}").unwrap();
        assert_eq!(report, MetricReport::default());
        assert_eq!(report.schema_version, "agentcompass.metrics.v1");
        let mut report = MetricReport {
            k: 4,
            strategy: AttemptStrategy::Pass,
            ..Default::default()
        };
        let mut series = MetricSeries::new("correct", MetricKind::BinarySuccess, "pass", 4);
        assert_eq!(series.series_id, "correct.pass@4");
        series.role = "headline".into();
        series.value = Some(0.5);
        series.counts = SeriesCounts {
            total: 2,
            evaluated: 2,
            ..Default::default()
        };
        series.categories = BTreeMap::from([
            ("a".into(), CategoryBreakdown::value(Some(1.0))),
            ("b".into(), CategoryBreakdown::value(None)),
        ]);
        report.series.push(series);
        let value = serde_json::to_value(&report).unwrap();
        assert_eq!(value["strategy"], "pass");
        assert!(value.get("schema_version").is_none(), "{value}");
        assert_eq!(value["series"][0]["k"], 4);
        assert_eq!(
            value["series"][0]["categories"]["a"],
            json!({"value": 1.0, "reference_value": null, "aggregation_weight": null,
                   "counts": {"total": 0, "evaluated": 0, "error": 0, "unavailable": 0, "invalidated": 0}})
        );
        let back: MetricReport = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(back, report);
        // Reports of earlier hosts (and of plugins built against them) hold bare numbers.
        let mut old = value;
        old["series"][0]["categories"] = json!({"a": 1.0, "b": null});
        let back: MetricReport = serde_json::from_value(old).unwrap();
        assert_eq!(back, report);
        assert_eq!(back.headline().unwrap().value, Some(0.5));
    }

    #[test]
    fn task_attempts_round_trip() {
        let attempts = TaskAttempts {
            task_id: "t".into(),
            category: "c".into(),
            attempts: vec![RunResult::new("t")],
        };
        let back: TaskAttempts =
            serde_json::from_value(serde_json::to_value(&attempts).unwrap()).unwrap();
        assert_eq!(back, attempts);
    }
}
