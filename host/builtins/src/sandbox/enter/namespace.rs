//! Steps 1 and 2 in the entry process: the binds cloned as detached trees, the prepared
//! namespace joined, namespaces of its own unshared, the trees attached, sockets masked,
//! `/dev/shm`, `/dev/pts` and `lo`; then the fork of PID 1.

use std::os::fd::AsRawFd;

use libc::{c_char, c_int, c_long};

use super::failure::{errno, fail};
use super::init::{init, wait_and_exit};
use super::plan::Plan;

/// `OPEN_TREE_CLONE` (linux/mount.h).
const OPEN_TREE_CLONE: libc::c_uint = 1;
/// `MOVE_MOUNT_F_EMPTY_PATH` (linux/mount.h).
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
/// `MOUNT_ATTR_RDONLY` (linux/mount.h).
const MOUNT_ATTR_RDONLY: u64 = 0x1;
/// `MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV`: what bwrap sets on every bind it makes.
const MOUNT_ATTR_NOSUID_NODEV: u64 = 0x2 | 0x4;

/// Steps 1 and 2 of the module's steps in the entry process, then the fork of PID 1.
pub(super) fn enter_and_exec(plan: &mut Plan) -> ! {
    // SAFETY: `prctl` with integer arguments.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as c_long);
    }
    clone_trees(plan);
    enter_namespaces(plan);
    attach_trees(plan);
    mask_sockets(plan);
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
    fork_init(plan)
}

/// Step 1: every bind's host path cloned as a detached mount tree (recursively, still in the
/// host's namespace), `nosuid` and `nodev` like bwrap's binds (read-only ones made so), into
/// `plan.trees`.
fn clone_trees(plan: &mut Plan) {
    // SAFETY: system calls on NUL-terminated strings owned by `plan`, on a `mount_attr` on
    // the stack, and on the descriptors of the trees, which this process owns.
    unsafe {
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
    }
}

/// Joins the prepared mount namespace and its root, unshares the namespaces of its own
/// (cgroup if possible) and makes its mounts private.
fn enter_namespaces(plan: &Plan) {
    // SAFETY: system calls on descriptors owned by `plan`, on NUL-terminated string
    // literals and on null pointers where the calls take none.
    unsafe {
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
    }
}

/// Attaches the detached trees at their mount points (closing each).
fn attach_trees(plan: &Plan) {
    // SAFETY: system calls on the trees' descriptors, which this process owns, and on
    // NUL-terminated strings owned by `plan`.
    unsafe {
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
    }
}

/// Covers the host sockets `plan.masks` with `/dev/null` (read-only, `nosuid`, `nodev`).
fn mask_sockets(plan: &Plan) {
    // SAFETY: `mount` calls on NUL-terminated strings owned by `plan` or literals, and null
    // pointers where the calls take none.
    unsafe {
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
    }
}

/// Forks the namespace's PID 1 (see [`init`]) and waits for it, keeping only the write end of
/// a pipe open: PID 1 checks it after asking to die with this process.
fn fork_init(plan: &Plan) -> ! {
    // SAFETY: `pipe2` into a stack array, `fork`, and `close`/`close_range` on descriptors
    // this process owns; the child goes on with values owned by `plan`.
    unsafe {
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
