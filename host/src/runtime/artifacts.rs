//! The submission-artifact manifest (seed 004, "Submission artifacts and replay").
//!
//! After the declared paths of an attempt are downloaded into `attempt-N/artifacts/`, each
//! entry's local copy is pruned of its `exclude` matches, walked and hashed into an
//! [`ArtifactManifest`], written atomically as `attempt-N/artifacts.manifest.json` (next to
//! the `artifacts/` directory) and kept in `RunResult.artifacts["declared_artifacts"]`.
//! Fresh evaluation, evaluation-only recovery and result reuse verify the local bytes against
//! the manifest ([`verify_manifest`], [`verify_attempt_dir`]) before using them.
//!
//! # Exclusion patterns
//!
//! A subset of GNU tar's exclusion globs (`--exclude`, with tar's defaults for exclusions:
//! unanchored, wildcards match `/`):
//!
//! - `*` matches any sequence of characters (including `/`), `?` any one character,
//!   `[...]` one character of a set (`a-z` ranges, `!` or `^` negates, a leading `]` is
//!   literal), `\c` the character `c`;
//! - a pattern is matched against every trailing run of path components of the member name
//!   `<source basename>/<relative path>`: `*.tmp` excludes `x.tmp` at any depth, `cache`
//!   excludes every entry named `cache`, `build/out` excludes `build/out` at any depth;
//! - a pattern starting with `/` is anchored at the entry root (`/build` excludes only the
//!   top-level `build`); a leading `./` and trailing `/` are ignored;
//! - an excluded directory is removed with everything below it.
//!
//! Exclusions are applied after download by deleting the matching paths from the local copy.
//! The source itself is only matched by name for a file entry (status `excluded`).
//!
//! # Digests
//!
//! A file's `sha256` is the digest of its bytes. A directory's `sha256` is the digest over its
//! members sorted by relative path, one line each: `<path>\0<mode, octal>\0<sha256>\n` for a
//! file and `<path>\0link\0<sha256 of the link target>\n` for a symlink. Subdirectories are
//! listed in `dirs` (so empty ones survive a restore) but are not part of the digest.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use agentcompass_plugin_api::contracts::{ArtifactLimits, ArtifactSpec, ExecRequest};
use agentcompass_plugin_api::sdk::SessionRef;
use agentcompass_plugin_api::Error;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The directory of an attempt holding the downloaded artifacts.
pub(crate) const ARTIFACTS_DIR: &str = "artifacts";
/// The manifest's file name, next to [`ARTIFACTS_DIR`] in the attempt directory.
pub(crate) const MANIFEST_FILE: &str = "artifacts.manifest.json";
/// The manifest schema written by this host.
pub(crate) const MANIFEST_SCHEMA: u32 = 1;

/// A failure to capture, measure or verify artifacts: one line naming the path.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ArtifactError {
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
    fn io(op: &'static str, path: &Path, cause: io::Error) -> Self {
        ArtifactError::Io {
            op,
            path: path.to_path_buf(),
            cause,
        }
    }

    /// The issue code for a capture failure.
    pub(crate) fn capture_code(&self) -> &'static str {
        match self {
            ArtifactError::LimitExceeded { .. } => "artifact_limit_exceeded",
            _ => "artifact_capture_failed",
        }
    }
}

/// What a collected source is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
}

/// What happened to a declared source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum EntryStatus {
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
pub(crate) struct FileRecord {
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
pub(crate) struct LinkRecord {
    /// Path relative to the entry's local copy.
    pub path: String,
    /// The (relative, non-escaping) link target.
    pub target: String,
}

/// One declared source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ManifestEntry {
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
    pub(crate) fn empty(spec: &ArtifactSpec, status: EntryStatus) -> Self {
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
    pub(crate) fn failed(spec: &ArtifactSpec, error: String) -> Self {
        ManifestEntry {
            error: Some(error),
            ..ManifestEntry::empty(spec, EntryStatus::Failed)
        }
    }
}

/// The collection journal of one attempt (`attempt-N/artifacts.manifest.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ArtifactManifest {
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
    pub(crate) fn new(entries: Vec<ManifestEntry>) -> Self {
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
    pub(crate) fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// The running totals checked against [`ArtifactLimits`] across all entries of an attempt.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    max_bytes: u64,
    max_entries: u64,
    bytes: u64,
    entries: u64,
}

impl Budget {
    /// A fresh budget for `limits` (`max_mb` MiB, `max_files` filesystem entries).
    pub(crate) fn new(limits: &ArtifactLimits) -> Self {
        Budget {
            max_bytes: limits.max_mb.saturating_mul(1024 * 1024),
            max_entries: limits.max_files,
            bytes: 0,
            entries: 0,
        }
    }

    /// Bytes counted so far.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Filesystem entries counted so far.
    #[cfg(test)]
    pub(crate) fn entries(&self) -> u64 {
        self.entries
    }

