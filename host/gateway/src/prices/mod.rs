//! The price table (issue 57): LiteLLM's published model prices, pinned in the repository
//! (`host/gateway/prices/litellm.json`, written by `prices/update.py VERSION` from the
//! `litellm` wheel of that version on PyPI: the chat-capable models, and of each only its
//! per-token input, output and cache-read prices, provider and mode). The file is compiled in
//! as text and parsed the first time a price is needed (a model call answered, a cost limit
//! checked), never at startup.
//!
//! Precedence: `model.params.pricing` (`--model-params '{"pricing": …}'` or a config) wins;
//! else the table's entry for the model; else the run has no price (its cost is absent, and
//! the summary says "no price").
//!
//! # Looking a model up
//!
//! The rules follow LiteLLM's own (`get_model_info` → `get_potential_model_names` and
//! `_model_cost_lookup_order` in `litellm/utils.py`, `get_llm_provider`), minus what needs its
//! code (per-provider configs, Bedrock ARNs and regions, Vertex versions, fine-tune names):
//!
//! 1. The provider: the id's first `/`-separated segment when it names a provider of the table
//!    (`anthropic/claude-sonnet-4-5`: `anthropic`, the rest `claude-sonnet-4-5`); else the one
//!    of the endpoint's host, from LiteLLM's list of known endpoints (`api.openai.com`:
//!    `openai`, `api.x.ai`: `xai`, `api.deepseek.com`: `deepseek`, …); else none.
//! 2. The names tried, first found wins: `PROVIDER/NAME` (the prefix added, so `grok-4.20`
//!    on `api.x.ai` finds `xai/grok-4.20`), the id as typed, `NAME` (the prefix stripped),
//!    then both again with a dated snapshot suffix `-YYYY-MM-DD` removed
//!    (`gpt-4o-2099-01-01` finds `gpt-4o`). Each name matches its key exactly, else ignoring
//!    case.
//! 3. With a provider, an entry of another provider does not match (`openai/claude-sonnet-4-5`
//!    has no price), except LiteLLM's families: an entry of `vertex_ai-*`, `bedrock_*` or
//!    `fireworks_ai-*` for that provider, `azure`/`openai` entries for `azure_ai`, any entry
//!    for `litellm_proxy`. Without one, any entry matches: `claude-sonnet-4-5` served by an
//!    OpenAI-compatible proxy on another host is priced as Anthropic prices it.
//!
//! A price is per uncached input token, cached (cache-read) input token — the input price when
//! the table has none, as LiteLLM charges — and output token. LiteLLM's tiers (prices above
//! 200k tokens), batch, priority and cache-write prices are not used: a call is priced at its
//! base rates, cache-creation tokens as input.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use serde::Deserialize;

use agentcompass_plugin_api::contracts::ModelSpec;

use crate::settings::{GatewaySettings, Pricing};

/// The pinned table, as published (trimmed by `prices/update.py`).
const TABLE_JSON: &str = include_str!("../../prices/litellm.json");

/// Where the pinned table is in the repository (named in refusals).
pub const TABLE_PATH: &str = "host/gateway/prices/litellm.json";

/// What `model.params.pricing` is called as a price source.
pub const PARAMS_SOURCE: &str = "model.params.pricing";

/// Endpoint hosts and the LiteLLM provider each serves (LiteLLM's `openai_compatible_endpoints`
/// and the providers' own APIs): the provider of a model id without a provider prefix.
const ENDPOINT_PROVIDERS: &[(&str, &str)] = &[
    ("api.openai.com", "openai"),
    ("api.anthropic.com", "anthropic"),
    ("generativelanguage.googleapis.com", "gemini"),
    ("api.x.ai", "xai"),
    ("api.mistral.ai", "mistral"),
    ("codestral.mistral.ai", "codestral"),
    ("api.deepseek.com", "deepseek"),
    ("api.groq.com", "groq"),
    ("api.together.xyz", "together_ai"),
    ("api.together.ai", "together_ai"),
    ("api.fireworks.ai", "fireworks_ai"),
    ("openrouter.ai", "openrouter"),
    ("api.perplexity.ai", "perplexity"),
    ("api.deepinfra.com", "deepinfra"),
    ("api.cerebras.ai", "cerebras"),
    ("api.sambanova.ai", "sambanova"),
    ("api.moonshot.ai", "moonshot"),
    ("api.minimax.io", "minimax"),
    ("dashscope-intl.aliyuncs.com", "dashscope"),
    ("inference.baseten.co", "baseten"),
];

