//! The `sandbox` environment: every command of a task runs in a fresh Linux namespace sandbox
//! made by bubblewrap (`bwrap`), at millisecond cost and without Docker.
//!
//! - Filesystem: the root filesystem is read-only: the host root `/`, or a local root
//!   filesystem directory (the `root` parameter, else `setup.image` when it is an absolute
//!   path; it must then be an existing directory), or a task's own image (module `image`: its
//!   definition, `setup.build_context`, built, or the image `setup.image` names pulled, with
//!   Podman in a store of the sandbox's own, and exported once). A task with an image of its
//!   own is refused before the first task when nothing here can build or pull it, unless a
//!   root is chosen (`root`, an absolute `setup.image`) or the user opts into the host root
//!   (`host_root = true`): the task would silently see the host's tools instead of its own.
//!   An image's `ENV` applies under the task's bindings, its `WORKDIR` when the task names no
//!   working directory, and what it has at the private directories below is copied into
//!   them; an image whose `USER` is not root is refused at open (commands run as the user
//!   that starts the sandbox). Private writable directories are mounted at the task's
//!   working directory (`setup.workdir`, else the image's `WORKDIR`, else `/app`), `/logs`,
//!   `/tests`, `/solution`,
//!   `/run` and `/tmp`; they live on the host under one private (0700) directory
//!   `<temp>/agentcompass-sandbox-<task>-<attempt>-<random>/` (subdirectories `workdir`,
//!   `logs`, `tests`, `solution`, `run`, `tmp`), created at open and removed on close (or, after a
//!   crash, by [`EnvironmentProvider::close`] from the persisted `close_params`). Every command
//!   of the session sees the same directories, so state persists between calls like in a
//!   container.
//! - Resources (module `cgroup`): `cpu` and `memory_mb` as a cgroup of the session's own,
//!   which every command joins before it starts (the entry does first; a bwrap starts through
//!   the entry binary's `JOIN_ARG`), declared as resource fields only where this process may
//!   make one; removed at close (`close_params.cgroups` after a crash).
//! - Mount points that do not exist in the root (`/app` on a host) cannot be created on a
//!   read-only bind of it, so the sandbox root is a tmpfs mirroring the root: each top-level
//!   entry is bound read-only (`--ro-bind-try`; symlinks recreated), directories on the way to
//!   a mount point are split the same way, and the tmpfs is then remounted read-only. The
//!   mirror (and every bwrap argument but the session's own binds) is computed once per
//!   sandbox shape (root, working directory, network, temporary directory) and reused while
//!   the root directories it lists are unchanged (same inode, modification and change times).
//!   bwrap re-reads the whole mount table for every bind, so the binds that bring many
//!   submounts along (`/sys`) come last. If the system temporary directory is visible in the root
//!   (it is not when it is `/tmp`, which is private), it is replaced by an empty read-only
//!   directory, so one sandbox cannot see another's private directories.
//! - Host Unix sockets are out of reach (`sockets` has the whole design): the host's `/run`,
//!   `/tmp` and `/dev` (with `/dev/shm`) are not shown, `/var/run` is a symlink to the
//!   private `/run` (files that `/etc/resolv.conf` links to there are copied in, so DNS
//!   works), a socket anywhere else in the mirror is left out or covered by `/dev/null` in
//!   every command's sandbox (found in `/proc/net/unix`, not by walking the tree), and a
//!   sandbox started by root keeps only Docker's default capabilities, so it cannot unmount
//!   a cover. Abstract sockets belong to the network namespace: `no-network` cuts them off,
//!   `public` (the host's namespace) does not.
//! - Prepared namespaces (module `enter`): started by root, a command with nothing to forward
//!   does not start a bwrap of its own: bwrap builds the shape's namespace once (the mirror,
//!   the mount points, a read-only `/dev`), the host keeps it by two descriptors, and each
//!   command enters it through an entry process (`agentcompass-sandbox-enter`, or the host
//!   binary again), with its own mount, PID, IPC, UTS, cgroup and
//!   (isolated) network namespaces, the session's directories attached as `nosuid,nodev`
//!   binds, the socket covers, its own `/dev/shm`, `/dev/pts` and `/proc`, PID 1
//!   `sandbox-init`, and the capabilities bwrap keeps for root; failures read as bwrap's.
//!   Everything else below holds for both ways of starting a command.
//! - Namespaces: own PID (`/proc` shows the sandbox's processes only; PID 1 is the reaper),
//!   IPC, UTS and (if possible) cgroup namespaces. `no-network` = an empty network namespace
//!   (loopback only); `public` = the host's network; `allowlist` and `denylist` = the empty
//!   namespace of `no-network` whose only way out is the session's egress proxy (below).
//! - Per-phase policies (`dynamic_network_policy`): the session has a current policy, the
//!   request's `baseline_network_policy` at open, and `set_network_policy` replaces it (the
//!   runtime switches to the run policy before the run stage, to the evaluation policy around
//!   the evaluation, back to the baseline between steps). Every command is its own bwrap
//!   invocation, so its network is chosen when it starts, from the policy current then: the
//!   mirror, binds and template are shared, only the network arguments (`--unshare-net` and,
//!   for root, `CAP_NET_RAW`) and, for `allowlist`/`denylist`, the egress binds, forwarder and proxy
//!   variables differ. A switch starts no sandbox and probes nothing (~0.05 ms; a new
//!   allowlist's proxy ~0.5 ms). Commands already running (detached ones included) keep the
//!   network they started with. A policy that does not normalize, or a proxy that cannot
//!   start, is an error and leaves the current policy in place (the runtime records
//!   `network_policy_failed`). Each distinct allowlist or denylist gets its own proxy on first use
//!   (`<private dir>/egress/s`, then `egress-1/s`, ...), kept until the session closes, so a
//!   command keeps its proxy after a switch and switching back reuses it. The start-up probe
//!   covers the baseline's network only: a bwrap that cannot make the other namespace fails
//!   that command, with bwrap's own message.
//! - `allowlist` and `denylist` (`egress`; the forwarder is `agentcompass_egress::forward`): such a baseline starts the host's egress proxy
//!   (`agentcompass-egress`, every entry type of the contract, ports included, a random per-session token)
//!   at open (a switch to one, on first use) on a Unix socket `<private dir>/egress/s`
//!   (directory 0700); it runs on the host's tokio
//!   runtime and stops when the session closes or is dropped (listener and tunnels closed).
//!   Every command's sandbox has its own empty network namespace and gets, on its tmpfs root,
//!   `/.agentcompass-egress/proxy` (the socket's directory, read-only) and
//!   `/.agentcompass-egress/forward` (the host binary, read-only: `current_exe`, so the
//!   forwarder runs whatever the root), and the command runs as `forward
//!   __agentcompass-egress-forward 3128=SOCKET -- COMMAND...`: the forwarder binds
//!   `127.0.0.1:3128` in the namespace (bwrap brings `lo` up), starts itself again as the relay
//!   with that listener as its standard input, and `exec`s the command — same process, so
//!   exit codes, signals, output and timeouts are the command's; a program that cannot be
//!   started is reported with bwrap's own `bwrap: execvp` line, hence the same error. The
//!   relay forwards each connection to the socket (a thread per direction) and is killed
//!   with the PID namespace when the command's main process exits. So nothing is reachable
//!   but the proxy, which checks the token, the name and every resolved address. Commands get
//!   `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` (and lower case) =
//!   `http://agent:TOKEN@127.0.0.1:3128`, set over any binding of those names, and
//!   `NO_PROXY`/`no_proxy` = `localhost,127.0.0.1,::1`: the namespace's own loopback holds
//!   only the forwarder and what the command serves itself (the proxy's `localhost` would be
//!   the host's). Why not a listener made by the host in the command's namespace: joining a
//!   namespace bwrap made in its own user namespace needs a single-threaded helper and a
//!   hand-off before the command starts (`--block-fd`), more moving parts than a relay. A
//!   root whose C library cannot run the host binary cannot use `allowlist` (every command
//!   then fails to start). The static host map (name = address, resolved before DNS) is the
//!   provider's `egress_hosts` parameter and the open request's `egress_hosts` (the runtime
//!   option `runtime.egress.hosts`); for a name in both, the runtime option's address is used
//!   (it describes the host's network, the same for every request).
//!   Every proxy's token is registered with the host's secrets (`Ctx::register_secret`, at
//!   open or when a switch starts the proxy), so what the host prints or persists (a
//!   command's output in a trajectory) shows it scrubbed; it opens only this session's
//!   proxy, which only this session's sandboxes can reach, and dies with the session.
//! - Host mounts (`OpenEnvironmentRequest.host_mounts`: the harness's installed tools,
//!   read-only, and an install's staging directory, writable) are bound at their targets
//!   (`--ro-bind`/`--bind`), which are mount points of the shape like the private mounts';
//!   a target must be absolute and clean and not overlap a private mount, `/proc` or `/dev`.
//!   File operations under them map to their host directories.
//! - Commands: `bwrap ... -- <argv>` or `-- /bin/sh -c <string>`; cwd default = the working
//!   directory, relative cwd resolved against it. Environment: nothing of the host's; `PATH`
//!   (a standard list) and `HOME=/tmp`, then the call's `env` defaults, the session's resolved
//!   common bindings, then `required_env` (the precedence of `host_process`). Values are
//!   passed in bwrap's own environment, never on its command line (which other users can read
//!   in `/proc`); only if bwrap is setuid-root, where the C library drops variables such as
//!   `LD_LIBRARY_PATH` and `TMPDIR` from a setuid program's environment, are those few passed
//!   with `--setenv`. A start failure that bwrap reports (a missing program, an unusable
//!   working directory) is an error, not an exit code.
//! - Every command runs in its own process group; a timeout or a dropped `exec` future kills
//!   the group with SIGKILL; with `--unshare-pid` and `--die-with-parent` everything inside the
//!   sandbox dies with it, background children included (which also end when the command's
//!   main process exits). Detached commands are killed when the session closes or is dropped.
//! - File operations never start bwrap: sandbox paths are mapped to host paths. Paths under a
//!   writable mount map to its host directory; other absolute paths to `<root>/<path>`,
//!   read-only (writes are refused, naming the path); relative paths resolve against the
//!   working directory. Symlinks are resolved as the sandbox would (an absolute target is a
//!   sandbox path), so a link made inside the sandbox cannot redirect a host-side write
//!   outside the writable directories (short of a race with a command running concurrently).
//!   `/proc`, `/dev` and the hidden temporary directory exist only for commands.

