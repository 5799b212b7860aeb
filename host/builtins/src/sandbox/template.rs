//! The bwrap arguments fixed by a sandbox's shape (root, working directory, network,
//! temporary directory), computed once per shape and reused while the root directories they
//! list are unchanged.

use std::collections::{BTreeSet, HashMap};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::enter::{prepare, Prepared};
use super::mirror::{mirror, mount_points, DirStamp, Mirror};
use super::mounts::{lexical, Mount};
use super::sockets::SocketCache;
use super::{ID, KERNEL_DIRS};

/// The capabilities a sandbox started by root keeps: Docker's default set (no
/// `CAP_SYS_ADMIN`, so the sandbox's mounts, the covers of host sockets among them, cannot be
/// undone; no `CAP_NET_ADMIN`, `CAP_SYS_PTRACE`, `CAP_SYS_MODULE`). `CAP_NET_RAW` only with a
/// network namespace of its own: with the host's (`public`) it would let the sandbox read the
/// host's traffic. Started by another user, bwrap already drops every capability.
pub(super) const ROOT_CAPABILITIES: [&str; 14] = [
    "CAP_AUDIT_WRITE",
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_MKNOD",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_RAW",
    "CAP_SETFCAP",
    "CAP_SETGID",
    "CAP_SETPCAP",
    "CAP_SETUID",
    "CAP_SYS_CHROOT",
];

/// Sandbox paths that are symlinks to `/run` (the session's private one) whatever the root
/// has there, unless the root's entry already is such a link.
pub(super) const RUN_ALIASES: [&str; 1] = ["/var/run"];

/// Sandbox shapes whose bwrap arguments are kept; the cache starts over beyond that.
pub(super) const MAX_TEMPLATES: usize = 64;

/// What fixes a sandbox's bwrap arguments, apart from the session's own directories.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Shape {
    /// The root filesystem (canonical).
    pub(super) root: PathBuf,
    /// The working directory in the sandbox.
    pub(super) workdir: PathBuf,
    /// Whether the sandbox has its own, empty network namespace.
    pub(super) no_network: bool,
    /// The host's temporary directory (canonical), hidden when the root shows it.
    pub(super) temp_base: PathBuf,
    /// The sandbox paths of the open request's host mounts (sorted): mount points like the
    /// private mounts' (see [`super::layout::HostBind`]).
    pub(super) mount_points: Vec<PathBuf>,
}

/// `--unshare-net` for an own empty network namespace, and for a sandbox started by root the
/// capabilities it keeps (`CAP_NET_RAW` only in its own namespace). bwrap takes these in any
/// order relative to the mount operations.
fn network_args(no_network: bool, by_root: bool) -> Vec<OsString> {
    let mut args = Vec::new();
    if no_network {
        args.push("--unshare-net".into());
    }
    if by_root {
        push(&mut args, ["--cap-drop", "ALL"].map(OsStr::new));
        for cap in ROOT_CAPABILITIES {
            if cap != "CAP_NET_RAW" || no_network {
                push(&mut args, ["--cap-add", cap].map(OsStr::new));
            }
        }
    }
    args
}

/// The bwrap arguments of each sandbox shape.
pub(super) type TemplateCache = Mutex<HashMap<Shape, Arc<Template>>>;

/// The bwrap arguments fixed by a sandbox's [`Shape`]: all but the `--bind`s of the session's
/// own directories, which go between `head` and `tail`.
pub(super) struct Template {
    /// Sandbox paths replaced by an empty read-only directory.
    pub(super) hidden: Vec<PathBuf>,
    /// `(link, target)`: sandbox paths made symlinks whatever the root has there.
    pub(super) links: Vec<(PathBuf, PathBuf)>,
    /// Namespaces but the network's, the directories of every mount point, `/dev` and
    /// `/proc`.
    pub(super) head: Vec<OsString>,
    /// The network namespace and capabilities, before `head`: `[host network, own empty
    /// namespace]` (a session switches between them per command, see [`Template::network`]).
    pub(super) networks: [Vec<OsString>; 2],
    /// The read-only mirror of the root (binds with the fewest submounts first). The covers
    /// of host sockets and `--remount-ro /` follow it.
    pub(super) tail: Vec<OsString>,
    /// The sandbox paths of the mirror's binds: what is below them is the root's.
    pub(super) bound: BTreeSet<PathBuf>,
    /// The root directories the mirror lists, as they were before they were listed.
    pub(super) listed: Vec<(PathBuf, DirStamp)>,
    /// The host's bound sockets already located for this shape.
    pub(super) sockets: SocketCache,
    /// The shape's namespace, prepared on first use (`None`: it could not be, so every
    /// command is a bwrap of its own).
    pub(super) prepared: OnceLock<Option<Arc<Prepared>>>,
}

