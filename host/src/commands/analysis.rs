//! `agentcompass-host analysis --input RUN_DIR [--analysis-params JSON] [--override | --output
//! DIR]`: the analyzers over a persisted run, one task at a time (memory flat in the task
//! count), then `analysis_summary.json` / `.md`. By default next to the run, in
//! `RUN_DIR.analysis-<time>/` (each attempt's `analysis_result.json` under the run's own
//! `details/` layout, and the summary): not a copy of the run, so the namespace does not gain
//! a run (upstream copies the run into a new sibling run). With `--output DIR`, a copy of the
//! run whose `result.json` files carry their `analysis_result`; with `--override`, the run
//! itself, rewritten atomically.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{anyhow, bail, Context};
use serde_json::Value;

use agentcompass_host::analysis::RunAnalysis;
use agentcompass_host::registry::Registry;
use agentcompass_results::store::{copy_tree, published_tasks};
use agentcompass_schema::attempt::RESULT_FILE;
use agentcompass_schema::run_info::{RunInfo, RUN_INFO_FILE};

use crate::cli::AnalysisCmd;

fn read_json(path: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| anyhow!("{}: invalid JSON: {e}", path.display()))
}

/// Where the analysis goes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// Into the run's own `result.json` files (`--override`), or a copy of the run
    /// (`--output`).
    Run(PathBuf),
    /// Beside the run: analyses and summary only.
    Beside(PathBuf),
}

/// Where the analysis of `cmd` goes.
fn target(cmd: &AnalysisCmd) -> anyhow::Result<Target> {
    if cmd.in_place {
        return Ok(Target::Run(cmd.input.clone()));
    }
    if let Some(dir) = &cmd.output {
        if dir.exists() {
            bail!(
                "--output {}: expected a new directory, found an existing one",
                dir.display()
            );
        }
        return Ok(Target::Run(dir.clone()));
    }
    let name = cmd
        .input
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".to_string());
    let parent = cmd.input.parent().unwrap_or(Path::new("."));
    let stamp = agentcompass_results::time::new_run_id(std::time::SystemTime::now());
    (0..100)
        .map(|i| match i {
            0 => parent.join(format!("{name}.analysis-{stamp}")),
            i => parent.join(format!("{name}.analysis-{stamp}_{i}")),
        })
        .find(|p| !p.exists())
        .map(Target::Beside)
        .ok_or_else(|| {
            anyhow!(
                "analysis: no free directory name next to {}",
                cmd.input.display()
            )
        })
}

/// Runs the analyzers over the run; prints the analyzed run directory.
pub fn analysis(registry: &Registry, cmd: &AnalysisCmd) -> anyhow::Result<i32> {
    let info_path = cmd.input.join("run_info.json");
    if !info_path.is_file() {
        bail!(
            "--input {}: expected a run directory (holding run_info.json), found none",
            cmd.input.display()
        );
    }
    let info: RunInfo = agentcompass_schema::read_json(&info_path, RUN_INFO_FILE)?;
    let request = info.request_head();
    let benchmark = request.benchmark.id.as_str();
    let model = request.model.id.as_str();
    let mut params = request.execution.analysis_params.clone();
    if let Some(over) = &cmd.analysis_params {
        params = over.clone();
    }
    let field = if cmd.analysis_params.is_some() {
        "--analysis-params"
    } else {
        "execution.analysis_params"
    };
    let analysis = RunAnalysis::new(registry, &params, field, benchmark)?;
    let target = target(cmd)?;
    let started = Instant::now();
    let out = match &target {
        Target::Run(dir) | Target::Beside(dir) => dir.clone(),
    };
    if let Target::Run(dir) = &target {
        if *dir != cmd.input {
            copy_tree(&cmd.input, dir, &mut |_| Ok(()))
                .map_err(|e| anyhow!("analysis: cannot copy the run: {e}"))?;
        }
    }
    let source = match &target {
        Target::Run(dir) => dir.clone(),
        Target::Beside(_) => cmd.input.clone(),
    };
    let (mut tasks, mut attempts) = (0u64, 0u64);
    for task in published_tasks(&source) {
        tasks += 1;
        let category = Some(task.record.category.as_str());
        let ground_truth = &task.record.ground_truth;
        for (n, dir) in task.record.valid_attempts() {
            let path = task.dir.join(dir).join(RESULT_FILE);
            let Ok(mut payload) = read_json(&path) else {
                continue;
            };
            analysis.annotate(&task.task_id, category, ground_truth, n, &mut payload);
            let (path, bytes) = match &target {
                Target::Run(_) => (path, serde_json::to_vec(&payload)?),
                Target::Beside(out) => {
                    let relative = task.dir.strip_prefix(&source).unwrap_or(&task.dir);
                    let attempt_dir = out.join(relative).join(dir);
                    std::fs::create_dir_all(&attempt_dir)
                        .with_context(|| format!("cannot create {}", attempt_dir.display()))?;
                    (
                        attempt_dir.join(agentcompass_host::analysis::ANALYSIS_RESULT_FILE),
                        serde_json::to_vec(&payload["analysis_result"])?,
                    )
                }
            };
            agentcompass_results::fsutil::write_atomic(&path, &bytes, 0o644)
                .with_context(|| format!("cannot write {}", path.display()))?;
            attempts += 1;
        }
    }
    let written = match &target {
        Target::Run(dir) => analysis.write_summary(dir, model),
        Target::Beside(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            analysis.write_summary_beside(&cmd.input, dir, model)
        }
    }
    .with_context(|| format!("cannot write the analysis summary in {}", out.display()))?;
    let target = out;
    // One filesystem sync for everything rewritten, as a run ends.
    agentcompass_results::fsutil::sync_filesystem(&target)
        .with_context(|| format!("cannot sync {}", target.display()))?;
    let ran = analysis.analyzers().len();
    eprintln!(
        "analyzed {tasks} tasks ({attempts} attempts) with {ran} analyzers in {:.1} s; the \
         summary lists {} of them (statistics, or a bad case or error found; the other {} \
         found nothing)",
        started.elapsed().as_secs_f64(),
        written.analyzers_listed,
        ran.saturating_sub(written.analyzers_listed)
    );
    crate::outln!("{}", target.display());
    Ok(0)
}
