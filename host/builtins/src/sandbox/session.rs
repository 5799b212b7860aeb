//! One open sandbox: commands through bwrap, files through the host paths of its layout.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use agentcompass_egress::{EgressPolicy, HostMap};
use agentcompass_plugin_api::contracts::{
    ExecCommand, ExecRequest, ExecResult, NetworkMode, NetworkPolicy, SessionInfo,
};
use agentcompass_plugin_api::sdk::provider::{
    blocking, copy_file, copy_tree, timeout_duration, transfer_error,
};
use agentcompass_plugin_api::sdk::{async_trait, Ctx, EnvironmentSession};
use agentcompass_plugin_api::{Error, Result};
use serde_json::json;
use tokio::process::Command;

use super::egress::{Egress, Forwarding, SocketMount};
use super::enter::{self, capability_mask, entry_program, Prepared, Request};
use super::layout::Layout;
use super::template::{started_by_root, ROOT_CAPABILITIES};
use super::{bwrap_start_error, DEFAULT_PATH, ID};
use crate::files::{existing, remove_owned_dir};
use crate::process::{run_captured, Detached};

/// `HOME` inside the sandbox unless a binding sets it.
pub(super) const DEFAULT_HOME: &str = "/tmp";

/// Variables the C library removes from a setuid program's environment (they reach the
/// sandbox only through `--setenv` when bwrap is setuid).
pub(super) const SECURE_MODE_DROPPED: [&str; 13] = [
    "GCONV_PATH",
    "GETCONF_DIR",
    "GLIBC_TUNABLES",
    "HOSTALIASES",
    "LOCALDOMAIN",
    "LOCPATH",
    "MALLOC_TRACE",
    "NIS_PATH",
    "NLSPATH",
    "RESOLV_HOST_CONF",
    "RES_OPTIONS",
    "TMPDIR",
    "TZDIR",
];

/// bwrap's own messages for a sandbox it could not finish (mounts, working directory,
/// namespaces) or a command it could not start.
pub(super) const SETUP_FAILURES: [&str; 4] =
    ["execvp ", "Can't ", "No permissions ", "Creating new "];

/// If bwrap itself failed before the command started (it exits 1 with one `bwrap: ` line
/// naming a set-up step), the error to return instead of an exit code.
pub(super) fn setup_failure(result: &ExecResult, program: &str, cwd: &Path) -> Option<Error> {
    if result.timed_out || result.returncode != 1 || !result.stdout.is_empty() {
        return None;
    }
    let line = result.stderr.strip_suffix('\n')?;
    if line.contains('\n') {
        return None;
    }
    let detail = line.strip_prefix("bwrap: ")?;
    if !SETUP_FAILURES.iter().any(|s| detail.starts_with(s)) {
        return None;
    }
    let cwd = cwd.display();
    Some(match detail.strip_prefix("execvp ") {
        Some(rest) => {
            let reason = rest
                .strip_prefix(program)
                .and_then(|r| r.strip_prefix(": "))
                .unwrap_or(rest);
            Error::environment(format!(
                "exec: cannot start `{program}` in `{cwd}` (sandbox): {reason}"
            ))
        }
        None => Error::environment(format!(
            "exec: the sandbox could not be set up in `{cwd}`: {detail}"
        )),
    })
}

/// Whether bwrap failed to set the sandbox up at the cover of one of the host sockets `masks`
/// (it was removed after it was listed).
pub(super) fn cover_failed(result: &ExecResult, masks: &[PathBuf]) -> bool {
    result.returncode == 1
        && result.stdout.is_empty()
        && result.stderr.starts_with("bwrap: ")
        && masks
            .iter()
            .any(|m| result.stderr.contains(&*m.to_string_lossy()))
}

/// The network a command gets when it starts: the session's policy at that moment.
#[derive(Clone)]
pub(super) struct Network {
    /// Normalized (the key of the session's proxies).
    pub(super) policy: NetworkPolicy,
    /// `allowlist`, `denylist`: the proxy of this policy.
    pub(super) egress: Option<Arc<Egress>>,
}

