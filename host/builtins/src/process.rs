//! Command execution shared by the built-in environment providers: timeouts, output capture
//! and process-group cleanup (the `exec` conventions themselves are the SDK's
//! `sdk::provider`).
//!
//! Every command is expected to run in its own process group (`process_group(0)`); a timeout
//! or a dropped [`run_captured`] future kills the whole group with SIGKILL, so background
//! children cannot keep a call alive.

use std::io;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agentcompass_plugin_api::contracts::ExecResult;
use agentcompass_plugin_api::sdk::provider::exit_code;
use agentcompass_plugin_api::{Error, Result};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

/// How long output pipes may stay open after the command ended (a background child still
/// holding them) before the captured output is returned without waiting for them.
pub(crate) const PIPE_GRACE: Duration = Duration::from_secs(2);

/// Runs a command to completion (or its timeout), capturing its output. The command must
/// already be set up to start its own process group; on a timeout, or when the returned
/// future is dropped, that whole group is killed. `program` names the command in messages;
/// `spawn_failed` turns a start failure into the error returned.
pub(crate) async fn run_captured(
    mut cmd: Command,
    program: &str,
    timeout: Option<Duration>,
    spawn_failed: impl FnOnce(io::Error) -> Error,
) -> Result<ExecResult> {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // Drop order (reverse of declaration) matters on cancellation: the readers are aborted,
    // then the group is killed while the leader is still unreaped (its id cannot be reused),
    // then tokio kills and reaps the leader.
    let mut child = cmd.spawn().map_err(spawn_failed)?;
    // The command's arguments and environment (a few KB) are not needed while it runs.
    drop(cmd);
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

/// Starts a detached command (no output captured, not killed when the handle is dropped).
/// The caller keeps the child unreaped, so its process-group id stays reserved, and kills it
/// with [`kill_detached`].
pub(crate) fn spawn_detached(
    mut cmd: Command,
    spawn_failed: impl FnOnce(io::Error) -> Error,
) -> Result<Child> {
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(false);
    cmd.spawn().map_err(spawn_failed)
}

/// A session's detached commands, kept unreaped so their process-group ids stay reserved
/// until they are killed: by [`Detached::kill_all`] (close) or when dropped.
#[derive(Default)]
pub(crate) struct Detached(Mutex<Vec<Child>>);

impl Detached {
    /// Keeps a detached command.
    pub(crate) fn push(&self, child: Child) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(child);
    }

    fn take(&self) -> Vec<Child> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Kills every command kept so far (by group) and reaps them.
    pub(crate) async fn kill_all(&self) {
        for child in self.take() {
            kill_detached(child).await;
        }
    }
}

impl Drop for Detached {
    fn drop(&mut self) {
        for child in self.take() {
            GroupGuard::new(child.id()).kill();
        }
    }
}

/// Kills the process group of a detached command, then reaps its leader.
pub(crate) async fn kill_detached(mut child: Child) {
    GroupGuard::new(child.id()).kill();
    let _ = child.kill().await;
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
pub(crate) struct GroupGuard {
    pgid: Option<Pid>,
}

impl GroupGuard {
    pub(crate) fn new(pid: Option<u32>) -> Self {
        GroupGuard {
            pgid: pid
                .and_then(|p| i32::try_from(p).ok())
                .filter(|p| *p > 0)
                .map(Pid::from_raw),
        }
    }

    pub(crate) fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }

    pub(crate) fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The read buffer of a pipe at first; it doubles after each read that fills it, up to
/// [`MAX_CHUNK`]. A quiet command (`sleep`, an agent writing its output to files) then holds a
/// few hundred bytes a pipe while it runs, not a full chunk: a thousand agents at once hold
/// 1 MB of read buffers, not 32 MB (`bench/PROFILE.md`).
const FIRST_CHUNK: usize = 512;
/// The largest read buffer of a pipe.
const MAX_CHUNK: usize = 16 * 1024;

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
                let mut chunk = Vec::new();
                let mut size = FIRST_CHUNK;
                loop {
                    chunk.clear();
                    chunk.reserve_exact(size);
                    match pipe.read_buf(&mut chunk).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            if n >= size {
                                size = (size * 2).min(MAX_CHUNK);
                            }
                            buffer
                                .lock()
                                .unwrap_or_else(PoisonError::into_inner)
                                .extend_from_slice(&chunk);
                        }
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
