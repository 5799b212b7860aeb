//! The submission-artifact manifest (seed 004, "Submission artifacts and replay"): its
//! persisted shape (`attempt-N/artifacts.manifest.json`, next to `attempt-N/artifacts/`), its
//! digests, and its verification against the local bytes ([`verify_manifest`],
//! [`verify_attempt_dir`]) before fresh evaluation, evaluation-only recovery or result reuse
//! use them. Capturing (exclusions, measuring, transfers) is the runtime's.
//!
//!
//! # Digests
//!
//! A file's `sha256` is the digest of its bytes. A directory's `sha256` is the digest over its
//! members sorted by relative path, one line each: `<path>\0<mode, octal>\0<sha256>\n` for a
//! file and `<path>\0link\0<sha256 of the link target>\n` for a symlink. Subdirectories are
//! listed in `dirs` (so empty ones survive a restore) but are not part of the digest.

mod verify;

pub use verify::{verify_attempt_dir, verify_manifest};

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use agentcompass_plugin_api::contracts::ArtifactSpec;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The directory of an attempt holding the downloaded artifacts.
pub const ARTIFACTS_DIR: &str = "artifacts";
/// The manifest's file name, next to [`ARTIFACTS_DIR`] in the attempt directory.
pub const MANIFEST_FILE: &str = "artifacts.manifest.json";
/// The manifest schema written by this host.
pub const MANIFEST_SCHEMA: u32 = 1;

/// A failure to capture, measure or verify artifacts: one line naming the path.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// A file-system operation failed.
    #[error("cannot {op} {}: {cause}", .path.display())]
    Io {
        /// What was attempted.
        op: &'static str,
        /// The path operated on.
        path: PathBuf,
        /// The underlying error.
        cause: io::Error,
    },
    /// A symlink in a downloaded directory points outside the artifact (or is absolute).
    #[error("artifact link {} escapes the artifact (target {target})", .path.display())]
    EscapingLink {
        /// The link.
        path: PathBuf,
        /// Its target.
        target: String,
    },
    /// A downloaded path is neither a file, a directory nor a symlink.
    #[error("artifact {} is a special file (not a regular file, directory or link)", .path.display())]
    SpecialFile {
        /// The path.
        path: PathBuf,
    },
    /// A downloaded path name is not valid UTF-8.
    #[error("artifact path {} is not valid UTF-8", .path.display())]
    NonUtf8 {
        /// The path.
        path: PathBuf,
    },
    /// A collection limit was exceeded.
    #[error(
        "artifact {source_path} exceeds artifact_limits.{limit}: measured {measured}, limit {max}"
    )]
    LimitExceeded {
        /// The declared source being collected.
        source_path: String,
        /// `max_mb` or `max_files`.
        limit: &'static str,
        /// The measured figure (with unit).
        measured: String,
        /// The limit (with unit).
        max: String,
    },
    /// A local file does not match its manifest record.
    #[error("artifact {} does not match the manifest: {reason}", .path.display())]
    Mismatch {
        /// The local path.
        path: PathBuf,
        /// What differs.
        reason: String,
    },
    /// The manifest itself is unusable.
    #[error("artifact manifest {}: {reason}", .path.display())]
    InvalidManifest {
        /// The manifest (or artifacts directory).
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

impl ArtifactError {
    /// An I/O failure of `op` on `path`.
    pub fn io(op: &'static str, path: &Path, cause: io::Error) -> Self {
        ArtifactError::Io {
            op,
            path: path.to_path_buf(),
            cause,
        }
    }
}

/// What a collected source is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
}

/// What happened to a declared source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryStatus {
    /// Downloaded, pruned, measured and hashed.
    Collected,
    /// The source does not exist in the sandbox (not an error).
    Missing,
    /// A file source matched one of its own exclusions (nothing stored).
    Excluded,
    /// Transfer, limit or validation failure (a capture error).
    Failed,
    /// Not attempted because an earlier entry failed or the budget ran out.
    Uncollected,
}

/// One file of a collected directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    /// Path relative to the entry's local copy (`/`-separated).
    pub path: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Lowercase hex sha256 of the content.
    pub sha256: String,
    /// Permission bits, octal (`"0644"`).
    pub mode: String,
}

/// A symlink kept inside a collected directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkRecord {
    /// Path relative to the entry's local copy.
    pub path: String,
    /// The (relative, non-escaping) link target.
    pub target: String,
}

