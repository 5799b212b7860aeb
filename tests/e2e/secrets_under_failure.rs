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
    files_containing, pack_run, published_results, run_dir, Outcome, Packs, Workspace,
    THREE_QUESTIONS,
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
    packs: Packs,
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
    let setup = Setup {
        ws: Workspace::new(),
        packs: Packs::new(&["qa-pack", "harbor-pack", "agents-pack", "bad-pack"]),
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
    let dataset = setup.ws.write("data/qa.jsonl", THREE_QUESTIONS);
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
        r#"{"max_retries": 2, "retry_backoff_seconds": 0, "max_rate_limit_wait_seconds": 0.3}"#,
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

/// Every window of `len` characters of `secret`: a fragment that long is a leak.
fn fragments(secret: &str, len: usize) -> Vec<String> {
    let chars: Vec<char> = secret.chars().collect();
    chars.windows(len).map(|w| w.iter().collect()).collect()
}

/// The two shapes that leaked a part of a secret: an error body cut at the edge of an echoed
/// key (cut before it was scrubbed, the key's first 37 characters survived), and an embedded
/// `${VAR}` in a binding (`AUTH = "Bearer ${E2E_TOKEN}"`: only the whole expansion was a
/// secret, so the token printed alone was not, and a stderr tail cut into it kept its end).
/// No 8-character fragment of either value reaches a results file or the console.
#[test]
fn no_fragment_of_a_cut_or_embedded_secret_leaks() {
    const LONG_KEY: &str = "sk-proj-d42cQ7RZ4M2X9W8V6U5T3S1P0N8K6J4H";
    const TOKEN: &str = "tokEMBEDDEDq7rz4m2x9w8v6u5t3s1p0n8k6j4h2";
    const GRADER: &str = "grdVERIFIERa1b2c3d4e5f6g7h8i9j0k1l2m3n4p";
    let packs = Packs::new(&["qa-pack", "harbor-pack", "agents-pack"]);
    let ws = Workspace::new();
    // The fixture's verifier reads E2E_BINDING.
    let env = &[
        ("E2E_LONG_KEY", LONG_KEY),
        ("E2E_TOKEN", TOKEN),
        ("E2E_BINDING", BINDING),
        ("E2E_GRADER", GRADER),
    ];
    let mut outcomes: Vec<(&str, Outcome)> = Vec::new();

    // (a) A 500 whose body echoes the Authorization header; the gateway keeps 200 characters
    // of a one-line body, and the padding puts that cut 37 characters into the key.
    let head = r#"{"error": {"message": "invalid credentials ", "header": "Bearer "#;
    let pad = "x".repeat(200 - 37 - head.len());
    let echo = format!(
        r#"{{"error": {{"message": "invalid credentials {pad}", "header": "Bearer {LONG_KEY}"}}}}"#
    );
    assert_eq!(
        echo.find(LONG_KEY),
        Some(200 - 37),
        "the cut falls 37 characters into the key"
    );
    let server = ScriptedServer::start(
        &json!({"require_key": LONG_KEY, "rules": [
            {"match": {"last_user_contains": "2+2"}, "responses": [{"status": 500, "body": echo}]}
        ]}),
        None,
    )
    .unwrap();
    let base_url = server.base_url();
    let dataset = ws.write(
        "data/qa.jsonl",
        concat!(
            r#"{"id": "add", "question": "What is 2+2?", "answer": "4"}"#,
            "\n"
        ),
    );
    let params = json!({"path": dataset}).to_string();
    let out = ws.run(
        &pack_run(
            &packs,
            ["qa", "openai_chat", "m"],
            &params,
            &[
                "--model-base-url",
                &base_url,
                "--model-api-key",
                "${E2E_LONG_KEY}",
                "--model-params",
                r#"{"max_retries": 1, "retry_backoff_seconds": 0}"#,
                "--max-retries",
                "1",
                "--progress",
                "plain",
            ],
        ),
        env,
    );
    let run = run_dir(&out);
    let found = issues(&run);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].1.contains("500"), "{found:?}");
    assert!(
        found[0].1.contains("Bearer ********"),
        "the echoed header is recorded, masked: {found:?}"
    );
    // The gateway's retry warning reached the console, without colour codes (stderr is a pipe).
    assert!(out.stderr.contains("retry 1 of 1"), "{}", out.stderr);
    assert!(
        !out.stderr.contains('\x1b'),
        "ANSI codes on a pipe: {:?}",
        out.stderr
    );
    outcomes.push(("500 echoing the key", out));

    // `run harbor cli_agent m ARGS...` in the sandbox, pointed at the scripted model.
    let packs_arg = packs.to_str().unwrap();
    let harbor_cli_agent = |args: &[&str]| {
        let mut all = vec!["--plugin-dir", packs_arg, "run", "harbor", "cli_agent", "m"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--model-base-url", &base_url, "--env", "sandbox"]);
        all.extend_from_slice(&["--progress", "plain"]);
        ws.run(&all, env)
    };

    // (b) `AUTH = "Bearer ${E2E_TOKEN}"`: the agent prints the token part alone, then a stderr
    // whose last 300 characters (the issue message's tail) start inside the token.
    let task = fixture("failing-verifier");
    let task_params = json!({"path": task}).to_string();
    let env_params = json!({"env_variables": {"AUTH": "Bearer ${E2E_TOKEN}"}}).to_string();
    let command = r#"t=$(echo "$AUTH" | cut -d' ' -f2); echo "token: $t"; printf '%s%0280d' "$t" 0 >&2; exit 3"#;
    let harness_params = json!({"command": command}).to_string();
    let out = harbor_cli_agent(&[
        "--benchmark-params",
        &task_params,
        "--harness-params",
        &harness_params,
        "--env-params",
        &env_params,
    ]);
    let run = run_dir(&out);
    let results = published_results(&run);
    let (attempt_dir, result) = &results["failing-verifier"];
    assert!(
        !files_containing(attempt_dir, "token: ********").is_empty(),
        "the agent's output is recorded, masked: {result}"
    );
    assert!(
        result["issues"].to_string().contains("exited with 3"),
        "{}",
        result["issues"]
    );
    outcomes.push(("embedded binding", out));

    // (c) A verifier printing its binding, then enough output that the benchmark's 4,000-
    // character tail starts 31 characters into the binding.
    let task_params = json!({"path": fixture("verifier-cuts-a-secret")}).to_string();
    let out = harbor_cli_agent(&[
        "--benchmark-params",
        &task_params,
        "--harness-params",
        r#"{"command": "true"}"#,
    ]);
    let run = run_dir(&out);
    let (_, result) = &published_results(&run)["verifier-cuts-a-secret"];
    let tail = result["meta"]["benchmark"]["harbor"]["test_stdout_tail"]
        .as_str()
        .unwrap_or_default();
    // Scrubbed before it was cut, the output is short enough to be kept whole.
    assert!(
        tail.starts_with("x********000"),
        "the secret is masked whole: {}",
        &result.to_string()[..result.to_string().len().min(1500)]
    );
    outcomes.push(("verifier output tail", out));

    let results_dir = ws.cwd.join("results");
    for secret in [LONG_KEY, TOKEN, GRADER] {
        for fragment in fragments(secret, 8) {
            assert_eq!(
                files_containing(&results_dir, &fragment),
                Vec::<PathBuf>::new(),
                "`{fragment}` (part of a secret) leaked into results files"
            );
            for (what, out) in &outcomes {
                assert!(
                    !out.stdout.contains(&fragment) && !out.stderr.contains(&fragment),
                    "{what}: `{fragment}` leaked on the console: {out:?}"
                );
            }
        }
    }
}
