//! Exactly-once publishing for work that may run twice (a cluster job requeued, a job the
//! scheduler believes dead that keeps running, a unit deliberately duplicated): each copy of
//! a task's work carries a fencing token, writes into its own staging directory
//! (`details/running/<task_dir_name>.<token>`), and before publishing *claims* the task by
//! creating `details/.claims/<task_dir_name>` holding its token. The claim is made with
//! `link(2)` of a complete temporary file, which fails with `EEXIST` if any copy claimed first —
//! atomic on local file systems and on NFS, and the claim is never seen half-written. The
//! winner renames its staging directory into `details/<state>/` (never replacing anything);
//! a loser removes its staging directory. A claim whose holder died before the rename is
//! found by [`claim_holder`] and settled by the coordinator (the only writer of tokens).

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::{create_dir_all, sync_dir, unique_suffix, StoreError};

/// The directory of claims under `details/`.
pub const CLAIMS_DIR: &str = ".claims";

/// Whether `token` can name a staging directory and a claim: 1–64 ASCII letters, digits,
/// `-` or `_`.
pub fn valid_token(token: &str) -> bool {
    !token.is_empty()
        && token.len() <= 64
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The outcome of a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// This token holds the task (now, or already from an earlier call with the same token).
    Won,
    /// Another copy claimed it first; its token.
    Lost {
        /// The holder's token.
        holder: String,
    },
}

/// Claims the task directory `name` under `details` for `token`.
pub fn claim(details: &Path, name: &str, token: &str) -> Result<Claim, StoreError> {
    let dir = details.join(CLAIMS_DIR);
    create_dir_all(&dir)?;
    let target = dir.join(name);
    let temp = dir.join(format!(".{name}.{}", unique_suffix()));
    let written = (|| {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        file.write_all(token.as_bytes())?;
        file.sync_all()
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&temp);
        return Err(StoreError::io("write claim", &temp, e));
    }
    let linked = fs::hard_link(&temp, &target);
    let _ = fs::remove_file(&temp);
    match linked {
        Ok(()) => {
            sync_dir(&dir)?;
            Ok(Claim::Won)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let holder = claim_holder(details, name)?.unwrap_or_default();
            if holder == token {
                Ok(Claim::Won)
            } else {
                Ok(Claim::Lost { holder })
            }
        }
        Err(e) => Err(StoreError::io("claim", &target, e)),
    }
}

/// The token holding the claim on `name`, if any.
pub fn claim_holder(details: &Path, name: &str) -> Result<Option<String>, StoreError> {
    let path = details.join(CLAIMS_DIR).join(name);
    match fs::read_to_string(&path) {
        Ok(token) => Ok(Some(token)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StoreError::io("read claim", &path, e)),
    }
}

/// Removes the claim on `name` (the coordinator, once the holder is known to be gone and its
/// work was not published), so the task can be claimed again.
pub fn release_claim(details: &Path, name: &str) -> Result<(), StoreError> {
    let path = details.join(CLAIMS_DIR).join(name);
    match fs::remove_file(&path) {
        Ok(()) => sync_dir(&details.join(CLAIMS_DIR)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StoreError::io("remove claim", &path, e)),
    }
}

/// How [`settle_claim`] found a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    /// Nobody claimed it.
    Unclaimed,
    /// A copy published it.
    Published,
    /// Its holder had claimed it without publishing; the holder's staging directory was moved
    /// out of reach (so a holder still running can never publish it) and the claim removed.
    Released {
        /// The token that held it.
        holder: String,
    },
}

/// Settles the claim on `name` whose holder is known to be gone (its job ended): if the task
/// is not published, the holder's staging directory is first renamed away — after that a
/// holder that is in fact still running fails its rename and cannot publish — then removed,
/// and the claim released so another copy can claim the task. Only the coordinator calls this.
pub fn settle_claim(details: &Path, running: &str, name: &str) -> Result<Settled, StoreError> {
    let published = || {
        super::TaskState::ALL
            .iter()
            .any(|state| fs::symlink_metadata(details.join(state.as_str()).join(name)).is_ok())
    };
    let Some(holder) = claim_holder(details, name)? else {
        return Ok(if published() {
            Settled::Published
        } else {
            Settled::Unclaimed
        });
    };
    if published() {
        return Ok(Settled::Published);
    }
    let staging = staging_dir(details, running, name, &holder);
    let aside = details.join(format!(".fenced.{name}.{}", unique_suffix()));
    match fs::rename(&staging, &aside) {
        Ok(()) => {
            if let Err(e) = fs::remove_dir_all(&aside) {
                return Err(StoreError::io("remove fenced copy", &aside, e));
            }
        }
        // The holder published in the meantime, or never staged anything.
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if published() {
                return Ok(Settled::Published);
            }
        }
        Err(e) => return Err(StoreError::io("fence", &staging, e)),
    }
    release_claim(details, name)?;
    Ok(Settled::Released { holder })
}

/// The staging directory of the copy `token` of the task directory `name`.
pub fn staging_dir(details: &Path, running: &str, name: &str, token: &str) -> PathBuf {
    details.join(running).join(format!("{name}.{token}"))
}
