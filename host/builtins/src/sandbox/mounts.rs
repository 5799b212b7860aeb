//! The private writable mounts of a sandbox and their host directories.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use agentcompass_plugin_api::{Error, Result};

use super::ID;

/// The private writable mounts besides the working directory, with their host subdirectory
/// names and modes. `/run` and `/tmp` are private so that the host's sockets there stay out
/// of reach (see `sockets`).
pub(super) const FIXED_MOUNTS: [(&str, &str, u32); 5] = [
    ("/logs", "logs", 0o755),
    ("/tests", "tests", 0o755),
    ("/solution", "solution", 0o755),
    ("/run", "run", 0o755),
    ("/tmp", "tmp", 0o1777),
];

/// Symlinks of the root into its `/run` whose target a sandbox needs: `/etc/resolv.conf` on
/// hosts with systemd-resolved, NetworkManager or resolvconf.
pub(super) const RUN_LINKS: [&str; 1] = ["/etc/resolv.conf"];

/// The largest file [`seed_run`] copies.
const MAX_SEEDED: u64 = 1 << 20;

/// One private writable mount.
#[derive(Debug, Clone)]
pub(super) struct Mount {
    /// Where it appears in the sandbox.
    pub(super) sandbox: PathBuf,
    /// The host directory behind it.
    pub(super) host: PathBuf,
}

/// Creates the host directories of the writable mounts under `dir` (the working directory's,
/// unless it is one of the fixed mounts, and the fixed ones), sorted parents first, with the
/// mount points of mounts nested in another one made in the outer host directory (not by
/// bwrap while the sandbox is being built).
pub(super) fn create_mounts(dir: &Path, workdir: &Path) -> Result<Vec<Mount>> {
    let fail = |what: &Path, e: io::Error| {
        Error::environment(format!(
            "environment `{ID}`: cannot create `{}`: {e}",
            what.display()
        ))
    };
    let mut specs: Vec<(PathBuf, &str, u32)> = Vec::new();
    if !FIXED_MOUNTS.iter().any(|(p, _, _)| workdir == Path::new(p)) {
        specs.push((workdir.to_path_buf(), "workdir", 0o755));
    }
    specs.extend(
        FIXED_MOUNTS
            .iter()
            .map(|(p, name, mode)| (PathBuf::from(p), *name, *mode)),
    );
    let mut mounts = Vec::new();
    for (sandbox, name, mode) in specs {
        let host = dir.join(name);
        fs::DirBuilder::new()
            .mode(mode)
            .create(&host)
            .and_then(|()| fs::set_permissions(&host, fs::Permissions::from_mode(mode)))
            .map_err(|e| fail(&host, e))?;
        mounts.push(Mount { sandbox, host });
    }
    mounts.sort_by(|a, b| a.sandbox.cmp(&b.sandbox));
    for (i, inner) in mounts.iter().enumerate() {
        if let Some(outer) = mounts[..i]
            .iter()
            .rev()
            .find(|m| inner.sandbox.starts_with(&m.sandbox))
        {
            let point = outer.host.join(
                inner
                    .sandbox
                    .strip_prefix(&outer.sandbox)
                    .unwrap_or(Path::new("")),
            );
            fs::create_dir_all(&point).map_err(|e| fail(&point, e))?;
        }
    }
    Ok(mounts)
}

/// Copies what a task image's root filesystem `root` has at each of the private writable
/// mounts (its `WORKDIR`'s files, bundled `/tests`, ...) into the mount's host directory, the
/// directory's own mode and times included, as a container sees its image there.
pub(super) fn seed_mounts(root: &Path, mounts: &[Mount]) -> Result<()> {
    for mount in mounts {
        let inside = mount.sandbox.strip_prefix("/").unwrap_or(&mount.sandbox);
        let source = root.join(inside);
        let is_dir = fs::symlink_metadata(&source).is_ok_and(|m| m.is_dir());
        if !is_dir {
            continue;
        }
        let out = std::process::Command::new("cp")
            .arg("-a")
            .arg(source.join("."))
            .arg(&mount.host)
            .output()
            .map_err(|e| Error::environment(format!("environment `{ID}`: cp: {e}")))?;
        if !out.status.success() {
            return Err(Error::environment(format!(
                "environment `{ID}`: copying the image's `{}` into the sandbox failed: {}",
                mount.sandbox.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
    }
    Ok(())
}

/// Copies into the private `/run` among `mounts` the regular files of the root's `/run` (or
/// `/var/run`) that a [`RUN_LINKS`] symlink of the root points to, at the same place, so the
/// link still resolves (DNS keeps working) without the host's `/run` (which holds sockets).
pub(super) fn seed_run(root: &Path, mounts: &[Mount]) -> Result<()> {
    let Some(run) = mounts.iter().find(|m| m.sandbox == Path::new("/run")) else {
        return Ok(());
    };
    for link in RUN_LINKS {
        let Some(inside) = run_target(root, Path::new(link)) else {
            continue;
        };
        let Some(bytes) = regular_file_of(root, &root.join("run").join(&inside)) else {
            continue;
        };
        let target = run.host.join(&inside);
        let fail = |e: io::Error| {
            Error::environment(format!(
                "environment `{ID}`: cannot create `{}`: {e}",
                target.display()
            ))
        };
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).map_err(fail)?;
        }
        fs::write(&target, bytes).map_err(fail)?;
    }
    Ok(())
}

/// Where under `/run` the symlink `link` (a sandbox path) of `root` points, if it does (a
/// target under `/var/run` counts: that is `/run` in the sandbox).
fn run_target(root: &Path, link: &Path) -> Option<PathBuf> {
    let target = fs::read_link(root.join(link.strip_prefix("/").ok()?)).ok()?;
    let base = link.parent().unwrap_or(Path::new("/"));
    let absolute = lexical(&base.join(target));
    let inside = absolute
        .strip_prefix("/run")
        .or_else(|_| absolute.strip_prefix("/var/run"))
        .ok()?;
    (!inside.as_os_str().is_empty()).then(|| inside.to_path_buf())
}

/// The content of `path` if it resolves to a regular file inside `root`'s `/run` (at most
/// [`MAX_SEEDED`] bytes).
fn regular_file_of(root: &Path, path: &Path) -> Option<Vec<u8>> {
    let resolved = fs::canonicalize(path).ok()?;
    let run = fs::canonicalize(root.join("run")).ok()?;
    let meta = fs::symlink_metadata(&resolved).ok()?;
    let fits = resolved.starts_with(&run) && meta.is_file() && meta.len() <= MAX_SEEDED;
    fits.then(|| fs::read(&resolved).ok()).flatten()
}

/// `path` with `.` and `..` applied lexically (absolute in, absolute out).
pub(super) fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::Normal(name) => out.push(name),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}
