//! The run stage of an attempt: prepare the task, then the harness (start its session, run
//! the agent, collect its result, close the session) or a harness-free benchmark's
//! `run_task`.

use std::sync::Arc;
use std::time::Duration;

use agentcompass_plugin_api::contracts::{
    ExecutionIssue, ExecutionPlan, IssuePhase, IssueSeverity, PreparedTask, RunResult, TaskSpec,
    TaskStep,
};
use agentcompass_plugin_api::sdk::{
    Harness, HarnessFreeBenchmark, HarnessSession, PrepareInput, SessionRef,
};
use agentcompass_plugin_api::ErrorKind;
use serde_json::Value;

use super::limit;
use super::outcome::{cancelled_issue, failed, whole_seconds, Halt, IssueRule};
use crate::issue_codes as codes;
use crate::planner::Phase;
use crate::progress::TaskPhase;
use crate::runtime::context::AttemptScope;
use crate::runtime::phase::{run_phase, watchdog, PhaseOutcome};
use crate::runtime::session::scoped_session;

/// How the run stage ended.
pub(super) struct StageOutcome {
    /// The run result (not yet evaluated).
    pub(super) result: RunResult,
    /// The prepared task, when preparation succeeded.
    pub(super) prepared: Option<PreparedTask>,
    /// The run was cancelled during the stage.
    pub(super) cancelled: bool,
}

impl StageOutcome {
    fn halted(task: &TaskSpec, prepared: Option<PreparedTask>, halt: Halt) -> Self {
        let cancelled = halt.is_cancelled();
        StageOutcome {
            result: failed(task, halt.issue()),
            prepared,
            cancelled,
        }
    }
}

/// The inputs every step of one attempt's stages share.
pub(super) struct Step<'a> {
    pub(super) rc: &'a AttemptScope<'a>,
    pub(super) task: &'a TaskSpec,
    pub(super) plan: &'a ExecutionPlan,
    pub(super) attempt: u32,
}

impl<'a> Step<'a> {
    /// Attempt `attempt` of `task`, run by `rc` to `plan`.
    pub(super) fn new(
        rc: &'a AttemptScope<'a>,
        task: &'a TaskSpec,
        plan: &'a ExecutionPlan,
        attempt: u32,
    ) -> Step<'a> {
        Step {
            rc,
            task,
            plan,
            attempt,
        }
    }

    /// Records that the attempt entered `phase`.
    pub(super) fn phase(&self, phase: TaskPhase) {
        self.rc.phase(self.task, self.attempt, phase);
    }
}

/// Prepare (the task, or one step of a multi-step task), then the harness (or `run_task`).
pub(super) async fn run_stage(
    step: &Step<'_>,
    session: &SessionRef,
    task_step: Option<&TaskStep>,
) -> StageOutcome {
    let prepared = match prepare(step, session, task_step).await {
        Ok(prepared) => prepared,
        Err(halt) => return StageOutcome::halted(step.task, None, halt),
    };
    let agent_view = match step.rc.planner.harness() {
        Some(_) => match agent_view(step, &prepared, session).await {
            Ok(view) => Some(view),
            Err(issue) => {
                return StageOutcome::halted(step.task, Some(prepared), Halt::Issue(issue));
            }
        },
        None => None,
    };
    // The agent's commands get the run-phase bindings for the rest of this stage.
    let run_session = match enter_run_phase(step.plan, session).await {
        Ok(scoped) => scoped,
        Err(issue) => {
            return StageOutcome::halted(step.task, Some(prepared), Halt::Issue(issue));
        }
    };
    let rc = step.rc;
    let (mut result, cancelled) = match (rc.planner.harness(), &rc.planner.benchmark().harness_free)
    {
        (None, Some(free)) => run_harness_free(step, free, &prepared, &run_session).await,
        (Some(harness), _) => {
            let view = agent_view.as_ref().unwrap_or(&prepared);
            let shown = harness_view(view, rc.planner.harness_reads_reference());
            run_harness(step, harness, &shown, &run_session).await
        }
        (None, None) => (
            failed(
                step.task,
                codes::HARNESS_FAILED.fatal(
                    IssuePhase::Run,
                    "no harness and the benchmark is not harness-free",
                ),
            ),
            false,
        ),
    };
    if !cancelled {
        result.task_id = step.task.task_id.clone();
        if result.category.is_empty() {
            result.category = step.task.category.clone();
        }
        if let Err(issue) = leave_run_phase(step.plan, session).await {
            result.push_issue(issue);
        }
    }
    StageOutcome {
        result,
        prepared: Some(prepared),
        cancelled,
    }
}

