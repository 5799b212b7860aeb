//! One task's detail (`task.json` and every attempt: result, manifest, discarded retries) and
//! the resolution of a task reference (`<state>/<dir>`) and an artifact path.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::error::ViewerError;
use crate::paths::{is_plain_name, resolve_under};
use crate::runs::read_json;
use crate::tasks::{attempt_names, State};

/// The task directory of `task_ref` (`<state>/<dir name>`) in the canonical `run_dir`.
pub fn resolve_task(run_dir: &Path, task_ref: &str) -> Result<PathBuf, ViewerError> {
    let (state, name) = task_ref.split_once('/').ok_or_else(|| {
        ViewerError::BadRequest(format!("task {task_ref:?} is not <state>/<dir>"))
    })?;
    if State::parse(state).is_none() || !is_plain_name(name) {
        return Err(ViewerError::NotFound(format!("no task {task_ref:?}")));
    }
    let dir = resolve_under(run_dir, &format!("details/{state}/{name}"))?;
    if !dir.is_dir() {
        return Err(ViewerError::NotFound(format!("no task {task_ref:?}")));
    }
    Ok(dir)
}

/// The `/api/task` body of the task directory `dir`.
pub fn detail(dir: &Path) -> Value {
    let task = read_json(&dir.join("task.json"));
    let attempts = attempt_names(
        dir,
        task.as_ref()
            .and_then(|t| t.get("attempts"))
            .and_then(Value::as_object),
    );
    let attempts: Vec<Value> = attempts
        .iter()
        .filter_map(|name| {
            let attempt = resolve_under(dir, name).ok()?;
            Some(json!({
                "name": name,
                "result": read_json(&attempt.join("result.json")),
                "manifest": read_json(&attempt.join("artifacts.manifest.json")),
                "retries": retries(&attempt),
            }))
        })
        .collect();
    json!({"task": task, "attempts": attempts})
}

/// The discarded retry records of an attempt (`retries/*.json`, by name).
fn retries(attempt: &Path) -> Vec<Value> {
    let Ok(entries) = fs::read_dir(attempt.join("retries")) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files.iter().filter_map(|p| read_json(p)).collect()
}

/// The artifact file `rel` of `attempt` of the task directory `dir`: a regular file under
/// the attempt's `artifacts/`.
pub fn resolve_artifact(dir: &Path, attempt: &str, rel: &str) -> Result<PathBuf, ViewerError> {
    if !is_plain_name(attempt) {
        return Err(ViewerError::NotFound(format!("no attempt {attempt:?}")));
    }
    let artifacts = resolve_under(dir, &format!("{attempt}/artifacts"))?;
    let file = resolve_under(&artifacts, rel)?;
    if !file.is_file() {
        return Err(ViewerError::NotFound(format!("{rel:?} is not a file")));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_and_artifacts_stay_inside() {
        let tmp = tempfile::tempdir().unwrap();
        let run = tmp.path().canonicalize().unwrap().join("run");
        let task = run.join("details/normal/t--1");
        fs::create_dir_all(task.join("attempt-1/artifacts/sub")).unwrap();
        fs::write(task.join("attempt-1/artifacts/sub/out.txt"), "hi").unwrap();
        fs::write(tmp.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(
            tmp.path().join("secret"),
            task.join("attempt-1/artifacts/link"),
        )
        .unwrap();
        let dir = resolve_task(&run, "normal/t--1").unwrap();
        assert!(resolve_artifact(&dir, "attempt-1", "sub/out.txt").is_ok());
        for (attempt, rel) in [
            ("attempt-1", "../result.json"),
            ("attempt-1", "link"),
            ("attempt-1", "/etc/passwd"),
            ("attempt-1", "sub"),
            ("..", "x"),
        ] {
            assert!(
                resolve_artifact(&dir, attempt, rel).is_err(),
                "{attempt} {rel}"
            );
        }
        for bad in ["normal/..", "bogus/t--1", "normal/a/b", "normal/missing"] {
            assert!(resolve_task(&run, bad).is_err(), "{bad}");
        }
    }
}
