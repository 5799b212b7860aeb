//! The results store: the only writer of a run's results directory.
//!
//! Layout (upstream-compatible):
//!
//! ```text
//! <results_dir>/<namespace parts...>/<run_id>/
//!   run_info.json            schema agentcompass.run_info.v3 (sorted top-level keys)
//!   params.json, metrics.json, summary.md
//!   progress.jsonl, progress.json, run.log      (paths only; written by other modules)
//!   resolved_plans.jsonl     append-only; folded into run_info.json by `finalize_run_info`
//!   .env-resources/<id>.json
//!   details/running/<task-dir>/...              task in progress
//!   details/{normal,error,fatal}/<task-dir>/task.json, attempt-<n>/{result.json,
//!       checkpoint.json, artifacts/, retries/*.json}
//! ```
//!
//! Every file except the append-only JSONL logs is replaced atomically (temp file, rename),
//! and a task directory becomes visible under its state directory only complete (built
//! elsewhere, then renamed into place). Durability is batched: one `syncfs` when the run ends
//! (see [`crate::fsutil`]).

pub mod claim;
mod link_tree;
mod plans;
mod published;
mod task;

#[cfg(test)]
mod tests;

pub use link_tree::CopyHook;
pub use published::{
    attempts_complete, copy_tree, count_published, find_reuse_source, published_task,
    published_tasks, read_run_info, running_tasks, PublishedTask, PublishedTasks,
};
pub use task::{
    FencedPublish, TaskState, TaskWriter, STEPS_CHECKPOINT_FILE, STEPS_DIR, STEP_SNAPSHOT_DIR,
};

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::fsutil;
use crate::naming::{sanitize_component, task_dir_name};
use crate::time::new_run_id;

pub use agentcompass_schema::run_info::{ReuseImport, RunInfo, RUN_INFO_SCHEMA};

/// Mode of every file the store writes.
const FILE_MODE: u32 = 0o644;
/// How many seconds after `now` a generated run id may move on collision.
const RUN_ID_COLLISION_SECONDS: u64 = 60;

const RUN_INFO_FILE: &str = "run_info.json";
const PARAMS_FILE: &str = "params.json";
const METRICS_FILE: &str = "metrics.json";
const SUMMARY_FILE: &str = "summary.md";
const PROGRESS_JSONL_FILE: &str = "progress.jsonl";
const PROGRESS_JSON_FILE: &str = "progress.json";
const RUN_LOG_FILE: &str = "run.log";
const RESOLVED_PLANS_FILE: &str = "resolved_plans.jsonl";
const ENV_RESOURCES_DIR: &str = ".env-resources";
const DETAILS_DIR: &str = "details";
const RUNNING_DIR: &str = "running";

/// A results-store failure: one line naming the path.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file-system operation failed.
    #[error("cannot {op} {}: {cause}", .path.display())]
    Io {
        /// What was attempted (`create directory`, `write`, `read`, ...).
        op: &'static str,
        /// The path operated on.
        path: PathBuf,
        /// The underlying error.
        cause: io::Error,
    },
    /// A JSON file could not be parsed or a value could not be serialized.
    #[error("{}: invalid JSON: {cause}", .path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The parser or serializer error.
        cause: serde_json::Error,
    },
    /// An explicit run id names an existing run directory.
    #[error(
        "run directory {} already exists; choose a different --run-id or use --reuse",
        .path.display()
    )]
    RunExists {
        /// The existing run directory.
        path: PathBuf,
    },
    /// Every generated run id in the collision window is taken.
    #[error(
        "no free run id under {}: runs exist for every second from {first} to {last}",
        .dir.display()
    )]
    NoFreeRunId {
        /// The namespace directory.
        dir: PathBuf,
        /// The first id tried.
        first: String,
        /// The last id tried.
        last: String,
    },
    /// A run id or namespace part cannot be a directory name (empty, `.` or `..`).
    #[error("invalid {what} {name:?} under {}", .dir.display())]
    InvalidName {
        /// `run id` or `namespace part`.
        what: &'static str,
        /// The rejected name.
        name: String,
        /// The directory it would have been created in.
        dir: PathBuf,
    },
    /// A directory given as a run directory has no `run_info.json`.
    #[error("{} is not a run directory (no run_info.json)", .path.display())]
    NotARunDir {
        /// The directory.
        path: PathBuf,
    },
    /// `--reuse RUN_ID` names no run.
    #[error("reuse run {run_id} not found under {}", .dir.display())]
    ReuseNotFound {
        /// The (sanitised) run id.
        run_id: String,
        /// The namespace directory searched.
        dir: PathBuf,
    },
    /// The reuse source is the run being written.
    #[error("{}: a run cannot reuse itself", .path.display())]
    ReuseSelf {
        /// The run directory.
        path: PathBuf,
    },
    /// A fenced copy won the claim on a task that is already published (its claim was
    /// released while a copy stayed published): nothing is replaced.
    #[error("task {name} is already published at {}", .path.display())]
    AlreadyPublished {
        /// The task directory name.
        name: String,
        /// The published copy.
        path: PathBuf,
    },
    /// Another copy of a fenced task's work holds its claim (this copy's work was removed).
    #[error("task {name} is held by another copy (token {holder})")]
    ClaimedByOther {
        /// The task directory name.
        name: String,
        /// The holder's token.
        holder: String,
    },
    /// A fencing token cannot name a directory.
    #[error("invalid fencing token {token:?} (1-64 letters, digits, '-' or '_')")]
    InvalidToken {
        /// The token.
        token: String,
    },
}

