//! The `sandbox` environment: every command of a task runs in a fresh Linux namespace sandbox
//! made by bubblewrap (`bwrap`), at millisecond cost and without Docker.
//!
//! - Filesystem: the root filesystem is read-only: the host root `/`, or a local root
//!   filesystem directory (the `root` parameter, else `setup.image` when it is an absolute
//!   path; it must then be an existing directory; an image name such as `debian:bookworm` is
//!   ignored and the host root used). Private writable directories are mounted at the task's
//!   working directory (`setup.workdir`, default `/app`), `/logs`, `/tests`, `/solution` and
//!   `/tmp`; they live on the host under one private (0700) directory
//!   `<temp>/agentcompass-sandbox-<task>-<attempt>-<random>/` (subdirectories `workdir`,
//!   `logs`, `tests`, `solution`, `tmp`), created at open and removed on close (or, after a
//!   crash, by [`EnvironmentProvider::close`] from the persisted `close_params`). Every command
//!   of the session sees the same directories, so state persists between calls like in a
//!   container.
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
//! - Namespaces: own PID (`/proc` shows the sandbox's processes only; PID 1 is bwrap's reaper),
//!   IPC, UTS and (if possible) cgroup namespaces. `no-network` = an empty network namespace
//!   (loopback only); `public` = the host's network. `allowlist` is not supported (refused when
//!   the plan is validated). The policy is the request's `baseline_network_policy`; the
//!   provider cannot switch policies at run time, which the default plan validation enforces
//!   (`set_network_policy` accepts only the policy the session has).
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

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentcompass_plugin_api::contracts::{
    ComponentInfo, ComponentKind, ConfigField, ConfigSchema, ConfigType, EnvironmentSetup,
    ExecCommand, ExecRequest, ExecResult, ExecutionPlan, JsonMap, NetworkMode, NetworkPolicy,
    OpenEnvironmentRequest, ProviderCapabilities, SessionInfo,
};
use agentcompass_plugin_api::sdk::validate::validate_against_capabilities;
use agentcompass_plugin_api::sdk::{
    async_trait, Ctx, EnvironmentProvider, EnvironmentSession, SessionRef,
};
use agentcompass_plugin_api::{Error, Result};
use serde_json::{json, Value};
use tokio::process::{Child, Command};

use super::files::{
    blocking, copy_file, copy_tree, create_private_dir, random_suffix, remove_owned_dir, sanitise,
    transfer_error,
};
use super::process::{kill_detached, run_captured, timeout_duration, GroupGuard};
use crate::{Builtin, BuiltinFactory};

/// Provider id.
pub const ID: &str = "sandbox";

/// One-line description.
pub const DESCRIPTION: &str = "A per-task Linux namespace sandbox (bubblewrap): read-only root, \
     private /app /logs /tests /solution /tmp, own PID namespace, no-network enforced";

/// The error when the bwrap binary cannot be found.
pub const INSTALL_HINT: &str =
    "bwrap not found: install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)";

/// Name prefix of the host directories this provider creates (and alone removes).
const OWNED_PREFIX: &str = "agentcompass-sandbox-";

/// The working directory when `setup.workdir` is not given.
const DEFAULT_WORKDIR: &str = "/app";

/// `PATH` inside the sandbox unless a binding sets it.
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// `HOME` inside the sandbox unless a binding sets it.
const DEFAULT_HOME: &str = "/tmp";

/// The private writable mounts besides the working directory, with their host subdirectory
/// names and modes.
const FIXED_MOUNTS: [(&str, &str, u32); 4] = [
    ("/logs", "logs", 0o755),
    ("/tests", "tests", 0o755),
    ("/solution", "solution", 0o755),
    ("/tmp", "tmp", 0o1777),
];

/// Where only the kernel's file systems are mounted (no host mapping).
const KERNEL_DIRS: [&str; 2] = ["/proc", "/dev"];

/// How long the start-up probe of a sandbox shape may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// Symlinks followed while resolving one path before giving up (the kernel's limit).
const MAX_SYMLINKS: usize = 40;

/// Sandbox shapes whose bwrap arguments are kept; the cache starts over beyond that.
const MAX_TEMPLATES: usize = 64;

/// A listed directory modified less than this long ago may change again within the same
/// timestamp tick, unnoticed: its mirror is used once, not cached.
const SETTLE_TIME: Duration = Duration::from_secs(2);

/// Variables the C library removes from a setuid program's environment (they reach the
/// sandbox only through `--setenv` when bwrap is setuid).
const SECURE_MODE_DROPPED: [&str; 13] = [
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

/// The registry entry.
pub fn builtin() -> Builtin {
    Builtin {
        info: info(),
        factory: BuiltinFactory::Environment(make),
    }
}

/// What the provider says about itself.
pub fn info() -> ComponentInfo {
    ComponentInfo::new(ComponentKind::Environment, ID, DESCRIPTION).with_schema(config_schema())
}

fn config_schema() -> ConfigSchema {
    ConfigSchema::empty()
        .field(ConfigField::new(
            "bwrap",
            ConfigType::String,
            json!("bwrap"),
            "Path of the bwrap binary (bubblewrap), or a name looked up in PATH",
        ))
        .field(ConfigField::new(
            "root",
            ConfigType::String,
            Value::Null,
            "A local root filesystem directory mounted read-only as `/` (default: \
             `setup.image` when it is an absolute directory path, else the host root `/`)",
        ))
}

fn make() -> Result<Arc<dyn EnvironmentProvider>> {
    Ok(Arc::new(SandboxProvider::default()))
}

/// The provider's parameters.
struct Config {
    bwrap: String,
    root: Option<String>,
}

impl Config {
    fn parse(params: &JsonMap) -> Result<Config> {
        let problems = config_schema().validate(params);
        if !problems.is_empty() {
            return Err(Error::invalid_input(format!(
                "environment `{ID}`: {}",
                problems.join("; ")
            )));
        }
        let text = |key: &str| -> Result<Option<String>> {
            match params.get(key).and_then(Value::as_str) {
                Some("") => Err(Error::invalid_input(format!(
                    "environment `{ID}`: parameter `{key}` must not be empty"
                ))),
                other => Ok(other.map(str::to_string)),
            }
        };
        Ok(Config {
            bwrap: text("bwrap")?.unwrap_or_else(|| "bwrap".to_string()),
            root: text("root")?,
        })
    }
}

/// The sandbox path of the working directory: absolute, normalised, not `/` and not under
/// `/proc` or `/dev`.
fn workdir_of(setup: &EnvironmentSetup) -> Result<PathBuf> {
    let given = setup.workdir.as_deref().unwrap_or(DEFAULT_WORKDIR);
    let bad = |why: &str| {
        Error::invalid_input(format!("environment `{ID}`: setup.workdir `{given}` {why}"))
    };
    let path = Path::new(given);
    if !path.is_absolute() {
        return Err(bad("must be an absolute path"));
    }
    let mut normal = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::Normal(name) => normal.push(name),
            Component::ParentDir => return Err(bad("must not contain `..`")),
            _ => {}
        }
    }
    if normal == Path::new("/") {
        return Err(bad("must not be the root directory"));
    }
    if KERNEL_DIRS.iter().any(|k| normal.starts_with(k)) {
        return Err(bad("must not be under /proc or /dev"));
    }
    Ok(normal)
}

/// Where `bwrap` names an executable file: itself when it contains a slash, else the first
/// match in `PATH`.
fn find_program(bwrap: &str) -> Option<PathBuf> {
    let executable = |path: &Path| {
        fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if bwrap.contains('/') {
        let path = std::path::absolute(bwrap).ok()?;
        return executable(&path).then_some(path);
    }
    let search = std::env::var_os("PATH").unwrap_or_else(|| OsString::from(DEFAULT_PATH));
    std::env::split_paths(&search)
        .map(|dir| dir.join(bwrap))
        .find(|path| path.is_absolute() && executable(path))
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
            network_modes: vec![NetworkMode::Public, NetworkMode::NoNetwork],
            allowlist_entry_types: Vec::new(),
            dynamic_network_policy: false,
            resource_fields: Vec::new(),
            operating_systems: vec!["linux".to_string()],
            task_env: true,
            startup_env: false,
        })
    }

    fn validate_plan(&self, plan: &ExecutionPlan) -> Result<()> {
        validate_against_capabilities(&self.capabilities()?, plan)?;
        let environments =
            std::iter::once(&plan.environment).chain(plan.evaluation_environment.as_ref());
        for environment in environments {
            Config::parse(&environment.params)?;
            workdir_of(&environment.setup)?;
        }
        Ok(())
    }

    async fn open(&self, _ctx: &Ctx, request: &OpenEnvironmentRequest) -> Result<SessionRef> {
        let config = Config::parse(&request.environment.params)?;
        let workdir = workdir_of(&request.environment.setup)?;
        let no_network = match request.baseline_network_policy.network_mode {
            NetworkMode::Public => false,
            NetworkMode::NoNetwork => true,
            NetworkMode::Allowlist => {
                return Err(Error::unsupported(format!(
                    "environment `{ID}` cannot enforce network mode `allowlist` (it supports: \
                     public, no-network)"
                )))
            }
        };
        let root_param = config.root.clone();
        let image = request.environment.setup.image.clone();
        let bwrap_name = config.bwrap.clone();
        let prefix = format!(
            "{OWNED_PREFIX}{}-{}-",
            sanitise(&request.task_id),
            request.attempt
        );
        let templates = self.templates.clone();
        let (layout, dir) = blocking(ID, move || {
            let bwrap = find_program(&bwrap_name).ok_or_else(|| {
                Error::environment(format!(
                    "environment `{ID}`: {INSTALL_HINT} (looked for `{bwrap_name}`)"
                ))
            })?;
            let root = choose_root(root_param.as_deref(), image.as_deref())?;
            let base = std::env::temp_dir();
            let base = fs::canonicalize(&base)
                .or_else(|_| std::path::absolute(&base))
                .unwrap_or(base);
            let reserved = base.join(format!("{prefix}{}", random_suffix()));
            let dir = create_private_dir(&reserved, &prefix, ID)?;
            let shape = Shape {
                root,
                workdir,
                no_network,
                temp_base: base,
            };
            let built = Layout::create_cached(&dir, bwrap, shape, &templates);
            match built {
                Ok(layout) => Ok((layout, dir)),
                Err(e) => {
                    let _ = fs::remove_dir_all(&dir);
                    Err(e)
                }
            }
        })
        .await?;
        let layout = Arc::new(layout);
        if let Err(e) = self.probe(&layout).await {
            remove_owned_dir(dir, ID).await?;
            return Err(e);
        }
        let id = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        tracing::debug!(
            provider = ID,
            dir = %dir.display(),
            root = %layout.root.display(),
            no_network,
            "opened environment"
        );
        Ok(Arc::new(SandboxSession {
            id,
            dir,
            layout,
            env: request.resolved_env.clone(),
            detached: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
        }))
    }

    async fn close(&self, _ctx: &Ctx, close_params: &Value) -> Result<()> {
        let Some(dir) = close_params.get("dir").and_then(Value::as_str) else {
            return Ok(());
        };
        let path = PathBuf::from(dir);
        let created_here = path.is_absolute()
            && path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(OWNED_PREFIX));
        if !created_here {
            return Err(Error::invalid_input(format!(
                "environment `{ID}`: refusing to remove `{dir}`: not a directory this provider \
                 creates"
            )));
        }
        remove_owned_dir(path, ID).await
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
        let mut cmd = layout.command(Path::new("/"));
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

