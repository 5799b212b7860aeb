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

/// The `result.json` of one attempt: `metrics`, `final_answer` and `ground_truth` as they are,
/// everything else redacted.
pub fn attempt_payload(result: &RunResult, retry_count: u32) -> Value {
    let redacted = |value: Value| redact_value(&value);
    let payload = json!({
        "status": result.status,
        "metrics": result.metrics,
        "final_answer": result.final_answer,
        "ground_truth": result.ground_truth,
        "trajectory": redacted(serde_json::to_value(&result.trajectory).unwrap_or(Value::Null)),
        "issues": redacted(serde_json::to_value(&result.issues).unwrap_or(Value::Null)),
        "artifacts": redacted(Value::Object(result.artifacts.clone())),
        "meta": {
            "benchmark": redacted(Value::Object(result.extra.clone())),
            "harness": {"telemetry": redacted(Value::Object(result.telemetry.clone()))},
        },
        "analysis_result": {},
        "retry_count": retry_count,
    });
    let mut payload = payload;
    if !result.steps.is_empty() {
        payload["steps"] = redacted(serde_json::to_value(&result.steps).unwrap_or(Value::Null));
    }
    scrub_value(&payload)
}

/// The `task.json` index of a published task.
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
