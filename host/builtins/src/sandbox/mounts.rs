//! The private writable mounts of a sandbox and their host directories.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use agentcompass_plugin_api::{Error, Result};

use super::ID;

/// The private writable mounts besides the working directory, with their host subdirectory
/// names and modes.
pub(super) const FIXED_MOUNTS: [(&str, &str, u32); 4] = [
    ("/logs", "logs", 0o755),
    ("/tests", "tests", 0o755),
    ("/solution", "solution", 0o755),
    ("/tmp", "tmp", 0o1777),
];

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
