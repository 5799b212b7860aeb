//! The control socket: a Unix socket in a private directory (0700, the socket itself 0600),
//! so only its owner can connect; each connection's peer is checked again (`SO_PEERCRED`:
//! same uid) before its one request line is read. Removed with the process's control.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Weak;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

use super::protocol::{ControlAnswer, ControlRequest, SOCKET_NAME};
use super::RunControl;

/// The longest request line read.
const MAX_REQUEST_BYTES: u64 = 64 * 1024;

/// A listening control socket; dropping it stops the server and removes the socket.
pub(super) struct ControlSocket {
    dir: tempfile::TempDir,
    server: tokio::task::JoinHandle<()>,
}

impl ControlSocket {
    /// Binds the socket and serves `control` on it.
    pub(super) fn bind(control: Weak<RunControl>) -> std::io::Result<ControlSocket> {
        let dir = tempfile::Builder::new()
            .prefix("agentcompass-ctl-")
            .tempdir()?;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))?;
        let path = dir.path().join(SOCKET_NAME);
        let listener = UnixListener::bind(&path)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        let owner = nix::unistd::geteuid().as_raw();
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
