//! Host Unix sockets a sandbox must not reach.
//!
//! A Unix socket is reached by its path, and a read-only mount does not stop a `connect`
//! (the kernel's read-only check covers regular files, directories and symlinks only), so
//! every socket file the read-only mirror shows is a way out of the sandbox: `docker.sock`
//! is root on the host. The sandbox closes them in layers:
//!
//! 1. Where sockets live, the host is not shown at all: `/run` and `/tmp` are private
//!    writable directories of the session, `/var/run` is (or is made) a symlink to that
//!    `/run`, `/dev` (with `/dev/shm`) is bwrap's own, and the host's temporary directory is
//!    hidden.
//! 2. A socket file anywhere else in the mirror is covered, in every command's sandbox, by a
//!    read-only bind of `/dev/null`: `connect` then fails with `ECONNREFUSED` (the path names
//!    a device, not a socket). The sockets are found without walking the file system: the
//!    kernel lists every bound pathname socket of this network namespace in
//!    [`BOUND_SOCKETS`] (`/proc/net/unix`), with the path it was bound to. Each listed
//!    path is resolved once (cached per sandbox shape and socket inode) and checked with one
//!    `lstat` per command; a socket directly in a directory the mirror lists is not mirrored
//!    at all.
//! 3. As root, the sandbox keeps only Docker's default capabilities (no `CAP_SYS_ADMIN`),
//!    so a command cannot unmount the covers; bwrap's mounts are locked in any user
//!    namespace a command creates.
//!
//! Not covered by (2): a socket bound in another network namespace (by a container, say) into
//! a directory the mirror shows, one bound by a relative path, or reached through another
//! name than the one it was bound to (renamed, hard-linked, a second mount of its
//! directory), and one bound after the command started (the mirror is a live view). (1)
//! covers the places sockets are meant to live in.
//!
//! Abstract sockets (`@name`) have no file: they belong to a network namespace. `no-network`
//! gives the sandbox its own namespace, which cuts them off; `public` is the host's network
//! namespace, abstract sockets included (X11's `@/tmp/.X11-unix/X0`, some D-Bus and
//! containerd-shim sockets). An allowlist mode would have to run in its own namespace (with a
//! proxy to the allowed hosts), which would cut them off as well.

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// The kernel's list of the Unix sockets of this process's network namespace.
pub(super) const BOUND_SOCKETS: &str = "/proc/net/unix";

/// Where one listed socket is: its host path (directories resolved) and its path in the
/// sandbox, when the sandbox's read-only mirror shows it.
type Place = Option<(PathBuf, PathBuf)>;

/// The listed sockets of one sandbox shape already located, by socket inode (with the path
/// they were listed with: an inode number can be reused by a later socket), and the scan
/// that last listed each.
#[derive(Default)]
pub(super) struct SocketCache {
    known: Mutex<Known>,
}

#[derive(Default)]
struct Known {
    scan: u64,
    sockets: HashMap<u64, Located>,
}

struct Located {
    path: Vec<u8>,
    place: Place,
    scan: u64,
}

impl SocketCache {
    /// The sandbox paths to cover: the sockets listed in `table` (the text of
    /// [`BOUND_SOCKETS`]) that the mirror shows (`mirrored` maps a host path to its sandbox
    /// path if it does) and that are still sockets now. Sorted, without duplicates.
    pub(super) fn masks(
        &self,
        table: &[u8],
        mirrored: impl Fn(&Path) -> Option<PathBuf>,
    ) -> Vec<PathBuf> {
        let mut shown: BTreeSet<(PathBuf, PathBuf)> = BTreeSet::new();
        {
            let mut known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
            known.scan += 1;
            let scan = known.scan;
            for (inode, path) in bound_sockets(table) {
                let located = known.sockets.entry(inode).or_insert_with(|| Located {
                    path: Vec::new(),
                    place: None,
                    scan: 0,
                });
                if located.scan == 0 || located.path != path {
                    located.path = path.to_vec();
                    located.place = locate(path, &mirrored);
                }
                located.scan = scan;
                if let Some(pair) = &located.place {
                    shown.insert(pair.clone());
                }
            }
            known.sockets.retain(|_, located| located.scan == scan);
        }
        shown
            .into_iter()
            .filter(|(host, _)| fs::symlink_metadata(host).is_ok_and(|m| m.file_type().is_socket()))
            .map(|(_, sandbox)| sandbox)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    }
}

/// Where the socket bound at `path` is, if the mirror shows it: its directory resolved on the
/// host (the file itself is not followed), then mapped by `mirrored`.
fn locate(path: &[u8], mirrored: &impl Fn(&Path) -> Option<PathBuf>) -> Place {
    let path = Path::new(OsStr::from_bytes(path));
    let (dir, name) = (path.parent()?, path.file_name()?);
    let host = fs::canonicalize(dir).ok()?.join(name);
    let sandbox = mirrored(&host)?;
    Some((host, sandbox))
}

/// The pathname sockets listed in `table` (the text of [`BOUND_SOCKETS`]): `(inode, path)`
/// for each line whose path is absolute. Abstract (`@name`) and unnamed sockets are skipped,
/// and so are relative paths (they were relative to a directory that is not recorded).
pub(super) fn bound_sockets(table: &[u8]) -> impl Iterator<Item = (u64, &[u8])> {
    table.split(|b| *b == b'\n').skip(1).filter_map(parse_line)
}

/// One line of `/proc/net/unix`: `Num: RefCount Protocol Flags Type St Inode Path`, the
/// fields separated by spaces (the inode right-aligned), the path as bound, raw.
fn parse_line(line: &[u8]) -> Option<(u64, &[u8])> {
    let mut rest = line;
    let mut inode = None;
    for field in 0..7 {
        let start = rest.iter().position(|b| *b != b' ')?;
        rest = &rest[start..];
        let end = rest.iter().position(|b| *b == b' ').unwrap_or(rest.len());
        if field == 6 {
            inode = std::str::from_utf8(&rest[..end]).ok()?.parse().ok();
        }
        rest = &rest[end..];
    }
    let path = rest.strip_prefix(b" ")?;
    (path.first() == Some(&b'/')).then_some((inode?, path))
}
