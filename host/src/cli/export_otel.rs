//! `export otel RUN_DIR [--endpoint URL] [--otel-content]`'s arguments.

use std::path::PathBuf;

use clap::Args;

/// `export otel RUN_DIR [--endpoint URL] [--otel-content]`.
#[derive(Debug, Args)]
pub struct ExportOtelCmd {
    /// The run directory (`<results>/<namespace>/<run_id>`)
    pub run_dir: PathBuf,
    /// The OTLP/HTTP traces endpoint (e.g. `http://127.0.0.1:6006/v1/traces`); default:
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`
    /// (headers from `OTEL_EXPORTER_OTLP_HEADERS`)
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// Also export the prompts, completions, tool arguments and tool results (off: ids,
    /// counts, times, metrics only)
    #[arg(long)]
    pub otel_content: bool,
}
