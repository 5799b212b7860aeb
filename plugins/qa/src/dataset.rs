//! The dataset file (named by the `path` param, or downloaded for the `dataset` param; see
//! [`crate::source`]): a `.jsonl` file streamed by [`crate::jsonl`], or a `.json` array loaded
//! and validated whole.

use std::collections::HashMap;
use std::path::Path;

use agentcompass_plugin_api::contracts::{json_type_name, RunRequest};
use agentcompass_plugin_api::sdk::select::select_by_sample_ids;
use agentcompass_plugin_api::sdk::{TaskStream, VecTaskStream};
use agentcompass_plugin_api::Result;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::jsonl::JsonlTasks;
use crate::record::{parse_record, task_of, Record};
use crate::shared::fail;

/// A loaded dataset.
#[derive(Debug)]
struct Dataset {
    records: Vec<Record>,
    sha256: String,
}

/// The dataset's selected tasks as a stream: a `.jsonl` file is read a page at a time (see
/// [`crate::jsonl`]), a `.json` array is loaded whole. Every record is checked before the
/// first task is returned; `wanted` keeps only those ids (an unknown one is an error).
pub(crate) fn open_dataset(path: &str, wanted: Option<Vec<String>>) -> Result<Box<dyn TaskStream>> {
    let extension = Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("jsonl") => Ok(Box::new(JsonlTasks::open(path, wanted)?)),
        Some("json") => {
            let dataset = load_json_dataset(path)?;
            let tasks = dataset
                .records
                .into_iter()
                .map(|record| task_of(record, &dataset.sha256, path))
                .collect();
            let tasks = match wanted {
                None => tasks,
                Some(ids) => {
                    let mut req = RunRequest::default();
                    req.benchmark
                        .params
                        .insert("sample_ids".into(), Value::from(ids));
                    select_by_sample_ids(tasks, &req)?
                }
            };
            Ok(Box::new(VecTaskStream::new(tasks)?))
        }
        _ => Err(fail(format!(
            "{path}: unsupported dataset file (expected a .jsonl or .json file)"
        ))),
    }
}

/// Reads and validates a JSON-array dataset; every error is one line naming the file and, for
/// a record, its array index (`path[N]`, 0-based).
fn load_json_dataset(path: &str) -> Result<Dataset> {
    let bytes = std::fs::read(path).map_err(|e| fail(format!("{path}: cannot read: {e}")))?;
    let sha256 = hex::encode(Sha256::digest(&bytes));
    let text = std::str::from_utf8(&bytes).map_err(|e| fail(format!("{path}: not UTF-8: {e}")))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let value: Value =
        serde_json::from_str(text).map_err(|e| fail(format!("{path}: invalid JSON: {e}")))?;
    let Value::Array(items) = value else {
        return Err(fail(format!(
            "{path}: expected a JSON array of objects, found {}",
            json_type_name(&value)
        )));
    };
    // (location used in messages, short location for "first at", value)
    let entries: Vec<(String, String, Value)> = items
        .into_iter()
        .enumerate()
        .map(|(index, value)| (format!("{path}[{index}]"), format!("index {index}"), value))
        .collect();
    if entries.is_empty() {
        return Err(fail(format!("{path}: the dataset holds no records")));
    }

    let mut first_seen: HashMap<String, String> = HashMap::new();
    let mut records = Vec::with_capacity(entries.len());
    for (location, short, value) in entries {
        let record = parse_record(&value).map_err(|e| fail(format!("{location}: {e}")))?;
        if let Some(first) = first_seen.get(&record.id) {
            return Err(fail(format!(
                "{location}: duplicate id \"{}\" (first at {first})",
                record.id
            )));
        }
        first_seen.insert(record.id.clone(), short);
        records.push(record);
    }
    Ok(Dataset { records, sha256 })
}
