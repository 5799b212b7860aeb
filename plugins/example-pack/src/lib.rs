//! The example pack: a benchmark of generated arithmetic questions, a harness that solves
//! them without a model, an analyzer measuring how far off a wrong answer is, and Python
//! exercises scored in the environment by hidden tests (`example_pyexec`). Written exactly as a third party would: it depends only on
//! `agentcompass-plugin-api`. It is the project's test vehicle and the model for plugin
//! authors.

mod analyzer;
mod benchmark;
mod harness;
mod harness_free;
mod pyexec;

use agentcompass_plugin_api::contracts::{
    AnalyzerInfo, ComponentInfo, ComponentKind, ConfigField, ConfigSchema, ConfigType, JsonMap,
};
use agentcompass_plugin_api::sdk::PluginBuilder;
use serde_json::json;

/// Registers the pack's benchmarks, harness and analyzer, in that order.
fn register(plugin: &mut PluginBuilder) {
    plugin.benchmark(benchmark_info(), || Ok(benchmark::ExampleExactMatch));
    plugin.harness_free_benchmark(harness_free_info(), || Ok(harness_free::ExampleSelfCheck));
    plugin.harness(harness_info(), || Ok(harness::ExampleCalculator));
    plugin.analyzer(analyzer_info(), || Ok(analyzer::AnswerDistance));
    plugin
        .benchmark(pyexec_info(), || Ok(pyexec::Pyexec))
        .with_params::<pyexec::PyexecParams>();
}

/// The registry entry of the Python-exercises benchmark (its schema comes from its typed
/// parameters).
fn pyexec_info() -> ComponentInfo {
    ComponentInfo::named(
        pyexec::ID,
        "Python exercises scored in the environment by hidden tests (reward: fraction passed)",
    )
}

/// The `size` param both benchmarks take.
fn size_field() -> ConfigField {
    ConfigField::new(
        "size",
        ConfigType::Integer,
        json!(5),
        "Number of generated questions",
    )
}

/// The `seed` param both benchmarks take.
fn seed_field() -> ConfigField {
    ConfigField::new(
        "seed",
        ConfigType::Integer,
        json!(0),
        "Seed of the question generator (same seed, same questions)",
    )
}

/// The registry entry of the exact-match benchmark.
fn benchmark_info() -> ComponentInfo {
    ComponentInfo::new(
        ComponentKind::Benchmark,
        benchmark::ID,
        "Generated arithmetic questions scored by exact match",
    )
    .with_schema(
        ConfigSchema::empty()
            .field(size_field())
            .field(seed_field())
            .field(ConfigField::new(
                "case_sensitive",
                ConfigType::Boolean,
                json!(false),
                "Compare answers with case sensitivity",
            ))
            .field(ConfigField::new(
                "evaluate_delay_ms",
                ConfigType::Integer,
                json!(0),
                "How long each evaluation takes, in milliseconds (for testing slow evaluations)",
            ))
            .field(ConfigField::new(
                "sample_ids",
                ConfigType::Array,
                json!(null),
                "Run only these task ids",
            )),
    )
}

/// The registry entry of the harness-free benchmark.
fn harness_free_info() -> ComponentInfo {
    ComponentInfo::new(
        ComponentKind::Benchmark,
        harness_free::ID,
        "Harness-free: runs each arithmetic question as a shell command in the environment and scores the output (selected with harness `none`)",
    )
    .with_schema(ConfigSchema::empty().field(size_field()).field(seed_field()))
}

/// The registry entry of the calculator harness.
fn harness_info() -> ComponentInfo {
    ComponentInfo::new(
        ComponentKind::Harness,
        harness::ID,
        "Solves example_exact_match questions itself (no model)",
    )
    .with_model_use(agentcompass_plugin_api::contracts::ModelUse::None)
    .with_schema(
        ConfigSchema::empty()
            .field(ConfigField::new(
                "delay_ms",
                ConfigType::Integer,
                json!(0),
                "Sleep this long per task (simulated agent work)",
            ))
            .field(ConfigField::new(
                "wrong_every",
                ConfigType::Integer,
                json!(0),
                "Answer wrongly every Nth task (0 = never)",
            ))
            .field(ConfigField::new(
                "panic_on_task",
                ConfigType::String,
                json!(null),
                "Panic inside execute_task for this task id (proves containment)",
            )),
    )
}

/// The registry entry of the answer-distance analyzer.
fn analyzer_info() -> ComponentInfo {
    let mut defaults = JsonMap::new();
    defaults.insert("panic_on_task".into(), json!(null));
    ComponentInfo::new(
        ComponentKind::Analyzer,
        analyzer::ID,
        "example_exact_match: flags wrong answers and scores how far off they are",
    )
    .with_analyzer(AnalyzerInfo {
        category: "correctness".into(),
        datasets: vec![benchmark::ID.to_string()],
        defaults,
        ..AnalyzerInfo::default()
    })
}

agentcompass_plugin_api::export_plugin!(register);
