//! The Harbor benchmark and the agent harnesses end to end, in the `sandbox` environment:
//! the bundled `examples/harbor` tasks solved by `oracle` (reward 1) and by `terminus` driven by
//! a scripted model on loopback (several bash steps in the trajectory), a do-nothing agent
//! (reward 0), an agent that pre-writes its reward (still 0), the verifier's own timeout, a
//! fresh verifier seeded only with the collected artifacts, and phase-scoped bindings.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agentcompass_e2e::scripted::ScriptedServer;
use agentcompass_e2e::{
    files_containing, published_results as results, run_dir, Outcome, PluginDirs, Workspace,
};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the repository")
        .to_path_buf()
}

fn examples() -> PathBuf {
    repo_root().join("examples/harbor")
}

fn fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures/harbor").join(name)
}

struct Harbor {
    ws: Workspace,
    _dirs: PluginDirs,
    plugins: PathBuf,
}

fn harbor() -> Harbor {
    let ws = Workspace::new();
    let dirs = PluginDirs::new();
    let plugins = dirs.package("p", "harbor-pack");
    dirs.package("p", "agents-pack");
    Harbor {
        ws,
        _dirs: dirs,
        plugins,
    }
}

impl Harbor {
    fn run(&self, path: &Path, harness: &str, extra: &[&str], env: &[(&str, &str)]) -> Outcome {
        let params = json!({"path": path}).to_string();
        let mut args = vec![
            "--plugin-dir",
            self.plugins.to_str().unwrap(),
            "run",
            "harbor",
            harness,
            "scripted-model",
            "--benchmark-params",
            &params,
            "--env",
            "sandbox",
            "--progress",
            "none",
        ];
        args.extend_from_slice(extra);
        self.ws.run(&args, env)
    }
}

fn reward(result: &Value) -> f64 {
    result["metrics"]["reward"]
        .as_f64()
        .unwrap_or_else(|| panic!("no reward: {result}"))
}

