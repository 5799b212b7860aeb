//! `agentcompass-host config docs KIND ID`: a component's declared parameters; for a benchmark
//! its evaluation environment mode and metric contract; for an environment provider what it
//! enforces (network modes, entry types, per-phase policies,
//! host endpoints).

use agentcompass_plugin_api::contracts::{
    ComponentKind, EvaluationEnvironmentMode, MetricKind, NetworkMode, ProviderCapabilities,
    RunRequest,
};

use super::table;
use agentcompass_host::registry::{Registry, RegistryError};

/// Renders the parameter table of one component (and a provider's capabilities).
pub fn render(registry: &Registry, kind: ComponentKind, id: &str) -> Result<String, RegistryError> {
    let entry = registry.get(kind, id)?;
    let heading = format!("{kind} {id}: {}", entry.info.description);
    let heading = textwrap::fill(
        &heading,
        table::wrapping(table::output_width()).subsequent_indent("  "),
    );
    let mut out = format!("{heading}\nsource: {}\n\n", entry.source);
    let fields = &entry.info.config_schema.fields;
    if fields.is_empty() {
        out.push_str("(no parameters)\n");
    } else {
        let rows: Vec<Vec<String>> = fields
            .iter()
            .map(|f| {
                let default = if f.required {
                    "(required)".to_string()
                } else {
                    f.default.to_string()
                };
                vec![
                    f.name.clone(),
                    f.kind.as_str().to_string(),
                    default,
                    f.description.clone(),
                ]
            })
            .collect();
        out.push_str(&table::render_fitted(
            &["NAME", "TYPE", "DEFAULT", "DESCRIPTION"],
            &rows,
            table::output_width(),
        ));
    }
    if let Some(analyzer) = entry.info.analyzer.as_ref() {
        out.push_str(&analyzer_text(analyzer));
    }
    if kind == ComponentKind::Benchmark {
        out.push_str(&benchmark_text(registry, id)?);
    }
    if kind == ComponentKind::Environment {
        let capabilities = registry.environment(id)?.capabilities();
        out.push('\n');
        out.push_str(&capabilities_text(capabilities));
        out.push('\n');
        out.push_str(&shared_fields_text());
    }
    Ok(out)
}

/// A benchmark's evaluation environment mode (for a request with default params) and its
/// metric contract.
fn benchmark_text(registry: &Registry, id: &str) -> Result<String, RegistryError> {
    let handle = registry.benchmark(id)?;
    let benchmark = &handle.benchmark;
    let mode = match benchmark.evaluation_environment_mode(&RunRequest::default()) {
        Ok(EvaluationEnvironmentMode::NoEnvironment) => {
            "none (scored on the host from the run result)".to_string()
        }
        Ok(EvaluationEnvironmentMode::Reuse) => {
            "reuse (scored in the task's own environment, after the agent)".to_string()
        }
        Ok(EvaluationEnvironmentMode::Fresh) => {
            "fresh (scored in a new environment holding the collected artifacts)".to_string()
        }
        Err(e) => format!("unavailable ({})", e.message),
    };
    let mut out = format!("\nevaluation environment: {mode}\n");
    match benchmark.metric_contract() {
        Ok(contract) => {
            let rows: Vec<Vec<String>> = contract
                .metrics
                .iter()
                .map(|m| {
                    let kind = match m.kind {
                        MetricKind::BinarySuccess => "binary",
                        MetricKind::Scalar => "scalar",
                    };
                    let primary = if m.primary { "yes" } else { "" };
                    vec![
                        m.id.clone(),
                        kind.into(),
                        primary.into(),
                        m.description.clone(),
                    ]
                })
                .collect();
            out.push_str("metrics:\n");
            out.push_str(&table::render_fitted(
                &["METRIC", "KIND", "PRIMARY", "DESCRIPTION"],
                &rows,
                table::output_width(),
            ));
        }
        Err(e) => out.push_str(&format!("metrics: unavailable ({})\n", e.message)),
    }
    Ok(out)
}

