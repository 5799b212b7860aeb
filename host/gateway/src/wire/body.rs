//! Typed request bodies of the three wire protocols, before the generation parameters are
//! merged in. Fields are declared in alphabetical order, the order in which `json!` objects
//! serialise.

use agentcompass_plugin_api::contracts::Message;
use serde::Serialize;
use serde_json::Value;

/// A chat-completions request.
#[derive(Debug, Serialize)]
pub(crate) struct ChatBody<'a> {
    /// The conversation, as it is.
    pub(crate) messages: &'a [Message],
    /// The model asked.
    pub(crate) model: &'a str,
    /// The tools, when there are any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tools: Option<Vec<ChatTool<'a>>>,
}

/// A tool of a chat-completions request.
#[derive(Debug, Serialize)]
pub(crate) struct ChatTool<'a> {
    /// The function the tool is.
    pub(crate) function: FunctionDef<'a>,
    /// Always `function`.
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
}

/// A function offered to the model.
#[derive(Debug, Serialize)]
pub(crate) struct FunctionDef<'a> {
    /// What it does.
    pub(crate) description: &'a str,
    /// Its name.
    pub(crate) name: &'a str,
    /// The JSON schema of its arguments.
    pub(crate) parameters: Value,
}

/// A Responses API request.
#[derive(Debug, Serialize)]
pub(crate) struct ResponsesBody<'a> {
    /// The conversation as input items.
    pub(crate) input: Vec<Value>,
    /// The system and developer messages joined, when there are any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) instructions: Option<String>,
    /// The model asked.
    pub(crate) model: &'a str,
    /// The tools, when there are any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tools: Option<Vec<ResponsesTool<'a>>>,
}

/// A tool of a Responses API request (a flat function).
#[derive(Debug, Serialize)]
pub(crate) struct ResponsesTool<'a> {
    /// What it does.
    pub(crate) description: &'a str,
    /// Its name.
    pub(crate) name: &'a str,
    /// The JSON schema of its arguments.
    pub(crate) parameters: Value,
    /// Always `function`.
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
}

/// An Anthropic Messages request.
#[derive(Debug, Serialize)]
pub(crate) struct AnthropicBody<'a> {
    /// The most tokens to generate.
    pub(crate) max_tokens: u64,
    /// The turns, alternating between `user` and `assistant`.
    pub(crate) messages: Vec<Turn>,
    /// The model asked.
    pub(crate) model: &'a str,
    /// The system and developer messages joined, when there are any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) system: Option<String>,
    /// The tools, when there are any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tools: Option<Vec<AnthropicTool<'a>>>,
}

/// A turn of an Anthropic conversation.
#[derive(Debug, Serialize)]
pub(crate) struct Turn {
    /// Its content blocks.
    pub(crate) content: Vec<Value>,
    /// `user` or `assistant`.
    pub(crate) role: &'static str,
}

/// A tool of an Anthropic request.
#[derive(Debug, Serialize)]
pub(crate) struct AnthropicTool<'a> {
    /// What it does.
    pub(crate) description: &'a str,
    /// The JSON schema of its input.
    pub(crate) input_schema: Value,
    /// Its name.
    pub(crate) name: &'a str,
}

/// `items`, or `None` when there are none (a key left out of the body).
pub(crate) fn non_empty<T>(items: Vec<T>) -> Option<Vec<T>> {
    (!items.is_empty()).then_some(items)
}
