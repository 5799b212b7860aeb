//! The Slurm executor (`runtime.executor = "slurm"`): the run's coordinator (this process, on
//! the login node) hands units of work — one task's attempt loop each, `attempts_per_job` of
//! them to a job — to Slurm as batch jobs; each job runs this same binary
//! (`agentcompass-host cluster work`) with the same plugins on a compute node, which runs its
//! tasks exactly as a local run does and publishes them into the run directory on the shared
//! file system through the store's fenced publish (exactly once, whatever Slurm requeues or
//! loses). The coordinator follows the jobs' progress events, counts what they publish into
//! the run's metrics, resubmits the tasks of jobs that ended without publishing them, and
//! cancels every job on Ctrl-C or the deadline. Slurm does placement, queueing, node-failure
//! detection and requeueing; nothing here is a scheduler or a daemon.
//!
//! Files, all under `RUN_DIR/.cluster/` (see [`layout`]): the request handed to the nodes
//! (secrets removed: they travel in the jobs' environment), one unit file and one batch
//! script per job, each job run's progress events and log, and the submission log the next
//! `--reuse` or `cluster list` reads to find jobs a dead coordinator left behind.

mod coordinator;
mod events;
pub(in crate::runtime) mod handoff;
pub mod layout;
pub mod leftovers;
mod shares;
pub(in crate::runtime) mod unit;

pub(in crate::runtime) use coordinator::run_all;

use crate::runtime::cluster_error::ClusterRunError;

/// Checks, before anything is written, that a Slurm run can start: `SLURM_CONF` (when set)
/// names a file, the results directory is inside `runtime.slurm.shared_dir` (when set), and
/// the cluster answers `squeue`.
pub(in crate::runtime) fn check_cluster(
    runtime: &crate::request::ResolvedRuntimeOptions,
) -> Result<(), ClusterRunError> {
    if let Some(conf) = std::env::var_os("SLURM_CONF") {
        let conf = std::path::PathBuf::from(conf);
        if !conf.is_file() {
            return Err(ClusterRunError::Unusable {
                field: "SLURM_CONF",
                expected: "a Slurm configuration file".to_string(),
                found: format!("nothing at {}", conf.display()),
            });
        }
    }
    if let Some(shared) = &runtime.slurm.shared_dir {
        let absolute = |p: &str| std::path::absolute(p).unwrap_or_else(|_| p.into());
        let results = absolute(&runtime.results_dir);
        let shared = absolute(shared);
        if !results.starts_with(&shared) {
            return Err(ClusterRunError::Unusable {
                field: "runtime.slurm.shared_dir",
                expected: format!(
                    "a directory holding the results directory {} (the nodes publish there)",
                    results.display()
                ),
                found: format!("`{}`", shared.display()),
            });
        }
    }
    agentcompass_cluster::SlurmCli::new()
        .jobs("ac-")
        .map(|_| ())
        .map_err(ClusterRunError::Unreachable)
}
