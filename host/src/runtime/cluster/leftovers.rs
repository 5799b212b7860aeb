//! Jobs a run left behind: a coordinator killed (SIGKILL, a lost login node) leaves its jobs
//! running. `jobs.jsonl` names them; `squeue` says which are still active. `--reuse` of such
//! a run cancels them before importing what they published (so nothing is published into the
//! source after the import), and `cluster list` / `cluster cancel` show and cancel them.

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use agentcompass_cluster::{ClusterError, JobInfo, SlurmCli};

use super::coordinator::job_prefix;
use super::layout::ClusterDir;

/// The still-active jobs of the run at `run_dir` (none when it never used Slurm).
pub fn active_jobs(slurm: &SlurmCli, run_dir: &Path) -> Result<Vec<JobInfo>, ClusterError> {
    let run_dir = std::path::absolute(run_dir).unwrap_or_else(|_| run_dir.to_path_buf());
    let log = ClusterDir::of_run(&run_dir).jobs_log();
    let Ok(text) = std::fs::read_to_string(&log) else {
        return Ok(Vec::new());
    };
    let submitted: HashSet<u64> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["job_id"].as_u64())
        .collect();
    if submitted.is_empty() {
        return Ok(Vec::new());
    }
    Ok(slurm
        .jobs(&job_prefix(&run_dir))?
        .into_iter()
        .filter(|job| submitted.contains(&job.id) && !job.state.is_final())
        .collect())
}

/// Cancels the still-active jobs of the run at `run_dir` and waits (up to `wait`) until
/// Slurm shows none of them active. Returns how many were cancelled.
pub async fn cancel_jobs(
    slurm: &SlurmCli,
    run_dir: &Path,
    wait: Duration,
) -> Result<usize, ClusterError> {
    let active = active_jobs(slurm, run_dir)?;
    if active.is_empty() {
        return Ok(0);
    }
    let ids: Vec<u64> = active.iter().map(|j| j.id).collect();
    slurm.cancel(&ids)?;
    let deadline = Instant::now() + wait;
    while Instant::now() < deadline {
        if active_jobs(slurm, run_dir)?.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Ok(ids.len())
}
