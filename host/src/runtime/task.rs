//! One task: its semantic attempts (a new plan each), the runtime retries of each attempt (the
//! same plan), and publishing the task's results.

use std::time::Duration;

use agentcompass_plugin_api::contracts::{
    AttemptStrategy, ExecutionIssue, IssuePhase, IssueSeverity, MetricValue, RunResult, TaskSpec,
};
use serde_json::{json, Map, Value};

use super::attempt::{failed, physical_attempt, recover_evaluation};
use super::context::RequestContext;
use super::retry::{backoff_seconds, jitter_unit, retry_reason};
use crate::metrics::AttemptOutcome;
use agentcompass_results::artifacts as manifest;
use agentcompass_results::records::{attempt_payload, task_payload, RETRY_SCHEMA};
use agentcompass_results::store::{TaskState, TaskWriter};

/// How a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskEnd {
    /// Published.
    Published,
    /// The run was cancelled before the task finished (nothing published).
    Cancelled,
    /// The results directory could not be written.
    StoreFailed,
}

struct LogicalAttempt {
    result: RunResult,
    retries: u32,
    plan_summary: Value,
    cancelled: bool,
}

async fn logical_attempt(
    rc: &RequestContext,
    task: &TaskSpec,
    attempt: u32,
    writer: &TaskWriter,
) -> LogicalAttempt {
    rc.task_event(
        "attempt_started",
        task,
        Some(attempt),
        None,
        None,
        Value::Null,
    );
    rc.task_event(
        "phase_changed",
        task,
        Some(attempt),
        Some("plan"),
        None,
        Value::Null,
    );
    let plan = match rc.planner.plan(task, &rc.resolved, attempt) {
        Ok(plan) => plan,
        Err(e) => {
            return LogicalAttempt {
                result: failed(
                    task,
                    ExecutionIssue::fatal(IssuePhase::Setup, "setup_failed", e.to_string()),
                ),
                retries: 0,
                plan_summary: Value::Null,
                cancelled: false,
            }
        }
    };
    let plan_summary = serde_json::to_value(plan.summary()).unwrap_or(Value::Null);
    rc.task_event(
        "execution_plan_resolved",
        task,
        Some(attempt),
        Some("plan"),
        None,
        plan_summary.clone(),
    );
    if let Err(e) = rc.planner.check(&plan, &crate::config::process_env) {
        return LogicalAttempt {
            result: failed(
                task,
                ExecutionIssue::fatal(IssuePhase::Setup, "unsupported", e.to_string()),
            ),
            retries: 0,
            plan_summary,
            cancelled: false,
        };
    }
    let exec = &rc.resolved.execution;
    let mut retries = 0;
    let mut resume = rc.resumable_checkpoint(task, attempt, &plan);
    loop {
        let recovered = match resume.take() {
            Some((checkpoint, dir)) => {
                recover_evaluation(rc, task, &plan, attempt, writer, checkpoint, &dir).await
            }
            None => None,
        };
        let outcome = match recovered {
            Some(outcome) => outcome,
            None => physical_attempt(rc, task, &plan, attempt, writer).await,
        };
        if outcome.cancelled {
            return LogicalAttempt {
                result: outcome.result,
                retries,
                plan_summary,
                cancelled: true,
            };
        }
        for issue in outcome
            .result
            .issues
            .iter()
            .filter(|i| i.severity != IssueSeverity::Warning)
        {
            tracing::warn!(task_id = %task.task_id, attempt, code = %issue.code, "{}", issue.message);
        }
        let reason = retry_reason(&outcome.result.issues, &rc.patterns);
        match reason {
            Some(reason) if retries < exec.max_retries => {
                retries += 1;
                let delay = backoff_seconds(
                    retries,
                    exec.retry_min_delay_seconds,
                    exec.retry_max_delay_seconds,
                    jitter_unit(),
                );
                let stage = if outcome
                    .result
                    .issues
                    .iter()
                    .any(|i| i.phase == IssuePhase::Evaluate)
                {
                    "evaluate"
                } else {
                    "attempt"
                };
                // The discarded run's checkpoint and artifacts move aside (spec: archived
                // under `retries/<id>/`); the next physical run starts empty.
                let archived = writer
                    .archive_for_retry(
                        attempt,
                        retries,
                        &[manifest::ARTIFACTS_DIR, manifest::MANIFEST_FILE],
                    )
                    .map_err(|e| {
                        tracing::warn!("cannot archive the retried run of {}: {e}", task.task_id)
                    })
                    .ok()
                    .flatten();
                let record = json!({
                    "schema_version": RETRY_SCHEMA,
                    "archived_to": archived,
                    "task_id": task.task_id,
                    "category": task.category,
                    "attempt": attempt,
                    "retry": retries,
                    "max_retries": exec.max_retries,
                    "retry_delay_seconds": delay,
                    "stage": stage,
                    "scope": "attempt",
                    "matched_pattern": reason,
                    "issues": agentcompass_redact::redact_value(&serde_json::to_value(&outcome.result.issues).unwrap_or(Value::Null)),
                    "discarded_result": attempt_payload(&outcome.result, retries - 1),
                });
                if let Err(e) = writer.write_retry(attempt, retries, stage, &record) {
                    tracing::warn!("cannot record retry of {}: {e}", task.task_id);
                }
                rc.task_event("attempt_retry", task,
                    Some(attempt),
                    Some("retry_wait"),
                    None,
                    json!({"retry": retries, "max_retries": exec.max_retries, "retry_delay_seconds": delay, "stage": stage, "scope": "attempt", "matched_pattern": reason}),
                );
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs_f64(delay)) => {}
                    _ = rc.cancel.cancelled() => {
                        return LogicalAttempt { result: outcome.result, retries, plan_summary, cancelled: true };
                    }
                }
            }
            _ => {
                return LogicalAttempt {
                    result: outcome.result,
                    retries,
                    plan_summary,
                    cancelled: false,
                }
            }
        }
    }
}

