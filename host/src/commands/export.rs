//! `agentcompass-host export harbor RUN_DIR --out DIR` (a run as a Harbor job directory,
//! `agentcompass_host::interchange::harbor_export`) and `export traces RUN_DIR --out FILE`
//! (training rows, `agentcompass_host::interchange::traces`).

use agentcompass_host::interchange::harbor_export;

use agentcompass_host::interchange::traces::{self, Episodes, Outcome, TraceFilter};

use crate::cli::{EpisodesArg, ExportCommand, ExportTracesCmd, OutcomeArg};

/// Writes the export and says where; a run that cannot be read or an `--out` that is not new
/// are one-line errors (exit 2), nothing written.
pub fn export(command: &ExportCommand) -> anyhow::Result<i32> {
    match command {
        ExportCommand::Harbor(cmd) => {
            let exported = harbor_export::export(&cmd.run_dir, &cmd.out)
                .map_err(|e| anyhow::anyhow!("export harbor: {e}"))?;
            let jobs = exported
                .job_dir
                .parent()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            crate::outln!(
                "exported {} trials to {}\nopen it with Harbor: harbor view {jobs}",
                exported.trials,
                exported.job_dir.display()
            );
            Ok(0)
        }
        ExportCommand::Traces(cmd) => export_traces(cmd),
        ExportCommand::Otel(cmd) => export_otel(cmd),
    }
}

/// `export traces`: the rows and where they went.
fn export_traces(cmd: &ExportTracesCmd) -> anyhow::Result<i32> {
    let filter = TraceFilter {
        episodes: match cmd.episodes {
            EpisodesArg::All => Episodes::All,
            EpisodesArg::Last => Episodes::Last,
        },
        outcome: match cmd.filter {
            OutcomeArg::All => Outcome::All,
            OutcomeArg::Success => Outcome::Success,
            OutcomeArg::Failure => Outcome::Failure,
        },
        min_reward: cmd.min_reward,
    };
    let exported = traces::export(&cmd.run_dir, &cmd.out, &filter)
        .map_err(|e| anyhow::anyhow!("export traces: {e}"))?;
    crate::outln!(
        "exported {} rows from {} attempts to {}",
        exported.rows,
        exported.attempts,
        exported.file.display()
    );
    Ok(0)
}

/// `export otel`: the run's spans sent to the collector. No endpoint is a refusal (exit 2);
/// a collector that cannot be reached or refuses them is one line naming it (exit 1).
fn export_otel(cmd: &crate::cli::ExportOtelCmd) -> anyhow::Result<i32> {
    use agentcompass_otel::{resolve_endpoint, run_spans, Sender, SpanOptions};
    let Some(endpoint) = resolve_endpoint(cmd.endpoint.as_deref()) else {
        anyhow::bail!(
            "export otel: no endpoint: pass --endpoint URL or set OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT"
        );
    };
    let options = SpanOptions {
        content: cmd.otel_content,
    };
    let spans =
        run_spans(&cmd.run_dir, options).map_err(|e| anyhow::anyhow!("export otel: {e}"))?;
    let count = spans.len();
    let sender = Sender::new(&endpoint, std::time::Duration::from_secs(30))
        .map_err(|e| anyhow::anyhow!("export otel: {e}"))?;
    if let Err(e) = sender.send(spans) {
        eprintln!("error: export otel: {e}");
        return Ok(1);
    }
    crate::outln!(
        "exported {count} spans of {} to {endpoint}",
        cmd.run_dir.display()
    );
    Ok(0)
}
