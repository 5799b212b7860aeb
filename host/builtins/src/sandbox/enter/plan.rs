//! The entry's [`Request`] turned into the form the system calls take.

use std::ffi::CString;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use libc::{c_char, c_int};

use super::Request;

/// Everything the entry and its children use, in the form the system calls take.
pub(super) struct Plan {
    /// The prepared mount namespace.
    pub(super) mount_ns: OwnedFd,
    /// The prepared root directory.
    pub(super) root: OwnedFd,
    /// The highest capability number the kernel knows.
    pub(super) last_capability: u32,
    /// `(host, sandbox, read_only)`.
    pub(super) binds: Vec<(CString, CString, bool)>,
    /// One slot per bind, filled with its detached tree.
    pub(super) trees: Vec<c_int>,
    /// The host sockets covered with `/dev/null`.
    pub(super) masks: Vec<CString>,
    /// The command's working directory.
    pub(super) cwd: CString,
    /// The program as the command names it.
    pub(super) program: CString,
    /// Where `execve` tries the program, in `PATH` order.
    pub(super) candidates: Vec<CString>,
    _argv: Vec<CString>,
    /// `execve`'s `argv` (NULL-terminated), pointing into the arguments.
    pub(super) argv_ptrs: Vec<*const c_char>,
    _envp: Vec<CString>,
    /// `execve`'s `envp` (NULL-terminated), pointing into the environment.
    pub(super) envp_ptrs: Vec<*const c_char>,
    /// The namespaces the entry unshares.
    pub(super) unshare_flags: c_int,
    /// Own empty network namespace (loopback up).
    pub(super) isolated: bool,
    /// The capabilities the command keeps.
    pub(super) capabilities: u64,
}

fn cstring(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::other("a NUL byte in a command argument"))
}

fn path_c(path: &Path) -> io::Result<CString> {
    cstring(path.as_os_str().as_bytes())
}

impl Plan {
    pub(super) fn new(request: &Request, mount_ns: OwnedFd, root: OwnedFd) -> io::Result<Plan> {
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
