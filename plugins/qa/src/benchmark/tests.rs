//! Tests of the `qa` benchmark over temporary dataset files.

use std::sync::Arc;

use std::path::Path;

use agentcompass_plugin_api::contracts::{ExecRequest, ExecResult, ExecutionPlan, SessionInfo};
use agentcompass_plugin_api::sdk::testing::block_on;
use agentcompass_plugin_api::sdk::EnvironmentSession;
use agentcompass_plugin_api::Error;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::*;
use crate::scoring::normalize;
use crate::shared::ID;

mod url;

/// A session that supports nothing (the benchmark never touches it).
struct NoSession;

#[async_trait]
impl EnvironmentSession for NoSession {
    fn info(&self) -> SessionInfo {
        SessionInfo {
            id: "none-1".into(),
            provider: "none".into(),
            ..SessionInfo::default()
        }
    }
    async fn exec(&self, _: ExecRequest) -> Result<ExecResult> {
        Err(Error::unsupported("exec"))
    }
    async fn upload(&self, _: &Path, _: &str) -> Result<()> {
        Err(Error::unsupported("upload"))
    }
    async fn download(&self, _: &str, _: &Path) -> Result<()> {
        Err(Error::unsupported("download"))
    }
    async fn upload_dir(&self, _: &Path, _: &str) -> Result<()> {
        Err(Error::unsupported("upload_dir"))
    }
    async fn download_dir(&self, _: &str, _: &Path) -> Result<()> {
        Err(Error::unsupported("download_dir"))
    }
    async fn read_text(&self, _: &str) -> Result<String> {
        Err(Error::unsupported("read_text"))
    }
    async fn write_text(&self, _: &str, _: &str) -> Result<()> {
        Err(Error::unsupported("write_text"))
    }
    async fn is_file(&self, _: &str) -> Result<bool> {
        Err(Error::unsupported("is_file"))
    }
    async fn is_dir(&self, _: &str) -> Result<bool> {
        Err(Error::unsupported("is_dir"))
    }
    async fn close(&self) -> Result<()> {
        Ok(())
    }
}

/// Writes `content` to a fresh file named `name` in a temporary directory of its own, removed
/// when the returned guard is dropped.
fn dataset_file(name: &str, content: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::Builder::new()
        .prefix("qa-pack-test-")
        .tempdir()
        .unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, content).unwrap();
    let path = path.to_str().unwrap().to_string();
    (dir, path)
}

fn request(params: Value) -> RunRequest {
    let mut req = RunRequest::default();
    req.benchmark.id = ID.to_string();
    req.benchmark.params = params.as_object().unwrap().clone();
    req
}

fn load(params: Value) -> Result<Vec<TaskSpec>> {
    block_on(Qa.load_tasks(&Ctx::detached(), &request(params)))
}

fn load_err(params: Value) -> String {
    load(params).unwrap_err().message
}

/// Scores `answer` for `task` through build_plan + evaluate.
fn score(task: &TaskSpec, req: &RunRequest, answer: Option<&str>) -> RunResult {
    let plan = ExecutionPlan {
        task_id: task.task_id.clone(),
        benchmark_plan: Qa
            .build_plan(task, req, &EnvironmentSpec::default())
            .unwrap(),
        ..ExecutionPlan::default()
    };
    let prepared = prepare(task, req);
    let mut result = RunResult::new(task.task_id.clone());
    result.final_answer = answer.map(str::to_string);
    block_on(Qa.evaluate_attempt(
        &Ctx::detached(),
        EvaluationInput {
            task,
            prepared: &prepared,
            result,
            req,
            plan: &plan,
            env: None,
        },
    ))
    .unwrap()
}

fn prepare(task: &TaskSpec, req: &RunRequest) -> PreparedTask {
    let env: SessionRef = Arc::new(NoSession);
    let plan = Qa
        .build_plan(task, req, &EnvironmentSpec::default())
        .unwrap();
    block_on(Qa.prepare_task(&Ctx::detached(), task, &env, req, &plan)).unwrap()
}

