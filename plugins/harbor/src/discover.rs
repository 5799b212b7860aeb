//! Finding the task directories named by the `path` parameter.
//!
//! Each entry is a Harbor task directory (it holds `task.toml`) or a directory of task
//! directories (its sub-directories holding `task.toml`, sorted by name). Entries are taken in
//! list order. The task id is the directory name, so two directories with the same name are an
//! error naming both.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agentcompass_plugin_api::contracts::json_type_name;
use agentcompass_plugin_api::{Error, Result};
use serde_json::Value;

use crate::names::{task_id_of, ID, TASK_TOML};

/// The `path` parameter: a string, a JSON array of strings, or a string holding such an array.
pub fn path_param(value: Option<&Value>) -> Result<Vec<String>> {
    let missing = || Error::invalid_input(format!("{ID}: missing required param \"path\""));
    let list = |items: &[Value]| -> Result<Vec<String>> {
        if items.is_empty() {
            return Err(Error::invalid_input(format!(
                "{ID}: param \"path\" must name at least one directory, found an empty list"
            )));
        }
        items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) if !s.trim().is_empty() => Ok(s.clone()),
                Value::String(_) => Err(Error::invalid_input(format!(
                    "{ID}: param \"path\"[{i}] must be a directory path, found an empty string"
                ))),
                other => Err(Error::invalid_input(format!(
                    "{ID}: param \"path\"[{i}] must be a string, found {}",
                    json_type_name(other)
                ))),
            })
            .collect()
    };
    match value {
        None | Some(Value::Null) => Err(missing()),
        Some(Value::String(s)) if s.trim().is_empty() => Err(missing()),
        Some(Value::String(s)) if s.trim_start().starts_with('[') => {
            match serde_json::from_str::<Value>(s) {
                Ok(Value::Array(items)) => list(&items),
                _ => Err(Error::invalid_input(format!(
                    "{ID}: param \"path\" looks like a JSON list but does not parse as one: {s}"
                ))),
            }
        }
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(items)) => list(items),
        Some(other) => Err(Error::invalid_input(format!(
            "{ID}: param \"path\" must be a string or a list of strings, found {}",
            json_type_name(other)
        ))),
    }
}

fn is_task_dir(dir: &Path) -> bool {
    dir.join(TASK_TOML).is_file()
}

/// The task directories of one `path` entry (absolute), in deterministic order.
fn expand(entry: &str) -> Result<Vec<PathBuf>> {
    let fail = |message: String| Error::invalid_input(format!("{ID}: {entry}: {message}"));
    let dir = std::fs::canonicalize(entry).map_err(|e| fail(format!("cannot open: {e}")))?;
    if !dir.is_dir() {
        return Err(fail(
            "expected a Harbor task directory or a directory of task directories, found a file"
                .into(),
        ));
    }
    if is_task_dir(&dir) {
        return Ok(vec![dir]);
    }
    let mut children: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| fail(format!("cannot list: {e}")))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.is_dir() && is_task_dir(path))
        .collect();
    children.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    if children.is_empty() {
        return Err(fail(format!(
            "expected {TASK_TOML} in it or in its sub-directories, found no Harbor task"
        )));
    }
    Ok(children)
}

/// Every task directory named by `entries`, with duplicate task ids refused.
pub fn task_dirs(entries: &[String]) -> Result<Vec<PathBuf>> {
    let mut seen: HashMap<String, PathBuf> = HashMap::new();
    let mut out = Vec::new();
    for entry in entries {
        for dir in expand(entry)? {
            let id = task_id_of(&dir)?;
            if let Some(first) = seen.get(&id) {
                return Err(Error::invalid_input(format!(
                    "{ID}: duplicate task id \"{id}\": {} and {} (task ids are directory names)",
                    first.display(),
                    dir.display()
                )));
            }
            seen.insert(id, dir.clone());
            out.push(dir);
        }
    }
    Ok(out)
}
