//! Discovering run directories (any directory holding `run_info.json`, namespaces nested) and
//! summarising each from `run_info.json`, `progress.json` and `metrics.json`.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use agentcompass_results::status::RunStatus;
use agentcompass_results::store::read_run_info;
use agentcompass_results::time::parse_timestamp;
use agentcompass_schema::metrics::METRICS_FILE;
use agentcompass_schema::progress::{SnapshotHead, PROGRESS_FILE};
use agentcompass_schema::run_info::ComponentHead;
use serde_json::{json, Value};

use crate::index::RunIndex;
use crate::metrics::headline;
use crate::paths::Root;

/// How many lines of `run.log` a run's body holds.
pub const LOG_TAIL_LINES: usize = 200;
/// How deep under the root run directories are looked for.
const MAX_DEPTH: usize = 8;

/// The run directories under the root (canonical paths). Hidden directories and symlinks are
/// not entered; a run directory's own subdirectories are not searched.
pub fn discover(root: &Root) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![(root.canonical().to_path_buf(), 0)];
    while let Some((dir, depth)) = pending.pop() {
        if dir.join("run_info.json").is_file() {
            found.push(dir);
            continue;
        }
        if depth >= MAX_DEPTH {
            continue;
        }
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let hidden = entry.file_name().to_string_lossy().starts_with('.');
            if !hidden && entry.file_type().is_ok_and(|t| t.is_dir()) {
                pending.push((entry.path(), depth + 1));
            }
        }
    }
    found
}

/// Reads a JSON file (`None` if missing or unparsable).
pub fn read_json(path: &Path) -> Option<Value> {
    let file = File::open(path).ok()?;
    serde_json::from_reader(BufReader::new(file)).ok()
}

/// What a summary needs from `run_info.json`.
#[derive(Debug, Default)]
pub struct RunHead {
    /// `run_id`.
    pub run_id: String,
    /// `started_at`.
    pub started_at: String,
    /// `finished_at`.
    pub finished_at: Option<String>,
    /// `status`.
    pub status: RunStatus,
    /// `request.{benchmark,harness,model,environment}.id`.
    pub ids: [Value; 4],
}

/// How many run heads are cached before the cache is emptied.
const MAX_HEADS: usize = 4096;

type HeadKey = (PathBuf, Option<SystemTime>, u64);

/// The head of the run at `run_dir` (`None`: no readable `run_info.json`). A `run_info.json`
/// can be large (a big run's resolved plans), so heads are cached by path, modification time
/// and size: every page of a task listing asks whether its run has ended.
pub fn head(run_dir: &Path) -> Option<Arc<RunHead>> {
    static HEADS: OnceLock<Mutex<HashMap<HeadKey, Arc<RunHead>>>> = OnceLock::new();
    let meta = fs::metadata(run_dir.join("run_info.json")).ok()?;
    let key = (run_dir.to_path_buf(), meta.modified().ok(), meta.len());
    let heads = HEADS.get_or_init(Mutex::default);
    let lock = || match heads.lock() {
        Ok(heads) => heads,
        Err(poisoned) => poisoned.into_inner(),
    };
    if let Some(found) = lock().get(&key) {
        return Some(found.clone());
    }
    let info = read_run_info(run_dir).ok()?;
    let request = info.request_head();
    let id = |component: ComponentHead| match component.id.is_empty() {
        true => Value::Null,
        false => Value::String(component.id),
    };
    let head = Arc::new(RunHead {
        ids: [
            id(request.benchmark),
            id(request.harness),
            id(request.model),
            id(request.environment),
        ],
        run_id: info.run_id,
        started_at: info.started_at,
        finished_at: info.finished_at,
        status: info.status,
    });
    let mut heads = lock();
    if heads.len() >= MAX_HEADS {
        heads.clear();
    }
    heads.retain(|k, _| k.0 != key.0);
    heads.insert(key, head.clone());
    Some(head)
}

/// Whether the run at `run_dir` has ended (its status is terminal): from the small
/// `progress.json` when it has a status (a finished run's `run_info.json` holds every resolved
/// plan, after `status` in key order), else from `run_info.json`.
pub fn is_terminal(run_dir: &Path) -> bool {
    let progress = File::open(run_dir.join("progress.json"))
        .ok()
        .and_then(|f| serde_json::from_reader::<_, SnapshotHead>(BufReader::new(f)).ok());
    match progress {
        Some(p) => p.status.is_terminal(),
        None => head(run_dir).is_some_and(|h| h.status.is_terminal()),
    }
}

