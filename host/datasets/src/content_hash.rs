//! A Harbor task's content digest, as Harbor 0.25's `Packager.compute_content_hash` computes
//! it (`docs/design/harbor-datasets.md`, "Content hash").
//!
//! The hashed files: `task.toml`, `instruction.md`, `README.md` and `trajectory.json` at the
//! task's root, and every file under `environment/`, `tests/`, `solution/` and `steps/`
//! (symbolic links to files count with their target's bytes; linked directories are not
//! entered), less what `.harborignore` files exclude ([`harborignore`]) and what the task's
//! `.gitignore` excludes (Harbor's default patterns when it has none). The digest is the
//! SHA-256, in lowercase hex, of one line `PATH\0SHA256(FILE)\n` a file, in the byte order of
//! the paths (relative, `/`-separated). Modes and times do not count.

mod harborignore;
#[cfg(test)]
mod tests;

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use sha2::{Digest, Sha256};

use harborignore::TaskFilter;

/// The root files Harbor hashes, when present.
const ROOT_FILES: [&str; 4] = [
    "task.toml",
    "instruction.md",
    "README.md",
    "trajectory.json",
];

/// The directories Harbor hashes every file of.
const TREES: [&str; 4] = ["environment", "tests", "solution", "steps"];

/// What is left out when the task has no `.gitignore` (Harbor's `DEFAULT_IGNORES`).
const DEFAULT_IGNORES: [&str; 6] = ["__pycache__/", "*.pyc", ".DS_Store", "*.swp", "*.swo", "*~"];

/// A task's content digest and the files it covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentHash {
    /// 64 lowercase hex digits (no `sha256:` prefix, as Harbor returns it).
    pub digest: String,
    /// The hashed files, relative to the task directory, `/`-separated, in hashing order.
    pub files: Vec<String>,
}

/// Why a task's digest could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum HashError {
    /// A file or directory could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        /// What was read.
        path: PathBuf,
        /// Why it failed.
        source: io::Error,
    },
    /// A `.gitignore` or `.harborignore` line is not a valid pattern.
    #[error("{}: bad pattern: {source}", path.display())]
    Pattern {
        /// The file holding the pattern.
        path: PathBuf,
        /// The pattern's defect.
        source: ignore::Error,
    },
    /// A `.harborignore` file is a link that leaves the task directory.
    #[error("{}: links outside the task directory", path.display())]
    Escapes {
        /// The link.
        path: PathBuf,
    },
}

pub(crate) fn read_error(path: &Path) -> impl FnOnce(io::Error) -> HashError + '_ {
    move |source| HashError::Read {
        path: path.to_path_buf(),
        source,
    }
}

/// The content digest of the Harbor task at `task_dir`.
pub fn content_hash(task_dir: &Path) -> Result<ContentHash, HashError> {
    let root = task_dir.canonicalize().map_err(read_error(task_dir))?;
    let mut files = collect(&root)?;
    let ignores = gitignore(&root)?;
    files.retain(|rel| !ignores.matched_path_or_any_parents(rel, false).is_ignore());
    files.sort();
    let mut outer = Sha256::new();
    for rel in &files {
        let file_hash = file_digest(&root.join(rel))?;
        outer.update(rel.as_bytes());
        outer.update(b"\0");
        outer.update(file_hash.as_bytes());
        outer.update(b"\n");
    }
    Ok(ContentHash {
        digest: hex::encode(outer.finalize()),
        files,
    })
}

/// The root files present and every file of the trees that `.harborignore` keeps, as
/// relative paths.
fn collect(root: &Path) -> Result<Vec<String>, HashError> {
    let mut files: Vec<String> = ROOT_FILES
        .iter()
        .filter(|name| root.join(name).is_file())
        .map(|name| name.to_string())
        .collect();
    let filter = TaskFilter::new(root);
    for tree in TREES {
        let dir = root.join(tree);
        if dir.is_dir() && !filter.is_excluded(&dir)? {
            walk(&filter, &dir, tree, &mut files)?;
        }
    }
    Ok(files)
}

/// Every file below `dir` (relative path `rel`) in name order, entering real directories
/// only; an excluded entry is left out with everything below it.
fn walk(
    filter: &TaskFilter,
    dir: &Path,
    rel: &str,
    files: &mut Vec<String>,
) -> Result<(), HashError> {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .map_err(read_error(dir))?
        .map(|entry| entry.map(|e| e.file_name()))
        .collect::<Result<_, _>>()
        .map_err(read_error(dir))?;
    entries.sort();
    for name in entries {
        let path = dir.join(&name);
        if filter.is_excluded(&path)? {
            continue;
        }
        let child = format!("{rel}/{}", name.to_string_lossy());
        let is_link = fs::symlink_metadata(&path)
            .map_err(read_error(&path))?
            .file_type()
            .is_symlink();
        if path.is_dir() && !is_link {
            walk(filter, &path, &child, files)?;
        } else if path.is_file() {
            files.push(child);
        }
    }
    Ok(())
}

/// The task's `.gitignore` patterns, or Harbor's defaults without one.
fn gitignore(root: &Path) -> Result<Gitignore, HashError> {
    let file = root.join(".gitignore");
    let mut builder = GitignoreBuilder::new(root);
    if file.exists() {
        let text = fs::read_to_string(&file).map_err(read_error(&file))?;
        for line in text.lines() {
            add_line(&mut builder, &file, line)?;
        }
    } else {
        for line in DEFAULT_IGNORES {
            add_line(&mut builder, &file, line)?;
        }
    }
    builder.build().map_err(|source| HashError::Pattern {
        path: file.clone(),
        source,
    })
}

pub(crate) fn add_line(
    builder: &mut GitignoreBuilder,
    file: &Path,
    line: &str,
) -> Result<(), HashError> {
    builder
        .add_line(Some(file.to_path_buf()), line)
        .map(|_| ())
        .map_err(|source| HashError::Pattern {
            path: file.to_path_buf(),
            source,
        })
}

/// The lowercase hex SHA-256 of a file's bytes.
fn file_digest(path: &Path) -> Result<String, HashError> {
    let mut file = File::open(path).map_err(read_error(path))?;
    let mut hasher = Sha256::new();
    io::copy(&mut file, &mut hasher).map_err(read_error(path))?;
    Ok(hex::encode(hasher.finalize()))
}
