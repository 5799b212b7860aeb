//! Why a request could not run: refused before anything is written (preflight, the first
//! page of tasks), or failed while it ran (its store, its task stream).

use agentcompass_plugin_api::Error;
use agentcompass_results::store::StoreError;

use crate::config::ConfigError;
use crate::exit_code::{ExitStatus, USAGE};
use crate::planner::PlanError;

impl ExitStatus for RunError {
    fn exit_code(&self) -> i32 {
        match self {
            RunError::Request { error, .. } => error.exit_code(),
            RunError::Store(error) => error.exit_code(),
            _ => USAGE,
        }
    }
}

/// A request's failure, one line naming what failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A failure of one named request of an orchestration.
    #[error("request {name}: {error}")]
    Request {
        /// The request's name.
        name: String,
        /// What failed.
        error: Box<RunError>,
    },
    /// The benchmark could not open or read its tasks (named once: a plugin's error already
    /// names its plugin and benchmark).
    #[error("{}", tasks_message(benchmark, error))]
    Tasks {
        /// Benchmark id.
        benchmark: String,
        /// The benchmark's error (already naming the plugin).
        error: Error,
    },
    /// The benchmark's stream repeated a task id.
    #[error("benchmark {benchmark} returned task id `{task_id}` twice")]
    DuplicateTask {
        /// Benchmark id.
        benchmark: String,
        /// The repeated id.
        task_id: String,
    },
    /// No task of the benchmark matches the request's include patterns.
    #[error(
        "execution.include_tasks (--include-task): no task of benchmark {benchmark} matches \
         {patterns}; its first tasks are: {sample}"
    )]
    NoTaskMatches {
        /// Benchmark id.
        benchmark: String,
        /// The patterns, space-separated.
        patterns: String,
        /// The stream's first task ids, comma-separated.
        sample: String,
    },
    /// The request's configuration is refused (a reference, a run id, a retry pattern).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A component could not be instantiated for the request.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The results directory could not be written or read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The Slurm executor's files, secrets or submissions.
    #[error(transparent)]
    Cluster(#[from] crate::runtime::cluster_error::ClusterRunError),
    /// Any other refusal, already one line naming its field or component.
    #[error("{0}")]
    Refused(String),
}

impl RunError {
    /// This error, as the failure of request `name` (unchanged for a direct run, whose name
    /// is empty).
    pub fn in_request(self, name: &str) -> Self {
        if name.is_empty() {
            self
        } else {
            RunError::Request {
                name: name.to_string(),
                error: Box::new(self),
            }
        }
    }
}

/// `benchmark ID: ERROR`, or the error alone when it already names the benchmark (a plugin's
/// errors start `plugin NAME@VERSION benchmark ID: ...`).
fn tasks_message(benchmark: &str, error: &Error) -> String {
    let text = error.to_string();
    if text.starts_with("plugin ") && text.contains(&format!(" benchmark {benchmark}: ")) {
        text
    } else {
        format!("benchmark {benchmark}: {text}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit_code::FAILURE;

    #[test]
    fn a_store_failure_of_a_named_request_exits_1_a_refusal_2() {
        let io = StoreError::Io {
            op: "create directory",
            path: "/results".into(),
            cause: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        };
        let nested = RunError::Request {
            name: "a".into(),
            error: Box::new(RunError::Store(io)),
        };
        assert_eq!(nested.exit_code(), FAILURE);
        assert_eq!(
            RunError::Refused("--run-id: taken".into()).exit_code(),
            USAGE
        );
    }
}
