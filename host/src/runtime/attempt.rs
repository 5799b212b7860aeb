//! One physical attempt: open the environment → prepare → harness (or `run_task`) → collect
//! the harness result → close the harness session → artifacts → checkpoint → evaluate (same
//! environment, none, or a fresh one) → cleanup, always.

use std::path::Path;
use std::time::Duration;

use agentcompass_plugin_api::contracts::{
    EnvironmentRole, EvaluationEnvironmentMode, ExecRequest, ExecutionIssue, ExecutionPlan,
    IssuePhase, IssueSeverity, OpenEnvironmentRequest, PreparedTask, RunResult, TaskSpec,
};
use agentcompass_plugin_api::sdk::SessionRef;
use agentcompass_plugin_api::{Error, ErrorKind};
use serde_json::{json, Value};

use super::artifacts;
use super::blocking::blocking;
use super::context::{AttemptScope, RequestContext};
use super::phase::{run_phase, watchdog, PhaseOutcome};
use super::phase_scope::scoped_session;
use crate::planner::{phase_bindings, resolve_bindings, Phase};
use agentcompass_results::artifacts as manifest;
use agentcompass_results::records::{env_record, CHECKPOINT_SCHEMA};
use agentcompass_results::store::TaskWriter;
use agentcompass_results::time::rfc3339;

/// The ERROR issue recorded when the run is cancelled during `phase`.
fn cancelled_issue(phase: IssuePhase) -> ExecutionIssue {
    ExecutionIssue::error(phase, "cancelled", "the run was cancelled")
}

/// A result carrying one issue (the attempt could not proceed).
pub(crate) fn failed(task: &TaskSpec, issue: ExecutionIssue) -> RunResult {
    let mut result = RunResult::new(task.task_id.clone());
    result.category = task.category.clone();
    result.push_issue(issue);
    result
}

fn has_fatal(result: &RunResult) -> bool {
    result
        .issues
        .iter()
        .any(|i| i.severity == IssueSeverity::Fatal)
}

/// The outcome of an attempt: the scored (or failed) result, and whether the run was
/// cancelled while it ran (a cancelled attempt is not published).
pub struct PhysicalOutcome {
    /// The result.
    pub result: RunResult,
    /// The run was cancelled during the attempt.
    pub cancelled: bool,
}

/// An open environment and its persisted record.
struct OpenEnv {
    session: SessionRef,
    record: std::path::PathBuf,
}

async fn open_environment(
    rc: &AttemptScope<'_>,
    task: &TaskSpec,
    plan: &ExecutionPlan,
    attempt: u32,
    role: EnvironmentRole,
) -> Result<OpenEnv, PhaseOutcome<()>> {
    let (spec, baseline, bindings) = match role {
        EnvironmentRole::Task => (
            &plan.environment,
            plan.baseline_network_policy.clone().unwrap_or_default(),
            phase_bindings(plan, Phase::Common),
        ),
        EnvironmentRole::Evaluation => (
            plan.evaluation_environment
                .as_ref()
                .unwrap_or(&plan.environment),
            plan.evaluation_baseline_network_policy
                .clone()
                .unwrap_or_default(),
            phase_bindings(plan, Phase::FreshStartup),
        ),
    };
    let resolved_env = resolve_bindings(&bindings, &crate::config::process_env)
        .map_err(|e| PhaseOutcome::Failed(Error::invalid_input(e.to_string())))?;
    for (key, value) in &resolved_env {
        if bindings.get(key).is_some_and(|template| template != value) {
            agentcompass_redact::register_secret(value);
        }
    }
    let mut request =
        OpenEnvironmentRequest::new(rc.store.run_id(), task.task_id.clone(), spec.clone());
    request.attempt = attempt;
    request.role = role;
    request.baseline_network_policy = baseline;
    request.run_dir = Some(rc.store.run_dir().display().to_string());
    request.resolved_env = resolved_env;
    rc.limits.pace_open(&spec.id).await;
    let phase_name = if role == EnvironmentRole::Task {
        "open_environment"
    } else {
        "evaluate_environment"
    };
    rc.task_event(
        "phase_changed",
        task,
        Some(attempt),
        Some(phase_name),
        None,
        Value::Null,
    );
    let provider = rc.planner.provider().clone();
    let opened = run_phase(
        &rc.cancel,
        watchdog(spec.setup.build_timeout_seconds),
        provider.open(&rc.ctx, &request),
    )
    .await;
    let session = match opened {
        PhaseOutcome::Done(session) => session,
        PhaseOutcome::Failed(e) => return Err(PhaseOutcome::Failed(e)),
        PhaseOutcome::TimedOut(d) => return Err(PhaseOutcome::TimedOut(d)),
        PhaseOutcome::Cancelled => return Err(PhaseOutcome::Cancelled),
    };
    let info = session.info();
    let record = rc.store.env_resources_dir().join(format!(
        "{}.json",
        agentcompass_results::naming::sanitize_component(&info.id)
    ));
    // A session with nothing to release (null close params) leaves no record.
    if !info.close_params.is_null() {
        let payload = env_record(
            &info,
            &task.task_id,
            attempt,
            &rfc3339(std::time::SystemTime::now()),
        );
        if let Err(e) = agentcompass_results::store::write_json_atomic(&record, &payload) {
            tracing::warn!("cannot record environment {}: {e}", info.id);
        }
    }
    Ok(OpenEnv { session, record })
}

