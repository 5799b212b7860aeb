//! A task's own image in the sandbox (issue 54): a task that ships its image definition
//! (`setup.build_context`, a Harbor task's `environment/`) is built with the daemonless engine
//! on the machine (Podman's `build`, in a store of the sandbox's own); a task that names its
//! image (`setup.image`, a Harbor task's `docker_image`) has it taken from that store, pulled
//! when missing. Either image's root filesystem is exported once into a cache keyed by the
//! definition's content digest (a named image: by its image ID) and entered with bubblewrap
//! as any `root` is — so the sandbox's speed and isolation apply to the task as written, never
//! the host's tools in its place. One export of a key at a time per machine (a file lock):
//! concurrent tasks wait, then find it.
//!
//! The store (`image_store`): `storage/` and `run/` (Podman's `--root`/`--runroot`),
//! `rootfs/<key>/` (the exported root filesystems) with `rootfs/<key>.image.json` (the image's
//! configuration: its `Env`, which the session's commands get under the task's own bindings,
//! its `WorkingDir` and `User`) and, for a build, `rootfs/<key>.build.log` (its output, which
//! the session reports as its `build_log`), `locks/`. A build's `FROM` must be in that store or pullable
//! (`podman load` puts a local image there).

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agentcompass_plugin_api::{Error, Result};
use nix::fcntl::{Flock, FlockArg};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokio::process::Command;

use super::ID;

/// How many of a failed build's last output lines its error quotes.
const FAILED_BUILD_LINES: usize = 8;

/// Where a task's image comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ImageSource<'a> {
    /// Built from a directory with a `Dockerfile` (`setup.build_context`).
    Build(&'a str),
    /// An image name (`setup.image`), taken from the store or pulled.
    Named(&'a str),
}

impl ImageSource<'_> {
    /// How an error names the image.
    pub(super) fn shown(&self) -> String {
        match self {
            ImageSource::Build(context) => format!("`{context}/Dockerfile`"),
            ImageSource::Named(name) => format!("`{name}`"),
        }
    }
}

/// A task image in the store: its exported root filesystem and its configuration.
#[derive(Debug, Clone)]
pub(super) struct TaskImage {
    pub(super) rootfs: PathBuf,
    /// Its `ENV` (`KEY=VALUE` entries).
    pub(super) env: BTreeMap<String, String>,
    /// Its `WORKDIR`, if it sets one other than `/`.
    pub(super) workdir: Option<String>,
    /// Its `USER`, if it sets one.
    pub(super) user: Option<String>,
    /// The log of its build, when it was built from a definition.
    pub(super) build_log: Option<PathBuf>,
}

/// An image's configuration as `podman image inspect --format '{{json .Config}}'` prints it
/// (the OCI image configuration; absent fields are empty).
#[derive(Debug, Default, Deserialize)]
struct ImageConfig {
    #[serde(rename = "Env", default)]
    env: Option<Vec<String>>,
    #[serde(rename = "WorkingDir", default)]
    working_dir: Option<String>,
    #[serde(rename = "User", default)]
    user: Option<String>,
}

/// The file holding the log of the build of the image exported into `rootfs`.
fn build_log(rootfs: &Path) -> PathBuf {
    rootfs.with_extension("build.log")
}

/// The file holding the configuration of the image exported into `rootfs`.
fn config_file(rootfs: &Path) -> PathBuf {
    rootfs.with_extension("image.json")
}

