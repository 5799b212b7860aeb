//! Resuming a multi-step attempt an interrupted run left: its finished steps are copied, a
//! new environment gets the last snapshot of the working directory, the remaining steps run.

use std::path::Path;

use agentcompass_plugin_api::contracts::{
    EnvironmentRole, ExecRequest, ExecutionPlan, RunResult, StepResult, TaskSpec,
};
use agentcompass_results::naming::sanitize_component;
use agentcompass_results::store::{copy_tree, TaskWriter, STEPS_DIR, STEP_SNAPSHOT_DIR};
use agentcompass_schema::checkpoint::StepsCheckpoint;

use super::{run_steps, Done};
use crate::progress::TaskPhase;
use crate::runtime::attempt::env::{close_environment, open_environment, OpenEnv};
use crate::runtime::attempt::resume::ResumeError;
use crate::runtime::attempt::stage::Step;
use crate::runtime::attempt::PhysicalOutcome;
use crate::runtime::blocking::blocking;
use crate::runtime::context::RequestContext;

/// The finished steps of `checkpoint` when they can be resumed: a prefix of the task's steps
/// that did not stop, whose last snapshot exists in `source_attempt_dir`.
fn resumable(
    task: &TaskSpec,
    plan: &ExecutionPlan,
    checkpoint: &StepsCheckpoint,
    source_attempt_dir: &Path,
) -> Option<(Vec<StepResult>, RunResult, String)> {
    let (records, partial) = checkpoint.progress()?;
    let workdir = checkpoint.workdir.clone();
    let names: Vec<&str> = task.steps.iter().map(|s| s.name.as_str()).collect();
    let prefix = !records.is_empty()
        && records.len() < names.len()
        && records.iter().zip(&names).all(|(r, n)| r.name == *n)
        && checkpoint.steps == names;
    let last = records.last()?;
    let same_workdir = plan
        .environment
        .setup
        .workdir
        .as_deref()
        .is_none_or(|w| w == workdir);
    let snapshot = source_attempt_dir
        .join(STEPS_DIR)
        .join(sanitize_component(&last.name))
        .join(STEP_SNAPSHOT_DIR);
    (prefix && same_workdir && last.stop_reason.is_none() && snapshot.is_dir())
        .then_some((records, partial, workdir))
}

/// Copies the finished steps of the interrupted attempt into this run's attempt directory.
fn copy_finished(
    writer: &TaskWriter,
    attempt: u32,
    source_attempt_dir: &Path,
    records: &[StepResult],
    checkpoint: &StepsCheckpoint,
) -> Result<(), ResumeError> {
    writer.clear_steps(attempt)?;
    for record in records {
        let name = sanitize_component(&record.name);
        let from = source_attempt_dir.join(STEPS_DIR).join(&name);
        copy_tree(&from, &writer.step_dir(attempt, &record.name), &mut |_| {
            Ok(())
        })?;
    }
    writer.write_steps_checkpoint(attempt, &serde_json::to_value(checkpoint)?)?;
    Ok(())
}

/// Resumes `task`'s multi-step attempt `attempt` from the step checkpoint of an interrupted
/// run (in `source_attempt_dir`): the finished steps are copied, a new environment gets the
/// last snapshot of the working directory and the remaining steps run. `None` when it cannot
/// be resumed (the attempt then runs from its first step).
pub(in crate::runtime::attempt) async fn resume_steps(
    rc: &RequestContext,
    task: &TaskSpec,
    plan: &ExecutionPlan,
    attempt: u32,
    writer: &TaskWriter,
    checkpoint: &StepsCheckpoint,
    source_attempt_dir: &Path,
) -> Option<PhysicalOutcome> {
    let (mut records, partial, workdir) = resumable(task, plan, checkpoint, source_attempt_dir)?;
    rc.phase(task, attempt, TaskPhase::RestoreSteps);
    if let Err(reason) =
        blocking(|| copy_finished(writer, attempt, source_attempt_dir, &records, checkpoint))
    {
        tracing::warn!(
            "not resuming the steps of task {} attempt {attempt}; rerunning them: {reason}",
            task.task_id
        );
        return None;
    }
    let scope = rc.attempt_scope_resuming(&partial);
    let step = Step::new(&scope, task, plan, attempt);
    let _provider_slot = scope.limits.provider_slot(&plan.environment.id).await;
    let env = open_environment(&step, EnvironmentRole::Task, &writer.attempt_dir(attempt))
        .await
        .ok()?;
    let last = records.last()?.name.clone();
    let snapshot = writer.step_dir(attempt, &last).join(STEP_SNAPSHOT_DIR);
    if let Err(message) = restore(&env, &snapshot, &workdir).await {
        tracing::warn!(
            "not resuming the steps of task {} attempt {attempt}; rerunning them: {message}",
            task.task_id
        );
        let mut scratch = RunResult::new(task.task_id.clone());
        close_environment(&scope, env, &mut scratch).await;
        return None;
    }
    for record in &mut records {
        record.resumed = true;
    }
    let done = Done {
        records,
        partial: Some(partial),
    };
    let mut outcome = run_steps(&step, env, writer, done).await;
    scope.record_usage(&mut outcome.result);
    Some(outcome)
}

/// Replaces the working directory's contents with `snapshot`.
async fn restore(env: &OpenEnv, snapshot: &Path, workdir: &str) -> Result<(), ResumeError> {
    // The directory is an argument of the script, never spliced into its text.
    let clear = ExecRequest::argv([
        "sh",
        "-c",
        r#"mkdir -p "$1" && find "$1" -mindepth 1 -delete"#,
        "sh",
        workdir,
    ])
    .timeout(300.0);
    let out = env
        .session
        .exec(clear)
        .await
        .map_err(|e| ResumeError::Environment(e.message))?;
    if !out.success() {
        return Err(ResumeError::Clear {
            workdir: workdir.to_string(),
            returncode: out.returncode,
            stderr: out.stderr.trim().to_string(),
        });
    }
    env.session
        .upload_dir(snapshot, workdir)
        .await
        .map_err(|e| ResumeError::Environment(e.message))
}
