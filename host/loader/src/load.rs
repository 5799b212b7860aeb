//! The load pipeline: discover plugin files in trusted directories, run every check before
//! dlopen, load, and cross-check what the plugin says about itself against its manifest.
//! Problems are collected per plugin; one bad plugin never stops the good ones.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use abi_stable::library::LibraryError;
use agentcompass_plugin_api::abi::{
    HostBox, PluginDescription, PluginRoot_Ref, ANALYZER_API_VERSION, API_VERSION,
};
use agentcompass_plugin_api::bridge::host::export_ctx;
use agentcompass_plugin_api::contracts::ComponentKind;
use agentcompass_plugin_api::sdk::Ctx;
use agentcompass_plugin_api::{one_line, Error};

use super::digest_cache::DigestCache;
use super::dlopen::{open_root_module, LayoutCheck, OpenFailure};
use super::lockfile::PluginLock;
use super::manifest::PluginManifest;
use super::trust::{
    check_owner_and_mode, check_path_trusted, current_euid, list_plugin_files, trusted_plugin_dir,
    PluginCandidate, TrustError,
};
use super::verified_file::VerifiedLibrary;

/// What a directory may contain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirRole {
    /// Any component kind.
    Plugins,
    /// Recipe plugins only (`--recipe-dir`, `runtime.recipe_dirs`).
    Recipes,
}

/// A configured plugin directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginDir {
    /// Absolute path as configured.
    pub path: PathBuf,
    /// What the directory may contain.
    pub role: DirRole,
}

/// Where a loaded plugin came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginSource {
    /// Plugin name.
    pub name: String,
    /// Plugin version.
    pub version: String,
    /// The library file (canonical path).
    pub path: PathBuf,
}

impl fmt::Display for PluginSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}@{} ({})",
            self.name,
            self.version,
            self.path.display()
        )
    }
}

/// A plugin that passed every check and is mapped into the process (never unloaded).
#[derive(Clone)]
pub struct LoadedPlugin {
    /// Name, version and path.
    pub source: Arc<PluginSource>,
    /// What the plugin says about itself.
    pub description: PluginDescription,
    /// Its checked root module.
    pub root: PluginRoot_Ref,
    /// The sha256 of the loaded bytes.
    pub sha256: String,
}

/// One refused plugin (or directory): one line, naming the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadProblem {
    /// The library, manifest or directory concerned.
    pub path: PathBuf,
    /// Why it was refused and how to fix it (one line).
    pub message: String,
    /// The abi_stable layout report, when that is the reason (shown with `--verbose`).
    pub detail: Option<String>,
}

impl fmt::Display for LoadProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "refused plugin {}: {}",
            self.path.display(),
            self.message
        )
    }
}

impl LoadProblem {
    /// A refusal from a trust check, naming the file or directory concerned.
    pub fn from_trust(err: &TrustError) -> Self {
        LoadProblem::new(err.subject(), err)
    }

    fn new(path: &Path, message: impl fmt::Display) -> Self {
        LoadProblem {
            path: path.to_path_buf(),
            message: one_line(&message.to_string()),
            detail: None,
        }
    }
}

/// Options of one load.
#[derive(Default)]
pub struct LoadOptions {
    /// An optional lock file pinning every plugin's sha256.
    pub lock: Option<PluginLock>,
    /// The host services a plugin's `init` receives, given the plugin's name (without it,
    /// detached services: no logging, no cancellation).
    pub init_services: Option<fn(&str) -> Ctx>,
    /// Digests of libraries hashed by earlier loads (`crate::digest_cache`); not used when
    /// `lock` is set. Also the layout verdicts of earlier loads, used with or without a lock
    /// (they are keyed by the digest, hashed in full under a lock). Written back at the end
    /// of [`load_dirs`] if the load added an entry.
    pub digest_cache: Option<DigestCache>,
}

/// Everything a load produced.
#[derive(Default)]
pub struct LoadReport {
    /// Loaded plugins, in directory order then file-name order.
    pub plugins: Vec<LoadedPlugin>,
    /// Refused plugins and unusable directories.
    pub problems: Vec<LoadProblem>,
}

