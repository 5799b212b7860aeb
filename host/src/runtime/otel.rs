//! A live run's OpenTelemetry spans (`--otel-endpoint`, `runtime.otel`; issue 57): each
//! attempt's spans once its record is written (`atif::write` calls [`LiveOtel::attempt`]),
//! the tasks' and the run's at its end. Sending happens on the exporter's own thread
//! (`agentcompass_otel::OtelExporter`); nothing here can block or fail the run — a collector
//! that is down is one warning.

use std::sync::Arc;

use agentcompass_otel::{OtelExporter, RunMeta};
use agentcompass_plugin_api::contracts::RunRequest;
use agentcompass_results::atif::{attempt_trajectory, AtifAgent};
use agentcompass_results::store::{read_run_info, RunInfo, RunStore, TaskWriter};
use serde_json::Value;

use crate::request::ResolvedRuntimeOptions;

/// The run's exporter and what its spans say of the run (the same at every call: it makes
/// the trace id, as `export otel` of the finished run makes it).
pub struct LiveOtel {
    exporter: Arc<OtelExporter>,
    run: RunMeta,
}

impl LiveOtel {
    /// The exporter of `runtime.otel`, when set; `None` (with a warning when it was asked for
    /// but cannot be set up) otherwise.
    pub(super) fn start(
        runtime: &ResolvedRuntimeOptions,
        store: &RunStore,
        resolved: &RunRequest,
    ) -> Option<LiveOtel> {
        let overlay = runtime.otel.as_ref()?;
        let Some(config) = overlay.config() else {
            tracing::warn!(
                "OpenTelemetry: no endpoint (runtime.otel.endpoint, --otel-endpoint or OTEL_EXPORTER_OTLP_ENDPOINT); this run's spans are not exported"
            );
            return None;
        };
        let exporter = match OtelExporter::new(&config) {
            Ok(exporter) => exporter,
            Err(e) => {
                tracing::warn!("OpenTelemetry: {e}; this run's spans are not exported");
                return None;
            }
        };
        let run = match read_run_info(store.run_dir()) {
            Ok(info) => RunMeta::from_run_info(&info),
            Err(_) => RunMeta {
                run_id: store.run_id().to_string(),
                benchmark: resolved.benchmark.id.clone(),
                harness: resolved.harness.id.clone(),
                model: resolved.model.id.clone(),
                environment: resolved.environment.id.clone(),
                ..RunMeta::default()
            },
        };
        Some(LiveOtel {
            exporter: Arc::new(exporter),
            run,
        })
    }

    /// Queues the spans of attempt `attempt` from `payload`, the record written as its
    /// `result.json`, with its trajectory in ATIF as `atif::write` converts it (the session
    /// named alike). A multi-step attempt's steps are not converted here: its span carries
    /// the record's outcome and usage (`export otel` of the finished run has its steps).
    pub(super) fn attempt(
        &self,
        agent: &AtifAgent,
        writer: &TaskWriter,
        attempt: u32,
        payload: &Value,
    ) {
        let session = format!(
            "{}__{}__attempt-{attempt}",
            self.run.run_id,
            writer.dir_name()
        );
        let trajectory = attempt_trajectory(payload, agent, &session);
        self.exporter.attempt(
            &self.run,
            writer.task_id(),
            attempt,
            payload,
            trajectory.as_ref(),
        );
    }

    /// Queues the tasks' and the run's spans (the final `run_info.json`: end and status)
    /// and waits, off the async threads, for everything to be sent (at most 30 s).
    pub(super) async fn finish(&self, info: &RunInfo) {
        let finished = RunMeta::from_run_info(info);
        let mut run = self.run.clone();
        run.finished_at = finished.finished_at;
        run.status = finished.status;
        let exporter = self.exporter.clone();
        let _ = tokio::task::spawn_blocking(move || exporter.finish(&run)).await;
    }
}
