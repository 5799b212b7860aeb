//! `agentcompass-host compare RUN_A RUN_B [--json] [--metric ID]`: run B against run A on the
//! tasks both share (`agentcompass_host::compare`); either may be a Harbor job directory.

use agentcompass_host::compare::{compare as compare_runs, render_text};

use crate::cli::CompareCmd;

/// Prints the comparison (text, or JSON with `--json`); a run that cannot be read, runs of
/// different benchmarks or an unknown `--metric` are one-line errors (exit 2).
pub fn compare(cmd: &CompareCmd) -> anyhow::Result<i32> {
    let (run_a, _job_a) = super::harbor_input::run_dir(&cmd.run_a)?;
    let (run_b, _job_b) = super::harbor_input::run_dir(&cmd.run_b)?;
    let mut comparison = compare_runs(&run_a, &run_b, cmd.metric.as_deref())
        .map_err(|e| anyhow::anyhow!("compare: {e}"))?;
    // A Harbor job is shown as itself, not as the temporary run it was read into.
    comparison.a.run_dir.clone_from(&cmd.run_a);
    comparison.b.run_dir.clone_from(&cmd.run_b);
    if cmd.json {
        crate::outln!("{}", serde_json::to_string_pretty(&comparison)?);
    } else {
        crate::outln!("{}", render_text(&comparison).trim_end());
    }
    Ok(0)
}
