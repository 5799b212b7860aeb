//! Cached tasks written out in the layout of Harbor 0.25's `harbor download NAME@VERSION
//! --registry-path P --output-dir D --export` (`docs/design/harbor-datasets.md`, §3):
//! `D/<dataset name after its last '/'>/<last part of the task's path>/`, holding every file of
//! the task directory (no ignore rules), with git's modes (`0644`, `0755` for executables, as a
//! checkout makes them under the umask), directories as `mkdir` makes them, and the links
//! inside the task made into what they point to: a link to a file becomes a copy of the file
//! (with the file's mode), a link to a directory a real directory of copies. Links resolve in
//! the task alone, as Harbor resolves them (in a copy of the task): one that is absolute, leads
//! out of the task (even to come back in), points to nothing or back into a directory holding
//! it is refused, as Harbor refuses it. Each task is built in a staging directory beside its target
//! and renamed into place, replacing what was there; nothing else is written.

#[cfg(test)]
mod tests;

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use crate::{content_hash, CachedTask, HashError};

/// Why a task could not be exported (or its links made into files).
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// A link names an absolute path.
    #[error(
        "task `{task}`: link `{link}` points to the absolute path `{target}`; a task's links \
         must be relative"
    )]
    AbsoluteLink {
        /// The task.
        task: String,
        /// The link, relative to the task directory.
        link: String,
        /// What it points to.
        target: String,
    },
    /// A link leads out of the task directory.
    #[error(
        "task `{task}`: link `{link}` -> `{target}` leads out of the task directory; a task's \
         links must stay inside it"
    )]
    EscapingLink {
        /// The task.
        task: String,
        /// The link, relative to the task directory.
        link: String,
        /// What it points to.
        target: String,
    },
    /// A link points to nothing (or to a loop of links).
    #[error("task `{task}`: link `{link}` -> `{target}` points to nothing (dangling or a loop)")]
    DanglingLink {
        /// The task.
        task: String,
        /// The link, relative to the task directory.
        link: String,
        /// What it points to.
        target: String,
    },
    /// A link to a directory leads back into a directory holding it.
    #[error(
        "task `{task}`: link `{link}` -> `{target}` leads back into a directory that holds it"
    )]
    CyclicLink {
        /// The task.
        task: String,
        /// The link, relative to the task directory.
        link: String,
        /// What it points to.
        target: String,
    },
    /// An entry is neither a file, a directory nor a link.
    #[error("task `{task}`: `{path}` is a {found}; a task holds files, directories and links")]
    Unsupported {
        /// The task.
        task: String,
        /// The entry, relative to the task directory.
        path: String,
        /// What it is.
        found: &'static str,
    },
    /// The task directory is not a directory.
    #[error("task `{task}`: {} is a {found}, expected the task's directory", dir.display())]
    NotADirectory {
        /// The task.
        task: String,
        /// The path given as the task directory.
        dir: PathBuf,
        /// What it is.
        found: &'static str,
    },
    /// The task's path has no last part to name its directory.
    #[error("task `{task}`: its path has no last part to name the exported directory")]
    NoTaskName {
        /// The task (its path).
        task: String,
    },
    /// Two tasks would land in the same directory.
    #[error(
        "tasks `{first}` and `{second}` would both be exported as `{name}`; an export needs \
         tasks whose paths end differently"
    )]
    DuplicateName {
        /// The directory name both have.
        name: String,
        /// The first task's path.
        first: String,
        /// The second task's path.
        second: String,
    },
    /// The dataset name gives no directory name.
    #[error(
        "dataset `{name}`: its name after the last `/` is empty, `.` or `..`, not a directory name"
    )]
    BadDatasetName {
        /// The name.
        name: String,
    },
    /// The copy's digest is not the task's: the cached files changed after they were verified.
    #[error(
        "task `{task}`: a copy of {} has digest {found}, expected {expected} (the cached files \
         changed after they were verified)",
        dir.display()
    )]
    Altered {
        /// The task.
        task: String,
        /// The task directory copied.
        dir: PathBuf,
        /// The copy's digest.
        found: String,
        /// The task's recorded digest.
        expected: String,
    },
    /// The copy's digest could not be computed.
    #[error("task `{task}`: {source}")]
    Hash {
        /// The task.
        task: String,
        /// Why.
        source: HashError,
    },
    /// A file or directory could not be read or written.
    #[error("task `{task}`: {}: {source}", path.display())]
    Io {
        /// The task.
        task: String,
        /// What was read or written.
        path: PathBuf,
        /// Why it failed.
        source: io::Error,
    },
}

fn io_error<'a>(task: &'a str, path: &'a Path) -> impl FnOnce(io::Error) -> ExportError + 'a {
    move |source| ExportError::Io {
        task: task.to_string(),
        path: path.to_path_buf(),
        source,
    }
}

