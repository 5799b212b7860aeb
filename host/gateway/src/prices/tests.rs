//! The lookup rules on a small table, then the pinned table on ids as users type them.

use std::time::Instant;

use agentcompass_plugin_api::contracts::TokenUsage;

use super::*;

const SMALL: &str = r#"{
"litellm_version": "0.0.1",
"models": {
"claude-sonnet-4-5": {"cache_read_input_token_cost":3e-07,"input_cost_per_token":3e-06,"litellm_provider":"anthropic","mode":"chat","output_cost_per_token":1.5e-05},
"gpt-4o": {"cache_read_input_token_cost":1.25e-06,"input_cost_per_token":2.5e-06,"litellm_provider":"openai","mode":"chat","output_cost_per_token":1e-05},
"xai/grok-4": {"input_cost_per_token":3e-06,"litellm_provider":"xai","mode":"chat","output_cost_per_token":1.5e-05},
"vertex_ai/claude-sonnet-4-5": {"input_cost_per_token":3.3e-06,"litellm_provider":"vertex_ai-anthropic_models","mode":"chat","output_cost_per_token":1.65e-05},
"Mixed/Case-Model": {"input_cost_per_token":1e-06,"litellm_provider":"mixed","mode":"chat","output_cost_per_token":2e-06}
}
}"#;

fn small() -> PriceTable {
    PriceTable::parse(SMALL).unwrap()
}

/// The entry `model` at `base_url` finds in `table`.
fn entry(table: &PriceTable, model: &str, base_url: &str) -> Option<String> {
    table.lookup(model, base_url).map(|p| p.entry)
}

#[test]
fn exact_keys_prefixes_stripped_and_added() {
    let t = small();
    let local = "http://127.0.0.1:8000/v1";
    assert_eq!(entry(&t, "gpt-4o", local).as_deref(), Some("gpt-4o"));
    // The provider prefix stripped (its entry is the provider's).
    assert_eq!(
        entry(&t, "anthropic/claude-sonnet-4-5", local).as_deref(),
        Some("claude-sonnet-4-5")
    );
    assert_eq!(entry(&t, "openai/gpt-4o", local).as_deref(), Some("gpt-4o"));
    // Added from the endpoint's host.
    assert_eq!(
        entry(&t, "grok-4", "https://api.x.ai/v1").as_deref(),
        Some("xai/grok-4")
    );
    assert_eq!(entry(&t, "grok-4", local), None);
    // A prefix naming the entry itself.
    assert_eq!(
        entry(&t, "xai/grok-4", local).as_deref(),
        Some("xai/grok-4")
    );
}

#[test]
fn dated_snapshots_and_case() {
    let t = small();
    let local = "http://localhost:9/v1";
    assert_eq!(
        entry(&t, "gpt-4o-2099-01-01", local).as_deref(),
        Some("gpt-4o")
    );
    assert_eq!(
        entry(&t, "openai/gpt-4o-2099-01-01", local).as_deref(),
        Some("gpt-4o")
    );
    // Only LiteLLM's `-YYYY-MM-DD` is a snapshot suffix.
    assert_eq!(entry(&t, "gpt-4o-20990101", local), None);
    assert_eq!(entry(&t, "GPT-4O", local).as_deref(), Some("gpt-4o"));
    assert_eq!(
        entry(&t, "mixed/case-model", local).as_deref(),
        Some("Mixed/Case-Model")
    );
    assert_eq!(strip_dated_snapshot("a-2024-08-06"), "a");
    assert_eq!(strip_dated_snapshot("2024-08-06"), "2024-08-06");
    assert_eq!(strip_dated_snapshot("a-2024-8-06x"), "a-2024-8-06x");
}

#[test]
fn another_providers_entry_does_not_match() {
    let t = small();
    let local = "http://127.0.0.1:1/v1";
    assert_eq!(entry(&t, "openai/claude-sonnet-4-5", local), None);
    // The host's provider constrains a bare id too (LiteLLM's api_base inference).
    assert_eq!(
        entry(&t, "claude-sonnet-4-5", "https://api.openai.com/v1"),
        None
    );
    // Without one, any entry: an OpenAI-compatible proxy serving Claude.
    assert_eq!(
        entry(&t, "claude-sonnet-4-5", "https://proxy.example/v1").as_deref(),
        Some("claude-sonnet-4-5")
    );
    // Families: a vertex_ai-* entry for `vertex_ai`.
    assert_eq!(
        entry(&t, "vertex_ai/claude-sonnet-4-5", local).as_deref(),
        Some("vertex_ai/claude-sonnet-4-5")
    );
    assert!(provider_matches("bedrock_converse", "bedrock"));
    assert!(provider_matches("openai", "azure_ai"));
    assert!(!provider_matches("anthropic", "openai"));
    assert_eq!(entry(&t, "no-such-model", local), None);
    assert_eq!(entry(&t, "unknown/gpt-4o-mini", local), None);
}

