//! One open `docker` environment: a running container, driven with execs and archives.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use agentcompass_plugin_api::contracts::{ExecCommand, ExecRequest, ExecResult, SessionInfo};
use agentcompass_plugin_api::sdk::{async_trait, EnvironmentSession};
use agentcompass_plugin_api::{Error, Result};
use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use bollard::query_parameters::{DownloadFromContainerOptions, UploadToContainerOptions};
use bollard::Docker;
use futures_util::{Stream, StreamExt};
use serde_json::json;
use tokio::time::Instant;

use crate::archive::{self, Fetched};
use crate::{docker_error, normalize, random_suffix, remove_container, status_of, ID};

/// The variable marking every process started by one exec (used to kill them on a timeout).
pub(crate) const EXEC_MARKER: &str = "AGENTCOMPASS_EXEC_ID";

/// How long output may keep flowing after the command ended (a background child still holding
/// it) or was killed, before the captured output is returned without it.
const OUTPUT_GRACE: Duration = Duration::from_secs(2);

/// How often a running command is checked for having ended while its output stays open.
const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// How long the kill of a timed-out command may take.
const KILL_TIMEOUT: Duration = Duration::from_secs(15);

/// Symlinks followed while downloading one path before giving up (the kernel's limit).
const MAX_SYMLINKS: usize = 40;

/// An open `docker` session. Deliberately not `Debug`: it holds resolved secrets.
pub(crate) struct DockerSession {
    docker: Docker,
    container: String,
    docker_host: String,
    workdir: String,
    env: BTreeMap<String, String>,
    closed: AtomicBool,
}

impl DockerSession {
    pub(crate) fn new(
        docker: Docker,
        container: String,
        docker_host: String,
        workdir: String,
        env: BTreeMap<String, String>,
    ) -> Self {
        DockerSession {
            docker,
            container,
            docker_host,
            workdir,
            env,
            closed: AtomicBool::new(false),
        }
    }

    /// A session path as an absolute container path.
    fn abs(&self, path: &str) -> String {
        normalize(Path::new(&self.workdir), path)
    }

    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::SeqCst) {
            Err(Error::environment(format!(
                "environment `{ID}`: the session is closed (container `{}`)",
                self.container
            )))
        } else {
            Ok(())
        }
    }

    /// Runs `work(docker, container)` on the provider runtime.
    async fn call<T, F, Fut>(&self, work: F) -> Result<T>
    where
        F: FnOnce(Docker, String) -> Fut,
        Fut: Future<Output = Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        self.check_open()?;
        crate::rt::spawn(work(self.docker.clone(), self.container.clone())).await?
    }

    /// `test <flag> <path>` in the container.
    async fn test(&self, flag: &'static str, path: &str) -> Result<bool> {
        let path = self.abs(path);
        self.call(
            move |docker, container| async move { probe(&docker, &container, flag, &path).await },
        )
        .await
    }
}

#[async_trait]
impl EnvironmentSession for DockerSession {
    fn info(&self) -> SessionInfo {
        SessionInfo {
            id: self.container.clone(),
            provider: ID.to_string(),
            default_workdir: Some(self.workdir.clone()),
            close_params: json!({"container": self.container, "docker_host": self.docker_host}),
        }
    }

    async fn exec(&self, request: ExecRequest) -> Result<ExecResult> {
        request.validate().map_err(Error::invalid_input)?;
        let timeout = timeout_duration(request.timeout_seconds)?;
        let env = request.effective_env(&self.env)?;
        let cwd = match &request.cwd {
            Some(cwd) => self.abs(cwd),
            None => self.workdir.clone(),
        };
        let argv = match request.command {
            ExecCommand::Shell(line) => vec!["/bin/sh".to_string(), "-c".to_string(), line],
            ExecCommand::Argv(argv) => argv,
        };
        let marker = random_suffix();
        let mut env: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        env.push(format!("{EXEC_MARKER}={marker}"));
        let detach = request.detach;
        self.call(move |docker, container| async move {
            if detach {
                start_detached(&docker, &container, argv, env, &cwd).await
            } else {
                run_exec(&docker, &container, argv, env, &cwd, timeout, Some(marker)).await
            }
        })
        .await
    }

