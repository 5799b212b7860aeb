//! Reuse support: finding an earlier run, listing its published and running tasks, and copying
//! published tasks into a new run.

use std::collections::BTreeMap;
use std::fs::{self, File, ReadDir};
use std::io::{self, BufReader};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::de::IgnoredAny;
use serde::Deserialize;

use super::link_tree::CopyHook;
use super::task::{install_task_dir, RESULT_FILE, TASK_FILE};
use super::{
    create_dir_all, namespace_dir, sanitize_component, task_dir_name, unique_suffix, ReuseImport,
    RunInfo, RunStore, StoreError, TaskState, DETAILS_DIR, RUNNING_DIR, RUN_INFO_FILE,
};
use crate::time::parse_timestamp;
use agentcompass_schema::task::TaskRecord;

/// Reads `<run_dir>/run_info.json`. Unknown keys (including the possibly large
/// `resolved_execution_plans`) are skipped while parsing, never loaded.
pub fn read_run_info(run_dir: &Path) -> Result<RunInfo, StoreError> {
    let path = run_dir.join(RUN_INFO_FILE);
    let file = match File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(StoreError::NotARunDir {
                path: run_dir.to_path_buf(),
            })
        }
        Err(e) => return Err(StoreError::io("open", &path, e)),
    };
    serde_json::from_reader(BufReader::new(file)).map_err(|e| StoreError::json(&path, e))
}

/// Only what ranking needs from a `run_info.json`.
#[derive(Deserialize)]
struct RunInfoHead {
    #[serde(default)]
    started_at: Option<String>,
    #[serde(default)]
    reuse_import: Option<ReuseImport>,
    #[serde(default)]
    reused_from: Option<ReusedFrom>,
}

#[derive(Deserialize)]
struct ReusedFrom {
    #[serde(default)]
    path: Option<PathBuf>,
}

impl RunInfoHead {
    fn read(run_dir: &Path) -> Option<RunInfoHead> {
        let file = File::open(run_dir.join(RUN_INFO_FILE)).ok()?;
        serde_json::from_reader(BufReader::new(file)).ok()
    }

    /// The run was killed while it imported its own source.
    fn import_pending(&self) -> bool {
        self.reuse_import == Some(ReuseImport::Pending)
    }
}

/// `run_dir`, or — while its import is pending — the run it was importing from, followed back
/// until a run whose import completed (a run that no longer exists ends the walk).
fn complete_source(run_dir: PathBuf) -> PathBuf {
    let mut current = run_dir;
    let mut seen = vec![current.clone()];
    while let Some(head) = RunInfoHead::read(&current) {
        let next = match (head.import_pending(), head.reused_from.and_then(|r| r.path)) {
            (true, Some(next)) if next.join(RUN_INFO_FILE).is_file() => next,
            _ => break,
        };
        if seen.iter().any(|s| same_dir(s, &next)) {
            break;
        }
        seen.push(next.clone());
        current = next;
    }
    current
}

