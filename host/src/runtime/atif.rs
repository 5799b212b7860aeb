//! Writing an attempt's (or a step's) ATIF trajectory next to its `result.json`, converted
//! from the record just written (`agentcompass_results::atif`). A trajectory that cannot be
//! written is a warning in the run's log: the attempt's result stands.

use agentcompass_results::atif::attempt_trajectory;
use agentcompass_results::store::TaskWriter;
use serde_json::Value;

use super::context::RequestContext;

/// Writes the ATIF document of attempt `attempt` (of its step `step`) from `payload`, the
/// record written as its `result.json`. A multi-step attempt's own record is skipped: its
/// steps have theirs (Harbor's `steps/<step>/agent/trajectory.json`).
pub(super) fn write(
    rc: &RequestContext,
    writer: &TaskWriter,
    attempt: u32,
    step: Option<&str>,
    payload: &Value,
) {
    if let (Some(otel), None) = (&rc.otel, step) {
        otel.attempt(&rc.atif_agent, writer, attempt, payload);
    }
    let multi_step = payload
        .pointer("/meta/benchmark/steps")
        .is_some_and(|s| s.as_array().is_some_and(|a| !a.is_empty()));
    if step.is_none() && multi_step {
        return;
    }
    let mut session = format!(
        "{}__{}__attempt-{attempt}",
        rc.store.run_id(),
        writer.dir_name()
    );
    if let Some(step) = step {
        session.push_str("__");
        session.push_str(step);
    }
    let Some(trajectory) = attempt_trajectory(payload, &rc.atif_agent, &session) else {
        return;
    };
    if let Err(e) = writer.write_trajectory(attempt, step, &trajectory) {
        tracing::warn!(
            "cannot write the ATIF trajectory of task {} attempt {attempt}: {e}",
            writer.task_id()
        );
    }
}
