//! Opening a file that must be a regular file without ever opening anything else: a FIFO
//! would block the open (or the read) forever, a device could act on being opened.
//!
//! The path is checked with `lstat` first (a symlink or a non-regular file is refused
//! without being opened), then opened with `O_NOFOLLOW | O_NONBLOCK` (a symlink or FIFO
//! swapped in between fails or returns at once instead of blocking), and the descriptor's
//! `fstat` must show the same regular file (same device and inode) as the `lstat`. Everything
//! read afterwards is read from that descriptor.

use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// `O_NOFOLLOW` from the Linux UAPI headers, written out to avoid a `libc` dependency: opening a
/// symlink fails with `ELOOP` instead of following it. The value differs per architecture
/// (`asm-generic/fcntl.h` vs. the arm/arm64/powerpc `asm/fcntl.h`); the unit test
/// `refuses_symlink` of `verified_file` checks it on the build target.
#[cfg(any(
    target_arch = "aarch64",
    target_arch = "arm",
    target_arch = "powerpc",
    target_arch = "powerpc64"
))]
const O_NOFOLLOW: i32 = 0o100000;
/// `O_NOFOLLOW` from the Linux UAPI headers (`asm-generic/fcntl.h`, used by x86_64, x86,
/// riscv64, loongarch64, s390x), written out to avoid a `libc` dependency: opening a symlink fails
/// with `ELOOP` instead of following it. The unit test `refuses_symlink` checks it.
#[cfg(not(any(
    target_arch = "aarch64",
    target_arch = "arm",
    target_arch = "powerpc",
    target_arch = "powerpc64"
)))]
const O_NOFOLLOW: i32 = 0o400000;

/// `O_NONBLOCK` (`asm-generic/fcntl.h`; also the arm, arm64 and powerpc value): opening a FIFO
/// returns at once instead of waiting for a writer. The unit test
/// `a_fifo_swapped_in_does_not_block_the_open` checks it on the build target.
#[cfg(not(any(target_arch = "mips", target_arch = "mips64", target_arch = "sparc64")))]
const O_NONBLOCK: i32 = 0o4000;
/// `O_NONBLOCK` on MIPS (`arch/mips/include/uapi/asm/fcntl.h`).
#[cfg(any(target_arch = "mips", target_arch = "mips64"))]
const O_NONBLOCK: i32 = 0o200;
/// `O_NONBLOCK` on SPARC (`arch/sparc/include/uapi/asm/fcntl.h`).
#[cfg(target_arch = "sparc64")]
const O_NONBLOCK: i32 = 0x4000;

/// `ELOOP`: what `open(O_NOFOLLOW)` returns for a symlink (40 on every Linux architecture
/// listed above).
const ELOOP: i32 = 40;

/// Why [`open_regular`] refused or failed.
#[derive(Debug)]
pub(crate) enum OpenError {
    /// `lstat`, `open` or `fstat` failed.
    Io(io::Error),
    /// The path is a symlink.
    Symlink,
    /// The path (or what was opened) is not a regular file: what it is.
    NotRegular(&'static str),
    /// The file opened is not the one checked: the path was replaced in between.
    Replaced,
}

/// Opens `path` read-only if, and only if, it is a regular file (see the module docs), with
/// the descriptor's metadata.
pub(crate) fn open_regular(path: &Path) -> Result<(File, Metadata), OpenError> {
    let before = std::fs::symlink_metadata(path).map_err(OpenError::Io)?;
    if before.file_type().is_symlink() {
        return Err(OpenError::Symlink);
    }
    if !before.is_file() {
        return Err(OpenError::NotRegular(file_type_name(&before)));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_NOFOLLOW | O_NONBLOCK)
        .open(path)
        .map_err(|err| {
            if err.raw_os_error() == Some(ELOOP) {
                OpenError::Symlink
            } else {
                OpenError::Io(err)
            }
        })?;
    let meta = file.metadata().map_err(OpenError::Io)?;
    if !meta.is_file() {
        return Err(OpenError::NotRegular(file_type_name(&meta)));
    }
    if (meta.dev(), meta.ino()) != (before.dev(), before.ino()) {
        return Err(OpenError::Replaced);
    }
    Ok((file, meta))
}

/// A short name for the file type in `meta`, for messages.
pub(crate) fn file_type_name(meta: &Metadata) -> &'static str {
    let ft = meta.file_type();
    if ft.is_dir() {
        "directory"
    } else if ft.is_file() {
        "regular file"
    } else if ft.is_symlink() {
        "symlink"
    } else if ft.is_fifo() {
        "fifo"
    } else if ft.is_socket() {
        "socket"
    } else if ft.is_block_device() {
        "block device"
    } else if ft.is_char_device() {
        "character device"
    } else {
        "special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    }

    #[test]
    fn opens_a_regular_file_and_refuses_the_rest_unopened() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let (_, meta) = open_regular(&file).unwrap();
        assert_eq!(meta.len(), 1);
        let link = tmp.path().join("l");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(matches!(open_regular(&link), Err(OpenError::Symlink)));
        assert!(matches!(
            open_regular(tmp.path()),
            Err(OpenError::NotRegular("directory"))
        ));
        let fifo = tmp.path().join("p");
        mkfifo(&fifo);
        assert!(matches!(
            open_regular(&fifo),
            Err(OpenError::NotRegular("fifo"))
        ));
        assert!(matches!(
            open_regular(&tmp.path().join("missing")),
            Err(OpenError::Io(e)) if e.kind() == io::ErrorKind::NotFound
        ));
    }

    /// What a FIFO swapped in after the `lstat` meets: the open itself must not wait for a
    /// writer (checks `O_NONBLOCK` on the build target).
    #[test]
    fn a_fifo_swapped_in_does_not_block_the_open() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("p");
        mkfifo(&fifo);
        let (done, wait) = std::sync::mpsc::channel();
        let path = fifo.clone();
        std::thread::spawn(move || {
            let opened = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(O_NOFOLLOW | O_NONBLOCK)
                .open(&path)
                .map(|f| f.metadata().map(|m| m.file_type().is_fifo()));
            let _ = done.send(opened.is_ok_and(|m| m.is_ok_and(|fifo| fifo)));
        });
        let started = Instant::now();
        let opened = wait.recv_timeout(Duration::from_secs(5));
        assert_eq!(opened, Ok(true), "after {:?}", started.elapsed());
    }
}
