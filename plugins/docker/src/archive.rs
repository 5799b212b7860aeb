//! In-memory tar archives for the Docker archive endpoint: built from host files and trees,
//! and unpacked onto the host. Modes (with setuid, setgid and sticky bits) and symlinks are
//! kept; an unpacked archive never writes through a symlink.

use std::cmp::Reverse;
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use tar::{Archive, Builder, EntryType, Header};

/// What a single-path archive holds at its root.
pub(crate) enum Fetched {
    /// A regular file: its contents and mode.
    File { data: Vec<u8>, mode: u32 },
    /// A directory.
    Dir,
    /// A symlink, with its target.
    Symlink(PathBuf),
}

fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

fn header(kind: EntryType, mode: u32, size: u64, mtime: i64) -> Header {
    let mut header = Header::new_gnu();
    header.set_entry_type(kind);
    header.set_mode(mode & 0o7777);
    header.set_size(size);
    header.set_mtime(u64::try_from(mtime).unwrap_or(0));
    header.set_uid(0);
    header.set_gid(0);
    header
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(0))
        .unwrap_or(0)
}

/// The archive member name of an absolute container path (extracted at `/`).
fn member(target: &str) -> io::Result<&str> {
    let name = target.trim_start_matches('/');
    if name.is_empty() {
        Err(invalid("the destination is the root directory"))
    } else {
        Ok(name)
    }
}

/// An archive holding one regular file at the container path `target`.
pub(crate) fn file_tar(target: &str, data: &[u8], mode: u32) -> io::Result<Vec<u8>> {
    let mut builder = Builder::new(Vec::new());
    let mut h = header(EntryType::Regular, mode, data.len() as u64, now());
    builder.append_data(&mut h, member(target)?, data)?;
    builder.into_inner()
}

/// An archive holding the host file `src` (symlinks followed) at the container path `target`.
pub(crate) fn file_tar_from_host(src: &Path, target: &str) -> io::Result<Vec<u8>> {
    let meta = fs::metadata(src)?;
    if meta.is_dir() {
        return Err(invalid(
            "the source is a directory (use the *_dir operation)",
        ));
    }
    let mut builder = Builder::new(Vec::new());
    let mut h = header(EntryType::Regular, meta.mode(), meta.len(), meta.mtime());
    builder.append_data(&mut h, member(target)?, fs::File::open(src)?)?;
    builder.into_inner()
}

/// An archive of the host directory `src` (itself followed if a symlink; symlinks inside kept)
/// rooted at the container path `target`.
pub(crate) fn tree_tar_from_host(src: &Path, target: &str) -> io::Result<Vec<u8>> {
    let meta = fs::metadata(src)?;
    if !meta.is_dir() {
        return Err(invalid("the source is not a directory"));
    }
    let root = PathBuf::from(member(target)?);
    let mut builder = Builder::new(Vec::new());
    let mut h = header(EntryType::Directory, meta.mode(), 0, meta.mtime());
    builder.append_data(&mut h, &root, io::empty())?;
    append_tree(&mut builder, src, &root, false)?;
    builder.into_inner()
}

/// A build context: the host directory `src` (itself followed if a symlink; symlinks inside
/// kept) as an archive of its contents, deterministic for the same names, contents, modes and
/// link targets (sorted by name; owners and modification times zeroed).
pub(crate) fn context_tar(src: &Path) -> io::Result<Vec<u8>> {
    if !fs::metadata(src)?.is_dir() {
        return Err(invalid("the source is not a directory"));
    }
    let mut builder = Builder::new(Vec::new());
    append_tree(&mut builder, src, Path::new(""), true)?;
    builder.into_inner()
}

fn append_tree(
    builder: &mut Builder<Vec<u8>>,
    dir: &Path,
    at: &Path,
    zero_mtime: bool,
) -> io::Result<()> {
    let mut entries = fs::read_dir(dir)?.collect::<io::Result<Vec<_>>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let (from, to) = (entry.path(), at.join(entry.file_name()));
        let meta = fs::symlink_metadata(&from)?;
        let mtime = if zero_mtime { 0 } else { meta.mtime() };
        let kind = meta.file_type();
        if kind.is_symlink() {
            let mut h = header(EntryType::Symlink, 0o777, 0, mtime);
            builder.append_link(&mut h, &to, fs::read_link(&from)?)?;
        } else if kind.is_dir() {
            let mut h = header(EntryType::Directory, meta.mode(), 0, mtime);
            builder.append_data(&mut h, &to, io::empty())?;
            append_tree(builder, &from, &to, zero_mtime)?;
        } else if kind.is_file() {
            let mut h = header(EntryType::Regular, meta.mode(), meta.len(), mtime);
            builder.append_data(&mut h, &to, fs::File::open(&from)?)?;
        }
        // Sockets, FIFOs and devices are skipped.
    }
    Ok(())
}

