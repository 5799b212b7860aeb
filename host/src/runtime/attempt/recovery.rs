//! Evaluation-only recovery: the agent run of an attempt finished in an interrupted earlier
//! run and left an evaluation checkpoint; its prepared task, run result and artifacts are
//! restored and only the evaluation runs (none or fresh mode). A multi-step attempt's step
//! checkpoint resumes its remaining steps instead (see `steps`).

use std::path::Path;

use agentcompass_plugin_api::contracts::{
    EvaluationEnvironmentMode, ExecutionPlan, PreparedTask, RunResult, TaskSpec,
};
use agentcompass_results::artifacts as manifest;
use agentcompass_results::fsutil::copy_file_atomic;
use agentcompass_results::store::{copy_tree, TaskWriter};
use agentcompass_schema::checkpoint::Checkpoint;
use serde_json::Value;

use super::evaluate::{evaluate, evaluate_fresh};
use super::resume::ResumeError;
use super::stage::Step;
use super::PhysicalOutcome;
use crate::progress::TaskPhase;
use crate::runtime::artifacts;
use crate::runtime::blocking::blocking;
use crate::runtime::context::RequestContext;

/// Removes the artifacts and manifest of `attempt_dir` (best effort: a leftover is refused by
/// the next verification anyway).
fn clear_artifacts(attempt_dir: &Path) {
    let (root, manifest) = (
        attempt_dir.join(manifest::ARTIFACTS_DIR),
        attempt_dir.join(manifest::MANIFEST_FILE),
    );
    if let Err((_, message)) = artifacts::reset_destination(&root, &manifest) {
        tracing::warn!("{message}");
    }
}

/// Copies the artifacts (and their manifest) of the interrupted attempt `source` into
/// `target` and verifies the copy against the manifest; on any failure the copies are
/// removed and the reason returned.
fn recover_artifacts(source: &Path, target: &Path) -> Result<(), ResumeError> {
    let copy = || -> Result<(), ResumeError> {
        let from = source.join(manifest::ARTIFACTS_DIR);
        if from.exists() {
            copy_tree(
                &from,
                &target.join(manifest::ARTIFACTS_DIR),
                &mut |_| Ok(()),
            )?;
        }
        let manifest = source.join(manifest::MANIFEST_FILE);
        if manifest.exists() {
            copy_file_atomic(&manifest, &target.join(manifest::MANIFEST_FILE)).map_err(
                |cause| ResumeError::Io {
                    op: "copy",
                    path: manifest.clone(),
                    cause,
                },
            )?;
        }
        manifest::verify_attempt_dir(target)?;
        Ok(())
    };
    // Check the source first (cheap refusal), then the copy (what evaluation will use).
    manifest::verify_attempt_dir(source)?;
    std::fs::create_dir_all(target).map_err(|cause| ResumeError::Io {
        op: "create",
        path: target.to_path_buf(),
        cause,
    })?;
    clear_artifacts(target);
    copy().inspect_err(|_| clear_artifacts(target))
}

/// Resumes the evaluation of `task`'s attempt `attempt` from `checkpoint` (found in
/// `source_attempt_dir` of the reuse source); `None` when it cannot be resumed (the attempt
/// then reruns).
pub async fn recover_evaluation(
    rc: &RequestContext,
    task: &TaskSpec,
    plan: &ExecutionPlan,
    attempt: u32,
    writer: &TaskWriter,
    checkpoint: Checkpoint,
    source_attempt_dir: &Path,
) -> Option<PhysicalOutcome> {
    let checkpoint = match checkpoint {
        Checkpoint::Steps(steps) => {
            return super::steps::resume_steps(
                rc,
                task,
                plan,
                attempt,
                writer,
                &steps,
                source_attempt_dir,
            )
            .await;
        }
        Checkpoint::Evaluation(evaluation) => evaluation,
    };
    let prepared: PreparedTask = checkpoint.prepared.clone()?;
    let result: RunResult = checkpoint.result()?;
    rc.phase(task, attempt, TaskPhase::RecoverEvaluation);
    if let Err(reason) =
        blocking(|| recover_artifacts(source_attempt_dir, &writer.attempt_dir(attempt)))
    {
        tracing::warn!(
            "not resuming the evaluation of task {} attempt {attempt}; rerunning it: {reason}",
            task.task_id
        );
        return None;
    }
    let record = serde_json::to_value(&*checkpoint).unwrap_or(Value::Null);
    if writer.write_checkpoint(attempt, &record).is_err() {
        return None;
    }
    let scope = rc.attempt_scope_resuming(&result);
    let step = Step::new(&scope, task, plan, attempt);
    let (mut result, cancelled) = match plan.evaluation_environment_mode {
        EvaluationEnvironmentMode::Fresh => {
            evaluate_fresh(&step, &prepared, result, &writer.attempt_dir(attempt)).await
        }
        _ => evaluate(&step, &prepared, result, None).await,
    };
    scope.record_usage(&mut result);
    Some(PhysicalOutcome { result, cancelled })
}
