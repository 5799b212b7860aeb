//! `cluster jobs [RESULTS_DIR]`, `cluster cancel RUN_DIR...` (the Slurm jobs runs left
//! behind) and the hidden `cluster work RUN_DIR UNIT` every Slurm job runs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use serde_json::json;

use agentcompass_cluster::SlurmCli;
use agentcompass_host::runtime::cluster::{layout::CLUSTER_DIR, leftovers};
use agentcompass_host::runtime::worker::{work as run_unit, WorkArgs, WorkEnd};

/// How long `cluster cancel` waits for the cancelled jobs to leave the queue.
const CANCEL_WAIT: Duration = Duration::from_secs(60);

/// `cluster work`: runs one unit on this node; exit 0 done, 130 cancelled, 1 a result could
/// not be written, 2 a bad request or unit.
pub fn work(run_dir: PathBuf, unit: PathBuf) -> anyhow::Result<i32> {
    // Before the async runtime's threads exist.
    let args = WorkArgs::from_env(run_dir, unit);
    let executor = super::execute::async_runtime()?;
    let end = executor.block_on(run_unit(&args));
    executor.shutdown_timeout(Duration::from_millis(100));
    Ok(match end.map_err(|e| anyhow::anyhow!(e))? {
        WorkEnd::Done => agentcompass_host::exit_code::SUCCESS,
        WorkEnd::Cancelled => agentcompass_host::exit_code::CANCELLED,
        WorkEnd::StoreFailed => agentcompass_host::exit_code::FAILURE,
    })
}

/// The run directories under `root` that submitted Slurm jobs.
fn cluster_runs(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        if dir.join(CLUSTER_DIR).join("jobs.jsonl").is_file() {
            found.push(dir);
            continue;
        }
        if dir.join("run_info.json").is_file() {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(entry.path());
            }
        }
    }
    found.sort();
    found
}

/// `cluster jobs`: every still-active job of every run under `root`, as JSON.
pub fn jobs(root: &Path) -> anyhow::Result<i32> {
    if !root.is_dir() {
        anyhow::bail!(
            "results directory {}: expected a directory, found nothing there",
            root.display()
        );
    }
    let slurm = SlurmCli::new();
    let mut listed = Vec::new();
    for run in cluster_runs(root) {
        let active = leftovers::active_jobs(&slurm, &run)
            .with_context(|| format!("{}: cannot read its jobs' states", run.display()))?;
        for job in active {
            listed.push(json!({
                "run_dir": std::path::absolute(&run).unwrap_or_else(|_| run.clone()),
                "job_id": job.id,
                "name": job.name,
                "state": job.state.to_string(),
                "nodes": job.nodes,
            }));
        }
    }
    super::invocation::print_json(&json!({ "jobs": listed }))?;
    Ok(0)
}

/// `cluster cancel`: cancels the still-active jobs of each run and waits until they are gone.
pub fn cancel(run_dirs: &[PathBuf]) -> anyhow::Result<i32> {
    for run in run_dirs {
        if !run.join("run_info.json").is_file() {
            anyhow::bail!(
                "{}: expected a run directory (with run_info.json), found none",
                run.display()
            );
        }
    }
    let executor = super::execute::async_runtime()?;
    let slurm = SlurmCli::new();
    for run in run_dirs {
        let cancelled = executor
            .block_on(leftovers::cancel_jobs(&slurm, run, CANCEL_WAIT))
            .with_context(|| format!("{}: cannot cancel its jobs", run.display()))?;
        crate::outln!("{}: cancelled {cancelled} jobs", run.display());
    }
    Ok(0)
}
