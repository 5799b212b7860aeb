//! Docker execs: captured output, timeouts (the marked processes killed), detached commands
//! and probes.

use std::time::Duration;

use crate::engine::Daemon;
use agentcompass_plugin_api::contracts::ExecResult;
use agentcompass_plugin_api::{Error, Result};
use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use futures_util::{Stream, StreamExt};
use tokio::time::Instant;

use crate::engine::status_of;

/// What one exec runs: the command, its environment (`KEY=VALUE`), working directory and
/// user (`None`: the image's).
pub(crate) struct ExecSpec {
    pub(crate) argv: Vec<String>,
    pub(crate) env: Vec<String>,
    pub(crate) cwd: String,
    pub(crate) user: Option<String>,
}

/// The variable marking every process started by one exec (used to kill them on a timeout).
pub(crate) const EXEC_MARKER: &str = "AGENTCOMPASS_EXEC_ID";

/// How long output may keep flowing after the command ended (a background child still holding
/// it) or was killed, before the captured output is returned without it.
const OUTPUT_GRACE: Duration = Duration::from_secs(2);

/// How often a running command is checked for having ended while its output stays open.
const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// How long the kill of a timed-out command may take.
const KILL_TIMEOUT: Duration = Duration::from_secs(15);

fn exec_error(docker: &Daemon, container: &str, op: &str, e: bollard::errors::Error) -> Error {
    match status_of(&e) {
        Some(404) => Error::environment(format!(
            "exec: container `{container}` does not exist (closed or removed)"
        )),
        Some(409) => Error::environment(format!("exec: container `{container}` is not running")),
        _ => docker.engine.error(&format!("exec: {op}"), e),
    }
}

/// `test <flag> <path>` (through `/bin/sh`): exit 0 is true, 1 false; anything else is an
/// error.
pub(crate) async fn probe(
    docker: &Daemon,
    container: &str,
    flag: &str,
    path: &str,
) -> Result<bool> {
    // `test` is a shell builtin: no `test` binary needed in the image.
    let argv = vec![
        "/bin/sh".to_string(),
        "-c".to_string(),
        format!("test {flag} \"$1\""),
        "sh".to_string(),
        path.to_string(),
    ];
    let spec = ExecSpec {
        argv,
        env: Vec::new(),
        cwd: "/".to_string(),
        user: None,
    };
    let r = run_exec(docker, container, spec, None, None).await?;
    match r.returncode {
        0 => Ok(true),
        1 => Ok(false),
        code => Err(Error::environment(format!(
            "environment `{}`: `test {flag} {path}` failed with exit code {code}: {}",
            docker.engine,
            r.stderr.trim()
        ))),
    }
}

/// Runs a command to completion without a timeout marker (internal commands).
pub(crate) async fn exec_captured(
    docker: &Daemon,
    container: &str,
    argv: Vec<String>,
    env: Vec<String>,
    cwd: &str,
    timeout: Option<Duration>,
) -> Result<ExecResult> {
    let spec = ExecSpec {
        argv,
        env,
        cwd: cwd.to_string(),
        user: None,
    };
    run_exec(docker, container, spec, timeout, None).await
}

/// Creates the exec of `spec`, its output attached or not; its id.
async fn create_exec(
    docker: &Daemon,
    container: &str,
    spec: ExecSpec,
    attach: bool,
) -> Result<String> {
    let created = docker
        .create_exec(
            container,
            CreateExecOptions {
                attach_stdout: Some(attach),
                attach_stderr: Some(attach),
                env: Some(spec.env),
                cmd: Some(spec.argv),
                working_dir: Some(spec.cwd),
                user: spec.user,
                ..Default::default()
            },
        )
        .await
        .map_err(|e| exec_error(docker, container, "create", e))?;
    Ok(created.id)
}

/// Starts a command in the background.
pub(crate) async fn start_detached(
    docker: &Daemon,
    container: &str,
    spec: ExecSpec,
) -> Result<ExecResult> {
    let id = create_exec(docker, container, spec, false).await?;
    docker
        .start_exec(
            &id,
            Some(StartExecOptions {
                detach: true,
                ..Default::default()
            }),
        )
        .await
        .map_err(|e| exec_error(docker, container, "start", e))?;
    Ok(ExecResult::new(0, "", ""))
}

