//! A multi-step attempt: the task's steps one after another in the same task environment (the
//! agent's state carries over). Each step is prepared (`prepare_step`), run by the harness,
//! evaluated (`evaluate_step`: in the task environment in reuse mode, without one in none
//! mode, and in fresh mode — Harbor's separate verifier — in a new evaluation environment
//! holding the artifacts collected from the task environment after that step) and judged
//! (`score_steps`: go on or stop, and the attempt's metrics so far). Artifacts are collected
//! after the last step run (and, in fresh mode, after every step).
//!
//! Every finished step is persisted as it finishes: `attempt-N/steps/<name>/result.json` (the
//! step's full result and its record), and, when another step follows, a snapshot of the
//! environment's working directory (`attempt-N/steps/<name>/workdir/`) and the step checkpoint
//! `attempt-N/steps/checkpoint.json`. A rerun of an interrupted attempt (`--reuse`) opens a new
//! environment, restores the last snapshot into the working directory and runs the remaining
//! steps only. Only the working directory is restored: files elsewhere (home, `/tmp`, installed
//! packages, `/logs`), running processes and the agent's own memory are not. Snapshots and the
//! checkpoint are removed once the attempt ends.

mod resume;

use std::time::{Duration, Instant, SystemTime};

use agentcompass_plugin_api::contracts::{
    EvaluationEnvironmentMode, ExecutionPlan, IssuePhase, RunResult, StepResult, StepScore,
    TaskStep, Trajectory,
};
use agentcompass_results::records::attempt_payload;
use agentcompass_results::store::{TaskWriter, STEP_SNAPSHOT_DIR};
use agentcompass_results::time::rfc3339;
use agentcompass_schema::checkpoint::{StepsCheckpoint, STEPS_CHECKPOINT_SCHEMA};
use serde_json::{json, Value};

use super::env::{close_environment, OpenEnv};
use super::evaluate::{evaluate_in, evaluate_step_fresh};
use super::outcome::has_fatal;
use super::stage::{run_stage, StageOutcome, Step};
use super::{collect, PhysicalOutcome};
use crate::issue_codes as codes;
use crate::progress::TaskPhase;
pub(super) use resume::resume_steps;

/// The steps an interrupted run finished (empty for a new run), and what they added to the
/// attempt's result.
#[derive(Default)]
pub(super) struct Done {
    records: Vec<StepResult>,
    partial: Option<RunResult>,
}

/// The working directory steps share: the plan's, else the environment's default.
fn shared_workdir(plan: &ExecutionPlan, env: &OpenEnv) -> Option<String> {
    plan.environment
        .setup
        .workdir
        .clone()
        .or_else(|| env.session.info().default_workdir)
}

/// Runs the steps of `step.task` not in `done`, then collects the artifacts and closes the
/// environment.
pub(super) async fn run_steps(
    step: &Step<'_>,
    env: OpenEnv,
    writer: &TaskWriter,
    done: Done,
) -> PhysicalOutcome {
    let task = step.task;
    if done.records.is_empty() {
        if let Err(e) = writer.clear_steps(step.attempt) {
            tracing::warn!("cannot clear the steps of an earlier run: {e}");
        }
    }
    let mut combined = done.partial.unwrap_or_else(|| {
        let mut result = RunResult::new(task.task_id.clone());
        result.category = task.category.clone();
        result
    });
    let mut records = done.records;
    let Some(score) = run_remaining(step, &env, writer, &mut records, &mut combined).await else {
        close_environment(step.rc, env, &mut combined).await;
        return PhysicalOutcome {
            result: combined,
            cancelled: true,
        };
    };
    finish(step, env, writer, records, score, combined).await
}

