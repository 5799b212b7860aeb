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
use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use libc::{c_char, c_int, c_long};
use tokio::process::Command;

/// How long the bwrap that builds a prepared namespace may take to get there.
const PREPARE_TIMEOUT: Duration = Duration::from_secs(10);

/// `OPEN_TREE_CLONE` (linux/mount.h).
const OPEN_TREE_CLONE: libc::c_uint = 1;
/// `MOVE_MOUNT_F_EMPTY_PATH` (linux/mount.h).
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
/// `MOUNT_ATTR_RDONLY` (linux/mount.h).
const MOUNT_ATTR_RDONLY: u64 = 0x1;
/// `MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV`: what bwrap sets on every bind it makes.
const MOUNT_ATTR_NOSUID_NODEV: u64 = 0x2 | 0x4;
/// The name of PID 1 in a command's namespace (`/proc/1/comm`).
const INIT_NAME: &std::ffi::CStr = c"sandbox-init";
/// `_LINUX_CAPABILITY_VERSION_3`.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// Capability numbers (linux/capability.h) of the names bwrap takes.
const CAPABILITY_NUMBERS: [(&str, u32); 14] = [
    ("CAP_CHOWN", 0),
    ("CAP_DAC_OVERRIDE", 1),
    ("CAP_FOWNER", 3),
    ("CAP_FSETID", 4),
    ("CAP_KILL", 5),
    ("CAP_SETGID", 6),
    ("CAP_SETUID", 7),
    ("CAP_SETPCAP", 8),
    ("CAP_NET_BIND_SERVICE", 10),
    ("CAP_NET_RAW", 13),
    ("CAP_SYS_CHROOT", 18),
    ("CAP_MKNOD", 27),
    ("CAP_AUDIT_WRITE", 29),
    ("CAP_SETFCAP", 31),
];

/// The capability set of the names `caps` (unknown names are left out).
pub(super) fn capability_mask<'a>(caps: impl IntoIterator<Item = &'a str>) -> u64 {
    caps.into_iter()
        .filter_map(|name| CAPABILITY_NUMBERS.iter().find(|(n, _)| *n == name))
        .fold(0, |mask, (_, bit)| mask | (1 << bit))
}

/// A mount namespace built once by bwrap for a sandbox shape, kept by its descriptors.
pub(super) struct Prepared {
    /// `/proc/PID/ns/mnt` of the process bwrap made.
    mount_ns: OwnedFd,
    /// That process's root directory (bwrap's new root, inside the namespace).
    root: OwnedFd,
    /// The highest capability number this kernel knows.
    last_capability: u32,
}

