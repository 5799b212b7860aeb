//! Moving artifact bytes between the session and the attempt directory: downloads, and the
//! ordered restore of a fresh evaluation.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use agentcompass_plugin_api::contracts::{ArtifactLimits, ArtifactSpec, ExecRequest};
use agentcompass_plugin_api::sdk::SessionRef;
use agentcompass_plugin_api::Error;
use agentcompass_results::artifacts::{
    read_manifest, verify_manifest, ArtifactError, ArtifactManifest, EntryKind, EntryStatus,
    ManifestEntry, ARTIFACTS_DIR, MANIFEST_FILE,
};

use super::measure::{measure_entry, Budget};
use crate::issue_codes::{self as codes, IssueCode};

/// The issue code of a failure to capture a downloaded artifact.
pub(super) fn capture_code(error: &ArtifactError) -> IssueCode {
    match error {
        ArtifactError::LimitExceeded { .. } => codes::ARTIFACT_LIMIT_EXCEEDED,
        _ => codes::ARTIFACT_CAPTURE_FAILED,
    }
}

/// One upload of a fresh-evaluation restore.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RestoreStep {
    /// The sandbox path to restore.
    pub source: String,
    /// The local copy, relative to `attempt-N/artifacts/`.
    pub destination: String,
    /// File or directory.
    pub kind: EntryKind,
}

fn normalized_source(source: &str) -> String {
    let trimmed = source.trim_end_matches('/');
    if trimmed.is_empty() {
        "/".into()
    } else {
        trimmed.to_string()
    }
}

/// The restore order of `manifest`: collected entries only (missing/excluded upload nothing),
/// parents before descendants (by source depth, declaration order among equals), identical
/// copies of one source once. Copies of one source that differ in kind or content are an
/// error.
pub(crate) fn restore_plan(manifest: &ArtifactManifest) -> Result<Vec<RestoreStep>, ArtifactError> {
    let mut by_source: BTreeMap<String, &ManifestEntry> = BTreeMap::new();
    let mut steps = Vec::new();
    for entry in &manifest.entries {
        let source = normalized_source(&entry.source);
        if let Some(first) = by_source.get(&source) {
            let same = first.status == entry.status
                && first.kind == entry.kind
                && first.sha256 == entry.sha256
                && first.mode == entry.mode;
            if !same {
                return Err(ArtifactError::InvalidManifest {
                    path: PathBuf::from(&entry.destination),
                    reason: format!(
                        "conflicting copies of {source} ({} and {})",
                        first.destination, entry.destination
                    ),
                });
            }
            continue;
        }
        by_source.insert(source.clone(), entry);
        if entry.status != EntryStatus::Collected {
            continue;
        }
        let Some(kind) = entry.kind else { continue };
        steps.push(RestoreStep {
            source,
            destination: entry.destination.clone(),
            kind,
        });
    }
    steps.sort_by_key(|s| {
        Path::new(&s.source)
            .components()
            .filter(|c| matches!(c, Component::Normal(_)))
            .count()
    });
    Ok(steps)
}

// ---------------------------------------------------------------------------------------------
// Session transfers.

/// A failed artifact stage: the issue code and its one-line message.
pub(crate) type StageError = (IssueCode, String);

fn remove_local(path: &Path) {
    let removed = match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(_) => return,
    };
    if let Err(e) = removed {
        tracing::warn!("cannot remove unvalidated artifact {}: {e}", path.display());
    }
}

/// Empties `root` (the attempt's `artifacts/` directory) so a physical run starts with an
/// empty destination, and removes a stale manifest next to it.
pub(crate) fn reset_destination(root: &Path, manifest: &Path) -> Result<(), StageError> {
    let failed = |op: &str, path: &Path, e: io::Error| {
        (
            codes::ARTIFACT_DOWNLOAD_FAILED,
            format!("cannot {op} {}: {e}", path.display()),
        )
    };
    match fs::remove_dir_all(root) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(failed("clear", root, e)),
    }
    match fs::remove_file(manifest) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(failed("remove", manifest, e)),
    }
    fs::create_dir_all(root).map_err(|e| failed("create", root, e))
}

/// Downloads every declared path of `specs` into `root` and measures it, appending one
/// manifest entry per processed spec to `entries` (so a caller that stops this future early
/// still has the entries done so far). The first transfer or capture error stops the
/// download: its entry is recorded as `failed`, its local copy removed, and the error
/// returned. The limits are shared by all entries.
pub(crate) async fn download_all(
    session: &SessionRef,
    specs: &[ArtifactSpec],
    root: &Path,
    limits: &ArtifactLimits,
    entries: &mut Vec<ManifestEntry>,
) -> Result<(), StageError> {
    let mut budget = Budget::new(limits);
    for spec in specs {
        let destination = spec.destination_or_default();
        let target = root.join(&destination);
        let transferred = async {
            if let Some(parent) = target.parent() {
                fs::create_dir_all(parent)
                    .map_err(|e| Error::msg(format!("cannot create {}: {e}", parent.display())))?;
            }
            if session.is_dir(&spec.source).await? {
                session.download_dir(&spec.source, &target).await?;
            } else if session.is_file(&spec.source).await? {
                session.download(&spec.source, &target).await?;
            }
            Ok::<_, Error>(())
        }
        .await;
        if let Err(e) = transferred {
            remove_local(&target);
            let message = format!("cannot download artifact {}: {}", spec.source, e.message);
            entries.push(ManifestEntry::failed(spec, message.clone()));
            return Err((codes::ARTIFACT_DOWNLOAD_FAILED, message));
        }
        let measured =
            crate::runtime::blocking::blocking(|| measure_entry(spec, &target, &mut budget));
        match measured {
            Ok(entry) => entries.push(entry),
            Err(e) => {
                remove_local(&target);
                let message = e.to_string();
                entries.push(ManifestEntry::failed(spec, message.clone()));
                return Err((capture_code(&e), message));
            }
        }
    }
    Ok(())
}

