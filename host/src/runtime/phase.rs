//! Running one phase of an attempt under its watchdog and the run's cancellation.

use std::future::Future;
use std::time::Duration;

use agentcompass_plugin_api::Error;

use crate::host_services::CancelToken;
use crate::runtime::task_scope::TaskScope;

/// How a phase ended.
#[derive(Debug)]
pub enum PhaseOutcome<T> {
    /// It returned a value.
    Done(T),
    /// It returned an error.
    Failed(Error),
    /// Its watchdog fired (the phase future was dropped, which cancels it).
    TimedOut(Duration),
    /// The run was cancelled.
    Cancelled,
}

/// Seconds → a watchdog duration (`None`, non-positive or NaN = no watchdog; huge values are
/// clamped, see [`agentcompass_plugin_api::wait`]).
pub fn watchdog(seconds: Option<f64>) -> Option<Duration> {
    seconds
        .filter(|s| *s > 0.0)
        .map(agentcompass_plugin_api::wait::duration_from_seconds)
}

/// Runs `future` until it finishes, its watchdog fires, or `cancel` is triggered. Inside a
/// task's scope (`TaskScope`), the task's own cancellation ends it too, and the watchdog
/// does not run while the run is paused.
pub async fn run_phase<T, F>(
    cancel: &CancelToken,
    timeout: Option<Duration>,
    future: F,
) -> PhaseOutcome<T>
where
    F: Future<Output = Result<T, Error>>,
{
    let scope = TaskScope::current();
    let task_cancel = scope.as_ref().map(|s| s.cancel.clone());
    let cancelled =
        || cancel.is_cancelled() || task_cancel.as_ref().is_some_and(|c| c.is_cancelled());
    if cancelled() {
        return PhaseOutcome::Cancelled;
    }
    let work = async {
        let done = |output: Result<T, Error>| match output {
            Ok(value) => PhaseOutcome::Done(value),
            Err(err) => PhaseOutcome::Failed(err),
        };
        match (timeout, &scope) {
            (Some(limit), Some(scope)) => match scope.pause.timeout(limit, future).await {
                Some(output) => done(output),
                None => PhaseOutcome::TimedOut(limit),
            },
            (Some(limit), None) => match tokio::time::timeout(limit, future).await {
                Ok(output) => done(output),
                Err(_) => PhaseOutcome::TimedOut(limit),
            },
            (None, _) => done(future.await),
        }
    };
    let task_cancelled = async {
        match &task_cancel {
            Some(token) => token.cancelled().await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        outcome = work => outcome,
        _ = cancel.cancelled() => PhaseOutcome::Cancelled,
        _ = task_cancelled => PhaseOutcome::Cancelled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn watchdogs_and_cancellation_end_phases() {
        let cancel = CancelToken::new();
        let slow = async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok::<_, Error>(1)
        };
        let out = run_phase(&cancel, Some(Duration::from_millis(20)), slow).await;
        assert!(matches!(out, PhaseOutcome::TimedOut(_)));
        let quick = async { Ok::<_, Error>(2) };
        assert!(matches!(
            run_phase(&cancel, None, quick).await,
            PhaseOutcome::Done(2)
        ));
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            trigger.cancel();
        });
        let slow = async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok::<_, Error>(3)
        };
        assert!(matches!(
            run_phase(&cancel, None, slow).await,
            PhaseOutcome::Cancelled
        ));
        assert_eq!(watchdog(Some(0.0)), None);
        assert_eq!(watchdog(Some(1.5)), Some(Duration::from_millis(1500)));
    }
}
