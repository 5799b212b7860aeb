//! `agentcompass-host list {benchmark|harness|env|recipe|plugin} [--json]`.

use agentcompass_plugin_api::contracts::ComponentKind;
use serde_json::json;

use super::table;
use crate::cli::ListKind;
use agentcompass_host::registry::Registry;

/// Prints the registered components of a kind, or the loaded plugins.
pub fn run(registry: &Registry, kind: ListKind, as_json: bool) -> i32 {
    let out = match kind {
        ListKind::Plugin => plugins(registry, as_json),
        ListKind::Benchmark => components(registry, ComponentKind::Benchmark, as_json),
        ListKind::Harness => components(registry, ComponentKind::Harness, as_json),
        ListKind::Env => components(registry, ComponentKind::Environment, as_json),
        ListKind::Recipe => components(registry, ComponentKind::Recipe, as_json),
    };
    crate::out!("{out}");
    0
}

fn components(registry: &Registry, kind: ComponentKind, as_json: bool) -> String {
    let entries: Vec<_> = registry.list(kind).collect();
    if as_json {
        let items: Vec<_> = entries
            .iter()
            .map(|e| {
                json!({
                    "kind": e.info.kind,
                    "id": e.info.id,
                    "description": e.info.description,
                    "source": e.source.to_string(),
                    "harness_free": e.info.harness_free,
                })
            })
            .collect();
        return format!("{}\n", json!(items));
    }
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|e| {
            vec![
                e.info.id.clone(),
                e.info.description.clone(),
                e.source.to_string(),
            ]
        })
        .collect();
    table::render(&["ID", "DESCRIPTION", "SOURCE"], &rows)
}

fn plugins(registry: &Registry, as_json: bool) -> String {
    let plugins = registry.plugins();
    if as_json {
        let items: Vec<_> = plugins
            .iter()
            .map(|p| {
                json!({
                    "name": p.source.name,
                    "version": p.source.version,
                    "path": p.source.path,
                    "sha256": p.sha256,
                    "api_version": p.description.api_version,
                    "components": p.description.components.iter()
                        .map(|c| json!({"kind": c.kind, "id": c.id}))
                        .collect::<Vec<_>>(),
                })
            })
            .collect();
        return format!("{}\n", json!(items));
    }
    let rows: Vec<Vec<String>> = plugins
        .iter()
        .map(|p| {
            let components = p
                .description
                .components
                .iter()
                .map(|c| format!("{} {}", c.kind, c.id))
                .collect::<Vec<_>>()
                .join(", ");
            vec![
                p.source.name.clone(),
                p.source.version.clone(),
                components,
                p.source.path.display().to_string(),
            ]
        })
        .collect();
    table::render(&["NAME", "VERSION", "COMPONENTS", "PATH"], &rows)
}