mod cgroup;
mod config;
mod egress;
mod enter;
mod image;
mod layout;
mod mirror;
mod mounts;
mod provision;
mod session;
mod sockets;
mod template;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agentcompass_egress::EgressPolicy;
use agentcompass_plugin_api::contracts::{
    ExecutionPlan, HostMount, NetworkMode, OpenEnvironmentRequest, ProviderCapabilities,
    PORT_ENTRY_TYPE,
};
use agentcompass_plugin_api::sdk::provider::{blocking, random_suffix, sanitise};
use agentcompass_plugin_api::sdk::validate::validate_against_capabilities;
use agentcompass_plugin_api::sdk::{async_trait, Ctx, EnvironmentProvider, SessionRef};
use agentcompass_plugin_api::{Error, Result};
use serde_json::Value;

use crate::files::{create_private_dir, remove_created_dir, remove_owned_dir};
use crate::process::run_captured;
use crate::Builtin;
use cgroup::SessionCgroup;
use config::{choose_root, config_schema, find_program, workdir_of, Config};
use egress::Egress;
use layout::{HostBind, Layout};
use mounts::seed_mounts;
use provision::{discard, limit_session, task_image};
use session::SandboxSession;
use template::{Shape, TemplateCache};

pub use agentcompass_egress::forward::run_if_requested as run_egress_forwarder;
pub use enter::{enter_if_requested, ENTRY_ARG, ENTRY_BINARY};

