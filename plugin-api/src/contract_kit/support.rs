//! What the checks share: the kit (provider, request, options, scratch directory), sessions,
//! expectations, small executor-free future combinators and the process probes.

use std::fmt::Debug;
use std::fs;
use std::future::{poll_fn, Future};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::pin::{pin, Pin};
use std::task::Poll;
use std::time::{Duration, Instant};

use super::{ContractOptions, Outcome, ProcessProbe};
use crate::contracts::{ExecRequest, ExecResult, OpenEnvironmentRequest};
use crate::sdk::provider::{make_writable, random_suffix};
use crate::sdk::{Ctx, EnvironmentProvider, SessionRef};
use crate::Error;

/// A check's result: `Err` carries the first expectation that did not hold.
pub(super) type Checked<T = ()> = std::result::Result<T, String>;

/// The future of one check.
pub(super) type CheckFuture<'a> = Pin<Box<dyn Future<Output = Checked> + 'a>>;

/// One check: it gets the kit and a fresh session (closed by the kit afterwards).
pub(super) type CheckFn = for<'a> fn(&'a Kit<'a>, &'a SessionRef) -> CheckFuture<'a>;

/// Returns `Err(message)` from the check unless `cond` holds.
macro_rules! ensure {
    ($cond:expr, $($message:tt)+) => {
        if !$cond {
            return Err(format!($($message)+));
        }
    };
}
pub(super) use ensure;

/// The session bindings every session of the kit is opened with.
pub(super) const SESSION_BINDINGS: [(&str, &str); 2] = [
    ("AC_SESSION", "session-value"),
    ("AC_BOTH", "session-value"),
];

/// The provider, request and options of a run, and its scratch directory on this machine.
pub(super) struct Kit<'a> {
    pub(super) provider: &'a dyn EnvironmentProvider,
    pub(super) request: OpenEnvironmentRequest,
    pub(super) options: &'a ContractOptions,
    scratch: Scratch,
}

impl<'a> Kit<'a> {
    pub(super) fn new(
        provider: &'a dyn EnvironmentProvider,
        request: &OpenEnvironmentRequest,
        options: &'a ContractOptions,
    ) -> Checked<Kit<'a>> {
        let mut request = request.clone();
        for (key, value) in SESSION_BINDINGS {
            request
                .resolved_env
                .insert(key.to_string(), value.to_string());
        }
        Ok(Kit {
            provider,
            request,
            options,
            scratch: Scratch::create()?,
        })
    }

    /// Opens a session.
    pub(super) async fn open(&self) -> Checked<SessionRef> {
        self.provider
            .open(&Ctx::detached(), &self.request)
            .await
            .map_err(|e| format!("open: {e}"))
    }

    /// Runs one check in a fresh session, within the check timeout, and closes the session.
    pub(super) async fn run(&self, check: CheckFn) -> Outcome {
        let session = match self.open().await {
            Ok(session) => session,
            Err(e) => return Outcome::Failed(e),
        };
        let limit = self.options.check_timeout;
        let outcome = match race(check(self, &session), pause(limit)).await {
            Either::Left(Ok(())) => Outcome::Passed,
            Either::Left(Err(why)) => Outcome::Failed(why),
            Either::Right(()) => {
                Outcome::Failed(format!("did not finish within {}s", limit.as_secs_f64()))
            }
        };
        match (outcome, session.close().await) {
            (Outcome::Passed, Err(e)) => Outcome::Failed(format!("close after the check: {e}")),
            (outcome, _) => outcome,
        }
    }

    /// A fresh, empty directory of this machine for one check's files.
    pub(super) fn scratch(&self, name: &str) -> Checked<PathBuf> {
        let dir = self.scratch.0.join(format!("{name}-{}", random_suffix()));
        fs::create_dir(&dir)
            .map_err(|e| format!("scratch: cannot create {}: {e}", dir.display()))?;
        Ok(dir)
    }
}

/// A private directory under the system temporary directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn create() -> Checked<Scratch> {
        let dir = std::env::temp_dir().join(format!("contract-kit-{}", random_suffix()));
        fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| format!("cannot create the scratch directory {}: {e}", dir.display()))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        make_writable(&self.0);
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// `result`'s value, or what failed (`what: error`).
pub(super) fn ok<T>(what: &str, result: crate::Result<T>) -> Checked<T> {
    result.map_err(|e| format!("{what}: {e}"))
}

/// The error of `result`, which must have failed.
pub(super) fn failed<T: Debug>(what: &str, result: crate::Result<T>) -> Checked<Error> {
    match result {
        Ok(value) => Err(format!("{what}: expected an error, got {value:?}")),
        Err(e) => Ok(e),
    }
}

/// `got` must equal `want`.
pub(super) fn same<T: PartialEq + Debug>(what: &str, got: T, want: T) -> Checked {
    ensure!(got == want, "{what}: got {got:?}, expected {want:?}");
    Ok(())
}

/// Runs `request`; a failure to run is the check's failure.
pub(super) async fn run(session: &SessionRef, request: ExecRequest) -> Checked<ExecResult> {
    let shown = format!("exec {:?}", request.command);
    ok(&shown, session.exec(request).await)
}