/// Closes an environment within the cleanup grace (unless kept); failures become warnings.
async fn close_environment(rc: &AttemptScope<'_>, env: OpenEnv, result: &mut RunResult) {
    if rc.resolved.execution.keep_environment {
        let info = env.session.info();
        tracing::warn!(
            "keeping environment {} ({}) open; release it with `agentcompass-host env close {} --id {}`",
            info.id,
            info.provider,
            rc.store.run_dir().display(),
            info.id
        );
        return;
    }
    let closing = tokio::time::timeout(
        rc.cleanup_grace.max(Duration::from_secs(1)),
        env.session.close(),
    )
    .await;
    match closing {
        Ok(Ok(())) => {
            if env.record.exists() {
                let _ = std::fs::remove_file(&env.record);
            }
        }
        Ok(Err(e)) => result.push_issue(ExecutionIssue::warning(
            IssuePhase::Cleanup,
            "environment_close_failed",
            e.message,
        )),
        Err(_) => result.push_issue(ExecutionIssue::warning(
            IssuePhase::Cleanup,
            "environment_close_timeout",
            "closing the environment took longer than the cleanup grace",
        )),
    }
}

fn open_failure(task: &TaskSpec, outcome: PhaseOutcome<()>) -> PhysicalOutcome {
    let (issue, cancelled) = match outcome {
        PhaseOutcome::Cancelled => (cancelled_issue(IssuePhase::Setup), true),
        PhaseOutcome::TimedOut(d) => (
            ExecutionIssue::fatal(
                IssuePhase::Setup,
                "environment_timeout",
                format!(
                    "opening the environment took longer than {:.0} s",
                    d.as_secs_f64()
                ),
            ),
            false,
        ),
        PhaseOutcome::Failed(e) => (
            ExecutionIssue::fatal(IssuePhase::Setup, "environment_failed", e.message),
            false,
        ),
        PhaseOutcome::Done(()) => (
            ExecutionIssue::fatal(IssuePhase::Setup, "environment_failed", "unknown"),
            false,
        ),
    };
    PhysicalOutcome {
        result: failed(task, issue),
        cancelled,
    }
}

