//! A `host_process` session's working directory, created lazily and exactly once.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use agentcompass_plugin_api::sdk::provider::blocking;
use agentcompass_plugin_api::{Error, Result};

use super::ID;
use crate::files::create_private_dir;

/// A session's working directory: fixed (created at open, never removed) or owned (reserved
/// at open, created on first use, removed on close).
pub(super) struct Workdir {
    /// The fixed directory, or the path reserved for the owned one.
    reserved: PathBuf,
    pub(super) owned: bool,
    /// The name prefix of the owned directory (for a fresh name when the reserved one is taken).
    prefix: String,
    /// Shared with the blocking creation task, so a creation whose caller was cancelled is
    /// still recorded (and removed on close).
    state: Arc<WorkdirState>,
}

#[derive(Default)]
struct WorkdirState {
    /// The owned directory, once created.
    created: OnceLock<PathBuf>,
    /// Held while creating, and while closing: serialises first uses and orders them with
    /// close. The flag is set by close; no directory is created after it.
    lock: Mutex<bool>,
}

impl Workdir {
    pub(super) fn new(reserved: PathBuf, owned: bool, prefix: String) -> Workdir {
        Workdir {
            reserved,
            owned,
            prefix,
            state: Arc::new(WorkdirState::default()),
        }
    }

    /// The directory as reported: the created one, else the reserved path.
    pub(super) fn path(&self) -> &Path {
        self.state.created.get().unwrap_or(&self.reserved)
    }

    /// The owned directory, if it was created.
    pub(super) fn created(&self) -> Option<&PathBuf> {
        self.state.created.get()
    }

    /// The working directory, created (once) if this is its first use.
    pub(super) async fn ensure(&self) -> Result<PathBuf> {
        if !self.owned {
            return Ok(self.reserved.clone());
        }
        if let Some(path) = self.state.created.get() {
            return Ok(path.clone());
        }
        let (state, reserved, prefix) = (
            self.state.clone(),
            self.reserved.clone(),
            self.prefix.clone(),
        );
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
            tracing::debug!(provider = ID, workdir = %path.display(), "created workdir");
            let _ = state.created.set(path.clone());
            Ok(path)
        })
        .await?
    }

    /// Marks the working directory closed (no creation after this) and returns the owned
    /// directory to remove, if one was created.
    pub(super) async fn close(&self) -> Result<Option<PathBuf>> {
        if !self.owned {
            return Ok(None);
        }
        let state = self.state.clone();
        blocking(ID, move || {
            *state.lock.lock().unwrap_or_else(PoisonError::into_inner) = true;
            Ok(state.created.get().cloned())
        })
        .await?
    }
}
