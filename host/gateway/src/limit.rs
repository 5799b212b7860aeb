//! Adaptive concurrency per model endpoint (AIMD): how many requests the gateway sends to one
//! endpoint at once. The limit starts at its maximum (the run's task concurrency, or
//! `model.max_connections`), halves when the endpoint rate-limits (429, 529 or a rate-limit
//! error body; one halving per burst: answers to requests sent before the last halving do not
//! halve it again), honours `Retry-After` by holding every request to the endpoint until then,
//! and grows back by one per `limit` successful answers (additive increase), within
//! `[1, max]` — but only once the endpoint has been quiet for [`QUIET_BEFORE_GROWTH`] (or the
//! last hold, if longer): growing straight back into the limit that was just hit would cost a
//! `Retry-After` stall each time (measured in `bench/rate_limits.sh`: 20 stalls of 1 s in a
//! 200-task run without the quiet period). Requests over the limit wait their turn; nothing is
//! dropped.
//!
//! One endpoint (base URL and key) has one limit per process, shared by every gateway that
//! calls it (the requests of one `launch`), through [`EndpointLimit::shared`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::sync::Notify;
use tokio::time::Instant;

/// How long after a rate limit the limit stays where it was halved to before it grows again.
pub const QUIET_BEFORE_GROWTH: Duration = Duration::from_secs(5);

/// An endpoint's identity: sha256 of its URL and key (the key itself is not kept here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EndpointId([u8; 32]);

impl EndpointId {
    /// The endpoint `url` called with `key`.
    pub fn of(url: &str, key: &str) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(url.as_bytes());
        hasher.update([0]);
        hasher.update(key.as_bytes());
        EndpointId(hasher.finalize().into())
    }
}

/// One endpoint's adaptive limit.
#[derive(Debug)]
pub struct EndpointLimit {
    state: Mutex<State>,
    changed: Notify,
}

#[derive(Debug)]
struct State {
    /// The largest limit (the run's concurrency or `max_connections`).
    max: u32,
    /// The current limit, in `[1, max]` (fractional: additive increase adds `1/limit`).
    limit: f64,
    /// Whether the limit adapts (`--no-adaptive-concurrency` keeps it at `max`).
    adaptive: bool,
    /// Requests sent and not answered yet.
    in_flight: u32,
    /// No request starts before this (the endpoint's `Retry-After`).
    held_until: Option<Instant>,
    /// Bumped by every halving: a permit taken before it does not halve again.
    generation: u64,
    /// The limit does not grow before this (a quiet period after the last rate limit).
    grows_after: Option<Instant>,
    /// Rate-limited answers so far.
    rate_limited: u64,
    /// Requests waiting for a slot or for `held_until` right now.
    waiting: u32,
    /// Total time requests spent waiting for the endpoint.
    waited: Duration,
}

/// What [`EndpointLimit::snapshot`] reports.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LimitSnapshot {
    /// The current limit (whole requests).
    pub limit: u32,
    /// The largest limit.
    pub max: u32,
    /// Requests sent and not answered yet.
    pub in_flight: u32,
    /// Requests waiting right now.
    pub waiting: u32,
    /// Rate-limited answers so far.
    pub rate_limited: u64,
    /// Total time spent waiting, in seconds.
    pub waited_seconds: f64,
}

/// A slot of the limit, held while one request is in flight; dropped without a verdict (an
/// error that is not the endpoint's, a cancelled call), it just frees the slot.
#[derive(Debug)]
pub struct Permit {
    limit: Arc<EndpointLimit>,
    generation: u64,
}

impl EndpointLimit {
    /// A limit of `max` (at least 1) requests at once.
    pub fn new(max: u32, adaptive: bool) -> Arc<Self> {
        let max = max.max(1);
        Arc::new(EndpointLimit {
            state: Mutex::new(State {
                max,
                limit: f64::from(max),
                adaptive,
                in_flight: 0,
                held_until: None,
                generation: 0,
                grows_after: None,
                rate_limited: 0,
                waiting: 0,
                waited: Duration::ZERO,
            }),
            changed: Notify::new(),
        })
    }

    /// The process-wide limit of the endpoint `id` (created with `max` on first use; a later
    /// gateway asking for a larger `max` raises it).
    pub fn shared(id: EndpointId, max: u32, adaptive: bool) -> Arc<Self> {
        static LIMITS: OnceLock<Mutex<HashMap<EndpointId, Weak<EndpointLimit>>>> = OnceLock::new();
        let mut limits = LIMITS
            .get_or_init(Mutex::default)
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        limits.retain(|_, limit| limit.strong_count() > 0);
        if let Some(limit) = limits.get(&id).and_then(Weak::upgrade) {
            limit.raise_max(max);
            return limit;
        }
        let limit = EndpointLimit::new(max, adaptive);
        limits.insert(id, Arc::downgrade(&limit));
        limit
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn raise_max(&self, max: u32) {
        let mut state = self.lock();
        if max > state.max {
            state.limit += f64::from(max - state.max);
            state.max = max;
        }
        drop(state);
        self.changed.notify_waiters();
    }

    /// Waits for a slot (and for the endpoint's `Retry-After`), then takes it.
    pub async fn acquire(self: &Arc<Self>) -> Permit {
        let mut waiting: Option<Waiting<'_>> = None;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let hold = {
                let mut state = self.lock();
                let now = Instant::now();
                let held = state.held_until.filter(|until| *until > now);
                if held.is_none() && state.in_flight < state.limit.floor() as u32 {
                    state.in_flight += 1;
                    let generation = state.generation;
                    drop(state);
                    drop(waiting);
                    return Permit {
                        limit: Arc::clone(self),
                        generation,
                    };
                }
                if waiting.is_none() {
                    state.waiting += 1;
                    waiting = Some(Waiting {
                        limit: self,
                        since: now,
                    });
                }
                held.map(|until| until - now)
            };
            match hold {
                Some(delay) => tokio::time::sleep(delay).await,
                None => notified.await,
            }
        }
    }

    /// What the limit is now.
    pub fn snapshot(&self) -> LimitSnapshot {
        let state = self.lock();
        LimitSnapshot {
            limit: state.limit.floor() as u32,
            max: state.max,
            in_flight: state.in_flight,
            waiting: state.waiting,
            rate_limited: state.rate_limited,
            waited_seconds: state.waited.as_secs_f64(),
        }
    }
}