/// Runs one physical attempt of `task` with `plan` and returns its (evaluated) result.
pub async fn physical_attempt(
    rc: &RequestContext,
    task: &TaskSpec,
    plan: &ExecutionPlan,
    attempt: u32,
    writer: &TaskWriter,
) -> PhysicalOutcome {
    let scope = rc.attempt_scope();
    let rc = &scope;
    let _provider_slot = rc.limits.provider_slot(&plan.environment.id).await;
    let env = match open_environment(rc, task, plan, attempt, EnvironmentRole::Task).await {
        Ok(env) => env,
        Err(outcome) => return open_failure(task, outcome),
    };
    let (mut result, prepared, mut cancelled) =
        run_stage(rc, task, plan, attempt, &env.session).await;
    if !cancelled && !has_fatal(&result) {
        collect_artifacts(rc, task, plan, attempt, &env.session, writer, &mut result).await;
    }
    rc.record_usage(&mut result);
    let mode = plan.evaluation_environment_mode;
    let evaluable = !cancelled && !has_fatal(&result) && prepared.is_some();
    // The evaluation checkpoint lets a rerun score this attempt without running the agent
    // again. An evaluation without an environment usually ends within milliseconds, and its
    // result is then all a rerun needs: its checkpoint is only written if the environment
    // close and the evaluation are still running after `checkpoint_after`.
    let mut deferred_checkpoint = None;
    if evaluable && mode != EvaluationEnvironmentMode::Reuse {
        if mode == EvaluationEnvironmentMode::NoEnvironment && !rc.checkpoint_after.is_zero() {
            deferred_checkpoint = Some((prepared.clone(), result.clone()));
        } else {
            rc.task_event(
                "phase_changed",
                task,
                Some(attempt),
                Some("save_evaluation_checkpoint"),
                None,
                Value::Null,
            );
            let checkpoint = checkpoint_json(rc, task, plan, attempt, &prepared, &result);
            if let Some(issue) = save_checkpoint(writer, attempt, &checkpoint) {
                result.push_issue(issue);
            }
        }
    }
    if evaluable && mode == EvaluationEnvironmentMode::Reuse {
        let prepared = prepared
            .clone()
            .unwrap_or_else(|| PreparedTask::new(task.task_id.clone(), Default::default()));
        let (evaluated, was_cancelled) = evaluate(
            rc,
            task,
            &prepared,
            result,
            plan,
            attempt,
            Some(&env.session),
        )
        .await;
        result = evaluated;
        cancelled |= was_cancelled;
    }
    let checkpoint_due = tokio::time::Instant::now() + rc.checkpoint_after;
    let finish = async move {
        let (mut result, mut cancelled) = (result, cancelled);
        close_environment(rc, env, &mut result).await;
        if evaluable && !cancelled {
            if let Some(prepared) = &prepared {
                match mode {
                    EvaluationEnvironmentMode::NoEnvironment => {
                        let (evaluated, was_cancelled) =
                            evaluate(rc, task, prepared, result, plan, attempt, None).await;
                        result = evaluated;
                        cancelled |= was_cancelled;
                    }
                    EvaluationEnvironmentMode::Fresh => {
                        let (evaluated, was_cancelled) =
                            evaluate_fresh(rc, task, prepared, result, plan, attempt, writer).await;
                        result = evaluated;
                        cancelled |= was_cancelled;
                    }
                    EvaluationEnvironmentMode::Reuse => {}
                }
            }
        }
        (result, cancelled)
    };
    tokio::pin!(finish);
    let mut late_issue = None;
    let (mut result, cancelled) = match deferred_checkpoint {
        None => finish.await,
        Some((prepared, before)) => tokio::select! {
            biased;
            done = &mut finish => done,
            () = tokio::time::sleep_until(checkpoint_due) => {
                let checkpoint = checkpoint_json(rc, task, plan, attempt, &prepared, &before);
                late_issue = save_checkpoint(writer, attempt, &checkpoint);
                finish.await
            }
        },
    };
    if let Some(issue) = late_issue {
        result.push_issue(issue);
    }
    rc.record_usage(&mut result);
    PhysicalOutcome { result, cancelled }
}

/// An attempt's evaluation checkpoint: the prepared task and the (redacted) run result.
fn checkpoint_json(
    rc: &AttemptScope<'_>,
    task: &TaskSpec,
    plan: &ExecutionPlan,
    attempt: u32,
    prepared: &Option<PreparedTask>,
    result: &RunResult,
) -> Value {
    json!({
        "schema_version": CHECKPOINT_SCHEMA,
        "reuse_key": rc.reuse_key,
        "task_id": task.task_id,
        "attempt": attempt,
        "evaluation_environment_mode": plan.evaluation_environment_mode,
        "evaluation_network_policy": plan.evaluation_network_policy,
        "prepared": prepared,
        "run_result": agentcompass_redact::redact_value(&serde_json::to_value(result).unwrap_or(Value::Null)),
    })
}

/// Writes an attempt's evaluation checkpoint; a failure becomes a warning issue.
fn save_checkpoint(
    writer: &TaskWriter,
    attempt: u32,
    checkpoint: &Value,
) -> Option<ExecutionIssue> {
    writer
        .write_checkpoint(attempt, checkpoint)
        .err()
        .map(|e| ExecutionIssue::warning(IssuePhase::Collect, "checkpoint_failed", e.to_string()))
}

