//! A task's own image in the sandbox (issue 54): a task that ships its image definition
//! (`setup.build_context`, a Harbor task's `environment/`) is built with the daemonless engine
//! on the machine (Podman's `build`, in a store of the sandbox's own), its root filesystem
//! exported once into a cache keyed by the definition's content digest, and entered read-only
//! with bubblewrap as any `root` is — so the sandbox's speed and isolation apply to the task as
//! written, never the host's tools in its place. One build of a digest at a time per machine
//! (a file lock): concurrent tasks wait, then find it.
//!
//! The store (`image_store`): `storage/` and `run/` (Podman's `--root`/`--runroot`),
//! `rootfs/<digest>/` (the exported root filesystems) with `rootfs/<digest>.env.json` (the
//! image's `ENV`, which the session's commands get under the task's own bindings), `locks/`. The image's `FROM` must be in
//! that store or pullable (`podman load` puts a local image there).

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agentcompass_plugin_api::{Error, Result};
use nix::fcntl::{Flock, FlockArg};
use sha2::{Digest, Sha256};
use tokio::process::Command;

use super::ID;

/// How many of a failed build's last output lines its error quotes.
const FAILED_BUILD_LINES: usize = 8;

/// A built task image: its exported root filesystem and its `ENV` (`KEY=VALUE` entries, in
/// order).
#[derive(Debug, Clone)]
pub(super) struct BuiltImage {
    pub(super) rootfs: PathBuf,
    pub(super) env: BTreeMap<String, String>,
}

/// The file holding the `ENV` of the image exported into `rootfs`.
fn env_file(rootfs: &Path) -> PathBuf {
    rootfs.with_extension("env.json")
}

