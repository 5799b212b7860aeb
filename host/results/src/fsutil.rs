//! Crash-safe file writes: temp file in the same directory, rename over the target.
//!
//! Durability is batched: a rename is atomic for every reader and survives the writer being
//! killed (the page cache holds the data), so single writes are not fsynced. What power loss
//! could still take is made durable with one `syncfs` of the results filesystem when a run
//! ends ([`sync_filesystem`]); a task lost or truncated by power loss before that is detected
//! by `--reuse` (unparseable results, artifact checksums) and run again. The per-write fsync
//! (file, then directory) of the old behaviour costs ~4 ms per call and was most of the host's
//! per-task overhead; it stays available with [`set_sync_each_write`].

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Whether every atomic write is fsynced (file and directory) before it returns.
static SYNC_EACH_WRITE: AtomicBool = AtomicBool::new(false);

/// Makes every atomic write durable on its own (fsync of the file and its directory), at a
/// few milliseconds per write, instead of one `syncfs` per run.
pub fn set_sync_each_write(on: bool) {
    SYNC_EACH_WRITE.store(on, Ordering::Relaxed);
}

/// Whether writes are fsynced one by one.
pub fn sync_each_write() -> bool {
    SYNC_EACH_WRITE.load(Ordering::Relaxed)
}

/// Fsyncs `file` when writes are synced one by one.
pub fn sync_file(file: &File) -> io::Result<()> {
    if sync_each_write() {
        file.sync_all()
    } else {
        Ok(())
    }
}

/// Fsyncs the directory `dir` (making renames inside it durable) when writes are synced one
/// by one.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    if sync_each_write() {
        File::open(dir)?.sync_all()
    } else {
        Ok(())
    }
}

/// Makes everything written so far on the filesystem holding `path` durable (`syncfs`).
pub fn sync_filesystem(path: &Path) -> io::Result<()> {
    let dir = File::open(path)?;
    nix::unistd::syncfs(std::os::fd::AsRawFd::as_raw_fd(&dir)).map_err(io::Error::from)
}

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
        sync_file(&file)?;
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
    let result = fs::copy(from, &temp).and_then(|_| {
        if sync_each_write() {
            File::open(&temp)?.sync_all()?;
        }
        fs::rename(&temp, to)
    });
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// Copies `from` to `to` under its final name (the kernel's in-file copy where it can), fsynced
/// when writes are synced one by one: for a destination directory no reader sees before it is
/// renamed into place.
pub fn copy_file(from: &Path, to: &Path) -> io::Result<()> {
    fs::copy(from, to)?;
    if sync_each_write() {
        File::open(to)?.sync_all()?;
    }
    Ok(())
}

/// Gives `to` the content of `from` for a destination no reader sees before it is renamed
/// into place: a hard link where the file system allows one (one directory entry, no new
/// inode, no data copied), else [`copy_file`]. Safe because every writer of a results
/// directory replaces a file by rename, never in place, so the two names never diverge by
/// a write through one of them (see ARCHITECTURE.md, "Reuse links the records it imports").
pub fn link_or_copy(from: &Path, to: &Path) -> io::Result<()> {
    // The caller fsyncs the destination directory, which makes the link durable.
    match fs::hard_link(from, to) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(e),
        Err(_) => copy_file(from, to),
    }
}

/// Fsyncs the directory holding `path` (making a rename durable) when writes are synced one
/// by one.
pub fn sync_parent(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => sync_dir(dir),
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
    fn writes_are_atomic_with_or_without_per_write_sync_and_syncfs_works() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        for each in [true, false] {
            set_sync_each_write(each);
            write_atomic(&path, b"{}", 0o644).unwrap();
            assert_eq!(fs::read(&path).unwrap(), b"{}");
        }
        assert!(!sync_each_write());
        sync_filesystem(dir.path()).unwrap();
        assert!(sync_filesystem(&dir.path().join("missing")).is_err());
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

    #[test]
    fn a_linked_file_keeps_its_content_when_the_source_is_replaced_by_a_writer() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("result.json");
        write_atomic(&from, b"{\"v\": 1}", 0o644).unwrap();
        let to = dir.path().join("imported.json");
        link_or_copy(&from, &to).unwrap();
        let (a, b) = (fs::metadata(&from).unwrap(), fs::metadata(&to).unwrap());
        assert_eq!((a.dev(), a.ino()), (b.dev(), b.ino()), "linked, not copied");
        // Our writers replace by rename: the imported name keeps what it had.
        write_atomic(&from, b"{\"v\": 2}", 0o644).unwrap();
        assert_eq!(fs::read(&to).unwrap(), b"{\"v\": 1}");
        assert!(
            link_or_copy(&from, &to).is_err(),
            "an existing name is never replaced"
        );
        assert!(link_or_copy(&dir.path().join("missing"), &dir.path().join("x")).is_err());
    }
}