/// Prepare, then the harness (or `run_task`). Returns the run result, the prepared task (when
/// preparation succeeded) and whether the run was cancelled.
async fn run_stage(
    rc: &AttemptScope<'_>,
    task: &TaskSpec,
    plan: &ExecutionPlan,
    attempt: u32,
    session: &SessionRef,
) -> (RunResult, Option<PreparedTask>, bool) {
    let req = &rc.resolved;
    let event = |phase: &str| {
        rc.task_event(
            "phase_changed",
            task,
            Some(attempt),
            Some(phase),
            None,
            Value::Null,
        )
    };
    event("prepare_task");
    let benchmark = &rc.planner.benchmark().benchmark;
    let prepared = match run_phase(
        &rc.cancel,
        None,
        benchmark.prepare_task(&rc.ctx, task, session, req, &plan.benchmark_plan),
    )
    .await
    {
        PhaseOutcome::Done(p) => p,
        PhaseOutcome::Cancelled => {
            return (failed(task, cancelled_issue(IssuePhase::Setup)), None, true)
        }
        PhaseOutcome::Failed(e) => {
            return (
                failed(
                    task,
                    ExecutionIssue::fatal(IssuePhase::Setup, "prepare_failed", e.message),
                ),
                None,
                false,
            )
        }
        PhaseOutcome::TimedOut(_) => {
            return (
                failed(
                    task,
                    ExecutionIssue::fatal(
                        IssuePhase::Setup,
                        "prepare_timeout",
                        "prepare_task timed out",
                    ),
                ),
                None,
                false,
            )
        }
    };
    let baseline = plan.baseline_network_policy.clone().unwrap_or_default();
    if let Some(run_policy) = plan.run_network_policy.as_ref().filter(|p| **p != baseline) {
        if let Err(e) = session.set_network_policy(run_policy).await {
            return (
                failed(
                    task,
                    ExecutionIssue::fatal(IssuePhase::Run, "network_policy_failed", e.message),
                ),
                Some(prepared),
                false,
            );
        }
    }
    // The agent's commands get the run-phase bindings for the rest of this stage.
    let run_session = match scoped_session(session, plan, Phase::Run) {
        Ok(scoped) => scoped,
        Err(e) => {
            return (
                failed(
                    task,
                    ExecutionIssue::fatal(IssuePhase::Run, "env_bindings_failed", e.message),
                ),
                Some(prepared),
                false,
            )
        }
    };
    let session = &run_session;
    let run_watchdog = plan.run_timeout_seconds;
    let mut result = match (rc.planner.harness(), &rc.planner.benchmark().harness_free) {
        (None, Some(free)) => {
            event("run_task");
            match run_phase(
                &rc.cancel,
                watchdog(run_watchdog),
                free.run_task(&rc.ctx, task, &prepared, req, plan, Some(session)),
            )
            .await
            {
                PhaseOutcome::Done(r) => r,
                PhaseOutcome::Cancelled => {
                    return (
                        failed(task, cancelled_issue(IssuePhase::Run)),
                        Some(prepared),
                        true,
                    )
                }
                PhaseOutcome::TimedOut(d) => timed_out(task, d),
                PhaseOutcome::Failed(e) => failed(
                    task,
                    ExecutionIssue::error(IssuePhase::Run, "run_failed", e.message),
                ),
            }
        }
        (Some(harness), _) => {
            event("start_harness");
            let state = match run_phase(
                &rc.cancel,
                None,
                harness.start_session(&rc.ctx, session, req, &plan.harness_plan),
            )
            .await
            {
                PhaseOutcome::Done(state) => state,
                PhaseOutcome::Cancelled => {
                    return (
                        failed(task, cancelled_issue(IssuePhase::Run)),
                        Some(prepared),
                        true,
                    )
                }
                PhaseOutcome::Failed(e) => {
                    return (
                        failed(
                            task,
                            ExecutionIssue::fatal(IssuePhase::Run, "harness_failed", e.message),
                        ),
                        Some(prepared),
                        false,
                    )
                }
                PhaseOutcome::TimedOut(_) => {
                    return (
                        failed(
                            task,
                            ExecutionIssue::fatal(
                                IssuePhase::Run,
                                "harness_failed",
                                "start_session timed out",
                            ),
                        ),
                        Some(prepared),
                        false,
                    )
                }
            };
            event("run_harness");
            let budget = run_watchdog.map(|s| s + plan.run_timer_compensation_seconds);
            let mut cancelled = false;
            let executed = match run_phase(
                &rc.cancel,
                watchdog(budget),
                harness.execute_task(&rc.ctx, &state, &prepared, req, &plan.harness_plan),
            )
            .await
            {
                PhaseOutcome::Done(r) => r,
                PhaseOutcome::Cancelled => {
                    cancelled = true;
                    failed(task, cancelled_issue(IssuePhase::Run))
                }
                PhaseOutcome::TimedOut(d) => timed_out(task, d),
                PhaseOutcome::Failed(e) if e.kind == ErrorKind::Timeout => failed(
                    task,
                    ExecutionIssue::error(IssuePhase::Run, "run_timeout", e.message),
                ),
                PhaseOutcome::Failed(e) => failed(
                    task,
                    ExecutionIssue::fatal(IssuePhase::Run, "harness_failed", e.message),
                ),
            };
            let mut result = executed.clone();
            if !cancelled {
                event("collect_harness_result");
                let collect_budget = watchdog(Some(plan.runresult_collect_timeout_seconds));
                match run_phase(
                    &rc.cancel,
                    collect_budget,
                    harness.collect_result(
                        &rc.ctx,
                        &state,
                        &prepared,
                        req,
                        &plan.harness_plan,
                        executed.clone(),
                    ),
                )
                .await
                {
                    PhaseOutcome::Done(collected) => result = collected,
                    PhaseOutcome::Cancelled => cancelled = true,
                    other => {
                        let message = match other {
                            PhaseOutcome::Failed(e) => e.message,
                            _ => "collect_result timed out".to_string(),
                        };
                        result
                            .telemetry
                            .insert("result_collection_failed".into(), Value::Bool(true));
                        result.push_issue(ExecutionIssue::fatal(
                            IssuePhase::Collect,
                            "result_collection_failed",
                            message,
                        ));
                    }
                }
            }
            // The session is always closed, within the cleanup grace.
            let close = tokio::time::timeout(
                rc.cleanup_grace.max(Duration::from_secs(1)),
                harness.close_session(&rc.ctx, state),
            )
            .await;
            match close {
                Ok(Ok(())) => {}
                Ok(Err(e)) => result.push_issue(ExecutionIssue::warning(
                    IssuePhase::Cleanup,
                    "close_session_failed",
                    e.message,
                )),
                Err(_) => result.push_issue(ExecutionIssue::warning(
                    IssuePhase::Cleanup,
                    "close_session_timeout",
                    "close_session exceeded the cleanup grace",
                )),
            }
            if cancelled {
                return (result, Some(prepared), true);
            }
            result
        }
        (None, None) => failed(
            task,
            ExecutionIssue::fatal(
                IssuePhase::Run,
                "harness_failed",
                "no harness and the benchmark is not harness-free",
            ),
        ),
    };
    result.task_id = task.task_id.clone();
    if result.category.is_empty() {
        result.category = task.category.clone();
    }
    (result, Some(prepared), false)
}