/// The prepared task as `harness` sees it: without the reference solution unless it is a
/// reference harness (the benchmark and the checkpoint keep it).
fn harness_view(
    prepared: &PreparedTask,
    reads_reference: bool,
) -> std::borrow::Cow<'_, PreparedTask> {
    if reads_reference || prepared.reference_solution.is_none() {
        return std::borrow::Cow::Borrowed(prepared);
    }
    let mut shown = prepared.clone();
    shown.reference_solution = None;
    std::borrow::Cow::Owned(shown)
}

/// The prepared task with what the agent is handed besides the instruction (MCP servers,
/// skills, variables, extra instructions), the run's skills placed in the environment.
async fn agent_view(
    step: &Step<'_>,
    prepared: &PreparedTask,
    session: &SessionRef,
) -> Result<PreparedTask, ExecutionIssue> {
    let rc = step.rc;
    let fail = |message: String| codes::PREPARE_FAILED.fatal(IssuePhase::Setup, message);
    let mut inputs = rc
        .agent_inputs
        .for_task(step.task, &rc.resolved)
        .map_err(|e| fail(e.to_string()))?;
    if let Some((relay, relayed)) = rc.tool_relay() {
        crate::runtime::agent_inputs::through_relay(&mut inputs, relayed, relay);
    }
    rc.agent_inputs
        .place_skills(session, &inputs)
        .await
        .map_err(|e| fail(format!("cannot place the run's skills: {e}")))?;
    let mut view = prepared.clone();
    rc.agent_inputs.hand_over(&mut view, inputs);
    Ok(view)
}

/// The benchmark's `prepare_task` (or `prepare_step`) in the task environment.
async fn prepare(
    step: &Step<'_>,
    session: &SessionRef,
    task_step: Option<&TaskStep>,
) -> Result<PreparedTask, Halt> {
    const RULE: IssueRule = IssueRule {
        phase: IssuePhase::Setup,
        severity: IssueSeverity::Fatal,
        failed: codes::PREPARE_FAILED,
        timed_out: codes::PREPARE_TIMEOUT,
        timeout_message: |_| "prepare_task timed out".into(),
    };
    step.phase(TaskPhase::PrepareTask);
    let rc = step.rc;
    let benchmark = &rc.planner.benchmark().benchmark;
    let plan = &step.plan.benchmark_plan;
    let input = PrepareInput {
        task: step.task,
        step: task_step,
        env: session,
        req: &rc.resolved,
        plan,
    };
    let call = benchmark.prepare(&rc.ctx, input);
    run_phase(&rc.cancel, None, call).await.or_halt(&RULE)
}

/// Switches to the run-phase network policy (when it differs from the baseline) and scopes
/// the session to the run-phase bindings.
async fn enter_run_phase(
    plan: &ExecutionPlan,
    session: &SessionRef,
) -> Result<SessionRef, ExecutionIssue> {
    let baseline = plan.baseline_network_policy.clone().unwrap_or_default();
    if let Some(run_policy) = plan.run_network_policy.as_ref().filter(|p| **p != baseline) {
        session
            .set_network_policy(run_policy)
            .await
            .map_err(|e| codes::NETWORK_POLICY_FAILED.fatal(IssuePhase::Run, e.message))?;
    }
    scoped_session(session, plan, Phase::Run)
        .map_err(|e| codes::ENV_BINDINGS_FAILED.fatal(IssuePhase::Run, e.message))
}