/// The root filesystem: the `root` parameter, else `setup.image` when it is an absolute path
/// (both must be existing directories), else the host root.
fn choose_root(param: Option<&str>, image: Option<&str>) -> Result<PathBuf> {
    let (given, source) = match (param, image) {
        (Some(root), _) => (root, "parameter `root`"),
        (None, Some(image)) if Path::new(image).is_absolute() => (image, "setup.image"),
        (None, image) => {
            if let Some(image) = image {
                tracing::debug!(
                    provider = ID,
                    image,
                    "setup.image is not a local directory: using the host root"
                );
            }
            return Ok(PathBuf::from("/"));
        }
    };
    let path = std::path::absolute(given).and_then(fs::canonicalize);
    match path {
        Ok(path) if path.is_dir() => Ok(path),
        Ok(_) => Err(Error::invalid_input(format!(
            "environment `{ID}`: {source} `{given}` is not a directory"
        ))),
        Err(e) => Err(Error::invalid_input(format!(
            "environment `{ID}`: {source} `{given}`: {e}"
        ))),
    }
}

/// One private writable mount.
#[derive(Debug, Clone)]
struct Mount {
    /// Where it appears in the sandbox.
    sandbox: PathBuf,
    /// The host directory behind it.
    host: PathBuf,
}

/// What a sandbox path is on the host.
enum Place {
    /// Under a writable mount.
    Writable(PathBuf),
    /// Under the read-only root.
    ReadOnly(PathBuf),
    /// Only commands can see it.
    Hidden(&'static str),
}

/// What fixes a sandbox's bwrap arguments, apart from the session's own directories.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Shape {
    /// The root filesystem (canonical).
    root: PathBuf,
    /// The working directory in the sandbox.
    workdir: PathBuf,
    /// Whether the sandbox has its own, empty network namespace.
    no_network: bool,
    /// The host's temporary directory (canonical), hidden when the root shows it.
    temp_base: PathBuf,
}

/// The bwrap arguments of each sandbox shape.
type TemplateCache = Mutex<HashMap<Shape, Arc<Template>>>;

/// When a listed directory was last changed, as far as its metadata tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DirStamp {
    dev: u64,
    ino: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl DirStamp {
    /// The stamp of `dir` now.
    fn of(dir: &Path) -> io::Result<DirStamp> {
        let meta = fs::metadata(dir)?;
        Ok(DirStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        })
    }

    /// Whether the listing last changed more than [`SETTLE_TIME`] ago, so that any later
    /// change gets a later modification time. (A change of the metadata alone, which moves
    /// only the change time, does not change the listing.)
    fn settled(&self) -> bool {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        let modified = self.mtime.0 as f64 + self.mtime.1 as f64 / 1e9;
        now - modified > SETTLE_TIME.as_secs_f64()
    }
}

/// The bwrap arguments fixed by a sandbox's [`Shape`]: all but the `--bind`s of the session's
/// own directories, which go between `head` and `tail`.
struct Template {
    /// Sandbox paths replaced by an empty read-only directory.
    hidden: Vec<PathBuf>,
    /// Namespaces, the directories of every mount point, `/dev` and `/proc`.
    head: Vec<OsString>,
    /// The read-only mirror of the root (binds with the fewest submounts first), then
    /// `--remount-ro /`.
    tail: Vec<OsString>,
    /// The root directories the mirror lists, as they were before they were listed.
    listed: Vec<(PathBuf, DirStamp)>,
}

impl Template {
    /// Computes the arguments for `shape`, with the sandbox mount points `mounts` (sorted,
    /// parents first).
    fn build(shape: &Shape, mounts: &[Mount]) -> io::Result<Template> {
        let hidden = hidden_paths(&shape.root, &shape.temp_base, mounts);
        let mut head: Vec<OsString> = [
            "--die-with-parent",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        if shape.no_network {
            head.push("--unshare-net".into());
        }
        let mut targets: BTreeSet<PathBuf> = mounts.iter().map(|m| m.sandbox.clone()).collect();
        targets.extend(KERNEL_DIRS.iter().map(PathBuf::from));
        targets.extend(hidden.iter().cloned());
        // Every target and its parents exist on the tmpfs before anything is mounted.
        let mut dirs = BTreeSet::new();
        for target in &targets {
            dirs.extend(
                target
                    .ancestors()
                    .filter(|a| *a != Path::new("/"))
                    .map(Path::to_path_buf),
            );
        }
        for dir in dirs {
            push(&mut head, ["--dir".as_ref(), dir.as_os_str()]);
        }
        push(
            &mut head,
            ["--dev", "/dev", "--proc", "/proc"].map(OsStr::new),
        );
        let mut mirrored = Mirror::default();
        mirror(&shape.root, Path::new("/"), &targets, &mut mirrored)?;
        let mut tail = Vec::new();
        for (target, link) in &mirrored.symlinks {
            push(
                &mut tail,
                ["--symlink".as_ref(), target.as_os_str(), link.as_os_str()],
            );
        }
        // bwrap reads the whole mount table after every bind: the table grows least if the
        // binds that bring submounts along come last.
        let points = mount_points();
        let mut binds = mirrored.binds;
        binds.sort_by_cached_key(|(host, _)| points.iter().filter(|p| p.starts_with(host)).count());
        for (host, inside) in &binds {
            push(
                &mut tail,
                [
                    "--ro-bind-try".as_ref(),
                    host.as_os_str(),
                    inside.as_os_str(),
                ],
            );
        }
        push(&mut tail, ["--remount-ro", "/"].map(OsStr::new));
        Ok(Template {
            hidden,
            head,
            tail,
            listed: mirrored.listed,
        })
    }

    /// The arguments for `shape` from `cache`, if the directories they list have not changed
    /// since, else computed (and cached, once those directories have settled).
    fn cached(cache: &TemplateCache, shape: &Shape, mounts: &[Mount]) -> io::Result<Arc<Template>> {
        let known = cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(shape)
            .cloned();
        if let Some(template) = known {
            if template.is_current() {
                return Ok(template);
            }
        }
        let template = Arc::new(Template::build(shape, mounts)?);
        let mut cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
        if template.listed.iter().all(|(_, stamp)| stamp.settled()) {
            if cache.len() >= MAX_TEMPLATES {
                cache.clear();
            }
            cache.insert(shape.clone(), template.clone());
        } else {
            cache.remove(shape);
        }
        Ok(template)
    }

    /// Whether every listed directory is still as it was when it was listed.
    fn is_current(&self) -> bool {
        self.listed
            .iter()
            .all(|(dir, stamp)| DirStamp::of(dir).is_ok_and(|now| now == *stamp))
    }
}

/// The fixed shape of one session's sandbox: everything but the command.
struct Layout {
    bwrap: PathBuf,
    root: PathBuf,
    workdir: PathBuf,
    no_network: bool,
    /// bwrap is setuid: variables the C library drops must go through `--setenv`.
    setuid: bool,
    /// Parents before children.
    mounts: Vec<Mount>,
    /// Sandbox paths replaced by an empty read-only directory.
    hidden: Vec<PathBuf>,
    /// The arguments shared by every sandbox of this shape.
    template: Arc<Template>,
    /// The `--bind`s of this session's writable directories.
    binds: Vec<OsString>,
}

impl Layout {
    /// Creates the writable host directories under `dir` and computes the bwrap arguments
    /// (without a cache).
    #[cfg(test)]
    fn create(
        dir: &Path,
        bwrap: PathBuf,
        root: PathBuf,
        workdir: PathBuf,
        no_network: bool,
        temp_base: &Path,
    ) -> Result<Layout> {
        let shape = Shape {
            root,
            workdir,
            no_network,
            temp_base: temp_base.to_path_buf(),
        };
        Layout::create_cached(dir, bwrap, shape, &TemplateCache::default())
    }

