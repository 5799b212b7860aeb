//! The default, contract-driven metric aggregation.

use crate::contracts::{
    MetricContract, MetricReport, MetricSeries, RunRequest, SeriesCounts, TaskAttempts,
};
use crate::Result;

/// For each declared metric: a task's value is the mean of its attempts' observations (a
/// boolean counts as 0/1); the series value is the mean over tasks with a value.
/// The reducer is `native` for k = 1 and `avg` otherwise.
pub fn default_report(
    contract: &MetricContract,
    results: &[TaskAttempts],
    req: &RunRequest,
) -> Result<MetricReport> {
    let k = req.execution.attempts.k.max(1);
    let reducer = if k == 1 { "native" } else { "avg" };
    let series = contract
        .metrics
        .iter()
        .map(|spec| {
            let mut counts = SeriesCounts {
                total: results.len() as u64,
                ..SeriesCounts::default()
            };
            let mut sum = 0.0;
            for task in results {
                let values: Vec<f64> = task
                    .attempts
                    .iter()
                    .filter_map(|a| a.metrics.get(&spec.id).map(|v| v.as_f64()))
                    .collect();
                if values.is_empty() {
                    counts.unavailable += 1;
                } else {
                    counts.evaluated += 1;
                    sum += values.iter().sum::<f64>() / values.len() as f64;
                }
            }
            MetricSeries {
                series_id: format!("{}.{reducer}@{k}", spec.id),
                metric_id: spec.id.clone(),
                kind: spec.kind,
                reducer: reducer.to_string(),
                role: if spec.primary {
                    "headline"
                } else {
                    "auxiliary"
                }
                .to_string(),
                value: (counts.evaluated > 0).then(|| sum / counts.evaluated as f64),
                reference_value: None,
                counts,
                categories: Default::default(),
            }
        })
        .collect();
    Ok(MetricReport {
        k,
        strategy: req.execution.attempts.strategy,
        series,
        ..MetricReport::default()
    })
}