/// Exports the dataset `dataset_name`'s `tasks` under `output_dir` as Harbor's `--export` does:
/// into `output_dir/<dataset_name after its last '/'>/<last part of each task's path>/`, in
/// order; returns the task directories written. Two tasks whose paths end alike are refused
/// before anything is written.
pub fn export_dataset(
    dataset_name: &str,
    tasks: &[CachedTask],
    output_dir: &Path,
) -> Result<Vec<PathBuf>, ExportError> {
    let dir_name = dataset_name.rsplit('/').next().unwrap_or_default();
    if matches!(dir_name, "" | "." | "..") {
        return Err(ExportError::BadDatasetName {
            name: dataset_name.to_string(),
        });
    }
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for task in tasks {
        let name = task_name(task)?;
        if let Some((_, first)) = seen.iter().find(|(n, _)| *n == name) {
            return Err(ExportError::DuplicateName {
                name: name.to_string(),
                first: first.to_string(),
                second: task.path.clone(),
            });
        }
        seen.push((name, &task.path));
    }
    let dataset_dir = output_dir.join(dir_name);
    tasks
        .iter()
        .map(|task| export_task(task, &dataset_dir))
        .collect()
}

/// Exports one cached task into `dataset_dir/<last part of its path>/` (replacing what is
/// there), built beside it and renamed into place; returns that directory. The copy is
/// checked against the task's digest before it replaces anything.
pub fn export_task(task: &CachedTask, dataset_dir: &Path) -> Result<PathBuf, ExportError> {
    let label = task.path.as_str();
    let target = dataset_dir.join(task_name(task)?);
    fs::create_dir_all(dataset_dir).map_err(io_error(label, dataset_dir))?;
    let staging = tempfile::Builder::new()
        .prefix(".tmp")
        .tempdir_in(dataset_dir)
        .map_err(io_error(label, dataset_dir))?;
    let staged = staging.path().join("task");
    materialise(label, &task.dir, &staged)?;
    let found = content_hash(&staged)
        .map_err(|source| ExportError::Hash {
            task: label.to_string(),
            source,
        })?
        .digest;
    if found != task.digest {
        return Err(ExportError::Altered {
            task: label.to_string(),
            dir: task.dir.clone(),
            found,
            expected: task.digest.clone(),
        });
    }
    // What is there moves aside in one rename (a link itself, not what it points to), the
    // new copy in in another; the old one goes with the staging directory.
    match fs::symlink_metadata(&target) {
        Ok(_) => {
            let old = staging.path().join("replaced");
            fs::rename(&target, &old).map_err(io_error(label, &target))?;
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_error(label, &target)(e)),
    }
    fs::rename(&staged, &target).map_err(io_error(label, &target))?;
    let staging_dir = staging.path().to_path_buf();
    staging.close().map_err(io_error(label, &staging_dir))?;
    Ok(target)
}

/// The exported directory's name: the last part of the task's path (Harbor's task name).
fn task_name(task: &CachedTask) -> Result<&str, ExportError> {
    Path::new(&task.path)
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or_else(|| ExportError::NoTaskName {
            task: task.path.clone(),
        })
}

/// Whether the tree at `dir` (a link itself included) holds a link.
pub(crate) fn has_links(dir: &Path) -> io::Result<bool> {
    if fs::symlink_metadata(dir)?.file_type().is_symlink() {
        return Ok(true);
    }
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_symlink() || (kind.is_dir() && has_links(&entry.path())?) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Copies the task directory `from` to `to` (which must not exist), making each link into
/// what it points to, as Harbor's `_materialize_task_tree` does. Files get git's mode for
/// their executable bit (`0666`/`0777` less the umask), directories `mkdir`'s.
pub(crate) fn materialise(task: &str, from: &Path, to: &Path) -> Result<(), ExportError> {
    let meta = fs::symlink_metadata(from).map_err(io_error(task, from))?;
    if !meta.is_dir() {
        return Err(ExportError::NotADirectory {
            task: task.to_string(),
            dir: from.to_path_buf(),
            found: kind_name(meta.file_type()),
        });
    }
    let root = from.canonicalize().map_err(io_error(task, from))?;
    let mut copier = Copier {
        task,
        root: &root,
        open: Vec::new(),
    };
    copier.copy(&root, to)
}

/// One materialising copy: the task, its resolved root, and the directories being copied
/// (resolved), outermost first.
struct Copier<'a> {
    task: &'a str,
    root: &'a Path,
    open: Vec<PathBuf>,
}