    async fn upload(&self, src: &Path, dst: &str) -> Result<()> {
        let target = self.abs(dst);
        let src = src.to_path_buf();
        let shown = dst.to_string();
        self.call(move |docker, container| async move {
            let fail = |e: String| transfer_error("upload", &src.display().to_string(), &shown, e);
            let meta = std::fs::metadata(&src).map_err(|e| fail(e.to_string()))?;
            if meta.is_dir() {
                return Err(fail(
                    "the source is a directory (use the *_dir operation)".to_string(),
                ));
            }
            let target = if probe(&docker, &container, "-d", &target).await? {
                let name = src.file_name().map(|n| n.to_string_lossy().into_owned());
                normalize(Path::new(&target), &name.unwrap_or_default())
            } else {
                target
            };
            let from = src.clone();
            let tar = blocking(move || archive::file_tar_from_host(&from, &target))
                .await?
                .map_err(|e| fail(e.to_string()))?;
            put(&docker, &container, tar).await.map_err(fail)
        })
        .await
    }

    async fn download(&self, src: &str, dst: &Path) -> Result<()> {
        let source = self.abs(src);
        let (shown, dst) = (src.to_string(), dst.to_path_buf());
        self.call(move |docker, container| async move {
            let fail =
                |e: String| transfer_error("download", &shown, &dst.display().to_string(), e);
            let (data, mode) = fetch_file(&docker, &container, &source)
                .await
                .map_err(fail)?;
            let name = Path::new(&source)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let to = dst.clone();
            blocking(move || archive::write_host_file(&to, &name, &data, mode))
                .await?
                .map_err(|e| fail(e.to_string()))
        })
        .await
    }

    async fn upload_dir(&self, src: &Path, dst: &str) -> Result<()> {
        let target = self.abs(dst);
        let src = src.to_path_buf();
        let shown = dst.to_string();
        self.call(move |docker, container| async move {
            let fail =
                |e: String| transfer_error("upload_dir", &src.display().to_string(), &shown, e);
            if target == "/" {
                return Err(fail("cannot replace the root directory".to_string()));
            }
            let from = src.clone();
            let tar = blocking(move || archive::tree_tar_from_host(&from, &target))
                .await?
                .map_err(|e| fail(e.to_string()))?;
            put(&docker, &container, tar).await.map_err(fail)
        })
        .await
    }

    async fn download_dir(&self, src: &str, dst: &Path) -> Result<()> {
        let source = self.abs(src);
        let (shown, dst) = (src.to_string(), dst.to_path_buf());
        self.call(move |docker, container| async move {
            let fail =
                |e: String| transfer_error("download_dir", &shown, &dst.display().to_string(), e);
            let mut path = source;
            for _ in 0..MAX_SYMLINKS {
                let tar = fetch(&docker, &container, &path).await.map_err(fail)?;
                let to = dst.clone();
                match blocking(move || archive::extract_tree(&tar, &to))
                    .await?
                    .map_err(|e| fail(e.to_string()))?
                {
                    None => return Ok(()),
                    Some(link) => path = follow(&path, &link),
                }
            }
            Err(fail("too many levels of symbolic links".to_string()))
        })
        .await
    }

    async fn read_text(&self, path: &str) -> Result<String> {
        let source = self.abs(path);
        let shown = path.to_string();
        self.call(move |docker, container| async move {
            let (data, _) = fetch_file(&docker, &container, &source)
                .await
                .map_err(|e| {
                    Error::environment(format!("read_text: cannot read `{shown}`: {e}"))
                })?;
            String::from_utf8(data)
                .map_err(|_| Error::environment(format!("read_text: `{shown}` is not valid UTF-8")))
        })
        .await
    }

    async fn write_text(&self, path: &str, content: &str) -> Result<()> {
        let target = self.abs(path);
        let shown = path.to_string();
        let content = content.as_bytes().to_vec();
        self.call(move |docker, container| async move {
            let fail =
                |e: String| Error::environment(format!("write_text: cannot write `{shown}`: {e}"));
            let tar =
                archive::file_tar(&target, &content, 0o644).map_err(|e| fail(e.to_string()))?;
            put(&docker, &container, tar).await.map_err(fail)
        })
        .await
    }

    async fn is_file(&self, path: &str) -> Result<bool> {
        self.test("-f", path).await
    }

    async fn is_dir(&self, path: &str) -> Result<bool> {
        self.test("-d", path).await
    }

    async fn close(&self) -> Result<()> {
        self.closed.store(true, Ordering::SeqCst);
        crate::rt::spawn({
            let (docker, container) = (self.docker.clone(), self.container.clone());
            async move { remove_container(&docker, &container).await }
        })
        .await?
    }
}

