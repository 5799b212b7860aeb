//! Why an interrupted attempt cannot be resumed from what an earlier run left (its artifacts,
//! its finished steps): the attempt then reruns, with this reason in the log.

use std::path::PathBuf;

use agentcompass_results::artifacts::ArtifactError;
use agentcompass_results::store::StoreError;

/// Why resuming failed, one line naming the file or command.
#[derive(Debug, thiserror::Error)]
pub(super) enum ResumeError {
    /// Copying or writing the results failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A record could not be serialised.
    #[error("cannot serialise the checkpoint: {0}")]
    Json(#[from] serde_json::Error),
    /// The artifacts do not match their manifest.
    #[error(transparent)]
    Artifacts(#[from] ArtifactError),
    /// A file-system step failed.
    #[error("cannot {op} {}: {cause}", path.display())]
    Io {
        /// What was attempted.
        op: &'static str,
        /// On what.
        path: PathBuf,
        /// The I/O error.
        cause: std::io::Error,
    },
    /// The environment refused a step (the provider's message).
    #[error("{0}")]
    Environment(String),
    /// Clearing the working directory failed.
    #[error("clearing {workdir} exited with {returncode}: {stderr}")]
    Clear {
        /// The working directory.
        workdir: String,
        /// The command's exit code.
        returncode: i32,
        /// Its standard error, trimmed.
        stderr: String,
    },
}
