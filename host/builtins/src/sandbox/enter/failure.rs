//! Failing the way bwrap does: one line on standard error in its words, exit status 1.

use std::io;

use libc::c_int;

/// Writes `parts` to standard error (best effort).
fn say(parts: &[&[u8]]) {
    for part in parts {
        // SAFETY: writes a valid buffer of the given length to fd 2.
        unsafe { libc::write(2, part.as_ptr().cast(), part.len()) };
    }
}

/// bwrap's way of failing: one line on standard error, exit status 1.
pub(super) fn fail(parts: &[&[u8]], errno: c_int) -> ! {
    say(&[b"bwrap: "]);
    say(parts);
    say(&[b": ", errno_text(errno), b"\n"]);
    // SAFETY: `_exit` ends this process at once (the entry, or a child it forked).
    unsafe { libc::_exit(1) }
}

/// The current `errno`.
pub(super) fn errno() -> c_int {
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
