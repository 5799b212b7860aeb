//! Per-task result directories: written under `details/running/`, published by rename.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{
    claim, create_dir_all, sync_dir, task_dir_name, unique_suffix, write_json_atomic,
    write_json_atomic_compact, StoreError, RUNNING_DIR,
};
use crate::naming::sanitize_component;

/// File name of an attempt's result.
pub(super) use agentcompass_schema::attempt::RESULT_FILE;
/// File name of a task's index.
pub(super) use agentcompass_schema::task::TASK_FILE;
const CHECKPOINT_FILE: &str = "checkpoint.json";
/// Directory of a multi-step attempt's steps (`attempt-N/steps/<name>/`).
pub const STEPS_DIR: &str = "steps";
/// File name of a multi-step attempt's step checkpoint (`attempt-N/steps/checkpoint.json`).
pub const STEPS_CHECKPOINT_FILE: &str = "checkpoint.json";
/// Directory of a step's snapshot of the environment's working directory.
pub const STEP_SNAPSHOT_DIR: &str = "workdir";
const RETRIES_DIR: &str = "retries";
/// Longest stage part of a retry file name (keeps names under the 255-byte limit).
const MAX_STAGE_CHARS: usize = 32;

/// Where a finished task is published: the most severe issue among its attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskState {
    /// No issue worse than a warning.
    Normal,
    /// At least one ERROR issue, no FATAL.
    Error,
    /// At least one FATAL issue.
    Fatal,
}

impl TaskState {
    /// Every published state, in the order they are scanned.
    pub const ALL: [TaskState; 3] = [TaskState::Normal, TaskState::Error, TaskState::Fatal];

    /// The state directory's name: `normal`, `error` or `fatal`.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Normal => "normal",
            TaskState::Error => "error",
            TaskState::Fatal => "fatal",
        }
    }
}

impl std::fmt::Display for TaskState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Writer of one task in progress (`details/running/<task_dir_name>/`); [`TaskWriter::publish`]
/// moves the finished directory to `details/<state>/`.
#[derive(Debug)]
pub struct TaskWriter {
    task_id: String,
    name: String,
    details: PathBuf,
    dir: PathBuf,
    /// The fencing token of a copy that may run more than once ([`claim`]).
    fence: Option<String>,
}

/// What [`TaskWriter::publish_fenced`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FencedPublish {
    /// This copy published the task there.
    Published(PathBuf),
    /// Another copy holds the task; this copy's work was removed.
    Duplicate {
        /// The holder's token.
        holder: String,
    },
}

impl TaskWriter {
    pub(super) fn begin(details: &Path, task_id: &str) -> Result<TaskWriter, StoreError> {
        let name = task_dir_name(task_id);
        let dir = details.join(RUNNING_DIR).join(&name);
        TaskWriter::start(details, task_id, name, dir, None)
    }

    pub(super) fn begin_fenced(
        details: &Path,
        task_id: &str,
        token: &str,
    ) -> Result<TaskWriter, StoreError> {
        if !claim::valid_token(token) {
            return Err(StoreError::InvalidToken {
                token: token.to_string(),
            });
        }
        let name = task_dir_name(task_id);
        let dir = claim::staging_dir(details, RUNNING_DIR, &name, token);
        TaskWriter::start(details, task_id, name, dir, Some(token.to_string()))
    }