/// Provider id.
pub const ID: &str = "sandbox";

/// One-line description.
pub const DESCRIPTION: &str = "A per-task Linux namespace sandbox (bubblewrap): read-only root, \
     private /app /logs /tests /solution /run /tmp, own PID namespace, no-network enforced, \
     allowlist and denylist through the host's egress proxy";

/// The error when the bwrap binary cannot be found.
pub const INSTALL_HINT: &str =
    "bwrap not found: install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)";

/// Name prefix of the host directories this provider creates (and alone removes).
const OWNED_PREFIX: &str = "agentcompass-sandbox-";

/// A task image's build timeout when its setup names none (Harbor's `build_timeout_sec`
/// default).
const DEFAULT_BUILD_SECONDS: f64 = 600.0;

/// `PATH` inside the sandbox unless a binding sets it.
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Where only the kernel's file systems are mounted (no host mapping).
const KERNEL_DIRS: [&str; 2] = ["/proc", "/dev"];

/// The `allowlist` and `denylist` entries the egress proxy matches: every host pattern of
/// the contract, with or without a port.
const ALLOWLIST_ENTRY_TYPES: [&str; 7] = [
    "hostname",
    "wildcard",
    "ipv4",
    "ipv6",
    "ipv4_cidr",
    "ipv6_cidr",
    PORT_ENTRY_TYPE,
];