fn timed_out(task: &TaskSpec, limit: Duration) -> RunResult {
    let mut result = failed(
        task,
        ExecutionIssue::error(
            IssuePhase::Run,
            "run_timeout",
            format!(
                "the run phase exceeded its {:.0} s watchdog and was stopped",
                limit.as_secs_f64()
            ),
        ),
    );
    result
        .telemetry
        .insert("timed_out".into(), Value::Bool(true));
    result
}

/// Runs the declared collection commands and downloads the declared paths into
/// `attempt-N/artifacts/` (when saving; emptied first), then writes the checksummed manifest
/// `attempt-N/artifacts.manifest.json` (also kept as `declared_artifacts`, partial with
/// `complete: false` after a failure). Failures are FATAL collect issues.
async fn collect_artifacts(
    rc: &AttemptScope<'_>,
    task: &TaskSpec,
    plan: &ExecutionPlan,
    attempt: u32,
    session: &SessionRef,
    writer: &TaskWriter,
    result: &mut RunResult,
) {
    if !plan.collect_artifacts() {
        return;
    }
    rc.task_event("phase_changed", task,
        Some(attempt),
        Some("collect_artifacts"),
        None,
        json!({"command_count": plan.artifact_collect.len(), "timeout_seconds": plan.artifact_collect_timeout_seconds}),
    );
    let commands = async {
        for command in &plan.artifact_collect {
            let exec = ExecRequest::argv(["bash", "-c", command.command.as_str()])
                .timeout(command.timeout_seconds);
            let out = session.exec(exec).await?;
            if out.timed_out || out.returncode != 0 {
                return Err(Error::msg(format!(
                    "artifact command exited with {} (timed out: {})",
                    out.returncode, out.timed_out
                )));
            }
        }
        Ok(())
    };
    match run_phase(
        &rc.cancel,
        watchdog(plan.artifact_collect_timeout_seconds),
        commands,
    )
    .await
    {
        PhaseOutcome::Done(()) => {}
        PhaseOutcome::Cancelled => return,
        PhaseOutcome::Failed(e) => {
            result.push_issue(ExecutionIssue::fatal(
                IssuePhase::Collect,
                "artifact_collect_failed",
                e.message,
            ));
            return;
        }
        PhaseOutcome::TimedOut(_) => {
            result.push_issue(ExecutionIssue::fatal(
                IssuePhase::Collect,
                "artifact_collect_timeout",
                "artifact commands exceeded their budget",
            ));
            return;
        }
    }
    if !plan.save_artifacts {
        return;
    }
    let attempt_dir = writer.attempt_dir(attempt);
    let root = attempt_dir.join(manifest::ARTIFACTS_DIR);
    let manifest_path = attempt_dir.join(manifest::MANIFEST_FILE);
    if let Err((code, message)) = blocking(|| artifacts::reset_destination(&root, &manifest_path)) {
        result.push_issue(ExecutionIssue::fatal(IssuePhase::Collect, code, message));
        return;
    }
    let limits = &plan.artifact_limits;
    rc.task_event(
        "phase_changed",
        task,
        Some(attempt),
        Some("download_artifacts"),
        None,
        json!({
            "entry_count": plan.artifacts.len(),
            "max_bytes": limits.max_mb.saturating_mul(1024 * 1024),
            "max_entries": limits.max_files,
            "timeout_seconds": limits.timeout_seconds,
        }),
    );
    let mut entries = Vec::new();
    let download = async {
        Ok::<_, Error>(
            artifacts::download_all(session, &plan.artifacts, &root, limits, &mut entries).await,
        )
    };
    let outcome = run_phase(&rc.cancel, watchdog(Some(limits.timeout_seconds)), download).await;
    let failure = match outcome {
        PhaseOutcome::Done(Ok(())) => None,
        PhaseOutcome::Done(Err((code, message))) => Some((code, message)),
        PhaseOutcome::Cancelled => None,
        PhaseOutcome::Failed(e) => Some(("artifact_download_failed", e.message)),
        PhaseOutcome::TimedOut(d) => Some((
            "artifact_download_timeout",
            format!(
                "artifact download exceeded artifact_limits.timeout_seconds ({:.0} s)",
                d.as_secs_f64()
            ),
        )),
    };
    // Entries not reached (an earlier failure, the timeout or cancellation).
    for spec in plan.artifacts.iter().skip(entries.len()) {
        entries.push(manifest::ManifestEntry::empty(
            spec,
            manifest::EntryStatus::Uncollected,
        ));
    }
    let manifest = manifest::ArtifactManifest::new(entries);
    if let Err(e) = blocking(|| manifest::write_manifest(&manifest_path, &manifest)) {
        result.push_issue(ExecutionIssue::fatal(
            IssuePhase::Collect,
            "artifact_manifest_failed",
            e.to_string(),
        ));
    }
    result
        .artifacts
        .insert("declared_artifacts".into(), manifest.to_value());
    if let Some((code, message)) = failure {
        result.push_issue(ExecutionIssue::fatal(IssuePhase::Collect, code, message));
    }
}

