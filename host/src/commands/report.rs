//! `agentcompass-host report RUN_DIR [--out FILE] [--max-trajectories N]`: one self-contained
//! HTML file of a run (`agentcompass_viewer::report`), written through a temporary file in the
//! target's directory and renamed into place, so a crash or Ctrl-C never leaves half a report.

use std::io::{BufWriter, Write};
use std::time::SystemTime;

use anyhow::{bail, Context};

use agentcompass_viewer::report::{write_report, ReportLimits};

use crate::cli::ReportCmd;

/// Writes the report and prints its path and what it holds (one line).
pub fn report(cmd: &ReportCmd) -> anyhow::Result<i32> {
    let (imported_run, _job) = super::harbor_input::run_dir(&cmd.run_dir)?;
    let run_dir = &imported_run;
    if !run_dir.join("run_info.json").is_file() {
        bail!(
            "report: {} is not a run directory (expected a directory holding run_info.json)",
            run_dir.display()
        );
    }
    let out = cmd
        .out
        .clone()
        .unwrap_or_else(|| cmd.run_dir.join("report.html"));
    let out = std::path::absolute(&out).with_context(|| format!("--out {}", out.display()))?;
    let parent = out
        .parent()
        .filter(|p| p.is_dir())
        .with_context(|| format!("--out {}: its directory does not exist", out.display()))?;
    if out.is_dir() {
        bail!(
            "--out {}: expected a file, found a directory",
            out.display()
        );
    }
    let limits = ReportLimits {
        max_trajectories: cmd.max_trajectories,
        ..ReportLimits::default()
    };
    let mut temp = tempfile::Builder::new()
        .prefix(".report.")
        .suffix(".tmp")
        .tempfile_in(parent)
        .with_context(|| format!("cannot write in {}", parent.display()))?;
    let stats = {
        let mut writer = BufWriter::new(temp.as_file_mut());
        let stats = write_report(
            run_dir,
            &limits,
            concat!("agentcompass-host ", env!("CARGO_PKG_VERSION")),
            &agentcompass_results::time::rfc3339(SystemTime::now()),
            &mut writer,
        )
        .with_context(|| format!("report of {}", run_dir.display()))?;
        writer
            .flush()
            .with_context(|| format!("cannot write {}", out.display()))?;
        stats
    };
    temp.as_file()
        .set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .with_context(|| format!("cannot write {}", out.display()))?;
    temp.persist(&out)
        .with_context(|| format!("cannot write {}", out.display()))?;
    crate::outln!(
        "report: {} ({} tasks, attempts and trajectories of {}, {:.1} MiB)",
        out.display(),
        stats.tasks,
        if stats.omitted == 0 {
            "every task".to_string()
        } else {
            format!("{} (not-correct tasks first)", stats.details)
        },
        stats.bytes as f64 / (1024.0 * 1024.0)
    );
    Ok(0)
}
