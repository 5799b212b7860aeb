//! `plugin new`: each generated kind builds on its own (a standalone crate, the workspace's
//! lock file copied in, `--offline`), passes its own unit tests, packages with `plugin
//! package`, loads with `--plugin-dir`, is listed, and runs.
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

/// The workspace root (`tests/..`).
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the workspace")
        .to_path_buf()
}

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
    let parent = ws.root().join("src");
    let out = run_host([
        "plugin".as_ref(),
        "new".as_ref(),
        name.as_ref(),
        "--kind".as_ref(),
        kind.as_ref(),
        "--path".as_ref(),
        parent.as_os_str(),
    ])
    .expect_code(0);
    // Built from this source tree: the API is a path dependency on it.
    let api = fs::canonicalize(workspace_root().join("plugin-api")).unwrap();
    assert!(
        out.stdout
            .contains(&format!("agentcompass-plugin-api: path {}", api.display())),
        "{out:?}"
    );
    let crate_dir = parent.join(name);
    for file in ["Cargo.toml", "README.md", "src/lib.rs"] {
        assert!(crate_dir.join(file).is_file(), "{file} missing");
    }
    fs::copy(
        workspace_root().join("Cargo.lock"),
        crate_dir.join("Cargo.lock"),
    )
    .expect("copy Cargo.lock");
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

    let listed = ws.run_json(&["list", kind, "--json"], &[]);
    let entry = find_element(&listed, "id", name);
    assert!(
        entry["source"]
            .as_str()
            .is_some_and(|s| s.starts_with(&format!("{name}@0.1.0 ("))),
        "{entry}"
    );
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