/// Keeps the run's issues, trajectory and telemetry on the evaluated result.
fn merge_evaluated(run: &RunResult, mut evaluated: RunResult) -> RunResult {
    for issue in &run.issues {
        if !evaluated.issues.contains(issue) {
            evaluated.issues.push(issue.clone());
        }
    }
    if evaluated.trajectory.is_none() {
        evaluated.trajectory = run.trajectory.clone();
    }
    for (key, value) in &run.telemetry {
        evaluated
            .telemetry
            .entry(key.clone())
            .or_insert_with(|| value.clone());
    }
    for (key, value) in &run.artifacts {
        evaluated
            .artifacts
            .entry(key.clone())
            .or_insert_with(|| value.clone());
    }
    evaluated.task_id = run.task_id.clone();
    evaluated.refresh_status();
    evaluated
}

async fn evaluate(
    rc: &AttemptScope<'_>,
    task: &TaskSpec,
    prepared: &PreparedTask,
    result: RunResult,
    plan: &ExecutionPlan,
    attempt: u32,
    session: Option<&SessionRef>,
) -> (RunResult, bool) {
    rc.task_event(
        "phase_changed",
        task,
        Some(attempt),
        Some("evaluate"),
        None,
        Value::Null,
    );
    if let (Some(session), Some(policy)) = (session, plan.evaluation_network_policy.as_ref()) {
        let current = plan.run_network_policy.clone().unwrap_or_default();
        if *policy != current {
            if let Err(e) = session.set_network_policy(policy).await {
                let mut result = result;
                result.push_issue(ExecutionIssue::error(
                    IssuePhase::Evaluate,
                    "network_policy_failed",
                    e.message,
                ));
                return (result, false);
            }
        }
    }
    // The evaluator's commands get the evaluation-phase bindings.
    let scoped = match session
        .map(|s| scoped_session(s, plan, Phase::Evaluation))
        .transpose()
    {
        Ok(scoped) => scoped,
        Err(e) => {
            let mut result = result;
            result.push_issue(ExecutionIssue::error(
                IssuePhase::Evaluate,
                "env_bindings_failed",
                e.message,
            ));
            return (result, false);
        }
    };
    let session = scoped.as_ref();
    let benchmark = &rc.planner.benchmark().benchmark;
    let call = benchmark.evaluate(
        &rc.ctx,
        task,
        prepared,
        result.clone(),
        &rc.resolved,
        plan,
        session,
    );
    match run_phase(&rc.cancel, watchdog(plan.evaluation_timeout_seconds), call).await {
        PhaseOutcome::Done(evaluated) => (merge_evaluated(&result, evaluated), false),
        PhaseOutcome::Cancelled => (result, true),
        PhaseOutcome::TimedOut(d) => {
            let mut result = result;
            result.push_issue(ExecutionIssue::error(
                IssuePhase::Evaluate,
                "evaluate_timeout",
                format!(
                    "evaluation exceeded its {:.0} s watchdog and was stopped",
                    d.as_secs_f64()
                ),
            ));
            (result, false)
        }
        PhaseOutcome::Failed(e) => {
            let mut result = result;
            result.push_issue(ExecutionIssue::error(
                IssuePhase::Evaluate,
                "evaluate_failed",
                e.message,
            ));
            (result, false)
        }
    }
}

