//! Builds the run-local registry: built-ins, then the bundled plugin directory, then the
//! configured plugin directories, then the configured recipe directories.

use std::path::{Path, PathBuf};

use crate::registry::Registry;
use agentcompass_loader::digest_cache::DigestCache;
use agentcompass_loader::lockfile::PluginLock;
use agentcompass_loader::{check_dirs, DirRole, LoadOptions, LoadProblem, PluginDir};

/// Where plugins come from for one invocation.
#[derive(Debug, Clone, Default)]
pub struct PluginSettings {
    /// Configured plugin directories, in order.
    pub plugin_dirs: Vec<PathBuf>,
    /// Configured recipe directories, in order.
    pub recipe_dirs: Vec<PathBuf>,
    /// Optional lock file pinning plugin hashes.
    pub lock_file: Option<PathBuf>,
    /// Whether to load `<install dir>/plugins`.
    pub load_bundled: bool,
}

/// Setup failures that stop the command (refused plugins are not among them).
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The lock file could not be read.
    #[error(transparent)]
    Lock(#[from] agentcompass_loader::lockfile::LockError),
    /// A configured path could not be made absolute.
    #[error("cannot resolve {path}: {message}")]
    Path {
        /// The configured path.
        path: PathBuf,
        /// Why.
        message: String,
    },
}

/// The registry and every plugin that was refused on the way.
pub struct Setup {
    /// The run-local registry.
    pub registry: Registry,
    /// Refused plugins and unusable directories, one line each.
    pub problems: Vec<LoadProblem>,
}

/// The bundled plugin directory: `plugins/` next to the running binary.
pub fn bundled_plugin_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.join("plugins"))
}

fn absolute(path: &Path) -> Result<PathBuf, SetupError> {
    std::path::absolute(path).map_err(|e| SetupError::Path {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// The directories to scan, in registry order.
pub fn plugin_dirs(settings: &PluginSettings) -> Result<Vec<PluginDir>, SetupError> {
    let mut dirs = Vec::new();
    if settings.load_bundled {
        if let Some(dir) = bundled_plugin_dir().filter(|d| d.is_dir()) {
            dirs.push(PluginDir {
                path: dir,
                role: DirRole::Plugins,
            });
        }
    }
    for (paths, role) in [
        (&settings.plugin_dirs, DirRole::Plugins),
        (&settings.recipe_dirs, DirRole::Recipes),
    ] {
        for path in paths {
            let path = absolute(path)?;
            if !dirs.iter().any(|d: &PluginDir| d.path == path) {
                dirs.push(PluginDir { path, role });
            }
        }
    }
    Ok(dirs)
}

/// Checks every plugin (everything before dlopen) and builds the registry; a plugin is
/// opened the first time one of its components is asked for (see `registry`).
pub fn build_registry(settings: &PluginSettings) -> Result<Setup, SetupError> {
    let lock = match &settings.lock_file {
        Some(path) => Some(PluginLock::read(&absolute(path)?)?),
        None => None,
    };
    let options = LoadOptions {
        lock,
        init_services: Some(crate::host_services::plugin_init_services),
        digest_cache: DigestCache::default_path().map(DigestCache::open),
    };
    let report = check_dirs(&plugin_dirs(settings)?, &options);
    let mut registry = Registry::with_builtins(&agentcompass_builtins::all());
    registry.add_builtin_analyzers(agentcompass_analysis::builtins());
    let mut problems = report.problems;
    for plugin in report.plugins {
        if let Err(problem) = registry.add_checked(plugin) {
            problems.push(problem);
        }
    }
    registry.set_load_options(options);
    Ok(Setup { registry, problems })
}
