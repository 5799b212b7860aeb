//! Harbor's own metrics of a run (issue 56), end to end with `oracle` in the sandbox: a
//! `multi-reward` task written as Harbor's cookbook recipe writes it (`reward.json` with
//! `correctness` and `performance`) reported per key — never as their mean — in
//! `metrics.json`, `summary.md` and on the terminal, with a `uv-script` metric computed by the
//! real `uv` (installed from its PyPI wheel into the install cache on first use) and a broken
//! script one warning; and pass@k of a k = 5 run equal to what Harbor 0.25's own
//! `_compute_pass_at_k_for_trials` computes from the same attempts' rewards.

use std::fs;
use std::path::{Path, PathBuf};

use agentcompass_e2e::{pack_run, published_results, run_dir, Packs, Workspace};
use serde_json::{json, Value};

fn required(var: &str) -> String {
    std::env::var(var)
        .unwrap_or_else(|_| panic!("{var} is not set: run the tests with ./dev.sh test"))
}

/// A Harbor task `name` under `dir` whose verifier runs `test` (bash) and whose solution does
/// nothing.
fn task(dir: &Path, name: &str, test: &str) {
    let task = dir.join(name);
    fs::create_dir_all(task.join("tests")).unwrap();
    fs::create_dir_all(task.join("solution")).unwrap();
    fs::write(
        task.join("task.toml"),
        format!(
            "schema_version = \"1.4\"\n\n[task]\nname = \"agentcompass/{name}\"\n\n\
             [verifier]\ntimeout_sec = 60.0\n\n[environment]\nworkdir = \"/app\"\n"
        ),
    )
    .unwrap();
    fs::write(task.join("instruction.md"), "Nothing to do.\n").unwrap();
    fs::write(task.join("solution/solve.sh"), "#!/bin/bash\ntrue\n").unwrap();
    fs::write(task.join("tests/test.sh"), format!("#!/bin/bash\n{test}\n")).unwrap();
}

/// The cookbook's `per_dimension.py`: no PEP 723 header, `-i rewards.jsonl -o metric.json`,
/// `null` lines skipped, each key's mean over the trials that have it.
const PER_DIMENSION: &str = r#"import argparse, json
parser = argparse.ArgumentParser()
parser.add_argument("-i", required=True)
parser.add_argument("-o", required=True)
args = parser.parse_args()
sums, counts = {}, {}
for line in open(args.i):
    rewards = json.loads(line)
    if rewards is None:
        continue
    for key, value in rewards.items():
        sums[key] = sums.get(key, 0) + value
        counts[key] = counts.get(key, 0) + 1
json.dump({key: sums[key] / counts[key] for key in sums}, open(args.o, "w"))
"#;

/// `oracle` on the tasks at `tasks` in the sandbox with `extra` flags and a fresh install
/// cache, pip pointed at the tests' wheels (no index).
fn oracle_run(ws: &Workspace, tasks: &Path, extra: &[&str]) -> agentcompass_e2e::Outcome {
    let plugins = Packs::harbor();
    let params = json!({"path": tasks}).to_string();
    let cache = ws.root().join("installs").display().to_string();
    let mut args = vec!["--install-cache-dir", cache.as_str()];
    args.extend(pack_run(
        &plugins,
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
    ));
    args.extend_from_slice(extra);
    let wheels = required("AGENTCOMPASS_TEST_WHEELS");
    ws.run(
        &args,
        &[("PIP_NO_INDEX", "1"), ("PIP_FIND_LINKS", wheels.as_str())],
    )
}