/// Runs blocking host file work on the runtime's blocking pool.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| Error::environment(format!("environment `{ID}`: file task failed: {e}")))
}

fn transfer_error(op: &str, src: &str, dst: &str, e: String) -> Error {
    Error::environment(format!("{op}: cannot copy `{src}` to `{dst}`: {e}"))
}

/// An `exec` timeout as a duration (as `host_process`): `None` is no limit, and so is a value
/// too large to represent; a negative or NaN value is refused.
fn timeout_duration(seconds: Option<f64>) -> Result<Option<Duration>> {
    match seconds {
        None => Ok(None),
        Some(s) if s.is_nan() || s < 0.0 => Err(Error::invalid_input(format!(
            "exec: timeout_seconds must be a non-negative number, got {s}"
        ))),
        Some(s) => Ok(Duration::try_from_secs_f64(s).ok()),
    }
}

fn exec_error(container: &str, op: &str, e: bollard::errors::Error) -> Error {
    match status_of(&e) {
        Some(404) => Error::environment(format!(
            "exec: container `{container}` does not exist (closed or removed)"
        )),
        Some(409) => Error::environment(format!("exec: container `{container}` is not running")),
        _ => docker_error(&format!("exec: {op}"), e),
    }
}

/// `test <flag> <path>` (through `/bin/sh`): exit 0 is true, 1 false; anything else is an
/// error.
async fn probe(docker: &Docker, container: &str, flag: &str, path: &str) -> Result<bool> {
    // `test` is a shell builtin: no `test` binary needed in the image.
    let argv = vec![
        "/bin/sh".to_string(),
        "-c".to_string(),
        format!("test {flag} \"$1\""),
        "sh".to_string(),
        path.to_string(),
    ];
    let r = run_exec(docker, container, argv, Vec::new(), "/", None, None).await?;
    match r.returncode {
        0 => Ok(true),
        1 => Ok(false),
        code => Err(Error::environment(format!(
            "environment `{ID}`: `test {flag} {path}` failed with exit code {code}: {}",
            r.stderr.trim()
        ))),
    }
}

/// Runs a command to completion without a timeout marker (internal commands).
pub(crate) async fn exec_captured(
    docker: &Docker,
    container: &str,
    argv: Vec<String>,
    env: Vec<String>,
    cwd: &str,
    timeout: Option<Duration>,
) -> Result<ExecResult> {
    run_exec(docker, container, argv, env, cwd, timeout, None).await
}

/// Starts a command in the background.
async fn start_detached(
    docker: &Docker,
    container: &str,
    argv: Vec<String>,
    env: Vec<String>,
    cwd: &str,
) -> Result<ExecResult> {
    let created = docker
        .create_exec(
            container,
            CreateExecOptions {
                attach_stdout: Some(false),
                attach_stderr: Some(false),
                env: Some(env),
                cmd: Some(argv),
                working_dir: Some(cwd.to_string()),
                ..Default::default()
            },
        )
        .await
        .map_err(|e| exec_error(container, "create", e))?;
    docker
        .start_exec(
            &created.id,
            Some(StartExecOptions {
                detach: true,
                ..Default::default()
            }),
        )
        .await
        .map_err(|e| exec_error(container, "start", e))?;
    Ok(ExecResult::new(0, "", ""))
}

/// Kills every process of the exec marked `marker` when dropped armed (the `exec` future was
/// dropped): the kill is spawned on the current runtime.
struct KillGuard {
    docker: Docker,
    container: String,
    marker: Option<String>,
}

impl KillGuard {
    /// Kills the marked processes now (and disarms).
    async fn kill(&mut self) {
        if let Some(marker) = self.marker.take() {
            kill_marked(&self.docker, &self.container, &marker).await;
        }
    }

    fn disarm(&mut self) {
        self.marker = None;
    }
}

impl Drop for KillGuard {
    fn drop(&mut self) {
        let Some(marker) = self.marker.take() else {
            return;
        };
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let (docker, container) = (self.docker.clone(), self.container.clone());
            handle.spawn(async move { kill_marked(&docker, &container, &marker).await });
        }
    }
}

