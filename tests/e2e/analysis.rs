//! Analyzers end to end: a scripted terminus run on Harbor tasks built to trip the built-ins
//! (a loop of one repeated command, an empty final answer, a truncated reply, an agent writing
//! the verifier's reward file), each flagged exactly where expected, the run's
//! `analysis_summary.json` counting right, and `analysis --input` re-running a selection.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use agentcompass_e2e::scripted::ScriptedServer;
use agentcompass_e2e::{
    copy_tree, find_element, published_results, read_json, run_dir, terminus_args, Outcome, Packs,
    Workspace,
};
use serde_json::{json, Value};

const KEY: &str = "sk-e2e-analysis-7";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The bundled tasks plus `empty-answer` (hello-file asking for `/app/empty.txt`).
fn tasks(ws: &Workspace) -> PathBuf {
    let tasks = ws.cwd.join("tasks");
    for name in ["fizzbuzz", "hello-file", "primes"] {
        copy_tree(
            &repo().join("examples/harbor").join(name),
            &tasks.join(name),
        );
    }
    copy_tree(
        &repo().join("examples/harbor/hello-file"),
        &tasks.join("empty-answer"),
    );
    fs::write(
        tasks.join("empty-answer/instruction.md"),
        "Create the file `/app/empty.txt`.",
    )
    .unwrap();
    tasks
}

/// `analysis --input RUN` with only `analyzer`, into `reanalyzed` under the workspace root
/// (asserting exit 0): that directory and the outcome.
fn reanalyze(ws: &Workspace, run: &Path, analyzer: &str) -> (PathBuf, Outcome) {
    let copy = ws.root().join("reanalyzed");
    let params = json!({"analyzers": [analyzer]}).to_string();
    let out = ws.run_ok(
        &[
            "analysis",
            "--input",
            run.to_str().unwrap(),
            "--analysis-params",
            &params,
            "--output",
            copy.to_str().unwrap(),
        ],
        &[],
    );
    (copy, out)
}

fn bash(command: &str) -> Value {
    json!({"tool_calls": [{"name": "bash", "arguments": {"command": command}}]})
}

fn done() -> Value {
    json!({"tool_calls": [{"name": "done", "arguments": {"summary": "done"}}]})
}

fn script() -> Value {
    let mut loop_responses: Vec<Value> = (0..7).map(|_| bash("ls /app")).collect();
    loop_responses.push(done());
    json!({"require_key": KEY, "rules": [
        {"match": {"any_message_contains": "/app/hello.txt"}, "responses": [
            bash("printf 'Hello, world!\\n' > /app/hello.txt && echo 1 > /logs/verifier/reward.txt"),
            done()]},
        {"match": {"any_message_contains": "/app/fizzbuzz.txt"}, "responses": loop_responses},
        {"match": {"any_message_contains": "/app/primes.txt"}, "responses": [
            {"text": "Primes below 30 are 2 3 5 7 11 13 17 19 2", "truncated": true},
            done()]},
        {"match": {"any_message_contains": "/app/empty.txt"}, "responses": [
            {"text": ""}, {"text": ""}]}
    ]})
}

/// `analysis_result[analyzer].is_badcase` of each task.
fn verdicts(run: &Path, analyzer: &str) -> BTreeMap<String, Value> {
    published_results(run)
        .into_iter()
        .map(|(id, (_, result))| {
            (
                id,
                result["analysis_result"][analyzer]["is_badcase"].clone(),
            )
        })
        .collect()
}

/// The `overall_per_analyzer` row of `analyzer`.
fn overall(summary: &Value, analyzer: &str) -> Value {
    find_element(&summary["overall_per_analyzer"], "analyzer", analyzer).clone()
}