#[test]
fn a_multi_reward_task_is_reported_per_key_with_the_runs_uv_script_metric() {
    let ws = Workspace::new();
    let tasks = ws.root().join("tasks");
    task(
        &tasks,
        "multi-reward",
        "echo '{\"correctness\": 1, \"performance\": 0}' > /logs/verifier/reward.json",
    );
    let good = ws.write("metrics/per_dimension.py", PER_DIMENSION);
    let broken = ws.write(
        "metrics/broken.py",
        "import sys\nsys.exit('no metric today')\n",
    );
    let (good, broken) = (good.display().to_string(), broken.display().to_string());
    let out = oracle_run(
        &ws,
        &tasks,
        &["--metric-script", &good, "--metric-script", &broken],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let run = run_dir(&out);
    let metrics: Value =
        serde_json::from_str(&fs::read_to_string(run.join("metrics.json")).unwrap()).unwrap();
    let rows = metrics["extra"]["dataset_metrics"].as_array().unwrap();
    let per_key = json!({"correctness": 1.0, "performance": 0.0});
    assert_eq!(
        rows[0],
        json!({"dataset": "adhoc", "type": "mean", "value": per_key}),
        "{rows:?}"
    );
    assert_eq!(
        rows[1],
        json!({"dataset": "run", "type": "uv-script", "script": good, "value": per_key}),
        "{rows:?}"
    );
    assert_eq!(rows.len(), 2, "{rows:?}");
    // No mean of the two keys anywhere: the attempt has no `reward`.
    let results = published_results(&run);
    let (_, result) = results.values().next().unwrap();
    assert!(result["metrics"].get("reward").is_none(), "{result:#}");
    // One warning names the broken script; the terminal and summary.md show each key.
    let warnings: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("broken.py"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", out.stderr);
    assert!(warnings[0].contains("no metric today"), "{warnings:?}");
    assert!(
        out.stderr
            .contains("adhoc mean: correctness 1.0000 · performance 0.0000"),
        "{}",
        out.stderr
    );
    // The headline is not a mean of the keys.
    assert!(
        out.stderr
            .contains("reward (native@1): n/a (0/1 evaluated)"),
        "{}",
        out.stderr
    );
    let summary = fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(
        summary.contains("| run | uv-script | performance | 0.0000 |"),
        "{summary}"
    );
    // uv was installed into the install cache from its wheel.
    assert!(ws.root().join("installs/host/uv-0.9.7/bin/uv").is_file());
    // The report (the viewer's own front end, in chromium) shows each key.
    let report = ws.root().join("report.html");
    ws.run_ok(
        &[
            "report",
            run.to_str().unwrap(),
            "--out",
            report.to_str().unwrap(),
        ],
        &[],
    );
    let page = crate::viewer_browser::rendered(&crate::viewer_browser::dump_dom(&format!(
        "file://{}#/",
        report.display()
    )));
    assert!(page.contains("Harbor metrics"), "{page}");
    assert_eq!(
        page.matches("data-dataset-metric=\"performance\"").count(),
        2,
        "{page}"
    );
    eprintln!("multi-reward: {rows:?}");
}

/// The rewards of every attempt of every published task of `run`, as Harbor's table
/// (`task → [reward or null]`).
fn reward_table(run: &Path) -> Value {
    let mut table = serde_json::Map::new();
    for (name, (attempt, _)) in published_results(run) {
        let dir = attempt.parent().unwrap();
        let task: Value =
            serde_json::from_str(&fs::read_to_string(dir.join("task.json")).unwrap()).unwrap();
        let mut numbered: Vec<(u32, PathBuf)> = task["attempts"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(n, d)| (n.parse().unwrap(), dir.join(d.as_str().unwrap())))
            .collect();
        numbered.sort();
        let attempts: Vec<PathBuf> = numbered.into_iter().map(|(_, d)| d).collect();
        let rewards: Vec<Value> = attempts
            .iter()
            .map(|a| {
                let result: Value =
                    serde_json::from_str(&fs::read_to_string(a.join("result.json")).unwrap())
                        .unwrap();
                result["meta"]["benchmark"]["harbor"]["rewards"]["reward"].clone()
            })
            .collect();
        table.insert(name, Value::Array(rewards));
    }
    Value::Object(table)
}

/// Harbor 0.25's own pass@k of `table`.
fn harbors_pass_at_k(table: &Value) -> Value {
    let script = "import json,sys\nfrom types import SimpleNamespace as NS\n\
        from harbor.utils.pass_at_k import _compute_pass_at_k_for_trials as f\n\
        t=json.loads(sys.argv[1])\n\
        print(json.dumps(f([NS(task_name=k, verifier_result=None if r is None else \
        NS(rewards={'reward': r})) for k,rs in t.items() for r in rs])))\n";
    let out = std::process::Command::new(required("AGENTCOMPASS_HARBOR_PYTHON"))
        .args(["-c", script, &table.to_string()])
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn pass_at_k_equals_harbors_on_the_same_rewards() {
    let ws = Workspace::new();
    let tasks = ws.root().join("tasks");
    // Rewards 0 or 1 at random: the comparison is on whatever the attempts got.
    for name in ["coin-a", "coin-b", "coin-c"] {
        task(
            &tasks,
            name,
            "echo $((RANDOM % 2)) > /logs/verifier/reward.txt",
        );
    }
    task(&tasks, "always", "echo 1 > /logs/verifier/reward.txt");
    let out = oracle_run(&ws, &tasks, &["--k", "5", "--task-concurrency", "4"]);
    assert_eq!(out.code, 0, "{out:?}");
    let run = run_dir(&out);
    let table = reward_table(&run);
    assert_eq!(table.as_object().unwrap().len(), 4, "{table}");
    let harbor = harbors_pass_at_k(&table);
    let metrics: Value =
        serde_json::from_str(&fs::read_to_string(run.join("metrics.json")).unwrap()).unwrap();
    let ours = &metrics["extra"]["pass_at_k"];
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        keys(ours),
        keys(&harbor),
        "ours {ours}, Harbor's {harbor} on {table}"
    );
    for key in keys(&harbor) {
        let (a, b) = (ours[&key].as_f64().unwrap(), harbor[&key].as_f64().unwrap());
        assert!((a - b).abs() < 1e-12, "pass@{key}: ours {a}, Harbor's {b}");
    }
    assert!(out.stderr.contains("pass@2 "), "{}", out.stderr);
    eprintln!("pass@k over {table}: ours {ours}, Harbor's {harbor}");
}
