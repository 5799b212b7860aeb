//! `agentcompass-host config docs KIND ID`: a component's declared parameters, and for an
//! environment provider what it enforces (network modes, entry types, per-phase policies,
//! host endpoints).

use agentcompass_plugin_api::contracts::{ComponentKind, NetworkMode, ProviderCapabilities};

use super::table;
use agentcompass_host::registry::{Registry, RegistryError};

/// Renders the parameter table of one component (and a provider's capabilities).
pub fn render(registry: &Registry, kind: ComponentKind, id: &str) -> Result<String, RegistryError> {
    let entry = registry.get(kind, id)?;
    let mut out = format!(
        "{kind} {id}: {}\nsource: {}\n\n",
        entry.info.description, entry.source
    );
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
        out.push_str(&table::render(
            &["NAME", "TYPE", "DEFAULT", "DESCRIPTION"],
            &rows,
        ));
    }
    if kind == ComponentKind::Environment {
        let capabilities = registry
            .environment(id)?
            .capabilities()
            .map_err(|e| e.message);
        out.push('\n');
        out.push_str(&capabilities_text(capabilities));
    }
    Ok(out)
}

/// What a provider enforces, one line each.
fn capabilities_text(capabilities: Result<ProviderCapabilities, String>) -> String {
    let caps = match capabilities {
        Ok(caps) => caps,
        Err(e) => return format!("capabilities: unavailable ({e})\n"),
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
            capabilities_text(Err("boom".into())),
            "capabilities: unavailable (boom)\n"
        );
    }
}