/// Runs the steps after `records` in order, judging after each; `None` when the attempt was
/// cancelled during a step.
async fn run_remaining(
    step: &Step<'_>,
    env: &OpenEnv,
    writer: &TaskWriter,
    records: &mut Vec<StepResult>,
    combined: &mut RunResult,
) -> Option<StepScore> {
    let task = step.task;
    let mut score = StepScore::default();
    let total = task.steps.len();
    for (index, task_step) in task.steps.iter().enumerate().skip(records.len()) {
        step.rc.phase_with(
            task,
            step.attempt,
            TaskPhase::RunStep,
            json!({"step": task_step.name, "number": index + 1, "total": total}),
        );
        let (started, clock) = (SystemTime::now(), Instant::now());
        // What the step declares of its own (timeouts, artifacts, policies, its verifier's
        // environment), in a plan of its own; checked with the attempt's before it began.
        let rc = step.rc;
        let own_plan = match rc
            .planner
            .step_plan(step.plan, task, task_step, &rc.resolved)
        {
            Ok(plan) => plan,
            Err(e) => {
                let message = e.in_step(&task_step.name).to_string();
                combined.push_issue(codes::UNSUPPORTED.fatal(IssuePhase::Setup, message));
                break;
            }
        };
        let own = own_plan.as_ref().map(|plan| Step { plan, ..*step });
        let this = own.as_ref().unwrap_or(step);
        let ran = run_one(this, env, writer, task_step).await;
        if ran.cancelled {
            return None;
        }
        records.push(record(task_step, &ran, started, clock.elapsed()));
        score = judge(step, records, combined).await;
        if let Some(last) = records.last_mut().filter(|_| score.stop) {
            last.stop_reason = score.reason.clone();
        }
        absorb(combined, &ran.result);
        persist(step, writer, task_step, &ran.result, records, combined);
        if score.stop || index + 1 == total {
            break;
        }
        if let Err(issue) = leave_evaluation(this, env).await {
            combined.push_issue(issue);
            break;
        }
        checkpoint(step, env, writer, task_step, records, combined).await;
    }
    Some(score)
}

/// The attempt's result from its steps' records and score; the artifacts are collected and
/// the environment closed.
async fn finish(
    step: &Step<'_>,
    env: OpenEnv,
    writer: &TaskWriter,
    records: Vec<StepResult>,
    score: StepScore,
    mut combined: RunResult,
) -> PhysicalOutcome {
    let task = step.task;
    let total = task.steps.len();
    if records.len() < total && !score.stop {
        // Stopped by a failure of the host (network policy): the steps not run are recorded
        // by their absence.
        tracing::warn!(task_id = %task.task_id, "not every step of the task ran");
    }
    combined.metrics = score.metrics;
    combined.extra.extend(score.extra);
    combined.steps = records;
    // The artifacts are collected on the baseline, as after a single-step attempt's run.
    if !has_fatal(&combined) {
        if let Err(issue) = leave_evaluation(step, &env).await {
            combined.push_issue(issue);
        }
    }
    combined.refresh_status();
    if !has_fatal(&combined) {
        let dir = writer.attempt_dir(step.attempt);
        collect::collect_artifacts(step, &env.session, &dir, &mut combined).await;
    }
    close_environment(step.rc, env, &mut combined).await;
    let names: Vec<String> = task.steps.iter().map(|s| s.name.clone()).collect();
    if let Err(e) = writer.finish_steps(step.attempt, &names) {
        tracing::warn!("cannot remove the step snapshots of {}: {e}", task.task_id);
    }
    PhysicalOutcome {
        result: combined,
        cancelled: false,
    }
}

/// How one step ended.
struct Ran {
    result: RunResult,
    /// The benchmark's evaluation returned a result.
    evaluated: bool,
    cancelled: bool,
}