/// One model's entry, as the pinned file has it (US dollars per token).
#[derive(Debug, Deserialize)]
struct Entry {
    #[serde(default)]
    input_cost_per_token: Option<f64>,
    #[serde(default)]
    output_cost_per_token: Option<f64>,
    #[serde(default)]
    cache_read_input_token_cost: Option<f64>,
    #[serde(default)]
    litellm_provider: String,
}

/// The file's shape.
#[derive(Debug, Deserialize)]
struct TableFile {
    litellm_version: String,
    models: HashMap<String, Entry>,
}

/// A parsed price table.
#[derive(Debug)]
pub struct PriceTable {
    version: String,
    models: HashMap<String, Entry>,
    /// Lowercased key → key (the first in sorted order when two differ only in case).
    lowercase: HashMap<String, String>,
    /// Every `litellm_provider` of the table.
    providers: HashSet<String>,
}

/// A price the table gives a model.
#[derive(Debug, Clone, PartialEq)]
pub struct TablePrice {
    /// The table's key that matched (`claude-sonnet-4-5`).
    pub entry: String,
    /// Its prices, per million tokens.
    pub pricing: Pricing,
}

/// Why the pinned table cannot be read (a build with a broken file: its tests fail first).
#[derive(Debug, thiserror::Error)]
#[error("the price table {TABLE_PATH} is unreadable: {0}")]
pub struct TableError(#[from] serde_json::Error);

impl PriceTable {
    /// Parses a table in the pinned file's shape.
    pub fn parse(text: &str) -> Result<PriceTable, TableError> {
        let file: TableFile = serde_json::from_str(text)?;
        let mut keys: Vec<&String> = file.models.keys().collect();
        keys.sort();
        let mut lowercase = HashMap::with_capacity(keys.len());
        for key in keys {
            lowercase
                .entry(key.to_lowercase())
                .or_insert_with(|| key.clone());
        }
        let providers = file
            .models
            .values()
            .map(|e| e.litellm_provider.clone())
            .filter(|p| !p.is_empty())
            .collect();
        Ok(PriceTable {
            version: file.litellm_version,
            models: file.models,
            lowercase,
            providers,
        })
    }

    /// The pinned table, parsed on first use (`None`, logged once, if it cannot be).
    pub fn pinned() -> Option<&'static PriceTable> {
        static PINNED: OnceLock<Option<PriceTable>> = OnceLock::new();
        PINNED
            .get_or_init(|| match PriceTable::parse(TABLE_JSON) {
                Ok(table) => Some(table),
                Err(e) => {
                    tracing::error!("{e}");
                    None
                }
            })
            .as_ref()
    }

    /// The LiteLLM release the table comes from (`1.110.2`).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The table as a price source: `litellm@VERSION`.
    pub fn source(&self) -> String {
        format!("litellm@{}", self.version)
    }

    /// The price of `model` as a user typed it, served at `base_url` (its host names the
    /// provider of an id without a provider prefix): the module's rules.
    pub fn lookup(&self, model: &str, base_url: &str) -> Option<TablePrice> {
        let model = model.trim();
        let (provider, name) = match model.split_once('/') {
            Some((prefix, rest)) if self.providers.contains(prefix) => (Some(prefix), rest),
            _ => (endpoint_provider(base_url), model),
        };
        let stripped = strip_dated_snapshot(name);
        let prefixed = |name: &str| provider.map(|p| format!("{p}/{name}"));
        let candidates = [
            prefixed(name),
            Some(model.to_string()),
            Some(name.to_string()),
            prefixed(stripped),
            Some(stripped.to_string()),
        ];
        candidates
            .iter()
            .flatten()
            .find_map(|candidate| self.matching(candidate, provider))
    }

    /// The entry `candidate` names (exactly, else ignoring case), if it is `provider`'s.
    fn matching(&self, candidate: &str, provider: Option<&str>) -> Option<TablePrice> {
        let key = if self.models.contains_key(candidate) {
            candidate.to_string()
        } else {
            self.lowercase.get(&candidate.to_lowercase())?.clone()
        };
        let entry = self.models.get(&key)?;
        if !provider.is_none_or(|p| provider_matches(&entry.litellm_provider, p)) {
            return None;
        }
        let per_million = |per_token: f64| (per_token * 1e15).round() / 1e9;
        let input = per_million(entry.input_cost_per_token.unwrap_or(0.0));
        Some(TablePrice {
            entry: key,
            pricing: Pricing {
                input,
                output: per_million(entry.output_cost_per_token.unwrap_or(0.0)),
                cached_input: entry.cache_read_input_token_cost.map_or(input, per_million),
            },
        })
    }
}

