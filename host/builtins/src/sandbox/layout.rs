//! One session's sandbox: its writable mounts, the bwrap command, and how sandbox paths map
//! to host paths (symlinks resolved as the sandbox would).

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use agentcompass_plugin_api::{Error, Result};
use tokio::process::Command;

use super::cgroup::SessionCgroup;
use super::enter::{entry_program, JOIN_ARG};
use super::mounts::{create_mounts, seed_run, Mount};
use super::sockets::BOUND_SOCKETS;
use super::template::{push, Shape, Template, TemplateCache};
use super::{ID, KERNEL_DIRS};

/// What covers a host socket in the sandbox (see `sockets`).
pub(super) const SOCKET_COVER: &str = "/dev/null";

/// Symlinks followed while resolving one path before giving up (the kernel's limit).
pub(super) const MAX_SYMLINKS: usize = 40;

/// What a sandbox path is on the host.
pub(super) enum Place {
    /// Under a writable mount.
    Writable(PathBuf),
    /// Under the read-only root.
    ReadOnly(PathBuf),
    /// Only commands can see it.
    Hidden(&'static str),
}

/// A host directory of the open request bound into the sandbox (`HostMount`): read-only
/// (an installed tool) or writable (an install's staging directory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct HostBind {
    /// The host directory.
    pub(super) host: PathBuf,
    /// Where it appears in the sandbox.
    pub(super) sandbox: PathBuf,
    /// Bound with `--ro-bind` (else `--bind`).
    pub(super) read_only: bool,
}

/// The fixed shape of one session's sandbox: everything but the command.
pub(super) struct Layout {
    pub(super) bwrap: PathBuf,
    pub(super) root: PathBuf,
    pub(super) workdir: PathBuf,
    pub(super) no_network: bool,
    /// bwrap is setuid: variables the C library drops must go through `--setenv`.
    pub(super) setuid: bool,
    /// Parents before children.
    pub(super) mounts: Vec<Mount>,
    /// Sandbox paths replaced by an empty read-only directory.
    pub(super) hidden: Vec<PathBuf>,
    /// `(link, target)`: sandbox paths made symlinks whatever the root has there.
    pub(super) links: Vec<(PathBuf, PathBuf)>,
    /// The arguments shared by every sandbox of this shape.
    pub(super) template: Arc<Template>,
    /// The `--bind`s of this session's writable directories, then its host mounts.
    pub(super) binds: Vec<OsString>,
    /// The session's resource limits, which every command joins first (see `cgroup`).
    pub(super) cgroup: SessionCgroup,
    /// The open request's host mounts.
    pub(super) host_binds: Vec<HostBind>,
}

impl Layout {
    /// Creates the writable host directories under `dir` and computes the bwrap arguments
    /// (without a cache).
    #[cfg(test)]
    pub(super) fn create(
        dir: &Path,
        bwrap: PathBuf,
        root: PathBuf,
        workdir: PathBuf,
        no_network: bool,
        temp_base: &Path,
    ) -> Result<Layout> {
        let shape = Shape {
            root,
            workdir,
            no_network,
            temp_base: temp_base.to_path_buf(),
            mount_points: Vec::new(),
        };
        Layout::create_cached(dir, bwrap, shape, &TemplateCache::default(), Vec::new())
    }

    /// [`Layout::create`], with the shape's arguments taken from (or added to) `cache`, and
    /// the host mounts `host_binds` (their sandbox paths are the shape's `mount_points`).
    pub(super) fn create_cached(
        dir: &Path,
        bwrap: PathBuf,
        shape: Shape,
        cache: &TemplateCache,
        host_binds: Vec<HostBind>,
    ) -> Result<Layout> {
        let workdir = shape.workdir.clone();
        let mounts = create_mounts(dir, &workdir)?;
        seed_run(&shape.root, &mounts)?;
        let template = Template::cached(cache, &shape, &mounts).map_err(|e| {
            Error::environment(format!(
                "environment `{ID}`: cannot read the root filesystem `{}`: {e}",
                shape.root.display()
            ))
        })?;
        let mut binds = Vec::with_capacity(mounts.len() * 3);
        for mount in &mounts {
            push(
                &mut binds,
                [
                    "--bind".as_ref(),
                    mount.host.as_os_str(),
                    mount.sandbox.as_os_str(),
                ],
            );
        }
        for bind in &host_binds {
            let flag = if bind.read_only {
                "--ro-bind"
            } else {
                "--bind"
            };
            push(
                &mut binds,
                [
                    flag.as_ref(),
                    bind.host.as_os_str(),
                    bind.sandbox.as_os_str(),
                ],
            );
        }
        let setuid = fs::metadata(&bwrap).is_ok_and(|m| m.permissions().mode() & 0o4000 != 0);
        Ok(Layout {
            bwrap,
            root: shape.root,
            workdir,
            no_network: shape.no_network,
            setuid,
            mounts,
            hidden: template.hidden.clone(),
            links: template.links.clone(),
            template,
            binds,
            cgroup: SessionCgroup::default(),
            host_binds,
        })
    }

