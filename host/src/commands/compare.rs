//! `agentcompass-host compare RUN_A RUN_B [--json] [--metric ID]`: run B against run A on the
//! tasks both share (`agentcompass_host::compare`).

use agentcompass_host::compare::{compare as compare_runs, render_text};

use crate::cli::CompareCmd;

/// Prints the comparison (text, or JSON with `--json`); a run that cannot be read, runs of
/// different benchmarks or an unknown `--metric` are one-line errors (exit 2).
pub fn compare(cmd: &CompareCmd) -> anyhow::Result<i32> {
    let comparison = compare_runs(&cmd.run_a, &cmd.run_b, cmd.metric.as_deref())
        .map_err(|e| anyhow::anyhow!("compare: {e}"))?;
    if cmd.json {
        crate::outln!("{}", serde_json::to_string_pretty(&comparison)?);
    } else {
        crate::outln!("{}", render_text(&comparison).trim_end());
    }
    Ok(0)
}
