//! A configuration file (TOML, YAML or JSON: the first byte picks the format) through what
//! `load_run_config` does with each file: parse, top-level mapping, `validate_config` (unknown
//! keys, `params:` layer, `${VAR}` rules), `deep_merge` onto earlier files, then the
//! accessors and `${VAR}` resolution that request building uses.
#![no_main]

#[path = "common.rs"]
mod common;

use std::path::PathBuf;

use agentcompass_host::config::{
    check_references, deep_merge, parse_text, resolve_references, validate_config, ConfigFile,
    LoadedConfig,
};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Map, Value};

/// `FUZZ_VERBOSE=1`: say what became of each input.
fn verbose() -> bool {
    static VERBOSE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *VERBOSE.get_or_init(|| std::env::var_os("FUZZ_VERBOSE").is_some())
}

fn truncated(text: &str) -> String {
    text.chars().take(300).collect()
}

fuzz_target!(|data: &[u8]| {
    let Some((path, _, text)) = common::format_and_text(data) else {
        return;
    };
    let source = path.display().to_string();
    let parsed = parse_text(path, text);
    if verbose() {
        match &parsed {
            Ok(value) => eprintln!("parsed: {}", truncated(&value.to_string())),
            Err(err) => eprintln!("not parsed: {}", truncated(&err.to_string())),
        }
    }
    let payload = match parsed {
        Ok(Value::Object(map)) => map,
        Ok(Value::Null) => Map::new(),
        Ok(_) | Err(_) => return,
    };
    if let Err(err) = validate_config(&source, &payload) {
        if verbose() {
            eprintln!("rejected: {}", truncated(&err.to_string()));
        }
        return;
    }
    // A user config before this file, as `load_run_config` merges them.
    let base = json!({
        "benchmarks": {"b": {"size": 1, "nested": {"k": "v"}}},
        "environments": {"host_process": {"env_variables": {"A": "1"}}},
        "execution": {"max_retries": 1},
        "runtime": {"results_dir": "results"},
    });
    let merged = deep_merge(&base, &Value::Object(payload.clone()));
    let merged = match merged {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    check_references(&source, "", &Value::Object(merged.clone()))
        .expect("a validated file merged onto a valid one stays valid");
    let loaded = LoadedConfig {
        files: vec![ConfigFile {
            path: PathBuf::from(&source),
            payload: payload.clone(),
        }],
        payload: merged,
    };
    for section in ["benchmarks", "harnesses", "environments"] {
        if let Some(entries) = loaded.section(section) {
            for id in entries.keys() {
                let _ = loaded.component(section, id);
                let _ = loaded.environment_layers(id);
            }
        }
    }
    let _ = loaded.config_path();
    let env = |name: &str| (name.len() % 2 == 0).then(|| format!("value-of-{name}"));
    let _ = resolve_references("", &Value::Object(payload), &env);
});