impl StoreError {
    /// An I/O failure of `op` on `path`.
    pub fn io(op: &'static str, path: &Path, cause: io::Error) -> Self {
        StoreError::Io {
            op,
            path: path.to_path_buf(),
            cause,
        }
    }

    /// A JSON (de)serialisation failure of `path`.
    pub fn json(path: &Path, cause: serde_json::Error) -> Self {
        StoreError::Json {
            path: path.to_path_buf(),
            cause,
        }
    }
}

/// Atomically writes `value` as pretty JSON (plus a final newline) to `path`. Used for
/// `run_info.json`, `params.json`, `metrics.json`, `task.json` and other small files.
pub fn write_json_atomic<T: serde::Serialize + ?Sized>(
    path: &Path,
    value: &T,
) -> Result<(), StoreError> {
    let mut bytes =
        serde_json::to_vec_pretty(value).map_err(|cause| StoreError::json(path, cause))?;
    bytes.push(b'\n');
    write_bytes_atomic(path, &bytes)
}

/// Atomically writes `value` as compact JSON to `path`. Used for the potentially large
/// `result.json`, `checkpoint.json` and retry records.
pub fn write_json_atomic_compact<T: serde::Serialize + ?Sized>(
    path: &Path,
    value: &T,
) -> Result<(), StoreError> {
    let bytes = serde_json::to_vec(value).map_err(|cause| StoreError::json(path, cause))?;
    write_bytes_atomic(path, &bytes)
}

fn write_bytes_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    fsutil::write_atomic(path, bytes, FILE_MODE).map_err(|e| StoreError::io("write", path, e))
}

