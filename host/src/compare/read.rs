//! Reading one run for a comparison: its identity (`run_info.json`), its metrics
//! (`metrics.json`) and one small record per published task.

use std::collections::BTreeMap;
use std::path::Path;

use agentcompass_plugin_api::contracts::MetricKind;
use agentcompass_results::store::published_tasks;
use serde_json::Value;

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

fn read_json(path: &Path) -> Result<Value, CompareError> {
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
    let info = read_json(&run.join("run_info.json"))?;
    let request = &info["request"];
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let benchmark = text(&request["benchmark"]["id"]);
    if benchmark.is_empty() {
        return Err(CompareError::Unreadable {
            path: run.join("run_info.json"),
            reason: "request.benchmark.id is missing".to_string(),
        });
    }
    let k = request["execution"]["attempts"]["k"]
        .as_u64()
        .map_or(1, |k| k.max(1) as u32);
    let mut metrics: Vec<(String, MetricKind)> = Vec::new();
    if let Ok(report) = read_json(&run.join("metrics.json")) {
        for series in report["series"].as_array().into_iter().flatten() {
            let id = text(&series["metric_id"]);
            let kind = serde_json::from_value(series["kind"].clone()).ok();
            if let (false, Some(kind)) = (id.is_empty(), kind) {
                if !metrics.iter().any(|(m, _)| *m == id) {
                    metrics.push((id, kind));
                }
            }
        }
    }
    Ok(RunHead {
        run_dir: run.to_path_buf(),
        benchmark,
        run_id: text(&info["run_id"]),
        model: text(&request["model"]["id"]),
        harness: text(&request["harness"]["id"]),
        k,
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
        let records = attempt_records(&task.dir, &task.task_json["attempts"]);
        let values: Vec<f64> = records
            .iter()
            .take(head.k as usize)
            .filter_map(|r| observation(&r.outcome(), metric, kind))
            .collect();
        let category = match task.task_json["category"].as_str() {
            Some(c) if !c.is_empty() => c.to_string(),
            _ => crate::metrics::DEFAULT_CATEGORY.to_string(),
        };
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