/// Whether an entry of `entry_provider` prices a model asked of `provider` (LiteLLM's
/// `_check_provider_match`).
fn provider_matches(entry_provider: &str, provider: &str) -> bool {
    entry_provider.is_empty()
        || entry_provider == provider
        || provider == "litellm_proxy"
        || (provider == "azure_ai" && matches!(entry_provider, "azure" | "openai"))
        || (["vertex_ai", "fireworks_ai", "bedrock"].contains(&provider)
            && entry_provider.starts_with(provider))
}

/// The provider serving the endpoint at `base_url`, when its host is a known one.
fn endpoint_provider(base_url: &str) -> Option<&'static str> {
    let url = reqwest::Url::parse(base_url.trim()).ok()?;
    let host = url.host_str()?.to_ascii_lowercase();
    ENDPOINT_PROVIDERS
        .iter()
        .find(|(known, _)| host == *known)
        .map(|(_, provider)| *provider)
}

/// `name` without a dated snapshot suffix `-YYYY-MM-DD` (LiteLLM's
/// `_strip_dated_snapshot_suffix`).
fn strip_dated_snapshot(name: &str) -> &str {
    let bytes = name.as_bytes();
    if bytes.len() < 11 {
        return name;
    }
    let tail = &bytes[bytes.len() - 11..];
    let digits = |range: std::ops::Range<usize>| tail[range].iter().all(u8::is_ascii_digit);
    let dated = tail[0] == b'-'
        && digits(1..5)
        && tail[5] == b'-'
        && digits(6..8)
        && tail[8] == b'-'
        && digits(9..11);
    if dated {
        &name[..name.len() - 11]
    } else {
        name
    }
}

/// A model's price and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelPrice {
    /// Per million tokens.
    pub pricing: Pricing,
    /// `model.params.pricing` or `litellm@VERSION`.
    pub source: String,
    /// The table's entry that priced the model (`None` for `model.params.pricing`).
    pub entry: Option<String>,
}

/// The price of `model` at `base_url`: `pricing` (`model.params.pricing`) when set, else the
/// pinned table's (parsed now if it was not yet), else `None`.
pub fn model_price(pricing: Option<Pricing>, model: &str, base_url: &str) -> Option<ModelPrice> {
    if let Some(pricing) = pricing {
        return Some(ModelPrice {
            pricing,
            source: PARAMS_SOURCE.to_string(),
            entry: None,
        });
    }
    let table = PriceTable::pinned()?;
    let found = table.lookup(model, base_url)?;
    Some(ModelPrice {
        pricing: found.pricing,
        source: table.source(),
        entry: Some(found.entry),
    })
}

/// The price of the model `spec` configures (its `params.pricing`, else the table's for its
/// id at its endpoint); `None` also when its settings or protocol are unusable (refused
/// elsewhere, by name).
pub fn spec_price(spec: &ModelSpec) -> Option<ModelPrice> {
    let pricing = GatewaySettings::from_params(&spec.params).ok()?.pricing;
    let protocol = crate::Protocol::choose(spec).ok()?;
    model_price(pricing, &spec.id, protocol.base_url(&spec.base_url))
}

#[cfg(test)]
mod tests;