/// One step: prepare and run it, collect its artifacts into its directory (the attempt's
/// and its own, as Harbor collects them after every step), then evaluate it unless its run
/// or the collection failed fatally.
async fn run_one(step: &Step<'_>, env: &OpenEnv, writer: &TaskWriter, task_step: &TaskStep) -> Ran {
    let StageOutcome {
        mut result,
        prepared,
        cancelled,
    } = run_stage(step, &env.session, Some(task_step)).await;
    let prepared = prepared.filter(|_| !cancelled && !has_fatal(&result));
    let Some(prepared) = prepared else {
        return Ran {
            result,
            evaluated: false,
            cancelled,
        };
    };
    let step_dir = writer.step_dir(step.attempt, &task_step.name);
    collect::collect_artifacts(step, &env.session, &step_dir, &mut result).await;
    if has_fatal(&result) {
        return Ran {
            result,
            evaluated: false,
            cancelled: false,
        };
    }
    let evaluated = match step.plan.evaluation_environment_mode {
        EvaluationEnvironmentMode::Reuse => {
            evaluate_in(step, Some(task_step), &prepared, result, Some(&env.session)).await
        }
        EvaluationEnvironmentMode::NoEnvironment => {
            evaluate_in(step, Some(task_step), &prepared, result, None).await
        }
        // As Harbor's separate verifier of a step: the step's artifacts, collected from the
        // task environment (which stays open for the next step), are what a fresh
        // evaluation environment sees.
        EvaluationEnvironmentMode::Fresh => {
            evaluate_step_fresh(step, task_step, &prepared, result, &step_dir).await
        }
    };
    Ran {
        evaluated: evaluated.returned,
        cancelled: evaluated.cancelled,
        result: evaluated.result,
    }
}

/// What the attempt's result records of a finished step.
fn record(task_step: &TaskStep, ran: &Ran, started: SystemTime, took: Duration) -> StepResult {
    let result = &ran.result;
    StepResult {
        name: task_step.name.clone(),
        status: result.status,
        evaluated: ran.evaluated,
        metrics: if ran.evaluated {
            result.metrics.clone()
        } else {
            Default::default()
        },
        issues: result.issues.clone(),
        extra: result.extra.clone(),
        started_at: Some(rfc3339(started)),
        finished_at: Some(rfc3339(SystemTime::now())),
        duration_seconds: took.as_secs_f64(),
        stop_reason: None,
        resumed: false,
    }
}

/// The benchmark's verdict over the steps so far (its failure is an evaluation error, and the
/// SDK's default verdict is used).
async fn judge(step: &Step<'_>, records: &[StepResult], combined: &mut RunResult) -> StepScore {
    let rc = step.rc;
    let benchmark = &rc.planner.benchmark().benchmark;
    match benchmark
        .score_steps(&rc.ctx, step.task, records, &rc.resolved)
        .await
    {
        Ok(score) => score,
        Err(e) => {
            combined.push_issue(codes::EVALUATE_FAILED.error(IssuePhase::Evaluate, e.message));
            StepScore::last_evaluated(records)
        }
    }
}

/// Adds a step's result to the attempt's: its issues, its trajectory steps (renumbered), its
/// telemetry (later steps win), artifacts and final answer.
fn absorb(combined: &mut RunResult, result: &RunResult) {
    for issue in &result.issues {
        combined.push_issue(issue.clone());
    }
    if let Some(trajectory) = &result.trajectory {
        let all = combined.trajectory.get_or_insert_with(|| Trajectory {
            started_at: trajectory.started_at.clone(),
            ..Trajectory::default()
        });
        for mut entry in trajectory.steps.iter().cloned() {
            entry.step_id = all.steps.len() as u64 + 1;
            all.steps.push(entry);
        }
        if trajectory.finished_at.is_some() {
            all.finished_at = trajectory.finished_at.clone();
        }
    }
    for (key, value) in &result.telemetry {
        if key != "model_usage" {
            combined.telemetry.insert(key.clone(), value.clone());
        }
    }
    for (key, value) in &result.artifacts {
        combined
            .artifacts
            .entry(key.clone())
            .or_insert_with(|| value.clone());
    }
    if result.final_answer.is_some() {
        combined.final_answer = result.final_answer.clone();
    }
}

