//! Where the Slurm executor keeps its files: `RUN_DIR/.cluster/`, on the shared file system
//! (the run directory is, since the nodes publish into it).
//!
//! - `request.json` — the request as the nodes run it (secrets removed) and per-job limits
//! - `jobs.jsonl` — one line per submitted job: `{"seq", "job_id", "name"}`
//! - `units/<seq>.json` — the tasks of job `seq`
//! - `scripts/<seq>.sh` — its batch script
//! - `events/<job id>.<restart>.jsonl` — progress events of one run of a job
//! - `logs/<seq>.out` (the job's output) and `logs/<job id>.<restart>.log` (its `run.log`)

use std::path::{Path, PathBuf};

use crate::runtime::cluster_error::ClusterRunError;

/// The directory under the run directory.
pub const CLUSTER_DIR: &str = ".cluster";

/// The Slurm executor's files of one run.
#[derive(Debug, Clone)]
pub struct ClusterDir {
    root: PathBuf,
}

impl ClusterDir {
    /// The files of the run at `run_dir`.
    pub fn of_run(run_dir: &Path) -> ClusterDir {
        ClusterDir {
            root: run_dir.join(CLUSTER_DIR),
        }
    }

    /// `.cluster/` itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The request handed to the nodes.
    pub fn handoff(&self) -> PathBuf {
        self.root.join("request.json")
    }

    /// The submission log.
    pub fn jobs_log(&self) -> PathBuf {
        self.root.join("jobs.jsonl")
    }

    /// The unit file of job `seq`.
    pub fn unit(&self, seq: u64) -> PathBuf {
        self.root.join("units").join(format!("{seq}.json"))
    }

    /// The batch script of job `seq`.
    pub fn script(&self, seq: u64) -> PathBuf {
        self.root.join("scripts").join(format!("{seq}.sh"))
    }

    /// The output of job `seq` (every run appends).
    pub fn output(&self, seq: u64) -> PathBuf {
        self.root.join("logs").join(format!("{seq}.out"))
    }

    /// The progress events of run `restart` of job `job_id`.
    pub fn events(&self, job_id: &str, restart: u32) -> PathBuf {
        self.root
            .join("events")
            .join(format!("{job_id}.{restart}.jsonl"))
    }

    /// The progress snapshot of run `restart` of job `job_id` (the coordinator's
    /// `progress.json` is the run's; this one is the job's own).
    pub fn snapshot(&self, job_id: &str, restart: u32) -> PathBuf {
        self.root
            .join("events")
            .join(format!("{job_id}.{restart}.progress.json"))
    }

    /// The `run.log` of run `restart` of job `job_id`.
    pub fn run_log(&self, job_id: &str, restart: u32) -> PathBuf {
        self.root
            .join("logs")
            .join(format!("{job_id}.{restart}.log"))
    }

    /// Creates the directories.
    pub fn create(&self) -> std::io::Result<()> {
        for sub in ["units", "scripts", "events", "logs"] {
            std::fs::create_dir_all(self.root.join(sub))?;
        }
        Ok(())
    }
}

/// Writes `value` as JSON atomically to `path` (`compact`: one line).
pub(super) fn write_file<T: serde::Serialize>(
    path: &Path,
    value: &T,
    compact: bool,
) -> Result<(), agentcompass_results::store::StoreError> {
    use agentcompass_results::store::{write_json_atomic, write_json_atomic_compact, StoreError};
    let value = serde_json::to_value(value).map_err(|e| StoreError::json(path, e))?;
    if compact {
        write_json_atomic_compact(path, &value)
    } else {
        write_json_atomic(path, &value)
    }
}

/// Reads the JSON file `path` holding `what`, whose `schema_version` must be `schema`.
pub(super) fn read_file<T: serde::de::DeserializeOwned>(
    path: &Path,
    what: &'static str,
    schema: &'static str,
) -> Result<T, ClusterRunError> {
    #[derive(serde::Deserialize)]
    struct Versioned {
        #[serde(default)]
        schema_version: String,
    }
    let invalid = |cause| ClusterRunError::Invalid {
        path: path.to_path_buf(),
        what,
        cause,
    };
    let text = std::fs::read_to_string(path).map_err(|cause| ClusterRunError::Unreadable {
        path: path.to_path_buf(),
        what,
        cause,
    })?;
    let found = serde_json::from_str::<Versioned>(&text).map_err(invalid)?;
    if found.schema_version != schema {
        return Err(ClusterRunError::Schema {
            path: path.to_path_buf(),
            expected: schema,
            found: found.schema_version,
        });
    }
    serde_json::from_str(&text).map_err(invalid)
}