/// `bwrap` with `args` (the shape's namespaces, mount points and mirror), stopped before it
/// runs anything: the mount namespace it made, once bwrap has entered its new root and
/// dropped every capability (its last steps before the command), then bwrap is killed.
/// Blocking.
pub(super) fn prepare(bwrap: &Path, args: &[std::ffi::OsString]) -> io::Result<Prepared> {
    check_mount_api()?;
    let mut child = std::process::Command::new(bwrap)
        .arg("--cap-drop")
        .arg("ALL")
        .args(args)
        .args(["--info-fd", "1", "--block-fd", "0", "--", "true"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let result = locate(&mut child);
    drop(child.stdin.take());
    let _ = child.kill();
    let _ = child.wait();
    result
}

/// The namespace of the bwrap `child` blocked on its standard input.
fn locate(child: &mut std::process::Child) -> io::Result<Prepared> {
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| io::Error::other("no stdout"))?;
    let mut info = String::new();
    let mut reader = BufReader::new(stdout);
    while !info.trim_end().ends_with('}') {
        if reader.read_line(&mut info)? == 0 {
            let mut stderr = String::new();
            if let Some(mut err) = child.stderr.take() {
                let _ = io::Read::read_to_string(&mut err, &mut stderr);
            }
            return Err(io::Error::other(format!(
                "bwrap ended before the namespace was ready: {}",
                stderr.trim()
            )));
        }
    }
    let info: serde_json::Value = serde_json::from_str(&info).map_err(io::Error::other)?;
    let pid = info["child-pid"]
        .as_u64()
        .ok_or_else(|| io::Error::other("bwrap's info has no child-pid"))?;
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    let started = Instant::now();
    loop {
        let status = std::fs::read_to_string(proc_dir.join("status"))?;
        let dropped = status
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .is_some_and(|v| v.trim().bytes().all(|b| b == b'0'));
        if dropped {
            break;
        }
        if started.elapsed() > PREPARE_TIMEOUT {
            return Err(io::Error::other("bwrap did not reach its command"));
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    let mount_ns = OwnedFd::from(File::open(proc_dir.join("ns/mnt"))?);
    let root = OwnedFd::from(File::open(proc_dir.join("root"))?);
    let last_capability = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(40);
    Ok(Prepared {
        mount_ns,
        root,
        last_capability,
    })
}

/// Whether this kernel has the mount API the commands use (`open_tree`, Linux 5.2).
fn check_mount_api() -> io::Result<()> {
    let root = c"/";
    // SAFETY: `open_tree` with a valid NUL-terminated path and no clone flag only opens a
    // path descriptor, which is closed right away.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD,
            root.as_ptr(),
            libc::O_CLOEXEC as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by `open_tree` and is owned by nobody else.
    unsafe { libc::close(fd as c_int) };
    Ok(())
}

/// The argument that makes the host binary a sandbox entry (see [`enter_if_requested`]).
pub const ENTRY_ARG: &str = "__agentcompass-sandbox-enter";

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
    if args.next().as_deref() == Some(OsStr::new(ENTRY_ARG)) {
        entry_main();
    }
    register_entry_program();
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
    if cmdline.split(|b| *b == 0).nth(1) == Some(ENTRY_ARG.as_bytes()) {
        entry_main();
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
}

impl Prepared {
    /// The paths through which a child of this process opens the namespace and its root.
    pub(super) fn paths(&self) -> (PathBuf, PathBuf) {
        let fd = |fd: &OwnedFd| {
            PathBuf::from(format!(
                "/proc/{}/fd/{}",
                std::process::id(),
                fd.as_raw_fd()
            ))
        };
        (fd(&self.mount_ns), fd(&self.root))
    }

    /// The highest capability number the kernel knows.
    pub(super) fn last_capability(&self) -> u32 {
        self.last_capability
    }
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

/// Everything the entry and its children use, in the form the system calls take.
struct Plan {
    mount_ns: OwnedFd,
    root: OwnedFd,
    last_capability: u32,
    /// `(host, sandbox, read_only)`.
    binds: Vec<(CString, CString, bool)>,
    /// One slot per bind, filled with its detached tree.
    trees: Vec<c_int>,
    masks: Vec<CString>,
    cwd: CString,
    program: CString,
    /// Where `execve` tries the program, in `PATH` order.
    candidates: Vec<CString>,
    _argv: Vec<CString>,
    argv_ptrs: Vec<*const c_char>,
    _envp: Vec<CString>,
    envp_ptrs: Vec<*const c_char>,
    unshare_flags: c_int,
    isolated: bool,
    capabilities: u64,
}

fn cstring(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::other("a NUL byte in a command argument"))
}

fn path_c(path: &Path) -> io::Result<CString> {
    cstring(path.as_os_str().as_bytes())
}

impl Plan {
    fn new(request: &Request, mount_ns: OwnedFd, root: OwnedFd) -> io::Result<Plan> {
        let binds = request
            .binds
            .iter()
            .map(|(host, sandbox, ro)| Ok((path_c(host)?, path_c(sandbox)?, *ro)))
            .collect::<io::Result<Vec<_>>>()?;
        let argv = request
            .argv
            .iter()
            .map(|a| cstring(a.as_bytes()))
            .collect::<io::Result<Vec<_>>>()?;
        let program = argv
            .first()
            .cloned()
            .ok_or_else(|| io::Error::other("an empty command"))?;
        let candidates = if program.as_bytes().contains(&b'/') {
            vec![program.clone()]
        } else {
            let path = request
                .env
                .get("PATH")
                .map_or("/bin:/usr/bin", String::as_str);
            path.split(':')
                .map(|dir| {
                    let dir = if dir.is_empty() { "." } else { dir };
                    let mut full = dir.as_bytes().to_vec();
                    full.push(b'/');
                    full.extend_from_slice(program.as_bytes());
                    cstring(&full)
                })
                .collect::<io::Result<Vec<_>>>()?
        };
        let envp = request
            .env
            .iter()
            .map(|(k, v)| cstring(format!("{k}={v}").as_bytes()))
            .collect::<io::Result<Vec<_>>>()?;
        let pointers = |items: &[CString]| {
            items
                .iter()
                .map(|c| c.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect::<Vec<_>>()
        };
        let mut unshare_flags =
            libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS;
        if request.isolated {
            unshare_flags |= libc::CLONE_NEWNET;
        }
        Ok(Plan {
            mount_ns,
            root,
            last_capability: request.last_capability,
            trees: vec![-1; binds.len()],
            binds,
            masks: request
                .masks
                .iter()
                .map(|m| path_c(m))
                .collect::<io::Result<_>>()?,
            cwd: path_c(&request.cwd)?,
            program,
            candidates,
            argv_ptrs: pointers(&argv),
            _argv: argv,
            envp_ptrs: pointers(&envp),
            _envp: envp,
            unshare_flags,
            isolated: request.isolated,
            capabilities: request.capabilities,
        })
    }
}

/// Writes `parts` to standard error (best effort).
fn say(parts: &[&[u8]]) {
    for part in parts {
        // SAFETY: writes a valid buffer of the given length to fd 2.
        unsafe { libc::write(2, part.as_ptr().cast(), part.len()) };
    }
}

/// bwrap's way of failing: one line on standard error, exit status 1.
fn fail(parts: &[&[u8]], errno: c_int) -> ! {
    say(&[b"bwrap: "]);
    say(parts);
    say(&[b": ", errno_text(errno), b"\n"]);
    // SAFETY: `_exit` ends this process at once (the entry, or a child it forked).
    unsafe { libc::_exit(1) }
}

/// The current `errno`.
fn errno() -> c_int {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// `strerror` of the common values, without the C library's locale machinery.
fn errno_text(errno: c_int) -> &'static [u8] {
    match errno {
        libc::EPERM => b"Operation not permitted",
        libc::ENOENT => b"No such file or directory",
        libc::EIO => b"Input/output error",
        libc::E2BIG => b"Argument list too long",
        libc::ENOEXEC => b"Exec format error",
        libc::ENOMEM => b"Cannot allocate memory",
        libc::EACCES => b"Permission denied",
        libc::EBUSY => b"Device or resource busy",
        libc::EEXIST => b"File exists",
        libc::ENOTDIR => b"Not a directory",
        libc::EISDIR => b"Is a directory",
        libc::EINVAL => b"Invalid argument",
        libc::ETXTBSY => b"Text file busy",
        libc::ENOSPC => b"No space left on device",
        libc::EROFS => b"Read-only file system",
        libc::ENAMETOOLONG => b"File name too long",
        libc::ENOSYS => b"Function not implemented",
        libc::ELOOP => b"Too many levels of symbolic links",
        libc::EAGAIN => b"Resource temporarily unavailable",
        _ => b"Unknown error",
    }
}

/// The exit status a reaper reports for the wait status `status`.
fn exit_code(status: c_int) -> c_int {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    }
}

/// Waits for `pid` (retrying on signals) and exits with its status.
fn wait_and_exit(pid: libc::pid_t) -> ! {
    let mut status: c_int = 0;
    loop {
        // SAFETY: `status` is a valid out-pointer.
        let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
        if waited == pid {
            break;
        }
        if waited < 0 && errno() != libc::EINTR {
            status = 1 << 8;
            break;
        }
    }
    // SAFETY: ends this process.
    unsafe { libc::_exit(exit_code(status)) }
}

/// Steps 1 and 2 of the module's steps in the entry process, then the fork of PID 1.
fn enter_and_exec(plan: &mut Plan) -> ! {
    // SAFETY (whole function): every call is a system call on values and NUL-terminated
    // strings owned by `plan`, on stack buffers, or on descriptors this process owns.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as c_long);
        for (i, (host, sandbox, read_only)) in plan.binds.iter().enumerate() {
            let tree = libc::syscall(
                libc::SYS_open_tree,
                libc::AT_FDCWD,
                host.as_ptr(),
                OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | libc::AT_RECURSIVE as u32,
            ) as c_int;
            if tree < 0 {
                let e = errno();
                fail(
                    &[
                        b"Can't bind mount ",
                        host.as_bytes(),
                        b" on ",
                        sandbox.as_bytes(),
                    ],
                    e,
                );
            }
            {
                let read_only = if *read_only { MOUNT_ATTR_RDONLY } else { 0 };
                let attr = libc::mount_attr {
                    attr_set: MOUNT_ATTR_NOSUID_NODEV | read_only,
                    attr_clr: 0,
                    propagation: 0,
                    userns_fd: 0,
                };
                let set = libc::syscall(
                    libc::SYS_mount_setattr,
                    tree,
                    c"".as_ptr(),
                    (libc::AT_EMPTY_PATH | libc::AT_RECURSIVE) as libc::c_uint,
                    &attr as *const libc::mount_attr,
                    std::mem::size_of::<libc::mount_attr>(),
                );
                if set != 0 {
                    let e = errno();
                    fail(&[b"Can't set the flags of ", sandbox.as_bytes()], e);
                }
            }
            plan.trees[i] = tree;
        }
        if libc::setns(plan.mount_ns.as_raw_fd(), libc::CLONE_NEWNS) != 0
            || libc::fchdir(plan.root.as_raw_fd()) != 0
            || libc::chroot(c".".as_ptr()) != 0
        {
            let e = errno();
            fail(&[b"Can't enter the prepared mount namespace"], e);
        }
        if libc::unshare(plan.unshare_flags) != 0 {
            let e = errno();
            fail(&[b"Creating new namespace failed"], e);
        }
        // Like bwrap's `--unshare-cgroup-try`.
        libc::unshare(libc::CLONE_NEWCGROUP);
        if libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            let e = errno();
            fail(&[b"Can't make / private"], e);
        }
        for (tree, (_, sandbox, _)) in plan.trees.iter().zip(&plan.binds) {
            let moved = libc::syscall(
                libc::SYS_move_mount,
                *tree,
                c"".as_ptr(),
                libc::AT_FDCWD,
                sandbox.as_ptr(),
                MOVE_MOUNT_F_EMPTY_PATH,
            );
            if moved != 0 {
                let e = errno();
                fail(&[b"Can't bind mount on ", sandbox.as_bytes()], e);
            }
            libc::close(*tree);
        }
        for mask in &plan.masks {
            let bound = libc::mount(
                c"/dev/null".as_ptr(),
                mask.as_ptr(),
                std::ptr::null(),
                libc::MS_BIND,
                std::ptr::null(),
            ) == 0
                && libc::mount(
                    std::ptr::null(),
                    mask.as_ptr(),
                    std::ptr::null(),
                    libc::MS_REMOUNT
                        | libc::MS_BIND
                        | libc::MS_RDONLY
                        | libc::MS_NOSUID
                        | libc::MS_NODEV,
                    std::ptr::null(),
                ) == 0;
            if !bound {
                let e = errno();
                fail(&[b"Can't bind mount /dev/null on ", mask.as_bytes()], e);
            }
        }
        // The prepared `/dev` is shared (and read-only): its writable parts are the
        // command's own, as with a `/dev` of its own.
        mount_optional(
            c"tmpfs",
            c"/dev/shm",
            c"tmpfs",
            libc::MS_NOSUID | libc::MS_NODEV,
            c"mode=1777",
        );
        mount_optional(
            c"devpts",
            c"/dev/pts",
            c"devpts",
            libc::MS_NOSUID | libc::MS_NOEXEC,
            c"newinstance,ptmxmode=0666,mode=620",
        );
        if plan.isolated {
            loopback_up();
        }
        // Open while this process lives: PID 1 checks it after asking to die with it.
        let mut alive = [0 as c_int; 2];
        if libc::pipe2(alive.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            let e = errno();
            fail(&[b"Can't create a pipe"], e);
        }
        match libc::fork() {
            -1 => {
                let e = errno();
                fail(&[b"Can't fork"], e)
            }
            0 => {
                libc::close(alive[1]);
                init(plan, alive[0])
            }
            pid => {
                let keep = alive[1] as libc::c_uint;
                libc::close_range(0, keep - 1, 0);
                libc::close_range(keep + 1, u32::MAX, 0);
                wait_and_exit(pid)
            }
        }
    }
}

/// Mounts a file system, failing like bwrap unless the mount point does not exist.
fn mount_optional(
    source: &std::ffi::CStr,
    target: &std::ffi::CStr,
    fstype: &std::ffi::CStr,
    flags: libc::c_ulong,
    data: &std::ffi::CStr,
) {
    // SAFETY: NUL-terminated strings that outlive the call.
    let mounted = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            flags,
            data.as_ptr().cast(),
        )
    };
    if mounted != 0 {
        let e = errno();
        if e != libc::ENOENT {
            fail(&[b"Can't mount ", target.to_bytes()], e);
        }
    }
}

