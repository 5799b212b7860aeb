//! The shared task-selection rule (`sample_ids`).

use std::collections::HashSet;

use crate::contracts::{RunRequest, TaskSpec};
use crate::{Error, Result};

/// Keeps the tasks named by the benchmark's `sample_ids` parameter (a list of ids or a single
/// id), in dataset order. Without the parameter every task is kept. Unknown ids are an error.
pub fn select_by_sample_ids(tasks: Vec<TaskSpec>, req: &RunRequest) -> Result<Vec<TaskSpec>> {
    let Some(wanted) = sample_ids(req)? else {
        return Ok(tasks);
    };
    let known: HashSet<&str> = tasks.iter().map(|t| t.task_id.as_str()).collect();
    let unknown: Vec<&str> = wanted
        .iter()
        .map(String::as_str)
        .filter(|id| !known.contains(id))
        .collect();
    if !unknown.is_empty() {
        return Err(unknown_sample_ids(&unknown));
    }
    let wanted: HashSet<String> = wanted.into_iter().collect();
    Ok(tasks
        .into_iter()
        .filter(|t| wanted.contains(&t.task_id))
        .collect())
}

/// The benchmark's `sample_ids` parameter (a list of ids or a single id), `None` when unset.
pub fn sample_ids(req: &RunRequest) -> Result<Option<Vec<String>>> {
    match req.benchmark.params.get("sample_ids") {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(id)) => Ok(Some(vec![id.clone()])),
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                serde_json::Value::String(s) => Ok(s.clone()),
                serde_json::Value::Number(n) => Ok(n.to_string()),
                other => Err(Error::invalid_input(format!(
                    "benchmark param `sample_ids` must list task ids, found {other}"
                ))),
            })
            .collect::<Result<Vec<_>>>()
            .map(Some),
        Some(other) => Err(Error::invalid_input(format!(
            "benchmark param `sample_ids` must be a list of task ids, found {other}"
        ))),
    }
}

/// The error for `sample_ids` that name tasks the dataset does not have.
pub fn unknown_sample_ids(unknown: &[&str]) -> Error {
    Error::invalid_input(format!(
        "benchmark param `sample_ids` names unknown task ids: {}",
        unknown.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(sample_ids: serde_json::Value) -> RunRequest {
        let mut req = RunRequest::default();
        req.benchmark.params.insert("sample_ids".into(), sample_ids);
        req
    }

    fn tasks() -> Vec<TaskSpec> {
        ["a", "b", "c"]
            .into_iter()
            .map(|id| TaskSpec::new(id, "q"))
            .collect()
    }

    #[test]
    fn keeps_dataset_order_and_rejects_unknown_ids() {
        let picked = select_by_sample_ids(tasks(), &request(serde_json::json!(["c", "a"])));
        let ids: Vec<String> = picked
            .unwrap_or_default()
            .into_iter()
            .map(|t| t.task_id)
            .collect();
        assert_eq!(ids, ["a", "c"]);
        let err = select_by_sample_ids(tasks(), &request(serde_json::json!(["zz"])));
        assert!(err.is_err_and(|e| e.message.contains("zz")));
        let all = select_by_sample_ids(tasks(), &RunRequest::default());
        assert_eq!(all.map(|t| t.len()).ok(), Some(3));
    }
}
