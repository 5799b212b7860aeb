//! Metering the model calls of one attempt: usage and cost summed per call, the attempt's
//! `execution.limits` enforced before each call (a call past a limit is refused), the time
//! spent waiting on the model (what `working_seconds` leaves out), and every call's usage
//! passed on to the budgets the attempt spends from (its request's, its orchestration's).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use agentcompass_plugin_api::contracts::{AttemptLimits, Budget, OnExhausted, TokenUsage};
use tokio::sync::Notify;

/// What every message of a call refused for a limit contains, so the host can tell the
/// harness's report of that refusal from a real model failure.
pub const LIMIT_REFUSAL: &str = "refused by execution.limits";

/// Which limit of `execution.limits` an attempt reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// `max_tokens`.
    Tokens,
    /// `max_cost_usd`.
    Cost,
    /// `max_model_calls`.
    ModelCalls,
    /// `max_turns` (the harness enforces it).
    Turns,
    /// `working_seconds`.
    WorkingSeconds,
}

impl Limit {
    /// The limit's key in `execution.limits`.
    pub fn key(self) -> &'static str {
        match self {
            Limit::Tokens => "max_tokens",
            Limit::Cost => "max_cost_usd",
            Limit::ModelCalls => "max_model_calls",
            Limit::Turns => "max_turns",
            Limit::WorkingSeconds => "working_seconds",
        }
    }
}

/// A limit an attempt reached, with a one-line message naming it and what was used.
#[derive(Debug, Clone, PartialEq)]
pub struct LimitBreach {
    /// The limit.
    pub limit: Limit,
    /// `execution.limits.max_tokens (1000) reached: 1040 tokens used in 3 model calls`.
    pub message: String,
}

/// The meter's running state.
#[derive(Debug, Default)]
struct State {
    total: TokenUsage,
    /// Calls admitted (successful or not).
    calls: u64,
    breach: Option<LimitBreach>,
    /// Calls in flight, and since when one has been (the model-wait clock runs while any is).
    in_flight: u32,
    waiting_since: Option<Instant>,
    /// Model-wait time of the calls already ended.
    waited: Duration,
}

/// Sums the usage of the model calls of one scope (an attempt) and enforces its limits.
#[derive(Debug, Default)]
pub struct UsageMeter {
    state: Mutex<State>,
    limits: AttemptLimits,
    budgets: Vec<Arc<BudgetTracker>>,
    breached: Notify,
}

impl UsageMeter {
    /// A meter without limits or budgets.
    pub fn new() -> Self {
        UsageMeter::default()
    }

