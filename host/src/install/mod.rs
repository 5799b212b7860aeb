//! The install cache: the packages harnesses run inside environments (agent CLIs such as
//! Claude Code or mini-swe-agent), made once per machine and platform and mounted read-only
//! into every environment that needs them.
//!
//! An entry is made by the package's own installer (`npm`, `pip`) inside a *helper
//! environment* of the same provider and image as the task's (public network, the entry's
//! staging directory mounted writable at the path where tasks will see it), so native parts,
//! interpreters and absolute paths fit the environment the tool runs in. The entry becomes
//! visible by one rename after its installer succeeded; a file lock per entry makes
//! concurrent attempts (and concurrent host processes) wait for one install instead of
//! racing. Layout: `<root>/<platform>/<package>@<version>/` with its record
//! `.agentcompass-install.json`, `<root>/downloads/{npm,pip}` (the installers' download
//! caches, shared by every platform).

mod helper;
mod installer;
mod lock;
mod platform;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use agentcompass_plugin_api::contracts::{EnvironmentSpec, HostMount, ToolInstall};
use agentcompass_plugin_api::sdk::{Ctx, EnvironmentProvider};
use serde_json::json;

pub use platform::Platform;

/// The record written last into a complete entry.
const RECORD_FILE: &str = ".agentcompass-install.json";

/// Why an install did not produce its entry.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The installer (or the helper environment) failed; the message names the package and
    /// the installer's last error line.
    #[error("{0}")]
    Failed(String),
    /// The installer ran past the install's timeout.
    #[error("installing `{requirement}` ({installer}) exceeded its timeout ({seconds} s)")]
    TimedOut {
        /// `package@version`.
        requirement: String,
        /// `npm` or `pip`.
        installer: &'static str,
        /// The timeout.
        seconds: u64,
    },
    /// The run was cancelled while waiting or installing.
    #[error("cancelled")]
    Cancelled,
}

impl crate::exit_code::ExitStatus for InstallError {
    fn exit_code(&self) -> i32 {
        match self {
            InstallError::Cancelled => crate::exit_code::CANCELLED,
            InstallError::Failed(_) | InstallError::TimedOut { .. } => crate::exit_code::FAILURE,
        }
    }
}

/// The machine's install cache.
#[derive(Debug, Clone)]
pub struct InstallCache {
    root: PathBuf,
}

