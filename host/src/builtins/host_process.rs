//! The `host_process` environment: commands run directly on this machine, in a per-task working
//! directory, with the public network (no isolation at all: it is not a sandbox).
//!
//! - Working directory: the `workdir` parameter when given (created if missing, never removed),
//!   else a fresh private directory (mode 0700) under the system temporary directory, named
//!   `agentcompass-<task>-<attempt>-<random>` and removed when the session closes (or, after a
//!   crash, by [`EnvironmentProvider::close`] from the persisted `close_params`).
//! - The private directory is created lazily: `open` only reserves its path (reported as
//!   [`SessionInfo::default_workdir`]) and creates nothing on disk; the first operation that
//!   needs it (an `exec` with the default or a relative `cwd`, a transfer, text or probe call
//!   on a relative path) creates it, exactly once. Operations on absolute paths never create
//!   it. Most tasks never touch their environment, and creating and deleting a directory per
//!   task attempt dominated the cost of large runs. Should the reserved name be taken by then,
//!   another random suffix is chosen and `default_workdir` reports the directory actually
//!   created. A session whose directory was never created has nothing to release, so its
//!   `close_params` are `null` until then.
//! - Known trade-off: the runtime persists an environment record only when `close_params` are
//!   non-null at open time, so a lazily created directory is not in that record, and a crash
//!   of the host may leave it behind. Such leftovers are the `agentcompass-*` directories
//!   under the system temporary directory (`$TMPDIR`, else `/tmp`) and can be removed by hand
//!   once no run is active.
//! - `environment.setup.workdir` is ignored: every path this provider sees is a real host path,
//!   and relative paths resolve against the working directory above.
//! - Environment of commands: the host process environment, then the call's `env` defaults,
//!   then the session's resolved common bindings (they win over call defaults, as documented on
//!   [`ExecRequest::env`]), then `required_env` (a conflicting binding is an error naming the
//!   variable, never its values). Values are never logged.
//! - Every command runs in its own process group; a timeout or a dropped `exec` future kills
//!   the whole group with SIGKILL, so background children cannot keep a call alive. Detached
//!   commands are killed (by group) when the session closes or is dropped.

use std::collections::hash_map::RandomState;
use std::collections::BTreeMap;
use std::fs;
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentcompass_plugin_api::contracts::{
    ComponentInfo, ComponentKind, ConfigField, ConfigSchema, ConfigType, ExecCommand, ExecRequest,
    ExecResult, NetworkMode, OpenEnvironmentRequest, ProviderCapabilities, SessionInfo,
};
use agentcompass_plugin_api::sdk::{
    async_trait, Ctx, EnvironmentProvider, EnvironmentSession, SessionRef,
};
use agentcompass_plugin_api::{Error, Result};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

use crate::registry::{Builtin, BuiltinFactory};

/// Provider id.
pub const ID: &str = "host_process";

/// One-line description.
pub const DESCRIPTION: &str =
    "Commands run on this machine in a per-task working directory (public network only)";

/// Name prefix of the private working directories this provider creates (and alone removes).
const OWNED_PREFIX: &str = "agentcompass-";

/// How many random names the lazy creation of a private working directory tries before
/// giving up (a name is only retried when the path already exists).
const CREATE_ATTEMPTS: usize = 64;

/// How long output pipes may stay open after the command ended (a background child still
/// holding them) before the captured output is returned without waiting for them.
const PIPE_GRACE: Duration = Duration::from_secs(2);

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
    ConfigSchema::empty().field(ConfigField::new(
        "workdir",
        ConfigType::String,
        Value::Null,
        "Working directory for every task (default: a fresh private directory per task attempt, \
         removed on close)",
    ))
}

fn make() -> Result<Arc<dyn EnvironmentProvider>> {
    Ok(Arc::new(HostProcessProvider))
}

/// The `host_process` provider.
pub struct HostProcessProvider;

#[async_trait]
impl EnvironmentProvider for HostProcessProvider {
    fn capabilities(&self) -> Result<ProviderCapabilities> {
        Ok(ProviderCapabilities {
            network_modes: vec![NetworkMode::Public],
            allowlist_entry_types: Vec::new(),
            dynamic_network_policy: false,
            resource_fields: Vec::new(),
            operating_systems: vec!["linux".to_string()],
            task_env: true,
            startup_env: false,
        })
    }

    async fn open(&self, _ctx: &Ctx, request: &OpenEnvironmentRequest) -> Result<SessionRef> {
        let params = &request.environment.params;
        let problems = config_schema().validate(params);
        if !problems.is_empty() {
            return Err(Error::invalid_input(format!(
                "environment `{ID}`: {}",
                problems.join("; ")
            )));
        }
        let fixed = match params.get("workdir").and_then(Value::as_str) {
            Some("") => {
                return Err(Error::invalid_input(format!(
                    "environment `{ID}`: parameter `workdir` must not be empty"
                )))
            }
            Some(dir) => Some(dir.to_string()),
            None => None,
        };
        let task = sanitise(&request.task_id);
        let attempt = request.attempt;
        let prefix = format!("{OWNED_PREFIX}{task}-{attempt}-");
        let (workdir, owned, id) = match fixed {
            Some(dir) => {
                blocking(move || {
                    let path = std::path::absolute(&dir).map_err(|e| {
                        Error::invalid_input(format!("environment `{ID}`: workdir `{dir}`: {e}"))
                    })?;
                    fs::create_dir_all(&path).map_err(|e| {
                        Error::environment(format!(
                            "environment `{ID}`: cannot create workdir `{}`: {e}",
                            path.display()
                        ))
                    })?;
                    Ok((path, false, format!("{ID}-{task}-{attempt}-{}", unique())))
                })
                .await?
            }
            None => {
                // Only reserved here: created by the first operation that needs it.
                let name = format!("{prefix}{}", random_suffix());
                let base = std::env::temp_dir();
                let base = std::path::absolute(&base).unwrap_or(base);
                (base.join(&name), true, name)
            }
        };
        tracing::debug!(
            provider = ID,
            workdir = %workdir.display(),
            owned,
            "opened environment"
        );
        Ok(Arc::new(HostProcessSession {
            id,
            workdir: Workdir::new(workdir, owned, prefix),
            env: request.resolved_env.clone(),
            detached: Mutex::new(Vec::new()),
        }))
    }

