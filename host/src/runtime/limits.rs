//! Shared limits: the global attempt slots (resizable and paused by `ctl`), per-provider
//! open-environment slots and the per-provider environment-open pacing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use agentcompass_gateway::pause::PauseGate;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use crate::request::ResolvedRuntimeOptions;

/// Paces environment opens of one provider to at most `qps` per second.
pub struct OpenPacer {
    interval: Duration,
    next: Mutex<Instant>,
}

impl OpenPacer {
    /// A pacer allowing `qps` opens per second (`qps` > 0).
    pub fn new(qps: f64) -> Self {
        OpenPacer {
            interval: Duration::from_secs_f64(1.0 / qps),
            next: Mutex::new(Instant::now()),
        }
    }

    /// Waits for this caller's slot (slots are reserved in call order).
    pub async fn wait(&self) {
        let slot = {
            let mut next = match self.next.lock() {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
            let now = Instant::now();
            let slot = (*next).max(now);
            *next = slot + self.interval;
            slot
        };
        tokio::time::sleep_until(slot).await;
    }
}

/// Every limit of one orchestration.
pub struct Limits {
    attempts: Arc<AttemptGate>,
    pause: Arc<PauseGate>,
    providers: HashMap<String, Arc<Semaphore>>,
    pacers: HashMap<String, OpenPacer>,
}

/// The global attempt slots: at most `limit` attempts run at once, and none starts while
/// the run is paused. `ctl concurrency N` changes `limit` for the attempts that start from
/// then on (running ones are not stopped).
struct AttemptGate {
    state: Mutex<GateState>,
    changed: Notify,
}

#[derive(Debug, Clone, Copy)]
struct GateState {
    limit: u32,
    in_use: u32,
}

/// One attempt's slot, given back when dropped.
pub struct AttemptSlot {
    gate: Arc<AttemptGate>,
}

impl Drop for AttemptSlot {
    fn drop(&mut self) {
        self.gate
            .update(|state| state.in_use = state.in_use.saturating_sub(1));
    }
}

impl AttemptGate {
    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn update(&self, change: impl FnOnce(&mut GateState)) {
        change(&mut self.lock());
        self.changed.notify_waiters();
    }
}

impl Limits {
    /// Limits from the global concurrency and the runtime options (0 or absent = unlimited).
    pub fn new(task_concurrency: u32, runtime: &ResolvedRuntimeOptions) -> Self {
        Limits {
            attempts: Arc::new(AttemptGate {
                state: Mutex::new(GateState {
                    limit: task_concurrency.max(1),
                    in_use: 0,
                }),
                changed: Notify::new(),
            }),
            pause: Arc::new(PauseGate::new()),
            providers: runtime
                .provider_limits
                .iter()
                .filter(|(_, n)| **n > 0)
                .map(|(p, n)| (p.clone(), Arc::new(Semaphore::new(*n as usize))))
                .collect(),
            pacers: runtime
                .env_open_qps
                .iter()
                .filter(|(_, q)| **q > 0.0)
                .map(|(p, q)| (p.clone(), OpenPacer::new(*q)))
                .collect(),
        }
    }

    /// Attempts that may run at once (from now on).
    pub fn task_concurrency(&self) -> u32 {
        self.attempts.lock().limit
    }

    /// Attempts running now.
    pub fn attempts_running(&self) -> u32 {
        self.attempts.lock().in_use
    }

    /// Sets the attempts that may run at once from now on (at least 1); running attempts
    /// go on.
    pub fn set_task_concurrency(&self, limit: u32) {
        self.attempts.update(|state| state.limit = limit.max(1));
    }

    /// The run's pause (`ctl pause`): shared with the model gateways.
    pub fn pause_gate(&self) -> &Arc<PauseGate> {
        &self.pause
    }

    /// One global attempt slot: waits while the run is paused or every slot is taken.
    pub async fn attempt_slot(&self) -> Option<AttemptSlot> {
        let gate = &self.attempts;
        loop {
            let changed = gate.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            self.pause.wait_open().await;
            {
                let mut state = gate.lock();
                if state.in_use < state.limit && !self.pause.is_paused() {
                    state.in_use += 1;
                    return Some(AttemptSlot {
                        gate: Arc::clone(gate),
                    });
                }
            }
            changed.await;
        }
    }

    /// One open-environment slot of `provider` (`None` when the provider is unlimited).
    pub async fn provider_slot(&self, provider: &str) -> Option<OwnedSemaphorePermit> {
        match self.providers.get(provider) {
            Some(semaphore) => semaphore.clone().acquire_owned().await.ok(),
            None => None,
        }
    }

    /// Waits for `provider`'s next open slot (immediate when unpaced).
    pub async fn pace_open(&self, provider: &str) {
        if let Some(pacer) = self.pacers.get(provider) {
            pacer.wait().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn pacing_spaces_opens() {
        let pacer = OpenPacer::new(10.0);
        let start = Instant::now();
        for _ in 0..5 {
            pacer.wait().await;
        }
        assert!(start.elapsed() >= Duration::from_millis(400));
    }

    #[tokio::test(start_paused = true)]
    async fn attempt_slots_resize_and_pause() {
        let limits = Arc::new(Limits::new(2, &ResolvedRuntimeOptions::default()));
        let (a, _b) = (limits.attempt_slot().await, limits.attempt_slot().await);
        let third = {
            let limits = limits.clone();
            tokio::spawn(async move { limits.attempt_slot().await.is_some() })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!third.is_finished(), "two slots taken");
        limits.set_task_concurrency(3);
        assert!(third.await.unwrap());
        assert_eq!(limits.attempts_running(), 2, "the third slot was dropped");
        // Paused: a free slot is not handed out until the run resumes.
        limits.pause_gate().pause();
        drop(a);
        let fourth = {
            let limits = limits.clone();
            tokio::spawn(async move { limits.attempt_slot().await.map(std::mem::forget) })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!fourth.is_finished(), "paused");
        limits.pause_gate().resume();
        fourth.await.unwrap();
        // Lowered below the running count: nothing new starts until enough end.
        limits.set_task_concurrency(1);
        assert_eq!(limits.task_concurrency(), 1);
        let blocked = tokio::time::timeout(Duration::from_millis(10), limits.attempt_slot()).await;
        assert!(blocked.is_err());
    }

    #[tokio::test]
    async fn provider_limits_bound_concurrency() {
        let mut runtime = ResolvedRuntimeOptions::default();
        runtime.provider_limits.insert("p".into(), 2);
        let limits = Limits::new(4, &runtime);
        let a = limits.provider_slot("p").await;
        let b = limits.provider_slot("p").await;
        assert!(a.is_some() && b.is_some());
        let third =
            tokio::time::timeout(Duration::from_millis(20), limits.provider_slot("p")).await;
        assert!(third.is_err(), "a third slot must wait");
        assert!(limits.provider_slot("unlimited").await.is_none());
    }
}