/// The `ENV` of the image exported into `rootfs` (as `podman image inspect` lists it).
fn image_env(rootfs: &Path) -> Result<BTreeMap<String, String>> {
    let read = |e: String| {
        Error::environment(format!(
            "environment `{ID}`: the ENV of `{}`: {e}",
            rootfs.display()
        ))
    };
    let text = fs::read_to_string(env_file(rootfs)).map_err(|e| read(e.to_string()))?;
    let entries: Option<Vec<String>> =
        serde_json::from_str(&text).map_err(|e| read(e.to_string()))?;
    Ok(entries
        .unwrap_or_default()
        .iter()
        .filter_map(|entry| entry.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect())
}

/// The engine that builds task images for the sandbox, and its store.
#[derive(Debug, Clone)]
pub(super) struct Builder {
    /// The `podman` binary.
    pub(super) program: PathBuf,
    /// The sandbox's image store.
    pub(super) store: PathBuf,
}

impl Builder {
    /// The root filesystem of the image built from `context` (a directory with a
    /// `Dockerfile`), and its `ENV`: exported before, or built and exported now within
    /// `timeout`.
    pub(super) async fn root_of(&self, context: &Path, timeout: Duration) -> Result<BuiltImage> {
        let shown = context.display().to_string();
        let from = context.to_path_buf();
        let digest = tokio::task::spawn_blocking(move || digest(&from))
            .await
            .map_err(|e| Error::environment(format!("environment `{ID}`: {e}")))?
            .map_err(|e| {
                Error::environment(format!(
                    "environment `{ID}`: cannot read the image definition `{shown}`: {e}"
                ))
            })?;
        let rootfs = self.store.join("rootfs").join(&digest);
        let (locks, key) = (self.store.join("locks"), digest.clone());
        // Held until the root filesystem exists: another task of this definition waits here.
        let _lock = tokio::task::spawn_blocking(move || lock(&locks, &key))
            .await
            .map_err(|e| Error::environment(format!("environment `{ID}`: {e}")))?
            .map_err(|e| {
                Error::environment(format!("environment `{ID}`: the image store's lock: {e}"))
            })?;
        if !rootfs.is_dir() {
            let build = self.build_and_export(context, &digest, &rootfs);
            match tokio::time::timeout(timeout, build).await {
                Ok(done) => done?,
                Err(_) => {
                    return Err(Error::environment(format!(
                        "environment `{ID}`: building `{shown}/Dockerfile` exceeded its {} s \
                         build timeout",
                        timeout.as_secs()
                    )))
                }
            }
        }
        let env = image_env(&rootfs)?;
        Ok(BuiltImage { rootfs, env })
    }

    /// Builds the image of `context`, exports its file system into `rootfs` (renamed into
    /// place when complete) and removes the export's container and archive.
    async fn build_and_export(&self, context: &Path, digest: &str, rootfs: &Path) -> Result<()> {
        let tag = format!("agentcompass-build/ctx-{digest}:latest");
        let context_arg = context.display().to_string();
        self.run(
            &["build", "--network", "host", "-t", &tag, &context_arg],
            &format!("building `{context_arg}/Dockerfile`"),
        )
        .await?;
        // The image's `ENV`, kept beside its root filesystem (before it is renamed into place,
        // so a root filesystem always has it).
        let env = self
            .run(
                &["image", "inspect", "--format", "{{json .Config.Env}}", &tag],
                "reading the image's environment",
            )
            .await?;
        let stored = env_file(rootfs);
        if let Some(parent) = stored.parent() {
            fs::create_dir_all(parent).map_err(|e| {
                Error::environment(format!("environment `{ID}`: {}: {e}", parent.display()))
            })?;
        }
        fs::write(&stored, env.trim()).map_err(|e| {
            Error::environment(format!("environment `{ID}`: storing the image's ENV: {e}"))
        })?;
        let container = format!("agentcompass-export-{digest}-{}", std::process::id());
        self.run(
            &["create", "--name", &container, &tag, "/bin/true"],
            "creating the export",
        )
        .await?;
        let partial = rootfs.with_extension(format!("partial-{}", std::process::id()));
        let archive = rootfs.with_extension(format!("partial-{}.tar", std::process::id()));
        let exported = self.export(&container, &archive, &partial).await;
        let _ = self
            .run(&["rm", "--force", &container], "removing the export")
            .await;
        let _ = fs::remove_file(&archive);
        if let Err(e) = exported.and_then(|()| {
            fs::rename(&partial, rootfs).map_err(|e| {
                Error::environment(format!(
                    "environment `{ID}`: storing the root filesystem: {e}"
                ))
            })
        }) {
            let _ = fs::remove_dir_all(&partial);
            return Err(e);
        }
        Ok(())
    }

    /// `podman export` of `container` into `archive`, extracted into `dir`.
    async fn export(&self, container: &str, archive: &Path, dir: &Path) -> Result<()> {
        let shown = archive.display().to_string();
        self.run(&["export", "-o", &shown, container], "exporting the image")
            .await?;
        fs::create_dir_all(dir).map_err(|e| {
            Error::environment(format!("environment `{ID}`: {}: {e}", dir.display()))
        })?;
        let out = Command::new("tar")
            .arg("-C")
            .arg(dir)
            .arg("-xf")
            .arg(archive)
            .output()
            .await
            .map_err(|e| Error::environment(format!("environment `{ID}`: tar: {e}")))?;
        if out.status.success() {
            return Ok(());
        }
        Err(Error::environment(format!(
            "environment `{ID}`: extracting the image failed: {}",
            last_lines(&String::from_utf8_lossy(&out.stderr))
        )))
    }

    /// Runs `podman ARGS` in the sandbox's store: its standard output; its failure names
    /// `what` and quotes the output's last lines.
    async fn run(&self, args: &[&str], what: &str) -> Result<String> {
        let store = |sub: &str| self.store.join(sub).display().to_string();
        let out = Command::new(&self.program)
            .args(["--root", &store("storage"), "--runroot", &store("run")])
            .args(args)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output()
            .await
            .map_err(|e| {
                Error::environment(format!(
                    "environment `{ID}`: {}: {e}",
                    self.program.display()
                ))
            })?;
        if out.status.success() {
            return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
        }
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Err(Error::environment(format!(
            "environment `{ID}`: {what} failed ({}); its last output: {}",
            out.status,
            last_lines(&text)
        )))
    }
}

/// The last lines of `text`, joined with ` | `.
fn last_lines(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(FAILED_BUILD_LINES);
    lines[start..].join(" | ")
}

/// The content digest of a build context (first 16 hex digits of a sha256 over every file's
/// relative path, mode and content, and every link's target, in path order).
fn digest(context: &Path) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    let mut entries = Vec::new();
    walk(context, context, &mut entries)?;
    entries.sort();
    for relative in entries {
        let path = context.join(&relative);
        let meta = fs::symlink_metadata(&path)?;
        hasher.update(relative.as_bytes());
        hasher.update([0]);
        hasher.update(meta.permissions().mode().to_le_bytes());
        if meta.file_type().is_symlink() {
            hasher.update(fs::read_link(&path)?.as_os_str().as_encoded_bytes());
        } else if meta.is_file() {
            let mut file = File::open(&path)?;
            let mut buffer = [0u8; 64 * 1024];
            loop {
                let read = file.read(&mut buffer)?;
                if read == 0 {
                    break;
                }
                hasher.update(&buffer[..read]);
            }
        }
        hasher.update([0xff]);
    }
    Ok(hex::encode(hasher.finalize())[..16].to_string())
}

/// Every entry under `dir`, relative to `base`.
fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        let relative = path
            .strip_prefix(base)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let meta = fs::symlink_metadata(&path)?;
        out.push(relative);
        if meta.is_dir() {
            walk(base, &path, out)?;
        }
    }
    Ok(())
}

/// An exclusive lock of `key` under `dir`, held until the returned lock is dropped.
fn lock(dir: &Path, key: &str) -> std::io::Result<Flock<File>> {
    fs::create_dir_all(dir)?;
    let file = File::create(dir.join(format!("{key}.lock")))?;
    Flock::lock(file, FlockArg::LockExclusive).map_err(|(_, errno)| errno.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_follows_content_and_modes_not_times() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("Dockerfile"), "FROM x\n").unwrap();
        fs::create_dir(dir.path().join("files")).unwrap();
        fs::write(dir.path().join("files/a.txt"), "a").unwrap();
        let first = digest(dir.path()).unwrap();
        assert_eq!(first.len(), 16);
        assert_eq!(digest(dir.path()).unwrap(), first);
        fs::write(dir.path().join("files/a.txt"), "b").unwrap();
        let second = digest(dir.path()).unwrap();
        assert_ne!(second, first);
        let script = dir.path().join("files/a.txt");
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
        assert_ne!(digest(dir.path()).unwrap(), second);
    }

    #[test]
    fn a_failure_quotes_the_last_lines() {
        let text = (1..=12).map(|i| format!("line {i}\n")).collect::<String>();
        assert_eq!(
            last_lines(&text),
            "line 5 | line 6 | line 7 | line 8 | line 9 | line 10 | line 11 | line 12"
        );
    }
}
