//! Private socket directories in the temp dir (`<prefix>XXXXXX/<socket>`, 0700) that a
//! process removes when it drops them — and that a SIGKILLed process leaves behind. Whoever
//! opens the next one sweeps them: a directory whose socket refuses connections belongs to a
//! process that is gone; one with no socket yet is abandoned once older than a grace period
//! (its process creates the directory and binds the socket at once). Used by the model relays
//! (`agentcompass-model-`) and the host's control socket (`agentcompass-ctl-`).

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

/// How old a socket directory without its socket must be before it counts as abandoned.
pub const UNBOUND_GRACE: Duration = Duration::from_secs(60);

/// Removes the directories named `prefix…` under `temp` that `owner` left behind (see the
/// module doc). Best effort: anything unexpected is left alone.
pub fn sweep_stale(temp: &Path, prefix: &str, socket: &str, owner: u32) {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(prefix) {
            continue;
        }
        let dir = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&dir) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != owner {
            continue;
        }
        let stale = match std::os::unix::net::UnixStream::connect(dir.join(socket)) {
            Ok(_) => false,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => meta
                .modified()
                .ok()
                .and_then(|at| at.elapsed().ok())
                .is_some_and(|age| age > UNBOUND_GRACE),
            Err(_) => false,
        };
        if stale {
            match std::fs::remove_dir_all(&dir) {
                Ok(()) => tracing::debug!("removed the stale socket directory {}", dir.display()),
                Err(e) => tracing::debug!("cannot remove {}: {e}", dir.display()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dead_sockets_are_swept_and_live_ones_fresh_ones_and_others_kept() {
        let temp = tempfile::tempdir().unwrap();
        let owner = std::fs::metadata(temp.path()).unwrap().uid();
        let dir = |name: &str| {
            let dir = temp.path().join(name);
            std::fs::create_dir(&dir).unwrap();
            dir
        };
        // A socket whose listener is gone (a killed process), one still listening, a fresh
        // directory with no socket yet, and a directory of another prefix.
        let dead = dir("p-dead");
        drop(std::os::unix::net::UnixListener::bind(dead.join("s")).unwrap());
        let live = dir("p-live");
        let _listening = std::os::unix::net::UnixListener::bind(live.join("s")).unwrap();
        let fresh = dir("p-fresh");
        let other = dir("q-dead");
        drop(std::os::unix::net::UnixListener::bind(other.join("s")).unwrap());
        sweep_stale(temp.path(), "p-", "s", owner);
        assert!(!dead.exists());
        assert!(live.exists() && fresh.exists() && other.exists());
        // Another user's directories are never touched.
        let dead_again = dir("p-dead-again");
        drop(std::os::unix::net::UnixListener::bind(dead_again.join("s")).unwrap());
        sweep_stale(temp.path(), "p-", "s", owner + 1);
        assert!(dead_again.exists());
    }
}
