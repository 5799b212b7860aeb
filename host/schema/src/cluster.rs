//! A Slurm job's unit file: the tasks one job runs, in order, with their place in the run's
//! task stream and, for a task of a reused run interrupted during its evaluation, where its
//! checkpoint is. (A job's events are `progress.jsonl` lines: [`crate::progress::EventLine`].)

use std::path::PathBuf;

use agentcompass_plugin_api::contracts::TaskSpec;
use serde::{Deserialize, Serialize};

/// `schema_version` of a unit file.
pub const UNIT_SCHEMA: &str = "agentcompass.cluster.unit.v1";

/// The tasks of one job.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Unit {
    /// [`UNIT_SCHEMA`].
    pub schema_version: String,
    /// The job's sequence number in the run.
    pub seq: u64,
    /// Its tasks, run in this order (`cpus_per_job` at a time).
    pub tasks: Vec<UnitTask>,
}

/// One task of a unit.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UnitTask {
    /// Position in the run's task stream.
    pub index: usize,
    /// Tasks in the stream.
    pub total: usize,
    /// The task as the benchmark loaded it.
    pub task: TaskSpec,
    /// The reuse source's interrupted copy of the task (evaluation resume), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_from: Option<PathBuf>,
}
