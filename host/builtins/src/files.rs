//! File helpers shared by the built-in environment providers: private directories, transfers
//! that keep modes, text files, probes and removal of the directories a provider created.

use std::collections::hash_map::RandomState;
use std::fs;
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use agentcompass_plugin_api::{Error, Result};

/// How many random names [`create_private_dir`] tries before giving up (a name is only
/// retried when the path already exists).
const CREATE_ATTEMPTS: usize = 64;

/// Runs `f` on the blocking pool; `provider` names the environment in the error of a failed
/// task.
pub(crate) async fn blocking<T, F>(provider: &str, f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        Error::environment(format!("environment `{provider}`: file task failed: {e}"))
    })?
}

/// A process-unique, time-salted suffix.
pub(crate) fn unique() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{}-{:x}-{}",
        std::process::id(),
        nanos,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// A random, file-name-safe suffix (16 hex digits) for a private directory name. The hasher
/// keys are random per process; the counter, process id and time make every call distinct.
/// Unpredictability is not what keeps the directory safe: it is created with `mkdir` (never
/// reusing an existing path) and mode 0700.
pub(crate) fn random_suffix() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    hasher.write_u128(nanos);
    format!("{:016x}", hasher.finish())
}

/// A task id reduced to a short, file-name-safe string.
pub(crate) fn sanitise(task_id: &str) -> String {
    let cleaned: String = task_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    if cleaned.is_empty() {
        "task".to_string()
    } else {
        cleaned
    }
}

/// Creates a private (mode 0700) directory at `reserved`, or, if that path already exists,
/// under a fresh random name with the same `prefix` next to it. Never reuses an existing path.
pub(crate) fn create_private_dir(reserved: &Path, prefix: &str, provider: &str) -> Result<PathBuf> {
    let base = reserved.parent().unwrap_or(Path::new("/"));
    let mut path = reserved.to_path_buf();
    for _ in 0..CREATE_ATTEMPTS {
        match fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => {
                // The umask may have removed bits, never added: make the mode exact anyway.
                fs::set_permissions(&path, fs::Permissions::from_mode(0o700)).map_err(|e| {
                    let _ = fs::remove_dir(&path);
                    Error::environment(format!(
                        "environment `{provider}`: cannot restrict `{}`: {e}",
                        path.display()
                    ))
                })?;
                return Ok(path);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                path = base.join(format!("{prefix}{}", random_suffix()));
            }
            Err(e) => {
                return Err(Error::environment(format!(
                    "environment `{provider}`: cannot create a working directory in `{}`: {e}",
                    base.display()
                )))
            }
        }
    }
    Err(Error::environment(format!(
        "environment `{provider}`: cannot create a working directory in `{}`: every name tried \
         already exists",
        base.display()
    )))
}

/// The metadata of `path`, or `None` when it does not exist (a missing parent or a file used
/// as a directory included).
pub(crate) async fn probe(path: &Path, op: &str) -> Result<Option<fs::Metadata>> {
    match tokio::fs::metadata(path).await {
        Ok(meta) => Ok(Some(meta)),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(Error::environment(format!(
            "{op}: cannot inspect `{}`: {e}",
            path.display()
        ))),
    }
}

/// Reads a UTF-8 file (`read_text`).
pub(crate) async fn read_text_file(path: &Path) -> Result<String> {
    let bytes = tokio::fs::read(path).await.map_err(|e| {
        Error::environment(format!("read_text: cannot read `{}`: {e}", path.display()))
    })?;
    String::from_utf8(bytes).map_err(|_| {
        Error::environment(format!(
            "read_text: `{}` is not valid UTF-8",
            path.display()
        ))
    })
}

/// Writes a UTF-8 file, creating its parent directories (`write_text`).
pub(crate) async fn write_text_file(path: &Path, content: &str) -> Result<()> {
    let fail = |e: io::Error| {
        Error::environment(format!(
            "write_text: cannot write `{}`: {e}",
            path.display()
        ))
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        tokio::fs::create_dir_all(parent).await.map_err(fail)?;
    }
    tokio::fs::write(path, content).await.map_err(fail)
}

/// The error of a failed transfer.
pub(crate) fn transfer_error(op: &str, src: &Path, dst: &Path, e: io::Error) -> Error {
    Error::environment(format!(
        "{op}: cannot copy `{}` to `{}`: {e}",
        src.display(),
        dst.display()
    ))
}

fn io_error(message: String) -> io::Error {
    io::Error::other(message)
}

/// The permission bits (with setuid, setgid and sticky) of `meta`.
pub(crate) fn mode_of(meta: &fs::Metadata) -> fs::Permissions {
    fs::Permissions::from_mode(meta.permissions().mode() & 0o7777)
}

/// Copies one file (following a symlinked source), creating parent directories and keeping
/// the mode. An existing directory as destination receives the file under its own name; an
/// existing file or symlink there is replaced (never written through).
pub(crate) fn copy_file(src: &Path, dst: &Path) -> io::Result<()> {
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
pub(crate) fn copy_tree(src: &Path, dst: &Path) -> io::Result<()> {
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
pub(crate) fn copy_tree_contents(src: &Path, dst: &Path) -> io::Result<()> {
    for entry in fs::read_dir(src)? {
        let entry = entry?;
        let (from, to) = (entry.path(), dst.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            let link = fs::read_link(&from)?;
            match fs::symlink_metadata(&to) {
                Ok(existing) if existing.is_dir() => {
                    return Err(io_error(format!(
                        "`{}` is a directory; it cannot be replaced by a symlink",
                        to.display()
                    )))
                }
                Ok(_) => fs::remove_file(&to)?,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            std::os::unix::fs::symlink(link, &to)?;
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

/// Removes a directory a provider created; a missing directory is fine. Retries once after
/// making every directory in it writable (tools such as Go leave read-only trees).
pub(crate) async fn remove_owned_dir(path: PathBuf, provider: &'static str) -> Result<()> {
    blocking(provider, move || {
        let attempt = |path: &Path| match fs::remove_dir_all(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        };
        attempt(&path)
            .or_else(|_| {
                make_writable(&path);
                attempt(&path)
            })
            .map_err(|e| {
                Error::environment(format!(
                    "environment `{provider}`: cannot remove `{}`: {e}",
                    path.display()
                ))
            })
    })
    .await
}

/// Adds owner rwx to `dir` and every directory under it (symlinks are not followed).
pub(crate) fn make_writable(dir: &Path) {
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
