//! While a request's tasks run, its model endpoint's adaptive limit is watched: each change
//! that matters (the limit moved, calls wait, a rate limit was answered) is a `model_limit`
//! progress event, which also puts the limit into `progress.json` and on the terminal line. A
//! run the endpoint never rate-limits records none.

use std::sync::Arc;
use std::time::Duration;

use agentcompass_gateway::limit::LimitSnapshot;

use crate::progress::ProgressEvent;
use crate::runtime::context::RequestContext;

/// How often the limit is looked at.
const PERIOD: Duration = Duration::from_millis(250);

/// What of a snapshot makes a new event: not `in_flight` (it moves with every call) nor
/// `waited_seconds` (it moves while calls wait, and `waiting` says so).
fn key(limit: &LimitSnapshot) -> (u32, u32, u32, u64) {
    (limit.limit, limit.max, limit.waiting, limit.rate_limited)
}

/// Watches `rc`'s endpoint until dropped (the caller aborts it when the tasks are done).
pub(super) async fn watch(rc: Arc<RequestContext>) {
    if !rc.model.is_configured() {
        return;
    }
    let mut last = None;
    let mut ticker = tokio::time::interval(PERIOD);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        record(&rc, &mut last);
    }
}

/// Emits the limit when it changed since `last` (and is not the untouched start).
pub(super) fn record(rc: &RequestContext, last: &mut Option<(u32, u32, u32, u64)>) {
    if !rc.model.is_configured() {
        return;
    }
    let limit = rc.model.limit();
    let now = key(&limit);
    let untouched = limit.rate_limited == 0 && limit.waiting == 0 && limit.limit == limit.max;
    if *last == Some(now) || (last.is_none() && untouched) {
        return;
    }
    *last = Some(now);
    rc.emit(ProgressEvent::ModelLimit {
        endpoint: rc.model.url(),
        limit,
    });
}