fn succeeded(result: &RunResult, primary: Option<&str>) -> bool {
    let fatal = result
        .issues
        .iter()
        .any(|i| i.severity == IssueSeverity::Fatal);
    !fatal
        && primary
            .and_then(|m| result.metrics.get(m))
            .is_some_and(|v| matches!(v, MetricValue::Bool(true)) || v.as_f64() >= 1.0)
}

/// Runs every semantic attempt of `task` and publishes it.
pub async fn run_task(rc: &RequestContext, task: TaskSpec, index: usize, total: usize) -> TaskEnd {
    rc.task_event(
        "task_started",
        &task,
        None,
        None,
        None,
        json!({"index": index, "total": total}),
    );
    let writer = match rc.store.begin_task(&task.task_id) {
        Ok(writer) => writer,
        Err(e) => {
            tracing::error!("cannot write results of task {}: {e}", task.task_id);
            return TaskEnd::StoreFailed;
        }
    };
    let plan = rc.resolved.execution.attempts;
    let k = plan.k.max(1);
    let mut outcomes = Vec::with_capacity(k as usize);
    let mut attempts_done = Vec::with_capacity(k as usize);
    let mut plans = Map::new();
    let mut retry_counts = Map::new();
    let mut worst: Option<IssueSeverity> = None;
    for attempt in 1..=k {
        let done = logical_attempt(rc, &task, attempt, &writer).await;
        if done.cancelled {
            return TaskEnd::Cancelled;
        }
        if let Err(e) =
            writer.write_attempt_result(attempt, &attempt_payload(&done.result, done.retries))
        {
            tracing::error!(
                "cannot write result of task {} attempt {attempt}: {e}",
                task.task_id
            );
            return TaskEnd::StoreFailed;
        }
        let status = if done.result.highest_severity() == Some(IssueSeverity::Fatal) {
            "failed"
        } else {
            "completed"
        };
        rc.task_event(
            "attempt_finished",
            &task,
            Some(attempt),
            None,
            Some(status),
            Value::Null,
        );
        worst = worst.max(done.result.highest_severity());
        outcomes.push(AttemptOutcome::from_result(&done.result));
        attempts_done.push(attempt);
        plans.insert(attempt.to_string(), done.plan_summary);
        retry_counts.insert(attempt.to_string(), json!(done.retries));
        if plan.strategy == AttemptStrategy::Pass
            && succeeded(&done.result, rc.primary_metric.as_deref())
        {
            break;
        }
    }
    let state = match worst {
        Some(IssueSeverity::Fatal) => TaskState::Fatal,
        Some(IssueSeverity::Error) => TaskState::Error,
        _ => TaskState::Normal,
    };
    let payload = task_payload(&task, &attempts_done, &plan, &rc.reuse_key, &retry_counts);
    if let Err(e) = writer.publish(&payload, state) {
        tracing::error!("cannot publish task {}: {e}", task.task_id);
        return TaskEnd::StoreFailed;
    }
    if let Err(e) = rc
        .store
        .append_resolved_plans(&task.task_id, &Value::Object(plans))
    {
        tracing::warn!("cannot record the plans of task {}: {e}", task.task_id);
    }
    rc.record_metrics(&task.category, &outcomes);
    let severity = match worst {
        Some(IssueSeverity::Fatal) => "fatal",
        Some(IssueSeverity::Error) => "error",
        Some(IssueSeverity::Warning) => "warning",
        None => "none",
    };
    let status = if worst == Some(IssueSeverity::Fatal) {
        "failed"
    } else {
        "completed"
    };
    tracing::info!(task_id = %task.task_id, status, severity, "task finished");
    rc.task_event(
        "task_finished",
        &task,
        None,
        None,
        Some(status),
        json!({"index": index, "total": total, "severity": severity}),
    );
    TaskEnd::Published
}
