//! Publishing a cache entry built in `staging/`: its `entry.json` written, an altered entry it
//! replaces moved aside in one rename and removed, then one rename into place. Shared by the
//! git task cache and the URL cache.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// Who published the entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Published {
    /// This process's staged copy is the entry now.
    Ours,
    /// Another process published it first; ours was removed.
    Theirs,
}

/// Writes `record` as `entry.json` of the staged directory; a failure names the file.
pub(crate) fn write_record<T: Serialize>(
    staging: &Path,
    record: &T,
) -> Result<(), (PathBuf, io::Error)> {
    let path = staging.join("entry.json");
    let json = serde_json::to_vec_pretty(record).map_err(|e| (path.clone(), e.into()))?;
    fs::write(&path, json).map_err(|e| (path, e))
}

/// Publishes `staging` at `entry` (after taking an altered `entry` out, when `replace`): one
/// rename; losing the race to another process that published the same entry is fine. A
/// failure names the path.
pub(crate) fn publish(
    staging: tempfile::TempDir,
    entry: &Path,
    replace: bool,
) -> Result<Published, (PathBuf, io::Error)> {
    if let Some(parent) = entry.parent() {
        fs::create_dir_all(parent).map_err(|e| (parent.to_path_buf(), e))?;
    }
    if replace {
        // The altered entry moves aside in one rename, then goes.
        let name = staging
            .path()
            .file_name()
            .map_or_else(Default::default, |n| n.to_string_lossy().into_owned());
        let aside = staging.path().with_file_name(format!("altered-{name}"));
        if fs::rename(entry, &aside).is_ok() {
            let _ = fs::remove_dir_all(&aside);
        }
    }
    let built = staging.keep();
    match fs::rename(&built, entry) {
        Ok(()) => Ok(Published::Ours),
        Err(_) if entry.join("entry.json").is_file() => {
            let _ = fs::remove_dir_all(&built);
            Ok(Published::Theirs)
        }
        Err(e) => {
            let _ = fs::remove_dir_all(&built);
            Err((entry.to_path_buf(), e))
        }
    }
}