    /// A bwrap command for this sandbox, up to `--chdir cwd` (environment not set yet):
    /// namespaces and mount points, the session's writable binds, the read-only mirror, then
    /// the covers of the host sockets `masks` (from [`Layout::socket_masks`]), then `extra`
    /// (the session's egress binds).
    pub(super) fn command(&self, cwd: &Path, masks: &[PathBuf], extra: &[OsString]) -> Command {
        self.command_in(self.no_network, cwd, masks, extra)
    }

    /// [`Layout::command`] in its own empty network namespace (`no_network`) or the host's,
    /// whatever network the layout was made for.
    pub(super) fn command_in(
        &self,
        no_network: bool,
        cwd: &Path,
        masks: &[PathBuf],
        extra: &[OsString],
    ) -> Command {
        // Limited: bwrap starts inside the session's cgroups, through the entry binary.
        let mut cmd = match (self.cgroup.dirs.is_empty(), entry_program()) {
            (false, Some(entry)) => {
                let mut cmd = Command::new(entry);
                cmd.arg(JOIN_ARG)
                    .args(self.cgroup.procs())
                    .arg("--")
                    .arg(&self.bwrap);
                cmd
            }
            _ => Command::new(&self.bwrap),
        };
        cmd.args(self.template.network(no_network))
            .args(&self.template.head)
            .args(&self.binds)
            .args(&self.template.tail);
        for mask in masks {
            cmd.arg("--ro-bind").arg(SOCKET_COVER).arg(mask);
        }
        cmd.args(extra);
        cmd.args(["--remount-ro", "/", "--chdir"]).arg(cwd);
        cmd
    }

    /// The sandbox paths of the host's bound Unix sockets that the read-only mirror shows,
    /// to be covered in the next command's sandbox. Blocking (reads [`BOUND_SOCKETS`]).
    pub(super) fn socket_masks(&self) -> Result<Vec<PathBuf>> {
        let table = fs::read(BOUND_SOCKETS).map_err(|e| {
            Error::environment(format!(
                "environment `{ID}`: cannot list the host's Unix sockets ({BOUND_SOCKETS}): {e}"
            ))
        })?;
        Ok(self
            .template
            .sockets
            .masks(&table, |host| self.mirrored(host)))
    }

    /// Where the host path `host` (directories resolved) is in the sandbox, if it is there
    /// as the root's own file, inside one of the mirror's binds (not in a private mount, a
    /// hidden or kernel directory, or behind a link made for the sandbox).
    pub(super) fn mirrored(&self, host: &Path) -> Option<PathBuf> {
        let sandbox = Path::new("/").join(host.strip_prefix(&self.root).ok()?);
        if !matches!(self.place(&sandbox), Place::ReadOnly(_)) {
            return None;
        }
        let bound = sandbox
            .ancestors()
            .skip(1)
            .any(|a| self.template.bound.contains(a));
        bound.then_some(sandbox)
    }

    /// A session path as an absolute, lexically clean sandbox path (`..` kept for the
    /// resolution): relative paths are under the working directory.
    pub(super) fn absolute(&self, path: &str) -> PathBuf {
        if Path::new(path).is_absolute() {
            PathBuf::from(path)
        } else {
            self.workdir.join(path)
        }
    }

    /// Where a resolved (symlink-free, `..`-free) sandbox path is on the host.
    pub(super) fn place(&self, sandbox: &Path) -> Place {
        if let Some(bind) = self
            .host_binds
            .iter()
            .find(|b| sandbox.starts_with(&b.sandbox))
        {
            let rest = sandbox.strip_prefix(&bind.sandbox).unwrap_or(Path::new(""));
            let host = bind.host.join(rest);
            return if bind.read_only {
                Place::ReadOnly(host)
            } else {
                Place::Writable(host)
            };
        }
        if let Some(mount) = self
            .mounts
            .iter()
            .rev()
            .find(|m| sandbox.starts_with(&m.sandbox))
        {
            let rest = sandbox
                .strip_prefix(&mount.sandbox)
                .unwrap_or(Path::new(""));
            return Place::Writable(mount.host.join(rest));
        }
        if self.hidden.iter().any(|h| sandbox.starts_with(h)) {
            return Place::Hidden("hidden in the sandbox (the host's temporary directory)");
        }
        if KERNEL_DIRS.iter().any(|k| sandbox.starts_with(k)) {
            return Place::Hidden("only visible to commands (use exec)");
        }
        let rest = sandbox.strip_prefix("/").unwrap_or(sandbox);
        Place::ReadOnly(self.root.join(rest))
    }

