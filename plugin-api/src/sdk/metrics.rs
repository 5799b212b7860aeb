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
            let mut series = MetricSeries::new(&spec.id, spec.kind, reducer, k);
            series.role = if spec.primary {
                "headline"
            } else {
                "auxiliary"
            }
            .to_string();
            series.display = Some(spec.display());
            series.value = (counts.evaluated > 0).then(|| sum / counts.evaluated as f64);
            series.counts = counts;
            series
        })
        .collect();
    Ok(MetricReport {
        k,
        strategy: req.execution.attempts.strategy,
        series,
        ..MetricReport::default()
    })
}