impl Copier<'_> {
    /// Copies the entry at `path` (inside the root) to `dest`.
    fn copy(&mut self, path: &Path, dest: &Path) -> Result<(), ExportError> {
        let rel = || {
            path.strip_prefix(self.root)
                .unwrap_or(path)
                .to_string_lossy()
                .into_owned()
        };
        let meta = fs::symlink_metadata(path).map_err(io_error(self.task, path))?;
        let link_target = if meta.file_type().is_symlink() {
            let target = fs::read_link(path).map_err(io_error(self.task, path))?;
            if target.is_absolute() {
                return Err(ExportError::AbsoluteLink {
                    task: self.task.to_string(),
                    link: rel(),
                    target: target.to_string_lossy().into_owned(),
                });
            }
            Some(target.to_string_lossy().into_owned())
        } else {
            None
        };
        let resolved = match &link_target {
            None => path.to_path_buf(),
            Some(target) => {
                let parent = path.parent().unwrap_or(self.root);
                let start: Vec<OsString> = parent
                    .strip_prefix(self.root)
                    .map(|rel| rel.iter().map(OsStr::to_os_string).collect())
                    .unwrap_or_default();
                let mut hops = 0;
                let failed = |kind: Unresolved| match kind {
                    Unresolved::Escapes => ExportError::EscapingLink {
                        task: self.task.to_string(),
                        link: rel(),
                        target: target.clone(),
                    },
                    Unresolved::Dangling => ExportError::DanglingLink {
                        task: self.task.to_string(),
                        link: rel(),
                        target: target.clone(),
                    },
                    Unresolved::Io(e) => io_error(self.task, path)(e),
                };
                let parts = self
                    .resolve(start, Path::new(target), &mut hops)
                    .map_err(failed)?;
                self.root.join(parts.iter().collect::<PathBuf>())
            }
        };
        let meta = fs::metadata(&resolved).map_err(io_error(self.task, &resolved))?;
        if meta.is_dir() {
            if self.open.contains(&resolved) {
                return Err(ExportError::CyclicLink {
                    task: self.task.to_string(),
                    link: rel(),
                    target: link_target.unwrap_or_default(),
                });
            }
            fs::create_dir(dest).map_err(io_error(self.task, dest))?;
            let mut names: Vec<_> = fs::read_dir(&resolved)
                .map_err(io_error(self.task, &resolved))?
                .map(|entry| entry.map(|e| e.file_name()))
                .collect::<Result<_, _>>()
                .map_err(io_error(self.task, &resolved))?;
            names.sort();
            self.open.push(resolved.clone());
            for name in names {
                self.copy(&resolved.join(&name), &dest.join(&name))?;
            }
            self.open.pop();
            Ok(())
        } else if meta.is_file() {
            let executable = meta.permissions().mode() & 0o100 != 0;
            let mut source = File::open(&resolved).map_err(io_error(self.task, &resolved))?;
            let mut out = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(if executable { 0o777 } else { 0o666 })
                .open(dest)
                .map_err(io_error(self.task, dest))?;
            io::copy(&mut source, &mut out).map_err(io_error(self.task, dest))?;
            Ok(())
        } else {
            Err(ExportError::Unsupported {
                task: self.task.to_string(),
                path: rel(),
                found: kind_name(meta.file_type()),
            })
        }
    }

    /// Where `target`, read in the task's directory `at` (its parts below the root, no links
    /// among them), leads: its parts below the root, every link on the way followed, never
    /// above the root, as if the task were all there is (Harbor resolves links in a copy of
    /// the task alone, so a link out of the task and back into it does not resolve there).
    fn resolve(
        &self,
        mut at: Vec<OsString>,
        target: &Path,
        hops: &mut usize,
    ) -> Result<Vec<OsString>, Unresolved> {
        let mut not_a_dir = false;
        for component in target.components() {
            if not_a_dir {
                return Err(Unresolved::Dangling);
            }
            match component {
                Component::CurDir => {}
                Component::ParentDir => {
                    if at.pop().is_none() {
                        return Err(Unresolved::Escapes);
                    }
                }
                Component::RootDir | Component::Prefix(_) => return Err(Unresolved::Escapes),
                Component::Normal(name) => {
                    at.push(name.to_os_string());
                    let here = self.root.join(at.iter().collect::<PathBuf>());
                    let meta = fs::symlink_metadata(&here).map_err(|e| match e.kind() {
                        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => {
                            Unresolved::Dangling
                        }
                        _ => Unresolved::Io(e),
                    })?;
                    if meta.file_type().is_symlink() {
                        *hops += 1;
                        if *hops > MAX_HOPS {
                            return Err(Unresolved::Dangling);
                        }
                        let next = fs::read_link(&here).map_err(Unresolved::Io)?;
                        at.pop();
                        at = self.resolve(at, &next, hops)?;
                        let real = self.root.join(at.iter().collect::<PathBuf>());
                        not_a_dir = !real.is_dir();
                    } else {
                        not_a_dir = !meta.is_dir();
                    }
                }
            }
        }
        Ok(at)
    }
}

/// How many links one link may lead through before it counts as a loop (Linux's limit).
const MAX_HOPS: usize = 40;

/// Why a link does not resolve inside the task.
enum Unresolved {
    /// It leads above the task's root (or to an absolute path).
    Escapes,
    /// Something on its way does not exist (or is not a directory), or it loops.
    Dangling,
    /// Reading the way failed.
    Io(io::Error),
}

/// What a file type is, in words.
fn kind_name(kind: fs::FileType) -> &'static str {
    if kind.is_symlink() {
        "symbolic link"
    } else if kind.is_file() {
        "file"
    } else if kind.is_fifo() {
        "named pipe"
    } else if kind.is_socket() {
        "socket"
    } else if kind.is_block_device() || kind.is_char_device() {
        "device"
    } else {
        "special file"
    }
}
