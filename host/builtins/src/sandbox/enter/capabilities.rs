//! The capabilities a command keeps: their numbers, and dropping every other one.

use libc::{c_int, c_long};

use super::failure::{errno, fail};

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
pub(in crate::sandbox) fn capability_mask<'a>(caps: impl IntoIterator<Item = &'a str>) -> u64 {
    caps.into_iter()
        .filter_map(|name| CAPABILITY_NUMBERS.iter().find(|(n, _)| *n == name))
        .fold(0, |mask, (_, bit)| mask | (1 << bit))
}

/// Keeps only the capabilities `keep` (bounding, ambient, effective, permitted, inheritable
/// sets), as bwrap's `--cap-drop ALL --cap-add ...` does for a sandbox started by root.
pub(super) fn drop_capabilities(keep: u64, last: u32) {
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
