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

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use agentcompass_plugin_api::contracts::{
    ComponentInfo, ComponentKind, ConfigField, ConfigSchema, ConfigType, ExecCommand, ExecRequest,
    ExecResult, NetworkMode, OpenEnvironmentRequest, ProviderCapabilities, SessionInfo,
};
use agentcompass_plugin_api::sdk::{
    async_trait, Ctx, EnvironmentProvider, EnvironmentSession, SessionRef,
};
use agentcompass_plugin_api::{Error, Result};
use serde_json::{json, Value};
use tokio::process::{Child, Command};

use super::files::{
    self, copy_file, copy_tree, create_private_dir, probe, random_suffix, read_text_file,
    remove_owned_dir, sanitise, transfer_error, unique, write_text_file,
};
use super::process::{kill_detached, run_captured, spawn_error, timeout_duration, GroupGuard};
use crate::{Builtin, BuiltinFactory};

/// Provider id.
pub const ID: &str = "host_process";

/// One-line description.
pub const DESCRIPTION: &str =
    "Commands run on this machine in a per-task working directory (public network only)";

/// Name prefix of the private working directories this provider creates (and alone removes).
const OWNED_PREFIX: &str = "agentcompass-";

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
                files::blocking(ID, move || {
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
        remove_owned_dir(path, ID).await
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
        files::blocking(ID, move || {
            let closed = state.lock.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(path) = state.created.get() {
                return Ok(path.clone());
            }
            if *closed {
                return Err(Error::environment(format!(
                    "environment `{ID}`: the session is closed"
                )));
            }
            let path = create_private_dir(&reserved, &prefix, ID)?;
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
        files::blocking(ID, move || {
            *state.lock.lock().unwrap_or_else(PoisonError::into_inner) = true;
            Ok(state.created.get().cloned())
        })
        .await
    }
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

    fn spawn_detached(&self, cmd: Command, program: &str, cwd: &Path) -> Result<ExecResult> {
        let child = super::process::spawn_detached(cmd, |e| spawn_error(program, cwd, e))?;
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
        let env = request.effective_env(&self.env)?;
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
        run_captured(cmd, program, timeout, |e| spawn_error(program, &cwd, e)).await
    }

    async fn upload(&self, src: &Path, dst: &str) -> Result<()> {
        let (src, dst) = (src.to_path_buf(), self.resolve(dst).await?);
        files::blocking(ID, move || {
            copy_file(&src, &dst).map_err(|e| transfer_error("upload", &src, &dst, e))
        })
        .await
    }

    async fn download(&self, src: &str, dst: &Path) -> Result<()> {
        let (src, dst) = (self.resolve(src).await?, dst.to_path_buf());
        files::blocking(ID, move || {
            copy_file(&src, &dst).map_err(|e| transfer_error("download", &src, &dst, e))
        })
        .await
    }

    async fn upload_dir(&self, src: &Path, dst: &str) -> Result<()> {
        let (src, dst) = (src.to_path_buf(), self.resolve(dst).await?);
        files::blocking(ID, move || {
            copy_tree(&src, &dst).map_err(|e| transfer_error("upload_dir", &src, &dst, e))
        })
        .await
    }

    async fn download_dir(&self, src: &str, dst: &Path) -> Result<()> {
        let (src, dst) = (self.resolve(src).await?, dst.to_path_buf());
        files::blocking(ID, move || {
            copy_tree(&src, &dst).map_err(|e| transfer_error("download_dir", &src, &dst, e))
        })
        .await
    }

    async fn read_text(&self, path: &str) -> Result<String> {
        read_text_file(&self.resolve(path).await?).await
    }

    async fn write_text(&self, path: &str, content: &str) -> Result<()> {
        write_text_file(&self.resolve(path).await?, content).await
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
        for child in self.take_detached() {
            kill_detached(child).await;
        }
        if let Some(dir) = self.workdir.close().await? {
            remove_owned_dir(dir.clone(), ID).await?;
            tracing::debug!(provider = ID, workdir = %dir.display(), "removed workdir");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::process::PIPE_GRACE;
    use super::*;
    use agentcompass_plugin_api::contracts::{EnvironmentSpec, JsonMap};
    use agentcompass_plugin_api::ErrorKind;
    use std::os::unix::fs::PermissionsExt;
    use std::time::{Duration, Instant};

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
        let all = crate::all();
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