#[test]
fn prices_are_per_million_and_cached_defaults_to_input() {
    let t = small();
    let claude = t.lookup("claude-sonnet-4-5", "").unwrap().pricing;
    assert_eq!(
        claude,
        Pricing {
            input: 3.0,
            output: 15.0,
            cached_input: 0.3
        }
    );
    let grok = t.lookup("xai/grok-4", "").unwrap().pricing;
    assert_eq!(grok.cached_input, grok.input);
    // 1000 prompt tokens of which 400 cached, 200 completion tokens.
    let usage = TokenUsage {
        prompt_tokens: 1000,
        cached_tokens: 400,
        completion_tokens: 200,
        ..TokenUsage::default()
    };
    let expected = (600.0 * 3.0 + 400.0 * 0.3 + 200.0 * 15.0) / 1e6;
    assert!((claude.cost(&usage) - expected).abs() < 1e-15);
    assert!((claude.cost(&usage) - 0.00492).abs() < 1e-12);
}

#[test]
fn params_pricing_wins_over_the_table() {
    let own = Pricing {
        input: 1.0,
        output: 2.0,
        cached_input: 1.0,
    };
    let price = model_price(Some(own), "claude-sonnet-4-5", "").unwrap();
    assert_eq!(price.pricing, own);
    assert_eq!(price.source, PARAMS_SOURCE);
    assert_eq!(price.entry, None);
    let table = model_price(None, "claude-sonnet-4-5", "").unwrap();
    assert_eq!(table.source, format!("litellm@{}", pinned().version()));
    assert_eq!(table.entry.as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(model_price(None, "scripted-model", ""), None);
}

fn pinned() -> &'static PriceTable {
    PriceTable::pinned().expect("the pinned table parses")
}

#[test]
fn the_pinned_table_prices_the_usual_ids() {
    let t = pinned();
    assert!(!t.version().is_empty());
    let anthropic = "https://api.anthropic.com";
    let openai = "https://api.openai.com/v1";
    for (model, base, key) in [
        ("claude-sonnet-4-5", anthropic, "claude-sonnet-4-5"),
        ("anthropic/claude-sonnet-4-5", "", "claude-sonnet-4-5"),
        (
            "claude-sonnet-4-5-20250929",
            anthropic,
            "claude-sonnet-4-5-20250929",
        ),
        ("gpt-4o", openai, "gpt-4o"),
        ("openai/gpt-4o", "", "gpt-4o"),
        ("gpt-4o-2024-08-06", openai, "gpt-4o-2024-08-06"),
        ("gpt-4o-mini", "http://127.0.0.1:1/v1", "gpt-4o-mini"),
        ("gpt-4o-2099-01-01", "", "gpt-4o"),
        ("grok-4.20", "https://api.x.ai/v1", "xai/grok-4.20"),
    ] {
        assert_eq!(entry(t, model, base).as_deref(), Some(key), "{model}");
    }
    let sonnet = t.lookup("claude-sonnet-4-5", "").unwrap().pricing;
    assert!(
        sonnet.input > 0.0 && sonnet.output > sonnet.input,
        "{sonnet:?}"
    );
    assert!(sonnet.cached_input < sonnet.input, "{sonnet:?}");
    assert_eq!(entry(t, "scripted-model", ""), None);
}

/// The cost of parsing the pinned table (printed with `--no-capture`), timed on a fresh parse.
#[test]
fn parsing_the_pinned_table_is_quick() {
    let started = Instant::now();
    let table = PriceTable::parse(TABLE_JSON).unwrap();
    let elapsed = started.elapsed();
    println!(
        "parsed {} models of litellm {} in {elapsed:?}",
        table.models.len(),
        table.version()
    );
    assert!(table.models.len() > 1000);
    // Generous: a debug build on a loaded machine.
    assert!(elapsed.as_secs_f64() < 2.0, "{elapsed:?}");
}
