//! PID 1 of a command's namespace and the command it forks, and reaping: exit statuses as
//! bwrap's reaper reports them.

use libc::{c_int, c_long};

use super::capabilities::drop_capabilities;
use super::failure::{errno, fail};
use super::plan::Plan;

/// The name of PID 1 in a command's namespace (`/proc/1/comm`).
const INIT_NAME: &std::ffi::CStr = c"sandbox-init";

/// The exit status a reaper reports for the wait status `status`.
pub(super) fn exit_code(status: c_int) -> c_int {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    }
}

/// Waits for `pid` (retrying on signals) and exits with its status.
pub(super) fn wait_and_exit(pid: libc::pid_t) -> ! {
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

/// PID 1 of the command's namespace: its `/proc`, then the command as its child, reaped.
pub(super) fn init(plan: &Plan, parent_alive: c_int) -> ! {
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
