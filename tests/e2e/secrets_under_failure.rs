//! Secrets stay out of every results file and the console when things fail: runs that carry a
//! model API key (`--model-api-key '${E2E_KEY}'`) and a `${VAR}` environment binding
//! (`TOKEN = "${E2E_BINDING}"`) meet a model endpoint answering 500 and 429 (retried; the
//! error bodies echo the key, as some providers do), plugin harnesses that panic, and a Harbor
//! verifier that prints the binding and fails after an agent that prints its whole
//! environment. Every file under the results directory (run.log, progress files, details,
//! ...) and the captured stdout and stderr hold neither value.

use std::fs;
use std::path::{Path, PathBuf};

use agentcompass_e2e::scripted::ScriptedServer;
use agentcompass_e2e::{
    files_containing, published_results, run_dir, Outcome, PluginDirs, Workspace,
};
use serde_json::{json, Value};

const KEY: &str = "sk-e2e-UNDERFAILURE-7319";
const BINDING: &str = "binding-UNDERFAILURE-2864";
const ENV: &[(&str, &str)] = &[("E2E_KEY", KEY), ("E2E_BINDING", BINDING)];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/harbor")
        .join(name)
}

struct Setup {
    ws: Workspace,
    _dirs: PluginDirs,
    packs: PathBuf,
}

impl Setup {
    /// `--plugin-dir PACKS run ARGS... --model-api-key '${E2E_KEY}' --env-params TOKEN=${E2E_BINDING}`.
    fn run(&self, args: &[&str]) -> Outcome {
        let env_params = json!({"env_variables": {"TOKEN": "${E2E_BINDING}"}}).to_string();
        let mut all = vec!["--plugin-dir", self.packs.to_str().unwrap(), "run"];
        all.extend_from_slice(args);
        all.extend_from_slice(&[
            "--model-api-key",
            "${E2E_KEY}",
            "--env-params",
            &env_params,
            "--progress",
            "plain",
        ]);
        self.ws.run(&all, ENV)
    }
}

/// Every issue message of every published task of `run`, by task id.
fn issues(run: &Path) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = published_results(run)
        .into_iter()
        .map(|(id, (_, result))| (id, result["issues"].to_string()))
        .collect();
    out.sort();
    out
}

#[test]
fn failing_runs_leak_neither_the_api_key_nor_a_binding() {
    let dirs = PluginDirs::new();
    let packs = dirs.package("packs", "qa-pack");
    for pack in ["harbor-pack", "agents-pack", "bad-pack"] {
        dirs.package("packs", pack);
    }
    let setup = Setup {
        ws: Workspace::new(),
        _dirs: dirs,
        packs,
    };
    let mut outcomes: Vec<(&str, Outcome)> = Vec::new();

    // (a) A model endpoint answering 500 and 429, its error bodies echoing the key.
    let server = ScriptedServer::start(
        &json!({"require_key": KEY, "rules": [
            {"match": {"last_user_contains": "2+2"},
             "responses": [{"status": 500, "body": format!("upstream down; key {KEY} rejected")}]},
            {"match": {"last_user_contains": "6*7"},
             "responses": [{"status": 429, "body": format!("slow down, {KEY}")}, {"text": "42"}]},
            {"match": {"last_user_contains": "France"},
             "responses": [{"status": 429, "body": format!("quota of {KEY} exhausted")}]}
        ]}),
        None,
    )
    .unwrap();
    let base_url = server.base_url();
    let dataset = setup.ws.write(
        "data/qa.jsonl",
        concat!(
            r#"{"id": "add", "question": "What is 2+2? Answer with only the number.", "answer": "4"}"#,
            "\n",
            r#"{"id": "mul", "question": "What is 6*7? Answer with only the number.", "answer": "42"}"#,
            "\n",
            r#"{"id": "cap", "question": "Capital of France? One word.", "answer": "Paris"}"#,
            "\n",
        ),
    );
    let params = json!({"path": dataset}).to_string();
    let out = setup.run(&[
        "qa",
        "openai_chat",
        "m",
        "--benchmark-params",
        &params,
        "--model-base-url",
        &base_url,
        "--model-params",
        r#"{"max_retries": 2, "retry_backoff_seconds": 0}"#,
        "--max-retries",
        "1",
    ]);
    let run = run_dir(&out);
    let found = issues(&run);
    assert_eq!(found.len(), 3, "{found:?}");
    let text = format!("{found:?}");
    assert!(text.contains("500") && text.contains("429"), "{found:?}");
    // The echoed key was recorded, masked.
    assert!(text.contains("key ******** rejected"), "{found:?}");
    let log = fs::read_to_string(run.join("run.log")).unwrap_or_default();
    assert!(log.contains("retry 1 of 2"), "the gateway retried: {log}");
    assert!(
        server.requests().iter().all(|r| r["authorized"] == true),
        "the key reached the endpoint"
    );
    outcomes.push(("model endpoint 500/429", out));

    // (b) Plugin harnesses that panic (in `execute_task`, and tokio without the SDK runtime).
    for harness in ["bad_async_panic", "bad_tokio"] {
        let out = setup.run(&[
            "example_exact_match",
            harness,
            "m",
            "--benchmark-params",
            r#"{"size": 2}"#,
            "--max-retries",
            "1",
        ]);
        let found = issues(&run_dir(&out));
        assert_eq!(found.len(), 2, "{harness}: {found:?}");
        assert!(
            found.iter().all(|(_, i)| i.contains("panic")),
            "{harness}: {found:?}"
        );
        outcomes.push((harness, out));
    }

    // (c) An agent printing its environment, then a verifier printing the bindings and failing
    // without a reward.
    let task = fixture("failing-verifier");
    let params = json!({"path": task}).to_string();
    let out = setup.run(&[
        "harbor",
        "cli_agent",
        "m",
        "--benchmark-params",
        &params,
        "--harness-params",
        r#"{"command": "echo TOKEN is $TOKEN; env"}"#,
        "--model-base-url",
        &base_url,
        "--env",
        "sandbox",
    ]);
    let run = run_dir(&out);
    let results = published_results(&run);
    let (attempt_dir, result) = &results["failing-verifier"];
    assert!(result["metrics"].get("reward").is_none(), "{result}");
    // The agent did see the binding: its printed environment is in the results, masked.
    let masked = files_containing(attempt_dir, "TOKEN is ********");
    assert!(
        !masked.is_empty(),
        "the agent's output is recorded (masked)"
    );
    outcomes.push(("failing verifier", out));

    // Nowhere: not in any results file, not on the console.
    let results_dir = setup.ws.cwd.join("results");
    for secret in [KEY, BINDING] {
        assert_eq!(
            files_containing(&results_dir, secret),
            Vec::<PathBuf>::new(),
            "`{secret}` leaked into results files"
        );
        for (what, out) in &outcomes {
            assert!(
                !out.stdout.contains(secret) && !out.stderr.contains(secret),
                "{what}: `{secret}` leaked on the console: {out:?}"
            );
        }
    }
    // The checks above looked at real files.
    let logs = fs::read_to_string(run.join("run.log")).unwrap_or_default();
    assert!(!logs.is_empty(), "run.log was written");
    assert!(run.join("progress.jsonl").is_file() && run.join("progress.json").is_file());
    let _: Value = serde_json::from_str(&fs::read_to_string(run.join("progress.json")).unwrap())
        .expect("progress.json");
}