    async fn close(&self, _ctx: &Ctx, close_params: &Value) -> Result<()> {
        let owned = close_params
            .get("owned")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let Some(workdir) = close_params.get("workdir").and_then(Value::as_str) else {
            return Ok(());
        };
        if !owned {
            return Ok(());
        }
        let path = PathBuf::from(workdir);
        let created_here = path.is_absolute()
            && path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(OWNED_PREFIX));
        if !created_here {
            return Err(Error::invalid_input(format!(
                "environment `{ID}`: refusing to remove `{workdir}`: not a directory this \
                 provider creates"
            )));
        }
        remove_owned_dir(path).await
    }
}

/// A session's working directory: fixed (created at open, never removed) or owned (reserved
/// at open, created on first use, removed on close).
struct Workdir {
    /// The fixed directory, or the path reserved for the owned one.
    reserved: PathBuf,
    owned: bool,
    /// The name prefix of the owned directory (for a fresh name when the reserved one is taken).
    prefix: String,
    /// Shared with the blocking creation task, so a creation whose caller was cancelled is
    /// still recorded (and removed on close).
    state: Arc<WorkdirState>,
}

#[derive(Default)]
struct WorkdirState {
    /// The owned directory, once created.
    created: OnceLock<PathBuf>,
    /// Held while creating, and while closing: serialises first uses and orders them with
    /// close. The flag is set by close; no directory is created after it.
    lock: Mutex<bool>,
}

impl Workdir {
    fn new(reserved: PathBuf, owned: bool, prefix: String) -> Workdir {
        Workdir {
            reserved,
            owned,
            prefix,
            state: Arc::new(WorkdirState::default()),
        }
    }

    /// The directory as reported: the created one, else the reserved path.
    fn path(&self) -> &Path {
        self.state.created.get().unwrap_or(&self.reserved)
    }

    /// The owned directory, if it was created.
    fn created(&self) -> Option<&PathBuf> {
        self.state.created.get()
    }

    /// The working directory, created (once) if this is its first use.
    async fn ensure(&self) -> Result<PathBuf> {
        if !self.owned {
            return Ok(self.reserved.clone());
        }
        if let Some(path) = self.state.created.get() {
            return Ok(path.clone());
        }
        let (state, reserved, prefix) = (
            self.state.clone(),
            self.reserved.clone(),
            self.prefix.clone(),
        );
        blocking(move || {
            let closed = state.lock.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(path) = state.created.get() {
                return Ok(path.clone());
            }
            if *closed {
                return Err(Error::environment(format!(
                    "environment `{ID}`: the session is closed"
                )));
            }
            let path = create_private_dir(&reserved, &prefix)?;
            tracing::debug!(provider = ID, workdir = %path.display(), "created workdir");
            let _ = state.created.set(path.clone());
            Ok(path)
        })
        .await
    }

    /// Marks the working directory closed (no creation after this) and returns the owned
    /// directory to remove, if one was created.
    async fn close(&self) -> Result<Option<PathBuf>> {
        if !self.owned {
            return Ok(None);
        }
        let state = self.state.clone();
        blocking(move || {
            *state.lock.lock().unwrap_or_else(PoisonError::into_inner) = true;
            Ok(state.created.get().cloned())
        })
        .await
    }
}

/// Creates a private (mode 0700) directory at `reserved`, or, if that path already exists,
/// under a fresh random name with the same `prefix` next to it. Never reuses an existing path.
fn create_private_dir(reserved: &Path, prefix: &str) -> Result<PathBuf> {
    let base = reserved.parent().unwrap_or(Path::new("/"));
    let mut path = reserved.to_path_buf();
    for _ in 0..CREATE_ATTEMPTS {
        match fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => {
                // The umask may have removed bits, never added: make the mode exact anyway.
                fs::set_permissions(&path, fs::Permissions::from_mode(0o700)).map_err(|e| {
                    let _ = fs::remove_dir(&path);
                    Error::environment(format!(
                        "environment `{ID}`: cannot restrict `{}`: {e}",
                        path.display()
                    ))
                })?;
                return Ok(path);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                path = base.join(format!("{prefix}{}", random_suffix()));
            }
            Err(e) => {
                return Err(Error::environment(format!(
                    "environment `{ID}`: cannot create a working directory in `{}`: {e}",
                    base.display()
                )))
            }
        }
    }
    Err(Error::environment(format!(
        "environment `{ID}`: cannot create a working directory in `{}`: every name tried \
         already exists",
        base.display()
    )))
}

/// One open `host_process` environment. Deliberately not `Debug`: it holds resolved secrets.
struct HostProcessSession {
    id: String,
    workdir: Workdir,
    env: BTreeMap<String, String>,
    /// Detached commands, kept unreaped so their process-group ids stay reserved until close.
    detached: Mutex<Vec<Child>>,
}

impl HostProcessSession {
    /// A session path as a host path: absolute paths as they are (the working directory is
    /// not needed, nor created), others under the working directory (created if needed).
    async fn resolve(&self, path: &str) -> Result<PathBuf> {
        if Path::new(path).is_absolute() {
            Ok(PathBuf::from(path))
        } else if path.is_empty() {
            self.workdir.ensure().await
        } else {
            Ok(self.workdir.ensure().await?.join(path))
        }
    }