    /// [`Layout::create`], with the shape's arguments taken from (or added to) `cache`.
    fn create_cached(
        dir: &Path,
        bwrap: PathBuf,
        shape: Shape,
        cache: &TemplateCache,
    ) -> Result<Layout> {
        let fail = |what: &Path, e: io::Error| {
            Error::environment(format!(
                "environment `{ID}`: cannot create `{}`: {e}",
                what.display()
            ))
        };
        let workdir = shape.workdir.clone();
        let mut specs: Vec<(PathBuf, &str, u32)> = Vec::new();
        if !FIXED_MOUNTS.iter().any(|(p, _, _)| workdir == Path::new(p)) {
            specs.push((workdir.clone(), "workdir", 0o755));
        }
        specs.extend(
            FIXED_MOUNTS
                .iter()
                .map(|(p, name, mode)| (PathBuf::from(p), *name, *mode)),
        );
        let mut mounts = Vec::new();
        for (sandbox, name, mode) in specs {
            let host = dir.join(name);
            fs::DirBuilder::new()
                .mode(mode)
                .create(&host)
                .and_then(|()| fs::set_permissions(&host, fs::Permissions::from_mode(mode)))
                .map_err(|e| fail(&host, e))?;
            mounts.push(Mount { sandbox, host });
        }
        mounts.sort_by(|a, b| a.sandbox.cmp(&b.sandbox));
        // A mount inside another one: its mount point is made in the outer host directory
        // now, not by bwrap while the sandbox is being built.
        for (i, inner) in mounts.iter().enumerate() {
            if let Some(outer) = mounts[..i]
                .iter()
                .rev()
                .find(|m| inner.sandbox.starts_with(&m.sandbox))
            {
                let point = outer.host.join(
                    inner
                        .sandbox
                        .strip_prefix(&outer.sandbox)
                        .unwrap_or(Path::new("")),
                );
                fs::create_dir_all(&point).map_err(|e| fail(&point, e))?;
            }
        }
        let template = Template::cached(cache, &shape, &mounts).map_err(|e| {
            Error::environment(format!(
                "environment `{ID}`: cannot read the root filesystem `{}`: {e}",
                shape.root.display()
            ))
        })?;
        let mut binds = Vec::with_capacity(mounts.len() * 3);
        for mount in &mounts {
            push(
                &mut binds,
                [
                    "--bind".as_ref(),
                    mount.host.as_os_str(),
                    mount.sandbox.as_os_str(),
                ],
            );
        }
        let setuid = fs::metadata(&bwrap).is_ok_and(|m| m.permissions().mode() & 0o4000 != 0);
        Ok(Layout {
            bwrap,
            root: shape.root,
            workdir,
            no_network: shape.no_network,
            setuid,
            mounts,
            hidden: template.hidden.clone(),
            template,
            binds,
        })
    }

    /// A bwrap command for this sandbox, up to `--chdir cwd` (environment not set yet):
    /// namespaces and mount points, the session's writable binds, then the read-only mirror.
    fn command(&self, cwd: &Path) -> Command {
        let mut cmd = Command::new(&self.bwrap);
        cmd.args(&self.template.head)
            .args(&self.binds)
            .args(&self.template.tail)
            .arg("--chdir")
            .arg(cwd);
        cmd
    }

    /// A session path as an absolute, lexically clean sandbox path (`..` kept for the
    /// resolution): relative paths are under the working directory.
    fn absolute(&self, path: &str) -> PathBuf {
        if Path::new(path).is_absolute() {
            PathBuf::from(path)
        } else {
            self.workdir.join(path)
        }
    }

    /// Where a resolved (symlink-free, `..`-free) sandbox path is on the host.
    fn place(&self, sandbox: &Path) -> Place {
        if let Some(mount) = self
            .mounts
            .iter()
            .rev()
            .find(|m| sandbox.starts_with(&m.sandbox))
        {
            let rest = sandbox
                .strip_prefix(&mount.sandbox)
                .unwrap_or(Path::new(""));
            return Place::Writable(mount.host.join(rest));
        }
        if self.hidden.iter().any(|h| sandbox.starts_with(h)) {
            return Place::Hidden("hidden in the sandbox (the host's temporary directory)");
        }
        if KERNEL_DIRS.iter().any(|k| sandbox.starts_with(k)) {
            return Place::Hidden("only visible to commands (use exec)");
        }
        let rest = sandbox.strip_prefix("/").unwrap_or(sandbox);
        Place::ReadOnly(self.root.join(rest))
    }

    /// Whether `sandbox` is a directory made for the sandbox's own structure (a strict parent
    /// of a mount point or hidden path): those are plain directories, whatever the root has.
    fn is_structural(&self, sandbox: &Path) -> bool {
        self.mounts
            .iter()
            .map(|m| &m.sandbox)
            .chain(&self.hidden)
            .chain(&[PathBuf::from("/proc"), PathBuf::from("/dev")])
            .any(|t| t != sandbox && t.starts_with(sandbox))
    }

    /// Resolves a session path as the sandbox would, following every symlink (an absolute
    /// target is a sandbox path) and `..`. Blocking.
    fn resolve(&self, op: &str, path: &str) -> Result<Resolved> {
        let mut pending: VecDeque<OsString> = VecDeque::new();
        push_components(&mut pending, &self.absolute(path), false);
        let mut current = PathBuf::from("/");
        let mut links = 0;
        while let Some(name) = pending.pop_front() {
            if name == ".." {
                current.pop();
                continue;
            }
            let next = current.join(&name);
            let host = match self.place(&next) {
                Place::Writable(host) | Place::ReadOnly(host) => host,
                Place::Hidden(why) => {
                    return Err(Error::environment(format!("{op}: `{path}` is {why}")))
                }
            };
            let link = if self.is_structural(&next) {
                None
            } else {
                fs::symlink_metadata(&host)
                    .ok()
                    .filter(|m| m.file_type().is_symlink())
                    .and_then(|_| fs::read_link(&host).ok())
            };
            match link {
                Some(target) => {
                    links += 1;
                    if links > MAX_SYMLINKS {
                        return Err(Error::environment(format!(
                            "{op}: `{path}`: too many levels of symbolic links"
                        )));
                    }
                    if target.is_absolute() {
                        current = PathBuf::from("/");
                    }
                    push_components(&mut pending, &target, true);
                }
                None => current = next,
            }
        }
        match self.place(&current) {
            Place::Writable(host) => Ok(Resolved {
                host,
                sandbox: current,
                writable: true,
            }),
            Place::ReadOnly(host) => Ok(Resolved {
                host,
                sandbox: current,
                writable: false,
            }),
            Place::Hidden(why) => Err(Error::environment(format!("{op}: `{path}` is {why}"))),
        }
    }

    /// [`Layout::resolve`] for a write: the path must be under a writable mount.
    fn resolve_writable(&self, op: &str, path: &str) -> Result<Resolved> {
        let resolved = self.resolve(op, path)?;
        if resolved.writable {
            return Ok(resolved);
        }
        let via = if resolved.sandbox == self.absolute(path) {
            String::new()
        } else {
            format!(" (it resolves to `{}`)", resolved.sandbox.display())
        };
        let writable: Vec<String> = self
            .mounts
            .iter()
            .map(|m| m.sandbox.display().to_string())
            .collect();
        Err(Error::environment(format!(
            "{op}: `{path}` is read-only in the sandbox{via}; writable: {}",
            writable.join(", ")
        )))
    }
}

/// A session path resolved to the host.
struct Resolved {
    host: PathBuf,
    sandbox: PathBuf,
    writable: bool,
}

/// Adds the components of `path` to the front (`front`) or back of `pending`.
fn push_components(pending: &mut VecDeque<OsString>, path: &Path, front: bool) {
    let names: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect();
    if front {
        for name in names.into_iter().rev() {
            pending.push_front(name);
        }
    } else {
        pending.extend(names);
    }
}

fn push<'a>(args: &mut Vec<OsString>, items: impl IntoIterator<Item = &'a OsStr>) {
    args.extend(items.into_iter().map(OsStr::to_os_string));
}

/// The host's temporary directory, as a sandbox path, when the sandbox would otherwise see it
/// (it holds every session's private directories).
fn hidden_paths(root: &Path, temp_base: &Path, mounts: &[Mount]) -> Vec<PathBuf> {
    let Ok(rest) = temp_base.strip_prefix(root) else {
        return Vec::new();
    };
    let inside = Path::new("/").join(rest);
    if inside == Path::new("/") {
        tracing::warn!(
            provider = ID,
            "the temporary directory is the sandbox root: it cannot be hidden"
        );
        return Vec::new();
    }
    let covered = mounts.iter().any(|m| inside.starts_with(&m.sandbox))
        || KERNEL_DIRS.iter().any(|k| inside.starts_with(k));
    if covered {
        Vec::new()
    } else {
        vec![inside]
    }
}

/// The read-only mirror of a root, as [`mirror`] finds it.
#[derive(Default)]
struct Mirror {
    /// `(target, link)`: symlinks recreated in the sandbox.
    symlinks: Vec<(PathBuf, PathBuf)>,
    /// `(host path, sandbox path)`: entries bound read-only.
    binds: Vec<(PathBuf, PathBuf)>,
    /// The host directories listed, with their stamps from before they were listed.
    listed: Vec<(PathBuf, DirStamp)>,
}

