//! Trust checks on plugin directories and files, all done before anything is `dlopen`ed.
//!
//! Loading a shared object runs its constructors, so a plugin is only considered when the file,
//! its directory and every ancestor up to `/` could not have been written by another user (the way
//! ssh checks `authorized_keys`). See design.md §3 "Trust".

use std::ffi::OsString;
use std::fs::Metadata;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use crate::manifest::{collapse_whitespace, LIBRARY_SUFFIX, MANIFEST_SUFFIX};
pub(crate) use crate::regular::file_type_name;

/// Group- and world-write permission bits.
const GROUP_WORLD_WRITE: u32 = 0o022;
/// The sticky bit (`chmod +t`, as on `/tmp`).
const STICKY: u32 = 0o1000;

/// Why a plugin directory or plugin file is not trusted. Every message is one line, names the
/// path, says what was expected and found, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrustError {
    /// A configured plugin directory is a relative path.
    #[error(
        "plugin directory {} is a relative path, an absolute path is needed; \
         write it as an absolute path (plugin directories are never looked up from the current directory)",
        .dir.display()
    )]
    RelativeDir {
        /// The configured path.
        dir: PathBuf,
    },
    /// A configured plugin directory does not exist.
    #[error(
        "plugin directory {} does not exist; create it or remove it from plugin_dirs/recipe_dirs",
        .dir.display()
    )]
    DirMissing {
        /// The configured path.
        dir: PathBuf,
    },
    /// A configured plugin directory is not a directory.
    #[error(
        "plugin directory {} is not a directory (found a {found}); point plugin_dirs/recipe_dirs at the directory holding the .so files",
        .dir.display()
    )]
    NotADirectory {
        /// The configured path.
        dir: PathBuf,
        /// What was found instead (`file`, `symlink`, ...).
        found: &'static str,
    },
    /// An I/O operation failed.
    #[error("cannot {action} {}: {message}", .path.display())]
    Io {
        /// The path the operation was applied to.
        path: PathBuf,
        /// What was being done (`read directory`, `stat`, ...).
        action: &'static str,
        /// The OS error, one line.
        message: String,
    },
    /// The path given to [`check_path_trusted`] is relative or not canonical.
    #[error(
        "{} is {problem}, expected an absolute canonical path; canonicalize it first",
        .component.display()
    )]
    NotCanonical {
        /// The path being checked.
        target: PathBuf,
        /// The offending prefix of `target`.
        component: PathBuf,
        /// What is wrong with it (`a symlink`, `relative`, `a '..' component`).
        problem: &'static str,
    },
    /// The path or an ancestor is owned by another user.
    #[error(
        "{kind} {} is owned by uid {uid}, expected root or uid {current_uid} (the current user); \
         fix with chown {current_uid} {} or move the plugins to a directory you own",
        .path.display(), .path.display()
    )]
    BadOwner {
        /// The path being checked.
        target: PathBuf,
        /// `directory` or `file`.
        kind: &'static str,
        /// The offending path (`target` or one of its ancestors).
        path: PathBuf,
        /// The owner found.
        uid: u32,
        /// The current effective uid.
        current_uid: u32,
    },
    /// The path or an ancestor is group- or world-writable.
    #[error(
        "{kind} {} is group/world-writable (mode {mode:04o}); fix with chmod go-w {}",
        .path.display(), .path.display()
    )]
    Writable {
        /// The path being checked.
        target: PathBuf,
        /// `directory` or `file`.
        kind: &'static str,
        /// The offending path (`target` or one of its ancestors).
        path: PathBuf,
        /// Permission bits found (`mode & 0o7777`).
        mode: u32,
    },
    /// A `*.so` (or manifest) symlink resolves outside the trusted directory.
    #[error(
        "symlink {} points outside the trusted directory {} (to {}); copy the file into the directory instead",
        .link.display(), .dir.display(), .target.display()
    )]
    SymlinkOutside {
        /// The symlink inside the directory.
        link: PathBuf,
        /// The trusted directory.
        dir: PathBuf,
        /// Where it resolves to.
        target: PathBuf,
    },
    /// A `*.so` entry (or what its symlink resolves to) is not a regular file.
    #[error(
        "plugin file {} is a {found}, expected a regular file; remove it or rename it so it does not end in .so",
        .path.display()
    )]
    NotRegularFile {
        /// The entry.
        path: PathBuf,
        /// What was found (`directory`, `fifo`, ...).
        found: &'static str,
    },
    /// A `*.so` file name is not valid UTF-8 (plugin names must be).
    #[error("plugin file {} has a name that is not valid UTF-8; rename it", .path.display())]
    NonUtf8Name {
        /// The entry.
        path: PathBuf,
    },
    /// A file given by itself (`plugin verify FILE`) that no plugin directory would load.
    #[error(
        "plugin file {} {problem}, expected a NAME.so name (a plugin directory loads only those); rename it",
        .path.display()
    )]
    NotAPluginFileName {
        /// The file.
        path: PathBuf,
        /// What is wrong with its name.
        problem: &'static str,
    },
    /// A `NAME.plugin.toml` has no `NAME.so` beside it.
    #[error(
        "manifest without library: {} has no {} beside it; add the library or remove the manifest",
        .manifest.display(), .library.display()
    )]
    ManifestWithoutLibrary {
        /// The manifest.
        manifest: PathBuf,
        /// The library it expects.
        library: PathBuf,
    },
}

