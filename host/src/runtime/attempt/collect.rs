//! Artifact collection after the agent run: the declared commands, then the download of the
//! declared paths into `attempt-N/artifacts/` and the checksummed manifest next to it.

use std::path::Path;

use agentcompass_plugin_api::contracts::{
    ArtifactSpec, ExecRequest, IssuePhase, IssueSeverity, RunResult,
};
use agentcompass_plugin_api::sdk::SessionRef;
use agentcompass_plugin_api::Error;
use agentcompass_results::artifacts as manifest;
use serde_json::json;

use super::outcome::{whole_seconds, Halt, IssueRule};
use super::stage::Step;
use crate::issue_codes as codes;
use crate::progress::TaskPhase;
use crate::runtime::artifacts::{self, StageError};
use crate::runtime::blocking::blocking;
use crate::runtime::phase::{run_phase, watchdog, PhaseOutcome};

/// Runs the declared collection commands and downloads the declared paths into
/// `DIR/artifacts/` (when saving, else the harness's own only; emptied first), then writes the
/// checksummed manifest `DIR/artifacts.manifest.json` (also kept as `declared_artifacts`,
/// partial with `complete: false` after a failure). `dir` is the attempt's directory, or a
/// step's (`attempt-N/steps/<name>/`). Failures are FATAL collect issues.
pub(super) async fn collect_artifacts(
    step: &Step<'_>,
    session: &SessionRef,
    dir: &Path,
    result: &mut RunResult,
) {
    if !step.plan.collect_artifacts() {
        return;
    }
    match run_commands(step, session).await {
        Ok(()) => {}
        Err(Halt::Cancelled(_)) => return,
        Err(Halt::Issue(issue)) => {
            result.push_issue(issue);
            return;
        }
    }
    // The harness's own files (its agent's raw logs) are kept even when the benchmark's
    // artifacts are not saved.
    let plan = step.plan;
    let specs: Vec<ArtifactSpec> = if plan.save_artifacts {
        plan.artifacts.clone()
    } else {
        let own = &plan.harness_plan.artifacts;
        plan.artifacts
            .iter()
            .filter(|spec| own.contains(spec))
            .cloned()
            .collect()
    };
    if !specs.is_empty() {
        download(step, session, dir, result, &specs).await;
    }
}

/// The plan's `artifact_collect` commands, in order, under their total budget.
async fn run_commands(step: &Step<'_>, session: &SessionRef) -> Result<(), Halt> {
    const RULE: IssueRule = IssueRule {
        phase: IssuePhase::Collect,
        severity: IssueSeverity::Fatal,
        failed: codes::ARTIFACT_COLLECT_FAILED,
        timed_out: codes::ARTIFACT_COLLECT_TIMEOUT,
        timeout_message: |_| "artifact commands exceeded their budget".into(),
    };
    let plan = step.plan;
    step.rc.phase_with(
        step.task,
        step.attempt,
        TaskPhase::CollectArtifacts,
        json!({"command_count": plan.artifact_collect.len(), "timeout_seconds": plan.artifact_collect_timeout_seconds}),
    );
    let commands = async {
        for command in &plan.artifact_collect {
            let exec = ExecRequest::argv(["bash", "-c", command.command.as_str()])
                .timeout(command.timeout_seconds);
            let out = session.exec(exec).await?;
            if out.timed_out || out.returncode != 0 {
                return Err(Error::msg(format!(
                    "artifact command exited with {} (timed out: {})",
                    out.returncode, out.timed_out
                )));
            }
        }
        Ok(())
    };
    let budget = watchdog(plan.artifact_collect_timeout_seconds);
    run_phase(&step.rc.cancel, budget, commands)
        .await
        .or_halt(&RULE)
}

/// Downloads the declared paths and writes the manifest (entries not reached are
/// `uncollected`).
async fn download(
    step: &Step<'_>,
    session: &SessionRef,
    attempt_dir: &Path,
    result: &mut RunResult,
    specs: &[ArtifactSpec],
) {
    let plan = step.plan;
    let root = attempt_dir.join(manifest::ARTIFACTS_DIR);
    let manifest_path = attempt_dir.join(manifest::MANIFEST_FILE);
    if let Err((code, message)) = blocking(|| artifacts::reset_destination(&root, &manifest_path)) {
        result.push_issue(code.fatal(IssuePhase::Collect, message));
        return;
    }
    let limits = &plan.artifact_limits;
    step.rc.phase_with(
        step.task,
        step.attempt,
        TaskPhase::DownloadArtifacts,
        json!({
            "entry_count": specs.len(),
            "max_bytes": limits.max_mb.saturating_mul(1024 * 1024),
            "max_entries": limits.max_files,
            "timeout_seconds": limits.timeout_seconds,
        }),
    );
    let mut entries = Vec::new();
    let transfer = async {
        Ok::<_, Error>(artifacts::download_all(session, specs, &root, limits, &mut entries).await)
    };
    let outcome = run_phase(
        &step.rc.cancel,
        watchdog(Some(limits.timeout_seconds)),
        transfer,
    )
    .await;
    let failure = download_failure(outcome);
    // Entries not reached (an earlier failure, the timeout or cancellation).
    for spec in specs.iter().skip(entries.len()) {
        entries.push(manifest::ManifestEntry::empty(
            spec,
            manifest::EntryStatus::Uncollected,
        ));
    }
    let manifest = manifest::ArtifactManifest::new(entries);
    if let Err(e) = blocking(|| manifest::write_manifest(&manifest_path, &manifest)) {
        result
            .push_issue(codes::ARTIFACT_MANIFEST_FAILED.fatal(IssuePhase::Collect, e.to_string()));
    }
    result
        .artifacts
        .insert("declared_artifacts".into(), manifest.to_value());
    if let Some((code, message)) = failure {
        result.push_issue(code.fatal(IssuePhase::Collect, message));
    }
}

/// The failure of a download phase (none when it succeeded or was cancelled).
fn download_failure(outcome: PhaseOutcome<Result<(), StageError>>) -> Option<StageError> {
    match outcome {
        PhaseOutcome::Done(Ok(())) | PhaseOutcome::Cancelled => None,
        PhaseOutcome::Done(Err(failure)) => Some(failure),
        PhaseOutcome::Failed(e) => Some((codes::ARTIFACT_DOWNLOAD_FAILED, e.message)),
        PhaseOutcome::TimedOut(limit) => Some((
            codes::ARTIFACT_DOWNLOAD_TIMEOUT,
            format!(
                "artifact download exceeded artifact_limits.timeout_seconds ({} s)",
                whole_seconds(limit)
            ),
        )),
    }
}