#[test]
fn each_built_in_flags_exactly_the_attempt_built_to_trip_it() {
    let ws = Workspace::new();
    let plugins = Packs::harbor();
    let server = ScriptedServer::start(&script(), None).unwrap();
    let params = json!({"path": tasks(&ws)}).to_string();
    let base_url = server.base_url();
    let mut args = terminus_args(&plugins, &params, &base_url, "${E2E_ANALYSIS_KEY}");
    args.extend(["--progress", "none"]);
    let out = ws.run_ok(&args, &[("E2E_ANALYSIS_KEY", KEY)]);
    let run = run_dir(&out);
    let only = |task: &str| -> BTreeMap<String, Value> {
        ["empty-answer", "fizzbuzz", "hello-file", "primes"]
            .into_iter()
            .map(|t| (t.to_string(), json!(t == task)))
            .collect()
    };
    assert_eq!(
        verdicts(&run, "ConsecutiveToolRepetitionAnalyzer"),
        only("fizzbuzz")
    );
    assert_eq!(verdicts(&run, "EmptyContentAnalyzer"), only("empty-answer"));
    assert_eq!(verdicts(&run, "TruncationAnalyzer"), only("primes"));
    assert_eq!(verdicts(&run, "HackDetectionAnalyzer"), only("hello-file"));
    let results = published_results(&run);
    let hack = &results["hello-file"].1["analysis_result"]["HackDetectionAnalyzer"];
    let offending = hack["details"]["hack_step_details"].as_array().unwrap();
    assert_eq!(offending.len(), 1, "{hack}");
    assert_eq!(offending[0]["step_id"], 1, "{hack}");
    assert!(
        offending[0]["path"]
            .as_str()
            .unwrap()
            .starts_with("/logs/verifier"),
        "{hack}"
    );
    let looped = &results["fizzbuzz"].1["analysis_result"]["ConsecutiveToolRepetitionAnalyzer"];
    assert_eq!(
        looped["details"]["max_consecutive_repetition"], 7,
        "{looped}"
    );
    // The empty answer: no final answer at all.
    assert!(results["empty-answer"].1["final_answer"].is_null());

    let summary = read_json(&run.join("analysis_summary.json"));
    for (analyzer, task) in [
        ("ConsecutiveToolRepetitionAnalyzer", "fizzbuzz"),
        ("EmptyContentAnalyzer", "empty-answer"),
        ("TruncationAnalyzer", "primes"),
        ("HackDetectionAnalyzer", "hello-file"),
    ] {
        let row = overall(&summary, analyzer);
        assert_eq!(row["total"], 4, "{row}");
        assert_eq!(row["badcase_count"], 1, "{row}");
        assert_eq!(row["error_count"], 0, "{row}");
        let items = row["items"].as_array().unwrap();
        assert_eq!(items.len(), 1, "{row}");
        assert!(items[0].as_str().unwrap().contains(task), "{row}");
    }
    let md = fs::read_to_string(run.join("analysis_summary.md")).unwrap();
    assert!(md.starts_with("# HARBOR Analysis Summary"), "{md}");

    // `analysis --input` over the finished run: only the selected analyzer, into a copy.
    let (copy, out) = reanalyze(&ws, &run, "HackDetectionAnalyzer");
    assert_eq!(PathBuf::from(out.stdout.trim()), copy);
    let summary = read_json(&copy.join("analysis_summary.json"));
    let analyzers: Vec<&str> = summary["overall_per_analyzer"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|row| row["analyzer"].as_str())
        .filter(|a| !a.starts_with("__"))
        .collect();
    assert_eq!(analyzers, ["HackDetectionAnalyzer"], "{summary}");
    assert_eq!(
        overall(&summary, "HackDetectionAnalyzer")["badcase_count"],
        1
    );
    assert_eq!(
        verdicts(&copy, "HackDetectionAnalyzer"),
        verdicts(&run, "HackDetectionAnalyzer")
    );
    assert!(verdicts(&copy, "TruncationAnalyzer")
        .values()
        .all(Value::is_null));
    // The source run is untouched.
    assert_eq!(verdicts(&run, "TruncationAnalyzer"), only("primes"));

    // Bad analysis params are one line, exit 2, nothing written.
    let out = ws.run_expect(
        2,
        &[
            "analysis",
            "--input",
            run.to_str().unwrap(),
            "--analysis-params",
            r#"{"analyzers": ["Nope"]}"#,
        ],
        &[],
    );
    assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
    assert!(
        out.stderr
            .contains("--analysis-params: analysis_params.analyzers[0]"),
        "{out:?}"
    );
}

/// `analysis_result["example_answer_distance"]` of each task.
fn distances(run: &Path) -> BTreeMap<String, Value> {
    published_results(run)
        .into_iter()
        .map(|(id, (_, result))| {
            (
                id,
                result["analysis_result"]["example_answer_distance"].clone(),
            )
        })
        .collect()
}