impl TrustError {
    /// The plugin file or directory the error is about (what a refusal line names first).
    pub fn subject(&self) -> &Path {
        match self {
            TrustError::RelativeDir { dir }
            | TrustError::DirMissing { dir }
            | TrustError::NotADirectory { dir, .. } => dir,
            TrustError::Io { path, .. }
            | TrustError::NotRegularFile { path, .. }
            | TrustError::NotAPluginFileName { path, .. }
            | TrustError::NonUtf8Name { path } => path,
            TrustError::NotCanonical { target, .. }
            | TrustError::BadOwner { target, .. }
            | TrustError::Writable { target, .. } => target,
            TrustError::SymlinkOutside { link, .. } => link,
            TrustError::ManifestWithoutLibrary { manifest, .. } => manifest,
        }
    }

    fn io(path: &Path, action: &'static str, err: &std::io::Error) -> Self {
        TrustError::Io {
            path: path.to_path_buf(),
            action,
            message: collapse_whitespace(&err.to_string()),
        }
    }
}

/// One plugin found in a trusted directory: `DIR/NAME.so` and its manifest path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginCandidate {
    /// The library to open: the canonical path of `DIR/NAME.so` (symlinks resolved; always inside
    /// the trusted directory).
    pub library: PathBuf,
    /// `DIR/NAME.plugin.toml` (resolved if it is a symlink). It may not exist: reading it reports
    /// the missing manifest.
    pub manifest: PathBuf,
    /// `NAME`, the file stem of the `.so` entry as listed in the directory.
    pub stem: String,
}

/// Checks a configured plugin directory and returns its canonical form.
///
/// The path must be absolute (relative entries in config files are resolved by the caller against
/// the config file, never against the current directory), must exist and must be a directory. This
/// does not check ownership or permissions: call [`check_path_trusted`] on the result.
pub fn canonical_plugin_dir(dir: &Path) -> Result<PathBuf, TrustError> {
    if !dir.is_absolute() {
        return Err(TrustError::RelativeDir {
            dir: dir.to_path_buf(),
        });
    }
    let meta = match std::fs::metadata(dir) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(TrustError::DirMissing {
                dir: dir.to_path_buf(),
            })
        }
        Err(err) => return Err(TrustError::io(dir, "stat plugin directory", &err)),
    };
    if !meta.is_dir() {
        return Err(TrustError::NotADirectory {
            dir: dir.to_path_buf(),
            found: file_type_name(&meta),
        });
    }
    std::fs::canonicalize(dir).map_err(|err| TrustError::io(dir, "canonicalize", &err))
}

/// A configured plugin directory, canonical and trusted: [`canonical_plugin_dir`], then
/// [`check_path_trusted`] on the result (the directory itself may not be a shared sticky one).
pub fn trusted_plugin_dir(dir: &Path) -> Result<PathBuf, TrustError> {
    let dir = canonical_plugin_dir(dir)?;
    check_path_trusted(&dir)?;
    Ok(dir)
}

/// The candidate for one plugin file given by itself (`plugin verify DIR/NAME.so`), checked
/// exactly as the loader checks that entry when `DIR` is a plugin directory: `DIR` is
/// [`trusted_plugin_dir`], the name is one [`list_plugin_files`] lists (`NAME.so`, not
/// hidden), and the entry goes through the same per-entry checks (symlinks must stay inside
/// `DIR`, library and manifest regular files that pass [`check_path_trusted`]). Nothing is
/// opened. `path` must be absolute.
pub fn plugin_file_candidate(path: &Path) -> Result<PluginCandidate, TrustError> {
    let bad = |problem| TrustError::NotAPluginFileName {
        path: path.to_path_buf(),
        problem,
    };
    let name = path.file_name().ok_or_else(|| bad("has no file name"))?;
    if name.as_bytes().starts_with(b".") {
        return Err(bad("is hidden (its name starts with '.')"));
    }
    match name.as_bytes().strip_suffix(LIBRARY_SUFFIX.as_bytes()) {
        Some(stem) if !stem.is_empty() => {}
        _ => return Err(bad("does not end in .so")),
    }
    let dir = path.parent().unwrap_or(Path::new(""));
    let dir = trusted_plugin_dir(dir)?;
    candidate(&dir, &name.to_os_string())
}