/// SIGKILLs every process of the container whose environment holds the marker (best effort:
/// needs `/bin/sh` and `cat` in the image; runs as root). Command substitution drops the NUL
/// separators of `/proc/<pid>/environ`; the marker value is unique, so a substring match is
/// enough.
async fn kill_marked(docker: &Docker, container: &str, marker: &str) {
    let script = format!(
        "for p in /proc/[0-9]*; do \
           case \"$(cat \"$p/environ\" 2>/dev/null)\" in \
             *'{EXEC_MARKER}={marker}'*) kill -9 \"${{p#/proc/}}\" 2>/dev/null;; \
           esac; \
         done 2>/dev/null; true"
    );
    let argv = vec!["/bin/sh".to_string(), "-c".to_string(), script];
    let work = async {
        let created = docker
            .create_exec(
                container,
                CreateExecOptions {
                    attach_stdout: Some(true),
                    attach_stderr: Some(true),
                    cmd: Some(argv),
                    user: Some("0".to_string()),
                    working_dir: Some("/".to_string()),
                    ..Default::default()
                },
            )
            .await?;
        if let StartExecResults::Attached { mut output, .. } =
            docker.start_exec(&created.id, None).await?
        {
            while output.next().await.is_some() {}
        }
        Ok::<_, bollard::errors::Error>(())
    };
    match tokio::time::timeout(KILL_TIMEOUT, work).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => agentcompass_plugin_api::tracing::warn!(
            container = %container,
            "killing a timed-out command failed: {e}"
        ),
        Err(_) => agentcompass_plugin_api::tracing::warn!(
            container = %container,
            "killing a timed-out command timed out"
        ),
    }
}

#[derive(Default)]
struct Captured {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

impl Captured {
    fn push(&mut self, chunk: LogOutput) {
        match chunk {
            LogOutput::StdErr { message } => self.stderr.extend_from_slice(&message),
            LogOutput::StdOut { message } | LogOutput::Console { message } => {
                self.stdout.extend_from_slice(&message)
            }
            LogOutput::StdIn { .. } => {}
        }
    }

    /// Reads what is left of `output` for at most `grace`.
    async fn drain<S>(&mut self, output: &mut S, grace: Duration)
    where
        S: Stream<Item = std::result::Result<LogOutput, bollard::errors::Error>> + Unpin,
    {
        let until = Instant::now() + grace;
        while let Ok(Some(Ok(chunk))) = tokio::time::timeout_at(until, output.next()).await {
            self.push(chunk);
        }
    }

