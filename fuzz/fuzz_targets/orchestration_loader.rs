//! A `launch` orchestration file (TOML, YAML or JSON: the first byte picks the format) through
//! `parse_orchestration_text` (what `load_orchestration_file` does after reading the file) and
//! `resolve_orchestration` against a registry of the built-ins plus stand-in components with the
//! ids and parameter names of the bundled plugins (their constructors are never called:
//! resolution only reads ids and schemas). Bits of the first byte also choose a configuration
//! layer and `launch` flags.
#![no_main]

#[path = "common.rs"]
mod common;

use std::path::PathBuf;

use agentcompass_host::config::{ConfigFile, LoadedConfig};
use agentcompass_host::registry::{Builtin, BuiltinFactory, Registry};
use agentcompass_host::request::orchestration::{
    parse_orchestration_text, resolve_orchestration, LaunchArgs,
};
use agentcompass_plugin_api::contracts::{
    ComponentInfo, ComponentKind, ConfigField, ConfigSchema, ConfigType,
};
use agentcompass_plugin_api::Error;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

fn unused<T>() -> Result<T, Error> {
    Err(Error::invalid_input("fuzz stand-in: not constructed"))
}

/// A schema of `(name, type)` fields; a leading `!` marks a required field.
fn schema(fields: &[(&str, ConfigType)]) -> ConfigSchema {
    fields
        .iter()
        .fold(ConfigSchema::empty(), |schema, (name, kind)| {
            let field = ConfigField::new(name.trim_start_matches('!'), *kind, Value::Null, "");
            schema.field(if name.starts_with('!') {
                field.required()
            } else {
                field
            })
        })
}

fn stand_in(kind: ComponentKind, id: &str, fields: &[(&str, ConfigType)]) -> Builtin {
    let factory = match kind {
        ComponentKind::Benchmark => BuiltinFactory::Benchmark(unused),
        ComponentKind::Harness => BuiltinFactory::Harness(unused),
        ComponentKind::Environment => BuiltinFactory::Environment(unused),
        ComponentKind::Recipe => BuiltinFactory::Recipe(unused),
    };
    Builtin {
        info: ComponentInfo::new(kind, id, "").with_schema(schema(fields)),
        factory,
    }
}

/// The built-ins, then stand-ins with the ids and parameter names of the bundled plugins.
fn registry() -> Registry {
    use ComponentKind::{Benchmark, Environment, Harness, Recipe};
    use ConfigType::{Any, Array, Boolean, Integer, Number, Object, String};
    let mut builtins = agentcompass_builtins::all();
    builtins.extend([
        stand_in(
            Benchmark,
            "example_exact_match",
            &[
                ("size", Integer),
                ("seed", Integer),
                ("case_sensitive", Boolean),
                ("sample_ids", Array),
            ],
        ),
        stand_in(
            Benchmark,
            "example_self_check",
            &[("size", Integer), ("seed", Integer)],
        ),
        stand_in(
            Benchmark,
            "harbor",
            &[
                ("!path", Any),
                ("sample_ids", Array),
                ("solution_env_for_agent", Boolean),
            ],
        ),
        stand_in(
            Benchmark,
            "qa",
            &[("!path", String), ("match", String), ("sample_ids", Array)],
        ),
        stand_in(
            Benchmark,
            "typed",
            &[
                ("!s", String),
                ("n", Number),
                ("o", Object),
                ("a", Any),
                ("i", Integer),
            ],
        ),
        stand_in(
            Harness,
            "example_calculator",
            &[
                ("delay_ms", Integer),
                ("wrong_every", Integer),
                ("panic_on_task", Any),
            ],
        ),
        stand_in(Harness, "oracle", &[]),
        stand_in(
            Harness,
            "openai_chat",
            &[("request_timeout_seconds", Number), ("task_kwargs", Object)],
        ),
        stand_in(
            Harness,
            "terminus",
            &[
                ("max_turns", Integer),
                ("command_timeout_seconds", Number),
                ("max_output_chars", Integer),
                ("cost_limit_usd", Number),
            ],
        ),
        stand_in(
            Harness,
            "cli_agent",
            &[
                ("!command", String),
                ("install_command", String),
                ("output_files", Array),
            ],
        ),
        stand_in(
            Environment,
            "docker",
            &[
                ("docker_host", String),
                ("network", String),
                ("keep_alive_command", Any),
                ("pull", Any),
                ("build_context", Any),
            ],
        ),
        stand_in(Recipe, "example_recipe", &[]),
    ]);
    // Harness-free benchmark.
    if let Some(entry) = builtins
        .iter_mut()
        .find(|b| b.info.id == "example_self_check")
    {
        entry.info.harness_free = true;
    }
    Registry::with_builtins(&builtins)
}

fn config() -> LoadedConfig {
    let payload = json!({
        "benchmarks": {"example_exact_match": {"size": 5}, "harbor": {"path": "/tasks"}},
        "harnesses": {"terminus": {"max_turns": 3}},
        "environments": {"host_process": {"env_variables": {"A": "1"}, "workdir": "/tmp"}},
        "execution": {"max_retries": 2, "task_concurrency": 4},
        "runtime": {"results_dir": "results", "reuse": false},
    });
    let payload = payload.as_object().cloned().unwrap_or_default();
    LoadedConfig {
        files: vec![ConfigFile {
            path: PathBuf::from("config.toml"),
            payload: payload.clone(),
        }],
        payload,
    }
}

/// `FUZZ_VERBOSE=1`: say what became of each input (to check that seeds get far).
fn verbose() -> bool {
    static VERBOSE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *VERBOSE.get_or_init(|| std::env::var_os("FUZZ_VERBOSE").is_some())
}

thread_local! {
    static REGISTRY: Registry = registry();
}

fuzz_target!(|data: &[u8]| {
    let Some((path, selector, text)) = common::format_and_text(data) else {
        return;
    };
    let file = match parse_orchestration_text(path, text) {
        Ok(file) => file,
        Err(err) => {
            if verbose() {
                eprintln!("not loaded: {err}");
            }
            return;
        }
    };
    let config = if selector & 0x10 != 0 {
        config()
    } else {
        LoadedConfig::default()
    };
    let args = LaunchArgs {
        task_concurrency: (selector & 0x20 != 0).then_some(2),
        run_id: (selector & 0x40 != 0).then(|| "run-1".to_string()),
        reuse: selector & 0x80 != 0,
        ..LaunchArgs::default()
    };
    let resolved =
        REGISTRY.with(|registry| resolve_orchestration(path, &file, &config, &args, registry));
    if verbose() {
        match resolved {
            Ok(orchestration) => eprintln!("resolved {} request(s)", orchestration.requests.len()),
            Err(err) => eprintln!("rejected: {err}"),
        }
    }
});