/// The run to reuse under `<results_dir>/<namespace...>`.
///
/// With `run_id` (sanitised): that run directory, which must hold `run_info.json`. Without:
/// the latest run directory holding a parseable `run_info.json`, ranked by its `started_at`
/// and then by the directory's mtime; `exclude` (the run being written) is never chosen.
/// `Ok(None)` when there is no candidate. A run whose own reuse import is still pending
/// ([`ReuseImport::Pending`]: killed while importing) is skipped; named, it leads to the run
/// it was importing from, so reuse always sees every task published in the chain.
pub fn find_reuse_source(
    results_dir: &Path,
    namespace: &[String],
    run_id: Option<&str>,
    exclude: Option<&Path>,
) -> Result<Option<PathBuf>, StoreError> {
    let ns_dir = namespace_dir(results_dir, namespace)?;
    let excluded = |dir: &Path| exclude.is_some_and(|ex| same_dir(ex, dir));
    if let Some(run_id) = run_id {
        let id = sanitize_component(run_id);
        let dir = ns_dir.join(&id);
        let valid = !id.is_empty() && id != "." && id != "..";
        if !valid || !dir.join(RUN_INFO_FILE).is_file() {
            return Err(StoreError::ReuseNotFound {
                run_id: id,
                dir: ns_dir,
            });
        }
        if excluded(&dir) {
            return Err(StoreError::ReuseSelf { path: dir });
        }
        return Ok(Some(complete_source(dir)));
    }
    let entries = match fs::read_dir(&ns_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StoreError::io("list", &ns_dir, e)),
    };
    let mut best: Option<((Option<i64>, SystemTime), PathBuf)> = None;
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io("list", &ns_dir, e))?;
        if entry.file_name().to_string_lossy().starts_with('.')
            || !entry.file_type().is_ok_and(|t| t.is_dir())
        {
            continue;
        }
        let dir = entry.path();
        if excluded(&dir) {
            continue;
        }
        let Some(head) = RunInfoHead::read(&dir) else {
            continue;
        };
        if head.import_pending() {
            continue;
        }
        let started = head.started_at.as_deref().and_then(parse_timestamp);
        let mtime = entry
            .metadata()
            .and_then(|m| m.modified())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let rank = (started, mtime);
        if best.as_ref().is_none_or(|(top, _)| rank > *top) {
            best = Some((rank, dir));
        }
    }
    Ok(best.map(|(_, dir)| dir))
}

