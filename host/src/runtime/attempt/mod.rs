//! One physical attempt: open the environment → prepare → harness (or `run_task`) → collect
//! the harness result → close the harness session → artifacts → checkpoint → evaluate (same
//! environment, none, or a fresh one) → cleanup, always. `AttemptState` is that order as one
//! state machine (`Start` → `Opened` → `Ran` → `Collected` → `Done`), stepped by
//! [`physical_attempt`].
//!
//! - [`env`]: opening and closing environments;
//! - [`stage`]: preparation and the agent run ([`stage::StageOutcome`]);
//! - [`collect`]: artifact commands, download and manifest;
//! - [`checkpoint`]: the evaluation checkpoint;
//! - [`evaluate`]: scoring in the same, no, or a fresh environment;
//! - [`recovery`]: evaluation-only recovery from an interrupted run's checkpoint;
//! - [`steps`]: the steps of a multi-step task, one after another in the task environment,
//!   each persisted as it finishes (and resumed after an interruption);
//! - [`outcome`]: how a phase's ending becomes an issue (one rule per phase).

mod checkpoint;
mod collect;
mod env;
mod evaluate;
mod limit;
mod outcome;
mod recovery;
mod resume;
mod stage;
mod steps;

use agentcompass_plugin_api::contracts::{
    EnvironmentRole, EvaluationEnvironmentMode, ExecutionPlan, PreparedTask, RunResult, TaskSpec,
};
use agentcompass_results::store::TaskWriter;

use crate::runtime::context::RequestContext;
use env::{close_environment, open_environment, OpenEnv};
use evaluate::{evaluate, evaluate_fresh};
use outcome::has_fatal;
use stage::{run_stage, StageOutcome, Step};

pub(crate) use outcome::failed;
pub use recovery::recover_evaluation;

/// The outcome of an attempt: the scored (or failed) result, and whether the run was
/// cancelled while it ran (a cancelled attempt is not published).
pub struct PhysicalOutcome {
    /// The result.
    pub result: RunResult,
    /// The run was cancelled during the attempt.
    pub cancelled: bool,
}

/// Runs one physical attempt of `task` with `plan` and returns its (evaluated) result.
pub async fn physical_attempt(
    rc: &RequestContext,
    task: &TaskSpec,
    plan: &ExecutionPlan,
    attempt: u32,
    writer: &TaskWriter,
) -> PhysicalOutcome {
    let scope = match rc.attempt_scope(plan, task).await {
        Ok(scope) => scope,
        Err(e) => {
            let issue = crate::issue_codes::MODEL_ENDPOINT_FAILED.fatal(
                agentcompass_plugin_api::contracts::IssuePhase::Setup,
                agentcompass_redact::scrub_text(&e.to_string()),
            );
            let result = failed(task, issue);
            return PhysicalOutcome {
                result,
                cancelled: false,
            };
        }
    };
    let step = Step::new(&scope, task, plan, attempt);
    let started = std::time::Instant::now();
    let _provider_slot = scope.limits.provider_slot(&plan.environment.id).await;
    let mut state = AttemptState::Start;
    loop {
        state = match state {
            AttemptState::Done(mut outcome) => {
                stamp_duration(&mut outcome.result, started.elapsed());
                return *outcome;
            }
            running => running.next(&step, writer).await,
        };
    }
}

/// The attempt's wall time, from the environment's open to its close, as
/// `telemetry.duration_seconds` (what the viewer, the report and JUnit show) unless the
/// harness recorded its own.
fn stamp_duration(
    result: &mut agentcompass_plugin_api::contracts::RunResult,
    took: std::time::Duration,
) {
    if !result.telemetry.contains_key("duration_seconds") {
        let seconds = (took.as_secs_f64() * 1000.0).round() / 1000.0;
        result
            .telemetry
            .insert("duration_seconds".into(), serde_json::json!(seconds));
    }
}

/// Where a physical attempt is: [`physical_attempt`] steps it from `Start` to `Done`, one
/// transition per part of the seed's order; an attempt that halts (the environment does not
/// open) or that is a multi-step task's (its steps run as one transition) goes to `Done`
/// directly.
///
/// The outcomes are boxed: the state is moved into each transition's future and held by the
/// attempt's future, so its size is paid two or three times for as long as an agent runs
/// (800 bytes inline; 56 with the boxes: ~2.4 KB less a running task).
enum AttemptState {
    /// Nothing is open yet.
    Start,
    /// The task environment is open; the run stage (prepare, then the agent or `run_task`)
    /// is next.
    Opened(OpenEnv),
    /// The run stage ended; the artifacts are next (unless it was cancelled or fatal).
    Ran(OpenEnv, Box<StageOutcome>),
    /// The artifacts are collected; the checkpoint, the evaluation and closing the
    /// environment are next ([`evaluate_and_close`]).
    Collected(OpenEnv, Box<StageOutcome>),
    /// The attempt is scored (or failed) and its environment closed.
    Done(Box<PhysicalOutcome>),
}

