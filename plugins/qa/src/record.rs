//! One dataset record: its validation (shared by the JSON and JSONL readers) and its task.

use agentcompass_plugin_api::contracts::{json_type_name, TaskSpec};
use serde_json::{Map, Value};

/// One validated dataset record.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Record {
    /// The task id.
    pub(crate) id: String,
    /// The question (the task's prompt).
    pub(crate) question: String,
    /// Acceptable answers (at least one).
    pub(crate) answers: Vec<String>,
    /// Whether the dataset gave a list (kept as a list in the ground truth).
    pub(crate) answer_is_list: bool,
    /// The category (empty when none).
    pub(crate) category: String,
}

impl Record {
    /// The acceptable answers as declared: a list, or the single string.
    fn ground_truth(&self) -> Value {
        if self.answer_is_list {
            Value::from(self.answers.clone())
        } else {
            Value::String(self.answers[0].clone())
        }
    }
}

/// The task of one record.
pub(crate) fn task_of(record: Record, sha256: &str, path: &str) -> TaskSpec {
    let mut task = TaskSpec::new(record.id.clone(), record.question.clone());
    task.ground_truth = record.ground_truth();
    task.category = record.category;
    task.metadata
        .insert("dataset_sha256".into(), sha256.to_string().into());
    task.metadata
        .insert("dataset_path".into(), path.to_string().into());
    task
}

/// Validates one record (the message names the field, not the location).
pub(crate) fn parse_record(value: &Value) -> std::result::Result<Record, String> {
    let Value::Object(object) = value else {
        return Err(format!(
            "expected a JSON object, found {}",
            json_type_name(value)
        ));
    };
    let id = record_id(required(object, "id")?)?;
    let question = question(required(object, "question")?)?;
    let (answers, answer_is_list) = answers(required(object, "answer")?)?;
    let category = category(object.get("category"))?;
    Ok(Record {
        id,
        question,
        answers,
        answer_is_list,
        category,
    })
}

/// A field that must be present and not `null`.
fn required<'a>(
    object: &'a Map<String, Value>,
    name: &str,
) -> std::result::Result<&'a Value, String> {
    match object.get(name) {
        None | Some(Value::Null) => Err(format!("missing field \"{name}\"")),
        Some(value) => Ok(value),
    }
}

/// `id`: a non-empty string or an integer (kept as its decimal text).
fn record_id(value: &Value) -> std::result::Result<String, String> {
    match value {
        Value::String(s) if s.trim().is_empty() => {
            Err("field \"id\" must not be empty".to_string())
        }
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Ok(n.to_string()),
        other => Err(format!(
            "field \"id\" must be a string or integer, found {}",
            json_type_name(other)
        )),
    }
}

/// `question`: a non-empty string.
fn question(value: &Value) -> std::result::Result<String, String> {
    match value {
        Value::String(s) if s.trim().is_empty() => {
            Err("field \"question\" must not be empty".to_string())
        }
        Value::String(s) => Ok(s.clone()),
        other => Err(format!(
            "field \"question\" must be a string, found {}",
            json_type_name(other)
        )),
    }
}

/// `answer`: a string, a number, or a non-empty list of them; `true` when it was a list.
fn answers(value: &Value) -> std::result::Result<(Vec<String>, bool), String> {
    match value {
        Value::String(s) => Ok((vec![s.clone()], false)),
        Value::Number(n) => Ok((vec![n.to_string()], false)),
        Value::Array(items) if items.is_empty() => {
            Err("field \"answer\" must not be an empty list".to_string())
        }
        Value::Array(items) => {
            let answers = items
                .iter()
                .enumerate()
                .map(|(index, item)| match item {
                    Value::String(s) => Ok(s.clone()),
                    Value::Number(n) => Ok(n.to_string()),
                    other => Err(format!(
                        "field \"answer\" item {index} must be a string, found {}",
                        json_type_name(other)
                    )),
                })
                .collect::<std::result::Result<Vec<_>, _>>()?;
            Ok((answers, true))
        }
        other => Err(format!(
            "field \"answer\" must be a string, number or list of strings, found {}",
            json_type_name(other)
        )),
    }
}

/// The optional `category` (a string; absent or `null` is the empty category).
fn category(value: Option<&Value>) -> std::result::Result<String, String> {
    match value {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!(
            "field \"category\" must be a string, found {}",
            json_type_name(other)
        )),
    }
}