/// Checks that `path` and every ancestor up to `/` could only have been written by root or the
/// current user.
///
/// `path` must be absolute and canonical (no symlink and no `.`/`..` component; symlinks are
/// refused rather than followed, so what is checked is what gets opened). For `path` and each
/// ancestor:
/// - the owner must be root (uid 0) or the current effective uid;
/// - it must not be group- or world-writable (`mode & 0o022 == 0`).
///
/// Exception: an *ancestor* directory owned by root with the sticky bit set (like `/tmp`, mode
/// 1777) may be group/world-writable. In a sticky directory other users can create their own
/// entries but cannot rename, replace or delete entries they do not own, so our own subdirectory in
/// `/tmp` cannot be swapped under us. The exception never applies to `path` itself (a plugin
/// directory must not be a shared sticky directory: anyone could drop a `.so` into it).
///
/// The current effective uid is read as the owner of `/proc/self`.
pub fn check_path_trusted(path: &Path) -> Result<(), TrustError> {
    let current_uid = current_euid()?;
    check_path_trusted_for(path, current_uid)
}

/// [`check_path_trusted`] with the current uid passed in (testable).
fn check_path_trusted_for(path: &Path, current_uid: u32) -> Result<(), TrustError> {
    check_canonical_form(path)?;
    let mut current = Some(path);
    let mut is_ancestor = false;
    while let Some(p) = current {
        let meta = std::fs::symlink_metadata(p).map_err(|err| TrustError::io(p, "stat", &err))?;
        if meta.file_type().is_symlink() {
            return Err(TrustError::NotCanonical {
                target: path.to_path_buf(),
                component: p.to_path_buf(),
                problem: "a symlink",
            });
        }
        check_owner_and_mode(&meta, p, path, is_ancestor, current_uid)?;
        current = p.parent();
        is_ancestor = true;
    }
    Ok(())
}

/// Rejects relative paths and `.`/`..` components (checked lexically, before any I/O).
fn check_canonical_form(path: &Path) -> Result<(), TrustError> {
    if !path.is_absolute() {
        return Err(TrustError::NotCanonical {
            target: path.to_path_buf(),
            component: path.to_path_buf(),
            problem: "relative",
        });
    }
    let mut prefix = PathBuf::new();
    for component in path.components() {
        prefix.push(component.as_os_str());
        match component {
            Component::RootDir | Component::Normal(_) => {}
            Component::CurDir | Component::ParentDir | Component::Prefix(_) => {
                return Err(TrustError::NotCanonical {
                    target: path.to_path_buf(),
                    component: prefix,
                    problem: "a '.' or '..' component",
                })
            }
        }
    }
    Ok(())
}

