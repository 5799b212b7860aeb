//! `agentcompass-host config docs KIND ID`: a component's declared parameters.

use agentcompass_plugin_api::contracts::ComponentKind;

use super::table;
use agentcompass_host::registry::{Registry, RegistryError};

/// Renders the parameter table of one component.
pub fn render(registry: &Registry, kind: ComponentKind, id: &str) -> Result<String, RegistryError> {
    let entry = registry.get(kind, id)?;
    let mut out = format!(
        "{kind} {id}: {}\nsource: {}\n\n",
        entry.info.description, entry.source
    );
    let fields = &entry.info.config_schema.fields;
    if fields.is_empty() {
        out.push_str("(no parameters)\n");
        return Ok(out);
    }
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
    Ok(out)
}
