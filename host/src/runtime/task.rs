//! One task: its semantic attempts (a new plan each), the runtime retries of each attempt (the
//! same plan), and publishing the task's results.

use agentcompass_plugin_api::contracts::{
    AttemptStrategy, ExecutionPlan, IssuePhase, IssueSeverity, MetricValue, RunResult, TaskSpec,
};
use serde_json::{json, Map, Value};

use super::attempt::{failed, physical_attempt, recover_evaluation, PhysicalOutcome};
use super::context::{task_ref, RequestContext};
use super::retry::{backoff_seconds, jitter_unit, retry_reason};
use crate::issue_codes as codes;
use crate::metrics::AttemptOutcome;
use crate::progress::{ProgressEvent, TaskOutcome, TaskPhase};
use agentcompass_results::artifacts as manifest;
use agentcompass_results::records::{attempt_payload, task_payload, RETRY_SCHEMA};
use agentcompass_results::store::{FencedPublish, TaskState, TaskWriter};

/// How a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskEnd {
    /// Published.
    Published,
    /// The run was cancelled before the task finished (nothing published).
    Cancelled,
    /// The results directory could not be written.
    StoreFailed,
    /// Another copy of the task (a cluster job run twice) published it first; this copy's
    /// work was discarded.
    Duplicate,
}

/// A semantic attempt, after its runtime retries.
struct LogicalAttempt {
    result: RunResult,
    retries: u32,
    plan_summary: Value,
    cancelled: bool,
}

impl LogicalAttempt {
    fn not_run(result: RunResult, plan_summary: Value) -> Self {
        LogicalAttempt {
            result,
            retries: 0,
            plan_summary,
            cancelled: false,
        }
    }
}

/// One semantic attempt ([`plan_and_run`]). A panic of the host anywhere in it — planning,
/// any stage of a physical attempt, evaluation, recovery, the retry wait — ends the attempt
/// with a `host_panic` issue instead of taking the task (and its published result) down.
/// Resources the attempt had open are left to the cleanup paths that own them (an open
/// environment stays recorded under `.env-resources/`, where `env close` finds it).
async fn logical_attempt(
    rc: &RequestContext,
    task: &TaskSpec,
    attempt: u32,
    writer: &TaskWriter,
) -> LogicalAttempt {
    let pause = super::task_scope::TaskScope::current().map(|scope| scope.pause);
    let paused_before = pause.as_ref().map(|gate| gate.paused_total());
    let run = plan_and_run(rc, task, attempt, writer);
    match agentcompass_plugin_api::abi::guard::CatchUnwind::new(run).await {
        Ok(mut done) => {
            // The attempt records the time the run was paused while it ran (`ctl pause`).
            if let (Some(gate), Some(before)) = (&pause, paused_before) {
                let paused = gate.paused_total().saturating_sub(before);
                if !paused.is_zero() {
                    done.result
                        .telemetry
                        .insert("paused_seconds".into(), json!(paused.as_secs_f64()));
                }
            }
            done
        }
        Err(panic) => {
            let message = agentcompass_redact::scrub_text(&panic.message);
            tracing::error!("task {} attempt {attempt}: {message}", task.task_id);
            let issue = codes::HOST_PANIC.fatal(
                IssuePhase::Run,
                format!("the host failed during the attempt ({message})"),
            );
            LogicalAttempt::not_run(failed(task, issue), Value::Null)
        }
    }
}

