//! Secrets never reach stdout or stderr: API keys given literally or as `${VAR}` (with the
//! variable set), `api_key`-like params and env-var values in config and orchestration files
//! are masked in `run --dry-run`, `launch --dry-run`, `config show` (both formats) and in the
//! error output of failing invocations; `${VAR}` references are shown as written.

use std::path::{Path, PathBuf};

use agentcompass_e2e::{Outcome, Workspace};
use serde_json::Value;

const LITERAL_KEY: &str = "sk-live-TOPSECRET-1234";
const ENV_KEY: &str = "sk-env-TOPSECRET-5678";
const CONFIG_KEY: &str = "sk-cfg-TOPSECRET-9999";
const ENV_VALUE: &str = "env-TOPSECRET-4242";
const NUMERIC_SECRET: &str = "90817263545";
const MASK: &str = "********";

/// `MY_KEY` holds a secret in every invocation.
const ENV: &[(&str, &str)] = &[("MY_KEY", ENV_KEY)];

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// Asserts that no secret value appears on stdout or stderr.
fn assert_clean(what: &str, out: &Outcome) {
    for secret in [
        LITERAL_KEY,
        ENV_KEY,
        CONFIG_KEY,
        ENV_VALUE,
        NUMERIC_SECRET,
        "TOPSECRET",
    ] {
        assert!(
            !out.stdout.contains(secret) && !out.stderr.contains(secret),
            "{what}: `{secret}` leaked: {out:?}"
        );
    }
}

/// A config file with an `api_key`-like param, an env-var value, and a `${MY_KEY}` reference.
fn secret_config(ws: &Workspace) -> PathBuf {
    ws.write(
        "cfg/secrets.toml",
        &format!(
            r#"
[execution.analysis_params.HackDetectionAnalyzer]
api_key = "{CONFIG_KEY}"
[execution.analysis_params.QualitativeAnalyzer]
api_key = "${{MY_KEY}}"
[environments.host_process.env_variables]
TOKEN = "{ENV_VALUE}"
REF = "${{MY_KEY}}"
"#
        ),
    )
}

fn run_args<'a>(benchmark: &'a str, cfg: &'a str, key: &'a str) -> Vec<&'a str> {
    vec![
        "run",
        benchmark,
        "example_calculator",
        "m1",
        "--dry-run",
        "--config",
        cfg,
        "--model-api-key",
        key,
    ]
}

fn json(out: &Outcome) -> Value {
    assert_eq!(out.code, 0, "{out:?}");
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {out:?}"))
}

#[test]
fn run_dry_run_masks_a_literal_api_key_and_config_secrets() {
    let ws = Workspace::new();
    let cfg = path(&secret_config(&ws));
    let out = ws.run(&run_args("example_exact_match", &cfg, LITERAL_KEY), ENV);
    assert_clean("run --dry-run (literal key)", &out);
    assert_eq!(out.stderr, "");
    let v = json(&out);
    let r = &v["request"];
    assert_eq!(r["model"]["api_key"], MASK);
    assert_eq!(
        r["execution"]["analysis_params"]["HackDetectionAnalyzer"]["api_key"],
        MASK
    );
    assert_eq!(
        r["execution"]["analysis_params"]["QualitativeAnalyzer"]["api_key"],
        "${MY_KEY}"
    );
    assert_eq!(r["environment"]["env_variables"]["TOKEN"], MASK);
    assert_eq!(r["environment"]["env_variables"]["REF"], "${MY_KEY}");
}

#[test]
fn run_dry_run_shows_an_env_reference_as_written() {
    let ws = Workspace::new();
    let cfg = path(&secret_config(&ws));
    let out = ws.run(&run_args("example_exact_match", &cfg, "${MY_KEY}"), ENV);
    assert_clean("run --dry-run (${MY_KEY})", &out);
    assert_eq!(out.stderr, "");
    let v = json(&out);
    assert_eq!(v["request"]["model"]["api_key"], "${MY_KEY}");
}

#[test]
fn launch_dry_run_masks_secrets() {
    let ws = Workspace::new();
    let cfg = path(&secret_config(&ws));
    let file = ws.write(
        "orch/secrets.toml",
        &format!(
            r#"
[defaults.model]
id = "m"
api_key = "{LITERAL_KEY}"
params = {{ extra_headers = {{ Authorization = "Bearer {LITERAL_KEY}" }} }}
[defaults.benchmark]
id = "example_exact_match"
[defaults.harness]
id = "example_calculator"
[[requests]]
name = "literal"
environment = {{ run_env_variables = {{ SECRET = "{ENV_VALUE}" }} }}
[[requests]]
name = "reference"
model = {{ api_key = "${{MY_KEY}}" }}
"#
        ),
    );
    let out = ws.run(
        &["launch", &path(&file), "--dry-run", "--config", &cfg],
        ENV,
    );
    assert_clean("launch --dry-run", &out);
    assert_eq!(out.stderr, "");
    let v = json(&out);
    let literal = &v["requests"][0];
    assert_eq!(literal["name"], "literal");
    assert_eq!(literal["model"]["api_key"], MASK);
    assert_eq!(
        literal["model"]["params"]["extra_headers"]["Authorization"],
        MASK
    );
    assert_eq!(literal["environment"]["run_env_variables"]["SECRET"], MASK);
    assert_eq!(literal["environment"]["env_variables"]["REF"], "${MY_KEY}");
    let reference = &v["requests"][1];
    assert_eq!(reference["name"], "reference");
    assert_eq!(reference["model"]["api_key"], "${MY_KEY}");
    assert_eq!(
        reference["execution"]["analysis_params"]["HackDetectionAnalyzer"]["api_key"],
        MASK
    );
}

