//! Commands started in a prepared namespace instead of a new bwrap: the only module of the
//! sandbox with `unsafe` (see ARCHITECTURE.md, "Sandbox commands enter a prepared namespace").
//!
//! [`Prepared`] is a mount namespace that bwrap built once per sandbox shape (the read-only
//! mirror of the root on a tmpfs, `/dev`, the mount points), held by two descriptors after the
//! process that made it is gone. [`command`] starts one command in it through an *entry*: the
//! host binary started again with [`ENTRY_ARG`] (a fresh process, so spawning it copies none
//! of the host's memory and the work below runs single-threaded; its `main` calls
//! [`enter_if_requested`] first), which opens the namespace through the host's descriptors
//! (`/proc/HOST/fd/N`) and then:
//!
//! 1. the session's writable directories and host mounts are cloned as detached mount trees
//!    (`open_tree`, still in the host's namespace), `nosuid` and `nodev` like bwrap's binds
//!    (read-only ones made so), recursively;
//! 2. it joins the prepared mount namespace and its root, then unshares mount, PID, IPC, UTS,
//!    cgroup (if possible) and, for an isolated network, network namespaces of its own; makes
//!    its mounts private; attaches the trees at their mount points (`move_mount`), covers the
//!    host sockets `masks` with `/dev/null`, mounts a fresh `/dev/shm` and `/dev/pts`, and
//!    brings `lo` up in its own network namespace;
//! 3. it forks the namespace's PID 1 (`sandbox-init`), which mounts its `/proc` and reaps, and that forks the
//!    command: working directory, Docker's default capabilities (as bwrap keeps for root),
//!    `no_new_privs`, then `execve` along `PATH`.
//!
//! The entry waits for PID 1 and exits with its status; PID 1 exits with the command's
//! (128 + signal if it was killed), as bwrap's reaper does. Both die with their parent. A step
//! that fails writes one line in bwrap's words (`bwrap: Can't ...`, `bwrap: execvp PROG: ...`)
//! and exits 1, so the session reads it exactly as it reads bwrap's.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use tokio::process::Command;

mod capabilities;
mod failure;
mod init;
mod namespace;
mod plan;
mod prepare;

pub(super) use capabilities::capability_mask;
pub(super) use prepare::{prepare, Prepared};

use failure::fail;
use namespace::enter_and_exec;
use plan::Plan;

/// The argument that makes the host binary a sandbox entry (see [`enter_if_requested`]).
pub const ENTRY_ARG: &str = "__agentcompass-sandbox-enter";

/// The argument that makes the host binary join a sandbox session's cgroups and then become
/// the command after `--` (`JOIN_ARG PROCS... -- PROGRAM ARGS...`): how a bwrap of a session
/// with resource limits starts (see `cgroup`).
pub const JOIN_ARG: &str = "__agentcompass-sandbox-join";

/// The variable carrying the entry's [`Request`] (JSON). An environment variable, like the
/// command's environment in bwrap's: readable only by the same user, never on a command line.
const REQUEST_VAR: &str = "AGENTCOMPASS_SANDBOX_ENTRY";

/// The binary that serves [`ENTRY_ARG`]: set by [`enter_if_requested`] in a binary's `main`.
static ENTRY_PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// The small binary that serves entries faster than the host binary, looked for next to it.
pub const ENTRY_BINARY: &str = "agentcompass-sandbox-enter";

/// For a binary's `main`, first thing: started as a sandbox entry (`ENTRY_ARG`), this
/// process becomes the command (never returns); otherwise it records the binary commands
/// enter through: [`ENTRY_BINARY`] next to this one if it is there (as trusted as this binary:
/// same directory), else this binary. Without the call, every sandbox command starts its own
/// bwrap.
pub fn enter_if_requested() {
    let mut args = std::env::args_os().skip(1);
    match args.next() {
        Some(arg) if arg == OsStr::new(ENTRY_ARG) => entry_main(),
        Some(arg) if arg == OsStr::new(JOIN_ARG) => join_main(args.collect()),
        _ => {}
    }
    register_entry_program();
}

/// Joins the cgroups named before `--` in `args`, then becomes the command after it.
fn join_main(args: Vec<std::ffi::OsString>) -> ! {
    use std::os::unix::process::CommandExt;
    let split = args.iter().position(|a| a == OsStr::new("--"));
    let (procs, command) = match split {
        Some(at) if at + 1 < args.len() => (&args[..at], &args[at + 1..]),
        _ => {
            eprintln!("bwrap: Can't start: `{JOIN_ARG}` expects PROCS... -- PROGRAM ARGS...");
            std::process::exit(1);
        }
    };
    let procs: Vec<PathBuf> = procs.iter().map(PathBuf::from).collect();
    if let Err(e) = super::cgroup::join(&procs) {
        eprintln!("bwrap: {e}");
        std::process::exit(1);
    }
    let e = std::process::Command::new(&command[0])
        .args(&command[1..])
        .exec();
    eprintln!("bwrap: execvp {}: {e}", Path::new(&command[0]).display());
    std::process::exit(1);
}

