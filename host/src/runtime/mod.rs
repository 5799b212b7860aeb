//! The runtime: executes an orchestration (one or more requests) on one tokio scheduler with
//! shared limits, cooperative cancellation (Ctrl-C, SIGTERM, the orchestration deadline) and
//! the results store as the only writer.

pub mod agent_inputs;
pub(crate) mod artifacts;
mod atif;
mod attempt;
mod blocking;
pub mod breaker;
pub mod cluster;
pub mod cluster_copy;
pub mod cluster_error;
mod context;
pub mod control;
mod error;
#[cfg(test)]
mod failpoint;
pub mod issue_tally;
pub mod limits;
mod live;
mod otel;
mod phase;
mod provenance;
pub mod retry;
mod reuse;
mod run;
mod session;
mod shared;
mod task;
mod task_scope;
mod task_selection;
mod task_source;
#[cfg(test)]
mod tests;
pub mod worker;

use std::sync::{Arc, Mutex};

pub use error::RunError;
pub use reuse::reuse_key;
pub use run::{preflight, EndpointToCheck, PreparedRequest, RequestOutcome, TaskPreview};

use agentcompass_results::status::RunStatus;

use crate::exit_code;
use crate::host_services::CancelToken;
use crate::progress::terminal_for;
use crate::registry::Registry;
use crate::request::Orchestration;
use limits::Limits;
use run::run_request;
use shared::Shared;

/// The terminal status of an orchestration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrchestrationStatus {
    /// Every request completed.
    Completed,
    /// Some requests completed, others failed.
    PartialFailure,
    /// No request completed.
    Failed,
    /// Stopped by the user.
    Cancelled,
    /// Stopped by the orchestration deadline.
    TimedOut,
}

impl OrchestrationStatus {
    /// The printed name (`partial_failure`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            OrchestrationStatus::Completed => "completed",
            OrchestrationStatus::PartialFailure => "partial_failure",
            OrchestrationStatus::Failed => "failed",
            OrchestrationStatus::Cancelled => "cancelled",
            OrchestrationStatus::TimedOut => "timed_out",
        }
    }

    /// The status of an orchestration stopped early (`stop`) or whose requests ended so.
    fn of(stop: Option<RunStatus>, requests: &[RequestOutcome]) -> Self {
        let completed = |r: &RequestOutcome| r.status == RunStatus::Completed;
        match stop {
            Some(RunStatus::TimedOut) => OrchestrationStatus::TimedOut,
            Some(_) => OrchestrationStatus::Cancelled,
            None if requests.iter().all(completed) => OrchestrationStatus::Completed,
            None if requests.iter().any(completed) => OrchestrationStatus::PartialFailure,
            None => OrchestrationStatus::Failed,
        }
    }
}

impl std::fmt::Display for OrchestrationStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The terminal state of an orchestration.
#[derive(Debug, Clone)]
pub struct OrchestrationOutcome {
    /// How it ended.
    pub status: OrchestrationStatus,
    /// Every request, in declaration order.
    pub requests: Vec<RequestOutcome>,
}

impl OrchestrationOutcome {
    /// The process exit code: 0 completed, 130 cancelled, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self.status {
            OrchestrationStatus::Completed => exit_code::SUCCESS,
            OrchestrationStatus::Cancelled => exit_code::CANCELLED,
            _ => exit_code::FAILURE,
        }
    }
}

/// What the runtime tells the user while it runs; the binary prints it (the library never
/// writes to the terminal itself).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Notice {
    /// The first Ctrl-C (or SIGTERM): cancelling, cleaning up.
    CancelRequested,
    /// A second Ctrl-C: the receiver should exit the process at once (status 130).
    SecondInterrupt,
    /// The orchestration deadline (seconds) passed: stopping.
    DeadlinePassed(f64),
}

/// Receives the runtime's notices (see [`Notice`]).
pub type NoticeSink = fn(Notice);

/// Cancels on the first SIGINT/SIGTERM (and says so); on the second, tells `notify`, which
/// exits the process.
pub(crate) fn watch_signals(
    cancel: CancelToken,
    stop_reason: Arc<Mutex<Option<RunStatus>>>,
    notify: NoticeSink,
) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        tracing::warn!("cannot install signal handlers; Ctrl-C will stop the process abruptly");
        return;
    };
    tokio::spawn(async move {
        let mut received = 0;
        loop {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
            received += 1;
            if received > 1 {
                notify(Notice::SecondInterrupt);
                continue;
            }
            if let Ok(mut reason) = stop_reason.lock() {
                reason.get_or_insert(RunStatus::Cancelled);
            }
            notify(Notice::CancelRequested);
            cancel.cancel();
        }
    });
}