#[test]
fn config_show_masks_secrets_in_both_formats() {
    let ws = Workspace::new();
    let cfg = path(&secret_config(&ws));
    let out = ws.run_ok(&["config", "show", "--config", &cfg], ENV);
    assert_clean("config show (toml)", &out);
    assert!(
        out.stdout.contains(&format!("api_key = \"{MASK}\"")),
        "{out:?}"
    );
    assert!(out.stdout.contains("REF = \"${MY_KEY}\""), "{out:?}");
    assert!(out.stdout.contains("api_key = \"${MY_KEY}\""), "{out:?}");

    let out = ws.run(
        &["config", "show", "--format", "json", "--config", &cfg],
        ENV,
    );
    assert_clean("config show (json)", &out);
    let v = json(&out);
    let analysis = &v["execution"]["analysis_params"];
    assert_eq!(analysis["HackDetectionAnalyzer"]["api_key"], MASK);
    assert_eq!(analysis["QualitativeAnalyzer"]["api_key"], "${MY_KEY}");
    let vars = &v["environments"]["host_process"]["env_variables"];
    assert_eq!(vars["TOKEN"], MASK);
    assert_eq!(vars["REF"], "${MY_KEY}");
}

#[test]
fn failing_invocations_never_print_secrets() {
    let ws = Workspace::new();
    let cfg = path(&secret_config(&ws));
    let failing = |what: &str, args: &[&str]| {
        let out = ws.run(args, ENV);
        assert_eq!(out.code, 2, "{what}: {out:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{what}: {out:?}");
        assert!(out.stderr.starts_with("error: "), "{what}: {out:?}");
        assert_clean(what, &out);
        out.stderr
    };

    // The same flags plus an unknown benchmark id, with each form of key.
    for key in [LITERAL_KEY, "${MY_KEY}"] {
        let err = failing("unknown benchmark", &run_args("nope", &cfg, key));
        assert!(err.contains("unknown benchmark `nope`"), "{err}");
    }
    // A bad value next to the key.
    let mut args = run_args("example_exact_match", &cfg, LITERAL_KEY);
    args.extend(["--model-api-protocol", "grpc"]);
    failing("bad protocol", &args);

    // A malformed file around a secret (parsers like to quote the offending line).
    let bad = ws.write(
        "cfg/bad.toml",
        &format!("[execution.analysis_params.X]\napi_key = \"{CONFIG_KEY}\" oops\n"),
    );
    let err = failing(
        "malformed toml",
        &["config", "show", "--config", &path(&bad)],
    );
    assert!(err.contains("line 2"), "{err}");
    let bad = ws.write(
        "cfg/bad.yaml",
        &format!("execution:\n  analysis_params: {{api_key: \"{CONFIG_KEY}\" oops}}\n"),
    );
    failing(
        "malformed yaml",
        &["config", "show", "--config", &path(&bad)],
    );
    let bad = ws.write(
        "cfg/bad.json",
        &format!(r#"{{"execution": {{"analysis_params": {{"api_key": "{CONFIG_KEY}" oops}}}}}}"#),
    );
    failing(
        "malformed json",
        &["config", "show", "--config", &path(&bad)],
    );

    // A secret of the wrong type (type errors like to quote the value).
    let numeric = ws.write(
        "cfg/numeric.toml",
        &format!("[environments.host_process.env_variables]\nTOKEN = {NUMERIC_SECRET}\n"),
    );
    let err = failing(
        "numeric env value",
        &run_args("example_exact_match", &path(&numeric), LITERAL_KEY),
    );
    assert!(
        err.contains("environments.host_process.env_variables.TOKEN: invalid type: integer"),
        "{err}"
    );
    let file = ws.write(
        "orch/numeric.toml",
        &format!(
            "[defaults.benchmark]\nid = \"example_exact_match\"\n[defaults.harness]\n\
             id = \"example_calculator\"\n[[requests]]\nname = \"a\"\n\
             model = {{ id = \"m\", api_key = {NUMERIC_SECRET} }}\n"
        ),
    );
    let err = failing("numeric api key", &["launch", &path(&file), "--dry-run"]);
    assert!(
        err.contains("requests[0].model.api_key: invalid type: integer"),
        "{err}"
    );

    // An orchestration with secrets that fails on an unknown benchmark.
    let file = ws.write(
        "orch/unknown.toml",
        &format!(
            "[defaults.model]\nid = \"m\"\napi_key = \"{LITERAL_KEY}\"\n[[requests]]\nname = \"a\"\n\
             benchmark = {{ id = \"nope\" }}\nharness = {{ id = \"example_calculator\" }}\n"
        ),
    );
    failing(
        "launch unknown benchmark",
        &["launch", &path(&file), "--dry-run", "--config", &cfg],
    );
}
