//! Building the persisted records of a task — an attempt's `result.json`, `task.json`, an
//! environment-resource record — from the runtime's values, redacted and scrubbed. The
//! records themselves (and their schema names) are `agentcompass-schema`'s.

use std::collections::BTreeMap;

use agentcompass_plugin_api::contracts::{
    AttemptSpec, RunResult, SessionInfo, TaskSpec, TASK_CONTENT_DIGEST_KEY,
};
use agentcompass_redact::{redact_value, scrub_value};
use agentcompass_schema::attempt::{AttemptMeta, AttemptRecord, HarnessMeta};
use agentcompass_schema::env_record::EnvRecord;
use agentcompass_schema::task::TaskRecord;
use serde_json::{Map, Value};

pub use agentcompass_schema::attempt::{
    ATTEMPT_FIELDS, CHECKPOINT_SCHEMA, RETRY_SCHEMA, STEPS_CHECKPOINT_SCHEMA, STEPS_META_KEY,
};
pub use agentcompass_schema::env_record::ENV_RECORD_SCHEMA;
pub use agentcompass_schema::task::TASK_SCHEMA;

/// `value` as JSON (null if it cannot be: no record type here fails to serialise).
fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The `result.json` of one attempt: `metrics` and `final_answer` as they are, everything else
/// redacted.
pub fn attempt_payload(result: &RunResult, retry_count: u32) -> Value {
    let mut benchmark = result.extra.clone();
    if !result.steps.is_empty() {
        benchmark.insert(STEPS_META_KEY.to_string(), to_json(&result.steps));
    }
    let record = AttemptRecord {
        analysis_result: Value::Object(Map::new()),
        artifacts: redact_value(&Value::Object(result.artifacts.clone())),
        final_answer: result.final_answer.clone(),
        issues: redact_value(&to_json(&result.issues)),
        meta: AttemptMeta {
            benchmark: redact_value(&Value::Object(benchmark)),
            harness: HarnessMeta {
                telemetry: redact_value(&Value::Object(result.telemetry.clone())),
            },
        },
        metrics: result.metrics.clone(),
        retry_count,
        status: result.status,
        trajectory: redact_value(&to_json(&result.trajectory)),
    };
    scrub_value(&to_json(&record))
}

/// The `task.json` index of a published task: upstream's fields (`task_id`, `category`,
/// `ground_truth`, `attempt_plan`, `attempts`, retry counts) plus our `reuse_key`.
pub fn task_payload(
    task: &TaskSpec,
    attempts: &[u32],
    plan: &AttemptSpec,
    reuse_key: &str,
    retry_counts: &Map<String, Value>,
) -> Value {
    let retry_counts: BTreeMap<String, u64> = retry_counts
        .iter()
        .filter_map(|(n, count)| Some((n.clone(), count.as_u64()?)))
        .collect();
    let record = TaskRecord {
        attempt_plan: *plan,
        attempts: attempts
            .iter()
            .map(|n| (n.to_string(), format!("attempt-{n}")))
            .collect(),
        category: task.category.clone(),
        content_digest: task
            .metadata
            .get(TASK_CONTENT_DIGEST_KEY)
            .and_then(Value::as_str)
            .map(str::to_string),
        ground_truth: scrub_value(&task.ground_truth),
        retry_count: retry_counts.values().sum(),
        retry_counts,
        reuse_key: reuse_key.to_string(),
        schema_version: TASK_SCHEMA.to_string(),
        task_id: task.task_id.clone(),
    };
    to_json(&record)
}

/// A persisted record of an environment being opened (`.env-resources/<id>.json`, state
/// `opening`): `close_params` release what an unfinished open created (the plugin API's
/// `OPENING_CLOSE_KEY`).
pub fn opening_record(
    id: &str,
    provider: &str,
    close_params: &Value,
    task_id: &str,
    attempt: u32,
    created_at: &str,
) -> Value {
    to_json(&EnvRecord {
        attempt,
        close_params: redact_value(close_params),
        created_at: created_at.to_string(),
        error: None,
        id: id.to_string(),
        provider: provider.to_string(),
        schema_version: ENV_RECORD_SCHEMA.to_string(),
        state: "opening".to_string(),
        task_id: task_id.to_string(),
    })
}

/// A persisted record of an open environment (`.env-resources/<id>.json`).
pub fn env_record(info: &SessionInfo, task_id: &str, attempt: u32, created_at: &str) -> Value {
    to_json(&EnvRecord {
        attempt,
        close_params: redact_value(&info.close_params),
        created_at: created_at.to_string(),
        error: None,
        id: info.id.clone(),
        provider: info.provider.clone(),
        schema_version: ENV_RECORD_SCHEMA.to_string(),
        state: "active".to_string(),
        task_id: task_id.to_string(),
    })
}