impl Network {
    /// Whether the command gets its own empty network namespace (`no-network`, `allowlist`,
    /// `denylist`).
    pub(super) fn isolated(&self) -> bool {
        self.policy.network_mode != NetworkMode::Public
    }
}

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
        }
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

    /// The network a command started now gets.
    pub(super) fn current_network(&self) -> Network {
        self.network
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The proxy of the normalized allowlist or denylist `policy`: the session's own if it has one, else
    /// started now (on `<dir>/egress-N/s`), and whether it was.
    fn proxy_for(&self, policy: &NetworkPolicy) -> Result<(Arc<Egress>, bool)> {
        let mut proxies = self.proxies.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, egress)) = proxies.iter().find(|(p, _)| p == policy) {
            return Ok((egress.clone(), false));
        }
        let egress_policy = EgressPolicy::from_network_policy(policy)
            .map_err(|e| Error::invalid_input(format!("environment `{ID}`: {e}")))?;
        let name = match proxies.len() {
            0 => "egress".to_string(),
            n => format!("egress-{n}"),
        };
        let egress = Arc::new(Egress::start(
            &self.dir,
            &name,
            egress_policy,
            self.egress_hosts.clone(),
            &self.id,
        )?);
        proxies.push((policy.clone(), egress.clone()));
        Ok((egress, true))
    }

    /// Stops every proxy the session started.
    async fn stop_proxies(&self) {
        let proxies: Vec<Arc<Egress>> = self
            .proxies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(_, e)| e.clone())
            .collect();
        for egress in proxies {
            egress.stop().await;
        }
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

    /// The bwrap command running `request` in `cwd` on `network` with the environment `env`
    /// and the host sockets `masks` covered, and the program it starts (for messages).
    pub(super) fn command(
        &self,
        network: &Network,
        request: &ExecRequest,
        env: &BTreeMap<String, String>,
        cwd: &Path,
        masks: &[PathBuf],
    ) -> (Command, String) {
        let layout = &self.layout;
        let egress = network.egress.as_deref();
        // An isolated command reaches the proxy and the host endpoints only through the
        // forwarder; on the host's network it reaches the endpoints directly.
        let mounts = if network.isolated() {
            egress
                .map(Egress::mount)
                .into_iter()
                .chain(self.endpoints.iter().cloned())
                .collect()
        } else {
            Vec::new()
        };
        let forwarding = Forwarding::new(&self.forwarder, mounts);
        let forwarding_args = forwarding
            .as_ref()
            .map(Forwarding::bwrap_args)
            .unwrap_or_default();
        let mut cmd = layout.command_in(network.isolated(), cwd, masks, &forwarding_args);
        cmd.env_clear()
            .env("PATH", DEFAULT_PATH)
            .env("HOME", DEFAULT_HOME);
        for (key, value) in env {
            if layout.setuid
                && (key.starts_with("LD_") || SECURE_MODE_DROPPED.contains(&key.as_str()))
            {
                cmd.arg("--setenv").arg(key).arg(value);
            }
            cmd.env(key, value);
        }
        cmd.arg("--");
        if let Some(egress) = egress {
            // The session's network: set over any binding of the same names.
            for (key, value) in egress.env() {
                cmd.env(key, value);
            }
        }
        if let Some(forwarding) = &forwarding {
            forwarding.wrap(&mut cmd);
        }
        let program = match &request.command {
            ExecCommand::Shell(line) => {
                cmd.arg("/bin/sh").arg("-c").arg(line);
                "/bin/sh"
            }
            ExecCommand::Argv(argv) => {
                cmd.args(argv);
                argv[0].as_str()
            }
        };
        cmd.stdin(Stdio::null()).process_group(0);
        (cmd, program.to_string())
    }

    /// Whether a command on `network` can enter the shape's prepared namespace: started by
    /// root through a bwrap that is not setuid, with nothing to forward into it (`allowlist`,
    /// `denylist` and host endpoints need the forwarder's binds, so they keep a bwrap each).
    pub(super) fn can_enter(&self, network: &Network) -> bool {
        let forwards =
            network.isolated() && (network.egress.is_some() || !self.endpoints.is_empty());
        self.prepared_namespace
            && !forwards
            && !self.layout.setuid
            && started_by_root()
            && entry_program().is_some()
    }

    /// The command running `request` in the prepared namespace `prepared` (what
    /// [`SandboxSession::command`] does with a new bwrap), and the program it starts.
    pub(super) fn entered_command(
        &self,
        prepared: &Arc<Prepared>,
        network: &Network,
        request: &ExecRequest,
        env: &BTreeMap<String, String>,
        cwd: &Path,
        masks: &[PathBuf],
    ) -> Result<(Command, String)> {
        let layout = &self.layout;
        let mut full_env = BTreeMap::from([
            ("PATH".to_string(), DEFAULT_PATH.to_string()),
            ("HOME".to_string(), DEFAULT_HOME.to_string()),
        ]);
        full_env.extend(env.iter().map(|(k, v)| (k.clone(), v.clone())));
        let argv: Vec<String> = match &request.command {
            ExecCommand::Shell(line) => vec!["/bin/sh".into(), "-c".into(), line.clone()],
            ExecCommand::Argv(argv) => argv.clone(),
        };
        let program = argv.first().cloned().unwrap_or_default();
        let binds = layout
            .mounts
            .iter()
            .map(|m| (m.host.clone(), m.sandbox.clone(), false))
            .chain(
                layout
                    .host_binds
                    .iter()
                    .map(|b| (b.host.clone(), b.sandbox.clone(), b.read_only)),
            )
            .collect();
        let capabilities = capability_mask(
            ROOT_CAPABILITIES
                .iter()
                .copied()
                .filter(|cap| *cap != "CAP_NET_RAW" || network.isolated()),
        );
        let (mount_ns, root) = prepared.paths();
        let entry = Request {
            mount_ns,
            root,
            last_capability: prepared.last_capability(),
            binds,
            masks: masks.to_vec(),
            cwd: cwd.to_path_buf(),
            argv,
            env: full_env,
            isolated: network.isolated(),
            capabilities,
        };
        let cmd = enter::command(&entry)
            .map_err(|e| {
                Error::invalid_input(format!("exec: cannot start `{program}` (sandbox): {e}"))
            })?
            .ok_or_else(|| {
                Error::environment(format!(
                    "environment `{ID}`: no binary serves sandbox entries"
                ))
            })?;
        let mut cmd = cmd;
        cmd.stdin(Stdio::null()).process_group(0);
        Ok((cmd, program))
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

#[async_trait]
impl EnvironmentSession for SandboxSession {
    fn info(&self) -> SessionInfo {
        SessionInfo {
            id: self.id.clone(),
            provider: ID.to_string(),
            default_workdir: Some(self.layout.workdir.to_string_lossy().into_owned()),
            close_params: json!({"dir": self.dir.to_string_lossy()}),
        }
    }

    async fn exec(&self, request: ExecRequest) -> Result<ExecResult> {
        request.validate().map_err(Error::invalid_input)?;
        let timeout = timeout_duration(request.timeout_seconds)?;
        let env = request.effective_env(&self.env)?;
        // Chosen when the command starts: a later switch does not change it.
        let network = self.current_network();
        let cwd = match &request.cwd {
            Some(cwd) => self.layout.absolute(cwd),
            None => self.layout.workdir.clone(),
        };
        let shown = cwd.to_string_lossy().into_owned();
        let can_enter = self.can_enter(&network);
        let (is_dir, masks, prepared) = self
            .with_layout(move |layout| {
                let is_dir = match layout.resolve("exec", &shown) {
                    Ok(resolved) => fs::metadata(resolved.host).is_ok_and(|m| m.is_dir()),
                    // /proc, /dev: bwrap says whether it exists.
                    Err(_) => true,
                };
                let prepared = if can_enter {
                    layout.template.prepared(&layout.bwrap)
                } else {
                    None
                };
                Ok((is_dir, layout.socket_masks()?, prepared))
            })
            .await?;
        if !is_dir {
            return Err(Error::environment(format!(
                "exec: working directory `{}` does not exist or is not a directory",
                cwd.display()
            )));
        }
        let build = |masks: &[PathBuf]| match &prepared {
            Some(prepared) => self.entered_command(prepared, &network, &request, &env, &cwd, masks),
            None => Ok(self.command(&network, &request, &env, &cwd, masks)),
        };
        let (cmd, program) = build(&masks)?;
        let bwrap = self.layout.bwrap.clone();
        let start_failed = move |e| bwrap_start_error(&bwrap, e);
        if request.detach {
            let child = crate::process::spawn_detached(cmd, start_failed)?;
            self.detached.push(child);
            if self.closed.load(Ordering::SeqCst) {
                // Closed while starting: close may have missed it.
                self.detached.kill_all().await;
                self.check_open()?;
            }
            return Ok(ExecResult::new(0, "", ""));
        }
        let mut result = run_captured(cmd, &program, timeout, start_failed.clone()).await?;
        if cover_failed(&result, &masks) {
            // A host socket went away between the listing and bwrap's cover of it: nothing
            // ran yet, so list again and start once more.
            let masks = self.with_layout(|layout| layout.socket_masks()).await?;
            let (cmd, _) = build(&masks)?;
            result = run_captured(cmd, &program, timeout, start_failed).await?;
        }
        match setup_failure(&result, &program, &cwd) {
            Some(error) => Err(error),
            None => Ok(result),
        }
    }

    async fn upload(&self, src: &Path, dst: &str) -> Result<()> {
        let (src, dst) = (src.to_path_buf(), dst.to_string());
        self.with_layout(move |layout| {
            let target = layout.resolve_writable("upload", &dst)?;
            copy_file(&src, &target.host)
                .map_err(|e| transfer_error("upload", src.display(), &dst, e))
        })
        .await
    }

    async fn download(&self, src: &str, dst: &Path) -> Result<()> {
        let (src, dst) = (src.to_string(), dst.to_path_buf());
        self.with_layout(move |layout| {
            let source = layout.resolve("download", &src)?;
            copy_file(&source.host, &dst)
                .map_err(|e| transfer_error("download", &src, dst.display(), e))
        })
        .await
    }

    async fn upload_dir(&self, src: &Path, dst: &str) -> Result<()> {
        let (src, dst) = (src.to_path_buf(), dst.to_string());
        self.with_layout(move |layout| {
            let target = layout.resolve_writable("upload_dir", &dst)?;
            copy_tree(&src, &target.host)
                .map_err(|e| transfer_error("upload_dir", src.display(), &dst, e))
        })
        .await
    }

    async fn download_dir(&self, src: &str, dst: &Path) -> Result<()> {
        let (src, dst) = (src.to_string(), dst.to_path_buf());
        self.with_layout(move |layout| {
            let source = layout.resolve("download_dir", &src)?;
            copy_tree(&source.host, &dst)
                .map_err(|e| transfer_error("download_dir", &src, dst.display(), e))
        })
        .await
    }

    async fn read_text(&self, path: &str) -> Result<String> {
        let path = path.to_string();
        self.with_layout(move |layout| {
            let source = layout.resolve("read_text", &path)?;
            let bytes = fs::read(&source.host)
                .map_err(|e| Error::environment(format!("read_text: cannot read `{path}`: {e}")))?;
            String::from_utf8(bytes)
                .map_err(|_| Error::environment(format!("read_text: `{path}` is not valid UTF-8")))
        })
        .await
    }

    async fn write_text(&self, path: &str, content: &str) -> Result<()> {
        let (path, content) = (path.to_string(), content.to_string());
        self.with_layout(move |layout| {
            let target = layout.resolve_writable("write_text", &path)?;
            let fail = |e: io::Error| {
                Error::environment(format!("write_text: cannot write `{path}`: {e}"))
            };
            if let Some(parent) = target.host.parent() {
                fs::create_dir_all(parent).map_err(fail)?;
            }
            fs::write(&target.host, content).map_err(fail)
        })
        .await
    }

    async fn is_file(&self, path: &str) -> Result<bool> {
        Ok(self
            .probe("is_file", path)
            .await?
            .is_some_and(|m| m.is_file()))
    }

    async fn is_dir(&self, path: &str) -> Result<bool> {
        Ok(self
            .probe("is_dir", path)
            .await?
            .is_some_and(|m| m.is_dir()))
    }

    /// Makes `policy` the network of every command started from now on (commands already
    /// running keep theirs): the host's network, an empty namespace, or an empty namespace
    /// behind this allowlist's or denylist's egress proxy (started on its first use). Nothing is started
    /// or probed otherwise. A policy that does not normalize, or a proxy that cannot start,
    /// is an error and leaves the current policy in place.
    async fn set_network_policy(&self, policy: &NetworkPolicy) -> Result<()> {
        self.check_open()?;
        let policy = policy
            .normalized()
            .map_err(|e| Error::invalid_input(format!("environment `{ID}`: {e}")))?;
        let egress = match policy.network_mode {
            NetworkMode::Allowlist | NetworkMode::Denylist => {
                let (egress, started) = self.proxy_for(&policy)?;
                if let Some(ctx) = self.ctx.as_ref().filter(|_| started) {
                    ctx.register_secret(egress.token()).await;
                }
                Some(egress)
            }
            NetworkMode::Public | NetworkMode::NoNetwork => None,
        };
        if self.closed.load(Ordering::SeqCst) {
            // Closed while the proxy started: close may have missed it.
            self.stop_proxies().await;
            self.check_open()?;
        }
        tracing::debug!(provider = ID, session = %self.id, mode = %policy.network_mode, "network policy set");
        *self.network.lock().unwrap_or_else(PoisonError::into_inner) = Network { policy, egress };
        Ok(())
    }

    async fn close(&self) -> Result<()> {
        self.closed.store(true, Ordering::SeqCst);
        self.detached.kill_all().await;
        self.stop_proxies().await;
        remove_owned_dir(self.dir.clone(), ID).await?;
        tracing::debug!(provider = ID, dir = %self.dir.display(), "removed sandbox directory");
        Ok(())
    }
}
