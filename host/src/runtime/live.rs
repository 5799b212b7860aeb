//! What a running request keeps for its live control (`ctl`): the running tasks' own
//! cancellation tokens, the tasks to skip, the tasks the user cancelled, and the control
//! actions taken while it ran (`provenance.control`). A leaf: `control` fills it, the
//! scheduler and `finish` read it.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde_json::Value;

use crate::host_services::CancelToken;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The running tasks of one request, and the tasks `ctl cancel` asked to drop.
#[derive(Default)]
pub struct LiveTasks {
    /// The control actions taken while the request ran, in order.
    actions: Mutex<Vec<Value>>,
    /// Running tasks' own cancellation tokens.
    running: Mutex<HashMap<String, CancelToken>>,
    /// Tasks to skip when the scheduler reaches them.
    to_skip: Mutex<HashSet<String>>,
    /// Running tasks cancelled by the user.
    cancelled: Mutex<HashSet<String>>,
}

impl LiveTasks {
    /// `task` started, cancelled by `token`.
    pub fn started(&self, task: &str, token: CancelToken) {
        lock(&self.running).insert(task.to_string(), token);
    }

    /// `task` ended.
    pub fn ended(&self, task: &str) {
        lock(&self.running).remove(task);
    }

    /// Whether the scheduler must skip `task` (asked once).
    pub fn take_skip(&self, task: &str) -> bool {
        lock(&self.to_skip).remove(task)
    }

    /// Whether the user cancelled the running `task`.
    pub fn cancelled_by_user(&self, task: &str) -> bool {
        lock(&self.cancelled).contains(task)
    }

    /// Records a control action.
    pub fn record(&self, action: Value) {
        lock(&self.actions).push(action);
    }

    /// The control actions taken so far (`provenance.control`).
    pub fn actions(&self) -> Vec<Value> {
        lock(&self.actions).clone()
    }

    /// Cancels `task`: `true` when it was running, else it is skipped when reached.
    pub fn cancel(&self, task: &str) -> bool {
        if let Some(token) = lock(&self.running).get(task) {
            lock(&self.cancelled).insert(task.to_string());
            token.cancel();
            return true;
        }
        lock(&self.to_skip).insert(task.to_string());
        false
    }
}
