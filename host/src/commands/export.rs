//! `agentcompass-host export harbor RUN_DIR --out DIR`: a run as a Harbor job directory
//! (`agentcompass_host::interchange::harbor_export`).

use agentcompass_host::interchange::harbor_export;

use crate::cli::ExportCommand;

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
    }
}
