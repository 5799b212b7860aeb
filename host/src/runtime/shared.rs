//! What the runs of one orchestration share (limits, cancellation, the terminal, why it was
//! stopped), and what scheduling a run's tasks produced — for the local scheduler and the
//! Slurm coordinator alike.

use std::sync::{Arc, Mutex};

use agentcompass_results::status::RunStatus;

use super::limits::Limits;
use super::task::TaskEnd;
use crate::host_services::CancelToken;
use crate::progress::TerminalSink;
use crate::request::ResolvedRuntimeOptions;

/// Shared, orchestration-wide inputs of a request run.
pub struct Shared {
    /// Process-wide options.
    pub runtime: ResolvedRuntimeOptions,
    /// Limits.
    pub limits: Arc<Limits>,
    /// Cancellation.
    pub cancel: CancelToken,
    /// Terminal progress.
    pub terminal: Option<Arc<dyn TerminalSink>>,
    /// Orchestration id and name.
    pub orchestration: (String, String),
    /// Why the run was stopped (`cancelled` or `timed_out`), once it is.
    pub stop_reason: Arc<Mutex<Option<RunStatus>>>,
    /// The orchestration's budget (`runtime.budget`), which every request spends from.
    pub budget: Option<Arc<agentcompass_gateway::BudgetTracker>>,
    /// The live control of the process's requests (`ctl`).
    pub control: Arc<super::control::RunControl>,
}

impl Shared {
    pub(super) fn stop_reason(&self) -> Option<RunStatus> {
        self.stop_reason.lock().map(|r| *r).unwrap_or(None)
    }
}

/// What scheduling every task produced.
#[derive(Debug, Default)]
pub(super) struct Scheduled {
    /// Tasks published by this run (reused ones not included).
    pub(super) published: usize,
    /// Some result could not be written.
    pub(super) store_failed: bool,
    /// The task stream failed midway (or, on a cluster, jobs could not be submitted).
    pub(super) load_error: Option<String>,
}

impl Scheduled {
    pub(super) fn tally(&mut self, done: Result<TaskEnd, tokio::task::JoinError>) {
        match done {
            Ok(TaskEnd::Published) => self.published += 1,
            Ok(TaskEnd::Cancelled | TaskEnd::Duplicate) => {}
            Ok(TaskEnd::StoreFailed) => self.store_failed = true,
            Err(e) => {
                tracing::error!("a task crashed: {e}");
                self.store_failed = true;
            }
        }
    }
}