impl Template {
    /// Computes the arguments for `shape`, with the sandbox mount points `mounts` (sorted,
    /// parents first).
    pub(super) fn build(shape: &Shape, mounts: &[Mount]) -> io::Result<Template> {
        let hidden = hidden_paths(&shape.root, &shape.temp_base, mounts);
        let links = run_links(&shape.root, mounts);
        let mut head: Vec<OsString> = [
            "--die-with-parent",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        let by_root = started_by_root();
        let networks = [false, true].map(|no_network| network_args(no_network, by_root));
        let (targets, dirs) = tmpfs_layout(shape, mounts, &hidden, &links);
        for dir in dirs {
            push(&mut head, ["--dir".as_ref(), dir.as_os_str()]);
        }
        push(
            &mut head,
            ["--dev", "/dev", "--proc", "/proc"].map(OsStr::new),
        );
        let mut mirrored = Mirror::default();
        mirror(&shape.root, Path::new("/"), &targets, &mut mirrored)?;
        let (tail, binds) = mirror_args(&mirrored.symlinks, &links, mirrored.binds);
        Ok(Template {
            hidden,
            links,
            head,
            networks,
            tail,
            bound: binds.into_iter().map(|(_, inside)| inside).collect(),
            listed: mirrored.listed,
            sockets: SocketCache::default(),
            prepared: OnceLock::new(),
        })
    }

    /// The shape's namespace built by `bwrap` once (its mounts, mirror and a read-only
    /// `/dev`), for commands to enter instead of a bwrap each. Blocking the first time.
    pub(super) fn prepared(&self, bwrap: &Path) -> Option<Arc<Prepared>> {
        self.prepared
            .get_or_init(|| {
                let mut args = self.head.clone();
                args.extend(self.tail.iter().cloned());
                push(
                    &mut args,
                    ["--remount-ro", "/dev", "--remount-ro", "/"].map(OsStr::new),
                );
                match prepare(bwrap, &args) {
                    Ok(prepared) => Some(Arc::new(prepared)),
                    Err(e) => {
                        tracing::warn!(
                            "environment `{ID}`: cannot prepare a namespace for commands to \
                             enter, each one starts its own bwrap: {e}"
                        );
                        None
                    }
                }
            })
            .clone()
    }

    /// The network arguments of a sandbox with its own empty network namespace
    /// (`no_network`) or the host's.
    pub(super) fn network(&self, no_network: bool) -> &[OsString] {
        &self.networks[usize::from(no_network)]
    }

    /// The arguments for `shape` from `cache`, if the directories they list have not changed
    /// since, else computed (and cached, once those directories have settled).
    pub(super) fn cached(
        cache: &TemplateCache,
        shape: &Shape,
        mounts: &[Mount],
    ) -> io::Result<Arc<Template>> {
        let known = cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(shape)
            .cloned();
        if let Some(template) = known {
            if template.is_current() {
                return Ok(template);
            }
        }
        let template = Arc::new(Template::build(shape, mounts)?);
        let mut cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
        if template.listed.iter().all(|(_, stamp)| stamp.settled()) {
            if cache.len() >= MAX_TEMPLATES {
                cache.clear();
            }
            cache.insert(shape.clone(), template.clone());
        } else {
            cache.remove(shape);
        }
        Ok(template)
    }

    /// Whether every listed directory is still as it was when it was listed.
    pub(super) fn is_current(&self) -> bool {
        self.listed
            .iter()
            .all(|(dir, stamp)| DirStamp::of(dir).is_ok_and(|now| now == *stamp))
    }
}

/// The sandbox paths the mirror leaves alone (mount points, kernel directories, hidden paths,
/// the shape's mount points and the `/run` links), and the directories made on the tmpfs
/// before anything is mounted: every target and its parents (a link's parents only: the link
/// is made last).
fn tmpfs_layout(
    shape: &Shape,
    mounts: &[Mount],
    hidden: &[PathBuf],
    links: &[(PathBuf, PathBuf)],
) -> (BTreeSet<PathBuf>, BTreeSet<PathBuf>) {
    let mut targets: BTreeSet<PathBuf> = mounts.iter().map(|m| m.sandbox.clone()).collect();
    targets.extend(KERNEL_DIRS.iter().map(PathBuf::from));
    targets.extend(hidden.iter().cloned());
    targets.extend(shape.mount_points.iter().cloned());
    // Every target and its parents exist on the tmpfs before anything is mounted (a
    // link's parents only: the link is made last).
    let mut dirs = BTreeSet::new();
    for target in &targets {
        dirs.extend(
            target
                .ancestors()
                .filter(|a| *a != Path::new("/"))
                .map(Path::to_path_buf),
        );
    }
    for (link, _) in links {
        dirs.extend(
            link.ancestors()
                .skip(1)
                .filter(|a| *a != Path::new("/"))
                .map(Path::to_path_buf),
        );
        targets.insert(link.clone());
    }
    (targets, dirs)
}

/// The arguments after the mount points: the mirror's symlinks and the `/run` links, then the
/// mirror's read-only binds, those that bring the most submounts along last. Returns them
/// with the binds in that order.
fn mirror_args(
    symlinks: &[(PathBuf, PathBuf)],
    links: &[(PathBuf, PathBuf)],
    mut binds: Vec<(PathBuf, PathBuf)>,
) -> (Vec<OsString>, Vec<(PathBuf, PathBuf)>) {
    let mut tail = Vec::new();
    let made_links = links.iter().map(|(link, target)| (target, link));
    for (target, link) in symlinks.iter().map(|(t, l)| (t, l)).chain(made_links) {
        push(
            &mut tail,
            ["--symlink".as_ref(), target.as_os_str(), link.as_os_str()],
        );
    }
    // bwrap reads the whole mount table after every bind: the table grows least if the
    // binds that bring submounts along come last.
    let points = mount_points();
    binds.sort_by_cached_key(|(host, _)| points.iter().filter(|p| p.starts_with(host)).count());
    for (host, inside) in &binds {
        push(
            &mut tail,
            [
                "--ro-bind-try".as_ref(),
                host.as_os_str(),
                inside.as_os_str(),
            ],
        );
    }
    (tail, binds)
}

pub(super) fn push<'a>(args: &mut Vec<OsString>, items: impl IntoIterator<Item = &'a OsStr>) {
    args.extend(items.into_iter().map(OsStr::to_os_string));
}

