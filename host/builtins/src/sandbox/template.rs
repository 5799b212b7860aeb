//! The bwrap arguments fixed by a sandbox's shape (root, working directory, network,
//! temporary directory), computed once per shape and reused while the root directories they
//! list are unchanged.

use std::collections::{BTreeSet, HashMap};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::layout::Mount;
use super::mirror::{mirror, mount_points, Mirror};
use super::{ID, KERNEL_DIRS};

/// Sandbox shapes whose bwrap arguments are kept; the cache starts over beyond that.
pub(super) const MAX_TEMPLATES: usize = 64;

/// A listed directory modified less than this long ago may change again within the same
/// timestamp tick, unnoticed: its mirror is used once, not cached.
pub(super) const SETTLE_TIME: Duration = Duration::from_secs(2);

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
}

/// The bwrap arguments of each sandbox shape.
pub(super) type TemplateCache = Mutex<HashMap<Shape, Arc<Template>>>;

/// When a listed directory was last changed, as far as its metadata tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct DirStamp {
    pub(super) dev: u64,
    pub(super) ino: u64,
    pub(super) mtime: (i64, i64),
    pub(super) ctime: (i64, i64),
}

impl DirStamp {
    /// The stamp of `dir` now.
    pub(super) fn of(dir: &Path) -> io::Result<DirStamp> {
        let meta = fs::metadata(dir)?;
        Ok(DirStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        })
    }

    /// Whether the listing last changed more than [`SETTLE_TIME`] ago, so that any later
    /// change gets a later modification time. (A change of the metadata alone, which moves
    /// only the change time, does not change the listing.)
    pub(super) fn settled(&self) -> bool {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        let modified = self.mtime.0 as f64 + self.mtime.1 as f64 / 1e9;
        now - modified > SETTLE_TIME.as_secs_f64()
    }
}

/// The bwrap arguments fixed by a sandbox's [`Shape`]: all but the `--bind`s of the session's
/// own directories, which go between `head` and `tail`.
pub(super) struct Template {
    /// Sandbox paths replaced by an empty read-only directory.
    pub(super) hidden: Vec<PathBuf>,
    /// Namespaces, the directories of every mount point, `/dev` and `/proc`.
    pub(super) head: Vec<OsString>,
    /// The read-only mirror of the root (binds with the fewest submounts first), then
    /// `--remount-ro /`.
    pub(super) tail: Vec<OsString>,
    /// The root directories the mirror lists, as they were before they were listed.
    pub(super) listed: Vec<(PathBuf, DirStamp)>,
}

impl Template {
    /// Computes the arguments for `shape`, with the sandbox mount points `mounts` (sorted,
    /// parents first).
    pub(super) fn build(shape: &Shape, mounts: &[Mount]) -> io::Result<Template> {
        let hidden = hidden_paths(&shape.root, &shape.temp_base, mounts);
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
        if shape.no_network {
            head.push("--unshare-net".into());
        }
        let mut targets: BTreeSet<PathBuf> = mounts.iter().map(|m| m.sandbox.clone()).collect();
        targets.extend(KERNEL_DIRS.iter().map(PathBuf::from));
        targets.extend(hidden.iter().cloned());
        // Every target and its parents exist on the tmpfs before anything is mounted.
        let mut dirs = BTreeSet::new();
        for target in &targets {
            dirs.extend(
                target
                    .ancestors()
                    .filter(|a| *a != Path::new("/"))
                    .map(Path::to_path_buf),
            );
        }
        for dir in dirs {
            push(&mut head, ["--dir".as_ref(), dir.as_os_str()]);
        }
        push(
            &mut head,
            ["--dev", "/dev", "--proc", "/proc"].map(OsStr::new),
        );
        let mut mirrored = Mirror::default();
        mirror(&shape.root, Path::new("/"), &targets, &mut mirrored)?;
        let mut tail = Vec::new();
        for (target, link) in &mirrored.symlinks {
            push(
                &mut tail,
                ["--symlink".as_ref(), target.as_os_str(), link.as_os_str()],
            );
        }
        // bwrap reads the whole mount table after every bind: the table grows least if the
        // binds that bring submounts along come last.
        let points = mount_points();
        let mut binds = mirrored.binds;
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
        push(&mut tail, ["--remount-ro", "/"].map(OsStr::new));
        Ok(Template {
            hidden,
            head,
            tail,
            listed: mirrored.listed,
        })
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