impl Permit {
    /// The request was answered: the limit grows by `1/limit` (one per round of answers).
    /// The slot stays taken until the permit is dropped (a streamed answer holds it).
    pub fn succeeded(&self) {
        let mut state = self.limit.lock();
        let quiet = state
            .grows_after
            .is_none_or(|after| Instant::now() >= after);
        if state.adaptive && quiet {
            state.limit = (state.limit + 1.0 / state.limit).min(f64::from(state.max));
        }
    }

    /// The endpoint rate-limited the request: the limit halves (once per burst) and every
    /// request waits `retry_after` (or `backoff`) before the next one starts.
    pub fn rate_limited(&self, retry_after: Option<Duration>, backoff: Duration) {
        let mut state = self.limit.lock();
        state.rate_limited += 1;
        if state.adaptive && self.generation == state.generation {
            state.limit = (state.limit / 2.0).floor().max(1.0);
            state.generation += 1;
        }
        let hold = retry_after.unwrap_or(backoff);
        let now = Instant::now();
        let until = now + hold;
        state.held_until = Some(state.held_until.map_or(until, |held| held.max(until)));
        state.grows_after = Some(now + hold.max(QUIET_BEFORE_GROWTH));
    }
}

/// A request counted as waiting; uncounted (with the time it waited) when it gets its slot
/// or gives up (a cancelled call).
struct Waiting<'a> {
    limit: &'a EndpointLimit,
    since: Instant,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut state = self.limit.lock();
        state.waiting = state.waiting.saturating_sub(1);
        state.waited += self.since.elapsed();
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut state = self.limit.lock();
        state.in_flight = state.in_flight.saturating_sub(1);
        drop(state);
        self.limit.changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn halves_once_per_burst_holds_for_retry_after_and_grows_back() {
        let limit = EndpointLimit::new(8, true);
        let permits: Vec<Permit> = futures_join(&limit, 8).await;
        assert_eq!(limit.snapshot().in_flight, 8);
        // A burst of 429s to requests sent together halves the limit once.
        let mut permits = permits.into_iter();
        for permit in permits.by_ref().take(3) {
            permit.rate_limited(Some(Duration::from_secs(2)), Duration::from_secs(1));
        }
        let snapshot = limit.snapshot();
        assert_eq!((snapshot.limit, snapshot.rate_limited), (4, 3));
        drop(permits);
        // Held for Retry-After: the next request starts 2 s later.
        let before = Instant::now();
        let permit = limit.acquire().await;
        assert!(before.elapsed() >= Duration::from_secs(2));
        assert!(limit.snapshot().waited_seconds >= 2.0);
        // Not right after the rate limit: the endpoint must be quiet for a while first.
        limit.acquire().await.succeeded();
        assert_eq!(limit.snapshot().limit, 4);
        tokio::time::sleep(QUIET_BEFORE_GROWTH).await;
        // Additive increase: one more slot per `limit` answers.
        for _ in 0..4 {
            limit.acquire().await.succeeded();
        }
        permit.succeeded();
        drop(permit);
        assert_eq!(limit.snapshot().limit, 5);
        // A rate limit after the halving halves again, never below 1.
        for _ in 0..5 {
            limit
                .acquire()
                .await
                .rate_limited(None, Duration::from_millis(10));
        }
        assert_eq!(limit.snapshot().limit, 1);
        assert_eq!(limit.snapshot().waiting, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn over_the_limit_requests_wait_for_a_slot_and_a_fixed_limit_never_moves() {
        let limit = EndpointLimit::new(2, false);
        let (a, b) = (limit.acquire().await, limit.acquire().await);
        let waiter = {
            let limit = Arc::clone(&limit);
            tokio::spawn(async move { limit.acquire().await })
        };
        tokio::task::yield_now().await;
        assert_eq!(limit.snapshot().waiting, 1);
        a.rate_limited(None, Duration::from_millis(5));
        drop(a);
        assert_eq!(limit.snapshot().limit, 2, "not adaptive");
        let c = waiter.await.unwrap();
        assert_eq!(
            (limit.snapshot().in_flight, limit.snapshot().waiting),
            (2, 0)
        );
        drop((b, c));
        assert_eq!(limit.snapshot().in_flight, 0);
    }

    #[test]
    fn one_endpoint_one_limit_per_process() {
        let id = |key: &str| EndpointId::of("http://127.0.0.1:1/v1", key);
        let a = EndpointLimit::shared(id("k"), 4, true);
        let b = EndpointLimit::shared(id("k"), 6, true);
        let other = EndpointLimit::shared(id("other-key"), 4, true);
        assert!(Arc::ptr_eq(&a, &b) && !Arc::ptr_eq(&a, &other));
        assert_eq!((a.snapshot().max, a.snapshot().limit), (6, 6));
    }

    async fn futures_join(limit: &Arc<EndpointLimit>, n: usize) -> Vec<Permit> {
        let mut permits = Vec::new();
        for _ in 0..n {
            permits.push(limit.acquire().await);
        }
        permits
    }
}
