//! A thousand agents alive at once hold about five descriptors each (pipes, the sandbox's
//! sockets, the relay), more than the usual soft limit of 1,024 open files. The soft limit is
//! raised to the hard limit at start, as servers (and Go's runtime) do; the hard limit, which
//! only an administrator raises, stays as it is.

use nix::sys::resource::{getrlimit, setrlimit, Resource};

/// Raises the soft limit on open files to the hard limit (best effort: a failure leaves the
/// limit as it was).
pub fn raise() {
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < hard {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_on_open_files_is_raised_to_the_hard_limit() {
        let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        // Lower the soft limit first (always allowed), then raise it back.
        setrlimit(Resource::RLIMIT_NOFILE, hard.min(256), hard).unwrap();
        raise();
        assert_eq!(getrlimit(Resource::RLIMIT_NOFILE).unwrap(), (hard, hard));
    }
}