const JSONL: &str = concat!(
    r#"{"id": "q1", "question": "Capital of France?", "answer": "Paris", "category": "geo"}"#,
    "\n\n",
    r#"{"id": 7, "question": "Six times seven?", "answer": 42}"#,
    "\n",
    r#"{"id": "q3", "question": "A primary colour?", "answer": ["red", "blue", 3.5]}"#,
    "\n"
);

#[test]
fn loads_jsonl_with_ids_categories_and_sha256() {
    let (_dir, path) = dataset_file("q.jsonl", JSONL);
    let tasks = load(json!({"path": path})).unwrap();
    let ids: Vec<&str> = tasks.iter().map(|t| t.task_id.as_str()).collect();
    assert_eq!(ids, ["q1", "7", "q3"]);
    assert_eq!(tasks[0].question, "Capital of France?");
    assert_eq!(tasks[0].category, "geo");
    assert_eq!(tasks[1].category, "");
    assert_eq!(tasks[0].ground_truth, json!("Paris"));
    assert_eq!(tasks[1].ground_truth, json!("42"));
    assert_eq!(tasks[2].ground_truth, json!(["red", "blue", "3.5"]));

    let expected_sha: String = Sha256::digest(JSONL.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(expected_sha.len(), 64);
    for task in &tasks {
        assert_eq!(
            task.metadata,
            json!({"dataset_sha256": expected_sha, "dataset_path": path})
                .as_object()
                .unwrap()
                .clone()
        );
    }
}

#[test]
fn loads_json_array_with_numeric_ids_and_answers() {
    let content = r#"[
        {"id": 1, "question": "One plus one?", "answer": 2, "category": "math"},
        {"id": "two", "question": "Pi to two places?", "answer": 3.14},
        {"id": 3, "question": "Name a prime below 4", "answer": ["2", 3]}
    ]"#;
    let (_dir, path) = dataset_file("q.json", content);
    let tasks = load(json!({"path": path, "match": "exact"})).unwrap();
    let ids: Vec<&str> = tasks.iter().map(|t| t.task_id.as_str()).collect();
    assert_eq!(ids, ["1", "two", "3"]);
    assert_eq!(tasks[0].category, "math");
    assert_eq!(tasks[0].ground_truth, json!("2"));
    assert_eq!(tasks[1].ground_truth, json!("3.14"));
    assert_eq!(tasks[2].ground_truth, json!(["2", "3"]));
    let expected_sha = hex::encode(Sha256::digest(content.as_bytes()));
    assert_eq!(tasks[0].metadata["dataset_sha256"], json!(expected_sha));
    assert_eq!(tasks[2].metadata["dataset_path"], json!(path));
}

#[test]
fn sample_ids_use_the_default_selection() {
    let (_dir, path) = dataset_file("q.jsonl", JSONL);
    let req = request(json!({"path": path, "sample_ids": ["q3", 7]}));
    let tasks = block_on(Qa.load_selected_tasks(&Ctx::detached(), &req)).unwrap();
    let ids: Vec<&str> = tasks.iter().map(|t| t.task_id.as_str()).collect();
    assert_eq!(ids, ["7", "q3"]);
}

/// Every task of `open_tasks`, read `page` at a time (the page lengths too).
fn stream(params: Value, page: usize) -> Result<(usize, Vec<usize>, Vec<TaskSpec>)> {
    let mut stream = block_on(Qa.open_tasks(&Ctx::detached(), &request(params)))?;
    let (mut sizes, mut tasks) = (Vec::new(), Vec::new());
    loop {
        let next = stream.next_page(page)?;
        if next.is_empty() {
            return Ok((stream.total(), sizes, tasks));
        }
        sizes.push(next.len());
        tasks.extend(next);
    }
}

