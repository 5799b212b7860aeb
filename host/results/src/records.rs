//! The persisted shapes of a task: attempt `result.json`, `task.json`, and the schema names
//! of retry records, evaluation checkpoints and environment-resource records.

use agentcompass_plugin_api::contracts::{AttemptSpec, RunResult, SessionInfo, TaskSpec};
use agentcompass_redact::{redact_value, scrub_value};
use serde_json::{json, Map, Value};

/// Schema of `task.json`.
pub const TASK_SCHEMA: &str = "agentcompass.task.v3";
/// Schema of retry records.
pub const RETRY_SCHEMA: &str = "agentcompass.retry.v1";
/// Schema of evaluation checkpoints.
pub const CHECKPOINT_SCHEMA: &str = "agentcompass.evaluation_checkpoint.v4";
/// Schema of a multi-step attempt's step checkpoint (`attempt-N/steps/checkpoint.json`).
pub const STEPS_CHECKPOINT_SCHEMA: &str = "agentcompass.steps_checkpoint.v1";
/// Schema of environment-resource records.
pub const ENV_RECORD_SCHEMA: &str = "agentcompass.environment_resource.v1";

/// The fields of an attempt's `result.json`, exactly upstream's set (its strict reader refuses
/// any other): the task-level `ground_truth` lives in `task.json`, a multi-step attempt's
/// per-step records under `meta.benchmark.steps`.
pub const ATTEMPT_FIELDS: [&str; 9] = [
    "status",
    "metrics",
    "final_answer",
    "trajectory",
    "issues",
    "artifacts",
    "meta",
    "analysis_result",
    "retry_count",
];

/// The `result.json` of one attempt: `metrics` and `final_answer` as they are, everything else
/// redacted.
pub fn attempt_payload(result: &RunResult, retry_count: u32) -> Value {
    let redacted = |value: Value| redact_value(&value);
    let mut benchmark = result.extra.clone();
    if !result.steps.is_empty() {
        benchmark.insert(
            STEPS_META_KEY.to_string(),
            serde_json::to_value(&result.steps).unwrap_or(Value::Null),
        );
    }
    let payload = json!({
        "status": result.status,
        "metrics": result.metrics,
        "final_answer": result.final_answer,
        "trajectory": redacted(serde_json::to_value(&result.trajectory).unwrap_or(Value::Null)),
        "issues": redacted(serde_json::to_value(&result.issues).unwrap_or(Value::Null)),
        "artifacts": redacted(Value::Object(result.artifacts.clone())),
        "meta": {
            "benchmark": redacted(Value::Object(benchmark)),
            "harness": {"telemetry": redacted(Value::Object(result.telemetry.clone()))},
        },
        "analysis_result": {},
        "retry_count": retry_count,
    });
    scrub_value(&payload)
}

/// Where a multi-step attempt's per-step records live in `result.json`: `meta.benchmark.steps`.
pub const STEPS_META_KEY: &str = "steps";

/// The `task.json` index of a published task: upstream's fields (`task_id`, `category`,
/// `ground_truth`, `attempt_plan`, `attempts`, retry counts) plus our `reuse_key`.
pub fn task_payload(
    task: &TaskSpec,
    attempts: &[u32],
    plan: &AttemptSpec,
    reuse_key: &str,
    retry_counts: &Map<String, Value>,
) -> Value {
    let retry_count: u64 = retry_counts.values().filter_map(Value::as_u64).sum();
    json!({
        "schema_version": TASK_SCHEMA,
        "task_id": task.task_id,
        "category": task.category,
        "ground_truth": scrub_value(&task.ground_truth),
        "attempts": attempts.iter().map(|n| (n.to_string(), json!(format!("attempt-{n}")))).collect::<Map<_, _>>(),
        "attempt_plan": {"k": plan.k, "strategy": plan.strategy},
        "reuse_key": reuse_key,
        "retry_count": retry_count,
        "retry_counts": retry_counts,
    })
}

/// A persisted record of an open environment (`.env-resources/<id>.json`).
pub fn env_record(info: &SessionInfo, task_id: &str, attempt: u32, created_at: &str) -> Value {
    json!({
        "schema_version": ENV_RECORD_SCHEMA,
        "id": info.id,
        "provider": info.provider,
        "close_params": redact_value(&info.close_params),
        "task_id": task_id,
        "attempt": attempt,
        "state": "active",
        "created_at": created_at,
    })
}
