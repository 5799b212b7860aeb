//! A service that needs a model — a simulated user, a judge — names a model key the way
//! Harbor's recipes write it (`ANTHROPIC_API_KEY: ${ANTHROPIC_API_KEY}`). Those variables are
//! never taken from the host: they are answered from the run's model endpoint as served
//! inside the environment (the host's relay: its placeholder token, its address), so the
//! service's calls are metered, rate-limited and paused with the run's and no key enters its
//! container. Such a service gets the relay on its own loopback (a forwarder) and the base
//! URL variables its SDK reads.

use std::collections::BTreeSet;

use agentcompass_plugin_api::contracts::ModelEndpoint;
use serde_norway::Value;

/// The key variables answered with the relay's placeholder token.
pub(crate) const KEY_VARIABLES: [&str; 3] = [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
];

/// The address variables answered with the relay's address.
pub(crate) const URL_VARIABLES: [&str; 3] =
    ["ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_BASE"];

/// Whether `name` is answered from the model endpoint.
pub(crate) fn is_model_variable(name: &str) -> bool {
    KEY_VARIABLES.contains(&name) || URL_VARIABLES.contains(&name)
}

/// The value of model variable `name` from `endpoint` (Anthropic's SDK takes its base URL
/// without `/v1`, OpenAI's with it).
pub(crate) fn value(name: &str, endpoint: &ModelEndpoint) -> Option<String> {
    let base = endpoint.base_url.trim_end_matches('/');
    match name {
        "ANTHROPIC_BASE_URL" => Some(base.strip_suffix("/v1").unwrap_or(base).to_string()),
        "OPENAI_BASE_URL" | "OPENAI_API_BASE" => Some(base.to_string()),
        _ if KEY_VARIABLES.contains(&name) => Some(endpoint.api_key.clone()),
        _ => None,
    }
}

/// The variables a service that needs a model gets besides its own (its SDK's base URLs),
/// unless it sets them itself.
pub(crate) fn base_urls(endpoint: &ModelEndpoint) -> Vec<(String, String)> {
    ["ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"]
        .iter()
        .filter_map(|name| value(name, endpoint).map(|v| (name.to_string(), v)))
        .collect()
}

/// The services of a Compose tree (before interpolation) whose definition names a model
/// key variable (`$NAME` or `${NAME...}`).
pub(crate) fn services_needing_model(tree: &Value) -> BTreeSet<String> {
    let Some(Value::Mapping(services)) = tree.get("services") else {
        return BTreeSet::new();
    };
    services
        .iter()
        .filter_map(|(name, service)| {
            let text = serde_norway::to_string(service).unwrap_or_default();
            let names_key = KEY_VARIABLES.iter().any(|key| {
                text.contains(&format!("${{{key}}}"))
                    || text.contains(&format!("${{{key}:"))
                    || text.contains(&format!("${{{key}-"))
                    || text.contains(&format!("${{{key}?"))
                    || text.match_indices(&format!("${key}")).any(|(i, m)| {
                        !text[i + m.len()..]
                            .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
                    })
            });
            names_key
                .then(|| name.as_str().map(str::to_string))
                .flatten()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint() -> ModelEndpoint {
        ModelEndpoint {
            model: "m".into(),
            base_url: "http://127.0.0.1:4100/v1".into(),
            api_key: "placeholder-token".into(),
            protocol: "anthropic".into(),
        }
    }

    #[test]
    fn keys_and_urls_come_from_the_endpoint() {
        let e = endpoint();
        assert_eq!(value("ANTHROPIC_API_KEY", &e).unwrap(), "placeholder-token");
        assert_eq!(
            value("ANTHROPIC_BASE_URL", &e).unwrap(),
            "http://127.0.0.1:4100"
        );
        assert_eq!(
            value("OPENAI_BASE_URL", &e).unwrap(),
            "http://127.0.0.1:4100/v1"
        );
        assert_eq!(value("HOME", &e), None);
    }

    #[test]
    fn a_service_naming_a_key_needs_the_model() {
        let tree: Value = serde_norway::from_str(
            "services:\n  main: {}\n  user:\n    environment:\n      - ANTHROPIC_API_KEY=${ANTHROPIC_API_KEY}\n  \
             other:\n    environment:\n      OPENAI_API_KEY_FILE: x\n      A: $OPENAI_API_KEYS\n  \
             judge:\n    environment:\n      K: $OPENAI_API_KEY\n",
        )
        .unwrap();
        let needing: Vec<String> = services_needing_model(&tree).into_iter().collect();
        assert_eq!(needing, ["judge", "user"]);
    }
}
