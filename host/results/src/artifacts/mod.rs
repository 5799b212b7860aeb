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

use sha2::{Digest, Sha256};

/// The directory of an attempt holding the downloaded artifacts.
pub const ARTIFACTS_DIR: &str = "artifacts";
pub use agentcompass_schema::artifacts::{
    ArtifactManifest, EntryKind, EntryStatus, FileRecord, LinkRecord, ManifestEntry, MANIFEST_FILE,
    MANIFEST_SCHEMA,
};

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
