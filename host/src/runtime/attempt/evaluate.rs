//! Scoring an attempt: `evaluate` in the task environment (reuse), without one (none), or in
//! a fresh environment with the collected artifacts restored (fresh).

use agentcompass_plugin_api::contracts::{
    EnvironmentRole, EvaluationEnvironmentMode, IssuePhase, IssueSeverity, PreparedTask, RunResult,
    TaskStep,
};
use agentcompass_plugin_api::sdk::{EvaluationInput, SessionRef};
use agentcompass_plugin_api::Error;
use std::path::Path;

use super::env::{close_environment, open_environment};
use super::outcome::{whole_seconds, Halt, IssueRule};
use super::stage::Step;
use crate::issue_codes as codes;
use crate::planner::Phase;
use crate::progress::TaskPhase;
use crate::runtime::artifacts::{self, StageError};
use crate::runtime::phase::{run_phase, watchdog, PhaseOutcome};
use crate::runtime::session::scoped_session;

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

/// Switches `session` to the evaluation network policy (when it differs from the session's
/// current one: the baseline in the task environment, restored after the run phase; the fresh
/// verifier's baseline in a fresh one) and scopes it to the evaluation-phase bindings.
async fn enter_evaluation_phase(
    step: &Step<'_>,
    session: Option<&SessionRef>,
) -> Result<Option<SessionRef>, Halt> {
    let plan = step.plan;
    if let (Some(session), Some(policy)) = (session, plan.evaluation_network_policy.as_ref()) {
        let current = match plan.evaluation_environment_mode {
            EvaluationEnvironmentMode::Fresh => plan.evaluation_baseline_network_policy.clone(),
            EvaluationEnvironmentMode::Reuse | EvaluationEnvironmentMode::NoEnvironment => {
                plan.baseline_network_policy.clone()
            }
        }
        .unwrap_or_default();
        if *policy != current {
            session.set_network_policy(policy).await.map_err(|e| {
                Halt::Issue(codes::NETWORK_POLICY_FAILED.error(IssuePhase::Evaluate, e.message))
            })?;
        }
    }
    session
        .map(|s| scoped_session(s, plan, Phase::Evaluation))
        .transpose()
        .map_err(|e| Halt::Issue(codes::ENV_BINDINGS_FAILED.error(IssuePhase::Evaluate, e.message)))
}

/// The benchmark's `evaluate` under the evaluation watchdog. Returns the (merged) result and
/// whether the run was cancelled.
pub(super) async fn evaluate(
    step: &Step<'_>,
    prepared: &PreparedTask,
    result: RunResult,
    session: Option<&SessionRef>,
) -> (RunResult, bool) {
    let outcome = evaluate_in(step, None, prepared, result, session).await;
    (outcome.result, outcome.cancelled)
}

/// How an evaluation ended.
pub(super) struct Evaluated {
    /// The (merged) result.
    pub(super) result: RunResult,
    /// The run was cancelled during the evaluation.
    pub(super) cancelled: bool,
    /// The benchmark's evaluation returned a result (it did not fail or time out).
    pub(super) returned: bool,
}

impl Evaluated {
    /// An evaluation that did not run (its environment did not open, or was cancelled).
    fn not_run(result: RunResult, cancelled: bool) -> Self {
        Evaluated {
            result,
            cancelled,
            returned: false,
        }
    }
}

/// The benchmark's `evaluate_attempt`, or its `evaluate_step` for `task_step`, under the
/// evaluation watchdog.
pub(super) async fn evaluate_in(
    step: &Step<'_>,
    task_step: Option<&TaskStep>,
    prepared: &PreparedTask,
    result: RunResult,
    session: Option<&SessionRef>,
) -> Evaluated {
    const RULE: IssueRule = IssueRule {
        phase: IssuePhase::Evaluate,
        severity: IssueSeverity::Error,
        failed: codes::EVALUATE_FAILED,
        timed_out: codes::EVALUATE_TIMEOUT,
        timeout_message: |limit| {
            format!(
                "evaluation exceeded its {} s watchdog and was stopped",
                whole_seconds(limit)
            )
        },
    };
    step.phase(TaskPhase::Evaluate);
    let mut result = result;
    let scoped = match enter_evaluation_phase(step, session).await {
        Ok(scoped) => scoped,
        Err(halt) => {
            result.push_issue(halt.issue());
            return Evaluated {
                result,
                cancelled: false,
                returned: false,
            };
        }
    };
    let rc = step.rc;
    let benchmark = &rc.planner.benchmark().benchmark;
    let input = EvaluationInput {
        task: step.task,
        prepared,
        result: result.clone(),
        req: &rc.resolved,
        plan: step.plan,
        env: scoped.as_ref(),
    };
    let call = async {
        match task_step {
            Some(task_step) => benchmark.evaluate_step(&rc.ctx, task_step, input).await,
            None => benchmark.evaluate_attempt(&rc.ctx, input).await,
        }
    };
    let budget = watchdog(step.plan.evaluation_timeout_seconds);
    let (result, cancelled, returned) =
        match run_phase(&rc.cancel, budget, call).await.or_halt(&RULE) {
            Ok(evaluated) => (merge_evaluated(&result, evaluated), false, true),
            Err(Halt::Cancelled(_)) => (result, true, false),
            Err(Halt::Issue(issue)) => {
                result.push_issue(issue);
                (result, false, false)
            }
        };
    Evaluated {
        result,
        cancelled,
        returned,
    }
}