    fn add(&mut self, source: &str, bytes: u64, entries: u64) -> Result<(), ArtifactError> {
        self.bytes = self.bytes.saturating_add(bytes);
        self.entries = self.entries.saturating_add(entries);
        if self.bytes > self.max_bytes {
            return Err(ArtifactError::LimitExceeded {
                source_path: source.to_string(),
                limit: "max_mb",
                measured: format!("at least {} bytes", self.bytes),
                max: format!("{} bytes", self.max_bytes),
            });
        }
        if self.entries > self.max_entries {
            return Err(ArtifactError::LimitExceeded {
                source_path: source.to_string(),
                limit: "max_files",
                measured: format!("at least {} filesystem entries", self.entries),
                max: format!("{} entries", self.max_entries),
            });
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Exclusion globs.

/// Whether the glob `pattern` matches all of `text` (see the module docs for the syntax).
pub(crate) fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    // Where to resume after the last `*`: (pattern index after it, text index it covers to).
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        let step = match p.get(pi) {
            Some('*') => {
                star = Some((pi + 1, ti));
                pi += 1;
                continue;
            }
            Some('?') => Some(1),
            Some('[') => match class_match(&p[pi..], t[ti]) {
                Some((true, len)) => Some(len),
                Some((false, _)) => None,
                None => (t[ti] == '[').then_some(1),
            },
            Some('\\') if pi + 1 < p.len() => (p[pi + 1] == t[ti]).then_some(2),
            Some(c) => (*c == t[ti]).then_some(1),
            None => None,
        };
        match step {
            Some(len) => {
                pi += len;
                ti += 1;
            }
            None => match star {
                Some((after, covered)) => {
                    pi = after;
                    ti = covered + 1;
                    star = Some((after, covered + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Matches the bracket expression at the start of `p` against `c`: `Some((matched, length of
/// the expression))`, or `None` when the bracket is not closed (then it is a literal `[`).
fn class_match(p: &[char], c: char) -> Option<(bool, usize)> {
    let mut i = 1;
    let negated = matches!(p.get(i), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    loop {
        let lo = *p.get(i)?;
        if lo == ']' && !first {
            return Some((matched != negated, i + 1));
        }
        first = false;
        let (lo, mut next) = if lo == '\\' {
            (*p.get(i + 1)?, i + 2)
        } else {
            (lo, i + 1)
        };
        if p.get(next) == Some(&'-') && p.get(next + 1).is_some_and(|h| *h != ']') {
            let hi = *p.get(next + 1)?;
            if lo <= c && c <= hi {
                matched = true;
            }
            next += 2;
        } else if lo == c {
            matched = true;
        }
        i = next;
    }
}

/// A normalised exclusion pattern.
#[derive(Debug, Clone)]
struct Exclusion {
    pattern: String,
    anchored: bool,
}

fn exclusions(patterns: &[String]) -> Vec<Exclusion> {
    patterns
        .iter()
        .filter_map(|raw| {
            let mut pattern = raw.trim();
            while let Some(rest) = pattern.strip_prefix("./") {
                pattern = rest;
            }
            let anchored = pattern.starts_with('/');
            let pattern = pattern.trim_start_matches('/').trim_end_matches('/');
            (!pattern.is_empty()).then(|| Exclusion {
                pattern: pattern.to_string(),
                anchored,
            })
        })
        .collect()
}

/// Whether `relative` (below the entry root, `/`-separated) is excluded; `base` is the
/// source's last path component (the tar member prefix).
fn is_excluded(rules: &[Exclusion], base: &str, relative: &str) -> bool {
    let member = if base.is_empty() {
        relative.to_string()
    } else {
        format!("{base}/{relative}")
    };
    rules.iter().any(|rule| {
        if rule.anchored {
            return glob_match(&rule.pattern, relative);
        }
        // Every trailing run of components of the member name.
        let mut rest = member.as_str();
        loop {
            if glob_match(&rule.pattern, rest) {
                return true;
            }
            match rest.find('/') {
                Some(i) => rest = &rest[i + 1..],
                None => return false,
            }
        }
    })
}

/// Whether a file source with last component `name` is excluded by its own patterns.
pub(crate) fn file_excluded(patterns: &[String], name: &str) -> bool {
    is_excluded(&exclusions(patterns), "", name)
}

fn base_name(source: &str) -> String {
    Path::new(source.trim_end_matches('/'))
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// Measuring.

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Lowercase hex sha256 of the file at `path` (streamed).
pub(crate) fn sha256_file(path: &Path) -> Result<String, ArtifactError> {
    let mut file = fs::File::open(path).map_err(|e| ArtifactError::io("open", path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| ArtifactError::io("read", path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

fn mode_string(meta: &fs::Metadata) -> String {
    format!("{:04o}", meta.permissions().mode() & 0o7777)
}

/// The directory digest over sorted file and link records (see the module docs).
pub(crate) fn directory_digest(files: &[FileRecord], links: &[LinkRecord]) -> String {
    let mut lines: Vec<(String, String)> = files
        .iter()
        .map(|f| {
            (
                f.path.clone(),
                format!("{}\0{}\0{}\n", f.path, f.mode, f.sha256),
            )
        })
        .chain(links.iter().map(|l| {
            let target = hex(&Sha256::digest(l.target.as_bytes()));
            (l.path.clone(), format!("{}\0link\0{target}\n", l.path))
        }))
        .collect();
    lines.sort();
    let mut hasher = Sha256::new();
    for (_, line) in &lines {
        hasher.update(line.as_bytes());
    }
    hex(&hasher.finalize())
}

/// Whether the relative link `target`, placed at `link` (relative to the entry root), stays
/// inside the root.
fn link_stays_inside(link: &str, target: &str) -> bool {
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

/// The state of one directory walk.
struct Walker<'a> {
    rules: &'a [Exclusion],
    base: &'a str,
    source: &'a str,
    budget: &'a mut Budget,
    files: Vec<FileRecord>,
    dirs: Vec<String>,
    links: Vec<LinkRecord>,
    excluded: u64,
}

fn remove_path(path: &Path, is_dir: bool) -> Result<(), ArtifactError> {
    let removed = if is_dir {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    };
    removed.map_err(|e| ArtifactError::io("remove excluded", path, e))
}

/// The entries of `dir` as (name, path), sorted by name; names must be UTF-8.
fn sorted_children(dir: &Path) -> Result<Vec<(String, PathBuf)>, ArtifactError> {
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

fn join_relative(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}/{name}")
    }
}

impl Walker<'_> {
    fn walk(&mut self, dir: &Path, prefix: &str) -> Result<(), ArtifactError> {
        for (name, path) in sorted_children(dir)? {
            let relative = join_relative(prefix, &name);
            let meta =
                fs::symlink_metadata(&path).map_err(|e| ArtifactError::io("inspect", &path, e))?;
            if is_excluded(self.rules, self.base, &relative) {
                remove_path(&path, meta.is_dir())?;
                self.excluded += 1;
                continue;
            }
            let kind = meta.file_type();
            if kind.is_symlink() {
                let target = fs::read_link(&path)
                    .map_err(|e| ArtifactError::io("read link", &path, e))?
                    .into_os_string()
                    .into_string()
                    .map_err(|_| ArtifactError::NonUtf8 { path: path.clone() })?;
                if !link_stays_inside(&relative, &target) {
                    return Err(ArtifactError::EscapingLink { path, target });
                }
                self.budget.add(self.source, 0, 1)?;
                self.links.push(LinkRecord {
                    path: relative,
                    target,
                });
            } else if kind.is_dir() {
                self.budget.add(self.source, 0, 1)?;
                self.dirs.push(relative.clone());
                self.walk(&path, &relative)?;
            } else if kind.is_file() {
                self.budget.add(self.source, meta.len(), 1)?;
                self.files.push(FileRecord {
                    sha256: sha256_file(&path)?,
                    bytes: meta.len(),
                    mode: mode_string(&meta),
                    path: relative,
                });
            } else {
                return Err(ArtifactError::SpecialFile { path });
            }
        }
        Ok(())
    }
}

/// Measures the downloaded local copy of `spec` at `local`: applies the exclusions (deleting
/// matches), refuses escaping links and special files, hashes every file and counts the
/// totals against `budget`. A missing `local` yields a `missing` entry.
pub(crate) fn measure_entry(
    spec: &ArtifactSpec,
    local: &Path,
    budget: &mut Budget,
) -> Result<ManifestEntry, ArtifactError> {
    let meta = match fs::symlink_metadata(local) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(ManifestEntry::empty(spec, EntryStatus::Missing))
        }
        Err(e) => return Err(ArtifactError::io("inspect", local, e)),
    };
    let base = base_name(&spec.source);
    if meta.file_type().is_file() {
        if file_excluded(&spec.exclude, &base) {
            remove_path(local, false)?;
            return Ok(ManifestEntry {
                excluded: 1,
                ..ManifestEntry::empty(spec, EntryStatus::Excluded)
            });
        }
        budget.add(&spec.source, meta.len(), 1)?;
        return Ok(ManifestEntry {
            kind: Some(EntryKind::File),
            status: EntryStatus::Collected,
            bytes: meta.len(),
            entries: 1,
            sha256: Some(sha256_file(local)?),
            mode: Some(mode_string(&meta)),
            ..ManifestEntry::empty(spec, EntryStatus::Collected)
        });
    }
    if !meta.file_type().is_dir() {
        return Err(ArtifactError::SpecialFile {
            path: local.to_path_buf(),
        });
    }
    budget.add(&spec.source, 0, 1)?;
    let rules = exclusions(&spec.exclude);
    let mut walk = Walker {
        rules: &rules,
        base: &base,
        source: &spec.source,
        budget,
        files: Vec::new(),
        dirs: Vec::new(),
        links: Vec::new(),
        excluded: 0,
    };
    walk.walk(local, "")?;
    let sha256 = directory_digest(&walk.files, &walk.links);
    Ok(ManifestEntry {
        kind: Some(EntryKind::Directory),
        status: EntryStatus::Collected,
        bytes: walk.files.iter().map(|f| f.bytes).sum(),
        entries: (walk.files.len() + walk.links.len()) as u64,
        sha256: Some(sha256),
        excluded: walk.excluded,
        files: walk.files,
        dirs: walk.dirs,
        links: walk.links,
        ..ManifestEntry::empty(spec, EntryStatus::Collected)
    })
}

// ---------------------------------------------------------------------------------------------
// Reading, writing, verifying.

/// Writes `manifest` atomically (pretty JSON, mode 0644) to `path`.
pub(crate) fn write_manifest(
    path: &Path,
    manifest: &ArtifactManifest,
) -> Result<(), ArtifactError> {
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
pub(crate) fn read_manifest(path: &Path) -> Result<Option<ArtifactManifest>, ArtifactError> {
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

/// Whether `path` is a clean relative path (normal components only).
fn clean_relative(path: &str) -> bool {
    !path.is_empty()
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

fn check_file(local: &Path, bytes: u64, sha256: &str) -> Result<(), ArtifactError> {
    let mismatch = |reason: String| ArtifactError::Mismatch {
        path: local.to_path_buf(),
        reason,
    };
    let meta = match fs::symlink_metadata(local) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(mismatch("the file is missing".into()))
        }
        Err(e) => return Err(ArtifactError::io("inspect", local, e)),
    };
    if !meta.file_type().is_file() {
        return Err(mismatch("not a regular file".into()));
    }
    if meta.len() != bytes {
        return Err(mismatch(format!(
            "size {} bytes, recorded {bytes} bytes",
            meta.len()
        )));
    }
    let actual = sha256_file(local)?;
    if actual != sha256 {
        return Err(mismatch(format!("sha256 {actual}, recorded {sha256}")));
    }
    Ok(())
}

/// Lists every path below `dir` (relative, `/`-separated), without following links.
fn list_tree(
    dir: &Path,
    prefix: &str,
    out: &mut BTreeMap<String, PathBuf>,
) -> Result<(), ArtifactError> {
    for (name, path) in sorted_children(dir)? {
        let relative = join_relative(prefix, &name);
        let is_dir = fs::symlink_metadata(&path)
            .map_err(|e| ArtifactError::io("inspect", &path, e))?
            .is_dir();
        out.insert(relative.clone(), path.clone());
        if is_dir {
            list_tree(&path, &relative, out)?;
        }
    }
    Ok(())
}

fn verify_directory(entry: &ManifestEntry, local: &Path) -> Result<(), ArtifactError> {
    let mismatch = |path: &Path, reason: &str| ArtifactError::Mismatch {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    };
    match fs::symlink_metadata(local) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(mismatch(local, "not a directory")),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(mismatch(local, "the directory is missing"))
        }
        Err(e) => return Err(ArtifactError::io("inspect", local, e)),
    }
    let mut expected: BTreeSet<&str> = BTreeSet::new();
    for record in entry
        .files
        .iter()
        .map(|f| f.path.as_str())
        .chain(entry.dirs.iter().map(String::as_str))
        .chain(entry.links.iter().map(|l| l.path.as_str()))
    {
        if !clean_relative(record) {
            return Err(ArtifactError::InvalidManifest {
                path: local.to_path_buf(),
                reason: format!("invalid member path {record:?}"),
            });
        }
        expected.insert(record);
    }
    let mut present = BTreeMap::new();
    list_tree(local, "", &mut present)?;
    if let Some((_, path)) = present
        .iter()
        .find(|(rel, _)| !expected.contains(rel.as_str()))
    {
        return Err(mismatch(path, "not recorded in the manifest"));
    }
    for dir in &entry.dirs {
        let path = local.join(dir);
        if !fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            return Err(mismatch(&path, "the directory is missing"));
        }
    }
    for link in &entry.links {
        let path = local.join(&link.path);
        match fs::read_link(&path) {
            Ok(target) if target.as_os_str() == link.target.as_str() => {}
            Ok(_) => return Err(mismatch(&path, "the link target differs")),
            Err(_) => return Err(mismatch(&path, "the link is missing")),
        }
    }
    for file in &entry.files {
        check_file(&local.join(&file.path), file.bytes, &file.sha256)?;
    }
    let digest = directory_digest(&entry.files, &entry.links);
    if entry.sha256.as_deref() != Some(digest.as_str()) {
        return Err(mismatch(
            local,
            "the directory digest differs from its file records",
        ));
    }
    Ok(())
}

/// Verifies every `collected` entry of `manifest` against the local copies below `root`
/// (`attempt-N/artifacts/`): files exist with the recorded size and sha256, directories hold
/// exactly the recorded members. The first difference is the error.
pub(crate) fn verify_manifest(
    manifest: &ArtifactManifest,
    root: &Path,
) -> Result<(), ArtifactError> {
    if manifest.schema_version != MANIFEST_SCHEMA {
        return Err(ArtifactError::InvalidManifest {
            path: root.to_path_buf(),
            reason: format!("unsupported schema_version {}", manifest.schema_version),
        });
    }
    if !manifest.complete {
        return Err(ArtifactError::InvalidManifest {
            path: root.to_path_buf(),
            reason: "the collection is incomplete (complete = false)".into(),
        });
    }
    for entry in &manifest.entries {
        if entry.status != EntryStatus::Collected {
            continue;
        }
        if !clean_relative(&entry.destination) {
            return Err(ArtifactError::InvalidManifest {
                path: root.to_path_buf(),
                reason: format!("invalid destination {:?}", entry.destination),
            });
        }
        let local = root.join(&entry.destination);
        match (entry.kind, entry.sha256.as_deref()) {
            (Some(EntryKind::File), Some(sha256)) => check_file(&local, entry.bytes, sha256)?,
            (Some(EntryKind::Directory), Some(_)) => verify_directory(entry, &local)?,
            _ => {
                return Err(ArtifactError::InvalidManifest {
                    path: local,
                    reason: "a collected entry has no kind or sha256".into(),
                })
            }
        }
    }
    Ok(())
}

/// Verifies the artifacts of the attempt directory `attempt_dir` against its
/// [`MANIFEST_FILE`], when it has one (`Ok(false)`: no manifest, nothing verified).
pub(crate) fn verify_attempt_dir(attempt_dir: &Path) -> Result<bool, ArtifactError> {
    match read_manifest(&attempt_dir.join(MANIFEST_FILE))? {
        Some(manifest) => {
            verify_manifest(&manifest, &attempt_dir.join(ARTIFACTS_DIR))?;
            Ok(true)
        }
        None => Ok(false),
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
pub(crate) type StageError = (&'static str, String);

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
            "artifact_download_failed",
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
            return Err(("artifact_download_failed", message));
        }
        let measured = super::attempt::blocking(|| measure_entry(spec, &target, &mut budget));
        match measured {
            Ok(entry) => entries.push(entry),
            Err(e) => {
                remove_local(&target);
                let message = e.to_string();
                entries.push(ManifestEntry::failed(spec, message.clone()));
                return Err((e.capture_code(), message));
            }
        }
    }
    Ok(())
}

/// The `sh` script that makes `$1` an existing, empty directory (the directory itself is kept,
/// for mounted workspaces; hidden entries are removed too).
const CLEAR_DIR_SCRIPT: &str =
    r#"set -e; mkdir -p -- "$1"; rm -rf -- "$1"/* "$1"/.[!.]* "$1"/..?*"#;
/// The `sh` script that creates the parent directory of `$1`.
const MAKE_PARENT_SCRIPT: &str = r#"set -e; mkdir -p -- "$(dirname -- "$1")""#;

async fn run_script(
    session: &SessionRef,
    script: &str,
    path: &str,
    timeout_seconds: f64,
) -> Result<(), String> {
    let request = ExecRequest::argv(["sh", "-c", script, "sh", path]).timeout(timeout_seconds);
    let out = session.exec(request).await.map_err(|e| e.message)?;
    if out.timed_out || out.returncode != 0 {
        return Err(format!(
            "exited with {} (timed out: {}): {}",
            out.returncode,
            out.timed_out,
            out.stderr.trim()
        ));
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
    let verified = super::attempt::blocking(|| {
        let manifest = read_manifest(&attempt_dir.join(MANIFEST_FILE))?;
        if let Some(manifest) = &manifest {
            verify_manifest(manifest, &root)?;
            return restore_plan(manifest).map(Some);
        }
        Ok(None)
    })
    .map_err(|e: ArtifactError| ("artifact_verification_failed", e.to_string()))?;
    let restore_failed = |source: &str, why: String| {
        (
            "artifact_restore_failed",
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

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(source: &str, destination: &str, exclude: &[&str]) -> ArtifactSpec {
        ArtifactSpec {
            destination: Some(destination.into()),
            exclude: exclude.iter().map(|s| s.to_string()).collect(),
            ..ArtifactSpec::new(source)
        }
    }

    fn write(path: &Path, content: &[u8]) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }

    fn sha(content: &[u8]) -> String {
        hex(&Sha256::digest(content))
    }

    fn budget() -> Budget {
        Budget::new(&ArtifactLimits::default())
    }

    #[test]
    fn globs_cover_star_question_and_classes() {
        assert!(glob_match("*.tmp", "a.tmp"));
        assert!(glob_match("*.tmp", "dir/a.tmp"), "`*` matches `/`");
        assert!(!glob_match("*.tmp", "a.tmpx"));
        assert!(glob_match("a?c", "abc"));
        assert!(!glob_match("a?c", "ac"));
        assert!(glob_match("[abc]x", "bx"));
        assert!(!glob_match("[!abc]x", "bx"));
        assert!(glob_match("[^abc]x", "dx"));
        assert!(glob_match("file[0-9]", "file7"));
        assert!(!glob_match("file[0-9]", "filex"));
        assert!(glob_match("[]]", "]"));
        assert!(glob_match("[", "["), "an unclosed bracket is literal");
        assert!(glob_match("\\*", "*"));
        assert!(!glob_match("\\*", "a"));
        assert!(glob_match("*", ""));
        assert!(glob_match("a*b*c", "aXXbYYc"));
        assert!(!glob_match("a*b*c", "aXXbYY"));
        assert!(glob_match("**", "a/b"));
    }

    #[test]
    fn exclusions_are_unanchored_unless_rooted() {
        let rules = exclusions(&[
            "*.tmp".into(),
            "cache".into(),
            "/top".into(),
            "./b/c/".into(),
        ]);
        assert!(is_excluded(&rules, "sub", "x.tmp"));
        assert!(is_excluded(&rules, "sub", "deep/x.tmp"));
        assert!(is_excluded(&rules, "sub", "cache"));
        assert!(is_excluded(&rules, "sub", "a/cache"));
        assert!(!is_excluded(&rules, "sub", "cached"));
        assert!(is_excluded(&rules, "sub", "top"));
        assert!(!is_excluded(&rules, "sub", "a/top"));
        assert!(is_excluded(&rules, "sub", "a/b/c"));
        assert!(!is_excluded(&rules, "sub", "b"));
        // The source's basename is the member prefix, as in tar.
        let rules = exclusions(&["sub/keep.txt".into()]);
        assert!(is_excluded(&rules, "sub", "keep.txt"));
        assert!(exclusions(&["".into(), "/".into()]).is_empty());
    }

    #[test]
    fn a_file_entry_is_hashed() {
        let dir = tempfile::tempdir().unwrap();
        let local = dir.path().join("result.json");
        write(&local, b"{\"ok\": true}");
        let entry = measure_entry(
            &spec("/app/result.json", "result.json", &[]),
            &local,
            &mut budget(),
        )
        .unwrap();
        assert_eq!(entry.kind, Some(EntryKind::File));
        assert_eq!(entry.status, EntryStatus::Collected);
        assert_eq!(entry.bytes, 12);
        assert_eq!(entry.entries, 1);
        assert_eq!(
            entry.sha256.as_deref(),
            Some(sha(b"{\"ok\": true}").as_str())
        );
        assert!(entry.mode.is_some());
        assert!(entry.files.is_empty());
    }

    #[test]
    fn a_directory_entry_lists_files_dirs_and_links() {
        let dir = tempfile::tempdir().unwrap();
        let local = dir.path().join("sub");
        write(&local.join("a.txt"), b"hello");
        write(&local.join("nested/b.bin"), &[0, 1, 2, 255]);
        fs::create_dir_all(local.join("empty")).unwrap();
        std::os::unix::fs::symlink("nested/b.bin", local.join("link")).unwrap();
        let entry = measure_entry(&spec("/app/sub", "sub", &[]), &local, &mut budget()).unwrap();
        assert_eq!(entry.kind, Some(EntryKind::Directory));
        assert_eq!(entry.bytes, 9);
        assert_eq!(entry.entries, 3);
        let paths: Vec<&str> = entry.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["a.txt", "nested/b.bin"]);
        assert_eq!(entry.files[0].sha256, sha(b"hello"));
        assert_eq!(entry.dirs, ["empty", "nested"]);
        assert_eq!(entry.links[0].target, "nested/b.bin");
        assert_eq!(
            entry.sha256.as_deref(),
            Some(directory_digest(&entry.files, &entry.links).as_str())
        );
        // The digest depends on content and mode.
        let mut changed = entry.files.clone();
        changed[0].mode = "0600".into();
        assert_ne!(
            directory_digest(&changed, &entry.links),
            entry.sha256.clone().unwrap()
        );
    }

    #[test]
    fn an_empty_directory_is_collected_with_zero_bytes_and_a_missing_one_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let local = dir.path().join("empty");
        fs::create_dir(&local).unwrap();
        let entry = measure_entry(
            &spec("/logs/artifacts", "logs/artifacts", &[]),
            &local,
            &mut budget(),
        )
        .unwrap();
        assert_eq!(entry.status, EntryStatus::Collected);
        assert_eq!((entry.bytes, entry.entries), (0, 0));
        assert_eq!(entry.sha256.as_deref(), Some(sha(b"").as_str()));
        let missing = measure_entry(
            &spec("/nope", "nope", &[]),
            &dir.path().join("nope"),
            &mut budget(),
        )
        .unwrap();
        assert_eq!(missing.status, EntryStatus::Missing);
        assert_eq!(missing.kind, None);
        let manifest = ArtifactManifest::new(vec![entry, missing]);
        assert!(manifest.complete);
        assert_eq!(manifest.total_bytes, 0);
    }

    #[test]
    fn exclusions_delete_matches_before_hashing() {
        let dir = tempfile::tempdir().unwrap();
        let local = dir.path().join("sub");
        write(&local.join("keep.txt"), b"keep");
        write(&local.join("drop.tmp"), b"drop");
        write(&local.join("deep/x.tmp"), b"x");
        write(&local.join("cache/big.bin"), b"big");
        let entry = measure_entry(
            &spec("/app/sub", "sub", &["*.tmp", "cache"]),
            &local,
            &mut budget(),
        )
        .unwrap();
        let paths: Vec<&str> = entry.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["keep.txt"]);
        assert_eq!(entry.excluded, 3);
        assert_eq!(entry.dirs, ["deep"]);
        assert!(!local.join("drop.tmp").exists());
        assert!(!local.join("cache").exists());
        // A file source matching its own pattern is recorded as excluded.
        let file = dir.path().join("f.log");
        write(&file, b"log");
        let entry = measure_entry(
            &spec("/app/f.log", "f.log", &["*.log"]),
            &file,
            &mut budget(),
        )
        .unwrap();
        assert_eq!(entry.status, EntryStatus::Excluded);
        assert!(!file.exists());
    }

    #[test]
    fn limits_on_bytes_and_entries_are_capture_errors() {
        let dir = tempfile::tempdir().unwrap();
        let local = dir.path().join("sub");
        write(&local.join("a"), &vec![7u8; 600 * 1024]);
        write(&local.join("b"), &vec![7u8; 600 * 1024]);
        let limits = ArtifactLimits {
            max_mb: 1,
            ..ArtifactLimits::default()
        };
        let err = measure_entry(
            &spec("/app/sub", "sub", &[]),
            &local,
            &mut Budget::new(&limits),
        )
        .unwrap_err();
        let message = err.to_string();
        assert_eq!(err.capture_code(), "artifact_limit_exceeded");
        assert!(
            message.contains("max_mb")
                && message.contains("1228800 bytes")
                && message.contains("1048576"),
            "{message}"
        );
        let limits = ArtifactLimits {
            max_files: 2,
            ..ArtifactLimits::default()
        };
        let err = measure_entry(
            &spec("/app/sub", "sub", &[]),
            &local,
            &mut Budget::new(&limits),
        )
        .unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("max_files")
                && message.contains("3 filesystem entries")
                && message.contains("/app/sub"),
            "{message}"
        );
        // The budget is shared by the entries of an attempt.
        let limits = ArtifactLimits {
            max_files: 4,
            ..ArtifactLimits::default()
        };
        let mut shared = Budget::new(&limits);
        measure_entry(&spec("/app/sub", "sub", &[]), &local, &mut shared).unwrap();
        assert_eq!((shared.entries(), shared.bytes()), (3, 1_228_800));
        write(&dir.path().join("c"), b"c");
        measure_entry(
            &spec("/app/c", "c", &[]),
            &dir.path().join("c"),
            &mut shared,
        )
        .unwrap();
        write(&dir.path().join("d"), b"d");
        assert!(measure_entry(
            &spec("/app/d", "d", &[]),
            &dir.path().join("d"),
            &mut shared
        )
        .is_err());
    }

    #[test]
    fn escaping_links_and_special_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let local = dir.path().join("sub");
        fs::create_dir_all(local.join("in")).unwrap();
        std::os::unix::fs::symlink("../../outside", local.join("in/up")).unwrap();
        let err = measure_entry(&spec("/app/sub", "sub", &[]), &local, &mut budget()).unwrap_err();
        assert!(matches!(err, ArtifactError::EscapingLink { .. }), "{err}");
        assert_eq!(err.capture_code(), "artifact_capture_failed");
        fs::remove_file(local.join("in/up")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", local.join("abs")).unwrap();
        assert!(measure_entry(&spec("/app/sub", "sub", &[]), &local, &mut budget()).is_err());
        fs::remove_file(local.join("abs")).unwrap();
        std::os::unix::fs::symlink("../sub/in", local.join("fine")).unwrap();
        // `../sub/in` from the root leaves the root: refused as well.
        assert!(measure_entry(&spec("/app/sub", "sub", &[]), &local, &mut budget()).is_err());
        fs::remove_file(local.join("fine")).unwrap();
        std::os::unix::fs::symlink("in/../in", local.join("fine")).unwrap();
        measure_entry(&spec("/app/sub", "sub", &[]), &local, &mut budget()).unwrap();
        fs::remove_file(local.join("fine")).unwrap();
        let fifo = local.join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let err =
                measure_entry(&spec("/app/sub", "sub", &[]), &local, &mut budget()).unwrap_err();
            assert!(matches!(err, ArtifactError::SpecialFile { .. }), "{err}");
        }
    }

    fn collected(root: &Path) -> ArtifactManifest {
        write(&root.join("sub/a.txt"), b"hello");
        write(&root.join("sub/n/b.txt"), b"world");
        fs::create_dir_all(root.join("sub/empty")).unwrap();
        write(&root.join("result.json"), b"{}");
        let mut b = budget();
        let entries = vec![
            measure_entry(&spec("/app/sub", "sub", &[]), &root.join("sub"), &mut b).unwrap(),
            measure_entry(
                &spec("/app/result.json", "result.json", &[]),
                &root.join("result.json"),
                &mut b,
            )
            .unwrap(),
            measure_entry(&spec("/app/none", "none", &[]), &root.join("none"), &mut b).unwrap(),
        ];
        ArtifactManifest::new(entries)
    }

    #[test]
    fn verification_accepts_intact_copies_and_round_trips_through_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(ARTIFACTS_DIR);
        let manifest = collected(&root);
        assert_eq!(manifest.total_bytes, 12);
        verify_manifest(&manifest, &root).unwrap();
        write_manifest(&dir.path().join(MANIFEST_FILE), &manifest).unwrap();
        assert_eq!(
            read_manifest(&dir.path().join(MANIFEST_FILE)).unwrap(),
            Some(manifest)
        );
        assert!(verify_attempt_dir(dir.path()).unwrap());
        assert!(!verify_attempt_dir(&dir.path().join("elsewhere")).unwrap());
        let value = read_manifest(&dir.path().join(MANIFEST_FILE))
            .unwrap()
            .unwrap()
            .to_value();
        assert_eq!(value["schema_version"], 1);
        assert_eq!(value["entries"][0]["kind"], "directory");
        assert_eq!(value["entries"][2]["status"], "missing");
    }

    #[test]
    fn verification_catches_a_flipped_byte_a_missing_file_and_an_extra_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(ARTIFACTS_DIR);
        let manifest = collected(&root);
        // Flipped byte, same size.
        fs::write(root.join("sub/n/b.txt"), b"worle").unwrap();
        let err = verify_manifest(&manifest, &root).unwrap_err();
        assert!(
            err.to_string().contains("sub/n/b.txt") && err.to_string().contains("sha256"),
            "{err}"
        );
        fs::write(root.join("sub/n/b.txt"), b"world").unwrap();
        verify_manifest(&manifest, &root).unwrap();
        // A file entry changed.
        fs::write(root.join("result.json"), b"{ }").unwrap();
        let err = verify_manifest(&manifest, &root).unwrap_err();
        assert!(
            err.to_string().contains("size 3 bytes, recorded 2"),
            "{err}"
        );
        fs::write(root.join("result.json"), b"{}").unwrap();
        // Missing file.
        fs::remove_file(root.join("sub/a.txt")).unwrap();
        let err = verify_manifest(&manifest, &root).unwrap_err();
        assert!(
            err.to_string().contains("sub/a.txt") && err.to_string().contains("missing"),
            "{err}"
        );
        fs::write(root.join("sub/a.txt"), b"hello").unwrap();
        // Extra file.
        fs::write(root.join("sub/extra"), b"").unwrap();
        let err = verify_manifest(&manifest, &root).unwrap_err();
        assert!(err.to_string().contains("not recorded"), "{err}");
        fs::remove_file(root.join("sub/extra")).unwrap();
        // Removed empty directory.
        fs::remove_dir(root.join("sub/empty")).unwrap();
        assert!(verify_manifest(&manifest, &root).is_err());
        fs::create_dir(root.join("sub/empty")).unwrap();
        verify_manifest(&manifest, &root).unwrap();
        // Incomplete manifests and unsafe destinations are refused.
        let mut incomplete = manifest.clone();
        incomplete.complete = false;
        assert!(verify_manifest(&incomplete, &root).is_err());
        let mut escaping = manifest.clone();
        escaping.entries[1].destination = "../result.json".into();
        assert!(verify_manifest(&escaping, &root).is_err());
        let mut forged = manifest;
        forged.entries[0].files[0].path = "../../etc/passwd".into();
        assert!(verify_manifest(&forged, &root).is_err());
    }

    #[test]
    fn restore_puts_parents_first_dedupes_and_skips_missing() {
        let entry = |source: &str, dest: &str, kind, status, sha: &str| ManifestEntry {
            kind,
            sha256: Some(sha.into()),
            ..ManifestEntry::empty(&spec(source, dest, &[]), status)
        };
        let d = Some(EntryKind::Directory);
        let f = Some(EntryKind::File);
        let manifest = ArtifactManifest::new(vec![
            entry(
                "/app/sub/deep/x.log",
                "x.log",
                f,
                EntryStatus::Collected,
                "1",
            ),
            entry("/app/sub", "sub", d, EntryStatus::Collected, "2"),
            entry("/logs/artifacts", "logs", d, EntryStatus::Collected, "3"),
            entry("/app", "app", d, EntryStatus::Collected, "4"),
            entry("/gone", "gone", None, EntryStatus::Missing, ""),
            entry("/app/sub/", "sub-again", d, EntryStatus::Collected, "2"),
        ]);
        let order: Vec<String> = restore_plan(&manifest)
            .unwrap()
            .into_iter()
            .map(|s| s.source)
            .collect();
        assert_eq!(
            order,
            ["/app", "/app/sub", "/logs/artifacts", "/app/sub/deep/x.log"]
        );
        let conflicting = ArtifactManifest::new(vec![
            entry("/app/sub", "a", d, EntryStatus::Collected, "1"),
            entry("/app/sub", "b", d, EntryStatus::Collected, "2"),
        ]);
        let err = restore_plan(&conflicting).unwrap_err();
        assert!(
            err.to_string().contains("conflicting copies of /app/sub"),
            "{err}"
        );
    }

    /// A session over a host directory standing in for the sandbox root; `exec` runs the
    /// real `sh` scripts on the mapped paths and every call is recorded.
    struct DirSession {
        root: PathBuf,
        calls: std::sync::Mutex<Vec<String>>,
    }

    impl DirSession {
        fn new(root: &Path) -> std::sync::Arc<DirSession> {
            std::sync::Arc::new(DirSession {
                root: root.to_path_buf(),
                calls: Default::default(),
            })
        }
        fn map(&self, path: &str) -> PathBuf {
            self.root.join(path.trim_start_matches('/'))
        }
        fn log(&self, call: String) {
            self.calls.lock().unwrap().push(call);
        }
        fn calls(&self) -> Vec<String> {
            self.calls.lock().unwrap().clone()
        }
    }

    fn copy_all(from: &Path, to: &Path) -> std::io::Result<()> {
        let meta = fs::symlink_metadata(from)?;
        if meta.is_dir() {
            fs::create_dir_all(to)?;
            for entry in fs::read_dir(from)? {
                let entry = entry?;
                copy_all(&entry.path(), &to.join(entry.file_name()))?;
            }
            Ok(())
        } else if meta.file_type().is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(from)?, to)
        } else {
            fs::copy(from, to).map(|_| ())
        }
    }

    #[async_trait::async_trait]
    impl agentcompass_plugin_api::sdk::EnvironmentSession for DirSession {
        fn info(&self) -> agentcompass_plugin_api::contracts::SessionInfo {
            agentcompass_plugin_api::contracts::SessionInfo {
                id: "dir".into(),
                provider: "dir".into(),
                default_workdir: None,
                close_params: serde_json::Value::Null,
            }
        }
        async fn exec(
            &self,
            request: ExecRequest,
        ) -> agentcompass_plugin_api::Result<agentcompass_plugin_api::contracts::ExecResult>
        {
            let agentcompass_plugin_api::contracts::ExecCommand::Argv(argv) = &request.command
            else {
                return Err(Error::msg("shell commands are not expected"));
            };
            let kind = if argv[2] == CLEAR_DIR_SCRIPT {
                "clear"
            } else {
                "mkparent"
            };
            self.log(format!("{kind} {}", argv[4]));
            let out = std::process::Command::new(&argv[0])
                .args([&argv[1], &argv[2], &argv[3]])
                .arg(self.map(&argv[4]))
                .output()
                .map_err(|e| Error::msg(e.to_string()))?;
            Ok(agentcompass_plugin_api::contracts::ExecResult::new(
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
            ))
        }
        async fn upload(&self, src: &Path, dst: &str) -> agentcompass_plugin_api::Result<()> {
            self.log(format!("upload {dst}"));
            copy_all(src, &self.map(dst)).map_err(|e| Error::msg(e.to_string()))
        }
        async fn download(&self, src: &str, dst: &Path) -> agentcompass_plugin_api::Result<()> {
            copy_all(&self.map(src), dst).map_err(|e| Error::msg(e.to_string()))
        }
        async fn upload_dir(&self, src: &Path, dst: &str) -> agentcompass_plugin_api::Result<()> {
            self.log(format!("upload_dir {dst}"));
            copy_all(src, &self.map(dst)).map_err(|e| Error::msg(e.to_string()))
        }
        async fn download_dir(&self, src: &str, dst: &Path) -> agentcompass_plugin_api::Result<()> {
            copy_all(&self.map(src), dst).map_err(|e| Error::msg(e.to_string()))
        }
        async fn read_text(&self, path: &str) -> agentcompass_plugin_api::Result<String> {
            fs::read_to_string(self.map(path)).map_err(|e| Error::msg(e.to_string()))
        }
        async fn write_text(
            &self,
            path: &str,
            content: &str,
        ) -> agentcompass_plugin_api::Result<()> {
            fs::write(self.map(path), content).map_err(|e| Error::msg(e.to_string()))
        }
        async fn is_file(&self, path: &str) -> agentcompass_plugin_api::Result<bool> {
            Ok(self.map(path).is_file())
        }
        async fn is_dir(&self, path: &str) -> agentcompass_plugin_api::Result<bool> {
            Ok(self.map(path).is_dir())
        }
        async fn close(&self) -> agentcompass_plugin_api::Result<()> {
            Ok(())
        }
    }

    /// Declares `/app` (excluding `*.log`), its child `/app/keep.log` and a file, in child-first
    /// order, plus a missing source.
    fn replay_specs() -> Vec<ArtifactSpec> {
        vec![
            spec("/app/keep.log", "keep.log", &[]),
            spec("/app", "app", &["*.log"]),
            spec("/app/result.json", "result.json", &[]),
            spec("/gone", "gone", &[]),
        ]
    }

    async fn collect(sandbox: &Path, attempt: &Path) -> ArtifactManifest {
        write(&sandbox.join("app/src/main.rs"), b"fn main() {}");
        write(&sandbox.join("app/keep.log"), b"kept");
        write(&sandbox.join("app/noise.log"), b"noise");
        write(&sandbox.join("app/.hidden"), b"h");
        fs::create_dir_all(sandbox.join("app/empty")).unwrap();
        write(&sandbox.join("app/result.json"), b"{}");
        let session: SessionRef = DirSession::new(sandbox);
        let root = attempt.join(ARTIFACTS_DIR);
        reset_destination(&root, &attempt.join(MANIFEST_FILE)).unwrap();
        let mut entries = Vec::new();
        download_all(
            &session,
            &replay_specs(),
            &root,
            &ArtifactLimits::default(),
            &mut entries,
        )
        .await
        .unwrap();
        let manifest = ArtifactManifest::new(entries);
        write_manifest(&attempt.join(MANIFEST_FILE), &manifest).unwrap();
        manifest
    }

    #[tokio::test]
    async fn download_then_restore_replays_the_submission() {
        let dir = tempfile::tempdir().unwrap();
        let (sandbox, attempt, fresh) = (
            dir.path().join("sandbox"),
            dir.path().join("attempt-1"),
            dir.path().join("fresh"),
        );
        let manifest = collect(&sandbox, &attempt).await;
        assert!(manifest.complete);
        let statuses: Vec<EntryStatus> = manifest.entries.iter().map(|e| e.status).collect();
        assert_eq!(
            statuses,
            [
                EntryStatus::Collected,
                EntryStatus::Collected,
                EntryStatus::Collected,
                EntryStatus::Missing
            ]
        );
        let app = &manifest.entries[1];
        let files: Vec<&str> = app.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(files, [".hidden", "result.json", "src/main.rs"]);
        assert_eq!(app.dirs, ["empty", "src"]);
        assert!(!attempt.join("artifacts/app/noise.log").exists());

        // The fresh sandbox has stale content in /app, including hidden entries.
        write(&fresh.join("app/stale.txt"), b"stale");
        write(&fresh.join("app/.stale"), b"stale");
        write(&fresh.join("app/..odd"), b"stale");
        let fresh_session = DirSession::new(&fresh);
        let session: SessionRef = fresh_session.clone();
        let restored = restore_all(&session, &attempt, &replay_specs(), 60.0)
            .await
            .unwrap();
        assert_eq!(restored, 3);
        assert_eq!(
            fresh_session.calls(),
            [
                "clear /app",
                "upload_dir /app",
                "mkparent /app/keep.log",
                "upload /app/keep.log",
                "mkparent /app/result.json",
                "upload /app/result.json",
            ],
            "parents first, the missing source uploads nothing"
        );
        assert!(!fresh.join("app/stale.txt").exists());
        assert!(!fresh.join("app/.stale").exists());
        assert!(!fresh.join("app/..odd").exists());
        assert!(fresh.join("app").is_dir());
        assert!(
            fresh.join("app/empty").is_dir(),
            "empty directories survive"
        );
        assert_eq!(fs::read(fresh.join("app/keep.log")).unwrap(), b"kept");
        assert_eq!(
            fs::read(fresh.join("app/src/main.rs")).unwrap(),
            b"fn main() {}"
        );
        assert!(!fresh.join("gone").exists());
    }

    #[tokio::test]
    async fn restore_refuses_a_corrupt_copy_before_uploading() {
        let dir = tempfile::tempdir().unwrap();
        let (sandbox, attempt, fresh) = (
            dir.path().join("sandbox"),
            dir.path().join("attempt-1"),
            dir.path().join("fresh"),
        );
        collect(&sandbox, &attempt).await;
        let corrupt = attempt.join("artifacts/app/src/main.rs");
        fs::write(&corrupt, b"fn main() {!").unwrap();
        let fresh_session = DirSession::new(&fresh);
        let session: SessionRef = fresh_session.clone();
        let (code, message) = restore_all(&session, &attempt, &replay_specs(), 60.0)
            .await
            .unwrap_err();
        assert_eq!(code, "artifact_verification_failed");
        assert!(
            message.contains(&corrupt.display().to_string()),
            "{message}"
        );
        assert!(fresh_session.calls().is_empty(), "nothing was touched");
        // A removed file fails the same way.
        fs::write(&corrupt, b"fn main() {}").unwrap();
        fs::remove_file(attempt.join("artifacts/keep.log")).unwrap();
        let (code, message) = restore_all(&session, &attempt, &replay_specs(), 60.0)
            .await
            .unwrap_err();
        assert_eq!(code, "artifact_verification_failed");
        assert!(
            message.contains("keep.log") && message.contains("missing"),
            "{message}"
        );
    }

    #[tokio::test]
    async fn a_limit_violation_fails_the_entry_and_removes_its_copy() {
        let dir = tempfile::tempdir().unwrap();
        let sandbox = dir.path().join("sandbox");
        for i in 0..5 {
            write(&sandbox.join(format!("app/f{i}")), b"x");
        }
        let session: SessionRef = DirSession::new(&sandbox);
        let root = dir.path().join("artifacts");
        let limits = ArtifactLimits {
            max_files: 3,
            ..ArtifactLimits::default()
        };
        let mut entries = Vec::new();
        let specs = [spec("/app", "app", &[]), spec("/other", "other", &[])];
        let (code, message) = download_all(&session, &specs, &root, &limits, &mut entries)
            .await
            .unwrap_err();
        assert_eq!(code, "artifact_limit_exceeded");
        assert!(message.contains("max_files"), "{message}");
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].status, EntryStatus::Failed);
        assert!(
            !root.join("app").exists(),
            "the unvalidated copy is removed"
        );
        let manifest = ArtifactManifest::new(entries);
        assert!(!manifest.complete);
    }
}
