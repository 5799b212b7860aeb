//! An isolated container's egress: the host's proxy (`agentcompass_egress`) on a Unix socket
//! in the session's private host directory, bound read-only into the container, and the
//! proxy variables its commands get. Switching the policy swaps the proxy: the new one is
//! bound beside the socket and renamed over it (new connections reach it from then on), then
//! the old one is shut down with every tunnel it had open, so nothing opened under one
//! policy survives into the next. A policy without egress (`no-network`) removes the socket:
//! the forwarder's port then relays to nothing.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use agentcompass_egress::{
    proxy_env, EgressConfig, EgressLog, EgressPolicy, EgressProxy, EgressToken, HostMap,
    ProxyHandle,
};
use agentcompass_plugin_api::{tracing, Error, Result};
use tokio::net::UnixListener;

use crate::engine::Engine;
use crate::forwarder::EGRESS_DIR;

/// Where the forwarder listens for the proxy in the container (`127.0.0.1`).
pub(crate) const PROXY_PORT: u16 = 3128;

/// The proxy's socket directory in the container (read-only).
pub(crate) const SOCKET_DIR: &str = "/.agentcompass-egress/proxy";

/// The socket's file name (short: a socket path has at most 107 bytes).
const SOCKET_NAME: &str = "s";

/// The name a new proxy is bound under before it replaces the socket.
const NEXT_NAME: &str = "s.next";

/// The host-side name prefix of the private directories (the provider removes only those).
pub(crate) const DIR_PREFIX: &str = "agentcompass-docker-";

/// One isolated session's egress: its private directory, token, host map and the proxy
/// serving now (if the current policy has egress).
pub(crate) struct Egress {
    /// The private host directory (0700): `proxy/s` lives in it.
    dir: PathBuf,
    engine: Engine,
    token: EgressToken,
    host_map: HostMap,
    session: String,
    proxy: Option<ProxyHandle>,
    /// Names reached directly, never through the proxy (a Compose project's services).
    local_names: Vec<String>,
}

impl Egress {
    /// Creates the private directory (`<temp>/agentcompass-docker-<suffix>/proxy`, 0700) of
    /// the session `session`; no proxy runs yet.
    pub(crate) fn create(
        engine: Engine,
        suffix: &str,
        host_map: HostMap,
        session: &str,
    ) -> Result<Egress> {
        let dir = std::env::temp_dir().join(format!("{DIR_PREFIX}{suffix}"));
        let failed = |what: &str, e: &dyn std::fmt::Display| {
            Error::environment(format!("environment `{engine}`: {what}: {e}"))
        };
        let token =
            EgressToken::random().map_err(|e| failed("cannot make the egress token", &e))?;
        for d in [dir.clone(), dir.join("proxy")] {
            fs::create_dir(&d)
                .and_then(|()| fs::set_permissions(&d, fs::Permissions::from_mode(0o700)))
                .map_err(|e| {
                    failed(
                        &format!("cannot create the egress directory `{}`", d.display()),
                        &e,
                    )
                })?;
        }
        Ok(Egress {
            dir,
            engine,
            token,
            host_map,
            session: session.to_string(),
            proxy: None,
            local_names: Vec::new(),
        })
    }

    /// The private host directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The read-only bind of the socket directory into the container.
    pub(crate) fn bind(&self) -> String {
        crate::forwarder::ro_bind(&self.dir.join("proxy"), Path::new(SOCKET_DIR))
    }

    /// The proxy socket as the container sees it.
    pub(crate) fn container_socket() -> PathBuf {
        Path::new(SOCKET_DIR).join(SOCKET_NAME)
    }

    /// The token (for the host's secret registry).
    pub(crate) fn token(&self) -> &str {
        self.token.expose()
    }

    /// Names that commands reach directly, not through the proxy: a Compose project's
    /// services, on the project's network (added to `NO_PROXY`).
    pub(crate) fn reach_directly(&mut self, names: Vec<String>) {
        self.local_names = names;
    }

    /// The proxy variables of a command (values hold the token).
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        let url = format!(
            "http://agent:{}@127.0.0.1:{PROXY_PORT}",
            self.token.expose()
        );
        let mut env = proxy_env(&url);
        if !self.local_names.is_empty() {
            for (key, value) in &mut env {
                if key.eq_ignore_ascii_case("no_proxy") {
                    value.push(',');
                    value.push_str(&self.local_names.join(","));
                }
            }
        }
        env
    }

    /// The engine of the session the directory belongs to.
    pub(crate) fn engine(&self) -> Engine {
        self.engine
    }

    /// Whether a proxy is serving now.
    pub(crate) fn serving(&self) -> bool {
        self.proxy.is_some()
    }

    /// Serves `policy` from now on (`None`: no proxy): the new proxy replaces the socket,
    /// then the old one is shut down with its tunnels. Runs on the provider runtime. On an
    /// error the current proxy is left as it was.
    pub(crate) async fn switch(&mut self, policy: Option<EgressPolicy>) -> Result<()> {
        let socket = self.dir.join("proxy").join(SOCKET_NAME);
        let failed = |what: &str, e: &dyn std::fmt::Display| {
            Error::environment(format!("environment `{}`: {what}: {e}", self.engine))
        };
        let next = match policy {
            Some(policy) => {
                let staged = self.dir.join("proxy").join(NEXT_NAME);
                let _ = fs::remove_file(&staged);
                let listener = UnixListener::bind(&staged).map_err(|e| {
                    failed(
                        &format!("cannot bind the egress socket `{}`", staged.display()),
                        &e,
                    )
                })?;
                let (label, provider) = (self.session.clone(), self.engine.id());
                let log = EgressLog::new(move |event| {
                    if event.is_refusal() {
                        tracing::warn!(provider, session = %label, "{event}");
                    } else {
                        tracing::debug!(provider, session = %label, "{event}");
                    }
                });
                let config = EgressConfig::new(policy, self.token.clone())
                    .with_host_map(self.host_map.clone())
                    .with_log(log);
                let proxy = EgressProxy::serve(listener, config)
                    .map_err(|e| failed("cannot start the egress proxy", &e))?;
                fs::rename(&staged, &socket).map_err(|e| {
                    let _ = fs::remove_file(&staged);
                    failed("cannot install the egress socket", &e)
                })?;
                Some(proxy)
            }
            None => {
                match fs::remove_file(&socket) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(failed("cannot remove the egress socket", &e)),
                }
                None
            }
        };
        if let Some(old) = std::mem::replace(&mut self.proxy, next) {
            old.shutdown().await;
        }
        Ok(())
    }

    /// Stops the proxy (its listener and tunnels closed when this returns) and removes the
    /// private directory.
    pub(crate) async fn stop(&mut self) -> Result<()> {
        if let Some(old) = self.proxy.take() {
            old.shutdown().await;
        }
        remove_dir(self.engine, &self.dir)
    }
}

/// Removes a private directory of this provider (a missing one is fine).
pub(crate) fn remove_dir(engine: Engine, dir: &Path) -> Result<()> {
    let owned = dir
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with(DIR_PREFIX));
    if !owned || !dir.is_absolute() {
        return Err(Error::invalid_input(format!(
            "environment `{engine}`: refusing to remove `{}`: not a directory this provider creates",
            dir.display()
        )));
    }
    match fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::environment(format!(
            "environment `{engine}`: cannot remove `{}`: {e}",
            dir.display()
        ))),
    }
}

/// The container path of the `index`th host endpoint's socket directory.
pub(crate) fn endpoint_dir(index: usize) -> PathBuf {
    Path::new(EGRESS_DIR).join(format!("endpoint-{index}"))
}
