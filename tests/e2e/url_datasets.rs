//! Datasets by URL end to end (issue 35): the `qa` benchmark's `dataset` param
//! (`{"url", "sha256", "archive"?, "member"?}`) fetched through the host's `dataset.url`
//! service from a file server on loopback, answered by the example calculator (no model). The
//! file is downloaded once into the data directory and a later run with the server gone is
//! served from the cache; a wrong digest is refused in one line with nothing kept; a member of
//! a `.tar.gz` archive runs; `run_info.json` records where the dataset came from.

use std::collections::HashMap;
use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use agentcompass_e2e::{
    files_under, published_results, qa_calculator_args, read_json, run_dir, Outcome, Packs,
    Workspace,
};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// Three arithmetic questions the example calculator answers.
const QUESTIONS: &str = concat!(
    r#"{"id": "add", "question": "What is 2 + 2? Answer with only the number.", "answer": "4", "category": "add"}"#,
    "\n",
    r#"{"id": "mul", "question": "What is 6 * 7? Answer with only the number.", "answer": 42}"#,
    "\n",
    r#"{"id": "sub", "question": "What is 9 - 10? Answer with only the number.", "answer": "-1"}"#,
    "\n",
);

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A file server on 127.0.0.1 answering `GET <path>` with the bytes given for it (404 for
/// any other path), one request a connection; it counts the requests and stops on demand
/// (its port then refuses connections).
struct FileServer {
    addr: SocketAddr,
    requests: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FileServer {
    fn start(files: &[(&str, Vec<u8>)]) -> FileServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let files: HashMap<String, Vec<u8>> = files
            .iter()
            .map(|(path, bytes)| (path.to_string(), bytes.clone()))
            .collect();
        let requests = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (requests, stop) = (requests.clone(), stop.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(stream) = stream else { continue };
                    requests.fetch_add(1, Ordering::SeqCst);
                    answer(stream, &files);
                }
            })
        };
        FileServer {
            addr,
            requests,
            stop,
            thread: Some(thread),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    /// Stops accepting and closes the port.
    fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag and drops the listener.
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.thread.take() {
            thread.join().expect("file server thread");
        }
    }
}

impl Drop for FileServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn answer(mut stream: TcpStream, files: &HashMap<String, Vec<u8>>) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let path = head.split_whitespace().nth(1).unwrap_or("");
    let (status, body): (&str, &[u8]) = match files.get(path) {
        Some(bytes) if head.starts_with("GET ") => ("200 OK", bytes),
        _ => ("404 Not Found", b""),
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(body);
}

/// A workspace with the qa pack beside it and a data directory in its temp root.
struct Setup {
    ws: Workspace,
    plugins: Packs,
    data: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let ws = Workspace::new();
        let data = ws.root().join("data-dir");
        Setup {
            ws,
            plugins: Packs::qa(),
            data,
        }
    }

    /// `run qa example_calculator calc` over the `dataset` param `dataset`, with the data
    /// directory.
    fn run(&self, dataset: Value) -> Outcome {
        let params = json!({ "dataset": dataset }).to_string();
        let mut args = qa_calculator_args(&self.plugins, &params, "{}");
        let data = self.data.to_str().expect("UTF-8 path");
        args.extend(["--progress", "none", "--data-dir", data]);
        self.ws.run(&args, &[])
    }

    fn results_root(&self) -> PathBuf {
        self.ws.cwd.join("results")
    }

    fn files(&self) -> PathBuf {
        self.data.join("datasets/files")
    }
}

/// Every task of `run` scored: task id → `correct`.
fn scores(run: &Path) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = published_results(run)
        .into_iter()
        .map(|(id, (_, result))| {
            let correct = result["metrics"]["correct"]
                .as_bool()
                .unwrap_or_else(|| panic!("{id}: no correct metric: {result}"));
            (id, correct)
        })
        .collect();
    out.sort();
    out
}

fn all_correct() -> Vec<(String, bool)> {
    ["add", "mul", "sub"]
        .iter()
        .map(|id| (id.to_string(), true))
        .collect()
}

