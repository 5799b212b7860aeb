//! A request's circuit breaker: once a budget it spends from is used up (`execution.budget`,
//! `runtime.budget`) or its non-agent failures pass `--fail-on-error`, no new task starts;
//! the tasks not run are `skipped` with the trip's reason, and the run ends
//! `stopped_by_budget` or `stopped_on_errors`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use agentcompass_plugin_api::contracts::OnExhausted;
use agentcompass_results::status::RunStatus;

use crate::host_services::CancelToken;
use crate::issue_codes as codes;
use crate::metrics::AttemptOutcome;
use agentcompass_gateway::BudgetTracker;

/// Why the breaker tripped.
#[derive(Debug, Clone, PartialEq)]
pub enum Trip {
    /// A budget was used up: what it spent (`execution.budget spent $0.5012 of $0.5`).
    Budget(String),
    /// Non-agent failures passed `--fail-on-error`.
    ErrorRate {
        /// Tasks not scored.
        unscored: u64,
        /// Tasks finished.
        finished: u64,
        /// The configured rate (or count).
        limit: f64,
    },
}

impl Trip {
    /// The reason recorded on each task not run.
    pub fn reason(&self) -> &'static str {
        match self {
            Trip::Budget(_) => codes::BUDGET_EXHAUSTED.code,
            Trip::ErrorRate { .. } => codes::ERROR_RATE_EXCEEDED.code,
        }
    }

    /// The run's terminal status.
    pub fn status(&self) -> RunStatus {
        match self {
            Trip::Budget(_) => RunStatus::StoppedByBudget,
            Trip::ErrorRate { .. } => RunStatus::StoppedOnErrors,
        }
    }

    /// One line for the terminal and `run_info.json`.
    pub fn describe(&self) -> String {
        match self {
            Trip::Budget(spent) => format!("stopped by budget: {spent}"),
            Trip::ErrorRate {
                unscored,
                finished,
                limit,
            } => format!(
                "stopped on errors: {unscored} of {finished} finished tasks failed outside the agent (--fail-on-error {limit})"
            ),
        }
    }
}

/// The breaker of one request.
pub struct Breaker {
    budgets: Vec<Arc<BudgetTracker>>,
    fail_on_error: Option<f64>,
    finished: AtomicU64,
    unscored: AtomicU64,
    tripped: Mutex<Option<Trip>>,
}

impl Breaker {
    /// A breaker over `budgets` (the request's, the orchestration's) and `fail_on_error`.
    pub fn new(budgets: Vec<Arc<BudgetTracker>>, fail_on_error: Option<f64>) -> Self {
        Breaker {
            budgets,
            fail_on_error,
            finished: AtomicU64::new(0),
            unscored: AtomicU64::new(0),
            tripped: Mutex::new(None),
        }
    }

    /// The budgets the request's model calls spend from.
    pub fn budgets(&self) -> &[Arc<BudgetTracker>] {
        &self.budgets
    }

    /// Counts a finished task (published or imported) for `--fail-on-error`.
    pub fn record_task(&self, outcomes: &[AttemptOutcome]) {
        self.finished.fetch_add(1, Ordering::SeqCst);
        if outcomes.iter().any(|o| o.fatal || o.error) {
            self.unscored.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Counts what an imported task spent against the budgets.
    pub fn spend_imported(&self, outcomes: &[AttemptOutcome]) {
        for budget in &self.budgets {
            for outcome in outcomes {
                budget.spend(&outcome.usage);
            }
        }
    }

    /// Whether the breaker has tripped (checking the budgets and the error rate now); the
    /// first trip stays.
    pub fn trip(&self) -> Option<Trip> {
        let mut tripped = self.tripped.lock().unwrap_or_else(PoisonError::into_inner);
        if tripped.is_none() {
            *tripped = self.check();
        }
        tripped.clone()
    }

    /// The trip recorded by an earlier [`Breaker::trip`] (a budget used up by the last
    /// running tasks, with nothing left to skip, is no trip).
    pub fn tripped(&self) -> Option<Trip> {
        self.tripped
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn check(&self) -> Option<Trip> {
        if let Some(budget) = self.budgets.iter().find(|b| b.is_exhausted()) {
            return Some(Trip::Budget(budget.describe()));
        }
        let limit = self.fail_on_error?;
        let finished = self.finished.load(Ordering::SeqCst);
        let unscored = self.unscored.load(Ordering::SeqCst);
        let over = if limit < 1.0 {
            finished > 0 && unscored as f64 > limit * finished as f64
        } else {
            unscored as f64 > limit
        };
        over.then_some(Trip::ErrorRate {
            unscored,
            finished,
            limit,
        })
    }

    /// With `on_exhausted = "cancel"`, cancels `cancel` (the request's attempts) once a
    /// budget that asks for it is used up.
    pub fn cancel_on_exhaustion(&self, cancel: &CancelToken) {
        for budget in &self.budgets {
            if budget.on_exhausted() != OnExhausted::Cancel {
                continue;
            }
            let (budget, cancel) = (budget.clone(), cancel.clone());
            tokio::spawn(async move {
                tokio::select! {
                    () = budget.exhausted() => cancel.cancel(),
                    () = cancel.cancelled() => {}
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::issue_codes::FailureClass;

    #[test]
    fn the_error_rate_trips_past_its_share_or_count() {
        let breaker = Breaker::new(Vec::new(), Some(0.1));
        let good = AttemptOutcome::default();
        let bad = AttemptOutcome {
            error: true,
            unscored: Some((FailureClass::Model, "rate limited".into())),
            ..AttemptOutcome::default()
        };
        for _ in 0..9 {
            breaker.record_task(std::slice::from_ref(&good));
        }
        breaker.record_task(std::slice::from_ref(&bad));
        assert_eq!(breaker.trip(), None, "1 of 10 is not more than 10 %");
        breaker.record_task(std::slice::from_ref(&bad));
        let trip = breaker.trip().unwrap();
        assert_eq!(trip.reason(), "error_rate_exceeded");
        assert_eq!(trip.status(), RunStatus::StoppedOnErrors);
        let counted = Breaker::new(Vec::new(), Some(2.0));
        for _ in 0..2 {
            counted.record_task(std::slice::from_ref(&bad));
        }
        assert_eq!(counted.trip(), None);
        counted.record_task(std::slice::from_ref(&bad));
        assert!(counted.trip().is_some());
    }
}