/// How long the start-up probe of a sandbox shape may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// The registry entry.
pub fn builtin() -> Builtin {
    Builtin::environment(ID, DESCRIPTION, config_schema(), make)
}

fn make() -> Result<Arc<dyn EnvironmentProvider>> {
    Ok(Arc::new(SandboxProvider::default()))
}

/// What the start-up probe is run once for: bwrap, root and network.
type ProbeKey = (PathBuf, PathBuf, bool);

/// The `sandbox` provider. Remembers which sandbox shapes were already started once
/// successfully, so the start-up probe runs once per shape (sessions opened while it runs
/// wait for it), and the bwrap arguments of each shape, so the root is not listed again for
/// every session.
#[derive(Default)]
pub struct SandboxProvider {
    probed: Mutex<HashMap<ProbeKey, Arc<tokio::sync::OnceCell<()>>>>,
    templates: Arc<TemplateCache>,
}

#[async_trait]
impl EnvironmentProvider for SandboxProvider {
    fn capabilities(&self) -> Result<ProviderCapabilities> {
        Ok(ProviderCapabilities {
            network_modes: vec![
                NetworkMode::Public,
                NetworkMode::NoNetwork,
                NetworkMode::Allowlist,
                NetworkMode::Denylist,
            ],
            allowlist_entry_types: ALLOWLIST_ENTRY_TYPES.map(str::to_string).to_vec(),
            dynamic_network_policy: true,
            // `cpu` and `memory_mb` as a session cgroup, where this process may make one
            // and commands can join it (through the entry binary).
            resource_fields: match (cgroup::hierarchy(), enter::entry_program()) {
                (Some(_), Some(_)) => vec!["cpu".to_string(), "memory_mb".to_string()],
                _ => Vec::new(),
            },
            operating_systems: vec!["linux".to_string()],
            task_env: true,
            startup_env: false,
            host_endpoints: true,
            host_mounts: true,
            // The root filesystem; `bwrap` and `egress_hosts` change nothing installed.
            platform_params: Some(vec!["root".to_string()]),
            builds_images: true,
            exec_user: false,
            compose: false,
        })
    }

    fn validate_plan(&self, plan: &ExecutionPlan) -> Result<()> {
        validate_against_capabilities(&self.capabilities()?, plan)?;
        let environments =
            std::iter::once(&plan.environment).chain(plan.evaluation_environment.as_ref());
        for environment in environments {
            Config::parse(&environment.params)?.check_image(&environment.setup)?;
            workdir_of(&environment.setup, None)?;
        }
        Ok(())
    }