/// The root entry of a single-path archive (from the daemon), with a file's contents.
pub(crate) fn single_file(tar: &[u8]) -> io::Result<Fetched> {
    let mut archive = Archive::new(tar);
    let mut entries = archive.entries()?;
    let mut first = entries
        .next()
        .ok_or_else(|| invalid("the daemon returned an empty archive"))??;
    let kind = first.header().entry_type();
    match kind {
        EntryType::Regular | EntryType::Continuous => {
            let mode = first.header().mode()? & 0o7777;
            let mut data = Vec::new();
            first.read_to_end(&mut data)?;
            Ok(Fetched::File { data, mode })
        }
        EntryType::Directory => Ok(Fetched::Dir),
        EntryType::Symlink => Ok(Fetched::Symlink(link_of(&first)?)),
        _ => Err(invalid("the source is not a regular file")),
    }
}

fn link_of<R: Read>(entry: &tar::Entry<'_, R>) -> io::Result<PathBuf> {
    entry
        .link_name()?
        .map(|l| l.into_owned())
        .ok_or_else(|| invalid("a symlink without a target"))
}

/// Removes a non-directory at `path` (never writing through it); refuses a directory.
fn clear_for_file(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(existing) if existing.is_dir() => Err(invalid(format!(
            "`{}` is a directory; it cannot be replaced by a file",
            path.display()
        ))),
        Ok(_) => fs::remove_file(path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Writes a downloaded file to the host path `dst` (into it, under `name`, if it is an existing
/// directory), creating parents and setting `mode`.
pub(crate) fn write_host_file(dst: &Path, name: &str, data: &[u8], mode: u32) -> io::Result<()> {
    let target = match fs::metadata(dst) {
        Ok(existing) if existing.is_dir() && !name.is_empty() => dst.join(name),
        _ => dst.to_path_buf(),
    };
    if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent)?;
    }
    clear_for_file(&target)?;
    fs::write(&target, data)?;
    fs::set_permissions(&target, fs::Permissions::from_mode(mode))
}

/// The path of an archive member below the archive's root entry (`None` for the root).
fn below_root(path: &Path) -> io::Result<Option<PathBuf>> {
    let mut components = path.components();
    components.next();
    let mut rel = PathBuf::new();
    for component in components {
        match component {
            Component::Normal(name) => rel.push(name),
            Component::CurDir => {}
            _ => {
                return Err(invalid(format!(
                    "unsafe path `{}` in the archive",
                    path.display()
                )))
            }
        }
    }
    Ok((!rel.as_os_str().is_empty()).then_some(rel))
}

/// Unpacks a directory archive (from the daemon) so that its root directory becomes `dst`
/// (merging with what is there). Returns the target when the root is a symlink instead (the
/// caller follows it); refuses a root that is not a directory.
pub(crate) fn extract_tree(tar: &[u8], dst: &Path) -> io::Result<Option<PathBuf>> {
    let mut archive = Archive::new(tar);
    let mut entries = archive.entries()?;
    let first = entries
        .next()
        .ok_or_else(|| invalid("the daemon returned an empty archive"))??;
    match first.header().entry_type() {
        EntryType::Directory => {}
        EntryType::Symlink => return Ok(Some(link_of(&first)?)),
        _ => return Err(invalid("the source is not a directory")),
    }
    let root_mode = first.header().mode()? & 0o7777;
    drop(first);
    fs::create_dir_all(dst)?;
    let mut dirs = vec![(dst.to_path_buf(), root_mode)];
    for entry in entries {
        let mut entry = entry?;
        let path = entry.path()?.into_owned();
        let Some(rel) = below_root(&path)? else {
            continue;
        };
        let target = dst.join(&rel);
        // Never write through a symlink unpacked (or found) below `dst`.
        let mut walked = dst.to_path_buf();
        for component in rel.parent().into_iter().flat_map(Path::components) {
            walked.push(component);
            if fs::symlink_metadata(&walked).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(invalid(format!(
                    "`{}` goes through the symlink `{}`",
                    path.display(),
                    walked.display()
                )));
            }
        }
        let mode = entry.header().mode()? & 0o7777;
        match entry.header().entry_type() {
            EntryType::Directory => {
                match fs::symlink_metadata(&target) {
                    Ok(existing) if existing.is_dir() => {}
                    Ok(_) => {
                        fs::remove_file(&target)?;
                        fs::create_dir(&target)?;
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => fs::create_dir_all(&target)?,
                    Err(e) => return Err(e),
                }
                dirs.push((target, mode));
            }
            EntryType::Regular | EntryType::Continuous => {
                clear_for_file(&target)?;
                let mut file = fs::File::create(&target)?;
                io::copy(&mut entry, &mut file)?;
                drop(file);
                fs::set_permissions(&target, fs::Permissions::from_mode(mode))?;
            }
            EntryType::Symlink => {
                clear_for_file(&target)?;
                std::os::unix::fs::symlink(link_of(&entry)?, &target)?;
            }
            EntryType::Link => {
                let linked = link_of(&entry)?;
                let Some(source) = below_root(&linked)? else {
                    continue;
                };
                clear_for_file(&target)?;
                fs::copy(dst.join(source), &target)?;
            }
            _ => {} // devices, FIFOs: skipped
        }
    }
    // Modes last (deepest first), so read-only directories could still be filled.
    dirs.sort_by_key(|(path, _)| Reverse(path.components().count()));
    for (path, mode) in dirs {
        fs::set_permissions(&path, fs::Permissions::from_mode(mode))?;
    }
    Ok(None)
}
