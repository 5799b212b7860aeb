//! A run's pause (`ctl pause` / `ctl resume`): while it is paused no new task and no new
//! model call starts (calls already sent finish), and the time it spent paused is counted so
//! that watchdogs can leave it out.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// Whether a run is paused, and for how long it has been in all.
#[derive(Debug, Default)]
pub struct PauseGate {
    state: Mutex<PauseState>,
    resumed: Notify,
}

#[derive(Debug, Default)]
struct PauseState {
    /// Since when the run is paused (`None`: running).
    since: Option<Instant>,
    /// Time spent paused before the current pause.
    before: Duration,
}

impl PauseGate {
    /// A gate that is open.
    pub fn new() -> Self {
        PauseGate::default()
    }

    fn lock(&self) -> MutexGuard<'_, PauseState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Pauses; `false` when it already was.
    pub fn pause(&self) -> bool {
        let mut state = self.lock();
        if state.since.is_some() {
            return false;
        }
        state.since = Some(Instant::now());
        true
    }

    /// Resumes; `false` when it was not paused.
    pub fn resume(&self) -> bool {
        let mut state = self.lock();
        let Some(since) = state.since.take() else {
            return false;
        };
        state.before += since.elapsed();
        drop(state);
        self.resumed.notify_waiters();
        true
    }

    /// Whether the run is paused now.
    pub fn is_paused(&self) -> bool {
        self.lock().since.is_some()
    }

    /// The time spent paused so far, the current pause included. Watchdogs measure a phase's
    /// pause as the difference of two readings.
    pub fn paused_total(&self) -> Duration {
        let state = self.lock();
        state.before + state.since.map_or(Duration::ZERO, |since| since.elapsed())
    }

    /// Returns at once when the gate is open, else when it opens.
    pub async fn wait_open(&self) {
        loop {
            let resumed = self.resumed.notified();
            tokio::pin!(resumed);
            resumed.as_mut().enable();
            if !self.is_paused() {
                return;
            }
            resumed.await;
        }
    }

    /// Runs `future` with a watchdog of `limit` that does not run while the gate is paused:
    /// `None` when it fired.
    pub async fn timeout<F: std::future::Future>(
        &self,
        limit: Duration,
        future: F,
    ) -> Option<F::Output> {
        tokio::pin!(future);
        let start = Instant::now();
        let paused_at_start = self.paused_total();
        loop {
            let paused = self.paused_total().saturating_sub(paused_at_start);
            let deadline = start + limit + paused;
            tokio::select! {
                output = &mut future => return Some(output),
                () = tokio::time::sleep_until(deadline) => {
                    if self.is_paused() {
                        // The watchdog stops with the run; it starts again on resume.
                        tokio::select! {
                            output = &mut future => return Some(output),
                            () = self.wait_open() => continue,
                        }
                    }
                    let paused = self.paused_total().saturating_sub(paused_at_start);
                    if Instant::now() >= start + limit + paused {
                        return None;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_paused_run_waits_and_its_watchdogs_stand_still() {
        let gate = std::sync::Arc::new(PauseGate::new());
        assert!(gate.pause() && !gate.pause());
        let waiter = {
            let gate = gate.clone();
            tokio::spawn(async move { gate.wait_open().await })
        };
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(!waiter.is_finished());
        assert!(gate.resume() && !gate.resume());
        waiter.await.unwrap();
        assert_eq!(gate.paused_total(), Duration::from_secs(5));
        // A 10 s watchdog over 14 s of work, 6 s of which paused: the work finishes.
        let pauser = {
            let gate = gate.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(2)).await;
                gate.pause();
                tokio::time::sleep(Duration::from_secs(6)).await;
                gate.resume();
            })
        };
        let work = tokio::time::sleep(Duration::from_secs(14));
        assert_eq!(gate.timeout(Duration::from_secs(10), work).await, Some(()));
        pauser.await.unwrap();
        // Without a pause the same watchdog fires.
        let work = tokio::time::sleep(Duration::from_secs(14));
        assert_eq!(gate.timeout(Duration::from_secs(10), work).await, None);
    }
}
