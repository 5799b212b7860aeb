//! The `dataset` param: its shapes, the host's `dataset.url` service asked (a fake host that
//! answers a local file), the downloaded file read by extension, its origin in the metadata.

use std::sync::Mutex;

use agentcompass_plugin_api::contracts::{
    LogLevel, UrlDataset, UrlDatasetRequest, URL_DATASET_SERVICE,
};
use agentcompass_plugin_api::sdk::{BoxFuture, HostApi};
use agentcompass_plugin_api::ErrorKind;

use super::*;

const SHA: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// A host whose `dataset.url` answers `answer` (or fails with `error`) and keeps the
/// requests.
struct UrlHost {
    answer: std::result::Result<UrlDataset, Error>,
    requests: Mutex<Vec<Value>>,
}

impl UrlHost {
    fn answering(path: &str, url: &str) -> Arc<UrlHost> {
        Arc::new(UrlHost {
            answer: Ok(UrlDataset {
                path: path.to_string(),
                sha256: SHA.to_string(),
                url: url.to_string(),
            }),
            requests: Mutex::new(Vec::new()),
        })
    }

    fn failing(error: Error) -> Arc<UrlHost> {
        Arc::new(UrlHost {
            answer: Err(error),
            requests: Mutex::new(Vec::new()),
        })
    }

    fn requests(&self) -> Vec<UrlDatasetRequest> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|r| serde_json::from_value(r.clone()).unwrap())
            .collect()
    }
}

impl HostApi for UrlHost {
    fn log(&self, _: LogLevel, _: &str, _: &str) {}

    fn emit_progress(&self, _: &Value) {}

    fn is_cancelled(&self) -> bool {
        false
    }

    fn cancelled(&self) -> BoxFuture<()> {
        Box::pin(std::future::pending())
    }

    fn call(&self, service: &str, request: Value) -> BoxFuture<Result<Value>> {
        assert_eq!(service, URL_DATASET_SERVICE);
        self.requests.lock().unwrap().push(request);
        let answer = self
            .answer
            .clone()
            .map(|a| serde_json::to_value(a).unwrap());
        Box::pin(async move { answer })
    }
}

fn load_with(host: &Arc<UrlHost>, params: Value) -> Result<Vec<TaskSpec>> {
    block_on(Qa.load_tasks(&Ctx::new(host.clone()), &request(params)))
}

fn stream_with(host: &Arc<UrlHost>, params: Value) -> Result<Vec<TaskSpec>> {
    let mut stream = block_on(Qa.open_tasks(&Ctx::new(host.clone()), &request(params)))?;
    let mut tasks = Vec::new();
    loop {
        let page = stream.next_page(2)?;
        if page.is_empty() {
            return Ok(tasks);
        }
        tasks.extend(page);
    }
}

#[test]
fn a_dataset_by_url_is_fetched_by_the_host_and_read_from_its_answer() {
    let (_dir, cached) = dataset_file("q.jsonl", JSONL);
    let host = UrlHost::answering(&cached, "http://127.0.0.1:9/data/q.jsonl");
    let params = json!({"dataset": {"url": " http://127.0.0.1:9/data/q.jsonl ", "sha256": SHA}});
    let tasks = load_with(&host, params.clone()).unwrap();
    assert_eq!(
        host.requests(),
        [UrlDatasetRequest {
            url: "http://127.0.0.1:9/data/q.jsonl".into(),
            sha256: SHA.into(),
            archive: None,
            member: None,
        }]
    );
    let ids: Vec<&str> = tasks.iter().map(|t| t.task_id.as_str()).collect();
    assert_eq!(ids, ["q1", "7", "q3"]);
    let digest = hex::encode(Sha256::digest(JSONL.as_bytes()));
    for task in &tasks {
        assert_eq!(
            Value::Object(task.metadata.clone()),
            json!({"dataset_sha256": digest, "dataset_path": cached,
                   "dataset_url": "http://127.0.0.1:9/data/q.jsonl"})
        );
    }
    // The stream (what a run reads) is the same, page after page.
    let streamed = stream_with(&host, params).unwrap();
    assert_eq!(
        serde_json::to_value(&streamed).unwrap(),
        serde_json::to_value(&tasks).unwrap()
    );
    // The harness sees the digest only.
    let prepared = prepare(&tasks[0], &request(json!({"path": "unused.jsonl"})));
    assert_eq!(
        prepared.metadata.keys().collect::<Vec<_>>(),
        ["dataset_sha256"]
    );
}

#[test]
fn an_archive_member_is_asked_for_and_recorded_and_sample_ids_apply() {
    let content = r#"[{"id": "a", "question": "q?", "answer": "x"},
                      {"id": "b", "question": "r?", "answer": "y"}]"#;
    let (_dir, cached) = dataset_file("set.JSON", content);
    let host = UrlHost::answering(&cached, "https://example.invalid/qa.tgz");
    let params = json!({"dataset": {"url": "https://example.invalid/qa.tgz", "sha256": SHA,
                                    "archive": "tgz", "member": "data/set.JSON"},
                        "sample_ids": ["b"]});
    let tasks = stream_with(&host, params).unwrap();
    assert_eq!(
        host.requests(),
        [UrlDatasetRequest {
            url: "https://example.invalid/qa.tgz".into(),
            sha256: SHA.into(),
            archive: Some("tar.gz".into()),
            member: Some("data/set.JSON".into()),
        }]
    );
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].task_id, "b");
    assert_eq!(tasks[0].metadata["dataset_member"], json!("data/set.JSON"));
    assert_eq!(
        tasks[0].metadata["dataset_url"],
        json!("https://example.invalid/qa.tgz")
    );
    assert_eq!(tasks[0].metadata["dataset_path"], json!(cached));
}