    /// A meter enforcing `limits` and spending from `budgets`.
    pub fn with_limits(limits: AttemptLimits, budgets: Vec<Arc<BudgetTracker>>) -> Self {
        UsageMeter {
            limits,
            budgets,
            ..UsageMeter::default()
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Admits one model call, or refuses it when a limit is already reached (the first
    /// refusal records the breach). The returned guard keeps the model-wait clock running
    /// until it is dropped.
    pub fn admit(self: &Arc<Self>) -> Result<ModelWait, LimitBreach> {
        let mut state = self.state();
        if let Some(breach) = &state.breach {
            return Err(breach.clone());
        }
        if let Some(max) = self.limits.max_model_calls {
            if state.calls >= max {
                let breach = LimitBreach {
                    limit: Limit::ModelCalls,
                    message: format!(
                        "execution.limits.max_model_calls ({max}) reached: {} model calls made, {}",
                        state.calls,
                        used(&state)
                    ),
                };
                return Err(self.record(&mut state, breach));
            }
        }
        state.calls += 1;
        if state.in_flight == 0 {
            state.waiting_since = Some(Instant::now());
        }
        state.in_flight += 1;
        Ok(ModelWait {
            meter: Arc::clone(self),
        })
    }

    /// Records `breach` (the first one stays) and wakes whoever waits for one.
    fn record(&self, state: &mut State, breach: LimitBreach) -> LimitBreach {
        let kept = state.breach.get_or_insert(breach).clone();
        self.breached.notify_waiters();
        kept
    }

    /// Records a limit the host enforces outside the model calls (`working_seconds`) or a
    /// harness reported (`max_turns`).
    pub fn breach_with(&self, limit: Limit, message: String) {
        let mut state = self.state();
        self.record(&mut state, LimitBreach { limit, message });
    }

    /// Adds one call's usage, passes it on to the budgets, and records a token or cost
    /// limit the total has reached (the next call is refused).
    pub fn add(&self, usage: &TokenUsage) {
        let mut state = self.state();
        state.total.add(usage);
        let tokens = state.total.prompt_tokens + state.total.completion_tokens;
        if let Some(max) = self.limits.max_tokens.filter(|max| tokens >= *max) {
            let breach = LimitBreach {
                limit: Limit::Tokens,
                message: format!(
                    "execution.limits.max_tokens ({max}) reached: {}",
                    used(&state)
                ),
            };
            self.record(&mut state, breach);
        }
        let cost = state.total.cost_usd.unwrap_or(0.0);
        if let Some(max) = self.limits.max_cost_usd.filter(|max| reached(cost, *max)) {
            let breach = LimitBreach {
                limit: Limit::Cost,
                message: format!(
                    "execution.limits.max_cost_usd ({max}) reached: {}",
                    used(&state)
                ),
            };
            self.record(&mut state, breach);
        }
        drop(state);
        for budget in &self.budgets {
            budget.spend(usage);
        }
    }

    /// The usage so far.
    pub fn total(&self) -> TokenUsage {
        self.state().total
    }

    /// The limit reached, once one is.
    pub fn breach(&self) -> Option<LimitBreach> {
        self.state().breach.clone()
    }

    /// Waits until a limit is reached (forever when none is).
    pub async fn breached(&self) {
        loop {
            let notified = self.breached.notified();
            if self.state().breach.is_some() {
                return;
            }
            notified.await;
        }
    }

    /// Time spent waiting on the model so far (the calls in flight included).
    pub fn model_wait(&self) -> Duration {
        let state = self.state();
        state.waited + state.waiting_since.map_or(Duration::ZERO, |t| t.elapsed())
    }

    /// The limits this meter enforces.
    pub fn limits(&self) -> &AttemptLimits {
        &self.limits
    }

    fn end_wait(&self) {
        let mut state = self.state();
        state.in_flight = state.in_flight.saturating_sub(1);
        if state.in_flight == 0 {
            if let Some(since) = state.waiting_since.take() {
                state.waited += since.elapsed();
            }
        }
    }
}

/// Whether a summed cost has reached `max`: sums of float prices fall a hair short of the
/// amount they add up to (ten calls of $0.01 are $0.09999999999999999), so a relative
/// tolerance of 1e-9 counts them as reached.
fn reached(cost: f64, max: f64) -> bool {
    cost >= max * (1.0 - 1e-9)
}

/// `1040 tokens ($0.0104)` of the usage so far.
fn used(state: &State) -> String {
    let tokens = state.total.prompt_tokens + state.total.completion_tokens;
    match state.total.cost_usd {
        Some(cost) => format!("{tokens} tokens, ${cost:.4} used"),
        None => format!("{tokens} tokens used"),
    }
}

/// An admitted model call: the model-wait clock runs until it is dropped.
#[derive(Debug)]
pub struct ModelWait {
    meter: Arc<UsageMeter>,
}

impl Drop for ModelWait {
    fn drop(&mut self) {
        self.meter.end_wait();
    }
}

/// What a budget has spent.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spent {
    /// Cost, in US dollars.
    pub cost_usd: f64,
    /// Input plus output tokens.
    pub tokens: u64,
}

/// A budget's running total (one per request with `execution.budget`, one per orchestration
/// with `runtime.budget`): every model call of the attempts under it is added; once a limit is
/// reached it is exhausted for good, and waiters wake.
#[derive(Debug)]
pub struct BudgetTracker {
    budget: Budget,
    /// Where it is set (`execution.budget`, `runtime.budget`), for messages.
    source: &'static str,
    spent: Mutex<Spent>,
    exhausted: std::sync::atomic::AtomicBool,
    wake: Notify,
}

impl BudgetTracker {
    /// A tracker of `budget`, set at `source` (nothing spent yet).
    pub fn new(budget: Budget, source: &'static str) -> Self {
        BudgetTracker {
            budget,
            source,
            spent: Mutex::new(Spent::default()),
            exhausted: std::sync::atomic::AtomicBool::new(false),
            wake: Notify::new(),
        }
    }

    /// Adds one call's (or one imported task's) usage.
    pub fn spend(&self, usage: &TokenUsage) {
        let mut spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        spent.cost_usd += usage.cost_usd.unwrap_or(0.0);
        spent.tokens += usage.prompt_tokens + usage.completion_tokens;
        let over_cost = self
            .budget
            .max_cost_usd
            .is_some_and(|m| reached(spent.cost_usd, m));
        let over_tokens = self.budget.max_tokens.is_some_and(|m| spent.tokens >= m);
        if over_cost || over_tokens {
            self.exhausted
                .store(true, std::sync::atomic::Ordering::SeqCst);
            self.wake.notify_waiters();
        }
    }

    /// Whether the budget is used up.
    pub fn is_exhausted(&self) -> bool {
        self.exhausted.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits until the budget is used up (forever when it never is).
    pub async fn exhausted(&self) {
        loop {
            let notified = self.wake.notified();
            if self.is_exhausted() {
                return;
            }
            notified.await;
        }
    }

    /// What was spent so far.
    pub fn spent(&self) -> Spent {
        *self.spent.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What running attempts do once it is used up.
    pub fn on_exhausted(&self) -> OnExhausted {
        self.budget.on_exhausted
    }

    /// `{"source", "max_cost_usd", "max_tokens", "spent_cost_usd", "spent_tokens"}`.
    pub fn summary(&self) -> serde_json::Value {
        let spent = self.spent();
        serde_json::json!({
            "source": self.source,
            "max_cost_usd": self.budget.max_cost_usd,
            "max_tokens": self.budget.max_tokens,
            "on_exhausted": self.budget.on_exhausted,
            "spent_cost_usd": spent.cost_usd,
            "spent_tokens": spent.tokens,
        })
    }

    /// `runtime.budget spent $0.5123 of $0.50 (51230 tokens)`.
    pub fn describe(&self) -> String {
        let spent = self.spent();
        let mut limits = Vec::new();
        if let Some(max) = self.budget.max_cost_usd {
            limits.push(format!("${:.4} of ${max}", spent.cost_usd));
        }
        if let Some(max) = self.budget.max_tokens {
            limits.push(format!("{} of {max} tokens", spent.tokens));
        }
        format!("{} spent {}", self.source, limits.join(" and "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(tokens: u64, cost: f64) -> TokenUsage {
        TokenUsage {
            prompt_tokens: tokens,
            cost_usd: Some(cost),
            requests: 1,
            ..TokenUsage::default()
        }
    }

    #[test]
    fn a_call_past_a_limit_is_refused_and_the_usage_stops_there() {
        let budget = Arc::new(BudgetTracker::new(
            Budget {
                max_cost_usd: Some(0.05),
                ..Budget::default()
            },
            "execution.budget",
        ));
        let meter = Arc::new(UsageMeter::with_limits(
            AttemptLimits {
                max_tokens: Some(250),
                ..AttemptLimits::default()
            },
            vec![budget.clone()],
        ));
        for _ in 0..3 {
            let wait = meter.admit().unwrap();
            meter.add(&usage(100, 0.01));
            drop(wait);
        }
        let refused = meter.admit().unwrap_err();
        assert_eq!(refused.limit, Limit::Tokens);
        assert_eq!(
            refused.message,
            "execution.limits.max_tokens (250) reached: 300 tokens, $0.0300 used"
        );
        assert_eq!(meter.total().prompt_tokens, 300);
        assert!(!budget.is_exhausted());
        budget.spend(&usage(0, 0.02));
        assert!(budget.is_exhausted());
        assert_eq!(budget.describe(), "execution.budget spent $0.0500 of $0.05");
    }

    #[test]
    fn model_calls_are_counted_before_they_are_made() {
        let meter = Arc::new(UsageMeter::with_limits(
            AttemptLimits {
                max_model_calls: Some(2),
                ..AttemptLimits::default()
            },
            Vec::new(),
        ));
        let first = meter.admit().unwrap();
        let second = meter.admit().unwrap();
        assert!(meter.model_wait() < Duration::from_secs(5));
        drop((first, second));
        let refused = meter.admit().unwrap_err();
        assert_eq!(refused.limit, Limit::ModelCalls);
        assert!(meter.breach().is_some());
    }

    #[test]
    fn ten_cents_reach_a_ten_cent_budget() {
        let budget = BudgetTracker::new(
            Budget {
                max_cost_usd: Some(0.1),
                ..Budget::default()
            },
            "execution.budget",
        );
        for _ in 0..9 {
            budget.spend(&usage(1000, 0.01));
        }
        assert!(!budget.is_exhausted());
        budget.spend(&usage(1000, 0.01));
        assert!(budget.is_exhausted(), "{:?}", budget.spent());
    }

    #[tokio::test]
    async fn waiters_wake_on_a_breach() {
        let meter = Arc::new(UsageMeter::new());
        let waiter = tokio::spawn({
            let meter = meter.clone();
            async move { meter.breached().await }
        });
        tokio::task::yield_now().await;
        meter.breach_with(Limit::WorkingSeconds, "w".into());
        waiter.await.unwrap();
    }
}
