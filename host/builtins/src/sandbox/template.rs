//! The bwrap arguments fixed by a sandbox's shape (root, working directory, network,
//! temporary directory), computed once per shape and reused while the root directories they
//! list are unchanged.

use std::collections::{BTreeSet, HashMap};
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use super::mirror::{mirror, mount_points, DirStamp, Mirror};
use super::mounts::Mount;
use super::{ID, KERNEL_DIRS};

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
}

/// The bwrap arguments of each sandbox shape.
pub(super) type TemplateCache = Mutex<HashMap<Shape, Arc<Template>>>;

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