/// Mirrors the directory `dir` of `root` read-only into the sandbox's tmpfs root: every entry
/// is bound (or, for a symlink, recreated), except the targets (mount points, hidden paths)
/// and their parents, which become plain directories whose own entries are mirrored the same
/// way.
fn mirror(
    root: &Path,
    dir: &Path,
    targets: &BTreeSet<PathBuf>,
    out: &mut Mirror,
) -> io::Result<()> {
    let host_dir = root.join(dir.strip_prefix("/").unwrap_or(dir));
    out.listed
        .push((host_dir.clone(), DirStamp::of(&host_dir)?));
    let mut entries = fs::read_dir(&host_dir)?.collect::<io::Result<Vec<_>>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let inside = dir.join(entry.file_name());
        if targets.contains(&inside) {
            continue;
        }
        let kind = entry.file_type()?;
        if targets.iter().any(|t| t.starts_with(&inside)) {
            // A parent of a target: made a directory by the caller, its entries mirrored
            // (those of a real directory only: a symlink's are not followed).
            if kind.is_dir() {
                mirror(root, &inside, targets, out)?;
            }
        } else if kind.is_symlink() {
            out.symlinks.push((fs::read_link(entry.path())?, inside));
        } else {
            out.binds.push((entry.path(), inside));
        }
    }
    Ok(())
}

/// The mount points of this process's mount namespace (host paths), or none if
/// `/proc/self/mountinfo` cannot be read.
fn mount_points() -> Vec<PathBuf> {
    let Ok(table) = fs::read("/proc/self/mountinfo") else {
        return Vec::new();
    };
    table
        .split(|b| *b == b'\n')
        .filter_map(|line| line.split(|b| *b == b' ').nth(4))
        .map(unescape_mountinfo)
        .collect()
}

/// A mountinfo path field with its octal escapes (`\040` for a space) decoded.
fn unescape_mountinfo(field: &[u8]) -> PathBuf {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let octal = field
            .get(i + 1..i + 4)
            .filter(|d| field[i] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match octal {
            Some(d) => {
                let value = d.iter().fold(0u32, |v, b| v * 8 + u32::from(b - b'0'));
                out.push(u8::try_from(value).unwrap_or(b'?'));
                i += 4;
            }
            None => {
                out.push(field[i]);
                i += 1;
            }
        }
    }
    PathBuf::from(OsStr::from_bytes(&out))
}

/// bwrap's own messages for a sandbox it could not finish (mounts, working directory,
/// namespaces) or a command it could not start.
const SETUP_FAILURES: [&str; 4] = ["execvp ", "Can't ", "No permissions ", "Creating new "];

/// If bwrap itself failed before the command started (it exits 1 with one `bwrap: ` line
/// naming a set-up step), the error to return instead of an exit code.
fn setup_failure(result: &ExecResult, program: &str, cwd: &Path) -> Option<Error> {
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

/// One open sandbox. Deliberately not `Debug`: it holds resolved secrets.
struct SandboxSession {
    id: String,
    /// The private host directory holding the writable mounts.
    dir: PathBuf,
    layout: Arc<Layout>,
    env: BTreeMap<String, String>,
    /// Detached commands, kept unreaped so their process-group ids stay reserved until close.
    detached: Mutex<Vec<Child>>,
    closed: AtomicBool,
}

impl SandboxSession {
    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::SeqCst) {
            Err(Error::environment(format!(
                "environment `{ID}`: the session is closed"
            )))
        } else {
            Ok(())
        }
    }

    fn take_detached(&self) -> Vec<Child> {
        std::mem::take(&mut *self.detached.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Runs `f` with the layout on the blocking pool, once the session is known to be open.
    async fn with_layout<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Layout) -> Result<T> + Send + 'static,
    {
        self.check_open()?;
        let layout = self.layout.clone();
        blocking(ID, move || f(&layout)).await
    }

    async fn probe(&self, op: &'static str, path: &str) -> Result<Option<fs::Metadata>> {
        let path = path.to_string();
        self.with_layout(move |layout| {
            let resolved = layout.resolve(op, &path)?;
            match fs::metadata(&resolved.host) {
                Ok(meta) => Ok(Some(meta)),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                    ) =>
                {
                    Ok(None)
                }
                Err(e) => Err(Error::environment(format!(
                    "{op}: cannot inspect `{path}`: {e}"
                ))),
            }
        })
        .await
    }
}

impl Drop for SandboxSession {
    fn drop(&mut self) {
        for child in self.take_detached() {
            GroupGuard::new(child.id()).kill();
        }
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
        let cwd = match &request.cwd {
            Some(cwd) => self.layout.absolute(cwd),
            None => self.layout.workdir.clone(),
        };
        let shown = cwd.to_string_lossy().into_owned();
        let is_dir = self
            .with_layout(move |layout| {
                Ok(match layout.resolve("exec", &shown) {
                    Ok(resolved) => fs::metadata(resolved.host).is_ok_and(|m| m.is_dir()),
                    // /proc, /dev: bwrap says whether it exists.
                    Err(_) => true,
                })
            })
            .await?;
        if !is_dir {
            return Err(Error::environment(format!(
                "exec: working directory `{}` does not exist or is not a directory",
                cwd.display()
            )));
        }
        let layout = &self.layout;
        let mut cmd = layout.command(&cwd);
        cmd.env_clear()
            .env("PATH", DEFAULT_PATH)
            .env("HOME", DEFAULT_HOME);
        for (key, value) in &env {
            if layout.setuid
                && (key.starts_with("LD_") || SECURE_MODE_DROPPED.contains(&key.as_str()))
            {
                cmd.arg("--setenv").arg(key).arg(value);
            }
            cmd.env(key, value);
        }
        cmd.arg("--");
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
        let bwrap = layout.bwrap.clone();
        let start_failed = move |e| bwrap_start_error(&bwrap, e);
        if request.detach {
            let child = super::process::spawn_detached(cmd, start_failed)?;
            self.detached
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(child);
            if self.closed.load(Ordering::SeqCst) {
                // Closed while starting: close may have missed it.
                for child in self.take_detached() {
                    kill_detached(child).await;
                }
                self.check_open()?;
            }
            return Ok(ExecResult::new(0, "", ""));
        }
        let result = run_captured(cmd, program, timeout, start_failed).await?;
        match setup_failure(&result, program, &cwd) {
            Some(error) => Err(error),
            None => Ok(result),
        }
    }

    async fn upload(&self, src: &Path, dst: &str) -> Result<()> {
        let (src, dst) = (src.to_path_buf(), dst.to_string());
        self.with_layout(move |layout| {
            let target = layout.resolve_writable("upload", &dst)?;
            copy_file(&src, &target.host)
                .map_err(|e| transfer_error("upload", &src, Path::new(&dst), e))
        })
        .await
    }

    async fn download(&self, src: &str, dst: &Path) -> Result<()> {
        let (src, dst) = (src.to_string(), dst.to_path_buf());
        self.with_layout(move |layout| {
            let source = layout.resolve("download", &src)?;
            copy_file(&source.host, &dst)
                .map_err(|e| transfer_error("download", Path::new(&src), &dst, e))
        })
        .await
    }

    async fn upload_dir(&self, src: &Path, dst: &str) -> Result<()> {
        let (src, dst) = (src.to_path_buf(), dst.to_string());
        self.with_layout(move |layout| {
            let target = layout.resolve_writable("upload_dir", &dst)?;
            copy_tree(&src, &target.host)
                .map_err(|e| transfer_error("upload_dir", &src, Path::new(&dst), e))
        })
        .await
    }

