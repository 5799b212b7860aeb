//! The per-entry file lock: one install at a time per entry, across attempts and host
//! processes (an advisory `flock` on `<entry>.lock`, released when the holder exits, so a
//! killed install never leaves the entry locked).

use std::fs::{File, OpenOptions};
use std::path::Path;
use std::time::Duration;

use agentcompass_plugin_api::sdk::Ctx;
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

/// How often a waiting attempt tries the lock again.
const POLL: Duration = Duration::from_millis(200);

/// Why the lock was not taken.
#[derive(Debug)]
pub(super) enum LockError {
    /// The run was cancelled while waiting.
    Cancelled,
    /// The lock file could not be opened or locked.
    Io(std::io::Error),
}

/// A held entry lock (released on drop).
pub(super) struct EntryLock {
    _lock: Flock<File>,
}

impl EntryLock {
    /// Waits for the lock of `entry` (polling, so a cancelled run stops waiting).
    pub(super) async fn acquire(entry: &Path, ctx: &Ctx) -> Result<EntryLock, LockError> {
        let mut path = entry.as_os_str().to_owned();
        path.push(".lock");
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(LockError::Io)?;
        loop {
            file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(lock) => return Ok(EntryLock { _lock: lock }),
                Err((file, Errno::EWOULDBLOCK)) => file,
                Err((_, errno)) => return Err(LockError::Io(errno.into())),
            };
            if ctx.is_cancelled() {
                return Err(LockError::Cancelled);
            }
            tokio::time::sleep(POLL).await;
        }
    }
}