fn same_dir(a: &Path, b: &Path) -> bool {
    if a == b {
        return true;
    }
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// A task published in a run (`details/<state>/<dir>/task.json`).
#[derive(Debug, Clone, PartialEq)]
pub struct PublishedTask {
    /// `record.task_id`.
    pub task_id: String,
    /// The task directory.
    pub dir: PathBuf,
    /// The state directory it was found in.
    pub state: TaskState,
    /// The parsed `task.json`.
    pub record: TaskRecord,
}

/// Iterator over the published tasks of a run; see [`published_tasks`].
#[derive(Debug)]
pub struct PublishedTasks {
    details: PathBuf,
    states: std::slice::Iter<'static, TaskState>,
    current: Option<(TaskState, ReadDir)>,
}

impl Iterator for PublishedTasks {
    type Item = PublishedTask;

    fn next(&mut self) -> Option<PublishedTask> {
        loop {
            if let Some((state, entries)) = self.current.as_mut() {
                let state = *state;
                match entries.next() {
                    Some(Ok(entry)) => {
                        if let Some(task) = read_published(state, &entry) {
                            return Some(task);
                        }
                        continue;
                    }
                    Some(Err(e)) => {
                        tracing::warn!(
                            "cannot list {}: {e}",
                            self.details.join(state.as_str()).display()
                        );
                        self.current = None;
                        continue;
                    }
                    None => self.current = None,
                }
            }
            let state = *self.states.next()?;
            let dir = self.details.join(state.as_str());
            match fs::read_dir(&dir) {
                Ok(entries) => self.current = Some((state, entries)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => tracing::warn!("cannot list {}: {e}", dir.display()),
            }
        }
    }
}

fn read_published(state: TaskState, entry: &fs::DirEntry) -> Option<PublishedTask> {
    if entry.file_name().to_string_lossy().starts_with('.')
        || !entry.file_type().is_ok_and(|t| t.is_dir())
    {
        return None;
    }
    let dir = entry.path();
    let bytes = fs::read(dir.join(TASK_FILE)).ok()?;
    let record: TaskRecord = serde_json::from_slice(&bytes).ok()?;
    Some(PublishedTask {
        task_id: record.task_id.clone(),
        dir,
        state,
        record,
    })
}

/// The published tasks of the run at `run_dir` (`details/{normal,error,fatal}/*/task.json`),
/// streamed from the directory listings; attempt results are not read. Directories without a
/// parseable `task.json` holding a string `task_id` are skipped.
pub fn published_tasks(run_dir: &Path) -> PublishedTasks {
    PublishedTasks {
        details: run_dir.join(DETAILS_DIR),
        states: TaskState::ALL.iter(),
        current: None,
    }
}

/// The task `task_id` as the run at `run_dir` published it, found by its directory name in
/// each state directory (the layout names a task's directory after its id, so no listing is
/// read): `None` when no state holds it with a parseable `task.json` naming that id.
pub fn published_task(run_dir: &Path, task_id: &str) -> Option<PublishedTask> {
    let name = task_dir_name(task_id);
    let details = run_dir.join(DETAILS_DIR);
    TaskState::ALL.iter().find_map(|&state| {
        let dir = details.join(state.as_str()).join(&name);
        let bytes = fs::read(dir.join(TASK_FILE)).ok()?;
        let record: TaskRecord = serde_json::from_slice(&bytes).ok()?;
        (record.task_id == task_id).then(|| PublishedTask {
            task_id: task_id.to_string(),
            dir,
            state,
            record,
        })
    })
}

/// How many task directories the run at `run_dir` published (entries of
/// `details/{normal,error,fatal}/` that are directories, hidden staging names left out);
/// nothing is read but the listings.
pub fn count_published(run_dir: &Path) -> u64 {
    let details = run_dir.join(DETAILS_DIR);
    TaskState::ALL
        .iter()
        .filter_map(|state| fs::read_dir(details.join(state.as_str())).ok())
        .flat_map(|entries| entries.filter_map(Result::ok))
        .filter(|entry| {
            !entry.file_name().to_string_lossy().starts_with('.')
                && entry.file_type().is_ok_and(|t| t.is_dir())
        })
        .count() as u64
}

/// Whether every attempt listed in `task.json` `attempts` (`{"1": "attempt-1", ...}`) has a
/// parseable `result.json` object. A task without attempts is not complete.
pub fn attempts_complete(task: &PublishedTask) -> bool {
    let Some(attempts) = task.record.numbered_attempts() else {
        return false;
    };
    !attempts.is_empty()
        && attempts.iter().all(|(_, dir)| {
            let Ok(file) = File::open(task.dir.join(dir).join(RESULT_FILE)) else {
                return false;
            };
            serde_json::from_reader::<_, BTreeMap<String, IgnoredAny>>(BufReader::new(file)).is_ok()
        })
}

/// The task directories left in `details/running/` of the run at `run_dir` (interrupted
/// tasks, e.g. to resume from their evaluation checkpoints), as (directory name, path),
/// sorted by name.
pub fn running_tasks(run_dir: &Path) -> Vec<(String, PathBuf)> {
    let dir = run_dir.join(DETAILS_DIR).join(RUNNING_DIR);
    let Ok(entries) = fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut tasks: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            // A fenced copy's staging directory is `<task_dir_name>.<token>` (the task
            // directory name itself ends in a hex digest, without dots).
            let name = match name.rsplit_once('.') {
                Some((task, token)) if ends_in_digest(task) && super::claim::valid_token(token) => {
                    task.to_string()
                }
                _ => name,
            };
            (!name.starts_with('.')).then(|| (name, e.path()))
        })
        .collect();
    tasks.sort();
    tasks
}

/// Whether `name` ends like a task directory name: `--` and a 64-digit hex digest.
fn ends_in_digest(name: &str) -> bool {
    name.len() > 66
        && name.is_char_boundary(name.len() - 66)
        && name[name.len() - 66..].starts_with("--")
        && name[name.len() - 64..]
            .bytes()
            .all(|b| b.is_ascii_hexdigit())
}

