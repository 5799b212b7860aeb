//! The wire protocols the gateway speaks, how one is chosen for a model, and where each
//! sends a generation request.

use agentcompass_plugin_api::contracts::ModelSpec;

use crate::GatewayError;

/// A wire protocol the gateway speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `POST {base}/chat/completions`.
    OpenAiChat,
    /// `POST {base}/responses`.
    OpenAiResponses,
    /// `POST {base}/v1/messages`.
    Anthropic,
}

impl Protocol {
    /// The protocol's name as configured (`--model-api-protocol`).
    pub fn name(self) -> &'static str {
        match self {
            Protocol::OpenAiChat => "openai-chat",
            Protocol::OpenAiResponses => "openai-responses",
            Protocol::Anthropic => "anthropic",
        }
    }

    /// Parses a configured protocol name.
    pub fn parse(name: &str) -> Option<Protocol> {
        match name {
            "openai-chat" | "openai" | "chat" => Some(Protocol::OpenAiChat),
            "openai-responses" | "responses" => Some(Protocol::OpenAiResponses),
            "anthropic" => Some(Protocol::Anthropic),
            _ => None,
        }
    }

    /// The protocol for `model`: the first configured one, else (`auto`) `anthropic` for an
    /// Anthropic endpoint and `openai-chat` otherwise.
    pub fn choose(model: &ModelSpec) -> Result<Protocol, GatewayError> {
        let configured = model.api_protocol.protocols();
        match configured.first().map(String::as_str) {
            None | Some("auto") => Ok(if model.base_url.contains("anthropic") {
                Protocol::Anthropic
            } else {
                Protocol::OpenAiChat
            }),
            Some(name) => Protocol::parse(name).ok_or_else(|| GatewayError::Config {
                message: format!(
                    "model.api_protocol: expected openai-chat, openai-responses, anthropic or auto, found \"{name}\""
                ),
            }),
        }
    }

    /// The endpoint the official SDKs use when only a key is given.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Protocol::OpenAiChat | Protocol::OpenAiResponses => "https://api.openai.com/v1",
            Protocol::Anthropic => "https://api.anthropic.com",
        }
    }

    /// The base URL calls go to: `configured` (trimmed), else the public default.
    pub fn base_url(self, configured: &str) -> &str {
        match configured.trim() {
            "" => self.default_base_url(),
            configured => configured,
        }
    }

    /// The full URL of the generation endpoint under `base_url`.
    pub fn url(self, base_url: &str) -> String {
        let base = self.base_url(base_url).trim_end_matches('/');
        match self {
            Protocol::OpenAiChat => format!("{base}/chat/completions"),
            Protocol::OpenAiResponses => format!("{base}/responses"),
            Protocol::Anthropic if base.ends_with("/v1") => format!("{base}/messages"),
            Protocol::Anthropic => format!("{base}/v1/messages"),
        }
    }
}
