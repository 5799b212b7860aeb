//! What a session runs for its container's network: on a shared network, the forwarder of
//! its host endpoints (only when that network is not the host's); on `none`, the egress
//! proxy of the current policy, the forwarder serving the proxy's port and the endpoints,
//! and the current policy itself.

use std::path::Path;
use std::sync::Arc;

use crate::engine::{remove_container, Daemon};
use agentcompass_egress::forward::Forward;
use agentcompass_plugin_api::contracts::{HostEndpoint, NetworkPolicy};
use agentcompass_plugin_api::{tracing, Error, Result};
use tokio::sync::Mutex;

use crate::egress::{endpoint_dir, Egress, PROXY_PORT};
use crate::engine::Engine;
use crate::forwarder::{self, ro_bind, Bundle, Running};
use crate::network::{egress_of, Attachment};

/// A session's network, fixed by its baseline when the container started.
pub(crate) enum SessionNetwork {
    /// The `network` parameter: `public` only.
    Shared {
        /// The endpoints' forwarder (held for its output task), if the network is not the
        /// host's.
        _forwarder: Option<Running>,
    },
    /// `none`: switched among the non-public policies by the session's proxy.
    Isolated {
        /// The proxy, forwarder and current policy.
        state: Arc<Mutex<Isolation>>,
        /// The private host directory (for crash cleanup).
        dir: std::path::PathBuf,
    },
}

/// The state of an isolated session.
pub(crate) struct Isolation {
    baseline: NetworkPolicy,
    current: NetworkPolicy,
    egress: Egress,
    bundle: Arc<Bundle>,
    /// The proxy's port and the host endpoints.
    forwards: Vec<Forward>,
    forwarder: Option<Running>,
}

/// The container side of host endpoints: read-only binds of their socket directories and
/// their forwards.
pub(crate) fn endpoint_mounts(
    engine: Engine,
    endpoints: &[HostEndpoint],
) -> Result<(Vec<String>, Vec<Forward>)> {
    let mut binds = Vec::new();
    let mut forwards = Vec::new();
    for (index, endpoint) in endpoints.iter().enumerate() {
        let socket = Path::new(&endpoint.socket);
        let (Some(dir), Some(name)) = (socket.parent(), socket.file_name()) else {
            return Err(Error::invalid_input(format!(
                "environment `{engine}`: host endpoint `{}`: `{}` is not a socket path",
                endpoint.name, endpoint.socket
            )));
        };
        if !socket.is_absolute() || endpoint.port == 0 || endpoint.port == PROXY_PORT {
            return Err(Error::invalid_input(format!(
                "environment `{engine}`: host endpoint `{}` needs an absolute socket path and a \
                 port other than 0 and {PROXY_PORT} (got `{}`, {})",
                endpoint.name, endpoint.socket, endpoint.port
            )));
        }
        let inside = endpoint_dir(index);
        binds.push(ro_bind(dir, &inside));
        forwards.push(forwarder::forward(endpoint.port, inside.join(name)));
    }
    Ok((binds, forwards))
}

impl Isolation {
    /// The state of a container just started on `none`: nothing runs yet.
    pub(crate) fn new(
        baseline: NetworkPolicy,
        egress: Egress,
        bundle: Arc<Bundle>,
        endpoints: Vec<Forward>,
    ) -> Isolation {
        let mut forwards = vec![forwarder::forward(PROXY_PORT, Egress::container_socket())];
        forwards.extend(endpoints);
        Isolation {
            current: baseline.clone(),
            baseline,
            egress,
            bundle,
            forwards,
            forwarder: None,
        }
    }

    /// Starts what the baseline needs: the forwarder when there are endpoints or the
    /// baseline has egress, the baseline's proxy. Runs on the provider runtime.
    pub(crate) async fn start(&mut self, docker: &Daemon, container: &str) -> Result<()> {
        if self.forwards.len() > 1 {
            self.ensure_forwarder(docker, container).await?;
        }
        let baseline = self.baseline.clone();
        self.apply(docker, container, baseline).await
    }

    async fn ensure_forwarder(&mut self, docker: &Daemon, container: &str) -> Result<()> {
        if self.forwarder.is_none() {
            self.forwarder =
                Some(forwarder::start(docker, container, &self.bundle, &self.forwards).await?);
        }
        Ok(())
    }