    /// A writer of `dir`, made empty (a stale copy from a crashed run is removed).
    fn start(
        details: &Path,
        task_id: &str,
        name: String,
        dir: PathBuf,
        fence: Option<String>,
    ) -> Result<TaskWriter, StoreError> {
        match fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(StoreError::io("remove stale directory", &dir, e)),
        }
        create_dir_all(&dir)?;
        Ok(TaskWriter {
            task_id: task_id.to_string(),
            name,
            details: details.to_path_buf(),
            dir,
            fence,
        })
    }

    /// The task id.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// The task's directory name ([`task_dir_name`] of the id).
    pub fn dir_name(&self) -> &str {
        &self.name
    }

    /// The task's directory while it runs (`details/running/<task_dir_name>`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `attempt-<n>/` inside the task directory (a path only; the write methods create it).
    pub fn attempt_dir(&self, attempt: u32) -> PathBuf {
        self.dir.join(format!("attempt-{attempt}"))
    }

    /// Creates `attempt-<n>/` if needed and returns it.
    pub fn ensure_attempt_dir(&self, attempt: u32) -> Result<PathBuf, StoreError> {
        let dir = self.attempt_dir(attempt);
        create_dir_all(&dir)?;
        Ok(dir)
    }

    /// Atomically writes `attempt-<n>/result.json` (compact) and returns its path.
    pub fn write_attempt_result(
        &self,
        attempt: u32,
        result: &Value,
    ) -> Result<PathBuf, StoreError> {
        let path = self.ensure_attempt_dir(attempt)?.join(RESULT_FILE);
        write_json_atomic_compact(&path, result)?;
        Ok(path)
    }

    /// Atomically writes the ATIF trajectory of attempt `n` (or of its step `step`) at
    /// Harbor's path: `attempt-<n>/agent/trajectory.json`, or
    /// `attempt-<n>/steps/<step>/agent/trajectory.json` (pretty, as Harbor writes it).
    pub fn write_trajectory(
        &self,
        attempt: u32,
        step: Option<&str>,
        trajectory: &agentcompass_schema::atif::Trajectory,
    ) -> Result<PathBuf, StoreError> {
        let base = match step {
            Some(step) => self.step_dir(attempt, step),
            None => self.attempt_dir(attempt),
        };
        let path = base.join(agentcompass_schema::atif::ATIF_PATH);
        if let Some(parent) = path.parent() {
            create_dir_all(parent)?;
        }
        write_json_atomic(&path, trajectory)?;
        Ok(path)
    }

    /// Atomically writes `attempt-<n>/checkpoint.json` (compact) and returns its path.
    pub fn write_checkpoint(
        &self,
        attempt: u32,
        checkpoint: &Value,
    ) -> Result<PathBuf, StoreError> {
        let path = self.ensure_attempt_dir(attempt)?.join(CHECKPOINT_FILE);
        write_json_atomic_compact(&path, checkpoint)?;
        Ok(path)
    }

    /// `attempt-<n>/steps/` of a multi-step attempt.
    pub fn steps_dir(&self, attempt: u32) -> PathBuf {
        self.attempt_dir(attempt).join(STEPS_DIR)
    }

    /// `attempt-<n>/steps/<step>/` (the step name as a path component).
    pub fn step_dir(&self, attempt: u32, step: &str) -> PathBuf {
        self.steps_dir(attempt).join(sanitize_component(step))
    }

    /// Removes `attempt-<n>/steps/` (a new physical run of the attempt starts without the
    /// steps of the one before).
    pub fn clear_steps(&self, attempt: u32) -> Result<(), StoreError> {
        let dir = self.steps_dir(attempt);
        match fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(StoreError::io("remove", &dir, e)),
            _ => Ok(()),
        }
    }

    /// Atomically writes `attempt-<n>/steps/<step>/result.json` (compact) and returns its
    /// path. `step` must be a portable directory name (as every step name is).
    pub fn write_step_result(
        &self,
        attempt: u32,
        step: &str,
        result: &Value,
    ) -> Result<PathBuf, StoreError> {
        let dir = self.step_dir(attempt, step);
        create_dir_all(&dir)?;
        let path = dir.join(RESULT_FILE);
        write_json_atomic_compact(&path, result)?;
        Ok(path)
    }

    /// Atomically writes `attempt-<n>/steps/checkpoint.json` (compact).
    pub fn write_steps_checkpoint(
        &self,
        attempt: u32,
        checkpoint: &Value,
    ) -> Result<PathBuf, StoreError> {
        let dir = self.steps_dir(attempt);
        create_dir_all(&dir)?;
        let path = dir.join(STEPS_CHECKPOINT_FILE);
        write_json_atomic_compact(&path, checkpoint)?;
        Ok(path)
    }

    /// Removes the step checkpoint and every step snapshot of a finished multi-step attempt
    /// (they only serve to resume an interrupted one).
    pub fn finish_steps(&self, attempt: u32, steps: &[String]) -> Result<(), StoreError> {
        let dir = self.steps_dir(attempt);
        let checkpoint = dir.join(STEPS_CHECKPOINT_FILE);
        match fs::remove_file(&checkpoint) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(StoreError::io("remove", &checkpoint, e));
            }
            _ => {}
        }
        for step in steps {
            let snapshot = dir.join(sanitize_component(step)).join(STEP_SNAPSHOT_DIR);
            match fs::remove_dir_all(&snapshot) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    return Err(StoreError::io("remove", &snapshot, e));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// `attempt-<n>/checkpoint.json`, or `None` if it is missing or unreadable (logged).
    pub fn read_checkpoint(&self, attempt: u32) -> Option<Value> {
        let path = self.attempt_dir(attempt).join(CHECKPOINT_FILE);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!("cannot read checkpoint {}: {e}", path.display());
                return None;
            }
        };
        match serde_json::from_slice(&bytes) {
            Ok(value) => Some(value),
            Err(e) => {
                tracing::warn!("ignoring invalid checkpoint {}: {e}", path.display());
                None
            }
        }
    }

    /// Atomically writes a discarded retry's record (compact) to
    /// `attempt-<n>/retries/<task_dir_name>.attempt<n>.retry<retry>.<stage>.json` (the stage
    /// sanitised and cut to 32 characters) and returns its path.
    pub fn write_retry(
        &self,
        attempt: u32,
        retry: u32,
        stage: &str,
        record: &Value,
    ) -> Result<PathBuf, StoreError> {
        let dir = self.attempt_dir(attempt).join(RETRIES_DIR);
        create_dir_all(&dir)?;
        let stage: String = sanitize_component(stage)
            .chars()
            .take(MAX_STAGE_CHARS)
            .collect();
        let stage = if stage.is_empty() || stage == "." || stage == ".." {
            "unknown".to_string()
        } else {
            stage
        };
        let path = dir.join(format!(
            "{}.attempt{attempt}.retry{retry}.{stage}.json",
            self.name
        ));
        write_json_atomic_compact(&path, record)?;
        Ok(path)
    }

    /// Moves what the physical run of `attempt` left (its evaluation checkpoint and the
    /// `extra` entries, such as the collected artifacts and their manifest) into
    /// `attempt-<n>/retries/retry<retry>/` before the attempt's agent runs again, so the next
    /// run starts empty and a crash during it cannot resume the discarded run. Returns that
    /// directory relative to the attempt directory, or `None` when there was nothing to move.
    pub fn archive_for_retry(
        &self,
        attempt: u32,
        retry: u32,
        extra: &[&str],
    ) -> Result<Option<String>, StoreError> {
        let attempt_dir = self.attempt_dir(attempt);
        let relative = format!("{RETRIES_DIR}/retry{retry}");
        let archive = attempt_dir.join(&relative);
        let mut moved = false;
        for name in std::iter::once(CHECKPOINT_FILE).chain(extra.iter().copied()) {
            let from = attempt_dir.join(name);
            if fs::symlink_metadata(&from).is_err() {
                continue;
            }
            if !moved {
                create_dir_all(&archive)?;
                moved = true;
            }
            let to = archive.join(name);
            fs::rename(&from, &to).map_err(|e| StoreError::io("archive", &from, e))?;
        }
        Ok(moved.then_some(relative))
    }

    /// Writes `task.json` (pretty, atomic) and publishes the task: the directory is renamed
    /// to `details/<state>/<task_dir_name>` (replacing an earlier copy of the task in any
    /// state) and both parent directories are fsynced. Returns the published directory.
    /// JSON inside refers to attempts by relative names, so nothing needs rewriting.
    pub fn publish(self, task_json: &Value, state: TaskState) -> Result<PathBuf, StoreError> {
        if self.fence.is_some() {
            let name = self.name.clone();
            return match self.publish_fenced(task_json, state)? {
                FencedPublish::Published(path) => Ok(path),
                FencedPublish::Duplicate { holder } => {
                    Err(StoreError::ClaimedByOther { name, holder })
                }
            };
        }
        write_json_atomic(&self.dir.join(TASK_FILE), task_json)?;
        install_task_dir(&self.details, &self.dir, &self.name, state)
    }

    /// Publishes a fenced copy ([`super::RunStore::begin_task_fenced`]): claims the task
    /// for this copy's token; the winner renames its staging directory to
    /// `details/<state>/<task_dir_name>` (never replacing a published copy), a loser removes
    /// its staging directory. A writer without a fence publishes as [`TaskWriter::publish`].
    pub fn publish_fenced(
        self,
        task_json: &Value,
        state: TaskState,
    ) -> Result<FencedPublish, StoreError> {
        let Some(token) = self.fence.clone() else {
            return self.publish(task_json, state).map(FencedPublish::Published);
        };
        write_json_atomic(&self.dir.join(TASK_FILE), task_json)?;
        match claim::claim(&self.details, &self.name, &token)? {
            claim::Claim::Lost { holder } => {
                fs::remove_dir_all(&self.dir)
                    .map_err(|e| StoreError::io("remove duplicate", &self.dir, e))?;
                Ok(FencedPublish::Duplicate { holder })
            }
            claim::Claim::Won => {
                for other in TaskState::ALL {
                    let existing = self.details.join(other.as_str()).join(&self.name);
                    if fs::symlink_metadata(&existing).is_ok() {
                        return Err(StoreError::AlreadyPublished {
                            name: self.name.clone(),
                            path: existing,
                        });
                    }
                }
                let state_dir = self.details.join(state.as_str());
                create_dir_all(&state_dir)?;
                let dest = state_dir.join(&self.name);
                fs::rename(&self.dir, &dest)
                    .map_err(|e| StoreError::io("publish into", &dest, e))?;
                if let Some(parent) = self.dir.parent() {
                    sync_dir(parent)?;
                }
                sync_dir(&state_dir)?;
                Ok(FencedPublish::Published(dest))
            }
        }
    }
}

