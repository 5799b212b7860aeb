//! `plugin new`: each generated kind builds on its own (a standalone crate with the plugin
//! API the host was built with vendored in and the host's lock file, `--offline`; no path
//! leads back to this checkout), passes its own unit tests, packages with `plugin package`,
//! loads with `--plugin-dir`, is listed, and runs. The `verifier` benchmark template scores
//! its sample tasks in `sandbox`, `host_process` and `docker`: the reference solutions 1, a
//! wrong agent 0.5.
//!
//! The generated crates share one target directory (`<target>/plugin-new`), so the plugin
//! API and its dependencies are compiled once and reused by later runs.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use agentcompass_e2e::{
    entries_starting_with, example_plan, find_element, published_results, read_json, run_dir,
    run_host, target_dir, Workspace,
};

fn cargo(crate_dir: &Path, args: &[&str]) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let target = target_dir()
        .parent()
        .expect("target/<profile> has a parent")
        .join("plugin-new");
    let output = Command::new(cargo)
        .args(args)
        .args(["--offline", "--quiet"])
        .current_dir(crate_dir)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("run cargo");
    assert!(
        output.status.success(),
        "cargo {args:?} failed in {}:\n{}",
        crate_dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Generates plugin `name` of `kind` under the workspace's temp root, builds it, runs its unit
/// tests, packages it into the workspace's plugin dir and checks `list` shows it.
fn generate(ws: &Workspace, name: &str, kind: &str) {
    generate_with(ws, name, kind, name, &[]);
}

/// [`generate`] with `plugin new`'s `extra` arguments, registering component `id`.
fn generate_with(ws: &Workspace, name: &str, kind: &str, id: &str, extra: &[&str]) {
    let parent = ws.root().join("src");
    let words = ["plugin", "new", name, "--kind", kind];
    let mut args: Vec<&std::ffi::OsStr> = words.iter().map(|a| a.as_ref()).collect();
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    args.extend(["--path".as_ref(), parent.as_os_str()]);
    let out = run_host(args).expect_code(0);
    // The plugin API source the host was built with, vendored into the crate.
    assert!(
        out.stdout
            .contains("vendored in vendor/agentcompass-plugin-api (sha256 "),
        "{out:?}"
    );
    let crate_dir = parent.join(name);
    for file in ["Cargo.toml", "Cargo.lock", "README.md", "src/lib.rs"] {
        assert!(crate_dir.join(file).is_file(), "{file} missing");
    }
    assert_no_path_outside(&crate_dir);
    cargo(&crate_dir, &["build"]);
    cargo(&crate_dir, &["test"]);

    let library = target_dir()
        .parent()
        .unwrap()
        .join("plugin-new/debug")
        .join(format!("lib{}.so", name.replace('-', "_")));
    run_host([
        "plugin".as_ref(),
        "package".as_ref(),
        library.as_os_str(),
        "--out".as_ref(),
        ws.plugins.as_os_str(),
    ])
    .expect_code(0);
    run_host(["plugin".as_ref(), "verify".as_ref(), ws.plugins.as_os_str()]).expect_code(0);
    let manifest = fs::read_to_string(ws.plugins.join(format!("{name}.plugin.toml"))).unwrap();
    assert!(
        manifest.contains(&format!(
            "description = \"An agentcompass-host plugin ({kind})\""
        )),
        "the crate's description: {manifest}"
    );

    let listed = ws.run_json(&["list", kind, "--json"], &[]);
    let entry = find_element(&listed, "id", id);
    assert!(
        entry["source"]
            .as_str()
            .is_some_and(|s| s.starts_with(&format!("{name}@0.1.0 ("))),
        "{entry}"
    );
}

/// The triple rustc builds for on this machine (`host:` of `rustc -vV`).
fn host_triple() -> String {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = Command::new(rustc).arg("-vV").output().expect("rustc -vV");
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .find_map(|line| line.strip_prefix("host: "))
        .expect("rustc -vV names its host")
        .to_string()
}

/// Every package of the crate's build that is not from the registry lies inside the crate:
/// it builds without this checkout. The graph is this machine's platform's: offline, cargo
/// has only the packages a build here downloaded (not, say, `redox_syscall`).
fn assert_no_path_outside(crate_dir: &Path) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(["metadata", "--offline", "--format-version", "1"])
        .args(["--filter-platform", &host_triple()])
        .current_dir(crate_dir)
        .output()
        .expect("cargo metadata");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let local: Vec<&str> = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["source"].is_null())
        .map(|p| p["manifest_path"].as_str().unwrap())
        .collect();
    assert_eq!(local.len(), 2, "the plugin and its vendored API: {local:?}");
    let root = fs::canonicalize(crate_dir).unwrap();
    for manifest in local {
        assert!(
            Path::new(manifest).starts_with(&root),
            "{manifest} outside {}",
            root.display()
        );
    }
}

fn run_ok(ws: &Workspace, args: &[&str]) -> PathBuf {
    let mut all = args.to_vec();
    all.extend(["--progress", "none"]);
    let out = ws.run_ok(&all, &[]);
    run_dir(&out)
}

