//! Verification of local artifact copies against their manifest.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use super::{
    directory_digest, join_relative, read_manifest, sha256_file, sorted_children, ArtifactError,
    ArtifactManifest, EntryKind, EntryStatus, ManifestEntry, ARTIFACTS_DIR, MANIFEST_FILE,
    MANIFEST_SCHEMA,
};

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
pub fn verify_manifest(manifest: &ArtifactManifest, root: &Path) -> Result<(), ArtifactError> {
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
pub fn verify_attempt_dir(attempt_dir: &Path) -> Result<bool, ArtifactError> {
    match read_manifest(&attempt_dir.join(MANIFEST_FILE))? {
        Some(manifest) => {
            verify_manifest(&manifest, &attempt_dir.join(ARTIFACTS_DIR))?;
            Ok(true)
        }
        None => Ok(false),
    }
}