/// Restores the baseline network policy after the run phase (when the run's differed), so
/// artifact commands, the next step's setup and the evaluation switch start from the
/// baseline. A failure is FATAL: later commands would run on the run's network.
async fn leave_run_phase(plan: &ExecutionPlan, session: &SessionRef) -> Result<(), ExecutionIssue> {
    let baseline = plan.baseline_network_policy.clone().unwrap_or_default();
    match plan.run_network_policy.as_ref() {
        Some(run_policy) if *run_policy != baseline => {
            session.set_network_policy(&baseline).await.map_err(|e| {
                codes::NETWORK_POLICY_FAILED.fatal(
                    IssuePhase::Run,
                    format!("restoring the baseline after the run phase: {}", e.message),
                )
            })
        }
        _ => Ok(()),
    }
}

/// The result of a run phase stopped by its watchdog.
fn timed_out(task: &TaskSpec, limit: Duration) -> RunResult {
    let mut result = failed(
        task,
        codes::RUN_TIMEOUT.error(
            IssuePhase::Run,
            format!(
                "the run phase exceeded its {} s watchdog and was stopped",
                whole_seconds(limit)
            ),
        ),
    );
    result
        .telemetry
        .insert("timed_out".into(), Value::Bool(true));
    result
}

/// A harness-free benchmark's `run_task` under the run watchdog. Returns the result and
/// whether the run was cancelled.
async fn run_harness_free(
    step: &Step<'_>,
    free: &Arc<dyn HarnessFreeBenchmark>,
    prepared: &PreparedTask,
    session: &SessionRef,
) -> (RunResult, bool) {
    step.phase(TaskPhase::RunTask);
    let rc = step.rc;
    let call = free.run_task(
        &rc.ctx,
        step.task,
        prepared,
        &rc.resolved,
        step.plan,
        Some(session),
    );
    let phase = run_phase(&rc.cancel, watchdog(step.plan.run_timeout_seconds), call);
    let outcome = tokio::select! {
        outcome = phase => Some(outcome),
        () = limit::limit_stop(&rc.usage) => None,
    };
    let ended = match outcome {
        Some(PhaseOutcome::Done(result)) => (result, false),
        Some(PhaseOutcome::Cancelled) => {
            (failed(step.task, cancelled_issue(IssuePhase::Run)), true)
        }
        Some(PhaseOutcome::TimedOut(limit)) => (timed_out(step.task, limit), false),
        Some(PhaseOutcome::Failed(e)) => (
            failed(
                step.task,
                codes::RUN_FAILED.error(IssuePhase::Run, e.message),
            ),
            false,
        ),
        None => (RunResult::new(step.task.task_id.clone()), false),
    };
    with_limits(step, ended)
}

/// A run phase's ending with the attempt's limit breach, if any, recorded on it.
fn with_limits(step: &Step<'_>, (mut result, cancelled): (RunResult, bool)) -> (RunResult, bool) {
    if cancelled {
        return (result, cancelled);
    }
    if let Some(breach) = step.rc.usage.breach() {
        if result.issues.is_empty() && result.telemetry.is_empty() {
            result = limit::stopped(step.task, &breach);
        } else {
            limit::apply(&mut result, &breach);
        }
    }
    (result, false)
}

/// The harness: start its session, run the agent, collect its result, and always close the
/// session. Returns the result and whether the run was cancelled.
async fn run_harness(
    step: &Step<'_>,
    harness: &Arc<dyn Harness>,
    prepared: &PreparedTask,
    session: &SessionRef,
) -> (RunResult, bool) {
    let state = match start_harness(step, harness, session).await {
        Ok(state) => state,
        Err(halt) => {
            let cancelled = halt.is_cancelled();
            return (failed(step.task, halt.issue()), cancelled);
        }
    };
    let (executed, mut cancelled) = execute(step, harness, &state, prepared).await;
    let mut result = executed.clone();
    if !cancelled {
        cancelled = collect_result(step, harness, &state, prepared, executed, &mut result).await;
        // The recovered result replaces the executed one: the limit stays on record.
        if let (false, Some(breach)) = (cancelled, step.rc.usage.breach()) {
            limit::apply(&mut result, &breach);
        }
    }
    close_harness(step, harness, state, &mut result).await;
    (result, cancelled)
}

