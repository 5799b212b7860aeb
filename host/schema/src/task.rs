//! `task.json`: the index of a published task — upstream's fields (`task_id`, `category`,
//! `ground_truth`, `attempt_plan`, `attempts`, retry counts) plus our `reuse_key`.

use std::collections::BTreeMap;

use agentcompass_plugin_api::contracts::AttemptSpec;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// `schema_version` of `task.json`.
pub const TASK_SCHEMA: &str = "agentcompass.task.v3";

/// The category a task without one is counted under.
pub const DEFAULT_CATEGORY: &str = "default";

/// The file name of a task's index.
pub const TASK_FILE: &str = "task.json";

/// The contents of `task.json`. Fields are declared in the order the file has always had
/// (alphabetical), so files stay byte-identical across hosts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The attempt plan the task ran under.
    #[serde(default)]
    pub attempt_plan: AttemptSpec,
    /// Attempt number (as a string, upstream's keys) → attempt directory (`attempt-N`). An
    /// entry that is not a string reads as `""`, which no reader takes for a directory.
    #[serde(default, deserialize_with = "attempt_dirs")]
    pub attempts: BTreeMap<String, String>,
    /// The task's category (`""` when none).
    #[serde(default)]
    pub category: String,
    /// The content digest the benchmark reported for the task's files
    /// (`TaskSpec.metadata.content_digest`; Harbor's content hash for Harbor tasks), if any. A
    /// `--reuse` run imports the task only while the digest is unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_digest: Option<String>,
    /// The benchmark's ground truth, scrubbed of secrets.
    #[serde(default)]
    pub ground_truth: Value,
    /// Runtime retries over all attempts.
    #[serde(default)]
    pub retry_count: u64,
    /// Runtime retries by attempt number.
    #[serde(default)]
    pub retry_counts: BTreeMap<String, u64>,
    /// What a `--reuse` run compares to decide whether the task can be reused.
    #[serde(default)]
    pub reuse_key: String,
    /// [`TASK_SCHEMA`] when written by this host.
    #[serde(default)]
    pub schema_version: String,
    /// The task id.
    pub task_id: String,
}

fn attempt_dirs<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    let map = BTreeMap::<String, Value>::deserialize(d)?;
    Ok(map
        .into_iter()
        .map(|(n, dir)| (n, dir.as_str().unwrap_or_default().to_string()))
        .collect())
}

/// Whether `dir` is a plain directory name (no separator, not `.` or `..`, not empty).
fn plain_name(dir: &str) -> bool {
    !(dir.is_empty() || dir == "." || dir == ".." || dir.contains(['/', '\\']))
}

impl TaskRecord {
    /// The attempts in attempt order as (number, directory); `None` when an entry is not a
    /// number and a plain directory name.
    pub fn numbered_attempts(&self) -> Option<Vec<(u32, &str)>> {
        let mut numbered = Vec::with_capacity(self.attempts.len());
        for (n, dir) in &self.attempts {
            if !plain_name(dir) {
                return None;
            }
            numbered.push((n.parse().ok()?, dir.as_str()));
        }
        numbered.sort();
        Some(numbered)
    }

    /// The attempts in attempt order, those that are not a number and a plain directory name
    /// left out.
    pub fn valid_attempts(&self) -> Vec<(u32, &str)> {
        let mut numbered: Vec<(u32, &str)> = self
            .attempts
            .iter()
            .filter(|(_, dir)| plain_name(dir))
            .filter_map(|(n, dir)| Some((n.parse().ok()?, dir.as_str())))
            .collect();
        numbered.sort();
        numbered
    }

    /// The category, [`DEFAULT_CATEGORY`] when the task has none.
    pub fn category_or_default(&self) -> &str {
        if self.category.is_empty() {
            DEFAULT_CATEGORY
        } else {
            &self.category
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A `task.json` as this host wrote it before the record existed (keys sorted, as
    /// `serde_json::json!` sorts them).
    const WRITTEN: &str = r#"{"attempt_plan":{"k":2,"strategy":"pass"},"attempts":{"1":"attempt-1","10":"attempt-10","2":"attempt-2"},"category":"math","ground_truth":{"answer":"4"},"retry_count":1,"retry_counts":{"2":1},"reuse_key":"abc","schema_version":"agentcompass.task.v3","task_id":"q-1"}"#;

    #[test]
    fn todays_file_round_trips_byte_for_byte() {
        let record: TaskRecord = serde_json::from_str(WRITTEN).unwrap();
        assert_eq!(serde_json::to_string(&record).unwrap(), WRITTEN);
        assert_eq!(
            record.numbered_attempts().unwrap(),
            [(1, "attempt-1"), (2, "attempt-2"), (10, "attempt-10")]
        );
        assert_eq!(
            record.attempt_plan.strategy,
            agentcompass_plugin_api::contracts::AttemptStrategy::Pass
        );
    }

    #[test]
    fn odd_attempt_entries_make_the_task_incomplete_not_unreadable() {
        let record: TaskRecord = serde_json::from_value(json!({
            "task_id": "t", "attempts": {"1": "attempt-1", "2": 7, "x": "attempt-3", "4": "../up"}
        }))
        .unwrap();
        assert_eq!(record.numbered_attempts(), None);
        assert_eq!(record.valid_attempts(), [(1, "attempt-1")]);
        assert_eq!(record.category_or_default(), "default");
    }
}