/// Fresh evaluation: a new environment from the plan's evaluation environment, collected
/// artifacts restored to their sources, evaluate, close.
async fn evaluate_fresh(
    rc: &AttemptScope<'_>,
    task: &TaskSpec,
    prepared: &PreparedTask,
    result: RunResult,
    plan: &ExecutionPlan,
    attempt: u32,
    writer: &TaskWriter,
) -> (RunResult, bool) {
    let env = match open_environment(rc, task, plan, attempt, EnvironmentRole::Evaluation).await {
        Ok(env) => env,
        Err(PhaseOutcome::Cancelled) => return (result, true),
        Err(other) => {
            let message = match other {
                PhaseOutcome::Failed(e) => e.message,
                _ => "opening the evaluation environment timed out".into(),
            };
            let mut result = result;
            result.push_issue(ExecutionIssue::fatal(
                IssuePhase::Evaluate,
                "evaluation_environment_failed",
                message,
            ));
            return (result, false);
        }
    };
    rc.task_event(
        "phase_changed",
        task,
        Some(attempt),
        Some("restore_artifacts"),
        None,
        Value::Null,
    );
    let attempt_dir = writer.attempt_dir(attempt);
    let timeout = plan.artifact_limits.timeout_seconds;
    let restore = async {
        Ok::<_, Error>(
            artifacts::restore_all(&env.session, &attempt_dir, &plan.artifacts, timeout).await,
        )
    };
    let restored = match run_phase(&rc.cancel, watchdog(Some(timeout)), restore).await {
        PhaseOutcome::Done(Ok(_)) => Ok(()),
        PhaseOutcome::Done(Err(failure)) => Err(Some(failure)),
        PhaseOutcome::Cancelled => Err(None),
        PhaseOutcome::Failed(e) => Err(Some(("artifact_restore_failed", e.message))),
        PhaseOutcome::TimedOut(d) => Err(Some((
            "artifact_restore_timeout",
            format!(
                "artifact restore exceeded artifact_limits.timeout_seconds ({:.0} s)",
                d.as_secs_f64()
            ),
        ))),
    };
    let (mut evaluated, cancelled) = match restored {
        Err(None) => (result, true),
        Err(Some((code, message))) => {
            let mut result = result;
            result.push_issue(ExecutionIssue::fatal(IssuePhase::Evaluate, code, message));
            (result, false)
        }
        Ok(()) => {
            evaluate(
                rc,
                task,
                prepared,
                result,
                plan,
                attempt,
                Some(&env.session),
            )
            .await
        }
    };
    close_environment(rc, env, &mut evaluated).await;
    (evaluated, cancelled)
}