/// A plugin that passed every check made before dlopen: trusted path, owner and mode, its
/// manifest (valid, for this host, for its directory's role), the sha256 of its bytes (and
/// the lock). It holds the verified library open, so the bytes checked are the bytes a later
/// [`open_checked`] maps; what the library says about itself is not known yet.
pub struct CheckedPlugin {
    /// Name, version and path (from the manifest).
    pub source: Arc<PluginSource>,
    /// The manifest, validated.
    pub manifest: PluginManifest,
    /// The sha256 of the library's bytes, matching the manifest.
    pub sha256: String,
    library: VerifiedLibrary,
    checks: std::time::Duration,
}

/// Everything a check of the plugin directories produced.
#[derive(Default)]
pub struct CheckReport {
    /// Plugins that passed every check before dlopen, in directory order then file-name order.
    pub plugins: Vec<CheckedPlugin>,
    /// Refused plugins and unusable directories.
    pub problems: Vec<LoadProblem>,
}

/// Runs every check made before dlopen on every plugin of every directory, in order. The
/// digest cache is written back at the end if the check added an entry.
pub fn check_dirs(dirs: &[PluginDir], options: &LoadOptions) -> CheckReport {
    let mut report = CheckReport::default();
    for dir in dirs {
        let listed = trusted_plugin_dir(&dir.path).and_then(|d| list_plugin_files(&d));
        let candidates = match listed {
            Ok(candidates) => candidates,
            Err(e) => {
                report.problems.push(LoadProblem::from_trust(&e));
                continue;
            }
        };
        for candidate in candidates {
            let checked = candidate
                .map_err(|e| LoadProblem::from_trust(&e))
                .and_then(|c| check_candidate(&c, dir.role, options));
            match checked {
                Ok(plugin) => report.plugins.push(plugin),
                Err(problem) => report.problems.push(problem),
            }
        }
    }
    if let Some(cache) = &options.digest_cache {
        cache.persist();
    }
    report
}

/// Loads every plugin of every directory, in order: [`check_dirs`], then [`open_checked`] on
/// each plugin that passed.
pub fn load_dirs(dirs: &[PluginDir], options: &LoadOptions) -> LoadReport {
    let checked = check_dirs(dirs, options);
    let mut report = LoadReport {
        plugins: Vec::new(),
        problems: checked.problems,
    };
    for plugin in checked.plugins {
        match open_checked(plugin, options) {
            Ok(plugin) => report.plugins.push(plugin),
            Err(problem) => report.problems.push(problem),
        }
    }
    if let Some(cache) = &options.digest_cache {
        cache.persist();
    }
    report
}

/// Runs every check on one library and loads it: [`check_candidate`] then [`open_checked`].
pub fn load_candidate(
    candidate: &PluginCandidate,
    role: DirRole,
    options: &LoadOptions,
) -> Result<LoadedPlugin, LoadProblem> {
    open_checked(check_candidate(candidate, role, options)?, options)
}

/// Runs every check made before dlopen on one library. Every file is opened only if it is a
/// regular file (a FIFO named `NAME.so` or `NAME.plugin.toml` never blocks the check), and
/// checked again on its descriptor.
pub fn check_candidate(
    candidate: &PluginCandidate,
    role: DirRole,
    options: &LoadOptions,
) -> Result<CheckedPlugin, LoadProblem> {
    let library = &candidate.library;
    let started = std::time::Instant::now();
    let refuse = |message: &dyn fmt::Display| LoadProblem::new(library, message);
    check_path_trusted(library).map_err(|e| refuse(&e))?;
    let (manifest, manifest_meta) =
        PluginManifest::read_with_metadata(&candidate.manifest).map_err(|e| refuse(&e))?;
    let current_uid = current_euid().map_err(|e| refuse(&e))?;
    check_owner_and_mode(
        &manifest_meta,
        &candidate.manifest,
        &candidate.manifest,
        false,
        current_uid,
    )
    .map_err(|e| LoadProblem::from_trust(&e))?;
    manifest
        .validate_at(&candidate.manifest, &candidate.stem, &host_api_version())
        .map_err(|e| refuse(&e))?;
    if role == DirRole::Recipes {
        if let Some(c) = manifest
            .components
            .iter()
            .find(|c| c.kind != ComponentKind::Recipe)
        {
            return Err(refuse(&format_args!(
                "recipe directories hold recipe plugins only, but this plugin provides {} `{}`; \
                 move it to a --plugin-dir",
                c.kind, c.id
            )));
        }
    }
    // A pinned load hashes every byte; otherwise unchanged libraries take their recorded digest.
    let cache = options
        .digest_cache
        .as_ref()
        .filter(|_| options.lock.is_none());
    let verified = VerifiedLibrary::open_cached(library, cache).map_err(|e| refuse(&e))?;
    verified
        .check_sha256(&manifest.sha256, &candidate.manifest)
        .map_err(|e| refuse(&e))?;
    if let Some(lock) = &options.lock {
        lock.check(&manifest.name, verified.sha256())
            .map_err(|e| refuse(&e))?;
    }
    let source = Arc::new(PluginSource {
        name: manifest.name.clone(),
        version: manifest.version.to_string(),
        path: library.clone(),
    });
    Ok(CheckedPlugin {
        source,
        sha256: verified.sha256().to_string(),
        manifest,
        library: verified,
        checks: started.elapsed(),
    })
}

