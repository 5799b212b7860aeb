//! What every run-like command loads first: the configuration files, the runtime options
//! (defaults < config < flags), the plugin registry; and how they print requests.

use std::path::PathBuf;

use agentcompass_plugin_api::contracts::{ComponentKind, RunRequest};
use anyhow::Context;
use serde_json::Value;

use crate::cli::{GlobalArgs, ProgressArg, RuntimeFlags};
use agentcompass_host::config::{load_run_config, LoadedConfig};
use agentcompass_host::progress::ProgressMode;
use agentcompass_host::registry::Registry;
use agentcompass_host::request::{
    resolve_request_references, resolve_runtime, ResolvedRuntimeOptions, RuntimeOptions,
};
use agentcompass_host::setup::{build_registry, PluginSettings, Setup};
use agentcompass_redact::redact_value;

/// Loads the user, project and `--config` files.
pub fn load_config(global: &GlobalArgs) -> anyhow::Result<LoadedConfig> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    Ok(load_run_config(
        &global.configs,
        &cwd,
        &agentcompass_host::config::process_env,
    )?)
}

pub(super) fn absolute_strings(paths: &[PathBuf]) -> anyhow::Result<Vec<String>> {
    paths
        .iter()
        .map(|p| {
            std::path::absolute(p)
                .map(|p| p.display().to_string())
                .with_context(|| format!("cannot resolve {}", p.display()))
        })
        .collect()
}

/// Runtime overrides from the global flags and a command's runtime flags.
pub fn runtime_overlay(
    global: &GlobalArgs,
    flags: Option<&RuntimeFlags>,
) -> anyhow::Result<RuntimeOptions> {
    let mut overlay = RuntimeOptions {
        plugin_dirs: (!global.plugin_dirs.is_empty())
            .then(|| absolute_strings(&global.plugin_dirs))
            .transpose()?,
        recipe_dirs: (!global.recipe_dirs.is_empty())
            .then(|| absolute_strings(&global.recipe_dirs))
            .transpose()?,
        plugin_lock: global.plugin_lock.as_ref().map(|p| p.display().to_string()),
        bundled_plugins: global.no_bundled_plugins.then_some(false),
        install_cache_dir: global
            .install_cache_dir
            .as_ref()
            .map(|dir| absolute_strings(std::slice::from_ref(dir)))
            .transpose()?
            .and_then(|dirs| dirs.into_iter().next()),
        ..RuntimeOptions::default()
    };
    if let Some(flags) = flags {
        overlay.results_dir = flags.results_dir.clone();
        overlay.timeout_seconds = flags.timeout_seconds;
        overlay.cleanup_grace_seconds = flags.cleanup_grace_seconds;
        overlay.checkpoint_after_seconds = flags.checkpoint_after_seconds;
        overlay.progress = flags.progress.map(|p| match p {
            ProgressArg::Auto => ProgressMode::Auto,
            ProgressArg::Plain => ProgressMode::Plain,
            ProgressArg::None => ProgressMode::None,
        });
        overlay.progress_interval_seconds = flags.progress_interval_seconds;
        overlay.log_level = flags.log_level.clone();
        overlay.file_log_level = flags.file_log_level.clone();
        overlay.data_dir = flags.data_dir.clone();
        overlay.auto_install_dependencies = flags.auto_install_dependencies.then_some(true);
        overlay.fail_on_error = flags.fail_on_error;
        if flags.otel_endpoint.is_some() || flags.otel_content {
            overlay.otel = Some(agentcompass_otel::OtelOverlay {
                endpoint: flags.otel_endpoint.clone(),
                content: flags.otel_content.then_some(true),
            });
        }
        if !flags.provider_limits.is_empty() {
            overlay.provider_limits = Some(flags.provider_limits.iter().cloned().collect());
        }
        overlay.executor = flags.executor.map(|e| match e {
            crate::cli::ExecutorArg::Local => agentcompass_host::request::Executor::Local,
            crate::cli::ExecutorArg::Slurm => agentcompass_host::request::Executor::Slurm,
        });
        if !flags.env_open_qps.is_empty() {
            overlay.env_open_qps = Some(flags.env_open_qps.iter().cloned().collect());
        }
    }
    Ok(overlay)
}

