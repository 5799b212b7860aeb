//! Crash-safe file writes: temp file in the same directory, fsync, rename, fsync the directory.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

fn temp_path(path: &Path) -> io::Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
    Ok(path.with_file_name(format!(
        ".{}.tmp.{}.{unique}",
        name.to_string_lossy(),
        std::process::id()
    )))
}

/// Atomically replaces `path` with `bytes` (file mode `mode`): readers see the old or the new
/// content, never a mix, and a crash leaves at most a stray hidden temp file.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let temp = temp_path(path)?;
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&temp)?;
        file.write_all(bytes)?;
        file.set_permissions(fs::Permissions::from_mode(mode))?;
        file.sync_all()?;
        fs::rename(&temp, path)?;
        sync_parent(path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// Copies `from` to `to` through a hidden temp name in the same directory (copy, fsync,
/// rename): a file under its final name is always complete, and a crash mid-copy leaves at
/// most a stray hidden temp file. The caller fsyncs the directory when it needs the rename
/// durable.
pub fn copy_file_atomic(from: &Path, to: &Path) -> io::Result<()> {
    let temp = temp_path(to)?;
    let result = fs::copy(from, &temp)
        .and_then(|_| File::open(&temp)?.sync_all())
        .and_then(|()| fs::rename(&temp, to));
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// Fsyncs the directory holding `path`, making a rename durable.
pub fn sync_parent(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => File::open(dir)?.sync_all(),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content_and_sets_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        write_atomic(&path, b"one", 0o644).unwrap();
        write_atomic(&path, b"two", 0o600).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let leftovers = fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(leftovers, 1);
    }

    #[test]
    fn copy_file_atomic_copies_whole_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("from.json");
        fs::write(&from, b"{\"a\": 1}").unwrap();
        let to = dir.path().join("to.json");
        copy_file_atomic(&from, &to).unwrap();
        assert_eq!(fs::read(&to).unwrap(), b"{\"a\": 1}");
        assert!(copy_file_atomic(&dir.path().join("missing"), &to).is_err());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
    }
}
