//! `agentcompass-host analysis --input RUN_DIR [--analysis-params JSON] [--override | --output
//! DIR]`: the analyzers over a persisted run, one task at a time (memory flat in the task
//! count): each attempt's `result.json` gets its `analysis_result` (rewritten atomically),
//! then `analysis_summary.json` / `.md` are written. By default into a copy of the run (a new
//! sibling run directory named by the time, as upstream), with `--override` in place.

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

/// Where the analyzed run goes.
fn target(cmd: &AnalysisCmd) -> anyhow::Result<PathBuf> {
    if cmd.in_place {
        return Ok(cmd.input.clone());
    }
    let dir = match &cmd.output {
        Some(dir) => dir.clone(),
        None => {
            let parent = cmd.input.parent().unwrap_or(Path::new("."));
            let stamp = agentcompass_results::time::new_run_id(std::time::SystemTime::now());
            (0..100)
                .map(|i| {
                    if i == 0 {
                        parent.join(&stamp)
                    } else {
                        parent.join(format!("{stamp}_{i}"))
                    }
                })
                .find(|p| !p.exists())
                .ok_or_else(|| {
                    anyhow!("analysis: no free run id next to {}", cmd.input.display())
                })?
        }
    };
    if dir.exists() {
        bail!(
            "--output {}: expected a new directory, found an existing one",
            dir.display()
        );
    }
    Ok(dir)
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
    if target != cmd.input {
        copy_tree(&cmd.input, &target, &mut |_| Ok(()))
            .map_err(|e| anyhow!("analysis: cannot copy the run: {e}"))?;
    }
    let (mut tasks, mut attempts) = (0u64, 0u64);
    for task in published_tasks(&target) {
        tasks += 1;
        let category = Some(task.record.category.as_str());
        let ground_truth = &task.record.ground_truth;
        for (n, dir) in task.record.valid_attempts() {
            let path = task.dir.join(dir).join(RESULT_FILE);
            let Ok(mut payload) = read_json(&path) else {
                continue;
            };
            analysis.annotate(&task.task_id, category, ground_truth, n, &mut payload);
            let bytes = serde_json::to_vec(&payload)?;
            agentcompass_results::fsutil::write_atomic(&path, &bytes, 0o644)
                .with_context(|| format!("cannot write {}", path.display()))?;
            attempts += 1;
        }
    }
    let written = analysis
        .write_summary(&target, model)
        .with_context(|| format!("cannot write the analysis summary of {}", target.display()))?;
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