/// Brings the loopback interface of the new network namespace up (its addresses come with it).
fn loopback_up() {
    // SAFETY: a socket this child owns, an `ifreq` on the stack with a NUL-terminated name,
    // and the two interface-flag ioctls.
    unsafe {
        let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if sock < 0 {
            let e = errno();
            fail(&[b"Failed to create socket"], e);
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
            *dst = *src as c_char;
        }
        if libc::ioctl(sock, libc::SIOCGIFFLAGS, &mut req) != 0 {
            let e = errno();
            fail(&[b"Failed to read the flags of lo"], e);
        }
        req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        if libc::ioctl(sock, libc::SIOCSIFFLAGS, &mut req) != 0 {
            let e = errno();
            fail(&[b"Failed to bring lo up"], e);
        }
        libc::close(sock);
    }
}

/// PID 1 of the command's namespace: its `/proc`, then the command as its child, reaped.
fn init(plan: &Plan, parent_alive: c_int) -> ! {
    // SAFETY: system calls on NUL-terminated strings owned by `plan`, on stack values and on
    // the read end `parent_alive` of a pipe whose write end only the parent holds.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as c_long);
        let mut poll = libc::pollfd {
            fd: parent_alive,
            events: libc::POLLIN,
            revents: 0,
        };
        if libc::poll(&mut poll, 1, 0) != 0 {
            // The parent died before this process asked to die with it.
            libc::_exit(1);
        }
        libc::close(parent_alive);
        libc::prctl(libc::PR_SET_NAME, INIT_NAME.as_ptr() as c_long, 0, 0, 0);
        libc::umount2(c"/proc".as_ptr(), libc::MNT_DETACH);
        if libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        ) != 0
        {
            let e = errno();
            fail(&[b"Can't mount proc on /proc"], e);
        }
        match libc::fork() {
            -1 => {
                let e = errno();
                fail(&[b"Can't fork"], e)
            }
            0 => exec(plan),
            command => {
                libc::close_range(0, u32::MAX, 0);
                let mut status: c_int = 0;
                loop {
                    let waited = libc::wait(&mut status);
                    if waited == command {
                        libc::_exit(exit_code(status));
                    }
                    if waited < 0 && errno() != libc::EINTR {
                        libc::_exit(1);
                    }
                }
            }
        }
    }
}

