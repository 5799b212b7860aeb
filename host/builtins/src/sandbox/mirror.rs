//! The read-only mirror of a root filesystem on the sandbox's tmpfs root, and the mount table
//! that orders its binds.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A listed directory modified less than this long ago may change again within the same
/// timestamp tick, unnoticed: its mirror is used once, not cached.
pub(super) const SETTLE_TIME: Duration = Duration::from_secs(2);

/// When a listed directory was last changed, as far as its metadata tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct DirStamp {
    pub(super) dev: u64,
    pub(super) ino: u64,
    pub(super) mtime: (i64, i64),
    pub(super) ctime: (i64, i64),
}

impl DirStamp {
    /// The stamp of `dir` now.
    pub(super) fn of(dir: &Path) -> io::Result<DirStamp> {
        let meta = fs::metadata(dir)?;
        Ok(DirStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        })
    }

    /// Whether the listing last changed more than [`SETTLE_TIME`] ago, so that any later
    /// change gets a later modification time. (A change of the metadata alone, which moves
    /// only the change time, does not change the listing.)
    pub(super) fn settled(&self) -> bool {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        let modified = self.mtime.0 as f64 + self.mtime.1 as f64 / 1e9;
        now - modified > SETTLE_TIME.as_secs_f64()
    }
}

/// The read-only mirror of a root, as [`mirror`] finds it.
#[derive(Default)]
pub(super) struct Mirror {
    /// `(target, link)`: symlinks recreated in the sandbox.
    pub(super) symlinks: Vec<(PathBuf, PathBuf)>,
    /// `(host path, sandbox path)`: entries bound read-only.
    pub(super) binds: Vec<(PathBuf, PathBuf)>,
    /// The host directories listed, with their stamps from before they were listed.
    pub(super) listed: Vec<(PathBuf, DirStamp)>,
}

/// Mirrors the directory `dir` of `root` read-only into the sandbox's tmpfs root: every entry
/// is bound (or, for a symlink, recreated), except the targets (mount points, hidden paths,
/// links made for the sandbox) and their parents, which become plain directories whose own
/// entries are mirrored the same way, and sockets, which are left out (see `sockets`).
pub(super) fn mirror(
    root: &Path,
    dir: &Path,
    targets: &BTreeSet<PathBuf>,
    out: &mut Mirror,
) -> io::Result<()> {
    let host_dir = root.join(dir.strip_prefix("/").unwrap_or(dir));
    out.listed
        .push((host_dir.clone(), DirStamp::of(&host_dir)?));
    let mut entries = fs::read_dir(&host_dir)?.collect::<io::Result<Vec<_>>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let inside = dir.join(entry.file_name());
        if targets.contains(&inside) {
            continue;
        }
        let kind = entry.file_type()?;
        if targets.iter().any(|t| t.starts_with(&inside)) {
            // A parent of a target: made a directory by the caller, its entries mirrored
            // (those of a real directory only: a symlink's are not followed).
            if kind.is_dir() {
                mirror(root, &inside, targets, out)?;
            }
        } else if kind.is_symlink() {
            out.symlinks.push((fs::read_link(entry.path())?, inside));
        } else if !kind.is_socket() {
            out.binds.push((entry.path(), inside));
        }
    }
    Ok(())
}

/// The mount points of this process's mount namespace (host paths), or none if
/// `/proc/self/mountinfo` cannot be read.
pub(super) fn mount_points() -> Vec<PathBuf> {
    let Ok(table) = fs::read("/proc/self/mountinfo") else {
        return Vec::new();
    };
    table
        .split(|b| *b == b'\n')
        .filter_map(|line| line.split(|b| *b == b' ').nth(4))
        .map(unescape_mountinfo)
        .collect()
}

/// A mountinfo path field with its octal escapes (`\040` for a space) decoded.
pub(super) fn unescape_mountinfo(field: &[u8]) -> PathBuf {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let octal = field
            .get(i + 1..i + 4)
            .filter(|d| field[i] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match octal {
            Some(d) => {
                let value = d.iter().fold(0u32, |v, b| v * 8 + u32::from(b - b'0'));
                out.push(u8::try_from(value).unwrap_or(b'?'));
                i += 4;
            }
            None => {
                out.push(field[i]);
                i += 1;
            }
        }
    }
    PathBuf::from(OsStr::from_bytes(&out))
}
