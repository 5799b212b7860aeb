//! An `allowlist` session's egress: the host's proxy on a Unix socket in the session's
//! private directory, and what each command's sandbox gets to reach it (the socket's
//! directory and the forwarder bound in, the forwarder before the command, the proxy
//! variables).

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use agentcompass_egress::{
    proxy_env, EgressConfig, EgressLog, EgressPolicy, EgressProxy, EgressToken, HostMap,
    ProxyHandle,
};
use agentcompass_plugin_api::contracts::HostEndpoint;
use agentcompass_plugin_api::{Error, Result};
use tokio::net::UnixListener;
use tokio::process::Command;

use super::ID;
use agentcompass_egress::forward::{self, Forward};

/// The sandbox directory holding the proxy's socket directory and the forwarder.
pub(super) const EGRESS_DIR: &str = "/.agentcompass-egress";

/// The proxy's socket directory in the sandbox (read-only).
const SOCKET_DIR: &str = "/.agentcompass-egress/proxy";

/// The forwarder (the host binary, read-only) in the sandbox.
const FORWARDER: &str = "/.agentcompass-egress/forward";

/// Where the directory of host endpoint `N` (its Unix socket) is bound in the sandbox.
const ENDPOINT_DIR: &str = "/.agentcompass-egress/host";

/// The socket's file name (short: a socket path has at most 107 bytes).
const SOCKET_NAME: &str = "s";

/// Where the forwarder listens in every command's network namespace (`127.0.0.1`).
pub(super) const PROXY_PORT: u16 = 3128;

/// One session's running proxy and what its commands need to reach it.
pub(super) struct Egress {
    proxy: Mutex<Option<ProxyHandle>>,
    /// Host directory of the socket.
    socket_dir: PathBuf,
    /// `(name, value)` of the proxy variables; the values hold the token.
    env: Vec<(String, String)>,
    /// The proxy's token (for the host's secret registry).
    token: String,
}

impl Egress {
    /// Starts the proxy of `egress_policy` with the static names `host_map` on
    /// `<dir>/<name>/s` (a new 0700 directory), logging its decisions for `session`. Must run
    /// inside a tokio runtime.
    pub(super) fn start(
        dir: &Path,
        name: &str,
        egress_policy: EgressPolicy,
        host_map: HostMap,
        session: &str,
    ) -> Result<Egress> {
        let failed = |what: &str, e: &dyn std::fmt::Display| {
            Error::environment(format!("environment `{ID}`: {what}: {e}"))
        };
        let socket_dir = dir.join(name);
        fs::create_dir(&socket_dir)
            .and_then(|()| fs::set_permissions(&socket_dir, fs::Permissions::from_mode(0o700)))
            .map_err(|e| failed("cannot create the egress socket directory", &e))?;
        let socket = socket_dir.join(SOCKET_NAME);
        let listener = UnixListener::bind(&socket).map_err(|e| {
            failed(
                &format!(
                    "cannot bind the egress proxy's socket `{}`",
                    socket.display()
                ),
                &e,
            )
        })?;
        let token =
            EgressToken::random().map_err(|e| failed("cannot make the egress token", &e))?;
        let url = format!("http://agent:{}@127.0.0.1:{PROXY_PORT}", token.expose());
        let secret = token.expose().to_string();
        let label = session.to_string();
        let log = EgressLog::new(move |event| {
            if event.is_refusal() {
                tracing::warn!(provider = ID, session = %label, "{event}");
            } else {
                tracing::debug!(provider = ID, session = %label, "{event}");
            }
        });
        let config = EgressConfig::new(egress_policy, token)
            .with_host_map(host_map)
            .with_log(log);
        let proxy = EgressProxy::serve(listener, config)
            .map_err(|e| failed("cannot start the egress proxy", &e))?;
        let env = proxy_env(&url);
        Ok(Egress {
            proxy: Mutex::new(Some(proxy)),
            socket_dir,
            env,
            token: secret,
        })
    }

