//! The runtime: executes an orchestration (one or more requests) on one tokio scheduler with
//! shared limits, cooperative cancellation (Ctrl-C, SIGTERM, the orchestration deadline) and
//! the results store as the only writer.

pub(crate) mod artifacts;
mod attempt;
mod blocking;
mod context;
pub mod limits;
mod phase;
mod phase_scope;
mod request;
pub mod retry;
mod task;
mod task_source;

use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use request::{preflight, reuse_key, PreparedRequest, RequestOutcome};

use crate::host_services::CancelToken;
use crate::progress::terminal_for;
use crate::registry::Registry;
use crate::request::Orchestration;
use limits::Limits;
use request::{run_request, Shared};

/// The terminal state of an orchestration.
#[derive(Debug, Clone)]
pub struct OrchestrationOutcome {
    /// `completed`, `partial_failure`, `failed`, `cancelled` or `timed_out`.
    pub status: String,
    /// Every request, in declaration order.
    pub requests: Vec<RequestOutcome>,
}

impl OrchestrationOutcome {
    /// The process exit code: 0 completed, 130 cancelled, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self.status.as_str() {
            "completed" => 0,
            "cancelled" => 130,
            _ => 1,
        }
    }
}

/// Cancels on the first SIGINT/SIGTERM (and says so); exits at once on the second.
fn watch_signals(cancel: CancelToken, stop_reason: Arc<Mutex<Option<String>>>) {
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
                eprintln!("\nSecond interrupt: exiting now.");
                std::process::exit(130);
            }
            if let Ok(mut reason) = stop_reason.lock() {
                reason.get_or_insert_with(|| "cancelled".to_string());
            }
            eprintln!("\nCancellation requested; cleaning up (press Ctrl-C again to exit now).");
            cancel.cancel();
        }
    });
}

/// Runs every request of `orchestration` (already preflighted) to its terminal state.
pub async fn execute(
    orchestration: &Orchestration,
    prepared: Vec<PreparedRequest>,
) -> OrchestrationOutcome {
    let cancel = CancelToken::new();
    let stop_reason = Arc::new(Mutex::new(None));
    watch_signals(cancel.clone(), stop_reason.clone());
    let runtime = &orchestration.runtime;
    if runtime.timeout_seconds > 0.0 {
        let (cancel, reason) = (cancel.clone(), stop_reason.clone());
        let deadline = Duration::from_secs_f64(runtime.timeout_seconds);
        tokio::spawn(async move {
            tokio::time::sleep(deadline).await;
            if let Ok(mut r) = reason.lock() {
                r.get_or_insert_with(|| "timed_out".to_string());
            }
            eprintln!(
                "\nThe orchestration deadline ({:.0} s) passed; stopping.",
                deadline.as_secs_f64()
            );
            cancel.cancel();
        });
    }
    let shared = Shared {
        runtime: runtime.clone(),
        limits: Arc::new(Limits::new(orchestration.task_concurrency, runtime)),
        cancel,
        terminal: terminal_for(runtime.progress),
        orchestration: (orchestration.id.clone(), orchestration.name.clone()),
        stop_reason: stop_reason.clone(),
    };
    let requests = futures_join_all(prepared.into_iter().map(|p| run_request(&shared, p))).await;
    let stop = stop_reason.lock().map(|r| r.clone()).unwrap_or(None);
    let status = match stop {
        Some(reason) => reason,
        None if requests.iter().all(|r| r.status == "completed") => "completed".into(),
        None if requests.iter().any(|r| r.status == "completed") => "partial_failure".into(),
        None => "failed".into(),
    };
    OrchestrationOutcome { status, requests }
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

/// Instantiates and checks every request, then runs them; preflight errors are returned
/// before anything is written.
pub fn preflight_all(
    registry: &Registry,
    orchestration: &Orchestration,
) -> Result<Vec<PreparedRequest>, String> {
    orchestration
        .requests
        .iter()
        .cloned()
        .map(|run| {
            preflight(
                registry,
                std::path::Path::new(&orchestration.runtime.results_dir),
                run,
            )
        })
        .collect()
}