#[test]
fn oracle_scores_one_on_every_bundled_example() {
    let h = harbor();
    let out = h.run(&examples(), "oracle", &[], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let results = results(&run_dir(&out));
    let mut ids: Vec<&String> = results.keys().collect();
    ids.sort();
    assert_eq!(ids, ["fizzbuzz", "hello-file", "primes"]);
    for (id, (_, result)) in &results {
        assert_eq!(reward(result), 1.0, "{id}: {result}");
        assert_eq!(result["metrics"]["correct"], true, "{id}");
    }
    // reward.json (two keys) wins over reward.txt for `primes`.
    assert_eq!(results["primes"].1["metrics"]["coverage"], 1.0);
}

#[test]
fn a_do_nothing_agent_scores_zero_and_a_pre_written_reward_is_ignored() {
    let h = harbor();
    let out = h.run(
        &examples(),
        "cli_agent",
        &["--harness-params", r#"{"command": "true"}"#],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    for (id, (_, result)) in results(&run_dir(&out)) {
        assert_eq!(reward(&result), 0.0, "{id}: {result}");
    }

    let cheat = json!({"command": "mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt && echo '{\"reward\": 1}' > /logs/verifier/reward.json"});
    let out = h.run(
        &examples().join("hello-file"),
        "cli_agent",
        &["--harness-params", &cheat.to_string()],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let (_, result) = &results(&run_dir(&out))["hello-file"];
    assert_eq!(
        reward(result),
        0.0,
        "stale reward files are removed: {result}"
    );
}

#[test]
fn the_verifier_timeout_is_enforced() {
    let h = harbor();
    let started = Instant::now();
    let out = h.run(&fixture("slow-verifier"), "oracle", &[], &[]);
    let elapsed = started.elapsed();
    assert!(
        elapsed < Duration::from_secs(30),
        "test.sh sleeps 60 s under a 2 s verifier timeout; took {elapsed:?}"
    );
    let (_, result) = &results(&run_dir(&out))["slow-verifier"];
    let issues = result["issues"].to_string();
    assert!(issues.contains("verifier_timeout"), "{issues}");
    assert!(result["metrics"].get("reward").is_none(), "{result}");
}

/// `timeout_sec = 1e300` (agent, verifier, both builds) loads and means "no practical
/// limit": the task runs and is scored (it used to panic converting the seconds, leaving no
/// result).
#[test]
fn huge_timeouts_mean_no_practical_limit() {
    let h = harbor();
    let task = h.ws.cwd.join("huge-timeouts");
    let source = examples().join("hello-file");
    for file in ["instruction.md", "solution/solve.sh", "tests/test.sh"] {
        let to = task.join(file);
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::copy(source.join(file), &to).unwrap();
    }
    let toml = fs::read_to_string(source.join("task.toml"))
        .unwrap()
        .replace("timeout_sec = 120.0", "timeout_sec = 1e300")
        .replace("timeout_sec = 60.0", "timeout_sec = 1e300")
        .replace(
            "[environment]\n",
            "[environment]\nbuild_timeout_sec = 1e300\n",
        );
    fs::write(task.join("task.toml"), &toml).unwrap();
    let out = h.run(&task, "oracle", &[], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let (_, result) = &results(&run_dir(&out))["huge-timeouts"];
    assert_eq!(reward(result), 1.0, "{result}");
    // A fresh verifier environment with a huge build timeout opens and scores too (0: it
    // sees only the collected artifacts, and hello.txt is not one).
    let fresh = format!("{toml}\n[verifier.environment]\nbuild_timeout_sec = 1e300\n");
    fs::write(task.join("task.toml"), fresh).unwrap();
    let out = h.run(&task, "oracle", &[], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let (_, result) = &results(&run_dir(&out))["huge-timeouts"];
    assert_eq!(reward(result), 0.0, "{result}");
    assert_eq!(result["issues"], json!([]), "{result}");
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn a_fresh_verifier_sees_exactly_the_collected_artifacts() {
    let h = harbor();
    let out = h.run(
        &fixture("fresh-artifacts"),
        "oracle",
        &["--execution-params", r#"{"save_artifacts": true}"#],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let (attempt_dir, result) = &results(&run_dir(&out))["fresh-artifacts"];
    assert_eq!(
        reward(result),
        1.0,
        "restored artifacts (and nothing else): {result}"
    );
    let answer = attempt_dir.join("artifacts/app/out/answer.txt");
    let bytes = fs::read(&answer).unwrap_or_else(|e| panic!("{}: {e}", answer.display()));
    assert_eq!(bytes, b"42\n");
    assert!(attempt_dir.join("artifacts/app/out/.hidden").is_file());
    assert!(!attempt_dir.join("artifacts/app/not-collected.txt").exists());
    // The recorded checksum is the file's.
    let declared = result["artifacts"]["declared_artifacts"].to_string();
    assert!(declared.contains(&sha256_hex(&bytes)), "{declared}");
}

#[test]
fn each_phase_sees_only_its_own_bindings() {
    let h = harbor();
    let out = h.run(
        &fixture("phase-env"),
        "oracle",
        &[],
        &[
            ("E2E_GRADER_MODE", "strict"),
            ("E2E_SOLUTION_TOKEN", "solution-token"),
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let (_, result) = &results(&run_dir(&out))["phase-env"];
    assert_eq!(reward(result), 1.0, "{result}");
    let run = run_dir(&out);
    let log = fs::read_to_string(run.join("run.log")).unwrap_or_default();
    assert!(!log.contains("solution-token"), "{log}");
}

#[test]
fn terminus_solves_the_bundled_tasks_in_several_bash_steps() {
    let h = harbor();
    let script: Value = serde_json::from_str(
        &fs::read_to_string(repo_root().join("examples/demo/terminus-script.json")).unwrap(),
    )
    .unwrap();
    let key = script["require_key"].as_str().unwrap().to_string();
    let server = ScriptedServer::start(&script, None).unwrap();
    let base_url = server.base_url();
    let out = h.run(
        &examples(),
        "terminus",
        &[
            "--model-base-url",
            &base_url,
            "--model-api-key",
            "${E2E_TERMINUS_KEY}",
        ],
        &[("E2E_TERMINUS_KEY", &key)],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let run = run_dir(&out);
    let results = results(&run);
    for (id, (_, result)) in &results {
        assert_eq!(reward(result), 1.0, "{id}: {result}");
    }
    let (_, hello) = &results["hello-file"];
    let steps = hello["trajectory"]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 4, "{steps:?}");
    let commands: Vec<&str> = steps
        .iter()
        .flat_map(|s| s["observation"].as_array().unwrap())
        .filter_map(|o| o["command"].as_str())
        .collect();
    assert_eq!(
        commands,
        [
            "pwd && ls -la",
            "printf 'Hello, world!\\n' > /app/hello.txt",
            "cat /app/hello.txt"
        ]
    );
    let outputs: Vec<&str> = steps
        .iter()
        .flat_map(|s| s["observation"].as_array().unwrap())
        .filter_map(|o| o["output"].as_str())
        .collect();
    assert!(
        outputs.iter().any(|o| o.contains("Hello, world!")),
        "{outputs:?}"
    );
    assert!(steps
        .iter()
        .all(|s| s["metric"]["prompt_tokens_len"].as_u64() > Some(0)));
    let usage = &hello["meta"]["harness"]["telemetry"]["model_usage"];
    assert_eq!(usage["requests"], 4, "{usage}");
    assert_eq!(usage["prompt_tokens"], 310 + 402 + 455 + 490);
    // The key is nowhere in the results or the run log.
    assert_eq!(
        files_containing(&h.ws.cwd.join("results"), &key),
        Vec::<PathBuf>::new()
    );
}