/// Plans the attempt (a new plan), checks the plan, then runs it with runtime retries (the
/// same plan).
async fn plan_and_run(
    rc: &RequestContext,
    task: &TaskSpec,
    attempt: u32,
    writer: &TaskWriter,
) -> LogicalAttempt {
    rc.emit(ProgressEvent::AttemptStarted(task_ref(task, Some(attempt))));
    rc.phase(task, attempt, TaskPhase::Plan);
    // Boxed: an `ExecutionPlan` is 2.6 KB inline, held by this future for the whole attempt.
    let plan = match rc.planner.plan(task, &rc.resolved, attempt) {
        Ok(plan) => Box::new(plan),
        Err(e) => {
            // A component that cannot do what this task asks says so: `unsupported`, like a
            // provider's refusal; any other planning failure is the host's `setup_failed`.
            let code = if e.is_unsupported() {
                codes::UNSUPPORTED
            } else {
                codes::SETUP_FAILED
            };
            let issue = code.fatal(IssuePhase::Setup, e.to_string());
            return LogicalAttempt::not_run(failed(task, issue), Value::Null);
        }
    };
    // The summary is made again for the record rather than held as a `Value` (~5 KB) for as
    // long as the attempt runs: the same work as a clone, and a thousand agents running at
    // once hold 5 MB less.
    let plan_summary =
        |plan: &ExecutionPlan| serde_json::to_value(plan.summary()).unwrap_or(Value::Null);
    rc.emit(ProgressEvent::ExecutionPlanResolved {
        task: task_ref(task, Some(attempt)),
        plan: plan_summary(&plan),
    });
    let checked = rc
        .planner
        .check(&plan, &crate::config::process_env)
        .and_then(|()| {
            let env = &crate::config::process_env;
            rc.planner.check_steps(&plan, task, &rc.resolved, env)
        });
    if let Err(e) = checked {
        let issue = codes::UNSUPPORTED.fatal(IssuePhase::Setup, e.to_string());
        return LogicalAttempt::not_run(failed(task, issue), plan_summary(&plan));
    }
    let (result, retries, cancelled) = run_with_retries(rc, task, &plan, attempt, writer).await;
    LogicalAttempt {
        result,
        retries,
        plan_summary: plan_summary(&plan),
        cancelled,
    }
}