pub(super) fn import_published(
    store: &RunStore,
    task: &PublishedTask,
    hook: &mut CopyHook<'_>,
) -> Result<PathBuf, StoreError> {
    if task.dir.starts_with(store.run_dir()) || same_dir(&task.dir, store.run_dir()) {
        return Err(StoreError::ReuseSelf {
            path: store.run_dir().to_path_buf(),
        });
    }
    let details = store.details_dir();
    create_dir_all(&details)?;
    let name = task_dir_name(&task.task_id);
    let staged = details.join(format!(".import.{name}.{}", unique_suffix()));
    // The staged directory is hidden and appears only by the rename that publishes it, so its
    // files get their final names at once (no temp name and rename per file); the host's
    // records are hard links of the source's where the file system allows.
    let copied = super::link_tree::link_tree(&task.dir, &staged, hook)
        .and_then(|tree| verify_artifacts(&staged, &tree.subdirs, &task.dir));
    if let Err(e) = copied {
        if let Err(cleanup) = fs::remove_dir_all(&staged) {
            if cleanup.kind() != io::ErrorKind::NotFound {
                tracing::warn!("cannot remove {}: {cleanup}", staged.display());
            }
        }
        return Err(e);
    }
    install_task_dir(&details, &staged, &name, task.state)
}

/// Verifies the copied artifacts of every `attempt-*` directory among `subdirs` of the staged
/// task copy `staged` against the attempt's `artifacts.manifest.json` (attempts without one
/// are accepted as they are). A missing or corrupt artifact file is an error naming the file
/// in the source task directory `source`, so the task is not imported and reruns.
fn verify_artifacts(staged: &Path, subdirs: &[String], source: &Path) -> Result<(), StoreError> {
    use crate::artifacts::verify_attempt_dir;
    let mut attempts: Vec<PathBuf> = subdirs
        .iter()
        .filter(|name| name.starts_with("attempt-"))
        .map(|name| staged.join(name))
        .collect();
    attempts.sort();
    for attempt in attempts {
        if let Err(e) = verify_attempt_dir(&attempt) {
            let message = e
                .to_string()
                .replace(&staged.display().to_string(), &source.display().to_string());
            return Err(StoreError::io(
                "import",
                source,
                io::Error::new(io::ErrorKind::InvalidData, message),
            ));
        }
    }
    Ok(())
}

/// Copies the tree `src` to the directory `dst` (created when missing): files (with their
/// modes, each through a temp name and a rename, fsynced when writes are), subdirectories
/// (modes set after filling them) and symlinks (recreated as links). Never hard-links.
/// Other file types are skipped.
pub fn copy_tree(src: &Path, dst: &Path, hook: &mut CopyHook<'_>) -> Result<(), StoreError> {
    fs::create_dir_all(dst).map_err(|e| StoreError::io("create directory", dst, e))?;
    let entries = fs::read_dir(src).map_err(|e| StoreError::io("list", src, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io("list", src, e))?;
        let from = entry.path();
        let to = dst.join(entry.file_name());
        let kind = entry
            .file_type()
            .map_err(|e| StoreError::io("inspect", &from, e))?;
        if kind.is_dir() {
            copy_tree(&from, &to, hook)?;
        } else if kind.is_file() {
            hook(&from).map_err(|e| StoreError::io("copy", &from, e))?;
            crate::fsutil::copy_file_atomic(&from, &to)
                .map_err(|e| StoreError::io("copy", &from, e))?;
        } else if kind.is_symlink() {
            let target = fs::read_link(&from).map_err(|e| StoreError::io("read link", &from, e))?;
            std::os::unix::fs::symlink(&target, &to)
                .map_err(|e| StoreError::io("create link", &to, e))?;
        } else {
            tracing::warn!("not copying special file {}", from.display());
        }
    }
    super::sync_dir(dst)?;
    let permissions = fs::metadata(src)
        .map_err(|e| StoreError::io("inspect", src, e))?
        .permissions();
    fs::set_permissions(dst, permissions).map_err(|e| StoreError::io("set mode of", dst, e))
}