    async fn open(&self, ctx: &Ctx, request: &OpenEnvironmentRequest) -> Result<SessionRef> {
        let config = Config::parse(&request.environment.params)?;
        config.check_image(&request.environment.setup)?;
        let prepared_namespace = config.prepared_namespace;
        let setup = &request.environment.setup;
        let policy = request.baseline_network_policy.clone();
        // `allowlist`, `denylist`: the network namespace of `no-network`, plus the egress
        // proxy.
        let no_network = policy.network_mode != NetworkMode::Public;
        let egress_policy = match policy.network_mode {
            NetworkMode::Allowlist | NetworkMode::Denylist => Some(
                EgressPolicy::from_network_policy(&policy)
                    .map_err(|e| Error::invalid_input(format!("environment `{ID}`: {e}")))?,
            ),
            NetworkMode::Public | NetworkMode::NoNetwork => None,
        };
        let endpoints = egress::endpoint_mounts(&request.host_endpoints)?;
        let forwarder = egress::forwarder_binary()?;
        // A task's own image: its root filesystem, its ENV under the task's bindings, its
        // WORKDIR unless the task names one; what it has in the sandbox's writable
        // directories is copied into them.
        let task_image = task_image(&config, setup).await?;
        let workdir = workdir_of(
            setup,
            task_image.as_ref().and_then(|t| t.workdir.as_deref()),
        )?;
        let build_log = task_image.as_ref().and_then(|t| t.build_log.clone());
        let (image, image_root, mut env) = match task_image {
            Some(t) => (Some(t.rootfs.display().to_string()), Some(t.rootfs), t.env),
            None => (setup.image.clone(), None, BTreeMap::new()),
        };
        env.extend(request.resolved_env.clone());
        let prefix = format!(
            "{OWNED_PREFIX}{}-{}-",
            sanitise(&request.task_id),
            request.attempt
        );
        let templates = self.templates.clone();
        let egress_hosts = config.host_map(&request.egress_hosts)?;
        let switch_hosts = egress_hosts.clone();
        let host_binds = host_binds(&request.host_mounts, &workdir)?;
        let (layout, dir) = blocking(ID, move || {
            let shape = (workdir, no_network);
            let created = create_layout(
                &config,
                image.as_deref(),
                shape,
                &prefix,
                &templates,
                host_binds,
            )?;
            match image_root.map(|root| seed_mounts(&root, &created.0.mounts)) {
                Some(Err(e)) => {
                    let _ = fs::remove_dir_all(&created.1);
                    Err(e)
                }
                _ => Ok(created),
            }
        })
        .await??;
        let mut layout = layout;
        if let Err(e) = limit_session(request, &dir, &mut layout).await {
            remove_owned_dir(dir, ID).await?;
            return Err(e);
        }
        let layout = Arc::new(layout);
        if let Err(e) = self.probe(&layout).await {
            discard(dir, &layout).await?;
            return Err(e);
        }
        let id = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let egress = match egress_policy {
            Some(egress_policy) => {
                match Egress::start(&dir, "egress", egress_policy, egress_hosts, &id) {
                    Ok(egress) => Some(egress),
                    Err(e) => {
                        discard(dir, &layout).await?;
                        return Err(e);
                    }
                }
            }
            None => None,
        };
        if let Some(egress) = &egress {
            ctx.register_secret(egress.token()).await;
        }
        tracing::debug!(
            provider = ID,
            dir = %dir.display(),
            root = %layout.root.display(),
            no_network,
            egress = egress.is_some(),
            "opened environment"
        );
        Ok(Arc::new(
            SandboxSession::new(id, dir, layout, env, (policy, egress))
                .with_egress_hosts(switch_hosts)
                .with_endpoints(endpoints, forwarder)
                .with_ctx(ctx)
                .with_prepared_namespace(prepared_namespace)
                .with_build_log(build_log),
        ))
    }

    async fn close(&self, _ctx: &Ctx, close_params: &Value) -> Result<()> {
        let cgroups = close_params.get("cgroups").and_then(Value::as_array);
        let dirs = cgroups.into_iter().flatten().filter_map(Value::as_str);
        let cgroup = SessionCgroup::owned(dirs.map(PathBuf::from));
        if !cgroup.dirs.is_empty() {
            blocking(ID, move || cgroup.remove()).await?;
        }
        let Some(dir) = close_params.get("dir").and_then(Value::as_str) else {
            return Ok(());
        };
        remove_created_dir(dir, OWNED_PREFIX, ID).await
    }
}

impl SandboxProvider {
    /// Starts one sandbox of this shape (bwrap, root, network) the first time it is opened, so
    /// that a bwrap that cannot create namespaces fails here, with its own message, rather
    /// than in every command. The probe runs `true`; a root without it still proves the
    /// sandbox could be built (bwrap then fails at `execvp`).
    /// Concurrent opens of one shape share the first successful probe; after a failure the
    /// next open probes again.
    async fn probe(&self, layout: &Layout) -> Result<()> {
        let key = (layout.bwrap.clone(), layout.root.clone(), layout.no_network);
        let cell = self
            .probed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key)
            .or_default()
            .clone();
        cell.get_or_try_init(|| Self::run_probe(layout))
            .await
            .map(|_| ())
    }

    /// Runs the probe of [`SandboxProvider::probe`].
    async fn run_probe(layout: &Layout) -> Result<()> {
        let mut cmd = layout.command(Path::new("/"), &[], &[]);
        cmd.arg("--").arg("true");
        cmd.env_clear()
            .env("PATH", DEFAULT_PATH)
            .stdin(Stdio::null())
            .process_group(0);
        let result = run_captured(cmd, "bwrap", Some(PROBE_TIMEOUT), |e| {
            bwrap_start_error(&layout.bwrap, e)
        })
        .await?;
        if result.timed_out {
            return Err(Error::environment(format!(
                "environment `{ID}`: bwrap did not start a sandbox within {} seconds",
                PROBE_TIMEOUT.as_secs()
            )));
        }
        if result.returncode != 0 && !result.stderr.contains("execvp") {
            return Err(Error::environment(format!(
                "environment `{ID}`: bwrap cannot create the sandbox (exit code {}): {}",
                result.returncode,
                result.stderr.trim()
            )));
        }
        Ok(())
    }
}

