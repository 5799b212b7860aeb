//! `agentcompass-host list {benchmark|harness|env|recipe|analyzer|plugin|dump} [--json]`.

use agentcompass_plugin_api::contracts::ComponentKind;
use serde_json::json;

use super::table;
use crate::cli::ListKind;
use agentcompass_host::registry::{Registry, Source};

/// The file `list dump` writes in the working directory (upstream's name).
pub const DUMP_FILE: &str = "agentcompass_components.md";

/// The model API protocols a model spec may name.
const PROTOCOLS: [(&str, &str); 3] = [
    (
        "openai-chat",
        "OpenAI Chat Completions (`/chat/completions`)",
    ),
    ("openai-responses", "OpenAI Responses (`/responses`)"),
    ("anthropic", "Anthropic Messages (`/v1/messages`)"),
];

/// Prints the registered components of a kind, or the loaded plugins; `dump` writes them all
/// to [`DUMP_FILE`].
pub fn run(registry: &Registry, kind: ListKind, as_json: bool) -> anyhow::Result<i32> {
    // A listing shows the whole registry: every plugin is opened, every refusal reported.
    registry.open_all();
    let out = match kind {
        ListKind::Dump => {
            let path = std::path::absolute(DUMP_FILE)?;
            let mut temp = tempfile::NamedTempFile::new_in(path.parent().unwrap_or(&path))?;
            std::io::Write::write_all(&mut temp, dump(registry).as_bytes())?;
            temp.persist(&path).map_err(|e| e.error)?;
            format!("{}\n", path.display())
        }
        ListKind::Analyzer => components(registry, ComponentKind::Analyzer, as_json),
        ListKind::Plugin => plugins(registry, as_json),
        ListKind::Benchmark => components(registry, ComponentKind::Benchmark, as_json),
        ListKind::Harness => components(registry, ComponentKind::Harness, as_json),
        ListKind::Env => components(registry, ComponentKind::Environment, as_json),
        ListKind::Recipe => components(registry, ComponentKind::Recipe, as_json),
    };
    crate::out!("{out}");
    Ok(0)
}

/// The markdown of `list dump`: one table per kind, then the model API protocols.
fn dump(registry: &Registry) -> String {
    let cell = |text: &str| text.replace('|', "\\|").replace('\n', " ");
    let mut out = String::from("# agentcompass-host components\n");
    for (title, kind) in [
        ("Benchmarks", ComponentKind::Benchmark),
        ("Harnesses", ComponentKind::Harness),
        ("Environments", ComponentKind::Environment),
        ("Recipes", ComponentKind::Recipe),
        ("Analyzers", ComponentKind::Analyzer),
    ] {
        out.push_str(&format!("\n## {title}\n\n"));
        let analyzer = kind == ComponentKind::Analyzer;
        out.push_str(if analyzer {
            "| ID | Category | Description | Source |\n|---|---|---|---|\n"
        } else {
            "| ID | Description | Source |\n|---|---|---|\n"
        });
        for e in registry.list(kind) {
            let category = e.info.analyzer.as_ref().map(|a| a.category.as_str());
            match (analyzer, category) {
                (true, category) => out.push_str(&format!(
                    "| `{}` | {} | {} | {} |\n",
                    e.info.id,
                    cell(category.unwrap_or("")),
                    cell(&e.info.description),
                    cell(&e.source.to_string())
                )),
                (false, _) => out.push_str(&format!(
                    "| `{}` | {} | {} |\n",
                    e.info.id,
                    cell(&e.info.description),
                    cell(&e.source.to_string())
                )),
            }
        }
    }
    out.push_str("\n## Model API protocols\n\n| Protocol | API |\n|---|---|\n");
    for (name, api) in PROTOCOLS {
        out.push_str(&format!("| `{name}` | {api} |\n"));
    }
    out
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
    // The source is the plugin's name and version (`list plugin` has its file), so that the
    // description, last, can be wrapped to the terminal's width.
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|e| {
            let source = match &e.source {
                Source::BuiltIn => "built-in".to_string(),
                Source::Plugin(plugin) => format!("{}@{}", plugin.name, plugin.version),
            };
            vec![e.info.id.clone(), source, e.info.description.clone()]
        })
        .collect();
    table::render_fitted(
        &["ID", "SOURCE", "DESCRIPTION"],
        &rows,
        table::output_width(),
    )
}

fn plugins(registry: &Registry, as_json: bool) -> String {
    let plugins: Vec<_> = registry.opened_plugins().collect();
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
