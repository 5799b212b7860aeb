//! `agentcompass-host plugin verify PATH...` and `plugin package LIBRARY... --out DIR`.

use std::path::{Path, PathBuf};

use agentcompass_plugin_api::contracts::ComponentKind;
use anyhow::{bail, Context};

use agentcompass_host::registry::{Registry, RegistryError};
use agentcompass_loader::lockfile::PluginLock;
use agentcompass_loader::manifest::{manifest_path_for_library, ManifestComponent, PluginManifest};
use agentcompass_loader::trust::{
    list_plugin_files, plugin_file_candidate, trusted_plugin_dir, PluginCandidate,
};
use agentcompass_loader::{inspect_library, load_candidate, DirRole, LoadOptions, LoadProblem};
use agentcompass_results::artifacts::sha256_file;
use agentcompass_results::fsutil::write_atomic;

/// What the loader would consider at `path`: every plugin of a directory, or the one entry a
/// file is, with exactly the loader's checks of that directory and entry (trust of the
/// directory included; nothing that is not a regular file is ever opened).
fn candidates(path: &Path) -> Vec<Result<PluginCandidate, LoadProblem>> {
    let absolute = match std::path::absolute(path) {
        Ok(p) => p,
        Err(e) => {
            return vec![Err(LoadProblem {
                path: path.to_path_buf(),
                message: e.to_string(),
                detail: None,
            })]
        }
    };
    if absolute.is_dir() {
        return match trusted_plugin_dir(&absolute).and_then(|dir| list_plugin_files(&dir)) {
            Ok(items) => items
                .into_iter()
                .map(|item| item.map_err(|e| LoadProblem::from_trust(&e)))
                .collect(),
            Err(e) => vec![Err(LoadProblem::from_trust(&e))],
        };
    }
    vec![plugin_file_candidate(&absolute).map_err(|e| LoadProblem::from_trust(&e))]
}

fn instantiate_all(registry: &Registry, name: &str) -> Vec<RegistryError> {
    let Some(plugin) = registry.opened_plugins().find(|p| p.source.name == name) else {
        return Vec::new();
    };
    plugin
        .description
        .components
        .iter()
        .filter_map(|c| {
            let made = match c.kind {
                ComponentKind::Benchmark => registry.benchmark(&c.id).map(drop),
                ComponentKind::Harness => registry.harness(&c.id).map(drop),
                ComponentKind::Environment => registry.environment(&c.id).map(drop),
                ComponentKind::Recipe => registry.recipe(&c.id).map(drop),
                ComponentKind::Analyzer => registry.analyzer(&c.id).map(drop),
            };
            made.err()
        })
        .collect()
}

/// Runs every check (trust, manifest, hash, lock, ABI, description, duplicates against the
/// built-ins and each other, constructors) without registering anything for a run.
pub fn verify(paths: &[PathBuf], lock: Option<PluginLock>) -> i32 {
    let options = LoadOptions {
        lock,
        init_services: Some(agentcompass_host::host_services::plugin_init_services),
        // `plugin verify` hashes every byte and checks every layout.
        digest_cache: None,
    };
    let mut registry = Registry::with_builtins(&agentcompass_builtins::all());
    registry.add_builtin_analyzers(agentcompass_analysis::builtins());
    let mut failures = 0;
    for path in paths {
        for candidate in candidates(path) {
            let result = candidate
                .and_then(|c| load_candidate(&c, DirRole::Plugins, &options))
                .and_then(|plugin| {
                    let name = plugin.source.name.clone();
                    let shown = plugin.source.to_string();
                    registry.add_plugin(plugin)?;
                    Ok((name, shown))
                });
            match result {
                Ok((name, shown)) => {
                    let errors = instantiate_all(&registry, &name);
                    if errors.is_empty() {
                        crate::outln!("ok: {shown}");
                    }
                    for error in errors {
                        failures += 1;
                        crate::outln!("error: {error}");
                    }
                }
                Err(problem) => {
                    failures += 1;
                    crate::outln!("error: {problem}");
                }
            }
        }
    }
    i32::from(failures > 0)
}

/// Copies each built library into `out` as `NAME.so` and writes `NAME.plugin.toml`.
pub fn package(libraries: &[PathBuf], out: &Path, host_api: Option<&str>) -> anyhow::Result<i32> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    for library in libraries {
        let library = std::fs::canonicalize(library)
            .with_context(|| format!("cannot open plugin library {}", library.display()))?;
        let (description, sha256) =
            inspect_library(&library).map_err(|p| anyhow::anyhow!("{p}"))?;
        let host_api = host_api
            .map(str::to_string)
            .unwrap_or_else(|| format!("^{}", description.api_version));
        let manifest = PluginManifest {
            name: description.name.clone(),
            version: semver::Version::parse(&description.version)
                .with_context(|| format!("plugin {} has a non-semver version", description.name))?,
            host_api: semver::VersionReq::parse(&host_api)
                .with_context(|| format!("--host-api `{host_api}` is not a semver requirement"))?,
            sha256: sha256.clone(),
            description: description.description.clone(),
            components: description
                .components
                .iter()
                .map(|c| ManifestComponent {
                    kind: c.kind,
                    id: c.id.clone(),
                    description: c.description.clone(),
                })
                .collect(),
        };
        let target = out.join(format!("{}.so", manifest.name));
        let bytes = std::fs::read(&library)
            .with_context(|| format!("cannot read {}", library.display()))?;
        write_atomic(&target, &bytes, 0o755)
            .with_context(|| format!("cannot write {}", target.display()))?;
        if sha256_file(&target)? != sha256 {
            bail!("{} changed while it was being packaged", library.display());
        }
        let manifest_path = manifest_path_for_library(&target);
        write_atomic(&manifest_path, manifest.to_toml_string().as_bytes(), 0o644)
            .with_context(|| format!("cannot write {}", manifest_path.display()))?;
        crate::outln!(
            "packaged {}@{} -> {} ({} components, sha256 {})",
            manifest.name,
            manifest.version,
            target.display(),
            manifest.components.len(),
            sha256
        );
    }
    Ok(0)
}
