//! Host-side transfers that keep modes: what a provider whose sessions live in host
//! directories uses for `upload`/`download` and their `*_dir` forms.

use std::fmt::Display;
use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use crate::Error;

/// The error of a failed transfer: `{op}: cannot copy `{src}` to `{dst}`: {e}`.
pub fn transfer_error(op: &str, src: impl Display, dst: impl Display, e: impl Display) -> Error {
    Error::environment(format!("{op}: cannot copy `{src}` to `{dst}`: {e}"))
}

fn io_error(message: String) -> io::Error {
    io::Error::other(message)
}

/// The permission bits (with setuid, setgid and sticky) of `meta`.
pub fn mode_of(meta: &fs::Metadata) -> fs::Permissions {
    fs::Permissions::from_mode(meta.permissions().mode() & 0o7777)
}

/// Copies one file (following a symlinked source), creating parent directories and keeping
/// the mode. An existing directory as destination receives the file under its own name; an
/// existing file or symlink there is replaced (never written through).
pub fn copy_file(src: &Path, dst: &Path) -> io::Result<()> {
    let meta = fs::metadata(src)?;
    if meta.is_dir() {
        return Err(io_error(
            "the source is a directory (use the *_dir operation)".to_string(),
        ));
    }
    let target = match (fs::metadata(dst), src.file_name()) {
        (Ok(existing), Some(name)) if existing.is_dir() => dst.join(name),
        _ => dst.to_path_buf(),
    };
    if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent)?;
    }
    copy_regular(src, &meta, &target)
}

/// Copies a file whose metadata is `meta` to exactly `dst` (replacing a non-directory there).
fn copy_regular(src: &Path, meta: &fs::Metadata, dst: &Path) -> io::Result<()> {
    match fs::symlink_metadata(dst) {
        Ok(existing) if existing.is_dir() => {
            return Err(io_error(format!(
                "`{}` is a directory; it cannot be replaced by a file",
                dst.display()
            )))
        }
        Ok(existing) => {
            if existing.dev() == meta.dev() && existing.ino() == meta.ino() {
                return Ok(()); // the same file
            }
            fs::remove_file(dst)?;
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    fs::copy(src, dst)?;
    fs::set_permissions(dst, mode_of(meta))
}

/// Copies a directory tree into `dst` (merging with what is there), keeping modes and copying
/// symlinks as symlinks. Special files (sockets, FIFOs, devices) are skipped.
pub fn copy_tree(src: &Path, dst: &Path) -> io::Result<()> {
    let meta = fs::metadata(src)?;
    if !meta.is_dir() {
        return Err(io_error("the source is not a directory".to_string()));
    }
    fs::create_dir_all(dst)?;
    let (src_real, dst_real) = (fs::canonicalize(src)?, fs::canonicalize(dst)?);
    if dst_real.starts_with(&src_real) {
        return Err(io_error(
            "the destination is the source or inside it".to_string(),
        ));
    }
    copy_tree_contents(src, dst)?;
    fs::set_permissions(dst, mode_of(&meta))
}

/// Copies the entries of `src` into the existing directory `dst` (see [`copy_tree`]); entries
/// of `dst` are replaced, never written through.
pub fn copy_tree_contents(src: &Path, dst: &Path) -> io::Result<()> {
    for entry in fs::read_dir(src)? {
        let entry = entry?;
        let (from, to) = (entry.path(), dst.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            copy_symlink(&from, &to)?;
        } else if kind.is_dir() {
            match fs::symlink_metadata(&to) {
                Ok(existing) if existing.is_dir() => {}
                Ok(_) => {
                    fs::remove_file(&to)?;
                    fs::create_dir(&to)?;
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => fs::create_dir(&to)?,
                Err(e) => return Err(e),
            }
            copy_tree_contents(&from, &to)?;
            fs::set_permissions(&to, mode_of(&fs::symlink_metadata(&from)?))?;
        } else if kind.is_file() {
            copy_regular(&from, &fs::symlink_metadata(&from)?, &to)?;
        }
    }
    Ok(())
}

/// Recreates the symlink `from` at `to`, replacing a non-directory there.
fn copy_symlink(from: &Path, to: &Path) -> io::Result<()> {
    let link = fs::read_link(from)?;
    match fs::symlink_metadata(to) {
        Ok(existing) if existing.is_dir() => {
            return Err(io_error(format!(
                "`{}` is a directory; it cannot be replaced by a symlink",
                to.display()
            )))
        }
        Ok(_) => fs::remove_file(to)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    std::os::unix::fs::symlink(link, to)
}

/// Adds owner rwx to `dir` and every directory under it (symlinks are not followed), so that
/// a tree left read-only (tools such as Go do that) can be removed.
pub fn make_writable(dir: &Path) {
    let Ok(meta) = fs::symlink_metadata(dir) else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let _ = fs::set_permissions(
        dir,
        fs::Permissions::from_mode(meta.permissions().mode() | 0o700),
    );
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                make_writable(&entry.path());
            }
        }
    }
}
