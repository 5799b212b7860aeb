//! Mistakes found before the first task (issue 36 §1): each is one `error:` line, exit 2, no
//! results directory — in a real run and in `--dry-run`, which checks what a run checks and
//! counts the selected tasks.

use agentcompass_e2e::{Packs, Workspace};

/// A workspace with the `qa` and agent packs and a two-question dataset.
struct Qa {
    ws: Workspace,
    packs: Packs,
}

impl Qa {
    fn new() -> Self {
        let ws = Workspace::new();
        ws.write(
            "project/work/qa.jsonl",
            "{\"id\":\"q1\",\"question\":\"1+1?\",\"answer\":\"2\"}\n\
             {\"id\":\"q2\",\"question\":\"2+2?\",\"answer\":\"4\"}\n",
        );
        Qa {
            ws,
            packs: Packs::qa(),
        }
    }

    /// `--plugin-dir PACKS run qa openai_chat m --benchmark-params PARAMS` (`params` names
    /// the dataset).
    fn args<'a>(&'a self, params: &'a str) -> Vec<&'a str> {
        vec![
            "--plugin-dir",
            self.packs.to_str().expect("utf-8"),
            "run",
            "qa",
            "openai_chat",
            "m",
            "--benchmark-params",
            params,
        ]
    }

    /// `run qa openai_chat m --benchmark-params '{"path": DATASET}' EXTRA...`, expecting exit
    /// 2, one line and nothing written; returns the line.
    fn refused(&self, dataset: &str, extra: &[&str], env: &[(&str, &str)]) -> String {
        let params = format!("{{\"path\": \"{dataset}\"}}");
        let mut args = self.args(&params);
        args.extend_from_slice(extra);
        let out = self.ws.run_expect(2, &args, env);
        assert_eq!(out.stdout, "");
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(
            !self.ws.cwd.join("results").exists(),
            "a refused run wrote results"
        );
        self.ws.redact(&out.stderr)
    }
}

#[test]
fn a_harness_that_calls_a_model_without_one_configured_is_refused() {
    let qa = Qa::new();
    // The workspace's host runs with no OPENAI_* or ANTHROPIC_* variables.
    let line = qa.refused("qa.jsonl", &[], &[]);
    insta::assert_snapshot!("no_model_endpoint", line);
    assert_eq!(qa.refused("qa.jsonl", &["--dry-run"], &[]), line);
    // A model-free harness is never asked for one.
    qa.ws.run_ok(
        &["run", "example_exact_match", "example_calculator", "m1"],
        &[],
    );
}

#[test]
fn a_base_url_without_a_scheme_is_refused_at_resolution() {
    let qa = Qa::new();
    let flag = ["--model-base-url", "127.0.0.1:18081"];
    let line = qa.refused("qa.jsonl", &flag, &[]);
    insta::assert_snapshot!("base_url_without_scheme", line);
    let dry: Vec<&str> = flag.iter().copied().chain(["--dry-run"]).collect();
    assert_eq!(qa.refused("qa.jsonl", &dry, &[]), line);
    // Through a variable, the line names the reference, never the value.
    let line = qa.refused(
        "qa.jsonl",
        &["--model-base-url", "${MODEL_URL}"],
        &[("MODEL_URL", "secret-host:18081")],
    );
    assert_eq!(
        line,
        "error: model.base_url: `${MODEL_URL}` is not an absolute http:// or https:// URL (for \
         example http://127.0.0.1:8000/v1)\n"
    );
    // The SDK's variable, the same way.
    let line = qa.refused("qa.jsonl", &[], &[("OPENAI_BASE_URL", "localhost:18081")]);
    assert!(line.contains("`${OPENAI_BASE_URL}`"), "{line}");
}

#[test]
fn dry_run_opens_the_tasks_and_counts_them() {
    let qa = Qa::new();
    let url = [
        "--model-base-url",
        "http://127.0.0.1:9/v1",
        "--no-endpoint-check",
        "--dry-run",
    ];
    let line = qa.refused("missing.jsonl", &url, &[]);
    assert!(line.contains("missing.jsonl"), "{line}");
    let mut args = qa.args("{\"path\": \"qa.jsonl\"}");
    args.extend_from_slice(&url);
    let v = qa.ws.run_json(&args, &[]);
    assert_eq!(v["selected_tasks"], 2, "{v}");
    assert!(!qa.ws.cwd.join("results").exists());
}

