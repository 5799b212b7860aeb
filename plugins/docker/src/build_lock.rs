//! One build of a context (or one pull of an image) at a time on a machine: every process of
//! the user that would build the same context or pull the same image (the tasks of one run,
//! the Slurm jobs on one node) takes the same file lock first, and checks for the image again
//! once it holds it — so an image is built or pulled once per machine (per node), and the
//! others find it.
//!
//! The lock file is `<cache>/agentcompass-host/locks/image-<engine>-<host name>-<sha256
//! prefix>.lock`
//! (`<cache>`: `$XDG_CACHE_HOME`, else `~/.cache`; the sha256 of the build context's archive,
//! or of the image's name): the user's own directory, one empty file per image, and the host
//! name keeps nodes that share a home directory from waiting on each other. Without a home
//! the work goes ahead unlocked (best effort: a duplicate build wastes time, nothing else).

use std::fs::File;
use std::path::{Path, PathBuf};

use agentcompass_plugin_api::tracing;

use crate::engine::Engine;
use nix::fcntl::{Flock, FlockArg};

/// A held build lock (released when dropped).
pub(crate) struct BuildLock {
    _file: Flock<File>,
}

/// Takes the lock of the image whose key (a context archive's or an image name's sha256) is
/// `sha`, blocking until it is free; `None` when no lock file can be used.
pub(crate) fn lock(engine: Engine, sha: &str) -> Option<BuildLock> {
    lock_in(&lock_dir()?, engine, sha)
}

/// [`lock`] with the lock files in `dir`.
fn lock_in(dir: &Path, engine: Engine, sha: &str) -> Option<BuildLock> {
    if let Err(e) = std::fs::create_dir_all(dir) {
        tracing::debug!(dir = %dir.display(), "no build lock: {e}");
        return None;
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    let host: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let prefix = sha.get(..16).unwrap_or(sha);
    let path = dir.join(format!("image-{engine}-{host}-{prefix}.lock"));
    let file = match std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
    {
        Ok(file) => file,
        Err(e) => {
            tracing::debug!(path = %path.display(), "no build lock: {e}");
            return None;
        }
    };
    match Flock::lock(file, FlockArg::LockExclusive) {
        Ok(file) => Some(BuildLock { _file: file }),
        Err((_, e)) => {
            tracing::debug!(path = %path.display(), "no build lock: {e}");
            None
        }
    }
}

fn lock_dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let cache = var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(cache.join("agentcompass-host").join("locks"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn holders_of_one_context_take_turns_and_other_contexts_do_not_wait() {
        let dir = tempfile::tempdir().unwrap();
        let sha = format!(
            "{:016x}{}",
            u64::from(std::process::id()) * 2,
            "0".repeat(48)
        );
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (sha, inside, most) = (sha.clone(), inside.clone(), most.clone());
                let dir = dir.path().to_path_buf();
                std::thread::spawn(move || {
                    let _held = lock_in(&dir, Engine::Podman, &sha).expect("a lock file");
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(30));
                    inside.fetch_sub(1, Ordering::SeqCst);
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 1);
        // Another context's lock is free while this one is held.
        let _held = lock_in(dir.path(), Engine::Podman, &sha).unwrap();
        let other = format!(
            "{:016x}{}",
            u64::from(std::process::id()) * 2 + 1,
            "0".repeat(48)
        );
        assert!(lock_in(dir.path(), Engine::Podman, &other).is_some());
        // Nor is the same context's for another engine.
        assert!(lock_in(dir.path(), Engine::Docker, &sha).is_some());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
    }
}
