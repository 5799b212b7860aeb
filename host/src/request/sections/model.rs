//! The `model` section: the model spec from its layers, its protocol, and the SDK defaults
//! read from the environment.

use agentcompass_plugin_api::contracts::ModelSpec;
use serde_json::{Map, Value};

use crate::config::ConfigError;
use crate::request::field_types::model_field_type;
use crate::request::layers::{attribute, deserialize_merged, owner, Layer};

use super::with_typed_fields;

const PROTOCOLS: [&str; 3] = ["openai-chat", "openai-responses", "anthropic"];
const MODEL_KEYS: [&str; 6] = [
    "id",
    "base_url",
    "api_key",
    "api_protocol",
    "params",
    "wrap_api_key",
];

/// `ModelSpec` from layers (`id` required; protocols validated; `auto` alone).
pub fn model_spec(layers: &[Layer]) -> Result<ModelSpec, ConfigError> {
    for layer in layers {
        layer.check_keys(&MODEL_KEYS)?;
        layer.check_references()?;
    }
    let layers = &with_typed_fields(layers, model_field_type)?;
    if owner(layers, "id").is_none() {
        // Name the most specific layer rather than serde's "missing field" at the root.
        return Err(match layers.last() {
            Some(layer) => layer.error("id", "a model id is required"),
            None => ConfigError::invalid("defaults", "id", "a model id is required"),
        });
    }
    let model: ModelSpec = deserialize_merged(Value::Object(Map::new()), layers)?;
    if model.id.trim().is_empty() {
        return Err(attribute(layers, "id", "a model id is required"));
    }
    let protocols = match &model.api_protocol {
        agentcompass_plugin_api::contracts::ApiProtocolSpec::One(p) => vec![p.clone()],
        agentcompass_plugin_api::contracts::ApiProtocolSpec::Many(list) => list.clone(),
    };
    for protocol in &protocols {
        let ok = PROTOCOLS.contains(&protocol.as_str())
            || protocol.is_empty()
            || (protocol == "auto" && protocols.len() == 1);
        if protocol == "auto" && !ok {
            return Err(attribute(
                layers,
                "api_protocol",
                "`auto` cannot be combined with other protocols",
            ));
        }
        if !ok {
            return Err(attribute(
                layers,
                "api_protocol",
                format!(
                    "unknown protocol `{protocol}` (expected auto or one or more of: {})",
                    PROTOCOLS.join(", ")
                ),
            ));
        }
    }
    let mut model = model;
    sdk_env_defaults(&mut model, &|name| {
        std::env::var(name).ok().filter(|v| !v.trim().is_empty())
    });
    Ok(model)
}

/// The official SDKs' environment defaults, used when neither a flag nor a configuration sets
/// the endpoint or the key (as upstream's OpenAI and Anthropic clients read them): an
/// OpenAI protocol reads `OPENAI_BASE_URL` / `OPENAI_API_KEY`, `anthropic` reads
/// `ANTHROPIC_BASE_URL` / `ANTHROPIC_API_KEY`; with `auto` (or none) the OpenAI variables win
/// and the Anthropic ones select the `anthropic` protocol. They are set as `${VAR}`
/// references, so printed and persisted requests name the variable, never its value, and a
/// locally configured endpoint is never passed over for a public default.
fn sdk_env_defaults(model: &mut ModelSpec, env: &dyn Fn(&str) -> Option<String>) {
    use agentcompass_plugin_api::contracts::ApiProtocolSpec;
    let first = match &model.api_protocol {
        ApiProtocolSpec::One(p) => p.clone(),
        ApiProtocolSpec::Many(list) => list.first().cloned().unwrap_or_default(),
    };
    let family = match first.as_str() {
        "anthropic" => "ANTHROPIC",
        "openai-chat" | "openai-responses" => "OPENAI",
        _ if model.base_url.trim().is_empty()
            && env("OPENAI_BASE_URL").is_none()
            && env("ANTHROPIC_BASE_URL").is_some() =>
        {
            model.api_protocol = ApiProtocolSpec::One("anthropic".to_string());
            "ANTHROPIC"
        }
        _ => "OPENAI",
    };
    let url = format!("{family}_BASE_URL");
    if model.base_url.trim().is_empty() && env(&url).is_some() {
        model.base_url = format!("${{{url}}}");
    }
    let key = format!("{family}_API_KEY");
    if model.api_key.trim().is_empty() && env(&key).is_some() {
        model.api_key = format!("${{{key}}}");
    }
}
