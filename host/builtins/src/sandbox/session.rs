//! One open sandbox: commands through bwrap, files through the host paths of its layout.

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use agentcompass_egress::HostMap;
use agentcompass_plugin_api::contracts::NetworkPolicy;
use agentcompass_plugin_api::sdk::provider::blocking;
use agentcompass_plugin_api::sdk::Ctx;
use agentcompass_plugin_api::{Error, Result};

use super::egress::{Egress, SocketMount};
use super::layout::Layout;
use super::ID;
use crate::files::existing;
use crate::process::Detached;

mod command;
mod failures;
mod network;
mod operations;

pub(super) use failures::{cover_failed, setup_failure};
pub(super) use network::Network;

/// `HOME` inside the sandbox unless a binding sets it.
pub(super) const DEFAULT_HOME: &str = "/tmp";

/// One open sandbox. Deliberately not `Debug`: it holds resolved secrets.
pub(super) struct SandboxSession {
    pub(super) id: String,
    /// The private host directory holding the writable mounts.
    pub(super) dir: PathBuf,
    pub(super) layout: Arc<Layout>,
    pub(super) env: BTreeMap<String, String>,
    /// Detached commands, killed on close (or when the session is dropped).
    pub(super) detached: Detached,
    pub(super) closed: AtomicBool,
    /// The current network policy (the baseline at open), for commands started from now on.
    pub(super) network: Mutex<Network>,
    /// Every egress proxy the session started, one per distinct (normalized) allowlist or
    /// denylist, kept until it closes (stopped then, or when dropped): a command keeps the
    /// proxy it started with, and switching back to a policy reuses its proxy.
    pub(super) proxies: Mutex<Vec<(NetworkPolicy, Arc<Egress>)>>,
    /// The static host map of the proxies started by a switch (the `egress_hosts` parameter).
    pub(super) egress_hosts: HostMap,
    /// The open's context: the tokens of proxies started by a switch are registered with
    /// the host's secrets through it.
    pub(super) ctx: Option<Ctx>,
    /// The host endpoints (the model endpoint) every isolated command reaches on its
    /// loopback; a command on the host's network reaches them there directly.
    pub(super) endpoints: Vec<SocketMount>,
    /// The forwarder binary on the host (the host binary itself).
    pub(super) forwarder: PathBuf,
    /// Commands may enter the shape's prepared namespace (the `prepared_namespace` parameter).
    pub(super) prepared_namespace: bool,
    /// The log of the build of the task's own image, if it was built (see `image`).
    pub(super) build_log: Option<PathBuf>,
}

impl SandboxSession {
    pub(super) fn new(
        id: String,
        dir: PathBuf,
        layout: Arc<Layout>,
        env: BTreeMap<String, String>,
        (policy, egress): (NetworkPolicy, Option<Egress>),
    ) -> Self {
        let policy = policy.normalized().unwrap_or(policy);
        let egress = egress.map(Arc::new);
        let proxies = egress.iter().map(|e| (policy.clone(), e.clone())).collect();
        SandboxSession {
            id,
            dir,
            layout,
            env,
            detached: Detached::default(),
            closed: AtomicBool::new(false),
            network: Mutex::new(Network { policy, egress }),
            proxies: Mutex::new(proxies),
            egress_hosts: HostMap::default(),
            ctx: None,
            endpoints: Vec::new(),
            forwarder: PathBuf::new(),
            prepared_namespace: true,
            build_log: None,
        }
    }

    /// The log of the build of the task's own image (reported by `info`).
    pub(super) fn with_build_log(mut self, log: Option<PathBuf>) -> Self {
        self.build_log = log;
        self
    }

    /// Whether commands may enter the shape's prepared namespace.
    pub(super) fn with_prepared_namespace(mut self, allowed: bool) -> Self {
        self.prepared_namespace = allowed;
        self
    }

    /// The host endpoints isolated commands reach through `forwarder`.
    pub(super) fn with_endpoints(
        mut self,
        endpoints: Vec<SocketMount>,
        forwarder: PathBuf,
    ) -> Self {
        self.endpoints = endpoints;
        self.forwarder = forwarder;
        self
    }

    /// The static host map for proxies started by a switch to `allowlist` or `denylist`.
    pub(super) fn with_egress_hosts(mut self, hosts: HostMap) -> Self {
        self.egress_hosts = hosts;
        self
    }

    /// The context through which the tokens of proxies started later are registered.
    pub(super) fn with_ctx(mut self, ctx: &Ctx) -> Self {
        self.ctx = Some(ctx.clone());
        self
    }

    pub(super) fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::SeqCst) {
            Err(Error::environment(format!(
                "environment `{ID}`: the session is closed"
            )))
        } else {
            Ok(())
        }
    }

    /// Runs `f` with the layout on the blocking pool, once the session is known to be open.
    pub(super) async fn with_layout<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Layout) -> Result<T> + Send + 'static,
    {
        self.check_open()?;
        let layout = self.layout.clone();
        blocking(ID, move || f(&layout)).await?
    }

    pub(super) async fn probe(&self, op: &'static str, path: &str) -> Result<Option<fs::Metadata>> {
        let path = path.to_string();
        self.with_layout(move |layout| {
            let resolved = layout.resolve(op, &path)?;
            existing(fs::metadata(&resolved.host), op, &path)
        })
        .await
    }
}