    async fn download_dir(&self, src: &str, dst: &Path) -> Result<()> {
        let (src, dst) = (src.to_string(), dst.to_path_buf());
        self.with_layout(move |layout| {
            let source = layout.resolve("download_dir", &src)?;
            copy_tree(&source.host, &dst)
                .map_err(|e| transfer_error("download_dir", Path::new(&src), &dst, e))
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

    /// Only the policy the sandbox was opened with is accepted: its network namespace is
    /// fixed for its lifetime.
    async fn set_network_policy(&self, policy: &NetworkPolicy) -> Result<()> {
        let current = if self.layout.no_network {
            NetworkPolicy::no_network()
        } else {
            NetworkPolicy::public()
        };
        if *policy == current {
            Ok(())
        } else {
            Err(Error::unsupported(format!(
                "environment `{ID}` cannot switch from network mode `{}` to `{}` at run time",
                current.network_mode, policy.network_mode
            )))
        }
    }

    async fn close(&self) -> Result<()> {
        self.closed.store(true, Ordering::SeqCst);
        for child in self.take_detached() {
            kill_detached(child).await;
        }
        remove_owned_dir(self.dir.clone(), ID).await?;
        tracing::debug!(provider = ID, dir = %self.dir.display(), "removed sandbox directory");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentcompass_plugin_api::contracts::EnvironmentSpec;
    use agentcompass_plugin_api::ErrorKind;
    use std::time::Instant;

    struct Opened {
        session: SessionRef,
        /// The private host directory.
        dir: PathBuf,
    }

    fn request(params: JsonMap, policy: NetworkPolicy) -> OpenEnvironmentRequest {
        let mut spec = EnvironmentSpec::new(ID);
        spec.params = params;
        let mut req = OpenEnvironmentRequest::new("run", "task/1 ü", spec);
        req.baseline_network_policy = policy;
        req
    }

    async fn open_request(req: &OpenEnvironmentRequest) -> Opened {
        let session = SandboxProvider::default()
            .open(&Ctx::detached(), req)
            .await
            .unwrap_or_else(|e| panic!("cannot open a sandbox: {e}"));
        let dir = PathBuf::from(session.info().close_params["dir"].as_str().unwrap());
        Opened { session, dir }
    }

    async fn open_policy(policy: NetworkPolicy) -> Opened {
        open_request(&request(JsonMap::new(), policy)).await
    }

    async fn open() -> Opened {
        open_policy(NetworkPolicy::public()).await
    }

    async fn sh(session: &SessionRef, line: &str) -> ExecResult {
        session.exec(ExecRequest::shell(line)).await.unwrap()
    }

    /// A number no other test (or test process) uses, for a recognisable `sleep` argument.
    fn marker() -> String {
        let n = u64::from_str_radix(&random_suffix()[..8], 16).unwrap() % 1_000_000;
        format!("1000.{n:06}")
    }

    /// Host processes whose command line is `sleep <marker>` and that are not zombies.
    fn sleepers(marker: &str) -> Vec<String> {
        let wanted = format!("sleep\0{marker}\0");
        let mut found = Vec::new();
        for entry in fs::read_dir("/proc").unwrap().flatten() {
            let pid = entry.file_name().to_string_lossy().into_owned();
            if !pid.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let cmdline = fs::read(entry.path().join("cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&cmdline) != wanted {
                continue;
            }
            let zombie = fs::read_to_string(entry.path().join("stat")).is_ok_and(|stat| {
                stat.rsplit_once(')')
                    .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
            });
            if !zombie {
                found.push(pid);
            }
        }
        found
    }

    async fn wait_for_sleepers(marker: &str, running: bool) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if sleepers(marker).is_empty() != running {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        false
    }

    #[test]
    fn registration_capabilities_and_schema() {
        let all = crate::all();
        let ids: Vec<&str> = all.iter().map(|b| b.info.id.as_str()).collect();
        let here = ids.iter().position(|id| *id == ID).unwrap();
        assert_eq!(ids[here - 1], super::super::host_process::ID);
        let entry = &all[here];
        assert_eq!(entry.info.kind, ComponentKind::Environment);
        assert_eq!(entry.info.description, DESCRIPTION);
        assert!(matches!(entry.factory, BuiltinFactory::Environment(_)));
        let bwrap = entry.info.config_schema.get("bwrap").unwrap();
        assert_eq!(
            (bwrap.kind, &bwrap.default),
            (ConfigType::String, &json!("bwrap"))
        );
        let root = entry.info.config_schema.get("root").unwrap();
        assert_eq!(
            (root.kind, &root.default),
            (ConfigType::String, &Value::Null)
        );
        let caps = SandboxProvider::default().capabilities().unwrap();
        assert_eq!(
            caps.network_modes,
            vec![NetworkMode::Public, NetworkMode::NoNetwork]
        );
        assert!(caps.allowlist_entry_types.is_empty());
        assert!(caps.task_env && !caps.startup_env && !caps.dynamic_network_policy);
        assert_eq!(caps.operating_systems, vec!["linux".to_string()]);
        assert!(caps.resource_fields.is_empty());
    }

    #[test]
    fn validate_plan_refuses_what_it_cannot_enforce() {
        let provider = SandboxProvider::default();
        let plan = |policy: NetworkPolicy| ExecutionPlan {
            environment: EnvironmentSpec::new(ID),
            baseline_network_policy: Some(policy.clone()),
            run_network_policy: Some(policy),
            ..ExecutionPlan::default()
        };
        provider
            .validate_plan(&plan(NetworkPolicy::public()))
            .unwrap();
        provider
            .validate_plan(&plan(NetworkPolicy::no_network()))
            .unwrap();

        let err = provider
            .validate_plan(&plan(NetworkPolicy::allowlist(["example.com"])))
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Unsupported);
        assert!(
            err.message.contains("`sandbox` cannot enforce")
                && err.message.contains("allowlist")
                && err.message.contains("public, no-network"),
            "{}",
            err.message
        );
        // No run-time switching between the two modes it does support.
        let mut switching = plan(NetworkPolicy::public());
        switching.run_network_policy = Some(NetworkPolicy::no_network());
        let err = provider.validate_plan(&switching).unwrap_err();
        assert!(err.message.contains("cannot switch"), "{}", err.message);

        let mut resources = plan(NetworkPolicy::public());
        resources.environment.resources = Some(Default::default());
        resources.environment.resources.as_mut().unwrap().cpu = Some(1.0);
        assert!(provider.validate_plan(&resources).is_err());
        let mut windows = plan(NetworkPolicy::public());
        windows.environment.setup.os = Some("windows".into());
        assert!(provider.validate_plan(&windows).is_err());

        for bad in ["app", "/", "/proc/x", "/a/../b"] {
            let mut p = plan(NetworkPolicy::public());
            p.environment.setup.workdir = Some(bad.into());
            let err = provider.validate_plan(&p).unwrap_err();
            assert!(
                err.message.contains("setup.workdir"),
                "{bad}: {}",
                err.message
            );
        }
        let mut p = plan(NetworkPolicy::public());
        p.environment.params.insert("image".into(), json!("x"));
        assert!(provider.validate_plan(&p).is_err());
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn missing_bwrap_names_the_package_and_leaves_nothing() {
        let mut params = JsonMap::new();
        params.insert("bwrap".into(), json!("/nonexistent/bwrap"));
        let mut req = request(params, NetworkPolicy::public());
        let task = format!("nobwrap-{}", random_suffix());
        req.task_id = task.clone();
        let err = SandboxProvider::default()
            .open(&Ctx::detached(), &req)
            .await
            .err()
            .unwrap();
        assert_eq!(err.kind, ErrorKind::Environment);
        assert!(err.message.contains(INSTALL_HINT), "{}", err.message);
        assert!(
            err.message.contains("/nonexistent/bwrap"),
            "{}",
            err.message
        );
        let prefix = format!("{OWNED_PREFIX}{task}-");
        let left = fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(&prefix));
        assert!(!left);

        // Allowlist is refused at open too, and bad parameters.
        let err = SandboxProvider::default()
            .open(
                &Ctx::detached(),
                &request(JsonMap::new(), NetworkPolicy::allowlist(["example.com"])),
            )
            .await
            .err()
            .unwrap();
        assert_eq!(err.kind, ErrorKind::Unsupported);
        let mut params = JsonMap::new();
        params.insert("root".into(), json!("/nonexistent/rootfs"));
        let err = SandboxProvider::default()
            .open(&Ctx::detached(), &request(params, NetworkPolicy::public()))
            .await
            .err()
            .unwrap();
        assert!(
            err.message.contains("/nonexistent/rootfs"),
            "{}",
            err.message
        );
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn open_makes_a_private_dir_and_reports_the_sandbox_workdir() {
        let Opened { session, dir } = open().await;
        let info = session.info();
        assert_eq!(info.provider, ID);
        assert_eq!(info.default_workdir.as_deref(), Some("/app"));
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with("agentcompass-sandbox-task_1__-1-"),
            "{name}"
        );
        assert_eq!(info.id, name);
        assert_eq!(info.close_params, json!({"dir": dir.to_str().unwrap()}));
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode(&dir), 0o700);
        for sub in ["workdir", "logs", "tests", "solution"] {
            assert_eq!(mode(&dir.join(sub)), 0o755, "{sub}");
        }
        assert_eq!(mode(&dir.join("tmp")), 0o1777);
        session.close().await.unwrap();
        assert!(!dir.exists());
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn argv_and_shell_exec() {
        let Opened { session, .. } = open().await;
        let r = session
            .exec(ExecRequest::argv([
                "sh",
                "-c",
                "echo out; echo err >&2; exit 3",
            ]))
            .await
            .unwrap();
        assert_eq!(
            (
                r.returncode,
                r.stdout.as_str(),
                r.stderr.as_str(),
                r.timed_out
            ),
            (3, "out\n", "err\n", false)
        );
        let r = session
            .exec(ExecRequest::argv(["printf", "%s|", "a b", "$HOME"]))
            .await
            .unwrap();
        assert_eq!((r.returncode, r.stdout.as_str()), (0, "a b|$HOME|"));
        let r = sh(&session, "echo $((1 + 2)); printf '\\377'").await;
        assert_eq!((r.returncode, r.stdout.as_str()), (0, "3\n\u{fffd}"));
        assert_eq!(sh(&session, "kill -9 $$").await.returncode, 137);
        // A `bwrap:` line naming no set-up step is the command's own result.
        let r = sh(&session, "echo 'bwrap: not really' >&2; exit 1").await;
        assert_eq!(
            (r.returncode, r.stderr.as_str()),
            (1, "bwrap: not really\n")
        );

        let cwd = Path::new("/x");
        let failed = |stderr: &str| ExecResult::new(1, "", stderr);
        let err = setup_failure(
            &failed("bwrap: Can't chdir to /x: No such file\n"),
            "ls",
            cwd,
        );
        assert!(err.unwrap().message.contains("Can't chdir"));
        assert!(setup_failure(&failed("bwrap: Can't a\nmore\n"), "ls", cwd).is_none());
        assert!(setup_failure(&ExecResult::new(2, "", "bwrap: Can't a\n"), "ls", cwd).is_none());

        let err = session
            .exec(ExecRequest::argv(Vec::<String>::new()))
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidInput);
        let err = session
            .exec(ExecRequest::argv(["/nonexistent/program"]))
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Environment);
        assert!(
            err.message.contains("/nonexistent/program") && err.message.contains("No such file"),
            "{}",
            err.message
        );
        let err = session
            .exec(ExecRequest::shell("true").timeout(-1.0))
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidInput);
        session.close().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn cwd_defaults_to_app_and_resolves_relative_paths() {
        let Opened { session, dir } = open().await;
        assert_eq!(sh(&session, "pwd -P").await.stdout, "/app\n");
        session.write_text("sub/x.txt", "x").await.unwrap();
        assert_eq!(
            fs::read_to_string(dir.join("workdir/sub/x.txt")).unwrap(),
            "x"
        );
        let r = session
            .exec(ExecRequest::argv(["cat", "x.txt"]).cwd("sub"))
            .await
            .unwrap();
        assert_eq!(r.stdout, "x");
        let r = session
            .exec(ExecRequest::shell("pwd -P").cwd("/logs"))
            .await
            .unwrap();
        assert_eq!(r.stdout, "/logs\n");
        let r = session
            .exec(ExecRequest::shell("pwd -P").cwd("/usr/bin"))
            .await
            .unwrap();
        assert_eq!(r.stdout, "/usr/bin\n");
        let err = session
            .exec(ExecRequest::shell("true").cwd("missing"))
            .await
            .unwrap_err();
        assert!(err.message.contains("/app/missing"), "{}", err.message);
        session.close().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_custom_workdir_is_mounted_even_inside_the_read_only_root() {
        let mut req = request(JsonMap::new(), NetworkPolicy::public());
        req.environment.setup.workdir = Some("/usr/src/task".into());
        let Opened { session, dir } = open_request(&req).await;
        assert_eq!(
            session.info().default_workdir.as_deref(),
            Some("/usr/src/task")
        );
        let r = sh(
            &session,
            "pwd; touch made && ls /usr/src; test -x /usr/bin/env",
        )
        .await;
        assert_eq!(r.returncode, 0, "{}", r.stderr);
        assert!(r.stdout.starts_with("/usr/src/task\n"), "{}", r.stdout);
        assert!(r.stdout.contains("\ntask\n"), "{}", r.stdout);
        assert!(dir.join("workdir/made").is_file());
        assert!(session.is_file("/usr/src/task/made").await.unwrap());
        let r = sh(&session, "touch /usr/src/other").await;
        assert_ne!(r.returncode, 0);
        assert!(r.stderr.contains("Read-only"), "{}", r.stderr);
        session.close().await.unwrap();

        // A working directory inside another private mount.
        req.environment.setup.workdir = Some("/tmp/work/".into());
        let Opened { session, dir } = open_request(&req).await;
        assert_eq!(session.info().default_workdir.as_deref(), Some("/tmp/work"));
        let r = sh(&session, "pwd; touch in-work /tmp/in-tmp && ls /tmp").await;
        assert_eq!(r.stdout, "/tmp/work\nin-tmp\nwork\n", "{r:?}");
        assert!(dir.join("workdir/in-work").is_file() && dir.join("tmp/in-tmp").is_file());
        assert!(session.is_file("/tmp/work/in-work").await.unwrap());
        session.close().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn env_is_clean_and_bindings_keep_their_precedence() {
        let mut req = request(JsonMap::new(), NetworkPolicy::public());
        req.resolved_env = [
            ("AC_SESSION", "session-value"),
            ("AC_BOTH", "session-value"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let Opened { session, .. } = open_request(&req).await;
        let show = "printf '%s|%s|%s|%s|%s|%s|%s' \"$AC_SESSION\" \"$AC_BOTH\" \"$AC_CALL\" \
                    \"$AC_REQ\" \"$PATH\" \"$HOME\" \"${CARGO_MANIFEST_DIR:-unset}\"";
        let r = session
            .exec(
                ExecRequest::shell(show)
                    .env("AC_BOTH", "call-value")
                    .env("AC_CALL", "call-value")
                    .required_env("AC_REQ", "required-value")
                    .required_env("AC_SESSION", "session-value"),
            )
            .await
            .unwrap();
        assert_eq!(
            r.stdout,
            format!(
                "session-value|session-value|call-value|required-value|{DEFAULT_PATH}|/tmp|unset"
            )
        );
        let r = session
            .exec(ExecRequest::shell("echo $PATH").env("PATH", "/bin"))
            .await
            .unwrap();
        assert_eq!(r.stdout, "/bin\n");
        let err = session
            .exec(ExecRequest::shell("true").required_env("AC_BOTH", "secret-other"))
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidInput);
        assert!(err.message.contains("AC_BOTH"), "{}", err.message);
        assert!(!err.message.contains("secret-other") && !err.message.contains("session-value"));
        assert!(session
            .exec(ExecRequest::shell("true").env("BAD=NAME", "v"))
            .await
            .is_err());
        session.close().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn timeout_kills_everything_inside() {
        let Opened { session, .. } = open().await;
        let started = Instant::now();
        let r = session
            .exec(ExecRequest::argv(["sleep", "30"]).timeout(0.3))
            .await
            .unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert_eq!((r.returncode, r.timed_out), (124, true));

        let marker = marker();
        let started = Instant::now();
        let r = session
            .exec(
                ExecRequest::shell(format!("sleep {marker} & echo partial >&2; sleep {marker}"))
                    .timeout(0.5),
            )
            .await
            .unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert_eq!((r.returncode, r.timed_out), (124, true));
        assert_eq!(r.stderr, "partial\n");
        assert!(
            wait_for_sleepers(&marker, false).await,
            "sleeping processes survived: {:?}",
            sleepers(&marker)
        );

        // Without a timeout, a background child ends with the command (PID namespace).
        let marker = self::marker();
        let started = Instant::now();
        let r = sh(&session, &format!("sleep {marker} & echo done")).await;
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert_eq!((r.returncode, r.stdout.as_str()), (0, "done\n"));
        assert!(wait_for_sleepers(&marker, false).await);
        session.close().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn dropping_exec_kills_everything_inside() {
        let Opened { session, .. } = open().await;
        let marker = marker();
        let cancelled = tokio::time::timeout(
            Duration::from_millis(500),
            session.exec(ExecRequest::shell(format!(
                "sleep {marker} & sleep {marker}"
            ))),
        )
        .await;
        assert!(cancelled.is_err());
        assert!(
            wait_for_sleepers(&marker, false).await,
            "sleeping processes survived: {:?}",
            sleepers(&marker)
        );
        session.close().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn detach_returns_immediately_and_close_kills_it() {
        let Opened { session, dir } = open().await;
        let marker = marker();
        let started = Instant::now();
        let r = session
            .exec(ExecRequest::shell(format!("sleep {marker} & sleep {marker}")).detach())
            .await
            .unwrap();
        assert!(started.elapsed() < Duration::from_secs(1));
        assert_eq!(
            (r.returncode, r.stdout.as_str(), r.timed_out),
            (0, "", false)
        );
        assert!(wait_for_sleepers(&marker, true).await, "never started");
        // Still running after another command.
        sh(&session, "true").await;
        assert!(!sleepers(&marker).is_empty());
        session.close().await.unwrap();
        assert!(
            wait_for_sleepers(&marker, false).await,
            "detached processes survived close: {:?}",
            sleepers(&marker)
        );
        assert!(!dir.exists());
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn own_pid_namespace() {
        let Opened { session, .. } = open().await;
        let r = sh(
            &session,
            "echo $$; cat /proc/1/comm; ls /proc | grep -c '^[0-9][0-9]*$'",
        )
        .await;
        let lines: Vec<&str> = r.stdout.lines().collect();
        assert_eq!(lines.len(), 3, "{r:?}");
        let pid: u32 = lines[0].parse().unwrap();
        assert!(pid <= 3, "shell pid {pid}");
        assert_eq!(lines[1], "bwrap");
        let count: u32 = lines[2].parse().unwrap();
        assert!(count <= 5, "{count} processes visible: {r:?}");
        session.close().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn network_public_reaches_the_host_and_no_network_does_not() {
        assert!(
            Path::new("/bin/bash").exists(),
            "these tests need bash (its /dev/tcp)"
        );
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
        let connect = ExecRequest::argv(["bash", "-c", connect.as_str()]).timeout(10.0);

        let Opened { session, .. } = open_policy(NetworkPolicy::public()).await;
        let r = session.exec(connect.clone()).await.unwrap();
        assert_eq!(
            (r.returncode, r.stdout.as_str()),
            (0, "connected\n"),
            "{r:?}"
        );
        session
            .set_network_policy(&NetworkPolicy::public())
            .await
            .unwrap();
        let err = session
            .set_network_policy(&NetworkPolicy::no_network())
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Unsupported);
        session.close().await.unwrap();

        let Opened { session, .. } = open_policy(NetworkPolicy::no_network()).await;
        let r = session.exec(connect).await.unwrap();
        assert_ne!(r.returncode, 0, "{r:?}");
        assert!(!r.timed_out && r.stdout.is_empty(), "{r:?}");
        assert!(session
            .set_network_policy(&NetworkPolicy::public())
            .await
            .is_err());
        session
            .set_network_policy(&NetworkPolicy::no_network())
            .await
            .unwrap();
        let r = sh(
            &session,
            "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '",
        )
        .await;
        assert_eq!(r.stdout, "lo\n", "{r:?}");
        session.close().await.unwrap();
        drop(listener);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn file_and_tree_transfers_keep_contents_and_modes() {
        let Opened { session, dir } = open().await;
        let host = tempfile::tempdir().unwrap();
        let mode = |p: &Path| fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777;

        let binary: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
        let src = host.path().join("blob.bin");
        fs::write(&src, &binary).unwrap();
        fs::set_permissions(&src, fs::Permissions::from_mode(0o750)).unwrap();
        session.upload(&src, "bin/blob.bin").await.unwrap();
        assert_eq!(mode(&dir.join("workdir/bin/blob.bin")), 0o750);
        let r = sh(
            &session,
            "wc -c < /app/bin/blob.bin; stat -c %a bin/blob.bin",
        )
        .await;
        assert_eq!(r.stdout, "70000\n750\n");
        let back = host.path().join("out/deep/blob.bin");
        session.download("/app/bin/blob.bin", &back).await.unwrap();
        assert_eq!(fs::read(&back).unwrap(), binary);
        assert_eq!(mode(&back), 0o750);
        // Into an existing directory.
        session.upload(&src, "/tests").await.unwrap();
        assert!(session.is_file("/tests/blob.bin").await.unwrap());

        let tree = host.path().join("tree");
        fs::create_dir_all(tree.join("a/b")).unwrap();
        fs::write(tree.join("a/b/run.sh"), "#!/bin/sh\necho ran\n").unwrap();
        fs::set_permissions(tree.join("a/b/run.sh"), fs::Permissions::from_mode(0o750)).unwrap();
        fs::write(tree.join("top.txt"), "top").unwrap();
        std::os::unix::fs::symlink("a/b/run.sh", tree.join("link")).unwrap();
        fs::set_permissions(tree.join("a"), fs::Permissions::from_mode(0o711)).unwrap();
        session.upload_dir(&tree, "/tests").await.unwrap();
        let r = sh(
            &session,
            "/tests/link; stat -c %a /tests/a /tests/a/b/run.sh",
        )
        .await;
        assert_eq!(r.stdout, "ran\n711\n750\n", "{r:?}");
        let out = host.path().join("out-tree");
        session.download_dir("/tests", &out).await.unwrap();
        assert_eq!(fs::read_to_string(out.join("top.txt")).unwrap(), "top");
        assert_eq!(mode(&out.join("a/b/run.sh")), 0o750);
        assert_eq!(mode(&out.join("a")), 0o711);
        assert_eq!(
            fs::read_link(out.join("link")).unwrap(),
            Path::new("a/b/run.sh")
        );
        assert_eq!(fs::read(out.join("blob.bin")).unwrap(), binary);

        // Out of the read-only root too.
        session
            .download("/etc/passwd", &host.path().join("passwd"))
            .await
            .unwrap();
        let err = session
            .download("missing.txt", &host.path().join("m"))
            .await
            .unwrap_err();
        assert!(err.message.contains("missing.txt"), "{}", err.message);
        assert!(session.download_dir("nope", &out).await.is_err());
        session.close().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn text_probes_and_the_read_only_root() {
        let Opened { session, dir } = open().await;
        session.write_text("x/y/z.txt", "héllo\n").await.unwrap();
        assert_eq!(session.read_text("x/y/z.txt").await.unwrap(), "héllo\n");
        assert_eq!(
            session.read_text("/app/x/y/z.txt").await.unwrap(),
            "héllo\n"
        );
        assert_eq!(sh(&session, "cat x/y/z.txt").await.stdout, "héllo\n");
        assert!(session.is_file("x/y/z.txt").await.unwrap());
        assert!(!session.is_dir("x/y/z.txt").await.unwrap());
        assert!(session.is_dir("x/y").await.unwrap());
        assert!(session.is_dir("").await.unwrap());
        assert!(session.is_dir("/").await.unwrap());
        assert!(session.is_dir("/usr/bin").await.unwrap());
        assert!(session.is_file("/etc/passwd").await.unwrap());
        assert!(!session.is_file("missing").await.unwrap());
        assert!(!session.is_dir("x/y/z.txt/under-a-file").await.unwrap());
        fs::write(dir.join("workdir/bin.dat"), [0xff, 0xfe]).unwrap();
        let err = session.read_text("bin.dat").await.unwrap_err();
        assert!(err.message.contains("UTF-8"));
        assert!(session.read_text("missing").await.is_err());
        assert!(session
            .read_text("/etc/passwd")
            .await
            .unwrap()
            .contains("root"));

        // Harbor-style absolute paths, from both sides.
        session.write_text("/logs/verifier/x", "1").await.unwrap();
        assert_eq!(
            fs::read_to_string(dir.join("logs/verifier/x")).unwrap(),
            "1"
        );
        let r = sh(
            &session,
            "echo 0.5 > /logs/verifier/reward.txt && cat /logs/verifier/x",
        )
        .await;
        assert_eq!((r.returncode, r.stdout.as_str()), (0, "1"), "{r:?}");
        assert_eq!(
            session
                .read_text("/logs/verifier/reward.txt")
                .await
                .unwrap(),
            "0.5\n"
        );
        for path in ["/solution/s.sh", "/tmp/t", "/tests/t"] {
            session.write_text(path, "w").await.unwrap();
        }

        // The root is read-only, for commands and file operations alike.
        let r = sh(&session, "touch /etc/agentcompass-probe").await;
        assert_ne!(r.returncode, 0);
        assert!(r.stderr.contains("Read-only file system"), "{r:?}");
        let err = session
            .write_text("/etc/agentcompass-probe", "x")
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Environment);
        assert!(
            err.message.contains("/etc/agentcompass-probe") && err.message.contains("read-only"),
            "{}",
            err.message
        );
        let src = dir.join("workdir/x/y/z.txt");
        let err = session.upload(&src, "/usr/z.txt").await.unwrap_err();
        assert!(err.message.contains("read-only"), "{}", err.message);
        let err = session
            .upload_dir(&dir.join("workdir/x"), "/")
            .await
            .unwrap_err();
        assert!(err.message.contains("read-only"), "{}", err.message);
        assert!(!Path::new("/etc/agentcompass-probe").exists());
        assert!(!Path::new("/usr/z.txt").exists());

        // Kernel file systems exist only for commands.
        let err = session.read_text("/proc/self/status").await.unwrap_err();
        assert!(err.message.contains("exec"), "{}", err.message);
        assert_eq!(session.endpoint().await.unwrap(), None);
        session.close().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn symlinks_resolve_inside_the_sandbox() {
        let Opened { session, dir } = open().await;
        let r = sh(
            &session,
            "ln -s /etc etc-link && ln -s /logs logs-link && ln -s ../app/loop loop && \
             ln -s loop /app/loop2 && ln -s /etc/passwd pw",
        )
        .await;
        assert_eq!(r.returncode, 0, "{r:?}");
        // A link to the read-only root cannot be used to write on the host.
        let err = session.write_text("etc-link/evil", "x").await.unwrap_err();
        assert!(
            err.message.contains("read-only") && err.message.contains("resolves to `/etc/evil`"),
            "{}",
            err.message
        );
        let err = session
            .upload(&dir.join("tmp"), "etc-link")
            .await
            .unwrap_err();
        assert!(err.message.contains("read-only"), "{}", err.message);
        // A link between writable mounts works as inside.
        session.write_text("logs-link/via.txt", "v").await.unwrap();
        assert_eq!(fs::read_to_string(dir.join("logs/via.txt")).unwrap(), "v");
        assert!(session.read_text("pw").await.unwrap().contains("root"));
        let err = session.read_text("loop2").await.unwrap_err();
        assert!(err.message.contains("symbolic links"), "{}", err.message);
        session.close().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn close_is_idempotent_and_crash_cleanup_removes_only_its_dirs() {
        let Opened { session, dir } = open().await;
        sh(
            &session,
            "mkdir -p ro/deep && touch ro/deep/f && chmod 500 ro ro/deep",
        )
        .await;
        session.close().await.unwrap();
        assert!(!dir.exists());
        session.close().await.unwrap();
        let err = session.exec(ExecRequest::shell("true")).await.unwrap_err();
        assert!(err.message.contains("closed"), "{}", err.message);
        assert!(session.write_text("late.txt", "x").await.is_err());

        let Opened { session, dir } = open().await;
        session.write_text("/logs/a.txt", "x").await.unwrap();
        let params = session.info().close_params;
        drop(session);
        assert!(dir.exists());
        let provider = SandboxProvider::default();
        provider.close(&Ctx::detached(), &params).await.unwrap();
        assert!(!dir.exists());
        provider.close(&Ctx::detached(), &params).await.unwrap();
        for refused in [
            json!({"dir": "/etc"}),
            json!({"dir": "agentcompass-sandbox-x"}),
        ] {
            let err = provider
                .close(&Ctx::detached(), &refused)
                .await
                .unwrap_err();
            assert_eq!(err.kind, ErrorKind::InvalidInput);
        }
        provider
            .close(&Ctx::detached(), &Value::Null)
            .await
            .unwrap();
    }

    /// A root filesystem holding only `/bin/sh` (the host's dash and its libraries), a marker
    /// file and a `/var/tmp` with a file in it.
    fn tiny_rootfs(at: &Path) {
        let dash = Path::new("/usr/bin/dash");
        assert!(dash.is_file(), "this test needs /usr/bin/dash");
        fs::create_dir_all(at.join("bin")).unwrap();
        fs::copy(dash, at.join("bin/sh")).unwrap();
        let ldd = std::process::Command::new("ldd")
            .arg(dash)
            .output()
            .unwrap();
        for line in String::from_utf8_lossy(&ldd.stdout).lines() {
            let lib = line
                .split_whitespace()
                .find(|w| w.starts_with('/'))
                .map(PathBuf::from);
            if let Some(lib) = lib {
                let to = at.join(lib.strip_prefix("/").unwrap());
                fs::create_dir_all(to.parent().unwrap()).unwrap();
                fs::copy(&lib, &to).unwrap();
            }
        }
        fs::create_dir_all(at.join("etc")).unwrap();
        fs::write(at.join("etc/marker"), "tiny\n").unwrap();
        fs::create_dir_all(at.join("var/tmp")).unwrap();
        fs::write(at.join("var/tmp/other-session"), "secret").unwrap();
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_local_root_filesystem_from_setup_image() {
        let host = tempfile::tempdir().unwrap();
        let rootfs = host.path().join("rootfs");
        tiny_rootfs(&rootfs);
        let mut req = request(JsonMap::new(), NetworkPolicy::no_network());
        req.environment.setup.image = Some(rootfs.to_string_lossy().into_owned());
        let Opened { session, .. } = open_request(&req).await;
        let r = sh(
            &session,
            "read m < /etc/marker; echo $m; pwd; \
             test -e /usr/bin/env && echo host-visible; echo ok > /logs/o",
        )
        .await;
        assert_eq!(
            (r.returncode, r.stdout.as_str()),
            (0, "tiny\n/app\n"),
            "{r:?}"
        );
        assert_eq!(session.read_text("/etc/marker").await.unwrap(), "tiny\n");
        assert!(!session.is_dir("/usr/bin").await.unwrap());
        assert_eq!(session.read_text("/logs/o").await.unwrap(), "ok\n");
        let err = session.exec(ExecRequest::argv(["true"])).await.unwrap_err();
        assert!(
            err.message.contains("cannot start `true`"),
            "{}",
            err.message
        );
        session.close().await.unwrap();

        // The `root` parameter wins over setup.image.
        let mut params = JsonMap::new();
        params.insert("root".into(), json!(rootfs.to_str().unwrap()));
        let mut req = request(params, NetworkPolicy::public());
        req.environment.setup.image = Some("debian:bookworm".into());
        let Opened { session, .. } = open_request(&req).await;
        assert_eq!(session.read_text("/etc/marker").await.unwrap(), "tiny\n");
        session.close().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_visible_temporary_directory_is_hidden() {
        let host = tempfile::tempdir().unwrap();
        let rootfs = fs::canonicalize(host.path()).unwrap().join("rootfs");
        tiny_rootfs(&rootfs);
        let dir = host.path().join("session");
        fs::create_dir(&dir).unwrap();
        let bwrap = find_program("bwrap").expect(INSTALL_HINT);
        let layout = Layout::create(
            &dir,
            bwrap,
            rootfs.clone(),
            PathBuf::from("/app"),
            true,
            &rootfs.join("var/tmp"),
        )
        .unwrap();
        assert_eq!(layout.hidden, vec![PathBuf::from("/var/tmp")]);
        let session = SandboxSession {
            id: "test".into(),
            dir: dir.clone(),
            layout: Arc::new(layout),
            env: BTreeMap::new(),
            detached: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
        };
        let r = session
            .exec(ExecRequest::shell(
                "for f in /var/tmp/*; do echo $f; done; read m < /etc/marker; echo $m",
            ))
            .await
            .unwrap();
        assert_eq!(r.stdout, "/var/tmp/*\ntiny\n", "{r:?}");
        let err = session
            .read_text("/var/tmp/other-session")
            .await
            .unwrap_err();
        assert!(err.message.contains("hidden"), "{}", err.message);
        session.close().await.unwrap();
        assert!(!dir.exists());

        // The usual case: the temporary directory is /tmp, private anyway.
        let mounts = [Mount {
            sandbox: "/tmp".into(),
            host: "/x".into(),
        }];
        assert!(hidden_paths(Path::new("/"), Path::new("/tmp"), &mounts).is_empty());
        assert!(hidden_paths(Path::new("/srv/root"), Path::new("/tmp"), &mounts).is_empty());
        assert_eq!(
            hidden_paths(Path::new("/"), Path::new("/var/tmp"), &mounts),
            vec![PathBuf::from("/var/tmp")]
        );
    }

    #[test]
    fn mountinfo_paths_are_unescaped() {
        assert_eq!(
            unescape_mountinfo(b"/a\\040b\\134c"),
            PathBuf::from("/a b\\c")
        );
        assert_eq!(
            unescape_mountinfo(b"/plain\\04"),
            PathBuf::from("/plain\\04")
        );
        assert_eq!(unescape_mountinfo(b"/x\\999"), PathBuf::from("/x\\999"));
    }

    /// Sets the modification time of `path` to an hour ago.
    fn age(path: &Path) {
        let then = SystemTime::now() - Duration::from_secs(3600);
        let times = fs::FileTimes::new().set_modified(then).set_accessed(then);
        fs::File::open(path).unwrap().set_times(times).unwrap();
    }

    #[test]
    fn the_arguments_of_a_shape_are_reused_until_its_root_changes() {
        let host = tempfile::tempdir().unwrap();
        let rootfs = fs::canonicalize(host.path()).unwrap().join("rootfs");
        fs::create_dir_all(rootfs.join("etc")).unwrap();
        fs::create_dir_all(rootfs.join("usr/src")).unwrap();
        std::os::unix::fs::symlink("usr/bin", rootfs.join("bin")).unwrap();
        let cache = TemplateCache::default();
        let bwrap = find_program("bwrap").expect(INSTALL_HINT);
        let shape = |workdir: &str| Shape {
            root: rootfs.clone(),
            workdir: PathBuf::from(workdir),
            no_network: false,
            temp_base: PathBuf::from("/nonexistent-temp"),
        };
        let layout = |n: usize, workdir: &str| {
            let dir = host.path().join(format!("session-{n}"));
            fs::create_dir(&dir).unwrap();
            Layout::create_cached(&dir, bwrap.clone(), shape(workdir), &cache).unwrap()
        };
        let args = |l: &Layout| -> Vec<String> {
            let cmd = l.command(Path::new("/"));
            cmd.as_std()
                .get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect()
        };
        // Just made: listed, but not cached (a change in the same tick could go unnoticed).
        let first = layout(0, "/app");
        let second = layout(1, "/app");
        assert!(!Arc::ptr_eq(&first.template, &second.template));
        age(&rootfs);
        let third = layout(2, "/app");
        let fourth = layout(3, "/app");
        assert!(Arc::ptr_eq(&third.template, &fourth.template));
        assert_ne!(args(&third), args(&fourth), "the session binds differ");
        let shown = args(&fourth).join(" ");
        assert!(shown.contains("--bind"), "{shown}");
        assert!(shown.contains("session-3/workdir /app"), "{shown}");
        assert!(shown.contains("--symlink usr/bin /bin"), "{shown}");
        assert!(shown.ends_with("--remount-ro / --chdir /"), "{shown}");
        // Another working directory is another shape; its mirror splits /usr.
        let nested = layout(4, "/usr/src/task");
        assert!(!Arc::ptr_eq(&nested.template, &fourth.template));
        let shown = args(&nested).join(" ");
        assert!(shown.contains("--dir /usr/src/task"), "{shown}");
        assert!(
            !shown.contains(&format!("{} /usr ", rootfs.join("usr").display())),
            "{shown}"
        );
        // A new entry in the root: listed again.
        fs::create_dir(rootfs.join("srv")).unwrap();
        let fifth = layout(5, "/app");
        assert!(!Arc::ptr_eq(&fifth.template, &fourth.template));
        let shown = args(&fifth).join(" ");
        assert!(
            shown.contains(&format!("{} /srv", rootfs.join("srv").display())),
            "{shown}"
        );
        // A change under a split parent is noticed too.
        age(&rootfs);
        age(&rootfs.join("usr"));
        age(&rootfs.join("usr/src"));
        let before = layout(6, "/usr/src/task");
        assert!(Arc::ptr_eq(
            &before.template,
            &layout(7, "/usr/src/task").template
        ));
        fs::write(rootfs.join("usr/src/new.txt"), "x").unwrap();
        let after = layout(8, "/usr/src/task");
        assert!(!Arc::ptr_eq(&before.template, &after.template));
        assert!(args(&after).join(" ").contains("/usr/src/new.txt"));
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn concurrent_opens_of_a_shape_share_one_probe() {
        let host = tempfile::tempdir().unwrap();
        let calls = host.path().join("calls");
        let real = find_program("bwrap").expect(INSTALL_HINT);
        let wrapper = host.path().join("bwrap");
        fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
                calls.display(),
                real.display()
            ),
        )
        .unwrap();
        fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
        let mut params = JsonMap::new();
        params.insert("bwrap".into(), json!(wrapper.to_str().unwrap()));
        let req = request(params, NetworkPolicy::public());
        let provider = Arc::new(SandboxProvider::default());
        let opens: Vec<_> = (0..6)
            .map(|_| {
                let (provider, req) = (provider.clone(), req.clone());
                tokio::spawn(async move { provider.open(&Ctx::detached(), &req).await })
            })
            .collect();
        let mut sessions = Vec::new();
        for open in opens {
            sessions.push(open.await.unwrap().unwrap());
        }
        let probes = fs::read_to_string(&calls).unwrap();
        assert_eq!(probes.lines().count(), 1, "{probes}");
        assert!(probes.trim_end().ends_with("-- true"), "{probes}");
        assert_eq!(sh(&sessions[0], "echo $((2 + 3))").await.stdout, "5\n");
        for session in sessions {
            session.close().await.unwrap();
        }
    }
}
