//! `view`: the read-only web viewer over real runs of the example pack. Every endpoint's JSON,
//! traversal attempts (404), an unknown endpoint, nothing written under RESULTS_DIR, and a
//! large run paged through with its memory measured.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Instant, SystemTime};

use agentcompass_e2e::{
    entries_starting_with, field_strs, host_bin, read_json, report_data_block, run_dir, task_dirs,
    Workspace,
};
use serde_json::{json, Value};

/// A `view` process; killed when dropped.
struct Viewer {
    child: Child,
    port: u16,
}

impl Viewer {
    fn start(ws: &Workspace, results: &Path) -> Viewer {
        let mut child = Command::new(host_bin())
            .current_dir(&ws.cwd)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &ws.home)
            .args(["--no-bundled-plugins", "view"])
            .arg(results)
            .args(["--port", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start view");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("read the URL line");
        let url = line
            .trim()
            .strip_prefix("agentcompass viewer: http://127.0.0.1:")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
        // `PORT/?token=SECRET`: the controls' secret, which these read-only tests leave.
        let port = url.split('/').next().unwrap().parse().expect("port");
        assert!(url.contains("/?token="), "{line}");
        Viewer { child, port }
    }

    /// GET `target` (path and query, sent as is): (status, head, body).
    fn get_raw(&self, target: &str) -> (u16, String, Vec<u8>) {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        write!(
            stream,
            "GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )
        .expect("send");
        let mut bytes = Vec::new();
        stream.read_to_end(&mut bytes).expect("read");
        let split = bytes
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("a header block");
        let head = String::from_utf8_lossy(&bytes[..split]).into_owned();
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("a status");
        (status, head, bytes[split + 4..].to_vec())
    }

    /// GET `target` and parse its JSON body, asserting `status`.
    fn json(&self, target: &str, status: u16) -> Value {
        let (got, head, body) = self.get_raw(target);
        assert_eq!(
            got,
            status,
            "{target}: {head}\n{}",
            String::from_utf8_lossy(&body)
        );
        assert!(
            head.contains("content-type: application/json"),
            "{target}: {head}"
        );
        serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{target}: {e}"))
    }

    fn rss_kb(&self) -> u64 {
        let status =
            fs::read_to_string(format!("/proc/{}/status", self.child.id())).expect("status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .expect("VmRSS")
    }
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Percent-encodes a query value.
fn enc(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Every file and directory under `dir` with its size and modification time.
fn tree(dir: &Path) -> BTreeMap<PathBuf, (u64, SystemTime)> {
    let mut found = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).expect("list").flatten() {
            let meta = fs::symlink_metadata(entry.path()).expect("stat");
            found.insert(entry.path(), (meta.len(), meta.modified().expect("mtime")));
            if meta.is_dir() {
                pending.push(entry.path());
            }
        }
    }
    found
}

fn self_check(ws: &Workspace, size: u64, model: &str) -> PathBuf {
    let params = format!(r#"{{"size": {size}}}"#);
    let out = ws.run_ok(
        &[
            "run",
            "example_self_check",
            "none",
            model,
            "--benchmark-params",
            &params,
            "--progress",
            "none",
        ],
        &[],
    );
    run_dir(&out)
}

/// The published task directory of `task_id` in `run`.
fn task_dir(run: &Path, task_id: &str) -> PathBuf {
    task_dirs(run, "normal")
        .into_iter()
        .find(|d| read_json(&d.join("task.json"))["task_id"] == task_id)
        .unwrap_or_else(|| panic!("no task {task_id} in {}", run.display()))
}

/// Marks the final attempt of `task_id` wrong (the example pack's runs are all correct).
fn make_wrong(run: &Path, task_id: &str) {
    let path = task_dir(run, task_id).join("attempt-1/result.json");
    let mut result = read_json(&path);
    result["metrics"]["correct"] = json!(false);
    fs::write(&path, result.to_string()).expect("write");
}

#[test]
fn view_serves_real_runs_read_only() {
    let ws = Workspace::new();
    let results = ws.cwd.join("results");
    let a = self_check(&ws, 6, "m");
    // Distinct started_at seconds, so "newest first" is decided by the times.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let b = self_check(&ws, 6, "m");
    let rel = |run: &Path| {
        run.strip_prefix(&results)
            .expect("under results")
            .display()
            .to_string()
    };
    let (ra, rb) = (rel(&a), rel(&b));

    // Test-made facts on top of the real runs: a wrong task on each side, a second category,
    // a task still running, an artifact, and links out of the results directory.
    make_wrong(&a, "self-0003");
    make_wrong(&b, "self-0001");
    let t2 = task_dir(&a, "self-0002").join("task.json");
    let mut task = read_json(&t2);
    task["category"] = json!("geometry");
    fs::write(&t2, task.to_string()).expect("write");
    fs::create_dir_all(a.join("details/running/zz-live--0/attempt-1")).expect("mkdir");
    let t0 = task_dir(&a, "self-0000");
    let t0_ref = format!("normal/{}", t0.file_name().unwrap().to_string_lossy());
    fs::create_dir_all(t0.join("attempt-1/artifacts/logs")).expect("mkdir");
    fs::write(
        t0.join("attempt-1/artifacts/logs/out.txt"),
        "artifact bytes\n",
    )
    .expect("write");
    let big_len: usize = 64 << 20;
    let big: Vec<u8> = (0..big_len).map(|i| (i % 251) as u8).collect();
    fs::write(t0.join("attempt-1/artifacts/big.bin"), &big).expect("write");
    let outside = ws.write("outside/run_info.json", r#"{"run_id": "outside"}"#);
    let outside = outside.parent().unwrap();
    ws.write("outside/secret.txt", "secret");
    std::os::unix::fs::symlink(outside, results.join("evil")).expect("symlink");
    std::os::unix::fs::symlink(
        outside.join("secret.txt"),
        t0.join("attempt-1/artifacts/leak.txt"),
    )
    .expect("symlink");

    let before = tree(&results);
    let viewer = Viewer::start(&ws, &results);

    // The front end.
    let (status, head, body) = viewer.get_raw("/");
    assert_eq!(status, 200, "{head}");
    assert!(String::from_utf8_lossy(&body).contains("agentcompass viewer"));
    assert_eq!(viewer.get_raw("/assets/app.js").0, 200);
    assert_eq!(viewer.get_raw("/assets/app.css").0, 200);

    // Runs, newest first; the link out of the root is not a run.
    let runs = viewer.json("/api/runs", 200);
    assert_eq!(runs["root"], results.display().to_string());
    let listed: Vec<&str> = field_strs(&runs["runs"], "path");
    assert_eq!(listed, [rb.as_str(), ra.as_str()]);
    let summary = &runs["runs"][1];
    assert_eq!(summary["namespace"], ra.rsplit_once('/').unwrap().0);
    assert_eq!(summary["benchmark"], "example_self_check");
    assert_eq!(summary["harness"], "none");
    assert_eq!(summary["model"], "m");
    assert_eq!(summary["status"], "completed");
    assert_eq!(summary["total_tasks"], 6);
    assert_eq!(summary["finished_tasks"], 6);
    assert!(summary["started_at"].is_string() && summary["finished_at"].is_string());
    assert!(summary["duration_seconds"].is_number(), "{summary}");
    assert!(summary["headline"]["value"].is_number(), "{summary}");

    // One run.
    let run = viewer.json(&format!("/api/run?run={}", enc(&ra)), 200);
    assert_eq!(run["run"]["path"], ra.as_str());
    assert_eq!(run["run_info"]["run_id"], summary["run_id"]);
    assert!(run["metrics"]["series"].is_array(), "{run}");
    assert!(run["params"].is_object(), "{run}");
    assert!(run["summary_md"].is_string(), "{run}");
    assert!(run["progress"].is_object(), "{run}");
    assert_eq!(run["issues"], json!([]));
    assert!(run["log_tail"].is_string() || run["log_tail"].is_null());
    // A finished run has its headline: no score "so far".
    assert!(run["run"]["so_far"].is_null(), "{run}");
    assert_eq!(run["run"]["headline"]["kind"], "binary_success");

    // The charts' data, from the run's index: the primary metric's histogram (binary: the bins
    // 0 and 1), durations of the six published tasks, and six finished tasks over time.
    let charts = &run["charts"];
    assert_eq!(charts["metric_id"], "correct", "{charts}");
    assert_eq!(charts["kind"], "binary_success");
    assert_eq!(bin_counts(&charts["rewards"]), [1, 5], "{charts}");
    assert_eq!(charts["durations"]["count"], 6, "{charts}");
    assert_eq!(
        bin_counts(&charts["durations"]).iter().sum::<u64>(),
        6,
        "{charts}"
    );
    assert_eq!(charts["tokens"]["count"], 0, "{charts}");
    assert_eq!(charts["so_far"]["value"], json!(5.0 / 6.0), "{charts}");
    let points = charts["timeline"]["points"].as_array().expect("a timeline");
    assert_eq!(points.len(), 6, "{charts}");
    assert_eq!(points[5][1], 6);

    // Task rows: the running one first, paging, filters, search.
    let tasks = |query: &str| viewer.json(&format!("/api/tasks?run={}&{query}", enc(&ra)), 200);
    let all = tasks("");
    assert_eq!(all["total"], 7, "{all}");
    assert_eq!(all["tasks"][0]["state"], "running");
    assert_eq!(all["tasks"][0]["ref"], "running/zz-live--0");
    assert_eq!(all["tasks"][1]["task_id"], "self-0000");
    assert_eq!(all["tasks"][1]["ref"], t0_ref.as_str());
    assert_eq!(all["tasks"][1]["correct"], true);
    assert_eq!(all["tasks"][1]["status"], "completed");
    assert_eq!(all["tasks"][1]["attempts"], 1);
    // Every attempt of a real run records its wall time.
    for row in all["tasks"].as_array().unwrap().iter().skip(1) {
        let seconds = row["duration_seconds"].as_f64();
        assert!(seconds.is_some_and(|s| s >= 0.0), "{row}");
    }
    let page = tasks("page=3&size=2");
    assert_eq!(
        (
            page["total"].clone(),
            page["tasks"].as_array().unwrap().len()
        ),
        (json!(7), 1)
    );
    assert_eq!(page["tasks"][0]["task_id"], "self-0005");
    let wrong = tasks("filter=wrong");
    assert_eq!(wrong["total"], 1);
    assert_eq!(wrong["tasks"][0]["task_id"], "self-0003");
    assert_eq!(wrong["tasks"][0]["correct"], false);
    assert_eq!(tasks("filter=correct")["total"], 5);
    assert_eq!(tasks("filter=running")["total"], 1);
    assert_eq!(tasks("filter=completed")["total"], 6);
    assert_eq!(tasks("filter=failed")["total"], 0);
    let geometry = tasks("category=geometry");
    assert_eq!(geometry["total"], 1);
    assert_eq!(geometry["tasks"][0]["task_id"], "self-0002");
    assert_eq!(
        geometry["categories"],
        json!(["", "arithmetic", "geometry"])
    );
    assert_eq!(tasks("q=SELF-0004")["tasks"][0]["task_id"], "self-0004");
    assert_eq!(tasks("q=self")["total"], 6);
    assert_eq!(tasks("issue=run_timeout")["total"], 0);
    for bad in ["filter=bogus", "size=0", "size=5000", "page=x"] {
        viewer.json(&format!("/api/tasks?run={}&{bad}", enc(&ra)), 400);
    }

    // One task: attempts with the trajectory.
    let detail = viewer.json(
        &format!("/api/task?run={}&task={}", enc(&ra), enc(&t0_ref)),
        200,
    );
    assert_eq!(detail["task"]["task_id"], "self-0000");
    assert_eq!(detail["attempts"][0]["name"], "attempt-1");
    assert_eq!(detail["attempts"][0]["result"]["metrics"]["correct"], true);
    assert!(
        !detail["attempts"][0]["result"]["trajectory"]["steps"]
            .as_array()
            .unwrap()
            .is_empty(),
        "{detail}"
    );
    assert_eq!(detail["attempts"][0]["retries"], json!([]));

    // An artifact's bytes.
    let artifact = |rel: &str| {
        viewer.get_raw(&format!(
            "/api/artifact?run={}&task={}&attempt=attempt-1&path={}",
            enc(&ra),
            enc(&t0_ref),
            rel
        ))
    };
    let (status, head, body) = artifact("logs%2Fout.txt");
    assert_eq!(status, 200, "{head}");
    assert_eq!(body, b"artifact bytes\n");
    assert!(
        head.contains("content-type: application/octet-stream"),
        "{head}"
    );
    assert!(
        head.contains("content-disposition: attachment; filename=\"out.txt\""),
        "{head}"
    );
    // A large artifact is streamed: the viewer's memory does not grow by its size.
    let rss_before = viewer.rss_kb();
    let (big_status, big_head, big_body) = artifact("big.bin");
    let rss_after = viewer.rss_kb();
    assert_eq!(big_status, 200, "{big_head}");
    assert!(
        big_head.contains(&format!("content-length: {big_len}")),
        "{big_head}"
    );
    assert!(big_body == big, "the large artifact's bytes differ");
    assert!(
        rss_after < rss_before + 16 * 1024,
        "RSS grew from {rss_before} kB to {rss_after} kB serving a 64 MiB artifact"
    );

    // Comparison: A -> B fixed self-0003 and broke self-0001.
    let cmp = viewer.json(&format!("/api/compare?a={}&b={}", enc(&ra), enc(&rb)), 200);
    assert_eq!(
        cmp["counts"],
        json!({"fixed": 1, "broken": 1, "both_right": 4, "both_wrong": 0, "only_a": 1, "only_b": 0}),
        "{cmp}"
    );
    assert_eq!(cmp["a"]["path"], ra.as_str());
    assert_eq!(cmp["b"]["path"], rb.as_str());
    assert_eq!(cmp["total"], 7);
    assert_eq!(
        cmp["tasks"][0],
        json!({"task_id": "self-0003", "a": false, "b": true, "change": "fixed"})
    );
    assert_eq!(
        cmp["tasks"][1],
        json!({"task_id": "self-0001", "a": true, "b": false, "change": "broken"})
    );
    let geometry = cmp["categories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["category"] == "geometry")
        .cloned()
        .unwrap();
    assert_eq!(
        geometry,
        json!({"category": "geometry", "a": 1.0, "b": null, "delta": null})
    );

    // Traversal attempts and unknown endpoints: 404 with a JSON error.
    for target in [
        "/api/run?run=..".to_string(),
        "/api/run?run=../outside".to_string(),
        "/api/run?run=%2e%2e%2foutside".to_string(),
        format!("/api/run?run={}", enc(&outside.display().to_string())),
        "/api/run?run=evil".to_string(),
        "/api/tasks?run=evil".to_string(),
        format!("/api/task?run={}&task=normal%2f..", enc(&ra)),
        format!("/api/task?run={}&task=normal%2f..%2f..%2f..", enc(&ra)),
        format!("/api/run?run={}%2f..%2f..%2f..%2foutside", enc(&ra)),
        "/api/nope".to_string(),
        "/assets/../../etc/passwd".to_string(),
    ] {
        let body = viewer.json(&target, 404);
        assert!(body["error"].is_string(), "{target}: {body}");
    }
    for rel in [
        "..%2Fresult.json",
        "%2e%2e%2f%2e%2e%2ftask.json",
        "%2Fetc%2Fpasswd",
        "leak.txt",
        "logs",
        "logs%2F..%2F..%2Fresult.json",
    ] {
        let (status, head, body) = artifact(rel);
        assert_eq!(status, 404, "{rel}: {head}");
        assert!(!String::from_utf8_lossy(&body).contains("secret"), "{rel}");
    }
    viewer.json("/api/compare?a=..&b=..", 404);
    viewer.json(&format!("/api/task?run={}", enc(&ra)), 400);
    // Only the first page carries the paired statistics (their bootstrap is not free).
    let second = viewer.json(
        &format!("/api/compare?a={}&b={}&page=1&size=2", enc(&ra), enc(&rb)),
        200,
    );
    assert!(second["paired"].is_null(), "{second}");

    drop(viewer);
    assert_eq!(tree(&results), before, "the viewer wrote under RESULTS_DIR");

    // The compare page's paired statistics are those `compare A B --json` prints.
    let cli = ws.run_json(
        &[
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--json",
        ],
        &[],
    );
    let paired = &cmp["paired"];
    assert_paired_is_clis(paired, &cli);
    for key in ["only_a", "only_b", "unscored"] {
        assert_eq!(
            paired[key].as_u64(),
            cli[key].as_array().map(|ids| ids.len() as u64),
            "{key}"
        );
    }
    assert_eq!(
        paired["mcnemar"],
        json!({"fixed": 1, "broken": 1, "p_value": 1.0})
    );
}

/// The compare page's paired statistics are `compare A B --json`'s, field by field.
fn assert_paired_is_clis(paired: &Value, cli: &Value) {
    for key in [
        "metric",
        "kind",
        "shared",
        "mean_a",
        "mean_b",
        "difference",
        "interval",
        "mcnemar",
        "categories",
    ] {
        assert_eq!(paired[key], cli[key], "{key}: {paired} vs {cli}");
    }
}

/// The task counts of a histogram's bins.
fn bin_counts(histogram: &Value) -> Vec<u64> {
    histogram["bins"]
        .as_array()
        .unwrap_or_else(|| panic!("no bins: {histogram}"))
        .iter()
        .map(|b| b["n"].as_u64().unwrap())
        .collect()
}

/// Turns the finished `run` into one still going: status `running` (run_info.json and
/// progress.json), no metrics.json or summary.md yet, and task `back` in `details/running/`.
fn make_live(run: &Path, back: &str) {
    let info_path = run.join("run_info.json");
    let mut info = read_json(&info_path);
    info["status"] = json!("running");
    info.as_object_mut().unwrap().remove("finished_at");
    fs::write(&info_path, info.to_string()).expect("write");
    let progress_path = run.join("progress.json");
    let mut progress = read_json(&progress_path);
    progress["status"] = json!("running");
    fs::write(&progress_path, progress.to_string()).expect("write");
    fs::remove_file(run.join("metrics.json")).expect("metrics.json");
    let _ = fs::remove_file(run.join("summary.md"));
    let dir = task_dir(run, back);
    fs::create_dir_all(run.join("details/running")).expect("mkdir");
    fs::rename(
        &dir,
        run.join("details/running").join(dir.file_name().unwrap()),
    )
    .expect("move back to running");
}

#[test]
fn view_shows_the_score_so_far_of_a_live_run() {
    let ws = Workspace::new();
    let run = self_check(&ws, 4, "m");
    make_wrong(&run, "self-0001");
    make_live(&run, "self-0003");
    let results = ws.cwd.join("results");
    let rel = run.strip_prefix(&results).unwrap().display().to_string();
    let viewer = Viewer::start(&ws, &results);

    // Three published tasks, one of them wrong: 2/3 so far, on the primary metric the tasks
    // carry (no metrics.json yet).
    let so_far = json!({"metric_id": "correct", "kind": "binary_success", "value": 2.0 / 3.0,
                        "scored": 3, "published": 3});
    let runs = viewer.json("/api/runs", 200);
    let summary = &runs["runs"][0];
    assert_eq!(summary["status"], "running", "{summary}");
    assert!(summary["headline"].is_null(), "{summary}");
    assert_eq!(summary["so_far"], so_far, "{summary}");
    let body = viewer.json(&format!("/api/run?run={}", enc(&rel)), 200);
    assert_eq!(body["run"]["so_far"], so_far, "{body}");
    assert_eq!(body["charts"]["so_far"], so_far);
    assert_eq!(bin_counts(&body["charts"]["rewards"]), [1, 2]);
    // progress.jsonl still has the four task_finished events.
    assert_eq!(
        body["charts"]["timeline"]["points"]
            .as_array()
            .map(Vec::len),
        Some(4)
    );
    let tasks = viewer.json(&format!("/api/tasks?run={}", enc(&rel)), 200);
    assert_eq!(tasks["tasks"][0]["state"], "running");
    assert_eq!(tasks["total"], 4);
}

#[test]
fn view_of_a_missing_results_dir_is_one_line() {
    let ws = Workspace::new();
    let missing = ws.root().join("no-such-results");
    let out = ws.run_expect(2, &["view", missing.to_str().unwrap()], &[]);
    assert_eq!(out.stdout, "");
    insta::assert_snapshot!("view_missing_results_dir", ws.redact(out.stderr.trim_end()));
}

/// The large run's size: enough pages to show that paging, the background index and the
/// report's row limit work; the 100,000-task figures (time, memory) are `bench/viewer_100k.sh`'s.
const LARGE_RUN_TASKS: u64 = 5_000;

#[test]
fn view_pages_a_large_run_with_flat_memory() {
    let ws = Workspace::new();
    let size = LARGE_RUN_TASKS;
    let params = format!(r#"{{"size": {size}}}"#);
    let out = ws.run_ok(
        &[
            "run",
            "example_self_check",
            "none",
            "m",
            "--benchmark-params",
            &params,
            "--progress",
            "none",
            "--task-concurrency",
            "16",
        ],
        &[],
    );
    let run = run_dir(&out);
    let results = ws.cwd.join("results");
    let rel = run.strip_prefix(&results).unwrap().display().to_string();
    let viewer = Viewer::start(&ws, &results);

    let page_size = 100;
    let first = viewer.json(
        &format!("/api/tasks?run={}&size={page_size}", enc(&rel)),
        200,
    );
    assert_eq!(first["total"], size);
    assert_eq!(first["tasks"].as_array().unwrap().len(), page_size);
    // The first page started the run's index in the background; once it is built, paging
    // through every page must not grow the server.
    let at = Instant::now();
    while !viewer.json(&format!("/api/tasks?run={}&size=1", enc(&rel)), 200)["index_ready"]
        .as_bool()
        .unwrap()
    {
        assert!(at.elapsed().as_secs() < 120, "the index is never ready");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let rss_before = viewer.rss_kb();

    let pages = size.div_ceil(page_size as u64);
    let mut seen = std::collections::BTreeSet::new();
    for page in 0..pages {
        let body = viewer.json(
            &format!("/api/tasks?run={}&size={page_size}&page={page}", enc(&rel)),
            200,
        );
        for task in body["tasks"].as_array().unwrap() {
            assert!(seen.insert(task["task_id"].to_string()), "{task} twice");
        }
    }
    assert_eq!(seen.len() as u64, size, "every task on exactly one page");
    let rss_after = viewer.rss_kb();
    assert!(
        rss_after < rss_before + rss_before / 4,
        "RSS grew from {rss_before} kB to {rss_after} kB while paging"
    );

    let correct = viewer.json(&format!("/api/tasks?run={}&filter=correct", enc(&rel)), 200);
    assert_eq!(correct["total"], size);
    let wrong = viewer.json(&format!("/api/tasks?run={}&filter=wrong", enc(&rel)), 200);
    assert_eq!(wrong["total"], 0);

    // Its report: every row, a bounded number of trajectories.
    let file = ws.cwd.join("large-report.html");
    ws.run_ok(
        &[
            "report",
            run.to_str().unwrap(),
            "--out",
            file.to_str().unwrap(),
        ],
        &[],
    );
    let html = fs::read_to_string(&file).expect("report");
    let data = report_data(&html);
    assert_eq!(data["rows"].as_array().unwrap().len() as u64, size);
    assert_eq!(data["details"].as_object().unwrap().len(), 500);
}

/// The JSON data block of a report.
fn report_data(html: &str) -> Value {
    let (_, json) = report_data_block(html).expect("a data block");
    serde_json::from_str(&html[json]).expect("the data block is JSON")
}

#[test]
fn report_writes_one_self_contained_file_within_its_limits() {
    let ws = Workspace::new();
    let run = self_check(&ws, 12, "m");
    for id in ["self-0002", "self-0005", "self-0009"] {
        make_wrong(&run, id);
    }
    ws.run_ok(&["summary", run.to_str().unwrap()], &[]);
    // An answer that tries to close the data block.
    let t0 = task_dir(&run, "self-0000").join("attempt-1/result.json");
    let mut result = read_json(&t0);
    result["final_answer"] = json!("</script><script>document.title='pwned'</script>");
    fs::write(&t0, result.to_string()).expect("write");

    // Default output: RUN_DIR/report.html; nothing else changes.
    let before = tree(&run);
    let out = ws.run_ok(&["report", run.to_str().unwrap()], &[]);
    let report = run.join("report.html");
    let line = out.stdout.trim_end();
    let head = format!(
        "report: {} (12 tasks, attempts and trajectories of every task, ",
        report.display()
    );
    assert!(line.starts_with(&head) && line.ends_with(" MiB)"), "{line}");
    let mut after = tree(&run);
    after.remove(&report);
    assert_eq!(before, after, "report changed the run directory");
    let html = fs::read_to_string(&report).expect("report");
    let data = report_data(&html);
    assert_eq!(data["format"], "agentcompass-report");
    assert_eq!(data["rows"].as_array().unwrap().len(), 12);
    assert_eq!(data["details"].as_object().unwrap().len(), 12);
    assert_eq!(data["omitted_details"], 0);
    assert_eq!(
        data["run"]["run"]["headline"]["value"].as_f64(),
        Some(9.0 / 12.0)
    );
    // Self-contained: inline style and script allowed by hash, no request allowed at all.
    assert!(
        html.contains("default-src 'none'; script-src 'sha256-"),
        "CSP"
    );
    assert!(!html.contains("<script src") && !html.contains("<link rel=\"stylesheet\""));
    assert_eq!(
        html.matches("</script>").count(),
        2,
        "the payload closed an element"
    );

    // A bounded report: wrong tasks first, then correct ones.
    let small = ws.cwd.join("small.html");
    let out = ws.run_ok(
        &[
            "report",
            run.to_str().unwrap(),
            "--out",
            small.to_str().unwrap(),
            "--max-trajectories",
            "4",
        ],
        &[],
    );
    assert!(
        out.stdout
            .contains("(12 tasks, attempts and trajectories of 4 (not-correct tasks first)"),
        "{}",
        out.stdout
    );
    let data = report_data(&fs::read_to_string(&small).expect("report"));
    let details = data["details"].as_object().unwrap();
    assert_eq!(details.len(), 4);
    assert_eq!(data["omitted_details"], 8);
    let mut ids: Vec<&str> = details
        .values()
        .map(|d| d["task"]["task_id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    // The three wrong ones, then the first correct one.
    assert_eq!(ids, ["self-0000", "self-0002", "self-0005", "self-0009"]);
    let leftovers = entries_starting_with(&ws.cwd, ".report.");
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn report_of_something_else_is_one_line_and_writes_nothing() {
    let ws = Workspace::new();
    let not_a_run = ws.root().join("plain");
    fs::create_dir_all(&not_a_run).expect("mkdir");
    let before = tree(ws.root());
    let out = ws.run(&["report", not_a_run.to_str().unwrap()], &[]);
    assert_eq!((out.code, out.stdout.as_str()), (2, ""), "{out:?}");
    insta::assert_snapshot!("report_not_a_run_dir", ws.redact(out.stderr.trim_end()));
    assert_eq!(tree(ws.root()), before, "a refused report wrote something");
    let run = self_check(&ws, 2, "m");
    let out = ws.run(
        &[
            "report",
            run.to_str().unwrap(),
            "--out",
            ws.root().join("missing/r.html").to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!((out.code, out.stdout.as_str()), (2, ""), "{out:?}");
    insta::assert_snapshot!("report_out_dir_missing", ws.redact(out.stderr.trim_end()));
    assert!(!run.join("report.html").exists());
}

/// With k = 2 the CLI scores a task by the mean of its first two attempts: the compare page's
/// paired statistics are the CLI's (`view` hands the viewer the host's own comparison), not a
/// reading of each task's final attempt.
#[test]
fn the_compare_pages_statistics_are_the_clis_with_k_2() {
    use agentcompass_e2e::scripted::ScriptedServer;
    use agentcompass_e2e::{QaSetup, THREE_QUESTIONS};
    let setup = QaSetup::new(THREE_QUESTIONS);
    // Attempts run one at a time: the first attempt of `add` is right, its second wrong.
    let run = |model: &str, responses: serde_json::Value| {
        let server = ScriptedServer::start(
            &json!({"rules": [{"match": {}, "cycle": true, "responses": responses}]}),
            None,
        )
        .unwrap();
        let extra = ["--k", "2", "--task-concurrency", "1", "--run-name", model];
        run_dir(&setup.run(&server.base_url(), "k", &extra).expect_code(0))
    };
    let a = run("a", json!([{"text": "4"}, {"text": "x"}]));
    let b = run("b", json!([{"text": "x"}]));
    let results = setup.ws.cwd.join("results");
    let rel = |run: &Path| enc(&run.strip_prefix(&results).unwrap().display().to_string());
    let viewer = Viewer::start(&setup.ws, &results);
    let cmp = viewer.json(&format!("/api/compare?a={}&b={}", rel(&a), rel(&b)), 200);
    drop(viewer);
    let cli = setup.ws.run_json(
        &[
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--json",
        ],
        &[],
    );
    let paired = &cmp["paired"];
    assert_paired_is_clis(paired, &cli);
    // `add` is right in one attempt of two: A's mean is 1/6, where the final attempts
    // (all wrong) would give 0.
    assert_eq!(cli["pass_k_a"]["flaky"], json!(["add"]), "{cli}");
    let mean_a = paired["mean_a"].as_f64().unwrap();
    assert!((mean_a - 1.0 / 6.0).abs() < 1e-9, "{paired}");
}