impl InstallCache {
    /// A cache rooted at `root` (created on first use).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        InstallCache { root: root.into() }
    }

    /// The cache `runtime.install_cache_dir` names, else the [`default_root`](Self::default_root).
    pub fn configured(install_cache_dir: Option<&str>) -> Self {
        InstallCache::new(
            install_cache_dir
                .map(PathBuf::from)
                .unwrap_or_else(InstallCache::default_root),
        )
    }

    /// The default root: `$XDG_CACHE_HOME/agentcompass-host/installs`, else
    /// `$HOME/.cache/agentcompass-host/installs`.
    pub fn default_root() -> PathBuf {
        let cache = std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|v| !v.is_empty())
                    .map(|home| PathBuf::from(home).join(".cache"))
            })
            .unwrap_or_else(std::env::temp_dir);
        cache.join("agentcompass-host").join("installs")
    }

    /// The cache's root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the entry of `install` for `platform` lives (complete or not).
    pub fn entry_dir(&self, platform: &Platform, install: &ToolInstall) -> PathBuf {
        self.root
            .join(platform.dir_name())
            .join(entry_name(install))
    }

    /// Whether the entry of `install` for `platform` is complete.
    pub fn is_installed(&self, platform: &Platform, install: &ToolInstall) -> bool {
        self.entry_dir(platform, install)
            .join(RECORD_FILE)
            .is_file()
    }

    /// The read-only mounts of `installs` for `spec`'s platform, installing what is missing
    /// first (in order; the first failure ends it).
    pub async fn mounts(
        &self,
        provider: &Arc<dyn EnvironmentProvider>,
        ctx: &Ctx,
        spec: &EnvironmentSpec,
        installs: &[ToolInstall],
    ) -> Result<Vec<HostMount>, InstallError> {
        let capabilities = provider.capabilities().ok();
        let keep = capabilities
            .as_ref()
            .and_then(|c| c.platform_params.as_deref());
        let platform = Platform::of(spec, keep);
        let mut mounts = Vec::with_capacity(installs.len());
        for install in installs {
            let entry = self.ensure(provider, ctx, spec, &platform, install).await?;
            mounts.push(HostMount {
                source: entry.display().to_string(),
                target: install.mount_path.clone(),
                read_only: true,
            });
        }
        Ok(mounts)
    }

    /// The complete entry of `install`, made now when missing (under the entry's lock, so one
    /// install runs however many attempts need it).
    pub async fn ensure(
        &self,
        provider: &Arc<dyn EnvironmentProvider>,
        ctx: &Ctx,
        spec: &EnvironmentSpec,
        platform: &Platform,
        install: &ToolInstall,
    ) -> Result<PathBuf, InstallError> {
        let entry = self.entry_dir(platform, install);
        if entry.join(RECORD_FILE).is_file() {
            return Ok(entry);
        }
        let failed = |what: &str, e: std::io::Error| {
            InstallError::Failed(format!(
                "installing `{}` ({}): {what}: {e}",
                install.requirement(),
                install.installer.as_str()
            ))
        };
        let parent = entry.parent().unwrap_or(&self.root).to_path_buf();
        std::fs::create_dir_all(&parent).map_err(|e| failed("creating the cache", e))?;
        let _lock = lock::EntryLock::acquire(&entry, ctx)
            .await
            .map_err(|e| match e {
                lock::LockError::Cancelled => InstallError::Cancelled,
                lock::LockError::Io(e) => failed("locking the cache entry", e),
            })?;
        if entry.join(RECORD_FILE).is_file() {
            return Ok(entry);
        }
        let staging = tempfile::Builder::new()
            .prefix(&format!(".staging-{}-", entry_name(install)))
            .tempdir_in(&parent)
            .map_err(|e| failed("creating the staging directory", e))?;
        let downloads = self.root.join("downloads").join(install.installer.as_str());
        std::fs::create_dir_all(&downloads)
            .map_err(|e| failed("creating the download cache", e))?;
        let started = Instant::now();
        helper::install_in_helper(provider, ctx, spec, install, staging.path(), &downloads).await?;
        let record = json!({
            "installer": install.installer.as_str(),
            "package": install.package,
            "version": install.version,
            "mount_path": install.mount_path,
            "platform": platform.dir_name(),
            "provider": spec.id,
            "image": spec.setup.image,
            "install_seconds": (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        });
        let text = serde_json::to_vec_pretty(&record).unwrap_or_default();
        std::fs::write(staging.path().join(RECORD_FILE), text)
            .map_err(|e| failed("writing the install record", e))?;
        let staged = staging.keep();
        if entry.exists() {
            // An incomplete entry left by a crash of an older host: replaced.
            let _ = std::fs::remove_dir_all(&entry);
        }
        std::fs::rename(&staged, &entry).map_err(|e| failed("publishing the entry", e))?;
        tracing::info!(
            "installed {} ({}) for {} in {:.1} s",
            install.requirement(),
            install.installer.as_str(),
            platform.dir_name(),
            started.elapsed().as_secs_f64()
        );
        Ok(entry)
    }
}

/// The entry's directory name: the package with `/` as `+`, `@`, the version.
fn entry_name(install: &ToolInstall) -> String {
    format!("{}@{}", install.package.replace('/', "+"), install.version)
}

/// A tool install of a harness plan the host refuses (one line naming the entry).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("harness plan installs[{index}]: {problem}")]
pub struct BadInstall {
    /// The entry's position in `installs`.
    pub index: usize,
    /// What is wrong with it.
    pub problem: String,
}

/// What the host refuses before installing anything: a mount path that is not absolute or is
/// used twice, and package names or versions an installer would read as options or paths.
pub fn check_installs(installs: &[ToolInstall]) -> Result<(), BadInstall> {
    let bad = |index, problem| BadInstall { index, problem };
    for (i, install) in installs.iter().enumerate() {
        let plain = |text: &str| {
            !text.is_empty()
                && !text.starts_with('-')
                && !text.contains("..")
                && text
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "@/._-+~".contains(c))
        };
        if !plain(&install.package) {
            return Err(bad(
                i,
                format!("package `{}` is not a plain package name", install.package),
            ));
        }
        if !plain(&install.version) || install.version.contains('/') {
            return Err(bad(
                i,
                format!(
                    "version `{}` of `{}` is not a plain version",
                    install.version, install.package
                ),
            ));
        }
        let path = Path::new(&install.mount_path);
        let normal = path.components().all(|c| {
            matches!(
                c,
                std::path::Component::RootDir | std::path::Component::Normal(_)
            )
        });
        if !path.is_absolute() || !normal || path.parent().is_none() {
            return Err(bad(
                i,
                format!(
                    "mount_path `{}` must be an absolute path (not `/`, no `..`)",
                    install.mount_path
                ),
            ));
        }
        if installs[..i]
            .iter()
            .any(|other| other.mount_path == install.mount_path)
        {
            return Err(bad(
                i,
                format!("mount_path `{}` is used twice", install.mount_path),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