/// Renames the complete directory `staged` to `details/<state>/<name>`. Any existing copy of
/// the task (in any state) is first renamed aside into a hidden trash directory, then
/// removed after the new copy is in place, so a crash never leaves a half-removed task
/// published.
pub(super) fn install_task_dir(
    details: &Path,
    staged: &Path,
    name: &str,
    state: TaskState,
) -> Result<PathBuf, StoreError> {
    let state_dir = details.join(state.as_str());
    create_dir_all(&state_dir)?;
    let dest = state_dir.join(name);
    let mut trash = Vec::new();
    let mut touched = vec![state_dir.clone()];
    for other in TaskState::ALL {
        let existing = details.join(other.as_str()).join(name);
        if existing.as_path() == staged {
            continue;
        }
        match fs::symlink_metadata(&existing) {
            Ok(_) => {
                let aside = details.join(format!(".trash.{name}.{}", unique_suffix()));
                fs::rename(&existing, &aside)
                    .map_err(|e| StoreError::io("move aside", &existing, e))?;
                trash.push(aside);
                touched.push(details.join(other.as_str()));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(StoreError::io("inspect", &existing, e)),
        }
    }
    fs::rename(staged, &dest).map_err(|e| StoreError::io("publish into", &dest, e))?;
    if let Some(parent) = staged.parent() {
        sync_dir(parent)?;
    }
    touched.sort();
    touched.dedup();
    for dir in &touched {
        sync_dir(dir)?;
    }
    if !trash.is_empty() {
        sync_dir(details)?;
    }
    for aside in trash {
        if let Err(e) = fs::remove_dir_all(&aside) {
            tracing::warn!("cannot remove replaced task copy {}: {e}", aside.display());
        }
    }
    Ok(dest)
}