impl AttemptState {
    /// The state after this one.
    ///
    /// Each transition's future is boxed: inline, this future (and every task's) would be as
    /// large as the largest transition — the evaluation and close, ~29 KB — for the whole
    /// attempt, while a running agent holds only the run stage (~3 KB). A thousand agents
    /// running at once then hold ~3 MB of attempt state, not ~35 MB (`bench/PROFILE.md`).
    async fn next(self, step: &Step<'_>, writer: &TaskWriter) -> AttemptState {
        let scope = step.rc;
        match self {
            AttemptState::Start => match Box::pin(open_environment(
                step,
                EnvironmentRole::Task,
                &writer.attempt_dir(step.attempt),
            ))
            .await
            {
                Err(halt) => AttemptState::Done(Box::new(PhysicalOutcome {
                    cancelled: halt.is_cancelled(),
                    result: failed(step.task, halt.issue()),
                })),
                Ok(env) if !step.task.steps.is_empty() => {
                    let mut outcome =
                        Box::pin(steps::run_steps(step, env, writer, steps::Done::default())).await;
                    scope.record_usage(&mut outcome.result);
                    AttemptState::Done(Box::new(outcome))
                }
                Ok(env) => AttemptState::Opened(env),
            },
            AttemptState::Opened(env) => {
                let mut stage = Box::pin(run_stage(step, &env.session, None)).await;
                if let Some(issue) = scope.model_failure() {
                    stage.result.push_issue(issue);
                }
                AttemptState::Ran(env, Box::new(stage))
            }
            AttemptState::Ran(env, mut stage) => {
                if !stage.cancelled && !has_fatal(&stage.result) {
                    Box::pin(collect::collect_artifacts(
                        step,
                        &env.session,
                        &writer.attempt_dir(step.attempt),
                        &mut stage.result,
                    ))
                    .await;
                }
                scope.record_usage(&mut stage.result);
                AttemptState::Collected(env, stage)
            }
            AttemptState::Collected(env, stage) => {
                let mut outcome = Box::pin(evaluate_and_close(step, env, *stage, writer)).await;
                scope.record_usage(&mut outcome.result);
                AttemptState::Done(Box::new(outcome))
            }
            AttemptState::Done(outcome) => AttemptState::Done(outcome),
        }
    }
}

/// Everything after the agent run: the evaluation checkpoint, the evaluation in the mode the
/// plan asks for, and closing the environment (before a none/fresh evaluation, after a reuse
/// one).
///
/// The evaluation checkpoint lets a rerun score this attempt without running the agent again.
/// An evaluation without an environment usually ends within milliseconds, and its result is
/// then all a rerun needs: its checkpoint is only written if the environment close and the
/// evaluation are still running after `checkpoint_after`.
async fn evaluate_and_close(
    step: &Step<'_>,
    env: OpenEnv,
    stage: StageOutcome,
    writer: &TaskWriter,
) -> PhysicalOutcome {
    let StageOutcome {
        mut result,
        prepared,
        mut cancelled,
    } = stage;
    let mode = step.plan.evaluation_environment_mode;
    let evaluable = !cancelled && !has_fatal(&result) && prepared.is_some();
    let defer_checkpoint = evaluable
        && mode == EvaluationEnvironmentMode::NoEnvironment
        && !step.rc.checkpoint_after.is_zero();
    let deferred = defer_checkpoint.then(|| (prepared.clone(), result.clone()));
    if evaluable && mode != EvaluationEnvironmentMode::Reuse && !defer_checkpoint {
        checkpoint::save_now(step, writer, &prepared, &mut result);
    }
    if evaluable && mode == EvaluationEnvironmentMode::Reuse {
        let prepared = prepared
            .clone()
            .unwrap_or_else(|| PreparedTask::new(step.task.task_id.clone(), Default::default()));
        let (evaluated, was_cancelled) =
            evaluate(step, &prepared, result, Some(&env.session)).await;
        result = evaluated;
        cancelled |= was_cancelled;
    }
    let checkpoint_due = tokio::time::Instant::now() + step.rc.checkpoint_after;
    let finish = async move {
        let mut outcome = PhysicalOutcome { result, cancelled };
        close_environment(step.rc, env, &mut outcome.result).await;
        match (&prepared, evaluable && !outcome.cancelled) {
            (Some(prepared), true) => evaluate_after_close(step, prepared, outcome, writer).await,
            _ => outcome,
        }
    };
    let Some((prepared, before)) = deferred else {
        return finish.await;
    };
    tokio::pin!(finish);
    tokio::select! {
        biased;
        done = &mut finish => done,
        () = tokio::time::sleep_until(checkpoint_due) => {
            let late_issue = checkpoint::save(step, writer, &prepared, &before);
            let mut outcome = finish.await;
            if let Some(issue) = late_issue {
                outcome.result.push_issue(issue);
            }
            outcome
        }
    }
}

/// A none or fresh evaluation, after the task environment closed.
async fn evaluate_after_close(
    step: &Step<'_>,
    prepared: &PreparedTask,
    outcome: PhysicalOutcome,
    writer: &TaskWriter,
) -> PhysicalOutcome {
    let (result, cancelled) = match step.plan.evaluation_environment_mode {
        EvaluationEnvironmentMode::NoEnvironment => {
            evaluate(step, prepared, outcome.result, None).await
        }
        EvaluationEnvironmentMode::Fresh => {
            evaluate_fresh(
                step,
                prepared,
                outcome.result,
                &writer.attempt_dir(step.attempt),
            )
            .await
        }
        EvaluationEnvironmentMode::Reuse => return outcome,
    };
    PhysicalOutcome {
        result,
        cancelled: outcome.cancelled | cancelled,
    }
}

#[cfg(test)]
mod tests {
    /// Every running task's futures hold the attempt state two or three times (see
    /// [`super::AttemptState`]): its outcomes stay boxed.
    #[test]
    fn the_attempt_state_stays_small() {
        let size = std::mem::size_of::<super::AttemptState>();
        assert!(size <= 64, "AttemptState is {size} bytes");
    }
}
