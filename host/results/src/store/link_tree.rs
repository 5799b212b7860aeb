//! The copy a `--reuse` import makes of one published task directory: every call relative to
//! the open source and destination directories (`openat`, `mkdirat`, `linkat`), so a task's
//! files cost no path walk from the results root; the host's records hard-linked, the rest
//! copied under their final names (the destination is hidden until it is renamed into place).

use std::ffi::{CStr, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, AtFlags, Dir, FileType, Mode, OFlags};

use super::StoreError;
use crate::fsutil::sync_each_write;

/// Called with every file before it is copied (tests use it to fail a copy midway).
pub type CopyHook<'a> = dyn FnMut(&Path) -> io::Result<()> + 'a;

/// The files an import hard-links: records only the host writes, always replaced by rename
/// (see ARCHITECTURE.md, "Reuse links the records it imports"). Everything else (artifacts,
/// logs: files a user may edit in place) is copied.
const LINKED_FILES: [&[u8]; 2] = [b"task.json", b"result.json"];

/// What [`link_tree`] made, for the checks that follow.
#[derive(Debug, Default)]
pub(super) struct LinkedTree {
    /// Names of the top-level subdirectories (`attempt-N`, ...), in listing order.
    pub(super) subdirs: Vec<String>,
}

/// Copies the directory `src` to the new directory `dst` (which must not exist): files with
/// their modes (the host's records hard-linked where the file system allows), subdirectories
/// with their modes, symlinks recreated; other file types skipped. `hook` sees each file's
/// source path before it is copied. Fsyncs each new directory when writes are synced one by
/// one.
pub(super) fn link_tree(
    src: &Path,
    dst: &Path,
    hook: &mut CopyHook<'_>,
) -> Result<LinkedTree, StoreError> {
    let (Some(dst_parent), Some(dst_name)) = (dst.parent(), dst.file_name()) else {
        return Err(StoreError::io(
            "create directory",
            dst,
            io::Error::from(io::ErrorKind::InvalidInput),
        ));
    };
    let src_dir =
        open_dir(rfs::CWD, src.as_os_str()).map_err(|e| StoreError::io("list", src, e))?;
    let parent = open_dir(rfs::CWD, dst_parent.as_os_str())
        .map_err(|e| StoreError::io("open", dst_parent, e))?;
    let mut tree = LinkedTree::default();
    let mut walk = Walk {
        src_path: src,
        dst_path: dst,
        hook,
    };
    walk.copy_dir(
        src_dir,
        parent.as_fd(),
        dst_name,
        Path::new(""),
        Some(&mut tree.subdirs),
    )?;
    Ok(tree)
}

/// Opens the directory `name` of `dir` for listing and for `*at` calls (never a symlink).
fn open_dir(dir: impl AsFd, name: &OsStr) -> io::Result<OwnedFd> {
    rfs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(io::Error::from)
}

/// The permission bits of the open file `fd`.
fn mode_of(fd: impl AsFd) -> io::Result<Mode> {
    Ok(Mode::from_raw_mode(rfs::fstat(fd)?.st_mode) & Mode::from_bits_truncate(0o7777))
}

/// Gives the open file `fd` the permission bits `mode` unless it has them already (created
/// with `mode`, the umask may have cleared some).
fn ensure_mode(fd: impl AsFd, mode: Mode) -> io::Result<()> {
    if mode_of(&fd)? != mode {
        rfs::fchmod(fd, mode)?;
    }
    Ok(())
}

/// One import's walk: the paths are for error messages and the hook only.
struct Walk<'a, 'h> {
    src_path: &'a Path,
    dst_path: &'a Path,
    hook: &'a mut CopyHook<'h>,
}

impl Walk<'_, '_> {
    /// `rel` below the source root, as a path (for messages).
    fn src(&self, rel: &Path) -> PathBuf {
        self.src_path.join(rel)
    }

    fn dst(&self, rel: &Path) -> PathBuf {
        self.dst_path.join(rel)
    }