/// The `RunSummary` of the run at `run_dir` (canonical, under the root), and its sort key
/// (started_at, run_id).
pub fn summary(root: &Root, run_dir: &Path) -> (Value, (i64, String)) {
    let info = head(run_dir);
    let path = root.relative(run_dir);
    let namespace = Path::new(&path)
        .parent()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir_name = run_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let field = |at: usize| -> Value {
        info.as_ref()
            .and_then(|i| i.ids.get(at).cloned())
            .unwrap_or(Value::Null)
    };
    let run_id = info
        .as_ref()
        .map(|i| i.run_id.clone())
        .filter(|id| !id.is_empty())
        .unwrap_or(dir_name);
    let started_at = info
        .as_ref()
        .map(|i| i.started_at.clone())
        .unwrap_or_default();
    let finished_at = info.as_ref().and_then(|i| i.finished_at.clone());
    let started = parse_timestamp(&started_at);
    let duration = match (started, finished_at.as_deref().and_then(parse_timestamp)) {
        (Some(start), Some(end)) if end >= start => Some((end - start) as f64),
        _ => None,
    };
    let status = info.as_ref().map_or(RunStatus::default(), |i| i.status);
    let progress: SnapshotHead =
        agentcompass_schema::read_json(&run_dir.join(PROGRESS_FILE), PROGRESS_FILE)
            .unwrap_or_default();
    let headline = read_json(&run_dir.join(METRICS_FILE)).and_then(|m| headline(&m));
    let value = json!({
        "path": path,
        "namespace": namespace,
        "run_id": run_id,
        "benchmark": field(0),
        "harness": field(1),
        "model": field(2),
        "environment": field(3),
        "status": status.as_str(),
        "started_at": (!started_at.is_empty()).then_some(&started_at),
        "finished_at": finished_at,
        "duration_seconds": duration,
        "total_tasks": progress.total_tasks,
        "finished_tasks": progress.finished_tasks,
        "completed_tasks": progress.completed_tasks,
        "failed_tasks": progress.failed_tasks,
        "error_tasks": progress.error_tasks,
        "running_tasks": progress.running_tasks,
        "headline": headline,
    });
    (value, (started.unwrap_or(i64::MIN), run_id))
}

/// Every run's summary, newest first (by started_at, else run_id).
pub fn list(root: &Root) -> Vec<Value> {
    list_dirs(root).into_iter().map(|(_, v)| v).collect()
}

/// Every run's directory (canonical) and summary, newest first (by started_at, else run_id).
pub fn list_dirs(root: &Root) -> Vec<(PathBuf, Value)> {
    let mut runs: Vec<(PathBuf, Value, (i64, String))> = discover(root)
        .into_iter()
        .map(|dir| {
            let (value, key) = summary(root, &dir);
            (dir, value, key)
        })
        .collect();
    runs.sort_by(|a, b| b.2.cmp(&a.2));
    runs.into_iter().map(|(dir, v, _)| (dir, v)).collect()
}

/// The last `lines` lines of the file at `path` (read from its end, at most 1 MiB).
pub fn tail(path: &Path, lines: usize) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let start = len.saturating_sub(1 << 20);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().collect();
    let from = all.len().saturating_sub(lines);
    Some(all[from..].join("\n"))
}

/// The `/api/run` body of the run at `run_dir` (canonical, under the root), without its issue
/// counts (those come from the run's index: [`issue_counts_json`]).
pub fn run_body(root: &Root, dir: &Path) -> Value {
    let (summary, _) = summary(root, dir);
    json!({
        "run": summary,
        "run_info": read_json(&dir.join("run_info.json")).map(|mut info| {
            // Possibly megabytes (one plan per task); `resolved_plans.jsonl` has them too.
            if let Some(map) = info.as_object_mut() {
                map.remove("resolved_execution_plans");
            }
            info
        }),
        "metrics": read_json(&dir.join("metrics.json")),
        "params": read_json(&dir.join("params.json")),
        "summary_md": fs::read_to_string(dir.join("summary.md")).ok(),
        "progress": read_json(&dir.join("progress.json")),
        "log_tail": tail(&dir.join("run.log"), LOG_TAIL_LINES),
    })
}

/// The final attempts' issue counts of `index` as `[{code, severity, count}]`.
pub fn issue_counts_json(index: &RunIndex) -> Value {
    index
        .issue_counts()
        .iter()
        .map(|(code, severity, count)| json!({"code": code, "severity": severity, "count": count}))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_found_nested_and_sorted_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str, started: &str| {
            let run = dir.path().join(rel);
            fs::create_dir_all(run.join("details/normal/x")).unwrap();
            fs::write(
                run.join("run_info.json"),
                format!(r#"{{"run_id":"{}","started_at":"{started}","status":"completed","request":{{"benchmark":{{"id":"b"}}}}}}"#,
                    run.file_name().unwrap().to_string_lossy()),
            )
            .unwrap();
        };
        write("a/r1", "2026-01-01T00:00:00Z");
        write("a/b/c/r2", "2026-02-01T00:00:00Z");
        write(".hidden/r3", "2026-03-01T00:00:00Z");
        let root = Root::new(dir.path()).unwrap();
        let runs = list(&root);
        let paths: Vec<&str> = runs.iter().map(|r| r["path"].as_str().unwrap()).collect();
        assert_eq!(paths, ["a/b/c/r2", "a/r1"]);
        assert_eq!(runs[0]["namespace"], "a/b/c");
        assert_eq!(runs[0]["benchmark"], "b");
        assert_eq!(runs[0]["status"], "completed");
    }
}