/// Runs a shell line, which must succeed; its stdout.
pub(super) async fn sh(session: &SessionRef, line: &str) -> Checked<String> {
    let r = run(session, ExecRequest::shell(line)).await?;
    ensure!(r.success(), "exec `{line}` failed: {r:?}");
    Ok(r.stdout)
}

/// The default working directory, once the session was used (a provider may create it
/// lazily, under another name than the one reserved).
pub(super) async fn workdir(session: &SessionRef) -> Checked<String> {
    sh(session, "true").await?;
    session
        .info()
        .default_workdir
        .ok_or_else(|| "info(): no default_workdir".to_string())
}

/// Either of two results.
pub(super) enum Either<A, B> {
    Left(A),
    Right(B),
}

/// Polls both futures; the first to finish wins and the other is dropped.
pub(super) async fn race<A: Future, B: Future>(a: A, b: B) -> Either<A::Output, B::Output> {
    let (mut a, mut b) = (pin!(a), pin!(b));
    poll_fn(|cx| {
        if let Poll::Ready(out) = a.as_mut().poll(cx) {
            return Poll::Ready(Either::Left(out));
        }
        if let Poll::Ready(out) = b.as_mut().poll(cx) {
            return Poll::Ready(Either::Right(out));
        }
        Poll::Pending
    })
    .await
}

/// Polls every future to completion, concurrently; their outputs in order.
pub(super) async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut pending: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = pending.iter().map(|_| None).collect();
    poll_fn(|cx| {
        let mut done = true;
        for (future, output) in pending.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(out) => *output = Some(out),
                    Poll::Pending => done = false,
                }
            }
        }
        if done {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

/// Sleeps on the plugin-owned runtime (any executor may poll this).
pub(super) async fn pause(duration: Duration) {
    if crate::sdk::runtime::sleep(duration).await.is_err() {
        // No timer: never wake rather than spin.
        std::future::pending::<()>().await;
    }
}

/// A number no other run uses, for a recognisable `sleep <marker>` command (days long).
pub(super) fn marker() -> String {
    fastrand::u32(1_000_000..10_000_000).to_string()
}

/// The processes running `sleep <marker>` (not zombies), as the probe sees them; `None` when
/// processes are not probed.
pub(super) async fn sleepers(
    kit: &Kit<'_>,
    session: &SessionRef,
    marker: &str,
) -> Checked<Option<Vec<String>>> {
    match kit.options.processes {
        ProcessProbe::Off => Ok(None),
        ProcessProbe::Host => Ok(Some(host_sleepers(marker))),
        ProcessProbe::Session => {
            // Command substitution drops the NUL separators of `cmdline`; a zombie's is empty.
            let script = format!(
                "for p in /proc/[0-9]*; do case \"$(cat \"$p/cmdline\" 2>/dev/null)\" in \
                 *sleep{marker}) echo \"${{p#/proc/}}\";; esac; done; true"
            );
            let out = sh(session, &script).await?;
            Ok(Some(out.lines().map(str::to_string).collect()))
        }
    }
}

/// This machine's processes whose command line is `…sleep <marker>`.
fn host_sleepers(marker: &str) -> Vec<String> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let cmdline = fs::read(entry.path().join("cmdline")).ok()?;
            let args: Vec<&[u8]> = cmdline
                .split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .collect();
            let sleeping =
                args.len() == 2 && args[0].ends_with(b"sleep") && args[1] == marker.as_bytes();
            sleeping.then(|| entry.file_name().to_string_lossy().into_owned())
        })
        .collect()
}

/// Waits (five seconds plus the slack at most) until `sleep <marker>` runs (`running`) or is
/// gone; fine when processes are not probed.
pub(super) async fn expect_sleepers(
    kit: &Kit<'_>,
    session: &SessionRef,
    marker: &str,
    running: bool,
    what: &str,
) -> Checked {
    let within = Duration::from_secs(5) + kit.options.slack;
    let deadline = Instant::now() + within;
    loop {
        let found = match sleepers(kit, session, marker).await {
            Ok(None) => return Ok(()),
            Ok(Some(pids)) if pids.is_empty() != running => return Ok(()),
            Ok(Some(pids)) => format!("{pids:?}"),
            Err(e) => format!("(probing failed: {e})"),
        };
        if Instant::now() >= deadline {
            let state = if running { "never ran" } else { "survived" };
            return Err(format!(
                "{what}: `sleep {marker}` {state} (after {}s, processes: {found})",
                within.as_secs_f64()
            ));
        }
        pause(Duration::from_millis(50)).await;
    }
}

/// Writes a host file with `mode`.
pub(super) fn host_file(path: &Path, content: &[u8], mode: u32) -> Checked {
    use std::os::unix::fs::PermissionsExt;
    let shown = path.display();
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|e| format!("scratch: {shown}: {e}"))?;
    }
    fs::write(path, content).map_err(|e| format!("scratch: {shown}: {e}"))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .map_err(|e| format!("scratch: {shown}: {e}"))
}

/// The permission bits of a host path (not following a symlink).
pub(super) fn host_mode(path: &Path) -> Checked<u32> {
    use std::os::unix::fs::PermissionsExt;
    fs::symlink_metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// A host file's bytes.
pub(super) fn host_read(path: &Path) -> Checked<Vec<u8>> {
    fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}