    fn texts(&self) -> (String, String) {
        (
            String::from_utf8_lossy(&self.stdout).into_owned(),
            String::from_utf8_lossy(&self.stderr).into_owned(),
        )
    }
}

/// Whether an exec is still running.
async fn exec_running(docker: &Docker, id: &str) -> Result<bool> {
    let inspected = docker
        .inspect_exec(id)
        .await
        .map_err(|e| docker_error("exec: inspect", e))?;
    Ok(inspected.running.unwrap_or(false))
}

/// The exit code of a finished exec (waiting briefly for the daemon to record it).
async fn exit_code(docker: &Docker, id: &str) -> Result<i32> {
    for _ in 0..200 {
        let inspected = docker
            .inspect_exec(id)
            .await
            .map_err(|e| docker_error("exec: inspect", e))?;
        if !inspected.running.unwrap_or(false) {
            if let Some(code) = inspected.exit_code {
                return Ok(i32::try_from(code).unwrap_or(-1));
            }
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    Err(Error::environment(
        "exec: the daemon did not report the command's exit code",
    ))
}

/// Runs one exec with captured output. With a `marker` (carried in `env`), a timeout or a
/// drop of this future kills the marked processes.
async fn run_exec(
    docker: &Docker,
    container: &str,
    argv: Vec<String>,
    env: Vec<String>,
    cwd: &str,
    timeout: Option<Duration>,
    marker: Option<String>,
) -> Result<ExecResult> {
    let program = argv.first().cloned().unwrap_or_default();
    let created = docker
        .create_exec(
            container,
            CreateExecOptions {
                attach_stdout: Some(true),
                attach_stderr: Some(true),
                env: Some(env),
                cmd: Some(argv),
                working_dir: Some(cwd.to_string()),
                ..Default::default()
            },
        )
        .await
        .map_err(|e| exec_error(container, "create", e))?;
    let mut guard = KillGuard {
        docker: docker.clone(),
        container: container.to_string(),
        marker,
    };
    let started = docker
        .start_exec(&created.id, None)
        .await
        .map_err(|e| exec_error(container, "start", e))?;
    let StartExecResults::Attached {
        mut output,
        input: _input,
    } = started
    else {
        return Err(Error::environment(
            "exec: the daemon did not attach the output",
        ));
    };
    let mut captured = Captured::default();
    let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
    let mut next_check = Instant::now() + POLL_INTERVAL;
    let mut timed_out = false;
    loop {
        let wake = deadline.map_or(next_check, |d| d.min(next_check));
        match tokio::time::timeout_at(wake, output.next()).await {
            Ok(Some(Ok(chunk))) => captured.push(chunk),
            Ok(Some(Err(e))) => return Err(docker_error("exec: reading the output", e)),
            Ok(None) => break,
            Err(_) => {
                let now = Instant::now();
                if deadline.is_some_and(|d| now >= d) {
                    timed_out = true;
                    break;
                }
                if !exec_running(docker, &created.id).await? {
                    // Ended; a background child may still hold the output open.
                    captured.drain(&mut output, OUTPUT_GRACE).await;
                    break;
                }
                next_check = now + POLL_INTERVAL;
            }
        }
    }
    if timed_out {
        guard.kill().await;
        captured.drain(&mut output, OUTPUT_GRACE).await;
        let (stdout, stderr) = captured.texts();
        return Ok(ExecResult::timeout(stdout, stderr));
    }
    guard.disarm();
    let code = exit_code(docker, &created.id).await?;
    let (stdout, stderr) = captured.texts();
    if matches!(code, 126 | 127) {
        let text = if stdout.contains("OCI runtime exec failed") {
            &stdout
        } else {
            &stderr
        };
        if text.contains("OCI runtime exec failed") {
            return Err(Error::environment(format!(
                "exec: cannot start `{program}` in `{cwd}`: {}",
                text.trim()
            )));
        }
    }
    Ok(ExecResult::new(code, stdout, stderr))
}

/// Uploads a tar archive, extracted at `/` of the container.
async fn put(docker: &Docker, container: &str, tar: Vec<u8>) -> std::result::Result<(), String> {
    let options = UploadToContainerOptions {
        path: "/".to_string(),
        no_overwrite_dir_non_dir: Some("true".to_string()),
        copy_uidgid: Some("true".to_string()),
    };
    docker
        .upload_to_container(
            container,
            Some(options),
            bollard::body_full(bytes::Bytes::from(tar)),
        )
        .await
        .map_err(|e| describe(container, e))
}

/// The archive of `path` in the container.
async fn fetch(
    docker: &Docker,
    container: &str,
    path: &str,
) -> std::result::Result<Vec<u8>, String> {
    let options = DownloadFromContainerOptions {
        path: path.to_string(),
    };
    let mut stream = docker.download_from_container(container, Some(options));
    let mut tar = Vec::new();
    while let Some(chunk) = stream.next().await {
        tar.extend_from_slice(&chunk.map_err(|e| describe(container, e))?);
    }
    Ok(tar)
}

/// The contents and mode of the regular file at `path` (symlinks followed).
async fn fetch_file(
    docker: &Docker,
    container: &str,
    path: &str,
) -> std::result::Result<(Vec<u8>, u32), String> {
    let mut path = path.to_string();
    for _ in 0..MAX_SYMLINKS {
        let tar = fetch(docker, container, &path).await?;
        match archive::single_file(&tar).map_err(|e| e.to_string())? {
            Fetched::File { data, mode } => return Ok((data, mode)),
            Fetched::Dir => {
                return Err("the source is a directory (use the *_dir operation)".to_string())
            }
            Fetched::Symlink(link) => path = follow(&path, &link),
        }
    }
    Err("too many levels of symbolic links".to_string())
}

/// The container path a symlink at `path` pointing to `link` resolves to.
fn follow(path: &str, link: &Path) -> String {
    let parent = Path::new(path).parent().unwrap_or(Path::new("/"));
    normalize(parent, &link.to_string_lossy())
}

/// A Docker error of a transfer, in a few words.
fn describe(container: &str, e: bollard::errors::Error) -> String {
    match e {
        bollard::errors::Error::DockerResponseServerError {
            status_code: 404,
            message,
        } => {
            if message.contains("No such container") {
                format!("container `{container}` does not exist (closed or removed)")
            } else {
                format!("no such file or directory ({message})")
            }
        }
        bollard::errors::Error::DockerResponseServerError {
            status_code,
            message,
        } => format!("the daemon refused ({status_code}): {message}"),
        other => other.to_string(),
    }
}