    fn take_detached(&self) -> Vec<Child> {
        std::mem::take(&mut *self.detached.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn spawn_detached(&self, mut cmd: Command, program: &str, cwd: &Path) -> Result<ExecResult> {
        cmd.stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(false);
        let child = cmd.spawn().map_err(|e| spawn_error(program, cwd, e))?;
        self.detached
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(child);
        Ok(ExecResult::new(0, "", ""))
    }
}

impl Drop for HostProcessSession {
    fn drop(&mut self) {
        for child in self.take_detached() {
            GroupGuard::new(child.id()).kill();
        }
    }
}

#[async_trait]
impl EnvironmentSession for HostProcessSession {
    fn info(&self) -> SessionInfo {
        let workdir = self.workdir.path().to_string_lossy().into_owned();
        // An owned directory not created yet has nothing to release.
        let close_params = if self.workdir.owned && self.workdir.created().is_none() {
            Value::Null
        } else {
            json!({"workdir": workdir, "owned": self.workdir.owned})
        };
        SessionInfo {
            id: self.id.clone(),
            provider: ID.to_string(),
            default_workdir: Some(workdir),
            close_params,
        }
    }

    async fn exec(&self, request: ExecRequest) -> Result<ExecResult> {
        request.validate().map_err(Error::invalid_input)?;
        let timeout = timeout_duration(request.timeout_seconds)?;
        let env = merge_env(&self.env, &request.env, &request.required_env)?;
        let cwd = match &request.cwd {
            Some(cwd) => self.resolve(cwd).await?,
            None => self.workdir.ensure().await?,
        };
        if !tokio::fs::metadata(&cwd).await.is_ok_and(|m| m.is_dir()) {
            return Err(Error::environment(format!(
                "exec: working directory `{}` does not exist or is not a directory",
                cwd.display()
            )));
        }
        let (program, mut cmd) = match &request.command {
            ExecCommand::Shell(line) => {
                let mut cmd = Command::new("/bin/sh");
                cmd.arg("-c").arg(line);
                ("/bin/sh", cmd)
            }
            ExecCommand::Argv(argv) => {
                let mut cmd = Command::new(&argv[0]);
                cmd.args(&argv[1..]);
                (argv[0].as_str(), cmd)
            }
        };
        cmd.current_dir(&cwd)
            .envs(&env)
            .stdin(Stdio::null())
            .process_group(0);
        if request.detach {
            return self.spawn_detached(cmd, program, &cwd);
        }
        run_captured(cmd, program, &cwd, timeout).await
    }

    async fn upload(&self, src: &Path, dst: &str) -> Result<()> {
        let (src, dst) = (src.to_path_buf(), self.resolve(dst).await?);
        blocking(move || copy_file(&src, &dst).map_err(|e| transfer_error("upload", &src, &dst, e)))
            .await
    }

    async fn download(&self, src: &str, dst: &Path) -> Result<()> {
        let (src, dst) = (self.resolve(src).await?, dst.to_path_buf());
        blocking(move || {
            copy_file(&src, &dst).map_err(|e| transfer_error("download", &src, &dst, e))
        })
        .await
    }

    async fn upload_dir(&self, src: &Path, dst: &str) -> Result<()> {
        let (src, dst) = (src.to_path_buf(), self.resolve(dst).await?);
        blocking(move || {
            copy_tree(&src, &dst).map_err(|e| transfer_error("upload_dir", &src, &dst, e))
        })
        .await
    }

    async fn download_dir(&self, src: &str, dst: &Path) -> Result<()> {
        let (src, dst) = (self.resolve(src).await?, dst.to_path_buf());
        blocking(move || {
            copy_tree(&src, &dst).map_err(|e| transfer_error("download_dir", &src, &dst, e))
        })
        .await
    }

    async fn read_text(&self, path: &str) -> Result<String> {
        let path = self.resolve(path).await?;
        let bytes = tokio::fs::read(&path).await.map_err(|e| {
            Error::environment(format!("read_text: cannot read `{}`: {e}", path.display()))
        })?;
        String::from_utf8(bytes).map_err(|_| {
            Error::environment(format!(
                "read_text: `{}` is not valid UTF-8",
                path.display()
            ))
        })
    }

    async fn write_text(&self, path: &str, content: &str) -> Result<()> {
        let path = self.resolve(path).await?;
        let fail = |e: io::Error| {
            Error::environment(format!(
                "write_text: cannot write `{}`: {e}",
                path.display()
            ))
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            tokio::fs::create_dir_all(parent).await.map_err(fail)?;
        }
        tokio::fs::write(&path, content).await.map_err(fail)
    }

    async fn is_file(&self, path: &str) -> Result<bool> {
        probe(&self.resolve(path).await?, "is_file")
            .await
            .map(|m| m.is_some_and(|m| m.is_file()))
    }

    async fn is_dir(&self, path: &str) -> Result<bool> {
        probe(&self.resolve(path).await?, "is_dir")
            .await
            .map(|m| m.is_some_and(|m| m.is_dir()))
    }

    async fn close(&self) -> Result<()> {
        for mut child in self.take_detached() {
            GroupGuard::new(child.id()).kill();
            let _ = child.kill().await;
        }
        if let Some(dir) = self.workdir.close().await? {
            remove_owned_dir(dir.clone()).await?;
            tracing::debug!(provider = ID, workdir = %dir.display(), "removed workdir");
        }
        Ok(())
    }
}

/// Runs `f` on the blocking pool.
async fn blocking<T, F>(f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::environment(format!("environment `{ID}`: file task failed: {e}")))?
}

/// A process-unique, time-salted suffix.
fn unique() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{}-{:x}-{}",
        std::process::id(),
        nanos,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// A random, file-name-safe suffix (16 hex digits) for a private directory name. The hasher
/// keys are random per process; the counter, process id and time make every call distinct.
/// Unpredictability is not what keeps the directory safe: it is created with `mkdir` (never
/// reusing an existing path) and mode 0700.
fn random_suffix() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    hasher.write_u128(nanos);
    format!("{:016x}", hasher.finish())
}

/// A task id reduced to a short, file-name-safe string.
fn sanitise(task_id: &str) -> String {
    let cleaned: String = task_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    if cleaned.is_empty() {
        "task".to_string()
    } else {
        cleaned
    }
}

fn timeout_duration(seconds: Option<f64>) -> Result<Option<Duration>> {
    match seconds {
        None => Ok(None),
        Some(s) if s.is_nan() || s < 0.0 => Err(Error::invalid_input(format!(
            "exec: timeout_seconds must be a non-negative number, got {s}"
        ))),
        // Too large to represent (or infinite): no limit.
        Some(s) => Ok(Duration::try_from_secs_f64(s).ok()),
    }
}

