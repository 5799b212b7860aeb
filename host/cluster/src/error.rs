//! Errors of the cluster tools.

use std::path::PathBuf;

/// A Slurm command that could not be run or did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The program could not be started (not installed, not on `PATH`).
    #[error("cannot run {program}: {cause} (is Slurm installed and on PATH?)")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        cause: std::io::Error,
    },
    /// The program exited unsuccessfully.
    #[error("{program} failed ({status}): {stderr}")]
    Failed {
        /// The program.
        program: String,
        /// Its exit status.
        status: String,
        /// Its standard error (trimmed, at most 500 characters).
        stderr: String,
    },
    /// The program's output is not what this version understands.
    #[error("{program}: unexpected output {output:?}")]
    Output {
        /// The program.
        program: String,
        /// The output line.
        output: String,
    },
    /// A job's script could not be written.
    #[error("cannot write job script {}: {cause}", .path.display())]
    Script {
        /// The script path.
        path: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
}