fn primary_value(run: &Path) -> serde_json::Value {
    read_json(&run.join("metrics.json"))["series"][0]["value"].clone()
}

#[test]
fn a_generated_benchmark_builds_loads_and_runs() {
    let ws = Workspace::new();
    generate(&ws, "pn-benchmark", "benchmark");
    let run = run_ok(&ws, &["run", "pn-benchmark", "example_calculator", "m"]);
    assert_eq!(primary_value(&run), 1.0);
    let results = published_results(&run);
    assert_eq!(results.len(), 3, "{results:?}");
    let (attempt, result) = &results["q-0001"];
    assert_eq!(result["final_answer"], "42");
    assert_eq!(result["metrics"]["correct"], true);
    let task = agentcompass_e2e::read_json(&attempt.parent().unwrap().join("task.json"));
    assert_eq!(task["ground_truth"], "42");

    let out = ws.run_ok(&["config", "docs", "benchmark", "pn-benchmark"], &[]);
    assert!(out.stdout.contains("case_sensitive"), "{out:?}");
}

#[test]
fn a_generated_harness_builds_loads_and_runs() {
    let ws = Workspace::new();
    generate(&ws, "pn-harness", "harness");
    let run = run_ok(
        &ws,
        &[
            "run",
            "example_exact_match",
            "pn-harness",
            "m",
            "--benchmark-params",
            r#"{"size": 2}"#,
        ],
    );
    let results = published_results(&run);
    assert_eq!(results.len(), 2, "{results:?}");
    for (_, result) in results.values() {
        assert_eq!(result["status"], "completed", "{result}");
        // It echoes the prompt (through `echo` in the task environment).
        let prompt = &result["trajectory"]["steps"][0]["user_content"];
        assert!(prompt.as_str().is_some_and(|p| p.starts_with("What is ")));
        assert_eq!(&result["final_answer"], prompt, "{result}");
        assert_eq!(result["metrics"]["correct"], false);
    }
}

#[test]
fn a_generated_environment_builds_loads_and_runs() {
    let ws = Workspace::new();
    generate(&ws, "pn-env", "env");
    // A harness-free benchmark whose tasks are shell commands in the environment.
    let run = run_ok(
        &ws,
        &[
            "run",
            "example_self_check",
            "none",
            "m",
            "--env",
            "pn-env",
            "--benchmark-params",
            r#"{"size": 3}"#,
        ],
    );
    assert_eq!(primary_value(&run), 1.0);
    let results = published_results(&run);
    assert_eq!(results.len(), 3);
    let run_info = read_json(&run.join("run_info.json"));
    assert!(run_info.to_string().contains("\"pn-env\""), "{run_info}");
    assert_eq!(
        fs::read_dir(run.join(".env-resources")).unwrap().count(),
        0,
        "every environment closed"
    );
    // The brief's pairing: a benchmark with a harness, in the new environment.
    let run = run_ok(
        &ws,
        &[
            "run",
            "example_exact_match",
            "example_calculator",
            "m",
            "--env",
            "pn-env",
        ],
    );
    assert_eq!(primary_value(&run), 1.0);
    let leftovers = entries_starting_with(&std::env::temp_dir(), "pn-env-");
    assert!(leftovers.is_empty(), "session dirs left: {leftovers:?}");
}

#[test]
fn a_generated_recipe_builds_loads_and_applies() {
    let ws = Workspace::new();
    generate(&ws, "pn-recipe", "recipe");
    let plan = ws.run_json(&example_plan("arith-0000", &["--recipe", "pn-recipe"]), &[]);
    let resolved = &plan["resolved_execution_plan"];
    assert_eq!(
        resolved["applied_recipes"],
        serde_json::json!(["pn-recipe"])
    );
    assert_eq!(resolved["run_timeout_seconds"], 300.0);
    // It matches only its benchmark.
    let plan = ws.run_json(
        &[
            "plan",
            "example_self_check",
            "none",
            "m",
            "--task",
            "self-0000",
            "--recipe",
            "pn-recipe",
        ],
        &[],
    );
    assert_eq!(
        plan["resolved_execution_plan"]["applied_recipes"],
        serde_json::json!([])
    );
}

