//! Compose tasks (`setup.compose`: a Harbor task's `environment/docker-compose.yaml`),
//! through the Engine API — no `docker compose` binary (Debian 12 ships none; Podman's
//! compatible API runs the same calls).
//!
//! The file is read as Harbor merges it over its base: the environment itself is the service
//! `main` (its image, keep-alive command, bindings, resources and network policy are the
//! host's; the file may add `environment`, `volumes`, `depends_on` and a `healthcheck` to it),
//! every other service a sidecar. Reading it (module `keys`, then `interpolate`, then
//! `docker-compose-types`, then `model`) refuses, naming the file and the key, whatever the
//! host would not act on, so a task is refused before the first task runs (the provider's
//! `validate_plan` reads it) rather than run differently from what its author wrote.
//!
//! Starting it (module `stack`): one bridge network per session, `internal` unless the
//! baseline is `public`, on which every service is reached by its name; the file's named
//! volumes; the sidecars in dependency order (`service_started`, `service_healthy`,
//! `service_completed_successfully`), then `main`; then, as `docker compose up --wait`, every
//! service with a health check healthy. Health checks run as execs in the service's
//! container with the SDK's one loop (`sdk::health`), the same on Docker and Podman (whose
//! compatible API runs no container health checks without systemd).

mod health;
mod hosts;
mod interpolate;
mod keys;
pub(crate) mod model;
pub(crate) mod model_vars;
pub(crate) mod stack;
#[cfg(test)]
mod tests;
mod units;
pub(crate) mod up;

use std::path::Path;

use agentcompass_plugin_api::contracts::{ComposeSetup, ModelEndpoint};
use agentcompass_plugin_api::{Error, Result};
use serde_norway::Value;

pub(crate) use model::Project;

/// A project read from its file, with the values its interpolation took from the host's
/// environment (secrets, for the caller to register).
pub(crate) struct Loaded {
    pub(crate) project: Project,
    pub(crate) secrets: Vec<String>,
}

/// Reads `setup`'s file: keys checked, variables interpolated from `host_env` (then the
/// file directory's `.env`) — model keys and URLs from `model`, the run's endpoint inside the
/// environment (module `model_vars`; `None` while a plan is validated, when any value will
/// do, and where a service that needs one is then refused) —, parsed and turned into the
/// project. `main_context` is the environment's own build context. Errors name the engine
/// and the file, never a value.
pub(crate) fn load(
    engine: crate::engine::Engine,
    setup: &ComposeSetup,
    main_context: Option<&Path>,
    host_env: &dyn Fn(&str) -> Option<String>,
    model: Option<&ModelEndpoint>,
) -> Result<Loaded> {
    let file = Path::new(&setup.file);
    let refuse = |why: String| Error::invalid_input(format!("{engine}: {}: {why}", setup.file));
    let text = std::fs::read_to_string(file)
        .map_err(|e| refuse(format!("cannot read the Compose file: {e}")))?;
    let mut tree: Value =
        serde_norway::from_str(&text).map_err(|e| refuse(format!("is not YAML: {e}")))?;
    keys::check(&tree).map_err(refuse)?;
    let needing_model = model_vars::services_needing_model(&tree);
    let stand_in = ModelEndpoint {
        base_url: "http://127.0.0.1:9/v1".into(),
        api_key: "model-endpoint".into(),
        ..ModelEndpoint::default()
    };
    let endpoint = model.unwrap_or(&stand_in);
    let lookup = |name: &str| {
        if model_vars::is_model_variable(name) {
            model_vars::value(name, endpoint)
        } else {
            host_env(name)
        }
    };
    let dir = file.parent().unwrap_or(Path::new("/"));
    let dotenv = std::fs::read_to_string(dir.join(".env"))
        .map(|t| interpolate::dotenv(&t))
        .unwrap_or_default();
    let vars = interpolate::Variables {
        host: &lookup,
        dotenv,
    };
    let mut secrets = Vec::new();
    interpolate::interpolate(&mut tree, "", &vars, &mut secrets).map_err(refuse)?;
    stringify_list_items(&mut tree);
    let parsed: docker_compose_types::Compose = serde_norway::from_value(tree).map_err(|e| {
        // A typed error may quote a value; those taken from the host are masked.
        let mut message = e.to_string();
        for secret in &secrets {
            message = message.replace(
                secret.as_str(),
                agentcompass_plugin_api::contracts::REDACTED,
            );
        }
        refuse(format!("is not a Compose file the host reads: {message}"))
    })?;
    let mut project =
        model::project(parsed, dir, Path::new(&setup.root), main_context).map_err(refuse)?;
    for service in project
        .sidecars
        .iter_mut()
        .chain(std::iter::once(&mut project.main))
    {
        service.needs_model = needing_model.contains(&service.name);
        if service.needs_model {
            // Its SDK's base URL, unless the file sets one (from the endpoint too).
            for (name, value) in model_vars::base_urls(endpoint) {
                if !service.env.iter().any(|(k, _)| *k == name) {
                    service.env.push((name, value));
                }
            }
        }
    }
    Ok(Loaded { project, secrets })
}

/// Compose writes list items as scalars of any type (`expose: [8000]`, `command: [sleep,
/// 1]`) and `version: 3`, which the typed model reads as strings: numbers and booleans in
/// lists (and the version) become strings.
fn stringify_list_items(value: &mut Value) {
    match value {
        Value::Sequence(items) => {
            for item in items {
                stringify_scalar(item);
                stringify_list_items(item);
            }
        }
        Value::Mapping(map) => {
            for (key, item) in map.iter_mut() {
                if key.as_str() == Some("version") {
                    stringify_scalar(item);
                }
                stringify_list_items(item);
            }
        }
        Value::Tagged(tagged) => stringify_list_items(&mut tagged.value),
        _ => {}
    }
}

/// A number or boolean as a string.
fn stringify_scalar(value: &mut Value) {
    let text = match value {
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => return,
    };
    *value = Value::String(text);
}