#[test]
fn the_model_endpoint_is_checked_once_before_the_first_task() {
    use agentcompass_e2e::scripted::ScriptedServer;
    use agentcompass_e2e::{QaSetup, THREE_QUESTIONS};
    use serde_json::json;

    let setup = QaSetup::new(THREE_QUESTIONS);
    let results = setup.ws.cwd.join("results");
    // Nothing listening: one line naming the endpoint as written, and how to skip the check.
    let url = format!(
        "http://127.0.0.1:{}/v1",
        agentcompass_e2e::closed_loopback_port()
    );
    for extra in [&[][..], &["--dry-run"]] {
        let out = setup.run(&url, "k", extra).expect_code(2);
        assert_eq!(out.stdout, "");
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        let line = out.stderr.replace(&url, "http://127.0.0.1:PORT/v1");
        insta::assert_snapshot!("endpoint_not_listening", line);
        assert!(!results.exists());
    }
    // A key the endpoint refuses: the same, and the run's model was never called.
    let server = ScriptedServer::start(
        &json!({"require_key": "the-right-key", "rules": [
            {"match": {}, "responses": [{"text": "4"}]}
        ]}),
        None,
    )
    .expect("server");
    let out = setup
        .run(&server.base_url(), "a-wrong-key", &[])
        .expect_code(2);
    let line = out
        .stderr
        .replace(&server.base_url(), "http://127.0.0.1:PORT/v1");
    insta::assert_snapshot!("endpoint_refuses_the_key", line);
    assert!(!line.contains("a-wrong-key"));
    assert_eq!(server.endpoint_checks(), 1);
    assert!(server.requests().is_empty(), "{:?}", server.requests());
    assert!(!results.exists());
    // --no-endpoint-check: the run goes on and its tasks meet the refusal themselves.
    let out = setup.run(&server.base_url(), "a-wrong-key", &["--no-endpoint-check"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(server.endpoint_checks(), 1);
    assert_eq!(server.requests().len(), 3);
    // The right key: checked once, then every task's call.
    let out = setup
        .run(&server.base_url(), "the-right-key", &[])
        .expect_code(0);
    assert!(out.stderr.contains("(3/3 evaluated)"), "{}", out.stderr);
    assert_eq!(server.endpoint_checks(), 2);
    assert_eq!(server.requests().len(), 6);
}

#[test]
fn a_results_directory_that_cannot_be_created_is_refused_before_anything_runs() {
    let ws = Workspace::new();
    let out = ws.run_expect(
        2,
        &[
            "run",
            "example_exact_match",
            "example_calculator",
            "m1",
            "--results-dir",
            "/proc/agentcompass-nope/results",
        ],
        &[],
    );
    assert_eq!(out.stdout, "");
    insta::assert_snapshot!("results_dir_cannot_be_created", out.stderr);
    // The check leaves nothing behind where it could write.
    let out = ws.run_ok(
        &[
            "run",
            "example_exact_match",
            "example_calculator",
            "m1",
            "--results-dir",
            "r",
        ],
        &[],
    );
    assert!(out.stderr.contains("(5/5 evaluated)"), "{}", out.stderr);
    let leftovers: Vec<_> = std::fs::read_dir(&ws.cwd)
        .expect("cwd")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().contains("write-check"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// A name that does not resolve is refused like nothing listening: the host runs in a network
/// namespace of its own (`unshare --net`, no route out), so its name lookup fails at once and
/// no query leaves the machine.
#[test]
fn an_endpoint_whose_name_does_not_resolve_is_refused_before_the_first_task() {
    let qa = Qa::new();
    let params = "{\"path\": \"qa.jsonl\"}";
    let out = std::process::Command::new("unshare")
        .arg("--net")
        .arg(agentcompass_e2e::host_bin())
        .args(["--no-bundled-plugins", "--plugin-dir"])
        .arg(qa.packs.to_str().expect("utf-8"))
        .args([
            "run",
            "qa",
            "openai_chat",
            "m",
            "--benchmark-params",
            params,
        ])
        .args(["--model-base-url", "http://models.example.test/v1"])
        .current_dir(&qa.ws.cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &qa.ws.home)
        .output()
        .expect("unshare (util-linux)");
    let out = agentcompass_e2e::Outcome::of(out);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(out.stdout, "");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.starts_with(
            "error: model endpoint http://models.example.test/v1: cannot connect (failed to \
             lookup address information: "
        ) && out.stderr.contains("--no-endpoint-check"),
        "{}",
        out.stderr
    );
    assert!(!qa.ws.cwd.join("results").exists());
}
