//! Harbor's own metrics of a run, computed when it ends from every attempt's rewards (the
//! Harbor benchmark's `meta.benchmark.harbor.rewards`): each registry dataset's declared
//! kinds — or Harbor's default `mean` over a local dataset ("adhoc") —, the run's
//! `uv-script` metrics (`--metric-script`), and pass@k for runs with k > 1.
//!
//! The headline rule, Harbor's: a multi-key `reward.json` is reported per key (`{"correctness":
//! 1.0, "performance": 0.5}`), never as a mean of its keys; a single key is named after the
//! metric (`{"mean": 0.75}`).

use std::path::{Path, PathBuf};

use agentcompass_schema::metrics::{DatasetMetric, HostExtras};

use super::dataset::{fold_run, BuiltinMetric, DeclaredMetrics};

/// What a run's Harbor metrics add to `metrics.json` `extra`, and the warnings of scripts
/// that failed.
#[derive(Debug, Default)]
pub struct HarborMetrics {
    /// `extra` entries: `dataset_metrics`, `pass_at_k` (the other entries unset).
    pub extra: HostExtras,
    /// One line per failed script, naming it.
    pub warnings: Vec<String>,
}

/// The inputs: the run directory, the declared metrics of its registry datasets, the run's
/// scripts, its attempts per task and the install cache (where `uv` is installed).
pub struct MetricInputs<'a> {
    /// The run directory.
    pub run_dir: &'a Path,
    /// The registry datasets' declared metrics.
    pub declared: &'a [DeclaredMetrics],
    /// The run's `uv-script` metrics.
    pub scripts: &'a [String],
    /// Attempts per task.
    pub k: u32,
    /// The install cache's root.
    pub install_root: &'a Path,
}

/// Computes the run's Harbor metrics (blocking: reads every attempt, may run scripts).
pub fn compute(inputs: &MetricInputs<'_>) -> HarborMetrics {
    let mut out = HarborMetrics::default();
    // Every script of the run: each dataset's declared ones, then the run's own.
    let all_scripts: Vec<(String, String)> = inputs
        .declared
        .iter()
        .flat_map(|d| d.scripts.iter().map(|s| (d.dataset.clone(), s.clone())))
        .chain(
            inputs
                .scripts
                .iter()
                .map(|s| ("run".to_string(), s.clone())),
        )
        .collect();
    let mut jsonl = match tempfile::NamedTempFile::new() {
        _ if all_scripts.is_empty() => None,
        Ok(file) => Some(file),
        Err(e) => {
            out.warnings
                .push(format!("cannot write rewards.jsonl: {e}"));
            None
        }
    };
    let (fold, pass) = {
        let writer = jsonl
            .as_mut()
            .map(|f| f.as_file_mut() as &mut dyn std::io::Write);
        fold_run(inputs.run_dir, writer)
    };
    let adhoc;
    let declared = if inputs.declared.is_empty() && fold.rewarded() > 0 {
        // A local dataset declares nothing: Harbor's default.
        adhoc = [DeclaredMetrics {
            dataset: "adhoc".into(),
            metrics: vec![BuiltinMetric::Mean],
            scripts: Vec::new(),
        }];
        &adhoc[..]
    } else {
        inputs.declared
    };
    let mut rows = super::dataset::report(declared, &fold);
    if !all_scripts.is_empty() {
        let rewards = jsonl.as_ref().map(|f| f.path().to_path_buf());
        rows.extend(scripts(inputs, &all_scripts, rewards, &mut out.warnings));
    }
    out.extra.dataset_metrics = (!rows.is_empty()).then_some(rows);
    if inputs.k > 1 {
        out.extra.pass_at_k = pass
            .value()
            .map(|value| value.into_iter().map(|(k, v)| (k.to_string(), v)).collect());
    }
    out
}

/// Each script's row (a failed one is a warning and no row).
fn scripts(
    inputs: &MetricInputs<'_>,
    all: &[(String, String)],
    rewards: Option<PathBuf>,
    warnings: &mut Vec<String>,
) -> Vec<DatasetMetric> {
    let Some(rewards) = rewards else {
        return Vec::new();
    };
    // A script that is not there is one warning (and `uv` is not installed for nothing).
    let (present, missing): (Vec<_>, Vec<_>) = all
        .iter()
        .partition(|(_, script)| Path::new(script).is_file());
    for (dataset, script) in missing {
        warnings.push(format!(
            "dataset metric {dataset}: uv-script {script} is not computed: no such file \
             (a script_path is read from the working directory, as Harbor reads it)"
        ));
    }
    if present.is_empty() {
        return Vec::new();
    }
    let all = present;
    let uv = match super::uv_script::ensure_uv(inputs.install_root) {
        Ok(uv) => uv,
        Err(e) => {
            for (_, script) in all {
                warnings.push(format!("metric script {script}: not run: {e}"));
            }
            return Vec::new();
        }
    };
    let mut rows = Vec::new();
    for (dataset, script) in all {
        match super::uv_script::run(&uv, Path::new(script), &rewards) {
            Ok(value) => rows.push(DatasetMetric {
                dataset: dataset.clone(),
                kind: "uv-script".into(),
                script: Some(script.clone()),
                value,
            }),
            Err(e) => warnings.push(format!("metric script {script}: {e}")),
        }
    }
    rows
}
