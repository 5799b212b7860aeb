//! From configuration, flags and orchestration files to complete `RunRequest`s and the
//! process-wide runtime options.

pub mod agent_args;
pub mod executor_options;
pub mod field_types;
pub mod layers;
pub mod orchestration;
pub mod references;
pub mod runtime_options;
pub mod sections;
pub mod single;
pub mod task_globs;

pub use orchestration::{
    load_orchestration_file, resolve_orchestration, LaunchArgs, OrchestratedRun, Orchestration,
};
pub use references::{resolve_request_references, ResolvedRequest};
pub use runtime_options::{
    EgressOptions, Executor, ResolvedRuntimeOptions, RuntimeOptions, SlurmOptions,
};
pub use single::{resolve_install_target, resolve_run, RunArgs};

use agentcompass_plugin_api::contracts::RunRequest;

use agentcompass_results::naming::sanitize_component;

use crate::config::{ConfigError, LoadedConfig};

/// The output namespace of a request: the `run_name` parts (`.`/`..`/empty dropped), then the
/// request name, or `<model>_<benchmark>_<harness>` for a direct run.
pub fn output_namespace(req: &RunRequest) -> Vec<String> {
    let mut parts: Vec<String> = req
        .output
        .run_name
        .split(['/', '\\'])
        .filter(|p| !p.is_empty() && *p != "." && *p != "..")
        .map(sanitize_component)
        .collect();
    let leaf = if req.metadata.request_name.is_empty() {
        let harness = if req.harness.id.is_empty() {
            "none"
        } else {
            req.harness.id.as_str()
        };
        format!("{}_{}_{}", req.model.id, req.benchmark.id, harness)
    } else {
        req.metadata.request_name.clone()
    };
    parts.push(sanitize_component(&leaf));
    parts
}

/// Runtime defaults → each config file's `runtime` → an orchestration file's `runtime` →
/// explicit (command-line) overrides; then every path made absolute (see [`absolute_paths`]).
pub fn resolve_runtime(
    config: &LoadedConfig,
    file_runtime: Option<(&str, &serde_json::Map<String, serde_json::Value>)>,
    explicit: &RuntimeOptions,
) -> Result<ResolvedRuntimeOptions, ConfigError> {
    let mut options = ResolvedRuntimeOptions::default();
    for file in &config.files {
        if let Some(runtime) = file.payload.get("runtime").and_then(|v| v.as_object()) {
            let source = file.path.display().to_string();
            options.apply(
                &source,
                &RuntimeOptions::from_map(&source, "runtime", runtime)?,
            )?;
        }
    }
    if let Some((source, runtime)) = file_runtime {
        options.apply(
            source,
            &RuntimeOptions::from_map(source, "runtime", runtime)?,
        )?;
    }
    options.apply("command line", explicit)?;
    absolute_paths(&mut options)?;
    Ok(options)
}

/// Every path of the resolved runtime options (results, data and install-cache directories,
/// plugin and recipe directories, the plugin lock, the log file, the Slurm shared directory),
/// wherever it was given — a flag, a config file, an orchestration file, a default — made
/// absolute against the working directory now: the host hands these paths to plugins and
/// environments (a task directory under `data_dir`, a mount), which run elsewhere and need
/// them absolute, and a later directory change must not move them.
fn absolute_paths(options: &mut ResolvedRuntimeOptions) -> Result<(), ConfigError> {
    fn absolute(key: &str, path: &mut String) -> Result<(), ConfigError> {
        if path.is_empty() || std::path::Path::new(path.as_str()).is_absolute() {
            return Ok(());
        }
        let resolved = std::path::absolute(path.as_str()).map_err(|e| {
            ConfigError::invalid(
                "working directory",
                format!("runtime.{key}"),
                format!("cannot make `{path}` absolute: {e}"),
            )
        })?;
        *path = resolved.display().to_string();
        Ok(())
    }
    absolute("results_dir", &mut options.results_dir)?;
    absolute("data_dir", &mut options.data_dir)?;
    for path in [
        ("log_file", options.log_file.as_mut()),
        ("plugin_lock", options.plugin_lock.as_mut()),
        ("install_cache_dir", options.install_cache_dir.as_mut()),
        ("slurm.shared_dir", options.slurm.shared_dir.as_mut()),
    ] {
        if let (key, Some(path)) = path {
            absolute(key, path)?;
        }
    }
    for dir in &mut options.plugin_dirs {
        absolute("plugin_dirs", dir)?;
    }
    for dir in &mut options.recipe_dirs {
        absolute("recipe_dirs", dir)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_runtime_path_is_made_absolute_against_the_working_directory() {
        let config = LoadedConfig::default();
        let explicit = RuntimeOptions {
            data_dir: Some("./data".into()),
            results_dir: Some("out".into()),
            log_file: Some("logs/run.log".into()),
            plugin_dirs: Some(vec!["plugins".into(), "/abs/plugins".into()]),
            recipe_dirs: Some(vec!["recipes".into()]),
            plugin_lock: Some("plugins.lock".into()),
            install_cache_dir: Some("cache".into()),
            ..RuntimeOptions::default()
        };
        let resolved = resolve_runtime(&config, None, &explicit).unwrap();
        let cwd = std::env::current_dir().unwrap();
        let under = |rel: &str| cwd.join(rel).display().to_string();
        assert_eq!(resolved.data_dir, under("data"));
        assert_eq!(resolved.results_dir, under("out"));
        assert_eq!(resolved.log_file, Some(under("logs/run.log")));
        assert_eq!(
            resolved.plugin_dirs,
            [under("plugins"), "/abs/plugins".into()]
        );
        assert_eq!(resolved.recipe_dirs, [under("recipes")]);
        assert_eq!(resolved.plugin_lock, Some(under("plugins.lock")));
        assert_eq!(resolved.install_cache_dir, Some(under("cache")));
        // The default results directory too.
        let defaults = resolve_runtime(&config, None, &RuntimeOptions::default()).unwrap();
        assert_eq!(defaults.results_dir, under("results"));
    }

    #[test]
    fn namespaces_are_sanitised() {
        assert_eq!(sanitize_component("gpt 4o/mini"), "gpt_4o_mini");
        let mut req = RunRequest::default();
        req.model.id = "m x".into();
        req.benchmark.id = "b".into();
        req.harness.id = "h".into();
        req.output.run_name = "exp/../a/./b".into();
        assert_eq!(output_namespace(&req), ["exp", "a", "b", "m_x_b_h"]);
        req.metadata.request_name = "nightly".into();
        assert_eq!(
            output_namespace(&req).last().map(String::as_str),
            Some("nightly")
        );
    }
}