    /// Creates `name` in `dst_parent` with the mode of the open source directory `src`, then
    /// fills it. `rel` is the directory's path below the roots ("" for the roots); the names
    /// of its subdirectories are pushed onto `subdirs` when given.
    fn copy_dir(
        &mut self,
        src: OwnedFd,
        dst_parent: BorrowedFd<'_>,
        name: &OsStr,
        rel: &Path,
        mut subdirs: Option<&mut Vec<String>>,
    ) -> Result<(), StoreError> {
        let mode = mode_of(&src).map_err(|e| StoreError::io("inspect", &self.src(rel), e))?;
        // Created with the source's mode and owner access (filled first, e.g. a read-only
        // source directory); the final mode is set below if the umask or that bit differ.
        rfs::mkdirat(dst_parent, name, mode | Mode::RWXU)
            .map_err(|e| StoreError::io("create directory", &self.dst(rel), e.into()))?;
        let dst =
            open_dir(dst_parent, name).map_err(|e| StoreError::io("open", &self.dst(rel), e))?;
        let mut entries =
            Dir::new(src).map_err(|e| StoreError::io("list", &self.src(rel), e.into()))?;
        while let Some(entry) = entries.read() {
            let entry = entry.map_err(|e| StoreError::io("list", &self.src(rel), e.into()))?;
            let file_name = entry.file_name();
            let bytes = file_name.to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            let child = OsStr::from_bytes(bytes);
            let child_rel = rel.join(child);
            let src_dir = entries
                .fd()
                .map_err(|e| StoreError::io("list", &self.src(rel), e.into()))?;
            let kind = match entry.file_type() {
                FileType::Unknown => rfs::statat(src_dir, file_name, AtFlags::SYMLINK_NOFOLLOW)
                    .map(|st| FileType::from_raw_mode(st.st_mode))
                    .map_err(|e| StoreError::io("inspect", &self.src(&child_rel), e.into()))?,
                known => known,
            };
            match kind {
                FileType::Directory => {
                    let sub = open_dir(src_dir, child)
                        .map_err(|e| StoreError::io("list", &self.src(&child_rel), e))?;
                    if let Some(list) = subdirs.as_deref_mut() {
                        list.push(child.to_string_lossy().into_owned());
                    }
                    self.copy_dir(sub, dst.as_fd(), child, &child_rel, None)?;
                }
                FileType::RegularFile => {
                    let from = self.src(&child_rel);
                    (self.hook)(&from).map_err(|e| StoreError::io("copy", &from, e))?;
                    self.copy_file(src_dir, dst.as_fd(), file_name, &child_rel)?;
                }
                FileType::Symlink => {
                    let target = rfs::readlinkat(src_dir, file_name, Vec::new()).map_err(|e| {
                        StoreError::io("read link", &self.src(&child_rel), e.into())
                    })?;
                    rfs::symlinkat(target.as_c_str(), &dst, file_name).map_err(|e| {
                        StoreError::io("create link", &self.dst(&child_rel), e.into())
                    })?;
                }
                _ => tracing::warn!(
                    "not copying special file {}",
                    self.src(&child_rel).display()
                ),
            }
        }
        ensure_mode(&dst, mode).map_err(|e| StoreError::io("set mode of", &self.dst(rel), e))?;
        if sync_each_write() {
            rfs::fsync(&dst)
                .map_err(|e| StoreError::io("sync directory", &self.dst(rel), e.into()))?;
        }
        Ok(())
    }