    /// Makes the normalised non-public `policy` current: its proxy replaces the previous
    /// one (whose tunnels are closed), or no proxy for `no-network`; the forwarder is
    /// started on first need. The current policy again changes nothing (its tunnels are
    /// already within it). On an error the current policy stays. Runs on the provider
    /// runtime.
    pub(crate) async fn apply(
        &mut self,
        docker: &Daemon,
        container: &str,
        policy: NetworkPolicy,
    ) -> Result<()> {
        if !Attachment::Isolated.admits(&policy) {
            return Err(Attachment::refusal(
                docker.engine,
                &self.baseline,
                "requested network policy",
                &policy,
            ));
        }
        if policy == self.current
            && (self.egress.serving() || egress_of(docker.engine, &policy)?.is_none())
        {
            return Ok(());
        }
        let egress_policy = egress_of(docker.engine, &policy)?;
        if egress_policy.is_some() {
            self.ensure_forwarder(docker, container).await?;
        }
        self.egress.switch(egress_policy).await?;
        self.current = policy;
        Ok(())
    }

    /// The proxy variables of a command started now (none without a proxy).
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        match egress_of(self.egress.engine(), &self.current) {
            Ok(Some(_)) => self.egress.env(),
            _ => Vec::new(),
        }
    }

    /// Stops the proxy and the forwarder's output task and removes the private directory.
    pub(crate) async fn stop(&mut self) -> Result<()> {
        self.forwarder = None;
        self.egress.stop().await
    }
}

/// Starts what the session's network needs (module `isolation`): the proxy and forwarder of
/// an isolated container, the endpoints' forwarder of a shared one. On failure the
/// container is removed (and the proxy stopped).
pub(crate) async fn start_network(
    docker: &Daemon,
    name: &str,
    baseline: NetworkPolicy,
    egress: Option<Egress>,
    bundle: Option<Arc<Bundle>>,
    endpoints: Vec<agentcompass_egress::forward::Forward>,
) -> Result<SessionNetwork> {
    let network = match (egress, bundle) {
        (Some(egress), Some(bundle)) => {
            let dir = egress.dir().to_path_buf();
            let state = Arc::new(tokio::sync::Mutex::new(Isolation::new(
                baseline, egress, bundle, endpoints,
            )));
            let started = crate::rt::spawn({
                let (state, docker, name) = (state.clone(), docker.clone(), name.to_string());
                async move { state.lock().await.start(&docker, &name).await }
            })
            .await
            .and_then(|r| r);
            if let Err(e) = started {
                let (docker, name) = (docker.clone(), name.to_string());
                crate::rt::spawn(async move {
                    if let Err(cleanup) = remove_container(&docker, &name).await {
                        tracing::warn!(container = %name, "cleanup failed: {cleanup}");
                    }
                    if let Err(cleanup) = state.lock().await.stop().await {
                        tracing::warn!(container = %name, "cleanup failed: {cleanup}");
                    }
                })
                .await?;
                return Err(e);
            }
            SessionNetwork::Isolated { state, dir }
        }
        (None, Some(bundle)) => {
            let started = crate::rt::spawn({
                let (docker, name) = (docker.clone(), name.to_string());
                async move { forwarder::start(&docker, &name, &bundle, &endpoints).await }
            })
            .await
            .and_then(|r| r);
            match started {
                Ok(running) => SessionNetwork::Shared {
                    _forwarder: Some(running),
                },
                Err(e) => {
                    let (docker, name) = (docker.clone(), name.to_string());
                    crate::rt::spawn(async move { remove_container(&docker, &name).await })
                        .await??;
                    return Err(e);
                }
            }
        }
        _ => SessionNetwork::Shared { _forwarder: None },
    };
    Ok(network)
}

/// Stops an isolated session's proxy (its container is already gone).
pub(crate) async fn stop_network(network: &SessionNetwork) {
    if let SessionNetwork::Isolated { state, .. } = network {
        let state = state.clone();
        let stopped = crate::rt::spawn(async move { state.lock().await.stop().await }).await;
        if let Err(e) = stopped.and_then(|r| r) {
            tracing::warn!("cleanup failed: {e}");
        }
    }
}