/// The owner/mode rule for one path (`path` is `target` itself or one of its ancestors).
///
/// Allowed owners are root and `current_uid`. Group/world-writable is refused except for a
/// root-owned sticky ancestor directory (see [`check_path_trusted`]). Also used on an open file's
/// metadata by [`crate::verified_file`].
pub(crate) fn check_owner_and_mode(
    meta: &Metadata,
    path: &Path,
    target: &Path,
    is_ancestor: bool,
    current_uid: u32,
) -> Result<(), TrustError> {
    let kind = if meta.is_dir() { "directory" } else { "file" };
    let uid = meta.uid();
    if uid != 0 && uid != current_uid {
        return Err(TrustError::BadOwner {
            target: target.to_path_buf(),
            kind,
            path: path.to_path_buf(),
            uid,
            current_uid,
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode & GROUP_WORLD_WRITE != 0 {
        let sticky_root_ancestor = is_ancestor && meta.is_dir() && uid == 0 && mode & STICKY != 0;
        if !sticky_root_ancestor {
            return Err(TrustError::Writable {
                target: target.to_path_buf(),
                kind,
                path: path.to_path_buf(),
                mode,
            });
        }
    }
    Ok(())
}

/// The effective uid of this process: the owner of `/proc/self` (no libc call needed).
pub(crate) fn current_euid() -> Result<u32, TrustError> {
    let proc_self = Path::new("/proc/self");
    std::fs::metadata(proc_self)
        .map(|meta| meta.uid())
        .map_err(|err| TrustError::io(proc_self, "determine the current user from", &err))
}

/// Lists the plugins of a canonical, trusted directory (see [`canonical_plugin_dir`] and
/// [`check_path_trusted`]).
///
/// Returns one item per `*.so` entry, sorted by file name (byte order); hidden entries (leading
/// `.`) are skipped. Problems with one entry are reported as that entry's `Err` item so that one bad
/// file never hides the good ones; only failing to read the directory is a whole-directory error.
/// Per-entry errors:
/// - a symlink that is dangling or resolves outside `dir` ([`TrustError::SymlinkOutside`]);
/// - an entry (or symlink target) that is not a regular file, e.g. a directory named `x.so`;
/// - a library or manifest that fails [`check_path_trusted`] (e.g. a world-writable `.so`);
/// - a `NAME.plugin.toml` with no `NAME.so` ([`TrustError::ManifestWithoutLibrary`]), placed in
///   the list by its own file name.
pub fn list_plugin_files(
    dir: &Path,
) -> Result<Vec<Result<PluginCandidate, TrustError>>, TrustError> {
    let entries =
        std::fs::read_dir(dir).map_err(|err| TrustError::io(dir, "read directory", &err))?;
    let mut names: Vec<OsString> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|err| TrustError::io(dir, "read directory", &err))?;
        let name = entry.file_name();
        if name.as_bytes().starts_with(b".") {
            continue;
        }
        names.push(name);
    }
    names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));

    let mut items = Vec::new();
    for name in &names {
        let bytes = name.as_bytes();
        if let Some(stem) = bytes.strip_suffix(LIBRARY_SUFFIX.as_bytes()) {
            if stem.is_empty() {
                continue;
            }
            items.push(candidate(dir, name));
        } else if let Some(stem) = bytes.strip_suffix(MANIFEST_SUFFIX.as_bytes()) {
            if stem.is_empty() {
                continue;
            }
            let mut library_name = stem.to_vec();
            library_name.extend_from_slice(LIBRARY_SUFFIX.as_bytes());
            let library_name = OsString::from(std::ffi::OsStr::from_bytes(&library_name));
            if names
                .binary_search_by(|n| n.as_bytes().cmp(library_name.as_bytes()))
                .is_err()
            {
                items.push(Err(TrustError::ManifestWithoutLibrary {
                    manifest: dir.join(name),
                    library: dir.join(library_name),
                }));
            }
        }
    }
    Ok(items)
}

/// Builds the candidate for the `NAME.so` entry `name` of `dir`.
fn candidate(dir: &Path, name: &OsString) -> Result<PluginCandidate, TrustError> {
    let entry_path = dir.join(name);
    let Some(stem) = name
        .to_str()
        .and_then(|n| n.strip_suffix(LIBRARY_SUFFIX))
        .map(str::to_string)
    else {
        return Err(TrustError::NonUtf8Name { path: entry_path });
    };
    let library = resolve_inside(dir, &entry_path)?;
    let manifest_entry = dir.join(format!("{stem}{MANIFEST_SUFFIX}"));
    let manifest = match std::fs::symlink_metadata(&manifest_entry) {
        Ok(_) => resolve_inside(dir, &manifest_entry)?,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => manifest_entry,
        Err(err) => return Err(TrustError::io(&manifest_entry, "stat", &err)),
    };
    Ok(PluginCandidate {
        library,
        manifest,
        stem,
    })
}

/// Resolves `entry` (a file of `dir`, possibly a symlink), requires the result to be a regular file
/// inside `dir`, and checks it with [`check_path_trusted`].
fn resolve_inside(dir: &Path, entry: &Path) -> Result<PathBuf, TrustError> {
    let link_meta =
        std::fs::symlink_metadata(entry).map_err(|err| TrustError::io(entry, "stat", &err))?;
    let resolved = if link_meta.file_type().is_symlink() {
        let target = std::fs::canonicalize(entry)
            .map_err(|err| TrustError::io(entry, "resolve symlink", &err))?;
        if !target.starts_with(dir) || target == dir {
            return Err(TrustError::SymlinkOutside {
                link: entry.to_path_buf(),
                dir: dir.to_path_buf(),
                target,
            });
        }
        target
    } else {
        entry.to_path_buf()
    };
    let meta = std::fs::symlink_metadata(&resolved)
        .map_err(|err| TrustError::io(&resolved, "stat", &err))?;
    if !meta.is_file() {
        return Err(TrustError::NotRegularFile {
            path: entry.to_path_buf(),
            found: file_type_name(&meta),
        });
    }
    check_path_trusted(&resolved)?;
    Ok(resolved)
}

#[cfg(test)]
mod tests;