/// The command itself: working directory, capabilities, `execve` along `PATH`.
fn exec(plan: &Plan) -> ! {
    // SAFETY: system calls on NUL-terminated strings and NULL-terminated pointer arrays owned
    // by `plan` (valid while it lives, i.e. until `execve` replaces this process) and on
    // stack values.
    unsafe {
        if libc::chdir(plan.cwd.as_ptr()) != 0 {
            let e = errno();
            fail(&[b"Can't chdir to ", plan.cwd.as_bytes()], e);
        }
        drop_capabilities(plan.capabilities, plan.last_capability);
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as c_long, 0 as c_long, 0, 0);
        let mut error = libc::ENOENT;
        for candidate in &plan.candidates {
            libc::execve(
                candidate.as_ptr(),
                plan.argv_ptrs.as_ptr(),
                plan.envp_ptrs.as_ptr(),
            );
            match errno() {
                libc::ENOENT | libc::ENOTDIR => {}
                e => {
                    error = e;
                    if e != libc::EACCES {
                        break;
                    }
                }
            }
        }
        fail(&[b"execvp ", plan.program.as_bytes()], error)
    }
}

/// Keeps only the capabilities `keep` (bounding, ambient, effective, permitted, inheritable
/// sets), as bwrap's `--cap-drop ALL --cap-add ...` does for a sandbox started by root.
fn drop_capabilities(keep: u64, last: u32) {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    // SAFETY: `prctl` calls with integer arguments and one `capset` with a valid header and
    // two data entries on the stack (version 3 takes two).
    unsafe {
        for cap in 0..=last.min(63) {
            if keep & (1 << cap) == 0 {
                libc::prctl(libc::PR_CAPBSET_DROP, cap as c_long, 0, 0, 0);
            }
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as c_long,
            0,
            0,
            0,
        );
        let header = Header {
            version: CAPABILITY_VERSION_3,
            pid: 0,
        };
        let low = keep as u32;
        let high = (keep >> 32) as u32;
        let data = [
            Data {
                effective: low,
                permitted: low,
                inheritable: low,
            },
            Data {
                effective: high,
                permitted: high,
                inheritable: high,
            },
        ];
        if libc::syscall(libc::SYS_capset, &header, data.as_ptr()) != 0 {
            let e = errno();
            fail(&[b"capset failed"], e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::template::ROOT_CAPABILITIES;

    #[test]
    fn every_capability_bwrap_keeps_for_root_has_its_number() {
        let mask = capability_mask(ROOT_CAPABILITIES);
        assert_eq!(mask.count_ones() as usize, ROOT_CAPABILITIES.len());
        assert_eq!(capability_mask(["CAP_CHOWN", "CAP_SETFCAP"]), 1 | 1 << 31);
    }

    #[test]
    fn a_reaper_reports_a_killed_command_as_128_plus_the_signal() {
        assert_eq!(exit_code(9), 137);
        assert_eq!(exit_code(3 << 8), 3);
    }
}
