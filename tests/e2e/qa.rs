//! The `qa` benchmark plugin through the real loader and runtime, answered by the example
//! calculator harness (the dataset holds arithmetic questions it can solve).

use std::fs;
use std::path::PathBuf;

use agentcompass_e2e::{qa_calculator_args, PluginDirs, Workspace};
use serde_json::Value;

#[test]
fn qa_runs_end_to_end_and_never_shows_the_answer_to_the_harness() {
    let ws = Workspace::new();
    let qa_dirs = PluginDirs::new();
    let qa = qa_dirs.package("p", "qa-pack");
    let dataset = ws.write(
        "data/arith.jsonl",
        concat!(
            r#"{"id": "q-0", "question": "What is 2 + 2? Answer with only the number.", "answer": "4", "category": "add"}"#,
            "\n",
            r#"{"id": "q-1", "question": "What is 6 * 7? Answer with only the number.", "answer": 42, "category": "mul"}"#,
            "\n",
            r#"{"id": 2, "question": "What is 9 - 10? Answer with only the number.", "answer": ["-1", "minus one"]}"#,
            "\n",
        ),
    );
    let params = serde_json::json!({"path": dataset}).to_string();
    let mut args = qa_calculator_args(&qa, &params, r#"{"wrong_every": 3}"#);
    args.extend(["--checkpoint-after-seconds", "0", "--progress", "none"]);
    let out = ws.run_ok(&args, &[]);
    let run = PathBuf::from(out.stdout.lines().last().unwrap());
    let metrics: Value =
        serde_json::from_str(&fs::read_to_string(run.join("metrics.json")).unwrap()).unwrap();
    let value = metrics["series"][0]["value"].as_f64().unwrap();
    assert!(
        (value - 2.0 / 3.0).abs() < 1e-9,
        "wrong_every=3 misses the third: {value}"
    );
    let categories = &metrics["series"][0]["categories"];
    assert_eq!(categories["add"]["value"], 1.0);
    assert_eq!(categories["add"]["counts"]["evaluated"], 1);
    // The harness never received the answer: the prepared task in the checkpoint has none.
    for entry in fs::read_dir(run.join("details/normal")).unwrap().flatten() {
        let checkpoint: Value = serde_json::from_str(
            &fs::read_to_string(entry.path().join("attempt-1/checkpoint.json")).unwrap(),
        )
        .unwrap();
        assert!(checkpoint["prepared"]["ground_truth"].is_null());
        assert!(checkpoint["prepared"]["metadata"]["dataset_sha256"]
            .as_str()
            .is_some_and(|s| s.len() == 64));
    }
}
