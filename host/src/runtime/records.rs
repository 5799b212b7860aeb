//! The persisted shapes of a run: attempt `result.json`, `task.json`, retry records,
//! evaluation checkpoints, environment-resource records; and the retry rule.

use agentcompass_plugin_api::contracts::{
    AttemptSpec, ExecutionIssue, IssueSeverity, MetricValue, RunResult, SessionInfo, TaskSpec,
};

use crate::metrics::AttemptOutcome;
use regex::Regex;
use serde_json::{json, Map, Value};

use crate::redact::redact_value;

/// Schema of `task.json`.
pub const TASK_SCHEMA: &str = "agentcompass.task.v3";
/// Schema of retry records.
pub const RETRY_SCHEMA: &str = "agentcompass.retry.v1";
/// Schema of evaluation checkpoints.
pub const CHECKPOINT_SCHEMA: &str = "agentcompass.evaluation_checkpoint.v4";
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
    crate::redact::scrub_value(&payload)
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

/// Why a result should be retried: any FATAL issue, or an ERROR issue whose code or message
/// matches one of `patterns`. Warnings never retry.
pub fn retry_reason(issues: &[ExecutionIssue], patterns: &[Regex]) -> Option<String> {
    if let Some(issue) = issues.iter().find(|i| i.severity == IssueSeverity::Fatal) {
        return Some(format!("fatal:{}", issue.code));
    }
    issues
        .iter()
        .filter(|i| i.severity == IssueSeverity::Error)
        .find_map(|issue| {
            patterns
                .iter()
                .find(|p| p.is_match(&issue.code) || p.is_match(&issue.message))
                .map(|p| format!("pattern:{}", p.as_str()))
        })
}

/// Compiles `retry_pattern_list`, naming a bad entry.
pub fn compile_patterns(patterns: Option<&Vec<String>>) -> Result<Vec<Regex>, String> {
    patterns
        .map(|list| {
            list.iter()
                .enumerate()
                .map(|(i, p)| {
                    Regex::new(p).map_err(|e| {
                        format!(
                            "execution.retry_pattern_list[{i}]: invalid regex: {}",
                            agentcompass_plugin_api::one_line(&e.to_string())
                        )
                    })
                })
                .collect()
        })
        .unwrap_or(Ok(Vec::new()))
}

/// The backoff before retry `retry` (1-based): `min × 2^(retry-1)` capped at `max`, then a
/// uniform draw in `[b/2, b]` (`unit` is a uniform number in `[0, 1)`).
pub fn backoff_seconds(retry: u32, min: f64, max: f64, unit: f64) -> f64 {
    let exponent = retry.saturating_sub(1).min(30) as i32;
    let base = (min * 2f64.powi(exponent)).min(max);
    base / 2.0 + unit.clamp(0.0, 1.0) * base / 2.0
}

/// A cheap uniform number in `[0, 1)` (jitter only; not for anything secret).
pub fn jitter_unit() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
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

/// The metric outcomes of a published task's attempts, read from its `result.json` files.
pub fn outcomes_from_results(dir: &std::path::Path, attempts: &Value) -> Vec<AttemptOutcome> {
    let Some(map) = attempts.as_object() else {
        return Vec::new();
    };
    let mut numbered: Vec<(u32, String)> = map
        .iter()
        .filter_map(|(n, d)| Some((n.parse().ok()?, d.as_str()?.to_string())))
        .collect();
    numbered.sort();
    numbered
        .into_iter()
        .filter_map(|(_, d)| {
            let text = std::fs::read_to_string(dir.join(d).join("result.json")).ok()?;
            let value: Value = serde_json::from_str(&text).ok()?;
            let metrics: std::collections::BTreeMap<String, MetricValue> =
                serde_json::from_value(value["metrics"].clone()).unwrap_or_default();
            let severities: Vec<IssueSeverity> = serde_json::from_value::<
                Vec<agentcompass_plugin_api::contracts::ExecutionIssue>,
            >(value["issues"].clone())
            .unwrap_or_default()
            .into_iter()
            .map(|i| i.severity)
            .collect();
            let worst = severities.into_iter().max();
            Some(AttemptOutcome {
                error: worst == Some(IssueSeverity::Error) && metrics.is_empty(),
                fatal: worst == Some(IssueSeverity::Fatal),
                metrics,
                usage: serde_json::from_value(
                    value["meta"]["harness"]["telemetry"]["model_usage"].clone(),
                )
                .unwrap_or_default(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentcompass_plugin_api::contracts::IssuePhase;

    #[test]
    fn retries_follow_severity_and_patterns() {
        let patterns = compile_patterns(Some(&vec!["rate.?limit".to_string()])).unwrap();
        let fatal = [ExecutionIssue::fatal(
            IssuePhase::Run,
            "harness_failed",
            "boom",
        )];
        assert_eq!(
            retry_reason(&fatal, &[]),
            Some("fatal:harness_failed".into())
        );
        let error = [ExecutionIssue::error(
            IssuePhase::Run,
            "model_failed",
            "hit rate limit",
        )];
        assert_eq!(
            retry_reason(&error, &patterns),
            Some("pattern:rate.?limit".into())
        );
        assert_eq!(retry_reason(&error, &[]), None);
        let warning = [ExecutionIssue::warning(
            IssuePhase::Cleanup,
            "close",
            "rate limit",
        )];
        assert_eq!(retry_reason(&warning, &patterns), None);
        let err = compile_patterns(Some(&vec!["(".to_string()])).unwrap_err();
        assert!(
            err.starts_with("execution.retry_pattern_list[0]: invalid regex"),
            "{err}"
        );
    }

    #[test]
    fn backoff_doubles_is_capped_and_jittered_into_the_upper_half() {
        assert_eq!(backoff_seconds(1, 5.0, 60.0, 1.0), 5.0);
        assert_eq!(backoff_seconds(1, 5.0, 60.0, 0.0), 2.5);
        assert_eq!(backoff_seconds(3, 5.0, 60.0, 1.0), 20.0);
        assert_eq!(backoff_seconds(9, 5.0, 60.0, 1.0), 60.0);
        for _ in 0..100 {
            let b = backoff_seconds(2, 5.0, 60.0, jitter_unit());
            assert!((5.0..=10.0).contains(&b), "{b}");
        }
    }
}
