//! Reading one run for a comparison: its identity (`run_info.json`), its metrics
//! (`metrics.json`) and one small record per published task.

use std::collections::BTreeMap;
use std::path::Path;

use agentcompass_results::store::published_tasks;
use agentcompass_schema::metrics::{MetricKind, MetricReport, METRICS_FILE};
use agentcompass_schema::run_info::{RunInfo, RUN_INFO_FILE};
use serde::de::DeserializeOwned;

use super::{CompareError, RunSide};
use crate::metrics::{attempt_records, observation};

/// What a run is: identity and metrics, read before its tasks.
#[derive(Debug, Clone)]
pub struct RunHead {
    pub(super) run_dir: std::path::PathBuf,
    pub(super) benchmark: String,
    pub(super) run_id: String,
    pub(super) model: String,
    pub(super) harness: String,
    pub(super) k: u32,
    /// Metric ids and kinds in `metrics.json` order (the headline metric first).
    metrics: Vec<(String, MetricKind)>,
}

impl RunHead {
    /// The metric to compare: `asked`, else the headline one.
    pub(super) fn pick_metric(
        &self,
        run: &Path,
        asked: Option<&str>,
    ) -> Result<(String, MetricKind), CompareError> {
        let found = match asked {
            Some(id) => self.metrics.iter().find(|(m, _)| m == id),
            None => self.metrics.first(),
        };
        found.cloned().ok_or_else(|| CompareError::UnknownMetric {
            metric: asked.unwrap_or("(headline)").to_string(),
            run: run.to_path_buf(),
            known: if self.metrics.is_empty() {
                "none: run `summary` on it first".to_string()
            } else {
                self.metrics
                    .iter()
                    .map(|(m, _)| m.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        })
    }

    pub(super) fn side(&self, tasks: usize) -> RunSide {
        RunSide {
            run_dir: self.run_dir.clone(),
            run_id: self.run_id.clone(),
            model: self.model.clone(),
            harness: self.harness.clone(),
            k: self.k,
            tasks,
        }
    }
}

fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T, CompareError> {
    let text = std::fs::read_to_string(path).map_err(|e| CompareError::Unreadable {
        path: path.to_path_buf(),
        reason: format!("cannot read it ({e}); expected a run directory"),
    })?;
    serde_json::from_str(&text).map_err(|e| CompareError::Unreadable {
        path: path.to_path_buf(),
        reason: format!("invalid JSON: {e}"),
    })
}

/// Reads a run's identity and metric list.
pub(super) fn read_head(run: &Path) -> Result<RunHead, CompareError> {
    let info: RunInfo = read_json(&run.join(RUN_INFO_FILE))?;
    let request = info.request_head();
    if request.benchmark.id.is_empty() {
        return Err(CompareError::Unreadable {
            path: run.join(RUN_INFO_FILE),
            reason: "request.benchmark.id is missing".to_string(),
        });
    }
    let mut metrics: Vec<(String, MetricKind)> = Vec::new();
    if let Ok(report) = read_json::<MetricReport>(&run.join(METRICS_FILE)) {
        for series in report.series {
            if !series.metric_id.is_empty() && !metrics.iter().any(|(m, _)| *m == series.metric_id)
            {
                metrics.push((series.metric_id, series.kind));
            }
        }
    }
    Ok(RunHead {
        run_dir: run.to_path_buf(),
        benchmark: request.benchmark.id,
        run_id: info.run_id,
        model: request.model.id,
        harness: request.harness.id,
        k: request.execution.attempts.k.max(1),
        metrics,
    })
}

/// One published task of a run, reduced to what a comparison needs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskOutcome {
    /// The task's category (`default` when it has none).
    pub category: String,
    /// Mean of its scored attempts' values (the first k); `None` when none is scored.
    pub value: Option<f64>,
    /// Binary metrics: whether each scored attempt solved it.
    pub attempts: Vec<bool>,
}

/// The published tasks of a run, by task id.
#[derive(Debug, Clone, Default)]
pub struct RunTasks {
    /// Task id → outcome.
    pub tasks: BTreeMap<String, TaskOutcome>,
}

/// Reads every published task of `run` for `metric` (one pass; one record per task).
pub fn read_run(run: &Path, head: &RunHead, metric: &str, kind: MetricKind) -> RunTasks {
    let mut tasks = BTreeMap::new();
    for task in published_tasks(run) {
        let records = attempt_records(&task.dir, &task.record);
        let values: Vec<f64> = records
            .iter()
            .take(head.k as usize)
            .filter_map(|r| observation(&r.outcome(), metric, kind))
            .collect();
        let category = task.record.category_or_default().to_string();
        let value = (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64);
        let attempts = match kind {
            MetricKind::BinarySuccess => values.iter().map(|v| *v >= 0.5).collect(),
            MetricKind::Scalar => Vec::new(),
        };
        tasks.insert(
            task.task_id,
            TaskOutcome {
                category,
                value,
                attempts,
            },
        );
    }
    RunTasks { tasks }
}