/// An analyzer's traits and its options (`analysis_params.<ID>`) with their defaults.
fn analyzer_text(analyzer: &agentcompass_plugin_api::contracts::AnalyzerInfo) -> String {
    let mut out = format!(
        "\ncategory: {}\nfamily: {}\npriority: {}\nenabled by default: {}\ndatasets: {}\n",
        analyzer.category,
        analyzer.family.as_deref().unwrap_or("(its own id)"),
        analyzer.priority,
        if analyzer.enabled_by_default {
            "yes"
        } else {
            "no"
        },
        if analyzer.datasets.is_empty() {
            "every benchmark".to_string()
        } else {
            analyzer.datasets.join(", ")
        }
    );
    if !analyzer.defaults.is_empty() {
        let rows: Vec<Vec<String>> = analyzer
            .defaults
            .iter()
            .map(|(k, v)| vec![k.clone(), v.to_string()])
            .collect();
        out.push_str("\noptions (analysis_params.<ID>):\n");
        out.push_str(&table::render(&["NAME", "DEFAULT"], &rows));
    }
    out
}

/// The shared `EnvironmentSpec` fields every provider takes (beside its own parameters, the
/// table above them, given at the same level), as upstream's `config docs env` lists them:
/// name, type and what it sets. Only what `--env-params` takes: the spec's `params` object is
/// where the provider's own parameters land, never a key a user writes.
const SHARED_FIELDS: [(&str, &str, &str); 21] = [
    (
        "resources",
        "object",
        "cpu, memory_mb, storage_mb, gpu of every environment",
    ),
    (
        "run_resources",
        "object",
        "resource overrides of the task (run) environment",
    ),
    (
        "evaluation_resources",
        "object",
        "resource overrides of a fresh evaluation environment",
    ),
    (
        "baseline_network_policy",
        "object",
        "network policy when the environment is created",
    ),
    (
        "evaluation_baseline_network_policy",
        "object",
        "startup policy of a fresh evaluation environment",
    ),
    (
        "run_network_policy",
        "object",
        "network policy of the agent phase",
    ),
    (
        "evaluation_network_policy",
        "object",
        "network policy of the evaluation phase",
    ),
    (
        "evaluation_environment_mode",
        "string",
        "none | reuse | fresh: where evaluation runs",
    ),
    (
        "env_variables",
        "object",
        "bindings of every phase (values may be ${VAR})",
    ),
    ("run_env_variables", "object", "bindings of the agent phase"),
    (
        "evaluation_env_variables",
        "object",
        "bindings of evaluation commands",
    ),
    (
        "evaluation_environment_env_variables",
        "object",
        "startup bindings of a fresh evaluation environment (unset: inherit)",
    ),
    (
        "require_startup_env",
        "boolean",
        "bindings must be injected at environment startup",
    ),
    ("setup.image", "string", "image of the task environment"),
    (
        "setup.build_timeout_seconds",
        "number",
        "deadline of open + initialisation",
    ),
    (
        "setup.workdir",
        "string",
        "absolute default working directory",
    ),
    ("setup.os", "string", "linux | windows"),
    (
        "evaluation_setup.image",
        "string",
        "image of a fresh evaluation environment",
    ),
    (
        "evaluation_setup.build_timeout_seconds",
        "number",
        "its deadline of open + initialisation",
    ),
    (
        "evaluation_setup.workdir",
        "string",
        "its default working directory",
    ),
    ("evaluation_setup.os", "string", "its operating system"),
];

/// The table of [`SHARED_FIELDS`].
fn shared_fields_text() -> String {
    let rows: Vec<Vec<String>> = SHARED_FIELDS
        .iter()
        .map(|(name, kind, what)| vec![name.to_string(), kind.to_string(), what.to_string()])
        .collect();
    format!(
        "EnvironmentSpec fields of every provider (--env-params, [environments.ID]):\n{}",
        table::render_fitted(
            &["NAME", "TYPE", "DESCRIPTION"],
            &rows,
            table::output_width()
        )
    )
}

