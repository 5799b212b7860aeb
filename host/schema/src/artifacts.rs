//! `attempt-N/artifacts.manifest.json`: the collection journal of an attempt's submission
//! artifacts (seed 004), next to `attempt-N/artifacts/`. Its digests and verification are
//! `agentcompass-results`' (`artifacts`).

use agentcompass_plugin_api::contracts::ArtifactSpec;
use serde::{Deserialize, Serialize};

/// The manifest's file name, next to the `artifacts` directory in the attempt directory.
pub const MANIFEST_FILE: &str = "artifacts.manifest.json";
/// The manifest schema written by this host.
pub const MANIFEST_SCHEMA: u32 = 1;

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
    /// Content digest (see `agentcompass_results::artifacts`); `null` when nothing was collected.
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
