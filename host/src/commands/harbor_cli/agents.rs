//! Harbor's agent names and `provider/model` strings, as this host's harnesses and model
//! endpoints.

/// Harbor's agents that have a harness here: (Harbor name, harness id, the endpoint's API).
const AGENTS: &[(&str, &str, Api)] = &[
    ("claude-code", "claude_code", Api::Anthropic),
    ("codex", "codex", Api::OpenAiResponses),
    ("mini-swe-agent", "mini_swe_agent", Api::OpenAiChat),
    ("qwen-coder", "qwen_code", Api::OpenAiChat),
    ("terminus-2", "terminus", Api::OpenAiChat),
    ("terminus", "terminus", Api::OpenAiChat),
    ("oracle", "oracle", Api::None),
];

/// The API an agent's model endpoint speaks (`--model-api-protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// The agent calls no model.
    None,
    /// Chat completions.
    OpenAiChat,
    /// The Responses API.
    OpenAiResponses,
    /// The Messages API.
    Anthropic,
}

impl Api {
    /// The value of `--model-api-protocol`.
    pub fn protocol(self) -> Option<&'static str> {
        match self {
            Api::None => None,
            Api::OpenAiChat => Some("openai-chat"),
            Api::OpenAiResponses => Some("openai-responses"),
            Api::Anthropic => Some("anthropic"),
        }
    }
}

/// Harbor's `--api-format` values this host speaks.
pub fn api_format(format: &str) -> Option<Api> {
    match format {
        "openai_chat_completions" => Some(Api::OpenAiChat),
        "openai_responses" => Some(Api::OpenAiResponses),
        "anthropic_messages" => Some(Api::Anthropic),
        _ => None,
    }
}

/// The harness of agent `name` and its API: a Harbor name, or a harness id of this host
/// (`None`: an unknown name, which the caller refuses with the list).
pub fn harness(name: &str, harness_ids: &[String]) -> Option<(String, Api)> {
    if let Some((_, id, api)) = AGENTS.iter().find(|(harbor, _, _)| *harbor == name) {
        return Some((id.to_string(), *api));
    }
    harness_ids
        .iter()
        .any(|id| id == name)
        .then(|| (name.to_string(), Api::OpenAiChat))
}

/// The Harbor agent names with a harness here, for the refusal of another.
pub fn harbor_names() -> String {
    let names: Vec<&str> = AGENTS
        .iter()
        .map(|(name, _, _)| *name)
        .filter(|name| *name != "terminus")
        .collect();
    names.join(", ")
}

/// A model provider's public endpoint: (LiteLLM prefix, base URL, key variable).
const PROVIDERS: &[(&str, &str, &str)] = &[
    (
        "anthropic",
        "https://api.anthropic.com",
        "ANTHROPIC_API_KEY",
    ),
    ("openai", "https://api.openai.com/v1", "OPENAI_API_KEY"),
    (
        "openrouter",
        "https://openrouter.ai/api/v1",
        "OPENROUTER_API_KEY",
    ),
    (
        "deepseek",
        "https://api.deepseek.com/v1",
        "DEEPSEEK_API_KEY",
    ),
    (
        "dashscope",
        "https://dashscope.aliyuncs.com/compatible-mode/v1",
        "DASHSCOPE_API_KEY",
    ),
];

/// Where `provider/name` is served: the name the endpoint knows, its base URL and key
/// variable; `None` for a provider not listed.
pub fn provider(model: &str) -> Option<(&str, &'static str, &'static str)> {
    let (prefix, name) = model.split_once('/')?;
    PROVIDERS
        .iter()
        .find(|(p, _, _)| *p == prefix)
        .map(|(_, url, key)| (name, *url, *key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harbor_names_and_own_ids_map_to_harnesses() {
        let ids = vec!["cli_agent".to_string()];
        assert_eq!(
            harness("claude-code", &ids),
            Some(("claude_code".into(), Api::Anthropic))
        );
        assert_eq!(harness("cli_agent", &ids).unwrap().0, "cli_agent");
        assert_eq!(harness("gemini-cli", &ids), None);
        assert_eq!(
            provider("anthropic/claude-sonnet-4-5"),
            Some((
                "claude-sonnet-4-5",
                "https://api.anthropic.com",
                "ANTHROPIC_API_KEY"
            ))
        );
        assert_eq!(
            provider("openrouter/anthropic/claude-opus-4").unwrap().0,
            "anthropic/claude-opus-4"
        );
        assert_eq!(provider("gpt-5"), None);
    }
}