/// Maps a checked plugin (dlopen of the verified descriptor), checks its ABI (abi_stable's
/// version and layout checks; the layout walk is skipped for a digest whose layout this host
/// binary accepted before), cross-checks its description against its manifest and runs its
/// `init`.
pub fn open_checked(
    checked: CheckedPlugin,
    options: &LoadOptions,
) -> Result<LoadedPlugin, LoadProblem> {
    let CheckedPlugin {
        source,
        manifest,
        sha256,
        library: verified,
        checks,
    } = checked;
    let library = &source.path;
    let started = std::time::Instant::now();
    let refuse = |message: &dyn fmt::Display| LoadProblem::new(library, message);
    let layout = match &options.digest_cache {
        Some(cache) if cache.layout_accepted(&sha256) => LayoutCheck::AcceptedBefore,
        _ => LayoutCheck::Full,
    };
    let root = open_root_module(&verified.into_dlopen_path(), layout)
        .map_err(|failure| describe_open_failure(library, &manifest.name, failure))?;
    if let (LayoutCheck::Full, Some(cache)) = (layout, &options.digest_cache) {
        cache.record_layout(&sha256);
    }
    let opened = started.elapsed();
    let description = describe(root).map_err(|e| refuse(&format_args!("describe: {e}")))?;
    check_description(&manifest, &description).map_err(|e| refuse(&e))?;
    check_factories(&description).map_err(|e| refuse(&e))?;
    let ctx = options
        .init_services
        .map_or_else(Ctx::detached, |services| services(&source.name));
    let host: HostBox = export_ctx(&ctx);
    if let Err(e) = (root.init())(host).into_result() {
        return Err(refuse(&format_args!("init: {}", Error::from(e))));
    }
    tracing::debug!(
        plugin = %source,
        checks_us = checks.as_micros() as u64,
        dlopen_and_abi_check_us = opened.as_micros() as u64,
        ?layout,
        open_us = started.elapsed().as_micros() as u64,
        "plugin loaded"
    );
    Ok(LoadedPlugin {
        source,
        description,
        root,
        sha256,
    })
}

/// The plugin-API version this host provides.
pub fn host_api_version() -> semver::Version {
    semver::Version::parse(API_VERSION).unwrap_or_else(|_| semver::Version::new(0, 0, 0))
}

/// Asks a loaded plugin for its description.
pub fn describe(root: PluginRoot_Ref) -> Result<PluginDescription, Error> {
    let json = (root.describe())().into_result().map_err(Error::from)?;
    serde_json::from_str(&json)
        .map_err(|e| Error::invalid_input(format!("invalid description: {e}")))
}