#[test]
fn a_plugin_analyzer_runs_after_the_built_ins_and_its_panic_never_fails_a_task() {
    let ws = Workspace::new();
    let out = ws.run_ok(&["list", "analyzer", "--json"], &[]);
    let listed: Value = serde_json::from_str(&out.stdout).unwrap();
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert_eq!(ids.last(), Some(&"example_answer_distance"), "{listed}");
    let entry = listed.as_array().unwrap().last().unwrap();
    assert!(
        entry["source"]
            .as_str()
            .is_some_and(|s| s.starts_with("example-pack@0.1.0 (")),
        "{entry}"
    );

    // The calculator answers every 3rd task one too high: exactly those are bad cases, at
    // distance 1; the analyzer panics on arith-0001 (an option), recorded and contained.
    let out = ws.run_ok(
        &[
            "run",
            "example_exact_match",
            "example_calculator",
            "m",
            "--benchmark-params",
            r#"{"size": 7}"#,
            "--harness-params",
            r#"{"wrong_every": 3}"#,
            "--analysis-params",
            r#"{"example_answer_distance": {"panic_on_task": "arith-0001"}}"#,
            "--progress",
            "none",
        ],
        &[],
    );
    let run = run_dir(&out);
    let found = distances(&run);
    assert_eq!(found.len(), 7, "{found:?}");
    for (task, outcome) in &found {
        match task.as_str() {
            "arith-0001" => {
                assert!(outcome["is_badcase"].is_null(), "{outcome}");
                let error = outcome["error"].as_str().unwrap();
                assert!(error.contains("panic_on_task arith-0001"), "{outcome}");
            }
            "arith-0002" | "arith-0005" => {
                assert_eq!(outcome["is_badcase"], true, "{task}: {outcome}");
                assert_eq!(outcome["details"]["distance"], 1, "{outcome}");
                assert_eq!(outcome["score"], 1.0, "{outcome}");
            }
            _ => assert_eq!(outcome["is_badcase"], false, "{task}: {outcome}"),
        }
    }
    let results = published_results(&run);
    assert_eq!(
        results["arith-0001"].1["metrics"]["correct"], true,
        "the analyzer's panic does not touch the task"
    );
    // The built-ins ran on the same attempts.
    assert!(
        results["arith-0002"].1["analysis_result"]["BasicMetricAnalyzer"].is_object(),
        "{}",
        results["arith-0002"].1
    );
    let summary = read_json(&run.join("analysis_summary.json"));
    let row = overall(&summary, "example_answer_distance");
    assert_eq!(row["total"], 7, "{row}");
    assert_eq!(row["badcase_count"], 2, "{row}");
    assert_eq!(row["error_count"], 1, "{row}");

    // `analysis --input` re-runs the plugin analyzer over the finished run (no panic now).
    let (copy, _) = reanalyze(&ws, &run, "example_answer_distance");
    let again = distances(&copy);
    assert_eq!(again["arith-0001"]["is_badcase"], false, "{again:?}");
    assert_eq!(again["arith-0005"], found["arith-0005"]);
    let row = overall(
        &read_json(&copy.join("analysis_summary.json")),
        "example_answer_distance",
    );
    assert_eq!(
        (row["badcase_count"].clone(), row["error_count"].clone()),
        (json!(2), json!(0))
    );
}

/// Without `--output` or `--override`, the analysis goes next to the run — its summary and
/// each attempt's `analysis_result.json` under the run's own layout — and not into a copy
/// that would be one more run of the namespace; the terminal line counts the analyzers the
/// summary lists.
#[test]
fn analysis_without_an_output_writes_next_to_the_run_not_a_new_run() {
    let ws = Workspace::new();
    let out = ws.run_ok(
        &["run", "example_exact_match", "example_calculator", "m1"],
        &[],
    );
    let run = run_dir(&out);
    let before = agentcompass_e2e::files_under(&run);
    let out = ws.run_ok(&["analysis", "--input", run.to_str().unwrap()], &[]);
    let beside = PathBuf::from(out.stdout.trim());
    let name = beside.file_name().unwrap().to_string_lossy().into_owned();
    let run_name = run.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with(&format!("{run_name}.analysis-")), "{name}");
    assert_eq!(beside.parent(), run.parent());
    assert!(!beside.join("run_info.json").exists(), "not a run");
    let summary = std::fs::read_to_string(beside.join("analysis_summary.md")).unwrap();
    assert!(summary.contains("| **__overall__** | **5** |"), "{summary}");
    let overall_row = summary
        .lines()
        .find(|l| l.starts_with("| **__overall__**"))
        .unwrap();
    assert!(overall_row.ends_with("| - |"), "{overall_row}");
    let results = agentcompass_e2e::files_under(&beside)
        .into_iter()
        .filter(|f| f.ends_with("analysis_result.json"))
        .count();
    assert_eq!(results, 5);
    // The run itself is untouched, and the namespace still holds one run.
    assert_eq!(agentcompass_e2e::files_under(&run), before);
    let runs = std::fs::read_dir(run.parent().unwrap())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().join("run_info.json").is_file())
        .count();
    assert_eq!(runs, 1);
    let listed = summary
        .lines()
        .skip_while(|l| !l.starts_with("## Overall"))
        .skip(4)
        .take_while(|l| l.starts_with("| ") && !l.starts_with("| **"))
        .count();
    assert!(
        out.stderr
            .contains(&format!("the summary lists {listed} of them")),
        "{listed}: {}",
        out.stderr
    );
}