#[test]
fn a_download_named_without_a_format_is_refused_in_one_line() {
    let (_dir, cached) = dataset_file("download", JSONL);
    let host = UrlHost::answering(&cached, "http://127.0.0.1:9/get?id=3");
    let err = load_with(
        &host,
        json!({"dataset": {"url": "http://127.0.0.1:9/get?id=3", "sha256": SHA}}),
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidInput);
    assert_eq!(
        err.message,
        "dataset http://127.0.0.1:9/get?id=3: the download is stored as \"download\" (the \
         URL's last path segment), which does not end in .jsonl or .json; use a URL whose last \
         segment does, or an \"archive\" with a \"member\" that does"
    );
}

#[test]
fn the_hosts_refusal_is_passed_on_as_it_is() {
    let refusal = "http://127.0.0.1:9/q.jsonl: the downloaded bytes have sha256 aa, expected bb";
    let host = UrlHost::failing(Error::invalid_input(refusal));
    let err = load_with(
        &host,
        json!({"dataset": {"url": "http://127.0.0.1:9/q.jsonl", "sha256": SHA}}),
    )
    .unwrap_err();
    assert_eq!(
        (err.kind, err.message.as_str()),
        (ErrorKind::InvalidInput, refusal)
    );
    // Without the service (a host too old, or no data directory) the run is refused too.
    let detached = block_on(Qa.load_tasks(
        &Ctx::detached(),
        &request(json!({"dataset": {"url": "http://127.0.0.1:9/q.jsonl", "sha256": SHA}})),
    ))
    .unwrap_err();
    assert!(
        detached.message.contains("dataset.url"),
        "{}",
        detached.message
    );
}

#[test]
fn bad_shapes_are_refused_in_one_line_naming_the_param_before_any_download() {
    let host = UrlHost::failing(Error::msg("never called"));
    let (_dir, path) = dataset_file("q.jsonl", JSONL);
    let url = "http://127.0.0.1:9/q.jsonl";
    let cases: Vec<(Value, String)> = vec![
        (
            json!({"path": path, "dataset": {"url": url, "sha256": SHA}}),
            "give one of params \"path\" (a local .jsonl or .json file) and \"dataset\" \
             ({\"url\", \"sha256\", \"archive\"?, \"member\"?} of a file to download), found both"
                .into(),
        ),
        (
            json!({"dataset": url}),
            "param \"dataset\" must be an object {\"url\", \"sha256\", \"archive\"?, \
             \"member\"?}, found string"
                .into(),
        ),
        (
            json!({"dataset": {"url": url}}),
            "param \"dataset\" is missing key \"sha256\" (the SHA-256 of the file at the URL)"
                .into(),
        ),
        (
            json!({"dataset": {"sha256": SHA}}),
            "param \"dataset\" is missing key \"url\" (an http://, https:// or file:// URL)".into(),
        ),
        (
            json!({"dataset": {"url": url, "sha256": SHA, "digest": "x"}}),
            "param \"dataset\" has no key \"digest\" (expected {\"url\", \"sha256\", \
             \"archive\"?, \"member\"?})"
                .into(),
        ),
        (
            json!({"dataset": {"url": 7, "sha256": SHA}}),
            "param \"dataset\" key \"url\" must be a string, found integer".into(),
        ),
        (
            json!({"dataset": {"url": url, "sha256": " "}}),
            "param \"dataset\" key \"sha256\" must not be empty".into(),
        ),
        (
            json!({"dataset": {"url": url, "sha256": SHA, "archive": "rar", "member": "a.jsonl"}}),
            "param \"dataset\" key \"archive\" must be \"zip\" or \"tar.gz\", found \"rar\"".into(),
        ),
        (
            json!({"dataset": {"url": url, "sha256": SHA, "archive": "zip"}}),
            "param \"dataset\" gives an \"archive\" without a \"member\" (the .jsonl or \
             .json file inside it)"
                .into(),
        ),
        (
            json!({"dataset": {"url": url, "sha256": SHA, "member": "a.jsonl"}}),
            "param \"dataset\" gives a \"member\" without an \"archive\" (\"zip\" or \
             \"tar.gz\")"
                .into(),
        ),
        (
            json!({"dataset": {"url": url, "sha256": SHA, "archive": "zip", "member": "a.csv"}}),
            "param \"dataset\" key \"member\" must name a .jsonl or .json file, found \
             \"a.csv\""
                .into(),
        ),
        (
            json!({"path": 3}),
            "param \"path\" must be a string (a .jsonl or .json file), found integer".into(),
        ),
        (
            json!({"path": ""}),
            "param \"path\" must not be empty".into(),
        ),
    ];
    for (params, expected) in cases {
        let err = load_with(&host, params.clone()).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidInput, "{params}");
        assert_eq!(err.message, expected, "{params}");
        assert!(!err.message.contains('\n'));
    }
    assert!(host.requests().is_empty());
    // `null` is "not given": the other form is used.
    let tasks = load_with(&host, json!({"path": path, "dataset": null})).unwrap();
    assert_eq!(tasks.len(), 3);
}