    /// Whether `sandbox` is a directory made for the sandbox's own structure (a strict parent
    /// of a mount point or hidden path): those are plain directories, whatever the root has.
    pub(super) fn is_structural(&self, sandbox: &Path) -> bool {
        self.mounts
            .iter()
            .map(|m| &m.sandbox)
            .chain(self.host_binds.iter().map(|b| &b.sandbox))
            .chain(&self.hidden)
            .chain(self.links.iter().map(|(link, _)| link))
            .chain(&[PathBuf::from("/proc"), PathBuf::from("/dev")])
            .any(|t| t != sandbox && t.starts_with(sandbox))
    }

    /// The target of the link made for the sandbox at `sandbox`, if there is one.
    pub(super) fn made_link(&self, sandbox: &Path) -> Option<&PathBuf> {
        self.links
            .iter()
            .find(|(link, _)| link == sandbox)
            .map(|(_, target)| target)
    }

    /// Resolves a session path as the sandbox would, following every symlink (an absolute
    /// target is a sandbox path) and `..`. Blocking.
    pub(super) fn resolve(&self, op: &str, path: &str) -> Result<Resolved> {
        let mut pending: VecDeque<OsString> = VecDeque::new();
        push_components(&mut pending, &self.absolute(path), false);
        let mut current = PathBuf::from("/");
        let mut links = 0;
        while let Some(name) = pending.pop_front() {
            if name == ".." {
                current.pop();
                continue;
            }
            let next = current.join(&name);
            let host = match self.place(&next) {
                Place::Writable(host) | Place::ReadOnly(host) => host,
                Place::Hidden(why) => {
                    return Err(Error::environment(format!("{op}: `{path}` is {why}")))
                }
            };
            let link = if let Some(target) = self.made_link(&next) {
                Some(target.clone())
            } else if self.is_structural(&next) {
                None
            } else {
                fs::symlink_metadata(&host)
                    .ok()
                    .filter(|m| m.file_type().is_symlink())
                    .and_then(|_| fs::read_link(&host).ok())
            };
            match link {
                Some(target) => {
                    links += 1;
                    if links > MAX_SYMLINKS {
                        return Err(Error::environment(format!(
                            "{op}: `{path}`: too many levels of symbolic links"
                        )));
                    }
                    if target.is_absolute() {
                        current = PathBuf::from("/");
                    }
                    push_components(&mut pending, &target, true);
                }
                None => current = next,
            }
        }
        match self.place(&current) {
            Place::Writable(host) => Ok(Resolved {
                host,
                sandbox: current,
                writable: true,
            }),
            Place::ReadOnly(host) => Ok(Resolved {
                host,
                sandbox: current,
                writable: false,
            }),
            Place::Hidden(why) => Err(Error::environment(format!("{op}: `{path}` is {why}"))),
        }
    }

    /// [`Layout::resolve`] for a write: the path must be under a writable mount.
    pub(super) fn resolve_writable(&self, op: &str, path: &str) -> Result<Resolved> {
        let resolved = self.resolve(op, path)?;
        if resolved.writable {
            return Ok(resolved);
        }
        let via = if resolved.sandbox == self.absolute(path) {
            String::new()
        } else {
            format!(" (it resolves to `{}`)", resolved.sandbox.display())
        };
        let writable: Vec<String> = self
            .mounts
            .iter()
            .map(|m| m.sandbox.display().to_string())
            .collect();
        Err(Error::environment(format!(
            "{op}: `{path}` is read-only in the sandbox{via}; writable: {}",
            writable.join(", ")
        )))
    }
}

/// A session path resolved to the host.
pub(super) struct Resolved {
    pub(super) host: PathBuf,
    pub(super) sandbox: PathBuf,
    pub(super) writable: bool,
}

/// Adds the components of `path` to the front (`front`) or back of `pending`.
pub(super) fn push_components(pending: &mut VecDeque<OsString>, path: &Path, front: bool) {
    let names: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect();
    if front {
        for name in names.into_iter().rev() {
            pending.push_front(name);
        }
    } else {
        pending.extend(names);
    }
}
