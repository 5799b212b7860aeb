//! Harbor's `.harborignore` rules (`TaskFileFilter`): every file named `.harborignore` is
//! left out; inside the scopes `tests/`, `solution/`, `steps/*/tests/` and `steps/*/solution/`
//! a path is left out when, for it or one of its directories, the deepest `.harborignore` of
//! an enclosing in-scope directory that has a say (gitignore patterns, `!` negating) says so.
//! A link inside the task is judged by its own path and by its target's.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;

use super::{add_line, read_error, HashError};

/// The name of Harbor's ignore files.
const IGNORE_FILENAME: &str = ".harborignore";

/// The `.harborignore` rules of one task directory (each file read once).
pub(super) struct TaskFilter {
    root: PathBuf,
    specs: RefCell<HashMap<PathBuf, Option<Gitignore>>>,
}

impl TaskFilter {
    /// The rules of the task at `root` (canonical).
    pub(super) fn new(root: &Path) -> TaskFilter {
        TaskFilter {
            root: root.to_path_buf(),
            specs: RefCell::new(HashMap::new()),
        }
    }

    /// Whether `path` (below the root, not resolved) is left out, by its own path or, for a
    /// link whose target is inside the task, by the target's.
    pub(super) fn is_excluded(&self, path: &Path) -> Result<bool, HashError> {
        if self.matches(path)? {
            return Ok(true);
        }
        match path.canonicalize() {
            Ok(resolved) if resolved != path && resolved.starts_with(&self.root) => {
                self.matches(&resolved)
            }
            _ => Ok(false),
        }
    }

    fn matches(&self, path: &Path) -> Result<bool, HashError> {
        let Ok(rel) = path.strip_prefix(&self.root) else {
            return Ok(false);
        };
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts.last().map(String::as_str) == Some(IGNORE_FILENAME) {
            return Ok(true);
        }
        let is_dir = path.is_dir();
        if !in_scope(&parts, is_dir) {
            return Ok(false);
        }
        // The in-scope directories above the candidate, each with its rules (shallow first).
        let mut specs: Vec<(usize, Gitignore)> = Vec::new();
        for end in 1..=parts.len() {
            let parent = &parts[..end - 1];
            if in_scope(parent, true) {
                if let Some(spec) = self.spec_for(parent)? {
                    specs.push((end - 1, spec));
                }
            }
            let candidate = &parts[..end];
            let candidate_is_dir = end < parts.len() || is_dir;
            if !in_scope(candidate, candidate_is_dir) {
                continue;
            }
            let mut excluded = false;
            for (depth, spec) in &specs {
                let below = candidate[*depth..].join("/");
                match spec.matched(&below, candidate_is_dir) {
                    Match::Ignore(_) => excluded = true,
                    Match::Whitelist(_) => excluded = false,
                    Match::None => {}
                }
            }
            if excluded {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The rules of the `.harborignore` in the directory `parts` (none without one).
    fn spec_for(&self, parts: &[String]) -> Result<Option<Gitignore>, HashError> {
        let dir = parts.iter().fold(self.root.clone(), |dir, p| dir.join(p));
        if let Some(spec) = self.specs.borrow().get(&dir) {
            return Ok(spec.clone());
        }
        let file = dir.join(IGNORE_FILENAME);
        let spec = if file.exists() {
            let resolved = file.canonicalize().map_err(read_error(&file))?;
            if !resolved.starts_with(&self.root) {
                return Err(HashError::Escapes { path: file });
            }
            let text = fs::read_to_string(&file).map_err(read_error(&file))?;
            let mut builder = GitignoreBuilder::new(&dir);
            for line in text.lines() {
                add_line(&mut builder, &file, line)?;
            }
            let spec = builder.build().map_err(|source| HashError::Pattern {
                path: file.clone(),
                source,
            })?;
            Some(spec)
        } else {
            None
        };
        self.specs.borrow_mut().insert(dir, spec.clone());
        Ok(spec)
    }
}

/// Whether the relative path `parts` (a directory when `is_dir`) is inside one of Harbor's
/// scopes `/tests/`, `/solution/`, `/steps/*/tests/`, `/steps/*/solution/` (a scope's own
/// directory included).
fn in_scope(parts: &[String], is_dir: bool) -> bool {
    let names: Vec<&str> = parts.iter().map(String::as_str).collect();
    let scope = match names.as_slice() {
        ["tests" | "solution", ..] => 1,
        ["steps", _, "tests" | "solution", ..] => 3,
        _ => return false,
    };
    names.len() > scope || (names.len() == scope && is_dir)
}
