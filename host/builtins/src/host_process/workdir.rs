//! A `host_process` session's private root directory, created lazily and exactly once, and
//! the session directories in it.

use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use agentcompass_plugin_api::contracts::SessionDirs;
use agentcompass_plugin_api::sdk::provider::blocking;
use agentcompass_plugin_api::{Error, Result};

use super::ID;
use crate::files::create_private_dir;

/// The subdirectory of the root that is the workspace (unless a fixed workdir is given).
const WORKSPACE: &str = "app";

/// A session's directories: a private root (reserved at open, created with its
/// subdirectories on first use, removed on close) and the workspace, `ROOT/app` or a fixed
/// directory (created at open, never removed).
pub(super) struct Workdir {
    /// The path reserved for the root.
    reserved: PathBuf,
    /// The fixed workspace, if the `workdir` param names one.
    fixed: Option<PathBuf>,
    /// The name prefix of the root (for a fresh name when the reserved one is taken).
    prefix: String,
    /// Shared with the blocking creation task, so a creation whose caller was cancelled is
    /// still recorded (and removed on close).
    state: Arc<WorkdirState>,
}

#[derive(Default)]
struct WorkdirState {
    /// The root, once created.
    created: OnceLock<PathBuf>,
    /// Held while creating, and while closing: serialises first uses and orders them with
    /// close. The flag is set by close; no directory is created after it.
    lock: Mutex<bool>,
}

impl Workdir {
    pub(super) fn new(reserved: PathBuf, fixed: Option<PathBuf>, prefix: String) -> Workdir {
        Workdir {
            reserved,
            fixed,
            prefix,
            state: Arc::new(WorkdirState::default()),
        }
    }

    /// The root as reported: the created one, else the reserved path.
    pub(super) fn root(&self) -> &Path {
        self.state.created.get().unwrap_or(&self.reserved)
    }

    /// The root, if it was created.
    pub(super) fn created(&self) -> Option<&PathBuf> {
        self.state.created.get()
    }

    /// The session directories (host paths, as strings).
    pub(super) fn dirs(&self) -> SessionDirs {
        let dirs = SessionDirs::under(&self.root().to_string_lossy(), WORKSPACE);
        match &self.fixed {
            Some(fixed) => dirs.with_workspace(fixed.to_string_lossy()),
            None => dirs,
        }
    }

    /// The workspace, created (once) if this is its first use.
    pub(super) async fn workspace(&self) -> Result<PathBuf> {
        match &self.fixed {
            Some(fixed) => Ok(fixed.clone()),
            None => Ok(self.ensure().await?.join(WORKSPACE)),
        }
    }

    /// `path` when it is not under the root; else the same path under the root, created
    /// (once) if this is its first use (and rebased should the reserved name have been taken).
    pub(super) async fn claim(&self, path: &Path) -> Result<PathBuf> {
        let Ok(rest) = path.strip_prefix(&self.reserved) else {
            return Ok(path.to_path_buf());
        };
        Ok(self.ensure().await?.join(rest))
    }

    /// The root with its subdirectories, created (once) if this is its first use.
    pub(super) async fn ensure(&self) -> Result<PathBuf> {
        if let Some(path) = self.state.created.get() {
            return Ok(path.clone());
        }
        let (state, reserved, prefix) = (
            self.state.clone(),
            self.reserved.clone(),
            self.prefix.clone(),
        );
        let workspace = self.fixed.is_none();
        blocking(ID, move || {
            let closed = state.lock.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(path) = state.created.get() {
                return Ok(path.clone());
            }
            if *closed {
                return Err(Error::environment(format!(
                    "environment `{ID}`: the session is closed"
                )));
            }
            let path = create_private_dir(&reserved, &prefix, ID)?;
            let subdirs = ["tests", "solution", "logs", "tmp"];
            let subdirs = subdirs.iter().chain(workspace.then_some(&WORKSPACE));
            for name in subdirs {
                fs::DirBuilder::new()
                    .mode(0o700)
                    .create(path.join(name))
                    .map_err(|e| {
                        let _ = fs::remove_dir_all(&path);
                        Error::environment(format!(
                            "environment `{ID}`: cannot create `{}/{name}`: {e}",
                            path.display()
                        ))
                    })?;
            }
            tracing::debug!(provider = ID, root = %path.display(), "created session root");
            let _ = state.created.set(path.clone());
            Ok(path)
        })
        .await?
    }

    /// Marks the root closed (no creation after this) and returns it to remove, if it was
    /// created (the caller removes it; [`Drop`] then has nothing left to do).
    pub(super) async fn close(&self) -> Result<Option<PathBuf>> {
        let state = self.state.clone();
        blocking(ID, move || {
            *state.lock.lock().unwrap_or_else(PoisonError::into_inner) = true;
            Ok(state.created.get().cloned())
        })
        .await?
    }
}

impl Drop for Workdir {
    /// A session dropped without `close` (a host panic unwinding through its attempt) still
    /// removes the root it created: nothing it made outlives it. A closed session's root is
    /// gone already, and removing a missing directory is a no-op.
    fn drop(&mut self) {
        if let Some(root) = self.state.created.get() {
            if let Err(e) = fs::remove_dir_all(root) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    tracing::warn!(
                        provider = ID,
                        root = %root.display(),
                        "cannot remove an unclosed session's directory: {e}"
                    );
                }
            }
        }
    }
}