/// Plugin directories and lock file from the resolved runtime options.
pub fn plugin_settings(global: &GlobalArgs, runtime: &ResolvedRuntimeOptions) -> PluginSettings {
    PluginSettings {
        plugin_dirs: runtime.plugin_dirs.iter().map(PathBuf::from).collect(),
        recipe_dirs: runtime.recipe_dirs.iter().map(PathBuf::from).collect(),
        lock_file: runtime.plugin_lock.as_ref().map(PathBuf::from),
        load_bundled: !global.no_bundled_plugins && runtime.bundled_plugins,
    }
}

/// The registry of `runtime`'s plugin directories. Plugins refused on the way are printed
/// now; one refused when it is first opened (a run opens only the plugins it uses) is printed
/// the same way then.
pub fn setup_registry(
    global: &GlobalArgs,
    runtime: &ResolvedRuntimeOptions,
) -> anyhow::Result<Setup> {
    let mut setup = build_registry(&plugin_settings(global, runtime))?;
    super::print_problems(&setup.problems, global.verbose);
    let verbose = global.verbose;
    setup.registry.set_refusal_reporter(move |problem| {
        super::print_problems(std::slice::from_ref(problem), verbose)
    });
    Ok(setup)
}

/// Configuration, runtime options and registry for a command without runtime flags.
pub fn load_registry(
    global: &GlobalArgs,
) -> anyhow::Result<(LoadedConfig, ResolvedRuntimeOptions, Setup)> {
    let config = load_config(global)?;
    let runtime = resolve_runtime(&config, None, &runtime_overlay(global, None)?)?;
    let setup = setup_registry(global, &runtime)?;
    Ok((config, runtime, setup))
}

/// The printable (redacted) form of a request.
pub fn request_payload(request: &RunRequest) -> Value {
    redact_value(&serde_json::to_value(request).unwrap_or(Value::Null))
}

/// Warns (one line each) about `${VAR}` references whose variable is not set or whose value
/// does not convert to its field's type; they must be right by the time the request executes.
/// `true` when every reference resolved.
pub(super) fn warn_unresolved(registry: &Registry, requests: &[&RunRequest]) -> bool {
    let mut resolved_all = true;
    for request in requests {
        let resolved =
            resolve_request_references(registry, request, &agentcompass_host::config::process_env);
        if let Err(e) = resolved {
            eprintln!("warning: {e}");
            resolved_all = false;
        }
    }
    resolved_all
}

/// Warns (one line each) about provider limits and open rates set for environment providers
/// this registry does not have: likely a typo, and otherwise without effect here.
pub(super) fn warn_unknown_providers(runtime: &ResolvedRuntimeOptions, registry: &Registry) {
    let defaults = ResolvedRuntimeOptions::default();
    // Declared ids: no provider's plugin is opened for a warning.
    let known = registry.ids(ComponentKind::Environment);
    let named = |key: &str, ids: Vec<&String>| {
        for id in ids {
            if !known.contains(&id.as_str()) {
                eprintln!(
                    "warning: runtime.{key}: no environment provider `{id}` is installed (known: {})",
                    known.join(", ")
                );
            }
        }
    };
    named(
        "provider_limits",
        runtime
            .provider_limits
            .keys()
            .filter(|id| !defaults.provider_limits.contains_key(*id))
            .collect(),
    );
    named("env_open_qps", runtime.env_open_qps.keys().collect());
}

pub(super) fn print_json(value: &Value) -> anyhow::Result<()> {
    crate::outln!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

pub(super) fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .filter(|v| !v.is_null())
                .map(without_nulls)
                .collect(),
        ),
        other => other.clone(),
    }
}