fn check_description(
    manifest: &PluginManifest,
    description: &PluginDescription,
) -> Result<(), String> {
    if description.name != manifest.name {
        return Err(format!(
            "the library calls itself `{}` but its manifest says `{}`; re-package it",
            description.name, manifest.name
        ));
    }
    let declared: BTreeSet<(ComponentKind, &str)> = manifest
        .components
        .iter()
        .map(|c| (c.kind, c.id.as_str()))
        .collect();
    let provided: BTreeSet<(ComponentKind, &str)> = description
        .components
        .iter()
        .map(|c| (c.kind, c.id.as_str()))
        .collect();
    if declared != provided {
        let show = |set: &BTreeSet<(ComponentKind, &str)>| {
            set.iter()
                .map(|(k, id)| format!("{k} {id}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(format!(
            "the manifest declares [{}] but the library provides [{}]; re-package it",
            show(&declared),
            show(&provided)
        ));
    }
    Ok(())
}

/// Refuses a plugin that declares an analyzer but was built against a plugin API older than
/// [`ANALYZER_API_VERSION`], whose SDK cannot construct one.
fn check_factories(description: &PluginDescription) -> Result<(), String> {
    let analyzer = description
        .components
        .iter()
        .find(|c| c.kind == ComponentKind::Analyzer);
    let Some(analyzer) = analyzer else {
        return Ok(());
    };
    let first = semver::Version::parse(ANALYZER_API_VERSION).ok();
    let built = semver::Version::parse(&description.api_version).ok();
    match (built, first) {
        (Some(built), Some(first)) if built >= first => Ok(()),
        _ => Err(format!(
            "the library declares analyzer `{}` but was built against agentcompass-plugin-api \
             {}, whose plugins cannot provide analyzers; rebuild it against \
             agentcompass-plugin-api {ANALYZER_API_VERSION} or newer",
            analyzer.id, description.api_version
        )),
    }
}

fn describe_open_failure(library: &Path, name: &str, failure: OpenFailure) -> LoadProblem {
    let host = API_VERSION;
    let message = match failure {
        OpenFailure::Dlopen(text) => format!(
            "dlopen failed: {text} (a truncated or corrupt file, a missing dependency or the \
             wrong architecture; rebuild the plugin)"
        ),
        OpenFailure::NoRootModule => {
            "not an agentcompass plugin: it exports no plugin root module (build it with \
             agentcompass_plugin_api::export_plugin!)"
                .to_string()
        }
        OpenFailure::Library(LibraryError::IncompatibleVersionNumber {
            expected_version,
            actual_version,
            ..
        }) => {
            let plugin_is_older = (actual_version.major, actual_version.minor)
                < (expected_version.major, expected_version.minor);
            let fix = if plugin_is_older {
                format!("rebuild the plugin against agentcompass-plugin-api {host}")
            } else {
                format!("upgrade the host to plugin API {actual_version} or newer")
            };
            format!(
                "plugin `{name}` was built against agentcompass-plugin-api {actual_version}, but \
                 this host speaks {host}; {fix}"
            )
        }
        OpenFailure::Library(LibraryError::AbiInstability(report)) => {
            let mut problem = LoadProblem::new(
                library,
                format!(
                    "plugin `{name}` has an incompatible plugin-API layout (it was built against \
                     a different agentcompass-plugin-api); rebuild the plugin against \
                     agentcompass-plugin-api {host} (run with --verbose for the layout report)"
                ),
            );
            problem.detail = Some(report.to_string());
            return problem;
        }
        OpenFailure::Library(LibraryError::InvalidAbiHeader(header)) => format!(
            "plugin `{name}` uses an incompatible abi_stable version ({header:?}); rebuild it \
             against agentcompass-plugin-api {host}"
        ),
        OpenFailure::Library(LibraryError::RootModule { err, .. }) => {
            format!("the plugin's root module failed to initialise: {err}")
        }
        OpenFailure::Library(other) => other.to_string(),
    };
    LoadProblem::new(library, message)
}

/// Loads a library for packaging: trust and ELF checks, dlopen, describe. No manifest is
/// needed (packaging writes it). Returns the description and the sha256 of the loaded bytes.
pub fn inspect_library(library: &Path) -> Result<(PluginDescription, String), LoadProblem> {
    let refuse = |message: &dyn fmt::Display| LoadProblem::new(library, message);
    let verified = VerifiedLibrary::open(library).map_err(|e| refuse(&e))?;
    let name = library
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let sha256 = verified.sha256().to_string();
    let root = open_root_module(&verified.into_dlopen_path(), LayoutCheck::Full)
        .map_err(|failure| describe_open_failure(library, &name, failure))?;
    let description = describe(root).map_err(|e| refuse(&format_args!("describe: {e}")))?;
    Ok((description, sha256))
}
