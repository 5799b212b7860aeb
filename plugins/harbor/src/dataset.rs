//! Where the tasks come from: task directories on disk (`path`) or a Harbor registry dataset
//! (`dataset`, with `registry_path` or `registry_url`), which the host fetches, caches and
//! verifies (`dataset.harbor` service) and answers as local directories.

use std::collections::HashMap;
use std::path::Path;

use agentcompass_plugin_api::contracts::{
    json_type_name, HarborDatasetRequest, TaskSpec, TASK_CONTENT_DIGEST_KEY,
};
use agentcompass_plugin_api::sdk::Ctx;
use agentcompass_plugin_api::{Error, Result};
use serde_json::{json, Map, Value};

use crate::discover::path_param;
use crate::names::ID;
use crate::task_toml::{load_task, LoadOptions};

/// The params naming a registry dataset.
const DATASET_PARAMS: [&str; 3] = ["dataset", "registry_path", "registry_url"];

/// The tasks' source, from the benchmark params.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskOrigin {
    /// `path`: directories on disk.
    Paths(Vec<String>),
    /// `dataset`: a registry dataset.
    Dataset(HarborDatasetRequest),
}

/// An optional non-empty string param.
fn string_param(params: &Map<String, Value>, key: &str) -> Result<Option<String>> {
    match params.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.trim().to_string())),
        Some(Value::String(_)) => Err(Error::invalid_input(format!(
            "{ID}: param \"{key}\" must not be empty"
        ))),
        Some(other) => Err(Error::invalid_input(format!(
            "{ID}: param \"{key}\" must be a string, found {}",
            json_type_name(other)
        ))),
    }
}

/// Exactly one of `path` and `dataset`; `registry_path`/`registry_url` only with `dataset`.
pub fn task_origin(params: &Map<String, Value>) -> Result<TaskOrigin> {
    let dataset = string_param(params, "dataset")?;
    let has_path = !matches!(params.get("path"), None | Some(Value::Null));
    match (has_path, dataset) {
        (true, Some(_)) => Err(Error::invalid_input(format!(
            "{ID}: give one of params \"path\" (task directories) and \"dataset\" (NAME@VERSION of a registry), found both"
        ))),
        (false, Some(dataset)) => Ok(TaskOrigin::Dataset(HarborDatasetRequest {
            dataset,
            registry_path: string_param(params, "registry_path")?,
            registry_url: string_param(params, "registry_url")?,
        })),
        (_, None) => {
            if let Some(key) = DATASET_PARAMS[1..].iter().find(|k| params.contains_key(**k)) {
                return Err(Error::invalid_input(format!(
                    "{ID}: param \"{key}\" names the registry of a \"dataset\", found no \"dataset\" param"
                )));
            }
            if !has_path {
                return Err(Error::invalid_input(format!(
                    "{ID}: missing required param \"path\" (task directories) or \"dataset\" (NAME@VERSION of a Harbor registry)"
                )));
            }
            Ok(TaskOrigin::Paths(path_param(params.get("path"))?))
        }
    }
}

/// The tasks of a registry dataset: fetched and verified by the host, each loaded from its
/// cached directory and named, as Harbor names them, by the last part of its path.
pub async fn dataset_tasks(
    ctx: &Ctx,
    request: &HarborDatasetRequest,
    options: LoadOptions,
) -> Result<Vec<TaskSpec>> {
    let dataset = ctx.harbor_dataset(request).await?;
    let reference = format!("{}@{}", dataset.name, dataset.version);
    let mut seen: HashMap<String, String> = HashMap::new();
    let mut tasks = Vec::with_capacity(dataset.tasks.len());
    for entry in &dataset.tasks {
        let id = Path::new(&entry.path)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(&entry.name)
            .to_string();
        if let Some(first) = seen.insert(id.clone(), entry.path.clone()) {
            return Err(Error::invalid_input(format!(
                "{ID}: dataset `{reference}`: tasks `{first}` and `{}` share the task id \"{id}\" (the last part of a task's path)",
                entry.path
            )));
        }
        let mut task = load_task(Path::new(&entry.dir), options).map_err(|e| {
            Error::invalid_input(format!(
                "{ID}: dataset `{reference}`: task `{}`: {}",
                entry.name, e.message
            ))
        })?;
        task.task_id = id;
        task.metadata
            .insert(TASK_CONTENT_DIGEST_KEY.into(), entry.digest.clone().into());
        let source = json!({
            "dataset": reference,
            "registry": dataset.registry,
            "git_url": entry.git_url,
            "commit": entry.commit,
            "path": entry.path,
        });
        if let Some(Value::Object(harbor)) = task.metadata.get_mut("harbor") {
            harbor.insert("source".into(), source);
        }
        tasks.push(task);
    }
    Ok(tasks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn exactly_one_of_path_and_dataset() {
        let both = task_origin(&params(json!({"path": "a", "dataset": "d@1"}))).unwrap_err();
        assert!(both.message.contains("found both"), "{}", both.message);
        let none = task_origin(&params(json!({}))).unwrap_err();
        assert!(none.message.contains("missing required param \"path\""));
        let stray = task_origin(&params(json!({"path": "a", "registry_path": "r"}))).unwrap_err();
        assert!(stray
            .message
            .contains("\"registry_path\" names the registry"));
        assert_eq!(
            task_origin(&params(
                json!({"dataset": "d@1", "registry_path": "r.json"})
            ))
            .unwrap(),
            TaskOrigin::Dataset(HarborDatasetRequest {
                dataset: "d@1".into(),
                registry_path: Some("r.json".into()),
                registry_url: None,
            })
        );
        assert_eq!(
            task_origin(&params(json!({"path": ["a", "b"]}))).unwrap(),
            TaskOrigin::Paths(vec!["a".into(), "b".into()])
        );
        let typed = task_origin(&params(json!({"dataset": 3}))).unwrap_err();
        assert!(
            typed.message.contains("must be a string, found integer"),
            "{}",
            typed.message
        );
    }
}