    /// The proxy's socket directory as the sandbox sees it, and the port forwarded to it.
    pub(super) fn mount(&self) -> SocketMount {
        SocketMount {
            host_dir: self.socket_dir.clone(),
            sandbox_dir: PathBuf::from(SOCKET_DIR),
            forward: Forward {
                port: PROXY_PORT,
                socket: PathBuf::from(format!("{SOCKET_DIR}/{SOCKET_NAME}")),
            },
        }
    }

    /// The proxy's token.
    pub(super) fn token(&self) -> &str {
        &self.token
    }

    /// The proxy variables (values hold the token).
    pub(super) fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// Stops the proxy: its listener and every open tunnel are closed when this returns.
    pub(super) async fn stop(&self) {
        let proxy = self
            .proxy
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(proxy) = proxy {
            proxy.shutdown().await;
        }
    }
}

/// A host directory holding a Unix socket, bound read-only into an isolated command's
/// sandbox, and the loopback port the forwarder serves from it.
#[derive(Debug, Clone)]
pub(super) struct SocketMount {
    host_dir: PathBuf,
    sandbox_dir: PathBuf,
    forward: Forward,
}

/// The mounts of the open request's host endpoints (the model endpoint): each socket's
/// directory at `/.agentcompass-egress/host-N`, forwarded from `127.0.0.1:PORT`.
pub(super) fn endpoint_mounts(endpoints: &[HostEndpoint]) -> Result<Vec<SocketMount>> {
    endpoints
        .iter()
        .enumerate()
        .map(|(n, endpoint)| {
            let socket = Path::new(&endpoint.socket);
            let (Some(host_dir), Some(name)) = (socket.parent(), socket.file_name()) else {
                return Err(Error::invalid_input(format!(
                    "environment `{ID}`: host endpoint `{}`: `{}` is not a socket path",
                    endpoint.name, endpoint.socket
                )));
            };
            if endpoint.port == 0 || endpoint.port == PROXY_PORT {
                return Err(Error::invalid_input(format!(
                    "environment `{ID}`: host endpoint `{}`: port {} is not available",
                    endpoint.name, endpoint.port
                )));
            }
            let sandbox_dir = PathBuf::from(format!("{ENDPOINT_DIR}-{n}"));
            Ok(SocketMount {
                host_dir: host_dir.to_path_buf(),
                forward: Forward {
                    port: endpoint.port,
                    socket: sandbox_dir.join(name),
                },
                sandbox_dir,
            })
        })
        .collect()
}

/// The host binary, which serves as the forwarder inside the sandbox.
pub(super) fn forwarder_binary() -> Result<PathBuf> {
    std::env::current_exe()
        .and_then(fs::canonicalize)
        .map_err(|e| {
            Error::environment(format!(
                "environment `{ID}`: cannot find the host binary (the egress forwarder): {e}"
            ))
        })
}

/// What an isolated command needs to reach host sockets: their directories and the
/// forwarder bound in, and the forwarder in front of the command.
pub(super) struct Forwarding<'a> {
    forwarder: &'a Path,
    mounts: Vec<SocketMount>,
}

impl<'a> Forwarding<'a> {
    /// Forwarding of `mounts` by `forwarder` (`None` when there is nothing to forward).
    pub(super) fn new(forwarder: &'a Path, mounts: Vec<SocketMount>) -> Option<Forwarding<'a>> {
        (!mounts.is_empty()).then_some(Forwarding { forwarder, mounts })
    }

    /// The bwrap arguments that bind the socket directories and the forwarder into the
    /// sandbox (on its tmpfs root, before it is remounted read-only).
    pub(super) fn bwrap_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["--dir".into(), EGRESS_DIR.into()];
        for mount in &self.mounts {
            args.extend([
                "--ro-bind".into(),
                mount.host_dir.clone().into_os_string(),
                mount.sandbox_dir.clone().into_os_string(),
            ]);
        }
        args.extend([
            "--ro-bind".into(),
            self.forwarder.as_os_str().to_owned(),
            FORWARDER.into(),
        ]);
        args
    }

    /// Adds the forwarder in front of the command (after bwrap's `--`).
    pub(super) fn wrap(&self, cmd: &mut Command) {
        let forwards: Vec<Forward> = self.mounts.iter().map(|m| m.forward.clone()).collect();
        cmd.arg(FORWARDER).args(forward::command_args(&forwards));
    }
}