/// Stops the orchestration when its deadline passes.
fn watch_deadline(
    cancel: CancelToken,
    stop_reason: Arc<Mutex<Option<RunStatus>>>,
    seconds: f64,
    notify: NoticeSink,
) {
    let deadline = agentcompass_plugin_api::wait::duration_from_seconds(seconds);
    tokio::spawn(async move {
        tokio::time::sleep(deadline).await;
        if let Ok(mut reason) = stop_reason.lock() {
            reason.get_or_insert(RunStatus::TimedOut);
        }
        notify(Notice::DeadlinePassed(deadline.as_secs_f64()));
        cancel.cancel();
    });
}

/// Runs every request of `orchestration` (already preflighted) to its terminal state.
pub async fn execute(
    orchestration: &Orchestration,
    prepared: Vec<PreparedRequest>,
    notify: NoticeSink,
) -> OrchestrationOutcome {
    let cancel = CancelToken::new();
    let stop_reason = Arc::new(Mutex::new(None));
    watch_signals(cancel.clone(), stop_reason.clone(), notify);
    let trimmer = tokio::spawn(crate::malloc_arenas::return_freed_memory());
    let runtime = &orchestration.runtime;
    if runtime.timeout_seconds > 0.0 {
        watch_deadline(
            cancel.clone(),
            stop_reason.clone(),
            runtime.timeout_seconds,
            notify,
        );
    }
    let limits = Arc::new(Limits::new(orchestration.task_concurrency, runtime));
    let control = control::RunControl::new(
        limits.clone(),
        runtime.executor == crate::request::Executor::Local,
    );
    control.listen();
    let shared = Shared {
        runtime: runtime.clone(),
        limits,
        control,
        cancel,
        terminal: terminal_for(
            runtime.progress,
            agentcompass_plugin_api::wait::duration_from_seconds(runtime.progress_interval_seconds),
        ),
        orchestration: (orchestration.id.clone(), orchestration.name.clone()),
        stop_reason: stop_reason.clone(),
        budget: runtime.budget.clone().map(|budget| {
            Arc::new(agentcompass_gateway::BudgetTracker::new(
                budget,
                "runtime.budget",
            ))
        }),
    };
    let requests = futures_join_all(prepared.into_iter().map(|p| run_request(&shared, p))).await;
    trimmer.abort();
    let stop = stop_reason.lock().map(|r| *r).unwrap_or(None);
    OrchestrationOutcome {
        status: OrchestrationStatus::of(stop, &requests),
        requests,
    }
}

/// Awaits every future concurrently, keeping their order.
async fn futures_join_all<F: std::future::Future>(
    futures: impl Iterator<Item = F>,
) -> Vec<F::Output> {
    let mut pinned: Vec<_> = futures.map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = pinned.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in pinned.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(value) => *output = Some(value),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

/// What creating each request's run directory would refuse, checked without writing: an
/// explicit `output.run_id` whose directory exists, a `reuse_run_id` that names no run of the
/// request's namespace (`launch --dry-run` applies the checks a real launch's preflight
/// applies).
pub fn check_outputs(orchestration: &Orchestration) -> Result<(), RunError> {
    let results_dir = std::path::Path::new(&orchestration.runtime.results_dir);
    for run in &orchestration.requests {
        run::check_output(results_dir, run).map_err(|e| e.in_request(&run.name))?;
    }
    Ok(())
}

/// Instantiates and checks every request, then runs them; preflight errors are returned
/// before anything is written.
pub fn preflight_all(
    registry: &Registry,
    orchestration: &Orchestration,
    datasets: &std::sync::Arc<crate::datasets::DatasetService>,
) -> Result<Vec<PreparedRequest>, RunError> {
    let runtime = &orchestration.runtime;
    if runtime.executor == crate::request::Executor::Slurm {
        let budgeted = runtime.budget.is_some()
            || orchestration
                .requests
                .iter()
                .any(|r| r.request.execution.budget.is_some());
        if budgeted || runtime.fail_on_error.is_some() {
            let what = if budgeted {
                "a budget"
            } else {
                "--fail-on-error"
            };
            return Err(RunError::Refused(format!(
                "runtime.executor: {what} is enforced by the local executor only, found executor `slurm` (run without the budget, or with --executor local)"
            )));
        }
        cluster::check_cluster(runtime)?;
    }
    let prepared: Vec<PreparedRequest> = orchestration
        .requests
        .iter()
        .cloned()
        .map(|run| {
            let results_dir = std::path::Path::new(&runtime.results_dir);
            preflight(registry, results_dir, run, Some(datasets.clone()))
        })
        .collect::<Result<_, _>>()?;
    for request in &prepared {
        let priced =
            agentcompass_gateway::GatewaySettings::from_params(&request.resolved.model.params)
                .is_ok_and(|s| s.pricing.is_some());
        run::check_prices(&request.resolved, priced, runtime.budget.as_ref())
            .map_err(|e| e.in_request(&request.run.name))?;
    }
    Ok(prepared)
}