/// Fresh evaluation: a new environment from the plan's evaluation environment, collected
/// artifacts restored to their sources, evaluate, close.
pub(super) async fn evaluate_fresh(
    step: &Step<'_>,
    prepared: &PreparedTask,
    result: RunResult,
    attempt_dir: &Path,
) -> (RunResult, bool) {
    let mut result = result;
    let env = match open_environment(step, EnvironmentRole::Evaluation, attempt_dir).await {
        Ok(env) => env,
        Err(Halt::Cancelled(_)) => return (result, true),
        Err(Halt::Issue(issue)) => {
            result.push_issue(issue);
            return (result, false);
        }
    };
    let (mut evaluated, cancelled) = match restore(step, &env.session, attempt_dir).await {
        Err(None) => (result, true),
        Err(Some((code, message))) => {
            result.push_issue(code.fatal(IssuePhase::Evaluate, message));
            (result, false)
        }
        Ok(()) => evaluate(step, prepared, result, Some(&env.session)).await,
    };
    close_environment(step.rc, env, &mut evaluated).await;
    (evaluated, cancelled)
}

/// A step's fresh evaluation: a new environment from the plan's evaluation environment, the
/// artifacts collected after the step restored to their sources, `evaluate_step`, close.
pub(super) async fn evaluate_step_fresh(
    step: &Step<'_>,
    task_step: &TaskStep,
    prepared: &PreparedTask,
    result: RunResult,
    step_dir: &Path,
) -> Evaluated {
    let mut result = result;
    let env = match open_environment(step, EnvironmentRole::Evaluation, step_dir).await {
        Ok(env) => env,
        Err(Halt::Cancelled(_)) => return Evaluated::not_run(result, true),
        Err(Halt::Issue(issue)) => {
            result.push_issue(issue);
            return Evaluated::not_run(result, false);
        }
    };
    let mut evaluated = match restore(step, &env.session, step_dir).await {
        Err(None) => Evaluated::not_run(result, true),
        Err(Some((code, message))) => {
            result.push_issue(code.fatal(IssuePhase::Evaluate, message));
            Evaluated::not_run(result, false)
        }
        Ok(()) => evaluate_in(step, Some(task_step), prepared, result, Some(&env.session)).await,
    };
    close_environment(step.rc, env, &mut evaluated.result).await;
    evaluated
}

/// Restores the collected artifacts into the fresh environment (`Err(None)`: cancelled).
async fn restore(
    step: &Step<'_>,
    session: &SessionRef,
    dir: &Path,
) -> Result<(), Option<StageError>> {
    step.phase(TaskPhase::RestoreArtifacts);
    let plan = step.plan;
    let timeout = plan.artifact_limits.timeout_seconds;
    let restore = async {
        Ok::<_, Error>(artifacts::restore_all(session, dir, &plan.artifacts, timeout).await)
    };
    match run_phase(&step.rc.cancel, watchdog(Some(timeout)), restore).await {
        PhaseOutcome::Done(Ok(_)) => Ok(()),
        PhaseOutcome::Done(Err(failure)) => Err(Some(failure)),
        PhaseOutcome::Cancelled => Err(None),
        PhaseOutcome::Failed(e) => Err(Some((codes::ARTIFACT_RESTORE_FAILED, e.message))),
        PhaseOutcome::TimedOut(limit) => Err(Some((
            codes::ARTIFACT_RESTORE_TIMEOUT,
            format!(
                "artifact restore exceeded artifact_limits.timeout_seconds ({} s)",
                whole_seconds(limit)
            ),
        ))),
    }
}
