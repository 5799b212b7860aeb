//! The Harbor benchmark and the agent harnesses end to end, in the `sandbox` environment:
//! the bundled `examples/harbor` tasks solved by `oracle` (reward 1) and by `terminus` driven by
//! a scripted model on loopback (several bash steps in the trajectory), a do-nothing agent
//! (reward 0), an agent that pre-writes its reward (still 0), the verifier's own timeout, a
//! fresh verifier seeded only with the collected artifacts, phase-scoped bindings, and
//! per-phase network policies in one sandbox.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agentcompass_e2e::scripted::ScriptedServer;
use agentcompass_e2e::{
    files_containing, pack_run, published_results as results, read_json, run_dir, Outcome, Packs,
    Workspace,
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
    plugins: Packs,
}

fn harbor() -> Harbor {
    let ws = Workspace::new();
    let plugins = Packs::harbor();
    Harbor { ws, plugins }
}

impl Harbor {
    fn run(&self, path: &Path, harness: &str, extra: &[&str], env: &[(&str, &str)]) -> Outcome {
        let params = json!({"path": path}).to_string();
        let mut args = pack_run(
            &self.plugins,
            ["harbor", harness, "scripted-model"],
            &params,
            &["--env", "sandbox", "--progress", "none"],
        );
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
    let out = h.run(&examples(), "oracle", &[], &[]).expect_code(0);
    let results = results(&run_dir(&out));
    let mut ids: Vec<&String> = results.keys().collect();
    ids.sort();
    assert_eq!(ids, ["fizzbuzz", "hello-file", "primes"]);
    for (id, (_, result)) in &results {
        assert_eq!(reward(result), 1.0, "{id}: {result}");
        assert_eq!(result["metrics"]["correct"], true, "{id}");
    }
    // reward.json (two keys) wins over reward.txt for `primes`.
    assert_eq!(
        results["primes"].1["meta"]["benchmark"]["harbor"]["rewards"]["coverage"],
        1.0
    );
}

#[test]
fn a_do_nothing_agent_scores_zero_and_a_pre_written_reward_is_ignored() {
    let h = harbor();
    let out = h
        .run(
            &examples(),
            "cli_agent",
            &["--harness-params", r#"{"command": "true"}"#],
            &[],
        )
        .expect_code(0);
    for (id, (_, result)) in results(&run_dir(&out)) {
        assert_eq!(reward(&result), 0.0, "{id}: {result}");
    }

    let cheat = json!({"command": "mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt && echo '{\"reward\": 1}' > /logs/verifier/reward.json"});
    let out = h
        .run(
            &examples().join("hello-file"),
            "cli_agent",
            &["--harness-params", &cheat.to_string()],
            &[],
        )
        .expect_code(0);
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
    let out = h.run(&task, "oracle", &[], &[]).expect_code(0);
    let (_, result) = &results(&run_dir(&out))["huge-timeouts"];
    assert_eq!(reward(result), 1.0, "{result}");
    // A fresh verifier environment with a huge build timeout opens and scores too (0: it
    // sees only the collected artifacts, and hello.txt is not one).
    let fresh = format!("{toml}\n[verifier.environment]\nbuild_timeout_sec = 1e300\n");
    fs::write(task.join("task.toml"), fresh).unwrap();
    let out = h.run(&task, "oracle", &[], &[]).expect_code(0);
    let (_, result) = &results(&run_dir(&out))["huge-timeouts"];
    assert_eq!(reward(result), 0.0, "{result}");
    assert_eq!(result["issues"], json!([]), "{result}");
}

/// Tasks whose own policy the provider cannot enforce: when none of them can run, the run is
/// refused before its first task (one line, exit 2, the sandbox suggested, nothing written)
/// instead of failing every task (issue 36).
#[test]
fn tasks_that_cannot_run_on_the_environment_are_refused_before_the_first() {
    let h = harbor();
    let params = json!({"path": examples()}).to_string();
    let plugins = h.plugins.to_str().unwrap();
    let args = [
        "--plugin-dir",
        plugins,
        "run",
        "harbor",
        "oracle",
        "m",
        "--benchmark-params",
        &params,
        "--env",
        "host_process",
        "--progress",
        "none",
    ];
    let out = h.ws.run_expect(2, &args, &[]);
    assert_eq!(out.stdout, "");
    insta::assert_snapshot!("tasks_that_cannot_run_on_host_process", out.stderr);
    assert!(!h.ws.cwd.join("results").exists());
}

#[test]
fn a_task_with_its_own_dockerfile_never_runs_silently_on_the_host_root() {
    // Where no engine can build it (the sandbox's `image_builder` is missing): refused before
    // the first task (one line naming the engines and the opt-in), nothing written; with
    // `host_root` the user's choice runs it on the host root. (Where Podman is, the sandbox
    // builds it: e2e `sandbox_images`.)
    let h = harbor();
    let task = repo_root().join("examples/harbor-features/dockerfile-build");
    let no_builder = ["--env-params", r#"{"image_builder": "no-such-builder"}"#];
    let out = h.run(&task, "oracle", &no_builder, &[]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(out.stdout, "");
    let refusal = out
        .stderr
        .lines()
        .find(|l| l.contains("Dockerfile"))
        .unwrap_or_default();
    assert!(
        refusal.contains(
            "is not on this machine; install Podman, or run it with --env docker or --env \
             podman, or on the host's root filesystem with --env-params '{\"host_root\": true}'"
        ),
        "{out:?}"
    );
    assert!(!h.ws.cwd.join("results").exists());
    let chosen = ["--env-params", r#"{"host_root": true}"#];
    let out = h.run(&task, "oracle", &chosen, &[]);
    // The host has no `greet`: the task runs, and fails as it must on the host root.
    let (_, result) = &results(&run_dir(&out))["dockerfile-build"];
    assert_eq!(reward(result), 0.0, "{result}");
}

#[test]
fn health_checks_gate_the_agent_as_in_harbor() {
    // examples/harbor-features: the environment's check passes once, before the first step;
    // step `use`'s passes after its setup.sh's "service" is ready (retried within its start
    // period), so its agent finds it; a check that never passes stops the task before its
    // agent, as the task's environment issue naming the command and its output. (Their
    // `docker_image` is the host root here, by the user's choice: the sandbox would pull it;
    // e2e `sandbox_images` runs them in their image.)
    let h = harbor();
    let params = json!({
        "path": repo_root().join("examples/harbor-features"),
        "sample_ids": ["step-healthcheck", "healthcheck-fails"],
    })
    .to_string();
    let args = pack_run(
        &h.plugins,
        ["harbor", "oracle", "m"],
        &params,
        &[
            "--env",
            "sandbox",
            "--env-params",
            r#"{"host_root": true}"#,
            "--progress",
            "none",
        ],
    );
    let out = h.ws.run(&args, &[]);
    assert_eq!(out.code, 1, "{out:?}");
    let published = results(&run_dir(&out));
    let (_, passed) = &published["step-healthcheck"];
    let steps = steps_of(passed);
    assert_eq!(step_names(&steps), ["start", "use"], "{passed}");
    for step in &steps {
        assert_eq!(step["metrics"]["reward"], 1.0, "{step}");
    }
    let (_, failed) = &published["healthcheck-fails"];
    let issue = &failed["issues"][0];
    assert_eq!(issue["code"], "prepare_failed", "{failed}");
    let message = issue["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(
            "the environment's healthcheck `echo 'database is not up' && test -f \
             /app/database.ready` failed after 2 consecutive retries (exit 1): database is not up"
        ),
        "{message}"
    );
    assert!(
        failed["trajectory"].as_array().is_none_or(Vec::is_empty),
        "{failed}"
    );
}

#[test]
fn dry_run_and_plan_print_the_load_warnings_a_run_prints_and_count_image_builds() {
    let h = harbor();
    // Two of the features' tasks build their own image; one task here has a warning.
    let tasks = h.ws.cwd.join("tasks");
    let copy = |name: &str| {
        let from = repo_root().join("examples/harbor-features").join(name);
        let status = std::process::Command::new("cp")
            .arg("-r")
            .arg(&from)
            .arg(tasks.join(name))
            .status()
            .unwrap();
        assert!(status.success());
    };
    fs::create_dir_all(&tasks).unwrap();
    copy("dockerfile-build");
    copy("prebuilt-image");
    let toml = tasks.join("prebuilt-image/task.toml");
    let text = fs::read_to_string(&toml)
        .unwrap()
        .replace("[environment]\n", "[environment]\ngpu_types = [\"H100\"]\n");
    fs::write(&toml, text).unwrap();
    let warning = "warning: task prebuilt-image: ";
    let params = json!({"path": tasks}).to_string();
    let env = ["--env-params", r#"{"host_root": true}"#, "--dry-run"];
    let args = pack_run(
        &h.plugins,
        ["harbor", "oracle", "m"],
        &params,
        &[&["--env", "sandbox"][..], &env[..]].concat(),
    );
    let out = h.ws.run(&args, &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let printed: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(printed["selected_tasks"], 2, "{printed}");
    assert_eq!(printed["image_builds"]["tasks_building"], 1, "{printed}");
    assert_eq!(printed["image_builds"]["distinct"], 1, "{printed}");
    let line = out.stderr.lines().find(|l| l.starts_with(warning));
    assert!(
        line.is_some_and(|l| l.contains("field `environment.gpu_types` is not supported")),
        "{out:?}"
    );
    // `plan` of that task prints the same line.
    let plugins = h.plugins.to_str().unwrap();
    let plan = [
        "--plugin-dir",
        plugins,
        "plan",
        "harbor",
        "oracle",
        "m",
        "--benchmark-params",
        &params,
        "--env",
        "sandbox",
        "--task",
        "prebuilt-image",
    ];
    let out = h.ws.run(&plan, &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stderr.contains(line.unwrap()), "{out:?}");
    // A field the host does not act on that changes what the task measures refuses it: the
    // same line, and `plan` of it fails naming the field.
    let text = fs::read_to_string(&toml).unwrap().replace(
        "gpu_types = [\"H100\"]",
        "tpu = { type = \"v5\", topology = \"2x2\" }",
    );
    fs::write(&toml, text).unwrap();
    let out = h.ws.run(&plan, &[]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains(
            "field `environment.tpu` is not supported (no environment here has TPUs); the \
             task is not run without it"
        ),
        "{out:?}"
    );
    assert!(!h.ws.cwd.join("results").exists());
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A task's declared `artifacts` are collected by default, as Harbor collects them (issue 58):
/// no `save_artifacts` execution parameter, a verifier in the task's own environment, and the
/// attempt still holds `artifacts/` (the declared `/app/out` and the `/logs/artifacts`
/// convention directory) with its manifest.
#[test]
fn declared_artifacts_are_saved_by_default() {
    let h = harbor();
    let task = h.ws.root().join("tasks/declares-artifacts");
    fs::create_dir_all(task.join("solution")).unwrap();
    fs::create_dir_all(task.join("tests")).unwrap();
    let toml = "schema_version = \"1.4\"\nartifacts = [\"/app/out\"]\n\n[agent]\n\
                timeout_sec = 30.0\n\n[verifier]\ntimeout_sec = 30.0\n\n[environment]\n\
                workdir = \"/app\"\nnetwork_mode = \"no-network\"\n";
    fs::write(task.join("task.toml"), toml).unwrap();
    fs::write(
        task.join("instruction.md"),
        "Write 42 to /app/out/answer.txt.\n",
    )
    .unwrap();
    let solve = "#!/bin/bash\nmkdir -p /app/out /logs/artifacts\necho 42 > /app/out/answer.txt\n\
                 echo note > /logs/artifacts/note.txt\n";
    fs::write(task.join("solution/solve.sh"), solve).unwrap();
    let test = "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n";
    fs::write(task.join("tests/test.sh"), test).unwrap();
    let out = h
        .run(task.parent().unwrap(), "oracle", &[], &[])
        .expect_code(0);
    let (attempt, result) = &results(&run_dir(&out))["declares-artifacts"];
    assert_eq!(reward(result), 1.0, "{result}");
    let answer = attempt.join("artifacts/app/out/answer.txt");
    let bytes = fs::read(&answer).unwrap_or_else(|e| panic!("{}: {e}", answer.display()));
    assert_eq!(bytes, b"42\n");
    let note = fs::read(attempt.join("artifacts/logs/artifacts/note.txt")).unwrap();
    assert_eq!(note, b"note\n");
    let manifest = read_json(&attempt.join("artifacts.manifest.json"));
    let sources: Vec<&str> = manifest["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["status"] == "collected")
        .filter_map(|e| e["source"].as_str())
        .collect();
    assert_eq!(sources, ["/logs/artifacts", "/app/out"], "{manifest:#}");
}

#[test]
fn a_fresh_verifier_sees_exactly_the_collected_artifacts() {
    let h = harbor();
    let out = h
        .run(
            &fixture("fresh-artifacts"),
            "oracle",
            &["--execution-params", r#"{"save_artifacts": true}"#],
            &[],
        )
        .expect_code(0);
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
    let out = h
        .run(
            &fixture("phase-env"),
            "oracle",
            &[],
            &[
                ("E2E_GRADER_MODE", "strict"),
                ("E2E_SOLUTION_TOKEN", "solution-token"),
            ],
        )
        .expect_code(0);
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
    let out = h
        .run(
            &examples(),
            "terminus",
            &[
                "--model-base-url",
                &base_url,
                "--model-api-key",
                "${E2E_TERMINUS_KEY}",
            ],
            &[("E2E_TERMINUS_KEY", &key)],
        )
        .expect_code(0);
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

/// The `steps` records of an attempt's `result.json` (`meta.benchmark.steps`).
fn steps_of(result: &Value) -> Vec<Value> {
    result["meta"]["benchmark"]["steps"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The names of `steps`.
fn step_names(steps: &[Value]) -> Vec<&str> {
    steps.iter().map(|s| s["name"].as_str().unwrap()).collect()
}

#[test]
fn multi_step_tasks_run_each_step_in_one_environment_and_score_by_their_strategy() {
    let h = harbor();
    // mean (the default): per-key means over the steps, a key a step lacks counting 0.
    let out = h
        .run(&fixture("multi-step-mean"), "oracle", &[], &[])
        .expect_code(0);
    let (attempt, result) = &results(&run_dir(&out))["multi-step-mean"];
    assert_eq!(reward(result), 0.75, "(1 + 0.5) / 2: {result}");
    // Rewards the contract does not declare stay in meta (upstream refuses undeclared metrics).
    assert_eq!(
        result["meta"]["benchmark"]["harbor"]["rewards"]["carried"], 0.5,
        "(0 + 1) / 2: {result}"
    );
    assert!(result["metrics"].get("carried").is_none(), "{result}");
    assert_eq!(result["metrics"]["correct"], false);
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(
        result["meta"]["benchmark"]["harbor"]["multi_step_reward_strategy"],
        "mean"
    );
    let steps = steps_of(result);
    assert_eq!(step_names(&steps), ["one", "two"]);
    // Step one saw its staged workdir/ and setup.sh; step two saw step one's file (its
    // solution copies it) and not step one's tests.
    assert_eq!(steps[0]["metrics"]["reward"], 1.0, "{steps:?}");
    assert_eq!(steps[1]["metrics"]["reward"], 0.5, "{steps:?}");
    assert_eq!(
        steps[1]["extra"]["harbor"]["rewards"]["carried"], 1.0,
        "{steps:?}"
    );
    for step in &steps {
        assert_eq!(step["status"], "completed", "{step}");
        assert_eq!(step["evaluated"], true, "{step}");
        assert!(step["started_at"].is_string() && step["duration_seconds"].is_number());
        assert!(step.get("stop_reason").is_none(), "{step}");
    }
    // Per-step results beside the attempt's; no snapshot or checkpoint is left.
    for name in ["one", "two"] {
        let step_result =
            agentcompass_e2e::read_json(&attempt.join("steps").join(name).join("result.json"));
        assert_eq!(step_result["step"]["name"], name);
        assert_eq!(
            step_result["trajectory"]["steps"].as_array().unwrap().len(),
            1
        );
        assert!(!attempt.join("steps").join(name).join("workdir").exists());
    }
    assert!(!attempt.join("steps/checkpoint.json").exists());
    // The attempt's trajectory is the steps' in order.
    assert_eq!(result["trajectory"]["steps"].as_array().unwrap().len(), 2);

    // final: the last step's rewards as they are.
    let out = h
        .run(&fixture("multi-step-final"), "oracle", &[], &[])
        .expect_code(0);
    let (_, result) = &results(&run_dir(&out))["multi-step-final"];
    assert_eq!(reward(result), 0.5, "{result}");
    assert_eq!(
        result["meta"]["benchmark"]["harbor"]["rewards"]["carried"], 1.0,
        "{result}"
    );
    assert_eq!(step_names(&steps_of(result)), ["one", "two"]);
}

#[test]
fn a_step_below_its_min_reward_stops_the_remaining_steps() {
    let h = harbor();
    let out = h
        .run(&fixture("multi-step-gated"), "oracle", &[], &[])
        .expect_code(0);
    let (attempt, result) = &results(&run_dir(&out))["multi-step-gated"];
    let steps = steps_of(result);
    assert_eq!(step_names(&steps), ["one"], "step two never ran: {result}");
    assert_eq!(
        steps[0]["stop_reason"],
        "step `one`: reward=0 below min_reward 1"
    );
    assert_eq!(reward(result), 0.0, "{result}");
    assert_eq!(
        result["status"], "completed",
        "a stop is a score, not an error"
    );
    assert!(!attempt.join("steps/two").exists());
}

/// A step's own `[steps.agent] timeout_sec` applies to that step only: step `slow` (1 s)
/// stops its 30 s solution, step `quick` ran under the task's 60 s.
#[test]
fn a_step_runs_under_its_own_agent_timeout() {
    let h = harbor();
    let started = Instant::now();
    let out = h.run(&fixture("multi-step-timeouts"), "oracle", &[], &[]);
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "the 1 s step timeout stopped the 30 s solution: {:?}",
        started.elapsed()
    );
    let (_, result) = &results(&run_dir(&out))["multi-step-timeouts"];
    let steps = steps_of(result);
    assert_eq!(step_names(&steps), ["quick", "slow"], "{result}");
    assert!(
        steps[0]["issues"].as_array().is_none_or(|i| i.is_empty()),
        "{result}"
    );
    let slow = steps[1]["issues"].to_string();
    assert!(slow.contains("hit the run timeout (1s)"), "{slow}");
}

/// Every path under `root` whose file name is `name`.
fn find_named(root: &Path, name: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.file_name().is_some_and(|n| n == name) {
                found.push(path.clone());
            }
            if path.is_dir() && !path.is_symlink() {
                stack.push(path);
            }
        }
    }
    found
}

#[test]
fn an_interrupted_multi_step_attempt_resumes_after_its_finished_steps() {
    let h = harbor();
    let params = json!({"path": fixture("multi-step-mean")}).to_string();
    let args = |env_params: &str| -> Vec<String> {
        [
            "--no-bundled-plugins",
            "--plugin-dir",
            h.plugins.to_str().unwrap(),
            "run",
            "harbor",
            "oracle",
            "scripted-model",
            "--benchmark-params",
            &params,
            "--env",
            "sandbox",
            "--env-params",
            env_params,
            "--progress",
            "none",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    // Step two's solution sleeps: the host is killed once step one's checkpoint is written.
    let mut child = std::process::Command::new(agentcompass_e2e::host_bin())
        .current_dir(&h.ws.cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &h.ws.home)
        .args(args(r#"{"env_variables": {"STEP_TWO_SLEEP": "50"}}"#))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let checkpoint = loop {
        if let Some(found) = find_named(&h.ws.cwd, "checkpoint.json")
            .into_iter()
            .find(|p| p.parent().is_some_and(|d| d.ends_with("attempt-1/steps")))
        {
            break found;
        }
        assert!(
            started.elapsed() < Duration::from_secs(40),
            "no step checkpoint appeared"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    // The killed run's sandbox is left, and recorded for `env close`.
    let listed = h.ws.run(&["env", "list"], &[]);
    let records: Value = serde_json::from_str(&listed.stdout).unwrap();
    let left: Vec<PathBuf> = records
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["close_params"]["dir"].as_str().map(PathBuf::from))
        .collect();
    assert_eq!(left.len(), 1, "{records}");
    assert!(left[0].is_dir(), "{records}");
    let saved = agentcompass_e2e::read_json(&checkpoint);
    assert_eq!(saved["finished"][0]["name"], "one", "{saved}");
    assert!(checkpoint
        .with_file_name("one")
        .join("workdir/one.txt")
        .is_file());

    // The rerun restores step one's working directory and runs step two only.
    let out = h
        .run(&fixture("multi-step-mean"), "oracle", &["--reuse"], &[])
        .expect_code(0);
    let (attempt, result) = &results(&run_dir(&out))["multi-step-mean"];
    let steps = steps_of(result);
    assert_eq!(step_names(&steps), ["one", "two"], "{result}");
    assert_eq!(steps[0]["resumed"], true, "{steps:?}");
    assert!(steps[1].get("resumed").is_none(), "{steps:?}");
    // Step two found /app/one.txt, which only step one's (restored) work wrote.
    assert_eq!(steps[1]["metrics"]["reward"], 0.5, "{steps:?}");
    assert_eq!(reward(result), 0.75, "{result}");
    assert!(attempt.join("steps/one/result.json").is_file());
    assert!(!attempt.join("steps/one/workdir").exists());
    // And `env close --all` releases the killed run's sandbox.
    h.ws.run_ok(&["env", "close", "--all"], &[]);
    assert!(!left[0].exists(), "{}", left[0].display());
}

#[test]
fn each_phase_runs_under_its_own_network_policy_in_one_sandbox() {
    // [environment] public, [agent] allowlist 127.0.0.2, [verifier] no-network, two steps in
    // one sandbox: each step's setup.sh (the baseline: both servers), the agent (127.0.0.2
    // through the proxy, 403 for 127.0.0.3), the verifier (nothing); step two's setup.sh
    // shows the baseline back after step one's evaluation. The verifiers check every line.
    let port = agentcompass_e2e::two_loopback_servers().to_string();
    let h = harbor();
    let out = h
        .run(
            &fixture("phase-network"),
            "oracle",
            &[],
            &[("E2E_NET_PORT", port.as_str())],
        )
        .expect_code(0);
    let (_, result) = &results(&run_dir(&out))["phase-network"];
    assert_eq!(result["status"], "completed", "{result}");
    let steps = steps_of(result);
    assert_eq!(step_names(&steps), ["one", "two"]);
    for step in &steps {
        assert_eq!(step["metrics"]["reward"], 1.0, "{step}");
    }
    assert_eq!(reward(result), 1.0, "{result}");
    // The proxy's token (of a proxy started by the switch) is a secret: the agent's output
    // that shows it is persisted scrubbed.
    let shown = result["trajectory"].to_string();
    assert!(
        shown.contains("proxy=http://agent:********@127.0.0.1:3128"),
        "{shown}"
    );
}

#[test]
fn an_allowlist_by_name_reaches_a_name_of_the_runtime_egress_hosts() {
    // [agent] allowlist `models.internal`, a name only the runtime option
    // `runtime.egress.hosts` maps (to 127.0.0.2): the agent reaches that server through the
    // proxy, `other.internal` (127.0.0.3 there) is refused with 403, a direct connection
    // reaches nothing. Without the option the name does not resolve: reward 0.
    let port = agentcompass_e2e::two_loopback_servers().to_string();
    let h = harbor();
    let config = h.ws.write(
        "cfg/egress.toml",
        "[runtime.egress.hosts]\n\"models.internal\" = \"127.0.0.2\"\n\
         \"other.internal\" = \"127.0.0.3\"\n",
    );
    let env = [("E2E_NET_PORT", port.as_str())];
    let config = config.to_str().unwrap();
    let out = h
        .run(
            &fixture("egress-hosts-network"),
            "oracle",
            &["--config", config],
            &env,
        )
        .expect_code(0);
    let (_, result) = &results(&run_dir(&out))["egress-hosts-network"];
    assert_eq!(reward(result), 1.0, "{result}");
    let out = h
        .run(&fixture("egress-hosts-network"), "oracle", &[], &env)
        .expect_code(0);
    let (_, result) = &results(&run_dir(&out))["egress-hosts-network"];
    assert_eq!(reward(result), 0.0, "{result}");
}

#[test]
fn artifact_commands_run_on_the_baseline_after_the_run_phase() {
    // [environment] public, [agent] no-network: the agent cannot reach 127.0.0.2 (reward 1
    // says so), the [[verifier.collect]] command after the run phase can (the baseline is
    // restored), and its output is a collected artifact.
    let port = agentcompass_e2e::two_loopback_servers().to_string();
    let h = harbor();
    let out = h
        .run(
            &fixture("collect-network"),
            "oracle",
            &["--execution-params", r#"{"save_artifacts": true}"#],
            &[("E2E_NET_PORT", port.as_str())],
        )
        .expect_code(0);
    let (attempt, result) = &results(&run_dir(&out))["collect-network"];
    assert_eq!(reward(result), 1.0, "the agent reached nothing: {result}");
    let collected = fs::read_to_string(attempt.join("artifacts/app/collected.txt")).unwrap();
    assert_eq!(
        collected, "ok",
        "the artifact command ran on the public baseline"
    );
}

#[test]
fn a_fresh_verifier_runs_under_the_evaluation_policy_even_when_it_is_the_runs() {
    // [verifier.environment] public (the fresh verifier's baseline), [agent] and [verifier]
    // no-network: the evaluation switches away from the fresh baseline.
    let port = agentcompass_e2e::two_loopback_servers().to_string();
    let h = harbor();
    let out = h
        .run(
            &fixture("fresh-network"),
            "oracle",
            &["--execution-params", r#"{"save_artifacts": true}"#],
            &[("E2E_NET_PORT", port.as_str())],
        )
        .expect_code(0);
    let (_, result) = &results(&run_dir(&out))["fresh-network"];
    assert_eq!(reward(result), 1.0, "{result}");
}

/// Writes `<dir>/steps/<name>/` with an instruction, a `solve.sh` and a `tests/test.sh`.
fn write_step(dir: &Path, name: &str, solve: &str, test: &str) {
    let step = dir.join("steps").join(name);
    fs::create_dir_all(step.join("solution")).unwrap();
    fs::create_dir_all(step.join("tests")).unwrap();
    fs::write(step.join("instruction.md"), format!("Step {name}.\n")).unwrap();
    fs::write(
        step.join("solution/solve.sh"),
        format!("#!/bin/bash\n{solve}\n"),
    )
    .unwrap();
    fs::write(step.join("tests/test.sh"), format!("#!/bin/bash\n{test}\n")).unwrap();
}

/// A reward of 1 when `condition` (a shell test) holds in the verifier, else 0.
fn reward_if(condition: &str) -> String {
    format!(
        "if {condition}; then echo 1 > /logs/verifier/reward.txt; else ls -laR /app; \
         echo 0 > /logs/verifier/reward.txt; fi"
    )
}

/// A multi-step task with a separate verifier — what Harbor 0.25's `harbor init NAME --task
/// --steps 2` writes (`[verifier] environment_mode = "separate"`) — runs as Harbor runs it
/// (`harbor/trial/multi_step.py`): each step's verifier in a fresh environment holding the
/// artifacts collected after that step, the agent's environment going on to the next step.
#[test]
fn a_multi_step_task_with_a_separate_verifier_runs_as_in_harbor() {
    let h = harbor();
    let task = h.ws.root().join("separate/two-steps");
    fs::create_dir_all(&task).unwrap();
    fs::write(
        task.join("task.toml"),
        "schema_version = \"1.4\"\nartifacts = [\"/app/out.txt\"]\n\n[verifier]\n\
         environment_mode = \"separate\"\ntimeout_sec = 60.0\n\n[environment]\n\
         workdir = \"/app\"\n\n[[steps]]\nname = \"one\"\n\n[[steps]]\nname = \"two\"\n",
    )
    .unwrap();
    // The agent leaves a file that is not an artifact: no verifier may see it.
    write_step(
        &task,
        "one",
        "echo one > /app/out.txt && echo agent-only > /app/scratch.txt",
        &reward_if("[ \"$(cat /app/out.txt)\" = one ] && [ ! -e /app/scratch.txt ]"),
    );
    // Step two builds on the agent environment step one left (its scratch file is there).
    write_step(
        &task,
        "two",
        "[ -e /app/scratch.txt ] && echo two >> /app/out.txt",
        &reward_if(
            "[ \"$(cat /app/out.txt)\" = \"$(printf 'one\\ntwo')\" ] && [ ! -e /app/scratch.txt ]",
        ),
    );
    let out = h
        .run(task.parent().unwrap(), "oracle", &[], &[])
        .expect_code(0);
    let (_, result) = &results(&run_dir(&out))["two-steps"];
    let steps = steps_of(result);
    assert_eq!(step_names(&steps), ["one", "two"], "{result}");
    for step in &steps {
        assert_eq!(step["metrics"]["reward"], 1.0, "{step}");
        assert_eq!(step["evaluated"], true, "{step}");
    }
    assert_eq!(reward(result), 1.0, "{result}");
}

/// Each step's verifier runs where the step says (Harbor's `[steps.verifier]`): step `two`
/// of a shared-verifier task chooses a separate verifier, which sees only step two's own
/// artifact (`/app/two.txt`), collected after step two into that step's directory (issue 54).
#[test]
fn a_step_chooses_its_verifier_and_its_artifacts_reach_it() {
    let h = harbor();
    let tasks = h.ws.root().join("per-step");
    let mixed = tasks.join("mixed-steps");
    agentcompass_e2e::copy_tree(&fixture("multi-step-mean"), &mixed);
    let toml = fs::read_to_string(mixed.join("task.toml"))
        .unwrap()
        .replace(
            "[[steps]]\nname = \"two\"\n",
            "[[steps]]\nname = \"two\"\nartifacts = [\"/app/two.txt\"]\n\
         verifier = { environment_mode = \"separate\" }\n",
        );
    assert!(toml.contains("environment_mode"), "{toml}");
    fs::write(mixed.join("task.toml"), toml).unwrap();
    let out = h.run(&tasks, "oracle", &[], &[]).expect_code(0);
    let (attempt, result) = &results(&run_dir(&out))["mixed-steps"];
    let steps = steps_of(result);
    assert_eq!(steps[0]["metrics"]["reward"], 1.0, "{steps:?}");
    assert_eq!(steps[1]["metrics"]["reward"], 0.5, "{steps:?}");
    assert_eq!(reward(result), 0.75, "{result}");
    // Step two's own artifact is in its directory, not step one's.
    let step_two = attempt.join("steps/two/artifacts/app/two.txt");
    assert_eq!(fs::read_to_string(&step_two).unwrap(), "one\n");
    assert!(!attempt.join("steps/one/artifacts/app/two.txt").exists());
    assert!(attempt.join("steps/two/artifacts.manifest.json").is_file());
}

/// A well-formed task this host cannot run — a step verifier environment declaring its own
/// resources — is that task's `unsupported` issue while the others run (issue 36), and a run
/// of nothing else is refused before its first task.
#[test]
fn a_task_this_host_cannot_run_is_its_own_unsupported_issue_while_the_others_run() {
    let h = harbor();
    let tasks = h.ws.root().join("mixed");
    agentcompass_e2e::copy_tree(&examples().join("hello-file"), &tasks.join("hello-file"));
    let mixed = tasks.join("mixed-steps");
    agentcompass_e2e::copy_tree(&fixture("multi-step-mean"), &mixed);
    let mut toml = fs::read_to_string(mixed.join("task.toml")).unwrap();
    toml.push_str("\n[steps.verifier.environment]\ncpus = 2\n");
    fs::write(mixed.join("task.toml"), toml).unwrap();
    let out = h.run(&tasks, "oracle", &[], &[]).expect_code(1);
    let results = results(&run_dir(&out));
    assert_eq!(reward(&results["hello-file"].1), 1.0, "{out:?}");
    let refused = &results["mixed-steps"].1;
    let issues = refused["issues"].to_string();
    assert!(issues.contains("\"code\":\"unsupported\""), "{issues}");
    assert!(
        issues.contains("field `steps[1].verifier.environment.cpus/memory_mb/storage_mb/gpus`"),
        "{issues}"
    );
    // Alone, it is refused before anything runs.
    let out = h.run(&mixed, "oracle", &[], &[]).expect_code(2);
    assert_eq!(out.stdout, "");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("declare them on [verifier.environment]"),
        "{}",
        out.stderr
    );
}

/// An empty `[[verifier.collect]].command` runs as Harbor runs it (`bash -c ""`, a no-op):
/// the task is scored as usual, with a load warning naming the field (issue 36).
#[test]
fn an_empty_collect_command_is_a_no_op_as_in_harbor() {
    let h = harbor();
    let tasks = h.ws.root().join("empty-collect");
    let task = tasks.join("hello-file");
    agentcompass_e2e::copy_tree(&examples().join("hello-file"), &task);
    let mut toml = fs::read_to_string(task.join("task.toml")).unwrap();
    toml.push_str("\n[[verifier.collect]]\ncommand = \"\"\n");
    fs::write(task.join("task.toml"), toml).unwrap();
    let out = h.run(&tasks, "oracle", &[], &[]).expect_code(0);
    assert_eq!(
        reward(&results(&run_dir(&out))["hello-file"].1),
        1.0,
        "{out:?}"
    );
}