#[test]
fn open_tasks_streams_the_same_tasks_as_load_tasks_in_pages() {
    let lines: String = (0..1000)
        .map(|i| format!("{{\"id\": \"t{i}\", \"question\": \"q{i}?\", \"answer\": \"{i}\"}}\r\n"))
        .collect();
    let (_dir, path) = dataset_file("big.jsonl", &format!("\u{feff}{lines}"));
    let (total, sizes, streamed) = stream(json!({"path": path}), 300).unwrap();
    assert_eq!(total, 1000);
    assert_eq!(sizes, [300, 300, 300, 100]);
    let loaded = load(json!({"path": path})).unwrap();
    assert_eq!(
        serde_json::to_value(&streamed).unwrap(),
        serde_json::to_value(&loaded).unwrap()
    );
    assert_eq!(streamed[999].question, "q999?");
    assert_eq!(
        streamed[0].metadata["dataset_sha256"],
        json!(hex::encode(Sha256::digest(
            format!("\u{feff}{lines}").as_bytes()
        )))
    );
}

#[test]
fn open_tasks_selects_sample_ids_in_dataset_order_and_refuses_unknown_ones() {
    for name in ["q.jsonl", "q.json"] {
        let content = if name.ends_with(".json") {
            format!(
                "[{}]",
                JSONL
                    .lines()
                    .filter(|l| !l.is_empty())
                    .collect::<Vec<_>>()
                    .join(",")
            )
        } else {
            JSONL.to_string()
        };
        let (_dir, path) = dataset_file(name, &content);
        let (total, _, tasks) = stream(json!({"path": path, "sample_ids": ["q3", 7]}), 1).unwrap();
        let ids: Vec<&str> = tasks.iter().map(|t| t.task_id.as_str()).collect();
        assert_eq!((total, ids), (2, vec!["7", "q3"]), "{name}");
        let err = stream(json!({"path": path, "sample_ids": ["zz", "q1", "yy"]}), 1)
            .unwrap_err()
            .message;
        assert_eq!(
            err, "benchmark param `sample_ids` names unknown task ids: zz, yy",
            "{name}"
        );
    }
}

#[test]
fn open_tasks_finds_errors_anywhere_in_the_file_before_the_first_task() {
    let mut lines: String = (0..600)
        .map(|i| format!("{{\"id\": {i}, \"question\": \"q\", \"answer\": \"a\"}}\n"))
        .collect();
    lines.push_str("{\"id\": 17, \"question\": \"again\", \"answer\": \"b\"}\n");
    let (_dir, path) = dataset_file("dup.jsonl", &lines);
    let err = stream(json!({"path": path}), 10).unwrap_err().message;
    assert_eq!(
        err,
        format!("{path}:601: duplicate id \"17\" (first at line 18)")
    );
    let (_utf8_dir, x) = dataset_file("x.jsonl", "");
    let not_utf8 = std::path::Path::new(&x).with_file_name("utf8.jsonl");
    std::fs::write(
        &not_utf8,
        b"{\"id\": 1, \"question\": \"q\", \"answer\": \"a\"}\n\xff\n",
    )
    .unwrap();
    let err = stream(json!({"path": not_utf8}), 10).unwrap_err().message;
    assert!(
        err.starts_with(&format!("{}:2: not UTF-8: ", not_utf8.display())),
        "{err}"
    );
    let (_empty_dir, empty) = dataset_file("empty.jsonl", "\n\n");
    assert_eq!(
        stream(json!({"path": empty}), 10).unwrap_err().message,
        format!("{empty}: the dataset holds no records")
    );
}