/// The `sh` script that makes `$1` an existing, empty directory (the directory itself is kept,
/// for mounted workspaces; hidden entries are removed too).
pub(super) const CLEAR_DIR_SCRIPT: &str =
    r#"set -e; mkdir -p -- "$1"; rm -rf -- "$1"/* "$1"/.[!.]* "$1"/..?*"#;
/// The `sh` script that creates the parent directory of `$1`.
const MAKE_PARENT_SCRIPT: &str = r#"set -e; mkdir -p -- "$(dirname -- "$1")""#;

/// Why a restore script did not succeed.
#[derive(Debug, thiserror::Error)]
enum ScriptError {
    /// The environment could not run it (the provider's message).
    #[error("{0}")]
    Environment(String),
    /// It ran and failed.
    #[error("exited with {returncode} (timed out: {timed_out}): {stderr}")]
    Failed {
        /// Its exit code.
        returncode: i32,
        /// Whether it ran out of time.
        timed_out: bool,
        /// Its standard error, trimmed.
        stderr: String,
    },
}

async fn run_script(
    session: &SessionRef,
    script: &str,
    path: &str,
    timeout_seconds: f64,
) -> Result<(), ScriptError> {
    let request = ExecRequest::argv(["sh", "-c", script, "sh", path]).timeout(timeout_seconds);
    let out = session
        .exec(request)
        .await
        .map_err(|e| ScriptError::Environment(e.message))?;
    if out.timed_out || out.returncode != 0 {
        return Err(ScriptError::Failed {
            returncode: out.returncode,
            timed_out: out.timed_out,
            stderr: out.stderr.trim().to_string(),
        });
    }
    Ok(())
}

/// Fresh-evaluation restore from `attempt_dir`: verifies `artifacts.manifest.json` against the
/// local copies (a mismatch is `artifact_verification_failed`, naming the file), then uploads
/// the collected entries to their sources, parents before descendants; a directory restore
/// first empties the target (keeping the directory). `missing`/`excluded` entries upload
/// nothing. Without a manifest (a legacy attempt), the local copies of `specs` are uploaded
/// unverified. Returns how many sources were restored.
pub(crate) async fn restore_all(
    session: &SessionRef,
    attempt_dir: &Path,
    specs: &[ArtifactSpec],
    timeout_seconds: f64,
) -> Result<usize, StageError> {
    let root = attempt_dir.join(ARTIFACTS_DIR);
    let verified = crate::runtime::blocking::blocking(|| {
        let manifest = read_manifest(&attempt_dir.join(MANIFEST_FILE))?;
        if let Some(manifest) = &manifest {
            verify_manifest(manifest, &root)?;
            return restore_plan(manifest).map(Some);
        }
        Ok(None)
    })
    .map_err(|e: ArtifactError| (codes::ARTIFACT_VERIFICATION_FAILED, e.to_string()))?;
    let restore_failed = |source: &str, why: String| {
        (
            codes::ARTIFACT_RESTORE_FAILED,
            format!("cannot restore artifact {source}: {why}"),
        )
    };
    let steps = match verified {
        Some(steps) => steps,
        None => {
            // Legacy attempt: no manifest, upload what is there.
            let mut steps = Vec::new();
            for spec in specs {
                let destination = spec.destination_or_default();
                let local = root.join(&destination);
                let kind = if local.is_dir() {
                    EntryKind::Directory
                } else if local.is_file() {
                    EntryKind::File
                } else {
                    continue;
                };
                steps.push(RestoreStep {
                    source: normalized_source(&spec.source),
                    destination,
                    kind,
                });
            }
            steps.sort_by_key(|s| Path::new(&s.source).components().count());
            steps
        }
    };
    for step in &steps {
        let local = root.join(&step.destination);
        match step.kind {
            EntryKind::Directory => {
                run_script(session, CLEAR_DIR_SCRIPT, &step.source, timeout_seconds)
                    .await
                    .map_err(|e| restore_failed(&step.source, format!("clearing it {e}")))?;
                session
                    .upload_dir(&local, &step.source)
                    .await
                    .map_err(|e| restore_failed(&step.source, e.message))?;
            }
            EntryKind::File => {
                run_script(session, MAKE_PARENT_SCRIPT, &step.source, timeout_seconds)
                    .await
                    .map_err(|e| {
                        restore_failed(&step.source, format!("creating its parent {e}"))
                    })?;
                session
                    .upload(&local, &step.source)
                    .await
                    .map_err(|e| restore_failed(&step.source, e.message))?;
            }
        }
    }
    Ok(steps.len())
}
