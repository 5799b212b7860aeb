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
    if !model.base_url.contains("${") {
        check_base_url(&model.base_url)
            .map_err(|problem| attribute(layers, "base_url", problem))?;
    }
    let mut model = model;
    sdk_env_defaults(&mut model, &|name| {
        std::env::var(name).ok().filter(|v| !v.trim().is_empty())
    });
    Ok(model)
}

/// A model endpoint's base URL is empty (the protocol's default) or an absolute `http://` or
/// `https://` URL with a host; otherwise the reason, with the value (never a secret: a
/// `${VAR}` value is checked by [`check_resolved_base_url`]).
pub fn check_base_url(value: &str) -> Result<(), String> {
    let value = value.trim();
    if value.is_empty() {
        return Ok(());
    }
    let expected =
        "expected an absolute http:// or https:// URL (for example http://127.0.0.1:8000/v1)";
    match url::Url::parse(value) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => Ok(()),
        Ok(url) if url.cannot_be_a_base() || !matches!(url.scheme(), "http" | "https") => Err(
            format!("{expected}, found `{value}` (the scheme is missing or not http/https)"),
        ),
        Ok(_) => Err(format!("{expected}, found `{value}` (no host)")),
        Err(url::ParseError::RelativeUrlWithoutBase) => Err(format!(
            "{expected}, found `{value}` (the scheme is missing: http://{value}?)"
        )),
        Err(e) => Err(format!("{expected}, found `{value}` ({e})")),
    }
}

/// [`check_base_url`] for the value a `${VAR}` base URL resolved to: the message names the
/// reference as written, never the value (resolved values are secrets).
pub fn check_resolved_base_url(written: &str, resolved: &str) -> Result<(), String> {
    if !written.contains("${") {
        return Ok(());
    }
    check_base_url(resolved).map_err(|_| {
        format!(
            "model.base_url: `{written}` is not an absolute http:// or https:// URL \
             (for example http://127.0.0.1:8000/v1)"
        )
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_need_a_scheme_and_a_host() {
        for ok in [
            "",
            "http://127.0.0.1:18081",
            "https://api.example.com/v1",
            " http://h/ ",
        ] {
            assert_eq!(check_base_url(ok), Ok(()), "{ok}");
        }
        let refused = |value: &str| check_base_url(value).unwrap_err();
        assert_eq!(
            refused("127.0.0.1:18081"),
            "expected an absolute http:// or https:// URL (for example \
             http://127.0.0.1:8000/v1), found `127.0.0.1:18081` (the scheme is missing: \
             http://127.0.0.1:18081?)"
        );
        assert!(refused("localhost/v1").contains("(the scheme is missing: http://localhost/v1?)"));
        assert!(refused("ftp://h/v1").contains("not http/https"));
        assert!(refused("localhost:8000").contains("not http/https"));
        assert!(refused("http://").contains("found `http://`"));
        assert_eq!(check_resolved_base_url("http://h", "x"), Ok(()));
        let hidden = check_resolved_base_url("${MODEL_URL}", "secret-host:1").unwrap_err();
        assert!(
            hidden.contains("`${MODEL_URL}`") && !hidden.contains("secret"),
            "{hidden}"
        );
    }
}
