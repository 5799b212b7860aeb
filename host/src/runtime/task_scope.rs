//! What the phases of one running task share without being handed it: the task's own
//! cancellation (cancelled with its request, or alone by `ctl cancel`) and the run's pause
//! (its watchdogs do not run while the run is paused). Set by the scheduler around the task
//! (a tokio task-local); `run_phase`, the retry wait and the attempt's host services read it.

use std::future::Future;
use std::sync::Arc;

use agentcompass_gateway::pause::PauseGate;

use crate::host_services::CancelToken;

tokio::task_local! {
    static TASK: TaskScope;
}

/// One running task's cancellation and the run's pause.
#[derive(Clone)]
pub struct TaskScope {
    /// Cancelled with the request, or on its own.
    pub cancel: CancelToken,
    /// The run's pause.
    pub pause: Arc<PauseGate>,
}

impl TaskScope {
    /// The scope of the task being polled, if it runs in one.
    pub fn current() -> Option<TaskScope> {
        TASK.try_with(TaskScope::clone).ok()
    }

    /// Runs `future` (one task) in this scope.
    pub async fn run<F: Future>(self, future: F) -> F::Output {
        TASK.scope(self, future).await
    }
}

/// A task's own cancellation token, cancelled when `parent` (its request's) is; dropping it
/// stops the forwarding.
pub struct TaskCancel {
    token: CancelToken,
    forward: tokio::task::JoinHandle<()>,
}

impl TaskCancel {
    /// A token cancelled with `parent`, or alone.
    pub fn child_of(parent: &CancelToken) -> TaskCancel {
        let token = CancelToken::new();
        let (parent, forwarded) = (parent.clone(), token.clone());
        let forward = tokio::spawn(async move {
            tokio::select! {
                () = parent.cancelled() => forwarded.cancel(),
                () = forwarded.cancelled() => {}
            }
        });
        TaskCancel { token, forward }
    }

    /// The token.
    pub fn token(&self) -> &CancelToken {
        &self.token
    }
}

impl Drop for TaskCancel {
    fn drop(&mut self) {
        self.forward.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_task_is_cancelled_with_its_request_or_alone() {
        let request = CancelToken::new();
        let (one, two) = (
            TaskCancel::child_of(&request),
            TaskCancel::child_of(&request),
        );
        one.token().cancel();
        assert!(!request.is_cancelled() && !two.token().is_cancelled());
        request.cancel();
        two.token().cancelled().await;
        let scope = TaskScope {
            cancel: two.token().clone(),
            pause: Arc::new(PauseGate::new()),
        };
        assert!(TaskScope::current().is_none());
        let inside = scope
            .run(async { TaskScope::current().map(|s| s.cancel.is_cancelled()) })
            .await;
        assert_eq!(inside, Some(true));
    }
}