#[test]
fn matching_table() {
    use MatchMode::{Exact, Normalized};
    let cases: &[(&str, &str, MatchMode, bool)] = &[
        ("Paris", "Paris", Exact, true),
        ("paris", "Paris", Exact, false),
        ("Paris ", "Paris", Exact, false),
        ("Paris.", "Paris", Exact, false),
        ("paris", "Paris", Normalized, true),
        ("  PARIS \n", "paris", Normalized, true),
        ("Paris.", "paris", Normalized, true),
        ("\"Paris!\"", "Paris", Normalized, true),
        ("'paris'?", "Paris", Normalized, true),
        ("The answer is Paris.", "paris", Normalized, true),
        ("the answer is: 42", "42", Normalized, true),
        ("THE ANSWER IS   42!", "42", Normalized, true),
        ("New   York\t City", "new york city", Normalized, true),
        ("ÉCOLE", "école", Normalized, true),
        ("3.14", "3.14", Normalized, true),
        ("U.S.A.", "u.s.a", Normalized, true),
        ("Paris, France", "Paris", Normalized, false),
        ("the answer island", "land", Normalized, false),
        ("41", "42", Normalized, false),
        ("", "Paris", Normalized, false),
    ];
    for &(answer, expected, mode, want) in cases {
        assert_eq!(
            matches(answer, expected, mode),
            want,
            "{answer:?} vs {expected:?} ({mode:?})"
        );
    }
    assert_eq!(normalize("  The Answer is:  New  York. "), "new york");
}

