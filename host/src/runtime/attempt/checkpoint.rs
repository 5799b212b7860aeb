//! The evaluation checkpoint of an attempt: what a rerun needs to score the attempt without
//! running the agent again (the prepared task and the redacted run result).

use agentcompass_plugin_api::contracts::{ExecutionIssue, IssuePhase, PreparedTask, RunResult};
use agentcompass_results::store::TaskWriter;
use agentcompass_schema::checkpoint::{EvaluationCheckpoint, CHECKPOINT_SCHEMA};
use serde_json::Value;

use super::stage::Step;
use crate::issue_codes as codes;
use crate::progress::TaskPhase;

/// An attempt's evaluation checkpoint: the prepared task and the (redacted) run result.
fn checkpoint_json(step: &Step<'_>, prepared: &Option<PreparedTask>, result: &RunResult) -> Value {
    let run_result = serde_json::to_value(result).unwrap_or(Value::Null);
    let checkpoint = EvaluationCheckpoint {
        attempt: step.attempt,
        evaluation_environment_mode: step.plan.evaluation_environment_mode,
        evaluation_network_policy: step.plan.evaluation_network_policy.clone(),
        prepared: prepared.clone(),
        reuse_key: step.rc.reuse_key.clone(),
        run_result: agentcompass_redact::redact_value(&run_result),
        schema_version: CHECKPOINT_SCHEMA.to_string(),
        task_id: step.task.task_id.clone(),
    };
    serde_json::to_value(checkpoint).unwrap_or(Value::Null)
}

/// Writes an attempt's evaluation checkpoint; a failure becomes a warning issue.
pub(super) fn save(
    step: &Step<'_>,
    writer: &TaskWriter,
    prepared: &Option<PreparedTask>,
    result: &RunResult,
) -> Option<ExecutionIssue> {
    writer
        .write_checkpoint(step.attempt, &checkpoint_json(step, prepared, result))
        .err()
        .map(|e| codes::CHECKPOINT_FAILED.warning(IssuePhase::Collect, e.to_string()))
}

/// Writes the checkpoint now, announcing the phase.
pub(super) fn save_now(
    step: &Step<'_>,
    writer: &TaskWriter,
    prepared: &Option<PreparedTask>,
    result: &mut RunResult,
) {
    step.phase(TaskPhase::SaveEvaluationCheckpoint);
    if let Some(issue) = save(step, writer, prepared, result) {
        result.push_issue(issue);
    }
}