/// Writes `attempt-N/steps/<name>/result.json`: the step's full result and its record.
fn persist(
    step: &Step<'_>,
    writer: &TaskWriter,
    task_step: &TaskStep,
    result: &RunResult,
    records: &[StepResult],
    combined: &mut RunResult,
) {
    let mut payload = attempt_payload(result, 0);
    if let Some(record) = records.last() {
        payload["step"] =
            agentcompass_redact::redact_value(&serde_json::to_value(record).unwrap_or(Value::Null));
    }
    if let Err(e) = writer.write_step_result(step.attempt, &task_step.name, &payload) {
        combined.push_issue(codes::CHECKPOINT_FAILED.warning(IssuePhase::Collect, e.to_string()));
    }
    crate::runtime::atif::write(
        step.rc,
        writer,
        step.attempt,
        Some(&task_step.name),
        &payload,
    );
}

/// Back to the baseline network policy after a step's evaluation switched away from it (the
/// next step's run phase starts from the baseline).
async fn leave_evaluation(
    step: &Step<'_>,
    env: &OpenEnv,
) -> Result<(), agentcompass_plugin_api::contracts::ExecutionIssue> {
    let plan = step.plan;
    let baseline = plan.baseline_network_policy.clone().unwrap_or_default();
    let evaluation = plan.evaluation_network_policy.as_ref();
    if plan.evaluation_environment_mode != EvaluationEnvironmentMode::Reuse
        || evaluation.is_none_or(|p| *p == baseline)
    {
        return Ok(());
    }
    env.session
        .set_network_policy(&baseline)
        .await
        .map_err(|e| codes::NETWORK_POLICY_FAILED.fatal(IssuePhase::Run, e.message))
}

/// Snapshots the working directory after `task_step` and writes the step checkpoint, so an
/// interrupted run resumes at the next step. A failure is a warning (the attempt then cannot
/// be resumed past the steps checkpointed before).
async fn checkpoint(
    step: &Step<'_>,
    env: &OpenEnv,
    writer: &TaskWriter,
    task_step: &TaskStep,
    records: &[StepResult],
    combined: &mut RunResult,
) {
    let warn = |combined: &mut RunResult, message: String| {
        combined.push_issue(codes::CHECKPOINT_FAILED.warning(IssuePhase::Collect, message));
    };
    let Some(workdir) = shared_workdir(step.plan, env) else {
        warn(
            combined,
            "no working directory to snapshot: the steps cannot be resumed".into(),
        );
        return;
    };
    let target = writer
        .step_dir(step.attempt, &task_step.name)
        .join(STEP_SNAPSHOT_DIR);
    let limit = Duration::from_secs_f64(step.plan.artifact_limits.timeout_seconds.max(1.0));
    let download = tokio::time::timeout(limit, env.session.download_dir(&workdir, &target)).await;
    match download {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return warn(combined, format!("snapshot of {workdir}: {}", e.message)),
        Err(_) => return warn(combined, format!("snapshot of {workdir} timed out")),
    }
    let mut partial = combined.clone();
    step.rc.record_usage(&mut partial);
    let partial = serde_json::to_value(&partial).unwrap_or(Value::Null);
    let finished = serde_json::to_value(records).unwrap_or(Value::Null);
    let checkpoint = StepsCheckpoint {
        attempt: step.attempt,
        finished: agentcompass_redact::redact_value(&finished),
        partial: agentcompass_redact::redact_value(&partial),
        reuse_key: step.rc.reuse_key.clone(),
        schema_version: STEPS_CHECKPOINT_SCHEMA.to_string(),
        steps: step.task.steps.iter().map(|s| s.name.clone()).collect(),
        task_id: step.task.task_id.clone(),
        workdir: workdir.to_string(),
    };
    let checkpoint = serde_json::to_value(checkpoint).unwrap_or(Value::Null);
    if let Err(e) = writer.write_steps_checkpoint(step.attempt, &checkpoint) {
        warn(combined, e.to_string());
    }
}