/// Copies the tree `from` to `to` without following links: files (modes kept), directories
/// and symlinks (recreated as links). Special files are skipped.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(from)?;
    if meta.is_dir() {
        std::fs::create_dir_all(to)?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            copy_tree(&entry.path(), &to.join(entry.file_name()))?;
        }
        std::fs::set_permissions(to, meta.permissions())
    } else if meta.file_type().is_symlink() {
        std::os::unix::fs::symlink(std::fs::read_link(from)?, to)
    } else if meta.is_file() {
        agentcompass_results::fsutil::copy_file_atomic(from, to)
    } else {
        Ok(())
    }
}

/// Copies the artifacts (and their manifest) of the interrupted attempt `source` into
/// `target` and verifies the copy against the manifest; on any failure the copies are
/// removed and the reason returned.
fn recover_artifacts(source: &Path, target: &Path) -> Result<(), String> {
    let copy = || -> Result<(), String> {
        let from = source.join(manifest::ARTIFACTS_DIR);
        if from.exists() {
            copy_tree(&from, &target.join(manifest::ARTIFACTS_DIR))
                .map_err(|e| format!("cannot copy {}: {e}", from.display()))?;
        }
        let manifest = source.join(manifest::MANIFEST_FILE);
        if manifest.exists() {
            agentcompass_results::fsutil::copy_file_atomic(
                &manifest,
                &target.join(manifest::MANIFEST_FILE),
            )
            .map_err(|e| format!("cannot copy {}: {e}", manifest.display()))?;
        }
        manifest::verify_attempt_dir(target)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    // Check the source first (cheap refusal), then the copy (what evaluation will use).
    manifest::verify_attempt_dir(source).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(target)
        .map_err(|e| format!("cannot create {}: {e}", target.display()))?;
    let _ = artifacts::reset_destination(
        &target.join(manifest::ARTIFACTS_DIR),
        &target.join(manifest::MANIFEST_FILE),
    );
    copy().inspect_err(|_| {
        let _ = artifacts::reset_destination(
            &target.join(manifest::ARTIFACTS_DIR),
            &target.join(manifest::MANIFEST_FILE),
        );
    })
}

/// Evaluation-only recovery: the agent run of this attempt finished in an interrupted earlier
/// run and left an evaluation checkpoint; its prepared task, run result and artifacts are
/// restored and only the evaluation runs (none or fresh mode).
pub async fn recover_evaluation(
    rc: &RequestContext,
    task: &TaskSpec,
    plan: &ExecutionPlan,
    attempt: u32,
    writer: &TaskWriter,
    checkpoint: Value,
    source_attempt_dir: &Path,
) -> Option<PhysicalOutcome> {
    let prepared: PreparedTask = serde_json::from_value(checkpoint["prepared"].clone()).ok()?;
    let result: RunResult = serde_json::from_value(checkpoint["run_result"].clone()).ok()?;
    rc.task_event(
        "phase_changed",
        task,
        Some(attempt),
        Some("recover_evaluation"),
        None,
        Value::Null,
    );
    if let Err(reason) =
        blocking(|| recover_artifacts(source_attempt_dir, &writer.attempt_dir(attempt)))
    {
        tracing::warn!(
            "not resuming the evaluation of task {} attempt {attempt}; rerunning it: {reason}",
            task.task_id
        );
        return None;
    }
    if writer.write_checkpoint(attempt, &checkpoint).is_err() {
        return None;
    }
    let earlier_usage = result
        .telemetry
        .get("model_usage")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    let scope = rc.attempt_scope_over(earlier_usage);
    let rc = &scope;
    let (result, cancelled) = match plan.evaluation_environment_mode {
        EvaluationEnvironmentMode::Fresh => {
            evaluate_fresh(rc, task, &prepared, result, plan, attempt, writer).await
        }
        _ => evaluate(rc, task, &prepared, result, plan, attempt, None).await,
    };
    let mut result = result;
    rc.record_usage(&mut result);
    Some(PhysicalOutcome { result, cancelled })
}