/// Records the entry program for this process (see [`enter_if_requested`]).
fn register_entry_program() {
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let sibling = exe.with_file_name(ENTRY_BINARY);
    let program = if sibling != exe && sibling.is_file() {
        sibling
    } else {
        exe
    };
    let _ = ENTRY_PROGRAM.set(program);
}

/// [`enter_if_requested`] for a test binary, whose `main` is the test harness's: called
/// before `main` (from `.init_array`), so the arguments come from `/proc/self/cmdline`.
#[cfg(test)]
pub(super) fn enter_if_requested_before_main() {
    let cmdline = std::fs::read("/proc/self/cmdline").unwrap_or_default();
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    if args.get(1) == Some(&ENTRY_ARG.as_bytes()) {
        entry_main();
    }
    if args.get(1) == Some(&JOIN_ARG.as_bytes()) {
        use std::os::unix::ffi::OsStrExt;
        let rest = args[2..].iter().filter(|a| !a.is_empty());
        join_main(rest.map(|a| OsStr::from_bytes(a).to_os_string()).collect());
    }
    // The test binary itself: the unit tests exercise the code they were built with.
    if let Ok(exe) = std::env::current_exe() {
        let _ = ENTRY_PROGRAM.set(exe);
    }
}

/// The binary commands enter through, if this process's `main` said so.
pub(super) fn entry_program() -> Option<&'static Path> {
    ENTRY_PROGRAM.get().map(PathBuf::as_path)
}

/// One command to run in a prepared namespace: what the host hands to the entry process.
#[derive(Serialize, Deserialize)]
pub(super) struct Request {
    /// A path of the prepared mount namespace (`/proc/HOST/fd/N`).
    pub(super) mount_ns: PathBuf,
    /// A path of the prepared root directory.
    pub(super) root: PathBuf,
    /// The highest capability number the kernel knows.
    pub(super) last_capability: u32,
    /// `(host, sandbox, read_only)`, parents before children.
    pub(super) binds: Vec<(PathBuf, PathBuf, bool)>,
    pub(super) masks: Vec<PathBuf>,
    pub(super) cwd: PathBuf,
    /// The program first.
    pub(super) argv: Vec<String>,
    pub(super) env: BTreeMap<String, String>,
    /// Own empty network namespace (loopback up).
    pub(super) isolated: bool,
    /// The capabilities the command keeps.
    pub(super) capabilities: u64,
    /// The `cgroup.procs` files of the session's cgroups, joined first (see `cgroup`).
    #[serde(default)]
    pub(super) cgroups: Vec<PathBuf>,
}

/// The command running `request`: the entry program (a fresh, small process: spawning it
/// copies none of the host's memory) with the request in its environment. `None` when no
/// binary serves entries.
pub(super) fn command(request: &Request) -> io::Result<Option<Command>> {
    let Some(program) = entry_program() else {
        return Ok(None);
    };
    let json = serde_json::to_string(request).map_err(io::Error::other)?;
    let mut cmd = Command::new(program);
    cmd.arg(ENTRY_ARG).env_clear().env(REQUEST_VAR, json);
    Ok(Some(cmd))
}

/// The entry process: reads its request and becomes the command (module steps 1–3).
fn entry_main() -> ! {
    let request: Request = match std::env::var(REQUEST_VAR)
        .map_err(io::Error::other)
        .and_then(|json| serde_json::from_str(&json).map_err(io::Error::other))
    {
        Ok(request) => request,
        Err(e) => {
            eprintln!("bwrap: Can't read the sandbox entry request: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = super::cgroup::join(&request.cgroups) {
        eprintln!("bwrap: {e}");
        std::process::exit(1);
    }
    let opened = File::open(&request.mount_ns).and_then(|ns| Ok((ns, File::open(&request.root)?)));
    let (mount_ns, root) = match opened {
        Ok(files) => files,
        Err(e) => fail(
            &[b"Can't open the prepared namespace"],
            e.raw_os_error().unwrap_or(0),
        ),
    };
    match Plan::new(&request, OwnedFd::from(mount_ns), OwnedFd::from(root)) {
        Ok(mut plan) => enter_and_exec(&mut plan),
        Err(e) => {
            eprintln!("bwrap: Can't prepare the command: {e}");
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests;
