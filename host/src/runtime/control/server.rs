//! The control socket: a Unix socket in a private directory (0700, the socket itself 0600),
//! so only its owner can connect; each connection's peer is checked again (`SO_PEERCRED`:
//! same uid) before its one request line is read. Removed with the process's control; the
//! directories of processes that were killed (SIGKILL leaves them) are swept by the next
//! process that opens one: a socket nobody listens on any more is stale.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Weak;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

use super::protocol::{ControlAnswer, ControlRequest, SOCKET_NAME};
use super::RunControl;

/// The longest request line read.
const MAX_REQUEST_BYTES: u64 = 64 * 1024;

/// The prefix of a control socket's directory in the temp dir.
const DIR_PREFIX: &str = "agentcompass-ctl-";

/// A listening control socket; dropping it stops the server and removes the socket.
pub(super) struct ControlSocket {
    dir: tempfile::TempDir,
    server: tokio::task::JoinHandle<()>,
}

impl ControlSocket {
    /// Binds the socket and serves `control` on it.
    pub(super) fn bind(control: Weak<RunControl>) -> std::io::Result<ControlSocket> {
        let owner = nix::unistd::geteuid().as_raw();
        sweep_stale(&std::env::temp_dir(), owner);
        let dir = tempfile::Builder::new().prefix(DIR_PREFIX).tempdir()?;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))?;
        let path = dir.path().join(SOCKET_NAME);
        let listener = UnixListener::bind(&path)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        let server = tokio::spawn(serve(listener, control, owner));
        Ok(ControlSocket { dir, server })
    }

    /// The socket's path.
    pub(super) fn path(&self) -> PathBuf {
        self.dir.path().join(SOCKET_NAME)
    }
}

impl Drop for ControlSocket {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Removes the control directories under `temp` that `owner` left behind (their socket
/// refuses connections, or they never got one and are older than the grace period).
fn sweep_stale(temp: &std::path::Path, owner: u32) {
    agentcompass_gateway::socket_dirs::sweep_stale(temp, DIR_PREFIX, SOCKET_NAME, owner);
}

async fn serve(listener: UnixListener, control: Weak<RunControl>, owner: u32) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            continue;
        };
        let control = control.clone();
        tokio::spawn(async move {
            if let Err(e) = connection(stream, control, owner).await {
                tracing::debug!("control connection: {e}");
            }
        });
    }
}

/// One connection: the peer checked, one request line read, one answer line written.
async fn connection(
    stream: UnixStream,
    control: Weak<RunControl>,
    owner: u32,
) -> std::io::Result<()> {
    let peer = stream.peer_cred()?;
    let (read, mut write) = stream.into_split();
    let answer = if peer.uid() != owner {
        tracing::warn!(
            "control: refused a connection from uid {} (the run belongs to uid {owner})",
            peer.uid()
        );
        ControlAnswer::refused(format!(
            "permission denied: this run belongs to uid {owner}, not {}",
            peer.uid()
        ))
    } else {
        let mut line = String::new();
        let mut reader = BufReader::new(read.take(MAX_REQUEST_BYTES));
        reader.read_line(&mut line).await?;
        match (
            serde_json::from_str::<ControlRequest>(&line),
            control.upgrade(),
        ) {
            (Ok(request), Some(control)) => control.handle(request, peer.uid(), peer.pid()),
            (Err(e), _) => ControlAnswer::refused(format!("bad control request: {e}")),
            (_, None) => ControlAnswer::refused("the run is ending"),
        }
    };
    let mut bytes = serde_json::to_vec(&answer).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    write.write_all(&bytes).await?;
    write.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dead_control_sockets_are_swept_and_live_ones_kept() {
        let temp = tempfile::tempdir().unwrap();
        let owner = nix::unistd::geteuid().as_raw();
        // A socket whose listener is gone (a killed run), one still listening, and a
        // fresh directory that has no socket yet.
        let dead = temp.path().join(format!("{DIR_PREFIX}dead"));
        std::fs::create_dir(&dead).unwrap();
        drop(std::os::unix::net::UnixListener::bind(dead.join(SOCKET_NAME)).unwrap());
        let live = temp.path().join(format!("{DIR_PREFIX}live"));
        std::fs::create_dir(&live).unwrap();
        let _listening = std::os::unix::net::UnixListener::bind(live.join(SOCKET_NAME)).unwrap();
        let fresh = temp.path().join(format!("{DIR_PREFIX}fresh"));
        std::fs::create_dir(&fresh).unwrap();
        let other = temp.path().join("something-else");
        std::fs::create_dir(&other).unwrap();
        sweep_stale(temp.path(), owner);
        assert!(!dead.exists());
        assert!(live.exists() && fresh.exists() && other.exists());
        // Another user's directories are never touched.
        let dead_again = temp.path().join(format!("{DIR_PREFIX}dead-again"));
        std::fs::create_dir(&dead_again).unwrap();
        drop(std::os::unix::net::UnixListener::bind(dead_again.join(SOCKET_NAME)).unwrap());
        sweep_stale(temp.path(), owner + 1);
        assert!(dead_again.exists());
    }
}