    /// Hard-links a host record, else copies the file with its mode.
    fn copy_file(
        &mut self,
        src_dir: BorrowedFd<'_>,
        dst_dir: BorrowedFd<'_>,
        name: &CStr,
        rel: &Path,
    ) -> Result<(), StoreError> {
        if LINKED_FILES.contains(&name.to_bytes()) {
            match rfs::linkat(src_dir, name, dst_dir, name, AtFlags::empty()) {
                Ok(()) => return Ok(()),
                Err(e) if e == rustix::io::Errno::EXIST => {
                    return Err(StoreError::io("copy", &self.src(rel), e.into()))
                }
                // Another file system, or links refused: copy instead.
                Err(_) => {}
            }
        }
        let copy = || -> io::Result<()> {
            let from = File::from(rfs::openat(
                src_dir,
                name,
                OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?);
            let mode = mode_of(&from)?;
            let mut to = File::from(rfs::openat(
                dst_dir,
                name,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                mode,
            )?);
            io::copy(&mut &from, &mut to)?;
            ensure_mode(&to, mode)?;
            if sync_each_write() {
                to.sync_all()?;
            }
            Ok(())
        };
        copy().map_err(|e| StoreError::io("copy", &self.src(rel), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn mode_at(path: &Path) -> u32 {
        fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn records_are_linked_the_rest_copied_with_modes_and_links_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        let attempt = src.join("attempt-1");
        fs::create_dir_all(attempt.join("artifacts")).unwrap();
        fs::write(src.join("task.json"), b"{}").unwrap();
        fs::write(attempt.join("result.json"), b"{}").unwrap();
        fs::write(attempt.join("artifacts/out.txt"), b"out").unwrap();
        fs::set_permissions(
            attempt.join("artifacts/out.txt"),
            fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        std::os::unix::fs::symlink("result.json", attempt.join("latest")).unwrap();
        // A read-only directory is filled, then gets its mode.
        fs::set_permissions(attempt.join("artifacts"), fs::Permissions::from_mode(0o555)).unwrap();
        fs::set_permissions(&src, fs::Permissions::from_mode(0o750)).unwrap();
        let dst = tmp.path().join("dst");
        let mut seen = Vec::new();
        let tree = link_tree(&src, &dst, &mut |p: &Path| {
            seen.push(p.strip_prefix(&src).unwrap().to_path_buf());
            Ok(())
        })
        .unwrap();
        assert_eq!(tree.subdirs, ["attempt-1"]);
        seen.sort();
        assert_eq!(
            seen,
            [
                PathBuf::from("attempt-1/artifacts/out.txt"),
                PathBuf::from("attempt-1/result.json"),
                PathBuf::from("task.json"),
            ]
        );
        let ino = |p: &Path| fs::metadata(p).unwrap().ino();
        for record in ["task.json", "attempt-1/result.json"] {
            assert_eq!(ino(&src.join(record)), ino(&dst.join(record)), "{record}");
        }
        let copied = "attempt-1/artifacts/out.txt";
        assert_ne!(ino(&src.join(copied)), ino(&dst.join(copied)));
        assert_eq!(fs::read(dst.join(copied)).unwrap(), b"out");
        assert_eq!(mode_at(&dst.join(copied)), 0o600);
        assert_eq!(mode_at(&dst.join("attempt-1/artifacts")), 0o555);
        assert_eq!(mode_at(&dst), 0o750);
        assert_eq!(
            fs::read_link(dst.join("attempt-1/latest")).unwrap(),
            PathBuf::from("result.json")
        );
        fs::set_permissions(
            dst.join("attempt-1/artifacts"),
            fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        fs::set_permissions(attempt.join("artifacts"), fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn an_existing_destination_or_a_failing_hook_is_an_error_naming_the_path() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        fs::create_dir_all(&src).unwrap();
        fs::write(src.join("task.json"), b"{}").unwrap();
        let dst = tmp.path().join("dst");
        fs::create_dir(&dst).unwrap();
        let err = link_tree(&src, &dst, &mut |_: &Path| Ok(())).unwrap_err();
        assert!(
            err.to_string().contains(&dst.display().to_string()),
            "{err}"
        );
        fs::remove_dir(&dst).unwrap();
        let err = link_tree(&src, &dst, &mut |_: &Path| {
            Err(io::Error::other("injected"))
        })
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("injected") && text.contains("task.json"),
            "{text}"
        );
    }
}
