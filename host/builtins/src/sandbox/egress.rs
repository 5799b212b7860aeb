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
    EgressConfig, EgressLog, EgressPolicy, EgressProxy, EgressToken, HostMap, ProxyHandle,
};
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

/// The socket's file name (short: a socket path has at most 107 bytes).
const SOCKET_NAME: &str = "s";

/// Where the forwarder listens in every command's network namespace (`127.0.0.1`).
pub(super) const PROXY_PORT: u16 = 3128;

/// Proxy variables, set in upper and lower case (curl reads only `http_proxy` in lower case).
const PROXY_VARS: [&str; 3] = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"];

/// What never goes through the proxy: the namespace's own loopback (only the forwarder and
/// what the command itself serves there; the proxy's `localhost` would be the host's).
pub(super) const NO_PROXY: &str = "localhost,127.0.0.1,::1";

/// One session's running proxy and what its commands need to reach it.
pub(super) struct Egress {
    proxy: Mutex<Option<ProxyHandle>>,
    /// Host directory of the socket.
    socket_dir: PathBuf,
    /// The forwarder binary on the host.
    forwarder: PathBuf,
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
        let forwarder = std::env::current_exe()
            .and_then(fs::canonicalize)
            .map_err(|e| failed("cannot find the host binary (the egress forwarder)", &e))?;
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
        let mut env = Vec::new();
        for name in PROXY_VARS {
            env.push((name.to_string(), url.clone()));
            env.push((name.to_ascii_lowercase(), url.clone()));
        }
        env.push(("NO_PROXY".to_string(), NO_PROXY.to_string()));
        env.push(("no_proxy".to_string(), NO_PROXY.to_string()));
        Ok(Egress {
            proxy: Mutex::new(Some(proxy)),
            socket_dir,
            forwarder,
            env,
            token: secret,
        })
    }

    /// The bwrap arguments that bind the socket directory and the forwarder into the sandbox
    /// (on its tmpfs root, before it is remounted read-only).
    pub(super) fn bwrap_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["--dir".into(), EGRESS_DIR.into()];
        args.extend([
            "--ro-bind".into(),
            self.socket_dir.clone().into_os_string(),
            SOCKET_DIR.into(),
            "--ro-bind".into(),
            self.forwarder.clone().into_os_string(),
            FORWARDER.into(),
        ]);
        args
    }

    /// Adds the forwarder in front of the command (after bwrap's `--`).
    pub(super) fn wrap(&self, cmd: &mut Command) {
        let proxy = Forward {
            port: PROXY_PORT,
            socket: PathBuf::from(format!("{SOCKET_DIR}/{SOCKET_NAME}")),
        };
        cmd.arg(FORWARDER).args(forward::command_args(&[proxy]));
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
