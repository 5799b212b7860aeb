//! `agentcompass-host summary RUN_DIR`: recompute `metrics.json` and `summary.md` from the
//! persisted task details.

use std::collections::HashSet;
use std::path::Path;

use agentcompass_plugin_api::contracts::{AttemptSpec, MetricContract};
use anyhow::{anyhow, Context};
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
    let info_path = run_dir.join("run_info.json");
    let info: Value = serde_json::from_str(
        &std::fs::read_to_string(&info_path)
            .with_context(|| format!("cannot read {}", info_path.display()))?,
    )
    .map_err(|e| anyhow!("{}: invalid JSON: {e}", info_path.display()))?;
    let request = &info["request"];
    let benchmark_id = request["benchmark"]["id"]
        .as_str()
        .ok_or_else(|| anyhow!("{}: request.benchmark.id is missing", info_path.display()))?;
    let attempts: AttemptSpec =
        serde_json::from_value(request["execution"]["attempts"].clone()).unwrap_or_default();
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
    let mut params = request["benchmark"]["params"]
        .as_object()
        .cloned()
        .unwrap_or_default();
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
        let category = task.task_json["category"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        aggregator.add_task(
            &category,
            &outcomes_from_results(&task.dir, &task.task_json["attempts"]),
        );
    }
    each_skipped(&run_dir.join("progress.jsonl"), &mut |reason| {
        aggregator.add_skipped(reason)
    });
    let report = aggregator.report();
    let title = SummaryTitle {
        benchmark: benchmark_id.to_string(),
        model: request["model"]["id"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        harness: request["harness"]["id"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
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
        if let Ok(event) = serde_json::from_str::<Value>(&line) {
            if let Some(reason) = event["payload"]["reason"].as_str() {
                each(reason);
            }
        }
    }
}
