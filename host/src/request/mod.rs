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
/// explicit (command-line) overrides.
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
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

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
