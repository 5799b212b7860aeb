//! Running one phase of an attempt under its watchdog and the run's cancellation.

use std::future::Future;
use std::time::Duration;

use agentcompass_plugin_api::Error;

use crate::host_services::CancelToken;

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

/// Runs `future` until it finishes, its watchdog fires, or `cancel` is triggered.
pub async fn run_phase<T, F>(
    cancel: &CancelToken,
    timeout: Option<Duration>,
    future: F,
) -> PhaseOutcome<T>
where
    F: Future<Output = Result<T, Error>>,
{
    if cancel.is_cancelled() {
        return PhaseOutcome::Cancelled;
    }
    let work = async {
        match timeout {
            Some(limit) => match tokio::time::timeout(limit, future).await {
                Ok(Ok(value)) => PhaseOutcome::Done(value),
                Ok(Err(err)) => PhaseOutcome::Failed(err),
                Err(_) => PhaseOutcome::TimedOut(limit),
            },
            None => match future.await {
                Ok(value) => PhaseOutcome::Done(value),
                Err(err) => PhaseOutcome::Failed(err),
            },
        }
    };
    tokio::select! {
        outcome = work => outcome,
        _ = cancel.cancelled() => PhaseOutcome::Cancelled,
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