/// Call defaults, overridden by the session's bindings, then `required_env` (which must not
/// conflict with either). Messages name variables, never values.
fn merge_env(
    session: &BTreeMap<String, String>,
    call: &BTreeMap<String, String>,
    required: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>> {
    let mut merged = call.clone();
    merged.extend(session.iter().map(|(k, v)| (k.clone(), v.clone())));
    for (key, value) in required {
        if merged.get(key).is_some_and(|bound| bound != value) {
            return Err(Error::invalid_input(format!(
                "exec: required environment variable `{key}` conflicts with another binding of \
                 the same name"
            )));
        }
        merged.insert(key.clone(), value.clone());
    }
    for (key, value) in &merged {
        if key.is_empty() || key.contains(['=', '\0']) {
            return Err(Error::invalid_input(format!(
                "exec: invalid environment variable name `{}`",
                key.escape_debug()
            )));
        }
        if value.contains('\0') {
            return Err(Error::invalid_input(format!(
                "exec: the value of environment variable `{key}` contains a NUL byte"
            )));
        }
    }
    Ok(merged)
}

fn spawn_error(program: &str, cwd: &Path, e: io::Error) -> Error {
    Error::environment(format!(
        "exec: cannot start `{program}` in `{}`: {e}",
        cwd.display()
    ))
}

fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(-1)
}

/// Runs a command to completion (or its timeout), capturing its output.
async fn run_captured(
    mut cmd: Command,
    program: &str,
    cwd: &Path,
    timeout: Option<Duration>,
) -> Result<ExecResult> {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // Drop order (reverse of declaration) matters on cancellation: the readers are aborted,
    // then the group is killed while the leader is still unreaped (its id cannot be reused),
    // then tokio kills and reaps the leader.
    let mut child = cmd.spawn().map_err(|e| spawn_error(program, cwd, e))?;
    let mut group = GroupGuard::new(child.id());
    let mut stdout = Capture::start(child.stdout.take());
    let mut stderr = Capture::start(child.stderr.take());
    let status = match timeout {
        None => Some(child.wait().await),
        Some(limit) => tokio::time::timeout(limit, child.wait()).await.ok(),
    };
    match status {
        Some(status) => {
            let status = status.map_err(|e| {
                Error::environment(format!("exec: waiting for `{program}` failed: {e}"))
            })?;
            finish(&mut stdout, &mut stderr).await;
            group.disarm();
            Ok(ExecResult::new(
                exit_code(status),
                stdout.text(),
                stderr.text(),
            ))
        }
        None => {
            group.kill();
            let _ = child.kill().await;
            finish(&mut stdout, &mut stderr).await;
            Ok(ExecResult::timeout(stdout.text(), stderr.text()))
        }
    }
}

/// Waits (at most [`PIPE_GRACE`]) for both output pipes to reach end of file.
async fn finish(stdout: &mut Capture, stderr: &mut Capture) {
    let _ = tokio::time::timeout(PIPE_GRACE, async {
        stdout.finished().await;
        stderr.finished().await;
    })
    .await;
}

/// Kills a process group with SIGKILL when dropped, unless disarmed.
struct GroupGuard {
    pgid: Option<Pid>,
}

impl GroupGuard {
    fn new(pid: Option<u32>) -> Self {
        GroupGuard {
            pgid: pid
                .and_then(|p| i32::try_from(p).ok())
                .filter(|p| *p > 0)
                .map(Pid::from_raw),
        }
    }

    fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }

    fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One output pipe drained by a task into a shared buffer (so whatever arrived can be returned
/// even if the pipe never closes). Dropping it aborts the task.
struct Capture {
    buffer: Arc<Mutex<Vec<u8>>>,
    task: Option<JoinHandle<()>>,
}

impl Capture {
    fn start<R: AsyncRead + Unpin + Send + 'static>(pipe: Option<R>) -> Capture {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let task = pipe.map(|mut pipe| {
            let buffer = buffer.clone();
            tokio::spawn(async move {
                let mut chunk = vec![0u8; 16 * 1024];
                loop {
                    match pipe.read(&mut chunk).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => buffer
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .extend_from_slice(&chunk[..n]),
                    }
                }
            })
        });
        Capture { buffer, task }
    }

    async fn finished(&mut self) {
        if let Some(task) = self.task.as_mut() {
            let _ = task.await;
            self.task = None;
        }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.buffer.lock().unwrap_or_else(PoisonError::into_inner))
            .into_owned()
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

async fn probe(path: &Path, op: &str) -> Result<Option<fs::Metadata>> {
    match tokio::fs::metadata(path).await {
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
            "{op}: cannot inspect `{}`: {e}",
            path.display()
        ))),
    }
}

fn transfer_error(op: &str, src: &Path, dst: &Path, e: io::Error) -> Error {
    Error::environment(format!(
        "{op}: cannot copy `{}` to `{}`: {e}",
        src.display(),
        dst.display()
    ))
}

fn io_error(message: String) -> io::Error {
    io::Error::other(message)
}

fn mode_of(meta: &fs::Metadata) -> fs::Permissions {
    fs::Permissions::from_mode(meta.permissions().mode() & 0o7777)
}

/// Copies one file (following a symlinked source), creating parent directories and keeping
/// the mode. An existing directory as destination receives the file under its own name; an
/// existing file or symlink there is replaced (never written through).
fn copy_file(src: &Path, dst: &Path) -> io::Result<()> {
    let meta = fs::metadata(src)?;
    if meta.is_dir() {
        return Err(io_error(
            "the source is a directory (use the *_dir operation)".to_string(),
        ));
    }
    let target = match (fs::metadata(dst), src.file_name()) {
        (Ok(existing), Some(name)) if existing.is_dir() => dst.join(name),
        _ => dst.to_path_buf(),
    };
    if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent)?;
    }
    copy_regular(src, &meta, &target)
}

