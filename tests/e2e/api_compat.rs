//! Plugin-API compatibility: a plugin built against plugin API 0.1.0 (before 0.1.1 appended
//! `new_analyzer` to the root module) keeps loading in this host, is listed, and its component
//! is called in planning and in a real run.

use agentcompass_e2e::{example_plan, published_results, read_json, run_dir, task_dirs, Workspace};

/// The workspace (example pack, example recipe) plus the 0.1.0 fixture, packaged by the real
/// `plugin package` into the same plugin directory.
fn workspace_with_0_1_0_plugin() -> Workspace {
    let ws = Workspace::new();
    agentcompass_e2e::run_host([
        "plugin".as_ref(),
        "package".as_ref(),
        agentcompass_e2e::built_library("api-0-1-pack").as_os_str(),
        "--out".as_ref(),
        ws.plugins.as_os_str(),
    ])
    .expect_code(0);
    let manifest = std::fs::read_to_string(ws.plugins.join("api-0-1-pack.plugin.toml")).unwrap();
    assert!(manifest.contains("host_api = \"^0.1.0\""), "{manifest}");
    ws
}

#[test]
fn a_plugin_built_against_0_1_0_loads_and_its_recipe_applies() {
    let ws = workspace_with_0_1_0_plugin();
    let out = ws.run_ok(&["list", "recipe"], &[]);
    assert_eq!(out.stderr, "", "no refusal: {out:?}");
    assert!(
        out.stdout.contains("legacy_timeout") && out.stdout.contains("api-0-1-pack@0.1.0"),
        "{out:?}"
    );
    ws.run_ok(&["plugin", "verify", ws.plugins.to_str().unwrap()], &[]);

    let plan = ws.run_json(
        &example_plan("arith-0000", &["--recipe", "legacy_timeout"]),
        &[],
    );
    let resolved = &plan["resolved_execution_plan"];
    assert_eq!(
        resolved["applied_recipes"],
        serde_json::json!(["legacy_timeout"])
    );
    assert_eq!(resolved["run_timeout_seconds"], 1.0);

    // A real run: the calculator takes 3 s a task; under the recipe's 1 s timeout (no timer
    // compensation) every attempt is stopped with `run_timeout`, under the example recipe's
    // 60 s every answer is right.
    let run_with = |recipe: bool| {
        let mut args = vec![
            "run",
            "example_exact_match",
            "example_calculator",
            "m",
            "--benchmark-params",
            r#"{"size": 2}"#,
            "--harness-params",
            r#"{"delay_ms": 3000}"#,
            "--execution-params",
            r#"{"run_timer_compensation_seconds": 0}"#,
            "--progress",
            "none",
        ];
        // Every registered recipe applies unless a whitelist names some.
        let recipe = if recipe {
            "legacy_timeout"
        } else {
            "example_recipe"
        };
        args.extend(["--recipe", recipe]);
        let out = ws.run_ok(&args, &[]);
        run_dir(&out)
    };
    let timed_out = run_with(true);
    let errors = task_dirs(&timed_out, "error");
    assert_eq!(errors.len(), 2, "{errors:?}");
    for dir in errors {
        let result = read_json(&dir.join("attempt-1/result.json"));
        assert_eq!(result["issues"][0]["code"], "run_timeout", "{result}");
    }
    let plain = published_results(&run_with(false));
    assert_eq!(plain.len(), 2, "{plain:?}");
    for (_, result) in plain.values() {
        assert_eq!(result["metrics"]["correct"], true, "{result}");
    }
}