#[test]
fn errors_are_single_lines_naming_file_location_and_field() {
    let missing = std::env::temp_dir().join("qa-pack-test-no-such-dir/q.jsonl");
    let missing = missing.to_str().unwrap();
    let message = load_err(json!({"path": missing}));
    assert!(
        message.starts_with(&format!("{missing}: cannot read: ")),
        "{message}"
    );
    assert!(!message.contains('\n'));

    let (_dir, path) = dataset_file(
        "q.jsonl",
        "{\"id\": 1, \"question\": \"a?\", \"answer\": \"x\"}\n{not json}\n",
    );
    let message = load_err(json!({"path": path}));
    assert!(
        message.starts_with(&format!("{path}:2: invalid JSON: ")),
        "{message}"
    );
    assert!(!message.contains('\n'));

    let (_dir, path) = dataset_file(
        "q.jsonl",
        concat!(
            "{\"id\": 1, \"question\": \"a?\", \"answer\": \"x\"}\n",
            "\n",
            "{\"id\": 2, \"answer\": \"y\"}\n"
        ),
    );
    assert_eq!(
        load_err(json!({"path": path})),
        format!("{path}:3: missing field \"question\"")
    );

    let (_dir, path) = dataset_file("q.json", r#"[{"id": 1, "question": "a?"}]"#);
    assert_eq!(
        load_err(json!({"path": path})),
        format!("{path}[0]: missing field \"answer\"")
    );

    let (_dir, path) = dataset_file(
        "q.json",
        r#"[{"id": "a", "question": "q", "answer": "x"}, {"id": 1.5, "question": "q", "answer": "x"}]"#,
    );
    assert_eq!(
        load_err(json!({"path": path})),
        format!("{path}[1]: field \"id\" must be a string or integer, found number")
    );

    let (_dir, path) = dataset_file(
        "q.jsonl",
        concat!(
            "{\"id\": \"7\", \"question\": \"a?\", \"answer\": \"x\"}\n",
            "{\"id\": \"8\", \"question\": \"b?\", \"answer\": \"y\"}\n",
            "{\"id\": 7, \"question\": \"c?\", \"answer\": \"z\"}\n"
        ),
    );
    assert_eq!(
        load_err(json!({"path": path})),
        format!("{path}:3: duplicate id \"7\" (first at line 1)")
    );

    let (_dir, path) = dataset_file(
        "q.json",
        r#"[{"id": "a", "question": "q", "answer": "x"}, {"id": "a", "question": "r", "answer": "y"}]"#,
    );
    assert_eq!(
        load_err(json!({"path": path})),
        format!("{path}[1]: duplicate id \"a\" (first at index 0)")
    );

    let (_dir, path) = dataset_file("q.jsonl", JSONL);
    assert_eq!(
        load_err(json!({"path": path, "match": "fuzzy"})),
        "unknown match \"fuzzy\" (allowed: exact, normalized)"
    );
    assert_eq!(
        load_err(json!({})),
        "missing required param \"path\" (a local .jsonl or .json file) or \"dataset\" \
         ({\"url\", \"sha256\", \"archive\"?, \"member\"?} of a file to download)"
    );
    let (_dir, path) = dataset_file("q.csv", "id,question,answer\n");
    assert_eq!(
        load_err(json!({"path": path})),
        format!("{path}: unsupported dataset file (expected a .jsonl or .json file)")
    );
}

#[test]
fn prepared_task_never_exposes_the_answer() {
    let (_dir, path) = dataset_file(
        "q.jsonl",
        r#"{"id": "secret", "question": "Capital of Australia?", "answer": ["Canberra", "CBR-ANSWER"], "category": "geo"}"#,
    );
    let req = request(json!({"path": path}));
    let tasks = block_on(Qa.load_tasks(&Ctx::detached(), &req)).unwrap();
    let prepared = prepare(&tasks[0], &req);
    assert_eq!(prepared.task_id, "secret");
    assert_eq!(prepared.input.prompt, "Capital of Australia?");
    assert_eq!(prepared.category, "geo");
    assert_eq!(prepared.ground_truth, None);
    assert_eq!(
        prepared.metadata.keys().collect::<Vec<_>>(),
        ["dataset_sha256"]
    );
    assert_eq!(
        prepared.metadata["dataset_sha256"],
        tasks[0].metadata["dataset_sha256"]
    );
    let serialized = serde_json::to_string(&prepared).unwrap();
    assert!(!serialized.contains("Canberra"), "{serialized}");
    assert!(!serialized.contains("CBR-ANSWER"), "{serialized}");
    assert!(!serialized.contains("dataset_path"), "{serialized}");
}

#[test]
fn build_plan_payload_is_typed() {
    let (_dir, path) = dataset_file("q.jsonl", JSONL);
    let req = request(json!({"path": path, "match": "exact"}));
    let tasks = block_on(Qa.load_tasks(&Ctx::detached(), &req)).unwrap();
    let plan = Qa
        .build_plan(&tasks[2], &req, &EnvironmentSpec::default())
        .unwrap();
    let payload: Value = plan.payload().unwrap();
    assert_eq!(
        payload,
        json!({"expected": ["red", "blue", "3.5"], "match": "exact"})
    );
    let default = Qa
        .build_plan(
            &tasks[1],
            &request(json!({"path": path})),
            &EnvironmentSpec::default(),
        )
        .unwrap();
    assert_eq!(
        default.payload::<Value>().unwrap(),
        json!({"expected": ["42"], "match": "normalized"})
    );
}

#[test]
fn evaluate_scores_and_publishes_ground_truth() {
    let (_dir, path) = dataset_file("q.jsonl", JSONL);
    let normalized = request(json!({"path": path}));
    let exact = request(json!({"path": path, "match": "exact"}));
    let tasks = block_on(Qa.load_tasks(&Ctx::detached(), &normalized)).unwrap();
    let correct = |result: &RunResult| result.metrics["correct"];

    let result = score(&tasks[0], &normalized, Some("The answer is paris."));
    assert_eq!(correct(&result), MetricValue::from(true));
    assert_eq!(result.ground_truth, Some(json!("Paris")));

    let result = score(&tasks[0], &exact, Some("paris"));
    assert_eq!(correct(&result), MetricValue::from(false));
    assert_eq!(result.ground_truth, Some(json!("Paris")));

    let result = score(&tasks[0], &normalized, None);
    assert_eq!(correct(&result), MetricValue::from(false));
    assert!(result.issues.is_empty());

    let result = score(&tasks[1], &exact, Some("42"));
    assert_eq!(correct(&result), MetricValue::from(true));

    let result = score(&tasks[2], &normalized, Some(" BLUE "));
    assert_eq!(correct(&result), MetricValue::from(true));
    assert_eq!(result.ground_truth, Some(json!(["red", "blue", "3.5"])));
    let result = score(&tasks[2], &normalized, Some("green"));
    assert_eq!(correct(&result), MetricValue::from(false));
}
