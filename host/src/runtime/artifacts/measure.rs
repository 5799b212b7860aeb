//! Measuring a downloaded artifact: exclusions applied, links and special files refused,
//! every file hashed, totals counted against the attempt's limits.

use std::fs;
use std::io;
use std::path::Path;

use agentcompass_plugin_api::contracts::{ArtifactLimits, ArtifactSpec};
use agentcompass_results::artifacts::{
    directory_digest, join_relative, link_stays_inside, mode_string, sha256_file, sorted_children,
    ArtifactError, EntryKind, EntryStatus, FileRecord, LinkRecord, ManifestEntry,
};

use super::exclude::{base_name, exclusions, file_excluded, is_excluded, Exclusion};

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
