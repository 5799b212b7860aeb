//! Test-only failpoints: a task whose id is `panic-at-<phase>` panics the host when its
//! attempt enters that phase (`RequestContext::phase_with`), so a test can prove that a host
//! panic in any lifecycle stage still publishes the task. Compiled into tests only.

use crate::progress::TaskPhase;

/// The task id that panics the host at `phase`.
pub(crate) fn task_id_for(phase: TaskPhase) -> String {
    format!("panic-at-{}", phase.as_str())
}

/// Panics when `task_id` asks for a panic at `phase`.
pub(crate) fn hit(phase: TaskPhase, task_id: &str) {
    if task_id == task_id_for(phase) {
        panic!("failpoint: injected host panic at {}", phase.as_str());
    }
}