/// One declared source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    /// Absolute sandbox source path.
    pub source: String,
    /// Path relative to `attempt-N/artifacts/`.
    pub destination: String,
    /// `file` or `directory`; `null` when nothing was collected.
    pub kind: Option<EntryKind>,
    /// What happened.
    pub status: EntryStatus,
    /// Content bytes stored (files only).
    pub bytes: u64,
    /// Number of files and links stored.
    pub entries: u64,
    /// Content digest (see the module docs); `null` when nothing was collected.
    pub sha256: Option<String>,
    /// Permission bits of a file entry (octal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Paths removed by `exclude` patterns.
    #[serde(default)]
    pub excluded: u64,
    /// The files of a directory entry, sorted by path.
    #[serde(default)]
    pub files: Vec<FileRecord>,
    /// The subdirectories of a directory entry, sorted.
    #[serde(default)]
    pub dirs: Vec<String>,
    /// The symlinks of a directory entry, sorted by path.
    #[serde(default)]
    pub links: Vec<LinkRecord>,
    /// The capture error of a `failed` entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ManifestEntry {
    /// An entry with nothing collected (`missing`, `failed`, `uncollected`).
    pub fn empty(spec: &ArtifactSpec, status: EntryStatus) -> Self {
        ManifestEntry {
            source: spec.source.clone(),
            destination: spec.destination_or_default(),
            kind: None,
            status,
            bytes: 0,
            entries: 0,
            sha256: None,
            mode: None,
            excluded: 0,
            files: Vec::new(),
            dirs: Vec::new(),
            links: Vec::new(),
            error: None,
        }
    }

    /// A `failed` entry carrying `error`.
    pub fn failed(spec: &ArtifactSpec, error: String) -> Self {
        ManifestEntry {
            error: Some(error),
            ..ManifestEntry::empty(spec, EntryStatus::Failed)
        }
    }
}

/// The collection journal of one attempt (`attempt-N/artifacts.manifest.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactManifest {
    /// [`MANIFEST_SCHEMA`].
    pub schema_version: u32,
    /// Every declared entry was collected, found missing or excluded.
    pub complete: bool,
    /// Sum of the entries' content bytes.
    pub total_bytes: u64,
    /// Every declared source, in declaration order.
    pub entries: Vec<ManifestEntry>,
}

impl ArtifactManifest {
    /// A manifest over `entries`; `complete` when none failed or was left uncollected.
    pub fn new(entries: Vec<ManifestEntry>) -> Self {
        let complete = entries
            .iter()
            .all(|e| !matches!(e.status, EntryStatus::Failed | EntryStatus::Uncollected));
        ArtifactManifest {
            schema_version: MANIFEST_SCHEMA,
            complete,
            total_bytes: entries.iter().map(|e| e.bytes).sum(),
            entries,
        }
    }

    /// The manifest as JSON.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// Lowercase hex sha256 of the file at `path` (streamed): the one file digest of the host
/// (artifacts, `plugin package`).
pub fn sha256_file(path: &Path) -> Result<String, ArtifactError> {
    let mut file = fs::File::open(path).map_err(|e| ArtifactError::io("open", path, e))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(|e| ArtifactError::io("read", path, e))?;
    Ok(hex::encode(hasher.finalize()))
}

/// The permission bits of `meta` as four octal digits (`0644`).
pub fn mode_string(meta: &fs::Metadata) -> String {
    format!("{:04o}", meta.permissions().mode() & 0o7777)
}

/// The directory digest over sorted file and link records (see the module docs).
pub fn directory_digest(files: &[FileRecord], links: &[LinkRecord]) -> String {
    let mut lines: Vec<(String, String)> = files
        .iter()
        .map(|f| {
            (
                f.path.clone(),
                format!("{}\0{}\0{}\n", f.path, f.mode, f.sha256),
            )
        })
        .chain(links.iter().map(|l| {
            let target = hex::encode(Sha256::digest(l.target.as_bytes()));
            (l.path.clone(), format!("{}\0link\0{target}\n", l.path))
        }))
        .collect();
    lines.sort();
    let mut hasher = Sha256::new();
    for (_, line) in &lines {
        hasher.update(line.as_bytes());
    }
    hex::encode(hasher.finalize())
}

/// Whether the relative link `target`, placed at `link` (relative to the entry root), stays
/// inside the root.
pub fn link_stays_inside(link: &str, target: &str) -> bool {
    if Path::new(target).is_absolute() || target.is_empty() {
        return false;
    }
    let mut depth: Vec<&str> = link.split('/').collect();
    depth.pop();
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if depth.pop().is_none() {
                    return false;
                }
            }
            other => depth.push(other),
        }
    }
    true
}

/// The entries of `dir` as (name, path), sorted by name; names must be UTF-8.
pub fn sorted_children(dir: &Path) -> Result<Vec<(String, PathBuf)>, ArtifactError> {
    let mut children = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| ArtifactError::io("list", dir, e))? {
        let entry = entry.map_err(|e| ArtifactError::io("list", dir, e))?;
        let path = entry.path();
        let name = entry
            .file_name()
            .into_string()
            .map_err(|_| ArtifactError::NonUtf8 { path: path.clone() })?;
        children.push((name, path));
    }
    children.sort();
    Ok(children)
}

/// `prefix/name`, or `name` when `prefix` is empty.
pub fn join_relative(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}/{name}")
    }
}

/// Writes `manifest` atomically (pretty JSON, mode 0644) to `path`.
pub fn write_manifest(path: &Path, manifest: &ArtifactManifest) -> Result<(), ArtifactError> {
    let mut bytes =
        serde_json::to_vec_pretty(manifest).map_err(|e| ArtifactError::InvalidManifest {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
    bytes.push(b'\n');
    crate::fsutil::write_atomic(path, &bytes, 0o644)
        .map_err(|e| ArtifactError::io("write", path, e))
}

/// Reads the manifest at `path`; `Ok(None)` when it does not exist.
pub fn read_manifest(path: &Path) -> Result<Option<ArtifactManifest>, ArtifactError> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ArtifactError::io("read", path, e)),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| ArtifactError::InvalidManifest {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
}