/// Finds bwrap and the root, creates the session's private directory `<temp>/<prefix><random>`
/// and its layout (removing the directory again if that fails). Blocking.
/// The open request's host mounts as binds: an existing host directory each, at an absolute,
/// clean sandbox path that is not `/`, not under `/proc` or `/dev`, and neither inside nor
/// around a private writable mount (the working directory, `/tmp`, ...) or another host mount.
fn host_binds(mounts: &[HostMount], workdir: &Path) -> Result<Vec<HostBind>> {
    let mut binds: Vec<HostBind> = Vec::with_capacity(mounts.len());
    for (i, mount) in mounts.iter().enumerate() {
        let bad = |why: String| {
            Error::invalid_input(format!(
                "environment `{ID}`: host_mounts[{i}] `{}`: {why}",
                mount.target
            ))
        };
        let sandbox = PathBuf::from(&mount.target);
        let clean = sandbox
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
        if !sandbox.is_absolute() || !clean || sandbox == Path::new("/") {
            return Err(bad("must be an absolute path (not `/`, no `..`)".into()));
        }
        let private = mounts::FIXED_MOUNTS
            .iter()
            .map(|(p, _, _)| PathBuf::from(p))
            .chain([workdir.to_path_buf()])
            .chain(KERNEL_DIRS.iter().map(PathBuf::from));
        let nested = |a: &Path, b: &Path| a.starts_with(b) || b.starts_with(a);
        if let Some(other) = private
            .map(|p| p.to_path_buf())
            .chain(binds.iter().map(|b| b.sandbox.clone()))
            .find(|p| nested(&sandbox, p))
        {
            return Err(bad(format!("overlaps `{}`", other.display())));
        }
        let host = PathBuf::from(&mount.source);
        if !host.is_absolute() || !host.is_dir() {
            return Err(bad(format!(
                "the host directory `{}` does not exist",
                mount.source
            )));
        }
        binds.push(HostBind {
            host,
            sandbox,
            read_only: mount.read_only,
        });
    }
    binds.sort_by(|a, b| a.sandbox.cmp(&b.sandbox));
    Ok(binds)
}

fn create_layout(
    config: &Config,
    image: Option<&str>,
    (workdir, no_network): (PathBuf, bool),
    prefix: &str,
    templates: &TemplateCache,
    host_binds: Vec<HostBind>,
) -> Result<(Layout, PathBuf)> {
    let bwrap = find_program(&config.bwrap).ok_or_else(|| {
        Error::environment(format!(
            "environment `{ID}`: {INSTALL_HINT} (looked for `{}`)",
            config.bwrap
        ))
    })?;
    let root = choose_root(config.root.as_deref(), image)?;
    let base = std::env::temp_dir();
    let base = fs::canonicalize(&base)
        .or_else(|_| std::path::absolute(&base))
        .unwrap_or(base);
    let reserved = base.join(format!("{prefix}{}", random_suffix()));
    let dir = create_private_dir(&reserved, prefix, ID)?;
    let shape = Shape {
        root,
        workdir,
        no_network,
        temp_base: base,
        mount_points: host_binds.iter().map(|b| b.sandbox.clone()).collect(),
    };
    match Layout::create_cached(&dir, bwrap, shape, templates, host_binds) {
        Ok(layout) => Ok((layout, dir)),
        Err(e) => {
            let _ = fs::remove_dir_all(&dir);
            Err(e)
        }
    }
}

fn bwrap_start_error(bwrap: &Path, e: io::Error) -> Error {
    if e.kind() == io::ErrorKind::NotFound {
        Error::environment(format!(
            "environment `{ID}`: {INSTALL_HINT} (looked for `{}`)",
            bwrap.display()
        ))
    } else {
        Error::environment(format!(
            "environment `{ID}`: cannot start `{}`: {e}",
            bwrap.display()
        ))
    }
}