#[test]
fn a_jsonl_file_by_url_is_downloaded_once_then_served_from_the_cache_with_the_server_gone() {
    let s = Setup::new();
    let mut server = FileServer::start(&[("/sets/arith.jsonl", QUESTIONS.into())]);
    let url = server.url("/sets/arith.jsonl");
    let digest = sha256(QUESTIONS.as_bytes());
    let dataset = json!({"url": url, "sha256": digest});

    let out = s.run(dataset.clone()).expect_code(0);
    let run = run_dir(&out);
    assert_eq!(scores(&run), all_correct());
    assert_eq!(server.requests(), 1, "one download: {}", out.stderr);
    let cached = s.files().join(&digest).join("arith.jsonl");
    assert_eq!(fs::read_to_string(&cached).unwrap(), QUESTIONS);

    // Provenance: the host's record of the download, and the file the tasks were read from.
    let info = read_json(&run.join("run_info.json"));
    assert_eq!(
        info["provenance"]["dataset_sources"],
        json!([{"kind": "url", "url": url, "sha256": digest}]),
        "{info}"
    );
    assert_eq!(
        info["provenance"]["datasets"],
        json!([{"sha256": digest, "path": cached}]),
        "{info}"
    );

    // The server stopped: the same run is served from the cache.
    server.stop();
    assert!(
        TcpStream::connect(server.addr).is_err(),
        "the port is closed"
    );
    let again = s.run(dataset).expect_code(0);
    assert_eq!(scores(&run_dir(&again)), all_correct());
    assert_eq!(server.requests(), 1, "nothing downloaded again");
    let info = read_json(&run_dir(&again).join("run_info.json"));
    assert_eq!(
        info["provenance"]["dataset_sources"],
        json!([{"kind": "url", "url": url, "sha256": digest}])
    );
}

#[test]
fn a_wrong_sha256_is_refused_in_one_line_and_nothing_is_kept() {
    let s = Setup::new();
    let server = FileServer::start(&[("/arith.jsonl", QUESTIONS.into())]);
    let url = server.url("/arith.jsonl");
    let actual = sha256(QUESTIONS.as_bytes());
    let wrong = sha256(b"another file");

    let out = s.run(json!({"url": url, "sha256": wrong})).expect_code(2);
    let lines = out.stderr_lines("error:");
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    for part in [url.as_str(), &actual, &wrong] {
        assert!(lines[0].contains(part), "`{part}` not in: {}", lines[0]);
    }
    assert_eq!(server.requests(), 1);
    assert!(
        !s.results_root().exists(),
        "a results directory was made: {:?}",
        files_under(&s.results_root())
    );
    for digest in [&wrong, &actual] {
        assert!(!s.files().join(digest).exists(), "kept under {digest}");
    }
    assert_eq!(files_under(&s.files()), Vec::<PathBuf>::new());
    let staging = s.data.join("datasets/staging");
    assert_eq!(
        files_under(&staging),
        Vec::<PathBuf>::new(),
        "no partial download"
    );
}

#[test]
fn a_member_of_a_tar_gz_archive_runs() {
    let s = Setup::new();
    let tree = s.ws.root().join("tree");
    fs::create_dir_all(tree.join("data")).unwrap();
    fs::write(tree.join("data/arith.jsonl"), QUESTIONS).unwrap();
    fs::write(tree.join("README"), "three questions\n").unwrap();
    let archive = s.ws.root().join("qa.tar.gz");
    let tar = Command::new("tar")
        .arg("-czf")
        .arg(&archive)
        .arg("-C")
        .arg(&tree)
        .args(["data", "README"])
        .output()
        .expect("run tar");
    assert!(
        tar.status.success(),
        "tar: {}",
        String::from_utf8_lossy(&tar.stderr)
    );
    let bytes = fs::read(&archive).unwrap();
    let digest = sha256(&bytes);
    let server = FileServer::start(&[("/dl/qa.tar.gz", bytes)]);
    let url = server.url("/dl/qa.tar.gz");

    let dataset = json!({"url": url, "sha256": digest, "archive": "tar.gz",
                         "member": "data/arith.jsonl"});
    let out = s.run(dataset).expect_code(0);
    let run = run_dir(&out);
    assert_eq!(scores(&run), all_correct());
    assert_eq!(server.requests(), 1);
    let info = read_json(&run.join("run_info.json"));
    assert_eq!(
        info["provenance"]["dataset_sources"],
        json!([{"kind": "url", "url": url, "sha256": digest}])
    );
    let member = s
        .files()
        .join(format!("{digest}.tar.gz"))
        .join("extracted/data/arith.jsonl");
    assert_eq!(fs::read_to_string(member).unwrap(), QUESTIONS);
}