#[test]
fn a_generated_analyzer_builds_loads_and_analyzes() {
    let ws = Workspace::new();
    generate(&ws, "pn-analyzer", "analyzer");
    // Its default limit (1000 characters) flags nothing; `max_chars: 1` flags every
    // two-digit answer and no one-digit one.
    let run = run_ok(
        &ws,
        &[
            "run",
            "example_exact_match",
            "example_calculator",
            "m",
            "--analysis-params",
            r#"{"pn-analyzer": {"max_chars": 1}}"#,
        ],
    );
    let results = published_results(&run);
    assert_eq!(results.len(), 5, "{results:?}");
    let mut flagged = 0;
    for (id, (_, result)) in &results {
        let answer = result["final_answer"].as_str().unwrap();
        let outcome = &result["analysis_result"]["pn-analyzer"];
        assert_eq!(
            outcome["is_badcase"],
            answer.chars().count() > 1,
            "{id}: {outcome}"
        );
        assert_eq!(outcome["details"]["max_chars"], 1, "{outcome}");
        flagged += usize::from(answer.chars().count() > 1);
    }
    let summary = read_json(&run.join("analysis_summary.json"));
    let row = find_element(&summary["overall_per_analyzer"], "analyzer", "pn-analyzer");
    assert_eq!(row["badcase_count"], flagged, "{row}");
    assert_eq!(row["total"], 5, "{row}");
    // A wrong option type is one line, exit 2, before anything runs.
    let out = ws.run_expect(
        2,
        &[
            "run",
            "example_exact_match",
            "example_calculator",
            "m",
            "--analysis-params",
            r#"{"pn-analyzer": {"max_chars": "ten"}}"#,
        ],
        &[],
    );
    assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
    assert!(out.stderr.contains("pn-analyzer.max_chars"), "{out:?}");
}

#[test]
fn bad_names_and_existing_directories_are_one_line_errors() {
    let ws = Workspace::new();
    let parent = ws.root().join("src");
    let new = |name: &str| {
        run_host([
            "plugin".as_ref(),
            "new".as_ref(),
            name.as_ref(),
            "--kind".as_ref(),
            "recipe".as_ref(),
            "--path".as_ref(),
            parent.as_os_str(),
        ])
    };
    for (name, needle) in [
        (
            "My-Pack",
            "invalid plugin name `My-Pack`: use lowercase letters",
        ),
        ("9lives", "invalid plugin name `9lives`"),
        ("../up", "invalid plugin name `../up`"),
        ("fn", "invalid plugin name `fn`: it is reserved"),
    ] {
        let out = new(name);
        assert_eq!(out.code, 2, "{out:?}");
        assert_eq!(out.stdout, "");
        assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
        assert!(out.stderr.starts_with("error: "), "{out:?}");
        assert!(out.stderr.contains(needle), "{out:?}");
    }
    assert!(!parent.exists(), "nothing written for a bad name");
    assert_eq!(new("ok-pack").code, 0);
    let out = new("ok-pack");
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        format!(
            "error: {} already exists; choose another name or --path\n",
            parent.join("ok-pack").display()
        )
    );
}

/// The `verifier` template's reference solutions (`oracle`) score 1 and a wrong agent 0.5 on
/// its two sample tasks, in `env_args`.
fn verifier_scores(ws: &Workspace, packs: &Path, env_args: &[&str]) {
    let wrong = r#"{"command": "echo Hello > hello.txt; printf '3\n2\n1\n' > count.txt"}"#;
    for (harness, extra, reward) in [
        ("oracle", &[][..], 1.0),
        ("cli_agent", &["--harness-params", wrong][..], 0.5),
    ] {
        let mut args = vec![
            "--plugin-dir",
            packs.to_str().unwrap(),
            "run",
            "checks",
            harness,
        ];
        args.extend(["m", "--progress", "none"]);
        args.extend_from_slice(env_args);
        args.extend_from_slice(extra);
        let run = run_dir(&ws.run_ok(&args, &[]));
        let results = published_results(&run);
        let mut ids: Vec<&String> = results.keys().collect();
        ids.sort();
        assert_eq!(ids, ["count", "greeting"], "{env_args:?}");
        for (id, (_, result)) in &results {
            assert_eq!(
                result["metrics"]["reward"], reward,
                "{harness} {id} {env_args:?}: {result}"
            );
        }
    }
}

#[test]
fn a_generated_verifier_builds_alone_and_scores_in_sandbox_host_process_and_docker() {
    let ws = Workspace::new();
    generate_with(
        &ws,
        "pn-verifier",
        "benchmark",
        "checks",
        &["--template", "verifier", "--id", "checks"],
    );
    let packs = agentcompass_e2e::Packs::new(&["agents-pack", "docker-provider"]);
    verifier_scores(&ws, &packs, &["--env", "sandbox"]);
    verifier_scores(&ws, &packs, &["--env", "host_process"]);
    let required = |var: &str| {
        std::env::var(var).unwrap_or_else(|_| panic!("{var} is not set: run ./dev.sh test"))
    };
    let params = serde_json::json!({
        "docker_host": required("AGENTCOMPASS_TEST_DOCKER_HOST"),
        "setup": {"image": required("AGENTCOMPASS_TEST_AGENT_IMAGE")},
    })
    .to_string();
    verifier_scores(&ws, &packs, &["--env", "docker", "--env-params", &params]);
    // The metric contract and evaluation mode are documented with the parameters.
    let out = ws.run_ok(&["config", "docs", "benchmark", "checks"], &[]);
    for needle in ["tasks_dir", "test_timeout_seconds", "reward", "reuse"] {
        assert!(out.stdout.contains(needle), "{needle}: {}", out.stdout);
    }
}