/// Kills every process of the exec marked `marker` when dropped armed (the `exec` future was
/// dropped): the kill is spawned on the current runtime.
struct KillGuard {
    docker: Daemon,
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
async fn kill_marked(docker: &Daemon, container: &str, marker: &str) {
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

    /// Reads `output` until it ends, the exec ended (then what is left for at most
    /// [`OUTPUT_GRACE`]) or `deadline` passed. Whether the deadline passed.
    async fn collect<S>(
        &mut self,
        docker: &Daemon,
        id: &str,
        output: &mut S,
        deadline: Option<Instant>,
    ) -> Result<bool>
    where
        S: Stream<Item = std::result::Result<LogOutput, bollard::errors::Error>> + Unpin,
    {
        let mut next_check = Instant::now() + POLL_INTERVAL;
        loop {
            let wake = deadline.map_or(next_check, |d| d.min(next_check));
            match tokio::time::timeout_at(wake, output.next()).await {
                Ok(Some(Ok(chunk))) => self.push(chunk),
                Ok(Some(Err(e))) => return Err(docker.engine.error("exec: reading the output", e)),
                Ok(None) => return Ok(false),
                Err(_) => {
                    let now = Instant::now();
                    if deadline.is_some_and(|d| now >= d) {
                        return Ok(true);
                    }
                    if !exec_running(docker, id).await? {
                        // Ended; a background child may still hold the output open.
                        self.drain(output, OUTPUT_GRACE).await;
                        return Ok(false);
                    }
                    next_check = now + POLL_INTERVAL;
                }
            }
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
async fn exec_running(docker: &Daemon, id: &str) -> Result<bool> {
    let inspected = docker
        .inspect_exec(id)
        .await
        .map_err(|e| docker.engine.error("exec: inspect", e))?;
    Ok(inspected.running.unwrap_or(false))
}

/// The exit code of a finished exec (waiting briefly for the daemon to record it).
async fn exit_code(docker: &Daemon, id: &str) -> Result<i32> {
    for _ in 0..200 {
        let inspected = docker
            .inspect_exec(id)
            .await
            .map_err(|e| docker.engine.error("exec: inspect", e))?;
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
pub(crate) async fn run_exec(
    docker: &Daemon,
    container: &str,
    spec: ExecSpec,
    timeout: Option<Duration>,
    marker: Option<String>,
) -> Result<ExecResult> {
    let program = spec.argv.first().cloned().unwrap_or_default();
    let cwd = spec.cwd.clone();
    let id = create_exec(docker, container, spec, true).await?;
    let mut guard = KillGuard {
        docker: docker.clone(),
        container: container.to_string(),
        marker,
    };
    let started = docker
        .start_exec(&id, None)
        .await
        .map_err(|e| exec_error(docker, container, "start", e))?;
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
    if captured.collect(docker, &id, &mut output, deadline).await? {
        guard.kill().await;
        captured.drain(&mut output, OUTPUT_GRACE).await;
        let (stdout, stderr) = captured.texts();
        return Ok(ExecResult::timeout(stdout, stderr));
    }
    guard.disarm();
    let code = exit_code(docker, &id).await?;
    let (stdout, stderr) = captured.texts();
    if let Some(error) = start_failure(code, &stdout, &stderr, &program, &cwd) {
        return Err(error);
    }
    Ok(ExecResult::new(code, stdout, stderr))
}

/// What an engine writes when its OCI runtime could not start an exec'd command: Docker's
/// `OCI runtime exec failed: ...`; Podman's `Error: runc: exec failed: ...: OCI runtime
/// attempted to invoke a command that was not found` (127) or `...: OCI permission denied`
/// (126), crun's the same endings.
const START_FAILURE_MARKERS: [&str; 3] = [
    "OCI runtime exec failed",
    "OCI runtime attempted to invoke a command that was not found",
    "OCI permission denied",
];

/// The error of a command the runtime could not start (exit code 126 or 127 with the OCI
/// runtime's message), instead of its exit code. The message is the runtime's line (Podman
/// adds others, such as the attach stream's reset).
fn start_failure(code: i32, stdout: &str, stderr: &str, program: &str, cwd: &str) -> Option<Error> {
    if !matches!(code, 126 | 127) {
        return None;
    }
    let line = stdout.lines().chain(stderr.lines()).find(|line| {
        START_FAILURE_MARKERS
            .iter()
            .any(|marker| line.contains(marker))
    })?;
    Some(Error::environment(format!(
        "exec: cannot start `{program}` in `{cwd}`: {}",
        line.trim()
    )))
}

#[cfg(test)]
mod start_failure_tests {
    use super::start_failure;

    #[test]
    fn docker_and_podman_start_failures_are_errors_naming_the_runtime_line() {
        let docker = "OCI runtime exec failed: exec failed: unable to start container process: \
                      exec: \"nope\": executable file not found in $PATH: unknown\r\n";
        let podman = "Error: runc: exec failed: unable to start container process: exec: \
                      \"nope\": executable file not found in $PATH: OCI runtime attempted to \
                      invoke a command that was not found\nError: read unixpacket \
                      @->/proc/self/fd/14/attach: read: connection reset by peer\n";
        let denied = "Error: crun: open executable: Permission denied: OCI permission denied\n";
        for (code, stdout, stderr) in [(126, docker, ""), (127, "", podman), (126, "", denied)] {
            let error = start_failure(code, stdout, stderr, "nope", "/app").expect("an error");
            assert!(!error.message.contains('\n'), "{}", error.message);
            assert!(
                error
                    .message
                    .starts_with("exec: cannot start `nope` in `/app`: ")
                    && error.message.contains("OCI"),
                "{}",
                error.message
            );
            assert!(!error.message.contains("unixpacket"), "{}", error.message);
        }
    }

    #[test]
    fn a_command_that_exits_127_itself_is_a_result() {
        assert!(start_failure(127, "", "sh: nope: not found\n", "sh", "/app").is_none());
        assert!(start_failure(1, "", "OCI runtime exec failed\n", "sh", "/app").is_none());
    }
}
