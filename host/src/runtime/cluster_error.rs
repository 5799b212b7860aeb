//! Why a Slurm run could not start or go on: its files, its secrets, its submissions.

use std::path::PathBuf;

use agentcompass_results::store::StoreError;

/// A failure of the cluster executor, one line naming the file, variable or step.
#[derive(Debug, thiserror::Error)]
pub enum ClusterRunError {
    /// A cluster file (the request handoff, a unit) cannot be read.
    #[error("{}: cannot read the {what}: {cause}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What it holds.
        what: &'static str,
        /// The I/O error.
        cause: std::io::Error,
    },
    /// A cluster file is not the record it should be.
    #[error("{}: not a {what}: {cause}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What it should hold.
        what: &'static str,
        /// The parse error.
        cause: serde_json::Error,
    },
    /// A cluster file of another schema (another host version wrote it).
    #[error("{}: schema_version: expected `{expected}`, found `{found}`", path.display())]
    Schema {
        /// The file.
        path: PathBuf,
        /// This host's schema.
        expected: &'static str,
        /// The file's.
        found: String,
    },
    /// The secrets variable is not what the coordinator sets.
    #[error("{variable}: {problem}")]
    Secrets {
        /// The variable's name.
        variable: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// A local step before submission failed (the run directory, the program to run).
    #[error("{what}: {cause}")]
    Local {
        /// What was attempted.
        what: String,
        /// The I/O error.
        cause: std::io::Error,
    },
    /// A cluster file could not be written.
    #[error("cannot write {what}: {cause}")]
    Write {
        /// What (`the cluster request`, `a unit of work`).
        what: &'static str,
        /// The store's error.
        cause: StoreError,
    },
    /// A job script could not be written.
    #[error("{0}")]
    Slurm(#[from] agentcompass_cluster::ClusterError),
    /// `sbatch` refused or failed a job.
    #[error("runtime.slurm: cannot submit a job: {0}")]
    Submit(agentcompass_cluster::ClusterError),
    /// The cluster does not answer `squeue`.
    #[error("runtime.executor: expected a reachable Slurm cluster for `slurm`, found: {0}")]
    Unreachable(agentcompass_cluster::ClusterError),
    /// The cluster cannot be used as configured (`SLURM_CONF`, the shared directory, a
    /// cluster that does not answer).
    #[error("{field}: expected {expected}, found {found}")]
    Unusable {
        /// The setting.
        field: &'static str,
        /// What it should be.
        expected: String,
        /// What it is.
        found: String,
    },
}