/// The host's temporary directory, as a sandbox path, when the sandbox would otherwise see it
/// (it holds every session's private directories).
pub(super) fn hidden_paths(root: &Path, temp_base: &Path, mounts: &[Mount]) -> Vec<PathBuf> {
    let Ok(rest) = temp_base.strip_prefix(root) else {
        return Vec::new();
    };
    let inside = Path::new("/").join(rest);
    if inside == Path::new("/") {
        tracing::warn!(
            provider = ID,
            "the temporary directory is the sandbox root: it cannot be hidden"
        );
        return Vec::new();
    }
    let covered = mounts.iter().any(|m| inside.starts_with(&m.sandbox))
        || KERNEL_DIRS.iter().any(|k| inside.starts_with(k));
    if covered {
        Vec::new()
    } else {
        vec![inside]
    }
}

/// The [`RUN_ALIASES`] to make symlinks to `/run`: those the root has (as a directory, or a
/// symlink elsewhere) in a real directory, unless a mount point is under them.
pub(super) fn run_links(root: &Path, mounts: &[Mount]) -> Vec<(PathBuf, PathBuf)> {
    let mut links = Vec::new();
    for alias in RUN_ALIASES {
        let inside = Path::new(alias);
        let host = root.join(inside.strip_prefix("/").unwrap_or(inside));
        let parent_is_dir = host
            .parent()
            .and_then(|p| fs::symlink_metadata(p).ok())
            .is_some_and(|m| m.is_dir());
        let Ok(meta) = fs::symlink_metadata(&host) else {
            continue;
        };
        let to_run = meta.file_type().is_symlink()
            && fs::read_link(&host).is_ok_and(|target| {
                let base = inside.parent().unwrap_or(Path::new("/"));
                lexical(&base.join(target)) == Path::new("/run")
            });
        let mounted_below = mounts.iter().any(|m| m.sandbox.starts_with(inside));
        if parent_is_dir && !to_run && !mounted_below {
            links.push((inside.to_path_buf(), PathBuf::from("/run")));
        }
    }
    links
}

/// Whether this process runs with real uid 0, as bwrap sees it (it then keeps every
/// capability unless told otherwise). Read once, from `/proc/self/status`.
pub(super) fn started_by_root() -> bool {
    static ROOT: OnceLock<bool> = OnceLock::new();
    *ROOT.get_or_init(|| {
        fs::read_to_string("/proc/self/status").is_ok_and(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().next())
                == Some("0")
        })
    })
}