/// Runs the attempt (resuming an interrupted run's evaluation when it can), retrying while
/// the retry rule asks for it and retries are left. Returns the last result, the number of
/// retries and whether the run was cancelled.
async fn run_with_retries(
    rc: &RequestContext,
    task: &TaskSpec,
    plan: &ExecutionPlan,
    attempt: u32,
    writer: &TaskWriter,
) -> (RunResult, u32, bool) {
    let max_retries = rc.resolved.execution.max_retries;
    let mut retries = 0;
    let mut resume = rc.resumable_checkpoint(task, attempt, plan);
    loop {
        let recovered = match resume.take() {
            Some((checkpoint, dir)) => {
                Box::pin(recover_evaluation(
                    rc, task, plan, attempt, writer, checkpoint, &dir,
                ))
                .await
            }
            None => None,
        };
        let outcome = match recovered {
            Some(outcome) => outcome,
            // Boxed, so that a task waiting out a retry's backoff holds no attempt state.
            None => Box::pin(physical_attempt(rc, task, plan, attempt, writer)).await,
        };
        if outcome.cancelled {
            return (outcome.result, retries, true);
        }
        log_issues(task, attempt, &outcome.result);
        let Some(reason) = retry_reason(&outcome.result.issues, &rc.patterns) else {
            return (outcome.result, retries, false);
        };
        if retries >= max_retries {
            return (outcome.result, retries, false);
        }
        retries += 1;
        let delay = record_retry(rc, task, attempt, writer, &outcome, retries, &reason);
        #[cfg(test)]
        super::failpoint::hit(TaskPhase::RetryWait, &task.task_id);
        let task_cancel = super::task_scope::TaskScope::current().map(|s| s.cancel);
        let task_cancelled = async {
            match &task_cancel {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(agentcompass_plugin_api::wait::duration_from_seconds(delay)) => {}
            _ = rc.cancel.cancelled() => return (outcome.result, retries, true),
            _ = task_cancelled => return (outcome.result, retries, true),
        }
    }
}

/// Logs every non-warning issue of an attempt's result.
fn log_issues(task: &TaskSpec, attempt: u32, result: &RunResult) {
    for issue in result
        .issues
        .iter()
        .filter(|i| i.severity != IssueSeverity::Warning)
    {
        tracing::warn!(task_id = %task.task_id, attempt, code = %issue.code, "{}", issue.message);
    }
}

/// Archives the discarded run (its checkpoint and artifacts move under `retries/`, so the next
/// physical run starts empty), writes the retry record and announces the retry. Returns the
/// backoff before the retry, in seconds.
fn record_retry(
    rc: &RequestContext,
    task: &TaskSpec,
    attempt: u32,
    writer: &TaskWriter,
    outcome: &PhysicalOutcome,
    retry: u32,
    reason: &str,
) -> f64 {
    let exec = &rc.resolved.execution;
    let delay = backoff_seconds(
        retry,
        exec.retry_min_delay_seconds,
        exec.retry_max_delay_seconds,
        jitter_unit(),
    );
    let issues = &outcome.result.issues;
    let stage = if issues.iter().any(|i| i.phase == IssuePhase::Evaluate) {
        "evaluate"
    } else {
        "attempt"
    };
    let archived = writer
        .archive_for_retry(
            attempt,
            retry,
            &[manifest::ARTIFACTS_DIR, manifest::MANIFEST_FILE],
        )
        .map_err(|e| tracing::warn!("cannot archive the retried run of {}: {e}", task.task_id))
        .ok()
        .flatten();
    let detail = json!({"retry": retry, "max_retries": exec.max_retries, "retry_delay_seconds": delay, "stage": stage, "scope": "attempt", "matched_pattern": reason});
    let mut record = json!({
        "schema_version": RETRY_SCHEMA,
        "archived_to": archived,
        "task_id": task.task_id,
        "category": task.category,
        "attempt": attempt,
        "issues": agentcompass_redact::redact_value(&serde_json::to_value(issues).unwrap_or(Value::Null)),
        "discarded_result": attempt_payload(&outcome.result, retry - 1),
    });
    if let (Some(record), Some(detail)) = (record.as_object_mut(), detail.as_object()) {
        record.extend(detail.clone());
    }
    if let Err(e) = writer.write_retry(attempt, retry, stage, &record) {
        tracing::warn!("cannot record retry of {}: {e}", task.task_id);
    }
    rc.emit(ProgressEvent::AttemptRetry {
        task: task_ref(task, Some(attempt)),
        detail,
    });
    delay
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

/// What a task's attempts produced, for its `task.json` and metrics.
#[derive(Default)]
struct Attempts {
    outcomes: Vec<AttemptOutcome>,
    numbers: Vec<u32>,
    plans: Map<String, Value>,
    retry_counts: Map<String, Value>,
    worst: Option<IssueSeverity>,
}

/// Runs every semantic attempt of `task` and publishes it.
///
/// The task comes boxed: a `TaskSpec` is 1 KB inline, and the spawned future of each running
/// task would otherwise hold it (once as the argument, once as this future's own).
pub async fn run_task(
    rc: &RequestContext,
    task: Box<TaskSpec>,
    index: usize,
    total: usize,
) -> TaskEnd {
    rc.emit(ProgressEvent::TaskStarted {
        task: task_ref(&task, None),
        index,
        total,
    });
    let writer = match &rc.copy {
        Some(copy) => rc.store.begin_task_fenced(&task.task_id, &copy.token),
        None => rc.store.begin_task(&task.task_id),
    };
    let writer = match writer {
        Ok(writer) => writer,
        Err(e) => {
            tracing::error!("cannot write results of task {}: {e}", task.task_id);
            return TaskEnd::StoreFailed;
        }
    };
    let attempts = match run_attempts(rc, &task, &writer).await {
        Ok(attempts) => attempts,
        Err(TaskEnd::Cancelled) => {
            // Cancelled by a budget (`on_exhausted = "cancel"`) rather than by the user or
            // the deadline: the task was not run, like those never started.
            if let Some(trip) = rc.breaker.trip() {
                rc.record_skipped(&task, trip.reason(), index, total);
            } else if rc.live.cancelled_by_user(&task.task_id) {
                // `ctl cancel`: not scored, not published; the run goes on.
                tracing::info!(task_id = %task.task_id, "cancelled by the user");
                rc.record_skipped(&task, codes::CANCELLED_BY_USER.code, index, total);
            }
            return TaskEnd::Cancelled;
        }
        Err(end) => return end,
    };
    if let Err(end) = publish(rc, &task, writer, &attempts) {
        return end;
    }
    let status = TaskOutcome::from_severity(attempts.worst);
    let severity = crate::progress::severity_name(attempts.worst);
    tracing::info!(task_id = %task.task_id, status = status.as_str(), severity, "task finished");
    rc.emit(ProgressEvent::TaskFinished {
        task: task_ref(&task, None),
        status,
        severity: attempts.worst,
        index,
        total,
    });
    TaskEnd::Published
}

/// The semantic attempts of `task` (`k` of them, fewer when `pass` succeeds early), each
/// result written as it ends.
async fn run_attempts(
    rc: &RequestContext,
    task: &TaskSpec,
    writer: &TaskWriter,
) -> Result<Attempts, TaskEnd> {
    let plan = rc.resolved.execution.attempts;
    let mut attempts = Attempts::default();
    for attempt in 1..=plan.k.max(1) {
        let done = logical_attempt(rc, task, attempt, writer).await;
        if done.cancelled {
            return Err(TaskEnd::Cancelled);
        }
        let mut payload = attempt_payload(&done.result, done.retries);
        if let Some(analysis) = &rc.analysis {
            analysis.annotate(
                &task.task_id,
                Some(&task.category),
                &task.ground_truth,
                attempt,
                &mut payload,
            );
        }
        if let Err(e) = writer.write_attempt_result(attempt, &payload) {
            tracing::error!(
                "cannot write result of task {} attempt {attempt}: {e}",
                task.task_id
            );
            return Err(TaskEnd::StoreFailed);
        }
        super::atif::write(rc, writer, attempt, None, &payload);
        rc.issues.record(&done.result);
        let worst = done.result.highest_severity();
        rc.emit(ProgressEvent::AttemptFinished {
            task: task_ref(task, Some(attempt)),
            status: TaskOutcome::from_severity(worst),
        });
        attempts.worst = attempts.worst.max(worst);
        attempts
            .outcomes
            .push(AttemptOutcome::from_result(&done.result));
        attempts.numbers.push(attempt);
        attempts
            .plans
            .insert(attempt.to_string(), done.plan_summary);
        attempts
            .retry_counts
            .insert(attempt.to_string(), json!(done.retries));
        if plan.strategy == AttemptStrategy::Pass
            && succeeded(&done.result, rc.primary_metric.as_deref())
        {
            break;
        }
    }
    Ok(attempts)
}

/// Publishes the task (its directory moves under its state directory), records its plans and
/// adds it to the metrics.
fn publish(
    rc: &RequestContext,
    task: &TaskSpec,
    writer: TaskWriter,
    attempts: &Attempts,
) -> Result<(), TaskEnd> {
    let state = match attempts.worst {
        Some(IssueSeverity::Fatal) => TaskState::Fatal,
        Some(IssueSeverity::Error) => TaskState::Error,
        _ => TaskState::Normal,
    };
    let plan = rc.resolved.execution.attempts;
    let mut payload = task_payload(
        task,
        &attempts.numbers,
        &plan,
        &rc.reuse_key,
        &attempts.retry_counts,
    );
    if let Some(copy) = &rc.copy {
        // A cluster copy: the coordinator records the plans (from this copy's events) and
        // the metrics of the copy that won.
        if let Some(fields) = payload.as_object_mut() {
            fields.insert("executor".into(), copy.record());
        }
        return match writer.publish_fenced(&payload, state) {
            Ok(FencedPublish::Published(_)) => Ok(()),
            Ok(FencedPublish::Duplicate { holder }) => {
                tracing::info!(task_id = %task.task_id, holder, "published by another copy; this copy's work discarded");
                Err(TaskEnd::Duplicate)
            }
            Err(e) => {
                tracing::error!("cannot publish task {}: {e}", task.task_id);
                Err(TaskEnd::StoreFailed)
            }
        };
    }
    if let Err(e) = writer.publish(&payload, state) {
        tracing::error!("cannot publish task {}: {e}", task.task_id);
        return Err(TaskEnd::StoreFailed);
    }
    if let Err(e) = rc
        .store
        .append_resolved_plans(&task.task_id, &Value::Object(attempts.plans.clone()))
    {
        tracing::warn!("cannot record the plans of task {}: {e}", task.task_id);
    }
    rc.record_metrics(&task.category, &attempts.outcomes);
    Ok(())
}
