//! `agentcompass-host summary RUN_DIR`: recompute `metrics.json` and `summary.md` from the
//! persisted task details.

use std::collections::HashSet;
use std::path::Path;

use agentcompass_plugin_api::contracts::MetricContract;
use agentcompass_schema::progress::{EventKind, EventLine};
use agentcompass_schema::read_json;
use agentcompass_schema::run_info::{RunInfo, RUN_INFO_FILE};
use anyhow::{anyhow, bail};
use serde_json::Value;

use agentcompass_host::metrics::outcomes_from_results;
use agentcompass_host::metrics::{render_summary, MetricAggregator, SummaryTitle};
use agentcompass_host::registry::Registry;
use agentcompass_results::store::{published_tasks, RunStore};

/// `summary` options (upstream's flags).
#[derive(Debug, Clone, Default)]
pub struct SummaryOptions {
    /// `--dry-run`: print summary.md, write nothing.
    pub dry_run: bool,
    /// `--benchmark-params`: merged over the run's benchmark params.
    pub benchmark_params: Option<serde_json::Map<String, Value>>,
}

/// The task ids `sample_ids` selects (a string, a number or a list of them), if set.
fn sample_ids(params: &serde_json::Map<String, Value>) -> anyhow::Result<Option<HashSet<String>>> {
    let one = |v: &Value| match v {
        Value::String(s) => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    match params.get("sample_ids") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                one(v).ok_or_else(|| {
                    anyhow!(
                        "--benchmark-params: sample_ids: expected strings or numbers, found {v}"
                    )
                })
            })
            .collect::<anyhow::Result<HashSet<_>>>()
            .map(Some),
        Some(v) => one(v).map(|id| Some(HashSet::from([id]))).ok_or_else(|| {
            anyhow!(
                "--benchmark-params: sample_ids: expected a string, a number or a list, found {v}"
            )
        }),
    }
}

/// Recomputes and rewrites the metrics of a finished (or interrupted) run; prints the summary.
pub fn summary(
    registry: &Registry,
    run_dir: &Path,
    options: &SummaryOptions,
) -> anyhow::Result<i32> {
    let store = RunStore::open_existing(run_dir)?;
    let info_path = run_dir.join(RUN_INFO_FILE);
    let info: RunInfo = read_json(&info_path, RUN_INFO_FILE)?;
    let request = info.request_head();
    let benchmark_id = request.benchmark.id.as_str();
    if benchmark_id.is_empty() {
        bail!("{}: request.benchmark.id is missing", info_path.display());
    }
    let attempts = request.execution.attempts;
    let contract = match registry.benchmark(benchmark_id) {
        Ok(handle) => handle
            .benchmark
            .metric_contract()
            .unwrap_or_else(|_| MetricContract::correct()),
        Err(e) => {
            tracing::warn!("{e}; using the default metric contract");
            MetricContract::correct()
        }
    };
    let mut params = request.benchmark.params.clone();
    if let Some(over) = &options.benchmark_params {
        params.extend(over.clone());
    }
    let selected = sample_ids(&params)?;
    let mut aggregator = MetricAggregator::new(contract, attempts.k.max(1), attempts.strategy);
    for task in published_tasks(run_dir) {
        if selected
            .as_ref()
            .is_some_and(|ids| !ids.contains(&task.task_id))
        {
            continue;
        }
        aggregator.add_task(
            &task.record.category,
            &outcomes_from_results(&task.dir, &task.record),
        );
    }
    each_skipped(&run_dir.join("progress.jsonl"), &mut |reason| {
        aggregator.add_skipped(reason)
    });
    let mut report = aggregator.report();
    keep_pricing(&info, &mut report);
    let title = SummaryTitle {
        benchmark: benchmark_id.to_string(),
        model: request.model.id,
        harness: request.harness.id,
        run_id: store.run_id().to_string(),
    };
    let rendered = render_summary(&report, &title);
    if !options.dry_run {
        store.write_metrics(&serde_json::to_value(&report)?)?;
        store.write_summary(&rendered)?;
    }
    crate::out!("{rendered}");
    Ok(0)
}

/// Prints the summary of a Harbor job read as a run (Harbor's metrics: `reward`, `correct`);
/// nothing is written in the job's directory.
pub fn harbor_job(job_dir: &Path) -> anyhow::Result<i32> {
    let (run_dir, _job) = super::harbor_input::run_dir(job_dir)?;
    let path = run_dir.join("summary.md");
    let rendered = std::fs::read_to_string(&path)
        .map_err(|e| anyhow!("cannot read {}: {e}", path.display()))?;
    crate::out!("{rendered}");
    Ok(0)
}

/// The prices the run recorded (`run_info.json` `provenance.model.pricing`) as the recomputed
/// report's `extra.pricing`, when its usage has a cost.
fn keep_pricing(info: &RunInfo, report: &mut agentcompass_plugin_api::contracts::MetricReport) {
    use agentcompass_schema::metrics::{HostExtras, PriceRecord};
    let priced = HostExtras::of(report)
        .model_usage
        .is_some_and(|usage| usage.cost_usd.is_some());
    let recorded = info
        .provenance
        .as_ref()
        .and_then(|provenance| provenance.get("model")?.get("pricing").cloned())
        .and_then(|pricing| serde_json::from_value::<PriceRecord>(pricing).ok());
    if let (true, Some(pricing)) = (priced, recorded) {
        HostExtras {
            pricing: Some(pricing),
            ..HostExtras::default()
        }
        .write_into(&mut report.extra);
    }
}

/// Calls `each` with the reason of every `task_skipped` event of a run's `progress.jsonl`
/// (tasks a budget or the error rate kept from running: they are in no task directory).
fn each_skipped(path: &Path, each: &mut dyn FnMut(&str)) {
    use std::io::BufRead;
    let Ok(file) = std::fs::File::open(path) else {
        return;
    };
    for line in std::io::BufReader::new(file).lines().map_while(Result::ok) {
        if !line.contains("\"task_skipped\"") {
            continue;
        }
        if let Ok(event) = serde_json::from_str::<EventLine<'_>>(&line) {
            if event.event == EventKind::TaskSkipped {
                if let Some(reason) = event.task_payload().reason {
                    each(&reason);
                }
            }
        }
    }
}
