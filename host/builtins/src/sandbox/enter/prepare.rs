//! Builds a prepared namespace: bwrap stopped before its command, the mount namespace it
//! made held by two descriptors once bwrap is gone.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use libc::c_int;

/// How long the bwrap that builds a prepared namespace may take to get there.
const PREPARE_TIMEOUT: Duration = Duration::from_secs(10);

/// A mount namespace built once by bwrap for a sandbox shape, kept by its descriptors.
pub(in crate::sandbox) struct Prepared {
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
pub(in crate::sandbox) fn prepare(
    bwrap: &Path,
    args: &[std::ffi::OsString],
) -> io::Result<Prepared> {
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

impl Prepared {
    /// The paths through which a child of this process opens the namespace and its root.
    pub(in crate::sandbox) fn paths(&self) -> (PathBuf, PathBuf) {
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
    pub(in crate::sandbox) fn last_capability(&self) -> u32 {
        self.last_capability
    }
}
