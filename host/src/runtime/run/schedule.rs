//! Scheduling a request's tasks: a global attempt slot is taken before a task is spawned, so
//! at most `task_concurrency` tasks (of every request) are in flight, and pending tasks stay
//! in the benchmark's stream (they cost nothing) until a slot is free.

use std::collections::HashSet;
use std::sync::Arc;

use crate::issue_codes as codes;
use crate::runtime::context::RequestContext;
use crate::runtime::shared::{Scheduled, Shared};
use crate::runtime::task::run_task;
use crate::runtime::task_scope::{TaskCancel, TaskScope};
use crate::runtime::task_source::TaskSource;

/// Runs every task of `tasks` not in `reused`, until the stream ends or the run is cancelled.
pub(super) async fn run_all(
    shared: &Shared,
    rc: &Arc<RequestContext>,
    mut tasks: TaskSource,
    reused: &HashSet<String>,
) -> Scheduled {
    // Every plugin call of this run sends the same resolved request: serialise it once.
    let _pinned = agentcompass_plugin_api::abi::request_json::pin_request_json(&rc.resolved)
        .map_err(|e| tracing::debug!("request not pinned: {e}"))
        .ok();
    let total = tasks.total();
    let mut running = tokio::task::JoinSet::new();
    let mut scheduled = Scheduled::default();
    for index in 0.. {
        if shared.cancel.is_cancelled() {
            break;
        }
        let task = match tasks.next_task() {
            Ok(Some(task)) => task,
            Ok(None) => break,
            Err(e) => {
                scheduled.load_error = Some(e.to_string());
                break;
            }
        };
        rc.datasets.note(&task);
        if reused.contains(&task.task_id) {
            continue;
        }
        if let Some(trip) = rc.breaker.trip() {
            rc.record_skipped(&task, trip.reason(), index, total);
            continue;
        }
        if rc.live.take_skip(&task.task_id) {
            rc.record_skipped(&task, codes::CANCELLED_BY_USER.code, index, total);
            continue;
        }
        for warning in &task.load_warnings {
            tracing::warn!("task {}: {warning}", task.task_id);
        }
        let slot = tokio::select! {
            slot = shared.limits.attempt_slot() => slot,
            _ = shared.cancel.cancelled() => break,
        };
        // The breaker may have tripped while this task waited for its slot.
        if let Some(trip) = rc.breaker.trip() {
            drop(slot);
            rc.record_skipped(&task, trip.reason(), index, total);
            continue;
        }
        // `ctl cancel` may have named it while it waited.
        if rc.live.take_skip(&task.task_id) {
            drop(slot);
            rc.record_skipped(&task, codes::CANCELLED_BY_USER.code, index, total);
            continue;
        }
        while let Some(done) = running.try_join_next() {
            scheduled.tally(done);
        }
        let rc = rc.clone();
        let pause = shared.limits.pause_gate().clone();
        let task = Box::new(task);
        running.spawn(async move {
            // The task's own cancellation (`ctl cancel`), cancelled with the request's.
            let cancel = TaskCancel::child_of(&rc.cancel);
            let id = task.task_id.clone();
            rc.live.started(&id, cancel.token().clone());
            let scope = TaskScope {
                cancel: cancel.token().clone(),
                pause,
            };
            let end = scope.run(run_task(&rc, task, index, total)).await;
            rc.live.ended(&id);
            drop(slot);
            end
        });
    }
    while let Some(done) = running.join_next().await {
        scheduled.tally(done);
    }
    scheduled
}