/// Atomically replaces `path` with what `fill` writes, without building the content in
/// memory first: hidden temp file in the same directory, fsync, rename, fsync the directory.
fn write_streaming_atomic(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = path.with_file_name(format!(".{name}.tmp.{}", unique_suffix()));
    let result = (|| {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(FILE_MODE)
            .open(&temp)
            .map_err(|e| StoreError::io("create", &temp, e))?;
        let mut writer = BufWriter::new(file);
        fill(&mut writer)?;
        let file = writer
            .into_inner()
            .map_err(|e| StoreError::io("write", &temp, e.into_error()))?;
        fsutil::sync_file(&file).map_err(|e| StoreError::io("sync", &temp, e))?;
        fs::rename(&temp, path).map_err(|e| StoreError::io("rename into", path, e))?;
        fsutil::sync_parent(path).map_err(|e| StoreError::io("sync directory of", path, e))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// `<pid>.<counter>`: unique among this process's temp names (and across processes).
pub(crate) fn unique_suffix() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}.{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// Fsyncs a directory (makes renames inside it durable) when writes are synced one by one
/// (see [`fsutil`]).
pub(crate) fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    fsutil::sync_dir(dir).map_err(|e| StoreError::io("sync directory", dir, e))
}

/// Creates `dir` and its parents.
pub(crate) fn create_dir_all(dir: &Path) -> Result<(), StoreError> {
    fs::create_dir_all(dir).map_err(|e| StoreError::io("create directory", dir, e))
}

/// Sanitises `name` and rejects what cannot be a single directory component.
fn checked_component(name: &str, what: &'static str, dir: &Path) -> Result<String, StoreError> {
    let clean = sanitize_component(name);
    if clean.is_empty() || clean == "." || clean == ".." {
        return Err(StoreError::InvalidName {
            what,
            name: name.to_string(),
            dir: dir.to_path_buf(),
        });
    }
    Ok(clean)
}

/// `<results_dir>/<namespace parts...>` with every part sanitised and checked.
pub(crate) fn namespace_dir(
    results_dir: &Path,
    namespace: &[String],
) -> Result<PathBuf, StoreError> {
    let mut dir = results_dir.to_path_buf();
    for part in namespace {
        let part = checked_component(part, "namespace part", &dir)?;
        dir.push(part);
    }
    Ok(dir)
}

/// One run directory, reserved by [`RunStore::create`] (or opened by
/// [`RunStore::open_existing`]). Shareable between threads.
#[derive(Debug)]
pub struct RunStore {
    namespace_dir: PathBuf,
    run_dir: PathBuf,
    run_id: String,
    plans: Mutex<plans::PlanLog>,
}

impl RunStore {
    /// Reserves a new run directory under `<results_dir>/<namespace...>`.
    ///
    /// An explicit `run_id` is sanitised and must not exist yet. Otherwise the id is
    /// [`new_run_id`] of now, moved forward by up to 60 seconds while taken. The directory is
    /// reserved with an exclusive `create_dir` (two processes never get the same one), then
    /// `details/running` and `.env-resources` are created.
    pub fn create(
        results_dir: &Path,
        namespace: &[String],
        run_id: Option<&str>,
    ) -> Result<RunStore, StoreError> {
        Self::create_at(results_dir, namespace, run_id, SystemTime::now())
    }

    fn create_at(
        results_dir: &Path,
        namespace: &[String],
        run_id: Option<&str>,
        now: SystemTime,
    ) -> Result<RunStore, StoreError> {
        let namespace_dir = namespace_dir(results_dir, namespace)?;
        create_dir_all(&namespace_dir)?;
        let (run_id, run_dir) = match run_id {
            Some(explicit) => {
                let id = checked_component(explicit, "run id", &namespace_dir)?;
                let dir = namespace_dir.join(&id);
                match fs::create_dir(&dir) {
                    Ok(()) => (id, dir),
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                        return Err(StoreError::RunExists { path: dir })
                    }
                    Err(e) => return Err(StoreError::io("create directory", &dir, e)),
                }
            }
            None => Self::reserve_generated(&namespace_dir, now)?,
        };
        sync_dir(&namespace_dir)?;
        let store = RunStore {
            namespace_dir,
            run_id,
            plans: Mutex::new(plans::PlanLog::default()),
            run_dir,
        };
        create_dir_all(&store.details_dir().join(RUNNING_DIR))?;
        create_dir_all(&store.env_resources_dir())?;
        Ok(store)
    }

    fn reserve_generated(
        namespace_dir: &Path,
        now: SystemTime,
    ) -> Result<(String, PathBuf), StoreError> {
        for offset in 0..=RUN_ID_COLLISION_SECONDS {
            let id = new_run_id(now + Duration::from_secs(offset));
            let dir = namespace_dir.join(&id);
            match fs::create_dir(&dir) {
                Ok(()) => return Ok((id, dir)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(StoreError::io("create directory", &dir, e)),
            }
        }
        Err(StoreError::NoFreeRunId {
            dir: namespace_dir.to_path_buf(),
            first: new_run_id(now),
            last: new_run_id(now + Duration::from_secs(RUN_ID_COLLISION_SECONDS)),
        })
    }

    /// Opens an existing run directory (one holding `run_info.json`), e.g. for
    /// `summary RUN_DIR`. The run id is the directory's name.
    pub fn open_existing(run_dir: &Path) -> Result<RunStore, StoreError> {
        if !run_dir.join(RUN_INFO_FILE).is_file() {
            return Err(StoreError::NotARunDir {
                path: run_dir.to_path_buf(),
            });
        }
        let run_id = run_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| StoreError::NotARunDir {
                path: run_dir.to_path_buf(),
            })?;
        let namespace_dir = match run_dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Ok(RunStore {
            namespace_dir,
            run_dir: run_dir.to_path_buf(),
            run_id,
            plans: Mutex::new(plans::PlanLog::default()),
        })
    }

    /// The run directory.
    pub fn run_dir(&self) -> &Path {
        &self.run_dir
    }

    /// The run id (the run directory's name).
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The directory holding this namespace's runs (the run directory's parent).
    pub fn namespace_dir(&self) -> &Path {
        &self.namespace_dir
    }

    /// `progress.jsonl` (appended by the progress module).
    pub fn progress_jsonl_path(&self) -> PathBuf {
        self.run_dir.join(PROGRESS_JSONL_FILE)
    }

    /// `progress.json` (snapshot written by the progress module).
    pub fn progress_json_path(&self) -> PathBuf {
        self.run_dir.join(PROGRESS_JSON_FILE)
    }

    /// `run.log` (the per-run framework log).
    pub fn run_log_path(&self) -> PathBuf {
        self.run_dir.join(RUN_LOG_FILE)
    }

    /// `.env-resources/`, one `<id>.json` per live environment.
    pub fn env_resources_dir(&self) -> PathBuf {
        self.run_dir.join(ENV_RESOURCES_DIR)
    }

    /// `run_info.json`.
    pub fn run_info_path(&self) -> PathBuf {
        self.run_dir.join(RUN_INFO_FILE)
    }

    /// `metrics.json`.
    pub fn metrics_path(&self) -> PathBuf {
        self.run_dir.join(METRICS_FILE)
    }

    /// `details/` (the task result tree).
    pub fn details_dir(&self) -> PathBuf {
        self.run_dir.join(DETAILS_DIR)
    }

    fn resolved_plans_path(&self) -> PathBuf {
        self.run_dir.join(RESOLVED_PLANS_FILE)
    }

    /// Atomically writes `run_info.json` without `resolved_execution_plans` (during the run).
    /// Calling it after [`RunStore::finalize_run_info`] drops the folded plans again.
    pub fn write_run_info(&self, info: &RunInfo) -> Result<(), StoreError> {
        let path = self.run_info_path();
        write_streaming_atomic(&path, |out| {
            plans::write_run_info_doc(&path, out, info, None)
        })
    }

    /// Reads this run's `run_info.json` (plans are skipped while parsing, never loaded).
    pub fn read_run_info(&self) -> Result<RunInfo, StoreError> {
        read_run_info(&self.run_dir)
    }

    /// Atomically writes `params.json` (pretty).
    pub fn write_params(&self, params: &Value) -> Result<(), StoreError> {
        write_json_atomic(&self.run_dir.join(PARAMS_FILE), params)
    }

    /// Atomically writes `metrics.json` (pretty).
    pub fn write_metrics(&self, metrics: &Value) -> Result<(), StoreError> {
        write_json_atomic(&self.metrics_path(), metrics)
    }

    /// Atomically writes `summary.md`.
    pub fn write_summary(&self, summary: &str) -> Result<(), StoreError> {
        write_bytes_atomic(&self.run_dir.join(SUMMARY_FILE), summary.as_bytes())
    }

    /// Starts (or restarts from scratch) the task `task_id` in
    /// `details/running/<task_dir_name>`; a leftover directory of a crashed attempt is removed.
    pub fn begin_task(&self, task_id: &str) -> Result<TaskWriter, StoreError> {
        TaskWriter::begin(&self.details_dir(), task_id)
    }

    /// Starts the copy `token` of a task's work that may run more than once at a time (a
    /// cluster unit): it is written in its own staging directory and published with
    /// [`TaskWriter::publish_fenced`], exactly once whatever the number of copies.
    pub fn begin_task_fenced(&self, task_id: &str, token: &str) -> Result<TaskWriter, StoreError> {
        TaskWriter::begin_fenced(&self.details_dir(), task_id, token)
    }

    /// Copies a task published in another run into this run's `details/<state>/`. The copy is
    /// built in a hidden directory and renamed into place, so it appears only complete; an
    /// existing copy of the task (in any state) is replaced.
    pub fn import_published(&self, task: &PublishedTask) -> Result<PathBuf, StoreError> {
        published::import_published(self, task, &mut |_: &Path| Ok(()))
    }
}
