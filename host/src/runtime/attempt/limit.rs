//! `execution.limits` in the run phase: the model gateway refuses a call past a token, cost or
//! call limit (see [`agentcompass_gateway::UsageMeter`]); here the agent is stopped when it does not
//! end on that refusal by itself, `working_seconds` is timed, and a breach becomes the
//! attempt's `limit_exceeded` issue (replacing the harness's report of the refused call).

use std::time::Duration;

use agentcompass_plugin_api::contracts::{IssuePhase, RunResult};
use serde_json::json;

use crate::issue_codes as codes;
use agentcompass_gateway::{Limit, LimitBreach, UsageMeter, LIMIT_REFUSAL};

/// How long an agent whose model call was refused has to end by itself before it is
/// stopped (an agent CLI that retries a refused call would otherwise run on).
const REFUSAL_GRACE: Duration = Duration::from_secs(5);

/// Resolves when the run phase must be stopped for a limit: a breach of the meter (after
/// [`REFUSAL_GRACE`]) or the run's `working_seconds` spent outside model calls (the meter
/// records that breach). Never resolves when no limit is reached.
pub(super) async fn limit_stop(usage: &UsageMeter) {
    let breached = async {
        usage.breached().await;
        tokio::time::sleep(REFUSAL_GRACE).await;
    };
    let working = async {
        match usage.limits().working_seconds {
            Some(limit) => working_clock(usage, limit).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        () = breached => {}
        () = working => {}
    }
}

/// Returns once `limit` seconds of wall time outside model calls have passed since it was
/// called, recording the breach.
async fn working_clock(usage: &UsageMeter, limit: f64) {
    let limit = agentcompass_plugin_api::wait::duration_from_seconds(limit);
    let started = tokio::time::Instant::now();
    let waited_before = usage.model_wait();
    loop {
        let waited = usage.model_wait().saturating_sub(waited_before);
        let worked = started.elapsed().saturating_sub(waited);
        if worked >= limit {
            usage.breach_with(
                Limit::WorkingSeconds,
                format!(
                    "execution.limits.working_seconds ({}) reached: {:.1} s worked outside {:.1} s of model calls",
                    limit.as_secs_f64(),
                    worked.as_secs_f64(),
                    waited.as_secs_f64()
                ),
            );
            return;
        }
        // Model waits only push the end later: sleeping the rest is never too long.
        tokio::time::sleep(limit - worked).await;
    }
}

/// The result of a run phase stopped for `breach`.
pub(super) fn stopped(
    task: &agentcompass_plugin_api::contracts::TaskSpec,
    breach: &LimitBreach,
) -> RunResult {
    let mut result = super::failed(task, limit_issue(breach));
    mark(&mut result, breach);
    result
}

/// Records `breach` on a result the harness returned: the harness's report of the refused
/// call goes, the `limit_exceeded` issue comes.
pub(super) fn apply(result: &mut RunResult, breach: &LimitBreach) {
    result.issues.retain(|i| !i.message.contains(LIMIT_REFUSAL));
    if !result
        .issues
        .iter()
        .any(|i| i.code == codes::LIMIT_EXCEEDED.code)
    {
        result.push_issue(limit_issue(breach));
    }
    mark(result, breach);
}

fn limit_issue(breach: &LimitBreach) -> agentcompass_plugin_api::contracts::ExecutionIssue {
    codes::LIMIT_EXCEEDED.error(
        IssuePhase::Run,
        format!("{}; the agent was stopped", breach.message),
    )
}

fn mark(result: &mut RunResult, breach: &LimitBreach) {
    result.telemetry.insert(
        "limit_exceeded".into(),
        json!({"limit": breach.limit.key(), "message": breach.message}),
    );
}