/// The image exported into `rootfs`, from its stored configuration.
fn task_image(rootfs: &Path) -> Result<TaskImage> {
    let read = |e: String| {
        Error::environment(format!(
            "environment `{ID}`: the configuration of `{}`: {e}",
            rootfs.display()
        ))
    };
    let text = fs::read_to_string(config_file(rootfs)).map_err(|e| read(e.to_string()))?;
    let config: Option<ImageConfig> =
        serde_json::from_str(&text).map_err(|e| read(e.to_string()))?;
    let config = config.unwrap_or_default();
    let non_empty = |v: Option<String>| v.filter(|v| !v.trim().is_empty());
    Ok(TaskImage {
        rootfs: rootfs.to_path_buf(),
        env: config
            .env
            .unwrap_or_default()
            .iter()
            .filter_map(|entry| entry.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        workdir: non_empty(config.working_dir).filter(|w| !w.trim_end_matches('/').is_empty()),
        user: non_empty(config.user),
        build_log: Some(build_log(rootfs)).filter(|log| log.is_file()),
    })
}

/// The engine that builds and pulls task images for the sandbox, and its store.
#[derive(Debug, Clone)]
pub(super) struct Builder {
    /// The `podman` binary.
    pub(super) program: PathBuf,
    /// The sandbox's image store.
    pub(super) store: PathBuf,
}

impl Builder {
    /// The image of `source` in the store: exported before, or built (pulled) and exported
    /// now within `timeout`.
    pub(super) async fn image_of(
        &self,
        source: ImageSource<'_>,
        timeout: Duration,
    ) -> Result<TaskImage> {
        let shown = source.shown();
        let work = async {
            match source {
                ImageSource::Build(context) => self.built(Path::new(context)).await,
                ImageSource::Named(name) => self.named(name).await,
            }
        };
        match tokio::time::timeout(timeout, work).await {
            Ok(done) => done,
            Err(_) => Err(Error::environment(format!(
                "environment `{ID}`: preparing the image {shown} exceeded its {} s build timeout",
                timeout.as_secs()
            ))),
        }
    }

    /// The image built from `context` (a directory with a `Dockerfile`).
    async fn built(&self, context: &Path) -> Result<TaskImage> {
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
        let _lock = self.lock(&digest).await?;
        let rootfs = self.store.join("rootfs").join(&digest);
        if !is_exported(&rootfs) {
            let tag = format!("agentcompass-build/ctx-{digest}:latest");
            let log = build_log(&rootfs);
            if let Some(parent) = log.parent() {
                let _ = fs::create_dir_all(parent);
            }
            self.run_kept(
                &["build", "--network", "host", "-t", &tag, &shown],
                &format!("building `{shown}/Dockerfile`"),
                Some(&log),
            )
            .await?;
            self.export_image(&tag, &rootfs).await?;
        }
        task_image(&rootfs)
    }

    /// The image named `name`: the store's, else pulled.
    async fn named(&self, name: &str) -> Result<TaskImage> {
        let key = format!(
            "name-{}",
            &hex::encode(Sha256::digest(name.as_bytes()))[..16]
        );
        let _lock = self.lock(&key).await?;
        let inspect = ["image", "inspect", "--format", "{{.Id}}", name];
        let id = match self.run(&inspect, "").await {
            Ok(id) => id,
            Err(_) => {
                self.run(&["pull", "-q", name], &format!("pulling `{name}`"))
                    .await?;
                self.run(&inspect, &format!("inspecting `{name}`")).await?
            }
        };
        let id: String = id
            .trim()
            .trim_start_matches("sha256:")
            .chars()
            .take(16)
            .collect();
        let rootfs = self.store.join("rootfs").join(format!("image-{id}"));
        if !is_exported(&rootfs) {
            self.export_image(name, &rootfs).await?;
        }
        task_image(&rootfs)
    }

    /// Holds the store's lock of `key` until dropped: another task of this image waits.
    async fn lock(&self, key: &str) -> Result<Flock<File>> {
        let (locks, key) = (self.store.join("locks"), key.to_string());
        tokio::task::spawn_blocking(move || lock(&locks, &key))
            .await
            .map_err(|e| Error::environment(format!("environment `{ID}`: {e}")))?
            .map_err(|e| {
                Error::environment(format!("environment `{ID}`: the image store's lock: {e}"))
            })
    }

    /// Exports the file system of `image` into `rootfs` (renamed into place when complete,
    /// after its configuration is stored beside it) and removes the export's container and
    /// archive.
    async fn export_image(&self, image: &str, rootfs: &Path) -> Result<()> {
        let _ = fs::remove_dir_all(rootfs);
        let config = self
            .run(
                &["image", "inspect", "--format", "{{json .Config}}", image],
                "reading the image's configuration",
            )
            .await?;
        let stored = config_file(rootfs);
        if let Some(parent) = stored.parent() {
            fs::create_dir_all(parent).map_err(|e| {
                Error::environment(format!("environment `{ID}`: {}: {e}", parent.display()))
            })?;
        }
        fs::write(&stored, config.trim()).map_err(|e| {
            Error::environment(format!(
                "environment `{ID}`: storing the image's configuration: {e}"
            ))
        })?;
        let pid = std::process::id();
        let name = rootfs.file_name().unwrap_or_default().to_string_lossy();
        let container = format!("agentcompass-export-{name}-{pid}");
        self.run(
            &["create", "--name", &container, image, "/bin/true"],
            "creating the export",
        )
        .await?;
        let partial = rootfs.with_extension(format!("partial-{pid}"));
        let archive = rootfs.with_extension(format!("partial-{pid}.tar"));
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
        self.run_kept(args, what, None).await
    }

    /// [`Builder::run`], the whole output (standard output, then error) kept in the file
    /// `log` when given (the failure then names it).
    async fn run_kept(&self, args: &[&str], what: &str, log: Option<&Path>) -> Result<String> {
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
        let text = || {
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        };
        let kept = log.filter(|log| fs::write(log, text()).is_ok());
        if out.status.success() {
            return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
        }
        let named = kept.map_or(String::new(), |log| {
            format!(" (its log: {})", log.display())
        });
        Err(Error::environment(format!(
            "environment `{ID}`: {what} failed ({}); its last output: {}{named}",
            out.status,
            last_lines(&text())
        )))
    }
}

/// Whether `rootfs` holds a complete export: the directory with its configuration beside it
/// (a store written before the configuration was kept is exported again).
fn is_exported(rootfs: &Path) -> bool {
    rootfs.is_dir() && config_file(rootfs).is_file()
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
    fn an_exported_image_keeps_its_env_workdir_and_user() {
        let dir = tempfile::tempdir().unwrap();
        let rootfs = dir.path().join("abc");
        fs::create_dir(&rootfs).unwrap();
        assert!(!is_exported(&rootfs), "no configuration yet");
        // As `podman image inspect --format '{{json .Config}}'` prints it.
        let config = r#"{"Env":["PATH=/usr/bin:/bin","BUILT_FILE=/built.txt"],
            "WorkingDir":"/src","User":"1000","Labels":null}"#;
        fs::write(config_file(&rootfs), config).unwrap();
        assert!(is_exported(&rootfs));
        let image = task_image(&rootfs).unwrap();
        assert_eq!(image.env["BUILT_FILE"], "/built.txt");
        assert_eq!(image.workdir.as_deref(), Some("/src"));
        assert_eq!(image.user.as_deref(), Some("1000"));
        // No WORKDIR (or `/`) and no USER: the sandbox's defaults.
        fs::write(config_file(&rootfs), r#"{"Env":null,"WorkingDir":"/"}"#).unwrap();
        let image = task_image(&rootfs).unwrap();
        assert!(image.env.is_empty());
        assert_eq!((image.workdir, image.user), (None, None));
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