async fn start_harness(
    step: &Step<'_>,
    harness: &Arc<dyn Harness>,
    session: &SessionRef,
) -> Result<HarnessSession, Halt> {
    const RULE: IssueRule = IssueRule {
        phase: IssuePhase::Run,
        severity: IssueSeverity::Fatal,
        failed: codes::HARNESS_FAILED,
        timed_out: codes::HARNESS_FAILED,
        timeout_message: |_| "start_session timed out".into(),
    };
    step.phase(TaskPhase::StartHarness);
    let rc = step.rc;
    let call = harness.start_session(&rc.ctx, session, &rc.resolved, &step.plan.harness_plan);
    run_phase(&rc.cancel, None, call).await.or_halt(&RULE)
}

/// The agent run under the run watchdog (plus the plan's timer compensation).
async fn execute(
    step: &Step<'_>,
    harness: &Arc<dyn Harness>,
    state: &HarnessSession,
    prepared: &PreparedTask,
) -> (RunResult, bool) {
    step.phase(TaskPhase::RunHarness);
    let (rc, plan, task) = (step.rc, step.plan, step.task);
    let budget = plan
        .run_timeout_seconds
        .map(|s| s + plan.run_timer_compensation_seconds);
    let call = harness.execute_task(&rc.ctx, state, prepared, &rc.resolved, &plan.harness_plan);
    let phase = run_phase(&rc.cancel, watchdog(budget), call);
    let outcome = tokio::select! {
        outcome = phase => Some(outcome),
        () = limit::limit_stop(&rc.usage) => None,
    };
    let ended = match outcome {
        Some(PhaseOutcome::Done(result)) => (result, false),
        Some(PhaseOutcome::Cancelled) => (failed(task, cancelled_issue(IssuePhase::Run)), true),
        Some(PhaseOutcome::TimedOut(limit)) => (timed_out(task, limit), false),
        Some(PhaseOutcome::Failed(e)) if e.kind == ErrorKind::Timeout => (
            failed(task, codes::RUN_TIMEOUT.error(IssuePhase::Run, e.message)),
            false,
        ),
        Some(PhaseOutcome::Failed(e)) => (
            failed(
                task,
                codes::HARNESS_FAILED.fatal(IssuePhase::Run, e.message),
            ),
            false,
        ),
        // Stopped for a limit: `with_limits` records which.
        None => (RunResult::new(task.task_id.clone()), false),
    };
    with_limits(step, ended)
}

/// `collect_result` under `harness_result_timeout_seconds`: the recovered result replaces
/// `result`; a failure marks it. Returns whether the run was cancelled.
async fn collect_result(
    step: &Step<'_>,
    harness: &Arc<dyn Harness>,
    state: &HarnessSession,
    prepared: &PreparedTask,
    executed: RunResult,
    result: &mut RunResult,
) -> bool {
    step.phase(TaskPhase::CollectHarnessResult);
    let (rc, plan) = (step.rc, step.plan);
    let budget = watchdog(Some(plan.runresult_collect_timeout_seconds));
    let call = harness.collect_result(
        &rc.ctx,
        state,
        prepared,
        &rc.resolved,
        &plan.harness_plan,
        executed,
    );
    let message = match run_phase(&rc.cancel, budget, call).await {
        PhaseOutcome::Done(collected) => {
            *result = collected;
            return false;
        }
        PhaseOutcome::Cancelled => return true,
        PhaseOutcome::Failed(e) => e.message,
        PhaseOutcome::TimedOut(_) => "collect_result timed out".to_string(),
    };
    result
        .telemetry
        .insert("result_collection_failed".into(), Value::Bool(true));
    result.push_issue(codes::RESULT_COLLECTION_FAILED.fatal(IssuePhase::Collect, message));
    false
}

/// Closes the harness session within the cleanup grace; failures become warnings.
async fn close_harness(
    step: &Step<'_>,
    harness: &Arc<dyn Harness>,
    state: HarnessSession,
    result: &mut RunResult,
) {
    let rc = step.rc;
    let close = tokio::time::timeout(
        rc.cleanup_grace.max(Duration::from_secs(1)),
        harness.close_session(&rc.ctx, state),
    )
    .await;
    match close {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            result.push_issue(codes::CLOSE_SESSION_FAILED.warning(IssuePhase::Cleanup, e.message))
        }
        Err(_) => result.push_issue(codes::CLOSE_SESSION_TIMEOUT.warning(
            IssuePhase::Cleanup,
            "close_session exceeded the cleanup grace",
        )),
    }
}