/// Copies a file whose metadata is `meta` to exactly `dst` (replacing a non-directory there).
fn copy_regular(src: &Path, meta: &fs::Metadata, dst: &Path) -> io::Result<()> {
    match fs::symlink_metadata(dst) {
        Ok(existing) if existing.is_dir() => {
            return Err(io_error(format!(
                "`{}` is a directory; it cannot be replaced by a file",
                dst.display()
            )))
        }
        Ok(existing) => {
            if existing.dev() == meta.dev() && existing.ino() == meta.ino() {
                return Ok(()); // the same file
            }
            fs::remove_file(dst)?;
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    fs::copy(src, dst)?;
    fs::set_permissions(dst, mode_of(meta))
}

/// Copies a directory tree into `dst` (merging with what is there), keeping modes and copying
/// symlinks as symlinks. Special files (sockets, FIFOs, devices) are skipped.
fn copy_tree(src: &Path, dst: &Path) -> io::Result<()> {
    let meta = fs::metadata(src)?;
    if !meta.is_dir() {
        return Err(io_error("the source is not a directory".to_string()));
    }
    fs::create_dir_all(dst)?;
    let (src_real, dst_real) = (fs::canonicalize(src)?, fs::canonicalize(dst)?);
    if dst_real.starts_with(&src_real) {
        return Err(io_error(
            "the destination is the source or inside it".to_string(),
        ));
    }
    copy_tree_contents(src, dst)?;
    fs::set_permissions(dst, mode_of(&meta))
}

fn copy_tree_contents(src: &Path, dst: &Path) -> io::Result<()> {
    for entry in fs::read_dir(src)? {
        let entry = entry?;
        let (from, to) = (entry.path(), dst.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            let link = fs::read_link(&from)?;
            match fs::symlink_metadata(&to) {
                Ok(existing) if existing.is_dir() => {
                    return Err(io_error(format!(
                        "`{}` is a directory; it cannot be replaced by a symlink",
                        to.display()
                    )))
                }
                Ok(_) => fs::remove_file(&to)?,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            std::os::unix::fs::symlink(link, &to)?;
        } else if kind.is_dir() {
            match fs::symlink_metadata(&to) {
                Ok(existing) if existing.is_dir() => {}
                Ok(_) => {
                    fs::remove_file(&to)?;
                    fs::create_dir(&to)?;
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => fs::create_dir(&to)?,
                Err(e) => return Err(e),
            }
            copy_tree_contents(&from, &to)?;
            fs::set_permissions(&to, mode_of(&fs::symlink_metadata(&from)?))?;
        } else if kind.is_file() {
            copy_regular(&from, &fs::symlink_metadata(&from)?, &to)?;
        }
    }
    Ok(())
}

/// Removes a working directory this provider created; a missing directory is fine. Retries
/// once after making every directory in it writable (tools such as Go leave read-only trees).
async fn remove_owned_dir(path: PathBuf) -> Result<()> {
    blocking(move || {
        let attempt = |path: &Path| match fs::remove_dir_all(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        };
        attempt(&path)
            .or_else(|_| {
                make_writable(&path);
                attempt(&path)
            })
            .map_err(|e| {
                Error::environment(format!(
                    "environment `{ID}`: cannot remove `{}`: {e}",
                    path.display()
                ))
            })
    })
    .await
}

fn make_writable(dir: &Path) {
    let Ok(meta) = fs::symlink_metadata(dir) else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let _ = fs::set_permissions(
        dir,
        fs::Permissions::from_mode(meta.permissions().mode() | 0o700),
    );
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                make_writable(&entry.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentcompass_plugin_api::contracts::{EnvironmentSpec, JsonMap};
    use agentcompass_plugin_api::ErrorKind;
    use std::time::Instant;

    fn request(params: JsonMap) -> OpenEnvironmentRequest {
        let mut spec = EnvironmentSpec::new(ID);
        spec.params = params;
        OpenEnvironmentRequest::new("run", "task/1 ü", spec)
    }

    async fn open_with(params: JsonMap, resolved: &[(&str, &str)]) -> (SessionRef, PathBuf) {
        let mut req = request(params);
        req.resolved_env = resolved
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let session = HostProcessProvider
            .open(&Ctx::detached(), &req)
            .await
            .unwrap();
        let dir = PathBuf::from(session.info().default_workdir.unwrap());
        (session, dir)
    }

    async fn open() -> (SessionRef, PathBuf) {
        open_with(JsonMap::new(), &[]).await
    }

    /// Gone or a zombie (pid 1 in a container may never reap it).
    fn process_gone(pid: &str) -> bool {
        match fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        }
    }

    async fn wait_gone(pid: &str) -> bool {
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            let alive = std::process::Command::new("kill")
                .args(["-0", pid])
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !alive || process_gone(pid) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }

    async fn read_pid(session: &SessionRef, path: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Ok(text) = session.read_text(path).await {
                if !text.trim().is_empty() {
                    return text.trim().to_string();
                }
            }
            assert!(Instant::now() < deadline, "{path} never written");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[test]
    fn registration_and_capabilities() {
        let all = crate::builtins::all();
        let entry = all.iter().find(|b| b.info.id == ID).unwrap();
        assert_eq!(entry.info.kind, ComponentKind::Environment);
        assert_eq!(entry.info.description, DESCRIPTION);
        let field = entry.info.config_schema.get("workdir").unwrap();
        assert_eq!(
            (field.kind, &field.default),
            (ConfigType::String, &Value::Null)
        );
        assert!(matches!(entry.factory, BuiltinFactory::Environment(_)));
        let caps = HostProcessProvider.capabilities().unwrap();
        assert_eq!(caps.network_modes, vec![NetworkMode::Public]);
        assert!(caps.task_env && !caps.startup_env && !caps.dynamic_network_policy);
        assert_eq!(caps.operating_systems, vec!["linux".to_string()]);
        assert!(caps.resource_fields.is_empty());
        assert_eq!(sanitise("a/b c..x"), "a_b_c..x");
        assert_eq!(sanitise(""), "task");
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn first_use_creates_private_owned_dir_and_open_rejects_bad_params() {
        let (session, dir) = open().await;
        let info = session.info();
        assert_eq!(info.provider, ID);
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("agentcompass-task_1__-1-"), "{name}");
        assert_eq!(info.id, name);
        assert!(fs::symlink_metadata(&dir).is_err(), "created at open");
        assert!(session.is_dir("").await.unwrap());
        let info = session.info();
        assert_eq!(info.default_workdir.as_deref(), dir.to_str());
        assert_eq!(info.close_params["owned"], true);
        assert_eq!(info.close_params["workdir"], dir.to_string_lossy().as_ref());
        let mode = fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        assert!(dir.starts_with(std::env::temp_dir()));
        session.close().await.unwrap();

        let mut bad = JsonMap::new();
        bad.insert("workdir".into(), json!(3));
        let err = HostProcessProvider
            .open(&Ctx::detached(), &request(bad))
            .await
            .err()
            .unwrap();
        assert_eq!(err.kind, ErrorKind::InvalidInput);
        assert!(err.message.contains("workdir"), "{}", err.message);
        let mut unknown = JsonMap::new();
        unknown.insert("image".into(), json!("x"));
        assert!(HostProcessProvider
            .open(&Ctx::detached(), &request(unknown))
            .await
            .is_err());
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn argv_and_shell_exec() {
        let (session, _dir) = open().await;
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
        let r = session
            .exec(ExecRequest::shell("echo $((1 + 2)); printf '\\377'"))
            .await
            .unwrap();
        assert_eq!((r.returncode, r.stdout.as_str()), (0, "3\n\u{fffd}"));
        let r = session
            .exec(ExecRequest::shell("kill -9 $$"))
            .await
            .unwrap();
        assert_eq!(r.returncode, 137);

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
        assert!(err.message.contains("/nonexistent/program"));
        let err = session
            .exec(ExecRequest::shell("true").timeout(-1.0))
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidInput);
        session.close().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn cwd_defaults_to_workdir_and_resolves_relative_paths() {
        let (session, dir) = open().await;
        let r = session.exec(ExecRequest::shell("pwd -P")).await.unwrap();
        let real = fs::canonicalize(&dir).unwrap();
        assert_eq!(r.stdout.trim(), real.to_string_lossy());
        session.write_text("sub/x.txt", "x").await.unwrap();
        let r = session
            .exec(ExecRequest::argv(["cat", "x.txt"]).cwd("sub"))
            .await
            .unwrap();
        assert_eq!(r.stdout, "x");
        let r = session
            .exec(ExecRequest::shell("pwd -P").cwd("/"))
            .await
            .unwrap();
        assert_eq!(r.stdout.trim(), "/");
        let err = session
            .exec(ExecRequest::shell("true").cwd("missing"))
            .await
            .unwrap_err();
        assert!(err.message.contains("missing"), "{}", err.message);
        session.close().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn env_precedence_and_required_conflicts() {
        let (session, _dir) = open_with(
            JsonMap::new(),
            &[
                ("AC_SESSION", "session-value"),
                ("AC_BOTH", "session-value"),
            ],
        )
        .await;
        let show = "printf '%s|%s|%s|%s|%s' \"$AC_SESSION\" \"$AC_BOTH\" \"$AC_CALL\" \
                    \"$AC_REQ\" \"${PATH:+inherited}\"";
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
            "session-value|session-value|call-value|required-value|inherited"
        );
        let err = session
            .exec(ExecRequest::shell("true").required_env("AC_BOTH", "secret-other"))
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidInput);
        assert!(err.message.contains("AC_BOTH"), "{}", err.message);
        assert!(
            !err.message.contains("secret-other") && !err.message.contains("session-value"),
            "{}",
            err.message
        );
        let err = session
            .exec(
                ExecRequest::shell("true")
                    .env("AC_X", "a")
                    .required_env("AC_X", "b"),
            )
            .await
            .unwrap_err();
        assert!(err.message.contains("AC_X"));
        assert!(session
            .exec(ExecRequest::shell("true").env("BAD=NAME", "v"))
            .await
            .is_err());
        session.close().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn timeout_kills_the_whole_group() {
        let (session, _dir) = open().await;
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

        // A background grandchild holds the output pipes: the call must still return, with the
        // output captured so far, and the grandchild must be gone.
        let started = Instant::now();
        let r = session
            .exec(ExecRequest::shell("sleep 30 & echo $!; echo partial >&2; sleep 30").timeout(0.5))
            .await
            .unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert_eq!((r.returncode, r.timed_out), (124, true));
        assert_eq!(r.stderr, "partial\n");
        let pid = r.stdout.trim().to_string();
        assert!(pid.parse::<u32>().is_ok(), "{pid:?}");
        assert!(wait_gone(&pid).await, "background process {pid} survived");

        // Without a timeout, a background child holding the pipes delays the result by at most
        // the pipe grace period.
        let started = Instant::now();
        let r = session
            .exec(ExecRequest::shell("sleep 30 & echo $!; echo done"))
            .await
            .unwrap();
        assert!(started.elapsed() < PIPE_GRACE + Duration::from_secs(2));
        assert_eq!(r.returncode, 0);
        let pid = r.stdout.lines().next().unwrap().to_string();
        assert!(r.stdout.ends_with("done\n"));
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid])
            .stderr(Stdio::null())
            .status();
        session.close().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn dropping_exec_kills_the_group() {
        let (session, _dir) = open().await;
        let cancelled = tokio::time::timeout(
            Duration::from_millis(500),
            session.exec(ExecRequest::shell("sleep 30 & echo $! > bg.pid; sleep 30")),
        )
        .await;
        assert!(cancelled.is_err());
        let pid = read_pid(&session, "bg.pid").await;
        assert!(wait_gone(&pid).await, "background process {pid} survived");
        session.close().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn detach_returns_immediately_and_close_kills_it() {
        let (session, _dir) = open().await;
        let started = Instant::now();
        let r = session
            .exec(ExecRequest::shell("sleep 30 & echo $! > bg.pid; sleep 30").detach())
            .await
            .unwrap();
        assert!(started.elapsed() < Duration::from_secs(1));
        assert_eq!(
            (r.returncode, r.stdout.as_str(), r.timed_out),
            (0, "", false)
        );
        let pid = read_pid(&session, "bg.pid").await;
        assert!(!process_gone(&pid));
        session.close().await.unwrap();
        assert!(
            wait_gone(&pid).await,
            "detached process {pid} survived close"
        );
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn file_transfers_keep_modes() {
        let (session, dir) = open().await;
        let host = tempfile::tempdir().unwrap();
        let src = host.path().join("tool.sh");
        fs::write(&src, "#!/bin/sh\necho hi\n").unwrap();
        fs::set_permissions(&src, fs::Permissions::from_mode(0o750)).unwrap();

        session.upload(&src, "bin/tool.sh").await.unwrap();
        let inside = dir.join("bin/tool.sh");
        assert_eq!(
            fs::metadata(&inside).unwrap().permissions().mode() & 0o7777,
            0o750
        );
        assert_eq!(
            session
                .exec(ExecRequest::argv(["./bin/tool.sh"]))
                .await
                .unwrap()
                .stdout,
            "hi\n"
        );
        // Into an existing directory, and onto itself (a no-op, not a deletion).
        session.upload(&src, "bin").await.unwrap();
        session
            .upload(&inside, inside.to_str().unwrap())
            .await
            .unwrap();
        assert!(inside.is_file());

        let back = host.path().join("out/deep/tool.sh");
        session.download("bin/tool.sh", &back).await.unwrap();
        assert_eq!(fs::read_to_string(&back).unwrap(), "#!/bin/sh\necho hi\n");
        assert_eq!(
            fs::metadata(&back).unwrap().permissions().mode() & 0o7777,
            0o750
        );
        let err = session
            .download("missing.txt", &host.path().join("m"))
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Environment);
        assert!(err.message.contains("missing.txt"), "{}", err.message);
        session.close().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn directory_transfers_keep_modes_and_symlinks_and_merge() {
        let (session, dir) = open().await;
        let host = tempfile::tempdir().unwrap();
        let tree = host.path().join("tree");
        fs::create_dir_all(tree.join("a/b")).unwrap();
        fs::write(tree.join("a/b/run.sh"), "run").unwrap();
        fs::set_permissions(tree.join("a/b/run.sh"), fs::Permissions::from_mode(0o750)).unwrap();
        fs::write(tree.join("top.txt"), "top").unwrap();
        std::os::unix::fs::symlink("a/b/run.sh", tree.join("link")).unwrap();
        fs::set_permissions(tree.join("a"), fs::Permissions::from_mode(0o711)).unwrap();

        session
            .write_text("dest/existing.txt", "keep")
            .await
            .unwrap();
        session.upload_dir(&tree, "dest").await.unwrap();
        let dest = dir.join("dest");
        assert_eq!(
            fs::read_to_string(dest.join("existing.txt")).unwrap(),
            "keep"
        );
        assert_eq!(fs::read_to_string(dest.join("a/b/run.sh")).unwrap(), "run");
        let mode = |p: &Path| fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode(&dest.join("a/b/run.sh")), 0o750);
        assert_eq!(mode(&dest.join("a")), 0o711);
        assert_eq!(
            fs::read_link(dest.join("link")).unwrap(),
            Path::new("a/b/run.sh")
        );
        // Again: merging over what is there.
        session.upload_dir(&tree, "dest").await.unwrap();

        let out = host.path().join("out");
        session.download_dir("dest", &out).await.unwrap();
        assert_eq!(fs::read_to_string(out.join("top.txt")).unwrap(), "top");
        assert_eq!(
            fs::read_to_string(out.join("existing.txt")).unwrap(),
            "keep"
        );
        assert_eq!(mode(&out.join("a/b/run.sh")), 0o750);
        assert!(fs::symlink_metadata(out.join("link"))
            .unwrap()
            .file_type()
            .is_symlink());

        let err = session
            .upload_dir(&tree, tree.join("a").to_str().unwrap())
            .await;
        assert!(err.is_err());
        assert!(session.download_dir("nope", &out).await.is_err());
        session.close().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn text_and_probes() {
        let (session, dir) = open().await;
        session.write_text("x/y/z.txt", "héllo\n").await.unwrap();
        assert_eq!(session.read_text("x/y/z.txt").await.unwrap(), "héllo\n");
        let absolute = dir.join("x/y/z.txt");
        assert_eq!(
            session.read_text(absolute.to_str().unwrap()).await.unwrap(),
            "héllo\n"
        );
        assert!(session.is_file("x/y/z.txt").await.unwrap());
        assert!(!session.is_dir("x/y/z.txt").await.unwrap());
        assert!(session.is_dir("x/y").await.unwrap());
        assert!(session.is_dir("").await.unwrap());
        assert!(!session.is_file("x/y").await.unwrap());
        assert!(!session.is_file("missing").await.unwrap());
        assert!(!session.is_dir("missing/deeper").await.unwrap());
        assert!(!session.is_dir("x/y/z.txt/under-a-file").await.unwrap());
        fs::write(dir.join("bin.dat"), [0xff, 0xfe]).unwrap();
        let err = session.read_text("bin.dat").await.unwrap_err();
        assert!(err.message.contains("UTF-8"));
        assert!(session.read_text("missing").await.is_err());
        assert_eq!(session.endpoint().await.unwrap(), None);
        session
            .set_network_policy(&Default::default())
            .await
            .unwrap();
        session.close().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn close_removes_only_owned_dirs_and_is_idempotent() {
        let (session, dir) = open().await;
        session.write_text("a/b.txt", "x").await.unwrap();
        fs::set_permissions(dir.join("a"), fs::Permissions::from_mode(0o500)).unwrap();
        session.close().await.unwrap();
        assert!(!dir.exists());
        session.close().await.unwrap();

        // Crash cleanup from persisted close_params.
        let (session, dir) = open().await;
        session.write_text("c.txt", "x").await.unwrap();
        let params = session.info().close_params;
        drop(session);
        assert!(dir.exists());
        let provider = HostProcessProvider;
        provider.close(&Ctx::detached(), &params).await.unwrap();
        assert!(!dir.exists());
        provider.close(&Ctx::detached(), &params).await.unwrap();
        let refused = provider
            .close(&Ctx::detached(), &json!({"workdir": "/etc", "owned": true}))
            .await;
        assert!(refused.is_err());
        provider
            .close(
                &Ctx::detached(),
                &json!({"workdir": "/etc", "owned": false}),
            )
            .await
            .unwrap();
        provider
            .close(&Ctx::detached(), &Value::Null)
            .await
            .unwrap();

        // A fixed workdir is created if needed and never removed.
        let host = tempfile::tempdir().unwrap();
        let fixed = host.path().join("work");
        let mut params = JsonMap::new();
        params.insert("workdir".into(), json!(fixed.to_str().unwrap()));
        let (session, dir) = open_with(params, &[]).await;
        assert_eq!(dir, fixed);
        let info = session.info();
        assert_eq!(info.close_params["owned"], false);
        assert!(info.id.starts_with("host_process-"));
        session.write_text("kept.txt", "k").await.unwrap();
        session.close().await.unwrap();
        provider
            .close(&Ctx::detached(), &info.close_params)
            .await
            .unwrap();
        assert!(fixed.join("kept.txt").is_file());
    }

    /// Opens an owned session for a task id no other test (or test process) uses, so the
    /// directories it may create can be counted by name.
    async fn open_unique() -> (SessionRef, PathBuf, String) {
        let task = format!("lazy-{}", random_suffix());
        let mut req = request(JsonMap::new());
        req.task_id = task.clone();
        let session = HostProcessProvider
            .open(&Ctx::detached(), &req)
            .await
            .unwrap();
        let dir = PathBuf::from(session.info().default_workdir.unwrap());
        (session, dir, format!("{OWNED_PREFIX}{task}-"))
    }

    /// The entries of the system temporary directory whose names start with `prefix`.
    fn temp_entries(prefix: &str) -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
            .map(|e| e.path())
            .collect();
        found.sort();
        found
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn unused_session_creates_nothing_on_disk() {
        let (session, dir, prefix) = open_unique().await;
        assert!(dir.starts_with(std::env::temp_dir()));
        assert!(fs::symlink_metadata(&dir).is_err());
        let info = session.info();
        assert_eq!(info.close_params, Value::Null);
        assert_eq!(info.default_workdir.as_deref(), dir.to_str());

        // Absolute paths do not need the working directory.
        let host = tempfile::tempdir().unwrap();
        let file = host.path().join("f.txt");
        let file = file.to_str().unwrap();
        session.write_text(file, "abs").await.unwrap();
        assert_eq!(session.read_text(file).await.unwrap(), "abs");
        assert!(session.is_file(file).await.unwrap());
        assert!(session.is_dir(host.path().to_str().unwrap()).await.unwrap());
        let r = session
            .exec(ExecRequest::shell("pwd -P").cwd("/"))
            .await
            .unwrap();
        assert_eq!(r.stdout.trim(), "/");
        session
            .download(file, &host.path().join("g.txt"))
            .await
            .unwrap();
        assert!(fs::symlink_metadata(&dir).is_err());
        assert_eq!(session.info().close_params, Value::Null);

        session.close().await.unwrap();
        session.close().await.unwrap();
        assert!(fs::symlink_metadata(&dir).is_err());
        assert!(temp_entries(&prefix).is_empty());
        // Nothing is created after close either.
        let err = session.exec(ExecRequest::shell("true")).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Environment);
        assert!(err.message.contains("closed"), "{}", err.message);
        assert!(session.write_text("late.txt", "x").await.is_err());
        assert!(temp_entries(&prefix).is_empty());
        assert_eq!(session.info().close_params, Value::Null);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn first_exec_creates_the_dir_private_and_sets_close_params() {
        let (session, dir, prefix) = open_unique().await;
        assert_eq!(session.info().close_params, Value::Null);
        let r = session.exec(ExecRequest::shell("pwd -P")).await.unwrap();
        assert_eq!(r.returncode, 0);
        let real = fs::canonicalize(&dir).unwrap();
        assert_eq!(r.stdout.trim(), real.to_string_lossy());
        let meta = fs::symlink_metadata(&dir).unwrap();
        assert!(meta.is_dir());
        assert_eq!(meta.permissions().mode() & 0o7777, 0o700);
        let info = session.info();
        assert_eq!(
            info.close_params,
            json!({"workdir": dir.to_str().unwrap(), "owned": true})
        );
        assert_eq!(info.default_workdir.as_deref(), dir.to_str());
        // Later uses reuse it.
        session.exec(ExecRequest::shell("touch a")).await.unwrap();
        assert!(dir.join("a").is_file());
        assert_eq!(temp_entries(&prefix), vec![dir.clone()]);
        session.close().await.unwrap();
        assert!(!dir.exists());
        assert!(temp_entries(&prefix).is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 8)]
    async fn concurrent_first_uses_create_the_dir_once() {
        let (session, dir, prefix) = open_unique().await;
        let barrier = Arc::new(tokio::sync::Barrier::new(16));
        let tasks: Vec<_> = (0..16)
            .map(|i| {
                let (session, barrier) = (session.clone(), barrier.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    match i % 4 {
                        0 => session
                            .write_text(&format!("f{i}.txt"), "x")
                            .await
                            .map(|_| ()),
                        1 => session.exec(ExecRequest::argv(["true"])).await.map(|_| ()),
                        2 => session.is_dir("").await.map(|d| assert!(d)),
                        _ => session.is_file("missing").await.map(|f| assert!(!f)),
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap().unwrap();
        }
        assert_eq!(temp_entries(&prefix), vec![dir.clone()]);
        for i in (0..16).step_by(4) {
            assert!(dir.join(format!("f{i}.txt")).is_file());
        }
        assert_eq!(
            session.info().close_params["workdir"],
            dir.to_str().unwrap()
        );
        session.close().await.unwrap();
        assert!(temp_entries(&prefix).is_empty());
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_taken_reserved_name_gets_another_and_is_left_alone() {
        let (session, reserved, prefix) = open_unique().await;
        fs::create_dir(&reserved).unwrap();
        fs::write(reserved.join("theirs.txt"), "t").unwrap();
        session.write_text("ours.txt", "o").await.unwrap();
        let info = session.info();
        let dir = PathBuf::from(info.default_workdir.unwrap());
        assert_ne!(dir, reserved);
        assert!(dir
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(&prefix));
        assert_eq!(info.close_params["workdir"], dir.to_str().unwrap());
        assert!(dir.join("ours.txt").is_file() && !dir.join("theirs.txt").exists());
        assert_eq!(
            fs::metadata(&dir).unwrap().permissions().mode() & 0o7777,
            0o700
        );
        session.close().await.unwrap();
        assert!(!dir.exists());
        assert!(reserved.join("theirs.txt").is_file());
        fs::remove_dir_all(&reserved).unwrap();
    }
}
