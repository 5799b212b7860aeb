//! Shared limits: the global attempt slots, per-provider open-environment slots and the
//! per-provider environment-open pacing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

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
    task_concurrency: u32,
    attempts: Arc<Semaphore>,
    providers: HashMap<String, Arc<Semaphore>>,
    pacers: HashMap<String, OpenPacer>,
}

impl Limits {
    /// Limits from the global concurrency and the runtime options (0 or absent = unlimited).
    pub fn new(task_concurrency: u32, runtime: &ResolvedRuntimeOptions) -> Self {
        Limits {
            task_concurrency: task_concurrency.max(1),
            attempts: Arc::new(Semaphore::new(task_concurrency.max(1) as usize)),
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

    /// Attempts that may run at once.
    pub fn task_concurrency(&self) -> u32 {
        self.task_concurrency
    }

    /// One global attempt slot.
    pub async fn attempt_slot(&self) -> Option<OwnedSemaphorePermit> {
        self.attempts.clone().acquire_owned().await.ok()
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