/// What a provider enforces, one line each.
fn capabilities_text(
    capabilities: Result<ProviderCapabilities, agentcompass_plugin_api::Error>,
) -> String {
    let caps = match capabilities {
        Ok(caps) => caps,
        Err(e) => return format!("capabilities: unavailable ({})\n", e.message),
    };
    let modes: Vec<&str> = caps.network_modes.iter().map(|m| m.as_str()).collect();
    let lists = caps
        .network_modes
        .iter()
        .any(|m| matches!(m, NetworkMode::Allowlist | NetworkMode::Denylist));
    let entry_types = match (lists, caps.allowlist_entry_types.is_empty()) {
        (false, _) => "none (no allowlist or denylist)".to_string(),
        (true, true) => "every host pattern type, no ports".to_string(),
        (true, false) => caps.allowlist_entry_types.join(", "),
    };
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let rows = [
        ("network modes", modes.join(", ")),
        ("entry types", entry_types),
        (
            "per-phase policies",
            format!(
                "{} (dynamic_network_policy)",
                yes_no(caps.dynamic_network_policy)
            ),
        ),
        (
            "host endpoints",
            format!("{} (host_endpoints)", yes_no(caps.host_endpoints)),
        ),
        (
            "host mounts",
            format!("{} (host_mounts)", yes_no(caps.host_mounts)),
        ),
    ];
    let mut out = String::from("capabilities:\n");
    for (name, value) in rows {
        out.push_str(&format!("  {:<20}{value}\n", format!("{name}:")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shared_environment_field_is_documented() {
        use agentcompass_plugin_api::contracts::ENVIRONMENT_SHARED_FIELDS;
        for field in ENVIRONMENT_SHARED_FIELDS {
            assert!(
                SHARED_FIELDS
                    .iter()
                    .any(|(name, ..)| name == field || name.starts_with(&format!("{field}."))),
                "{field} is missing from SHARED_FIELDS"
            );
        }
    }

    /// `config docs env` lists only what `--env-params` takes (issue 58): each shared field
    /// (or its parent, for `setup.image`) is one of the spec's shared fields.
    #[test]
    fn every_documented_environment_field_is_one_env_params_takes() {
        use agentcompass_plugin_api::contracts::ENVIRONMENT_SHARED_FIELDS;
        for (name, ..) in SHARED_FIELDS {
            let top = name.split('.').next().unwrap_or(name);
            assert!(
                ENVIRONMENT_SHARED_FIELDS.contains(&top),
                "{name} is listed but --env-params refuses it"
            );
        }
    }

    #[test]
    fn capabilities_lines() {
        let text = capabilities_text(Ok(ProviderCapabilities {
            network_modes: NetworkMode::ALL.to_vec(),
            allowlist_entry_types: vec!["hostname".into(), "port".into()],
            dynamic_network_policy: true,
            ..ProviderCapabilities::public_only()
        }));
        assert_eq!(
            text,
            "capabilities:\n  \
             network modes:      public, no-network, allowlist, denylist\n  \
             entry types:        hostname, port\n  \
             per-phase policies: yes (dynamic_network_policy)\n  \
             host endpoints:     no (host_endpoints)\n  \
             host mounts:        no (host_mounts)\n"
        );
        let text = capabilities_text(Ok(ProviderCapabilities::public_only()));
        assert!(
            text.contains("entry types:        none (no allowlist or denylist)\n"),
            "{text}"
        );
        let any = capabilities_text(Ok(ProviderCapabilities {
            network_modes: vec![NetworkMode::Allowlist],
            ..ProviderCapabilities::public_only()
        }));
        assert!(any.contains("every host pattern type, no ports"), "{any}");
        assert_eq!(
            capabilities_text(Err(agentcompass_plugin_api::Error::unsupported("boom"))),
            "capabilities: unavailable (boom)\n"
        );
    }
}
