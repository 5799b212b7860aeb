//! A run's records as OpenTelemetry spans (issue 57), exported over OTLP/HTTP (protobuf).
//!
//! One trace per run: the run's span (`CHAIN`) → a span per task → a span per attempt (its
//! status, `agentcompass.reward`, every metric as `agentcompass.metric.<id>`, its recorded
//! token usage and cost) → its phases (each phase `progress.jsonl` recorded, `evaluate` named
//! `verification`; the agent's phase `AGENT`, from the ATIF trajectory) → a model call
//! (`LLM`) per ATIF agent step with metrics and a tool call (`TOOL`) per tool call. The
//! attributes are those `harbor-atif2otel` writes for the same ATIF fields (OpenInference:
//! `openinference.span.kind`, `llm.model_name`, `llm.token_count.*`, `llm.cost.total`,
//! `tool.name`, ...) plus the GenAI semantic conventions' (`gen_ai.operation.name`,
//! `gen_ai.request.model`, `gen_ai.usage.*`, `gen_ai.tool.name`). Trace and span ids are
//! derived from the run and the span's place (sha256), so exporting a run twice sends the same
//! ids. Times are the records' (never the export's).
//!
//! Secrets: every value comes from the redacted records (ids, counts, times, metrics);
//! message texts, tool arguments and results only with [`SpanOptions::content`].

mod agent;
pub mod attr;
mod live;
mod otlp;
mod run_dir;
mod spans;
mod timeline;
mod tree;

pub use live::{OtelConfig, OtelExporter, OtelOverlay};
pub use opentelemetry_sdk::trace::SpanData;
pub use otlp::{resolve_endpoint, Sender};
pub use run_dir::run_spans;
pub use spans::SCOPE_NAME;
pub use timeline::{AttemptTimes, Timeline};
pub use tree::{AttemptInput, RunMeta, SpanOptions};

/// What can go wrong.
#[derive(Debug, thiserror::Error)]
pub enum OtelError {
    /// The run could not be read.
    #[error("cannot read the run: {0}")]
    Read(String),
    /// The exporter could not be set up (a bad endpoint).
    #[error("cannot export to {0}")]
    Setup(String),
    /// The collector refused the spans or could not be reached.
    #[error("cannot export spans to {endpoint}: {reason}")]
    Export {
        /// The traces endpoint.
        endpoint: String,
        /// Why, on one line.
        reason: String,
    },
}

#[cfg(test)]
mod tests;
