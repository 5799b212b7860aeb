//! `ctl` against real runs: `qa` answered by `openai_chat` against a scripted endpoint on
//! loopback whose request log says when each call arrived and how many were in flight. The
//! assertions are about order only (what the server saw after an action returned), never
//! about how long something took.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use agentcompass_e2e::scripted::ScriptedServer;
use agentcompass_e2e::{host_bin, ok_questions, published_results, QaSetup};
use serde_json::{json, Value};

const KEY: &str = "sk-e2e-live-control-5150";

/// A live run: `n` questions answered `ok` by a scripted endpoint after `delay_ms`, `run`
/// started in the background at `concurrency`, once its control socket listens.
struct LiveRun {
    setup: QaSetup,
    server: ScriptedServer,
    run: Child,
    dir: PathBuf,
}

impl LiveRun {
    fn start(n: usize, delay_ms: u64, concurrency: &str) -> LiveRun {
        let rules = json!([{"responses": [{"text": "ok", "delay_ms": delay_ms}]}]);
        LiveRun::with_rules(n, rules, concurrency)
    }

    fn with_rules(n: usize, rules: Value, concurrency: &str) -> LiveRun {
        let setup = QaSetup::new(&ok_questions(n));
        let server =
            ScriptedServer::start(&json!({"require_key": KEY, "rules": rules}), None).unwrap();
        let mut run = spawn_run(&setup, &server, concurrency);
        let dir = live_run_dir(&setup, &mut run);
        LiveRun {
            setup,
            server,
            run,
            dir,
        }
    }
}

/// [`spawn_run`] with `extra` arguments.
fn spawn_run_with(
    setup: &QaSetup,
    server: &ScriptedServer,
    concurrency: &str,
    extra: &[&str],
) -> Child {
    let params = setup.params();
    let mut command = setup.ws.command();
    command
        .args(setup.args(&params))
        .args([
            "--model-base-url",
            &server.base_url(),
            "--model-api-key",
            "${E2E_MODEL_KEY}",
            "--task-concurrency",
            concurrency,
            "--progress",
            "none",
        ])
        .args(extra)
        .env("E2E_MODEL_KEY", KEY)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command.spawn().expect("spawn agentcompass-host")
}

/// Starts `run qa openai_chat` over the setup's questions against `server` in the background.
fn spawn_run(setup: &QaSetup, server: &ScriptedServer, concurrency: &str) -> Child {
    spawn_run_with(setup, server, concurrency, &[])
}

/// The run directory of the setup's one run, once its `progress.json` names a control
/// socket.
fn live_run_dir(setup: &QaSetup, run: &mut Child) -> PathBuf {
    let results = setup.ws.cwd.join("results");
    let start = Instant::now();
    loop {
        assert!(run.try_wait().unwrap().is_none(), "the run ended early");
        let found = walk(&results).into_iter().find(|progress| {
            fs::read_to_string(progress)
                .ok()
                .and_then(|text| serde_json::from_str::<Value>(&text).ok())
                .is_some_and(|p| p["control"]["socket"].is_string())
        });
        if let Some(progress) = found {
            return progress.parent().unwrap().to_path_buf();
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no live run");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every `progress.json` two levels under `results` (`<namespace>/<run_id>/`).
fn walk(results: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for namespace in fs::read_dir(results).into_iter().flatten().flatten() {
        for run in fs::read_dir(namespace.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let progress = run.path().join("progress.json");
            if progress.is_file() {
                found.push(progress);
            }
        }
    }
    found
}

/// Waits for a background run and asserts it exited 0 (its stderr in the message).
#[track_caller]
fn exits_ok(run: Child) {
    let out = run.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `ctl RUN_DIR ARGS...` as this user.
fn ctl(run_dir: &Path, args: &[&str]) -> Output {
    std::process::Command::new(host_bin())
        .arg("ctl")
        .arg(run_dir)
        .args(args)
        .output()
        .expect("run ctl")
}

/// `ctl` that must succeed; its standard output.
#[track_caller]
fn ctl_ok(run_dir: &Path, args: &[&str]) -> String {
    let out = ctl(run_dir, args);
    assert!(
        out.status.success(),
        "ctl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Waits until `ready` holds for the run's status.
fn wait_status(run_dir: &Path, ready: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let status: Value = serde_json::from_str(&ctl_ok(run_dir, &["status", "--json"])).unwrap();
        if ready(&status) {
            return status;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{status}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn asked(request: &Value, question: &str) -> bool {
    request["body"].to_string().contains(question)
}

#[test]
fn ctl_reads_limits_pauses_resumes_and_skips_a_pending_task_of_a_live_run() {
    let live = LiveRun::start(200, 100, "8");
    let run_dir = live.dir.clone();

    // cancel q199 before the scheduler reaches it: never sent, not scored.
    let cancelled = ctl_ok(&run_dir, &["cancel", "q199"]);
    assert_eq!(
        cancelled,
        "q199: not running, skipped when reached (not scored)\n"
    );

    // status: counts, running tasks with their phase and age, the limits.
    let status = wait_status(&run_dir, |s| !s["running"].as_array().unwrap().is_empty());
    assert_eq!(status["counts"]["total"], 200, "{status}");
    assert_eq!(status["task_concurrency"], 8);
    assert_eq!(status["paused"], false);
    let task = &status["running"][0];
    assert!(
        task["task_id"].as_str().unwrap().starts_with('q'),
        "{status}"
    );
    assert!(task["age_seconds"].as_f64().unwrap() >= 0.0);
    assert!(task["phase"].is_string(), "{status}");
    assert_eq!(status["model_limit"]["max"], 8, "{status}");
    let human = ctl_ok(&run_dir, &["status"]);
    assert!(
        human.contains("task concurrency 8") && human.contains("TASK"),
        "{human}"
    );

    // pause: once the calls already sent are answered, nothing more reaches the server.
    assert!(ctl_ok(&run_dir, &["pause"]).starts_with("paused: "));
    assert_eq!(ctl_ok(&run_dir, &["pause"]), "already paused\n");
    // Tasks that were running when paused stay running, waiting for their model call.
    wait_status(&run_dir, |s| {
        s["paused"] == true && s["model_limit"]["in_flight"] == 0
    });
    let paused_at = live.server.requests().len();
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(
        live.server.requests().len(),
        paused_at,
        "a call started while paused"
    );

    // concurrency 2, then resume: the server never sees more than 2 calls at once again.
    let limited = ctl_ok(&run_dir, &["concurrency", "2"]);
    assert!(
        limited.starts_with("task concurrency 2 (was 8)"),
        "{limited}"
    );
    assert_eq!(ctl_ok(&run_dir, &["resume"]), "resumed\n");
    wait_status(&run_dir, |s| {
        s["counts"]["finished"].as_u64().unwrap() >= 40
    });
    let after = live.server.requests();
    // The running attempts (at most 8) each finish their call; then only 2 run.
    let peak = after[paused_at + 8..]
        .iter()
        .filter_map(|r| r["in_flight"].as_u64())
        .max()
        .unwrap();
    assert!(peak <= 2, "{peak} calls at once after `concurrency 2`");
    ctl_ok(&run_dir, &["concurrency", "16"]);

    exits_ok(live.run);
    // q199 never reached the server and is not published; the other 199 are, all scored.
    let requests = live.server.requests();
    assert!(!requests.iter().any(|r| asked(r, "Question 199?")));
    let results = published_results(&run_dir);
    assert_eq!(results.len(), 199);
    assert!(!results.contains_key("q199"));
    let metrics: Value =
        serde_json::from_str(&fs::read_to_string(run_dir.join("metrics.json")).unwrap()).unwrap();
    let counts = &metrics["series"][0]["counts"];
    assert_eq!(
        (counts["evaluated"].clone(), counts["total"].clone()),
        (json!(199), json!(199)),
        "{metrics}"
    );
    assert_eq!(
        metrics["extra"]["skipped"]["reasons"]["cancelled_by_user"],
        1
    );

    // Every action is recorded, with who and when: progress.jsonl and the provenance.
    let events: Vec<Value> = fs::read_to_string(run_dir.join("progress.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == "control")
        .map(|e| e["payload"].clone())
        .collect();
    let actions: Vec<&str> = events
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "cancel",
            "pause",
            "pause",
            "concurrency",
            "resume",
            "concurrency"
        ]
    );
    let uid = nix_uid();
    assert!(
        events
            .iter()
            .all(|e| e["uid"] == uid && e["at"].is_string()),
        "{events:?}"
    );
    let info: Value =
        serde_json::from_str(&fs::read_to_string(run_dir.join("run_info.json")).unwrap()).unwrap();
    assert_eq!(info["provenance"]["control"].as_array().unwrap().len(), 6);
    // The run's attempts that were running while it was paused say so.
    let paused_attempts = results
        .values()
        .filter(|(_, r)| {
            r["meta"]["harness"]["telemetry"]["paused_seconds"]
                .as_f64()
                .is_some_and(|s| s > 0.0)
        })
        .count();
    assert!(paused_attempts > 0, "no attempt recorded the pause");

    // A run that ended cannot be steered: one line, exit 2.
    let late = ctl(&run_dir, &["pause"]);
    assert_eq!(late.status.code(), Some(2));
    let stderr = String::from_utf8(late.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("the run is not running"), "{stderr}");
}

#[test]
fn ctl_cancels_a_running_task_without_scoring_it_and_the_run_goes_on() {
    // q1's answer would take two minutes.
    let rules = json!([
        {"match": {"last_user_contains": "Question 1?"}, "responses": [{"text": "ok", "delay_ms": 120_000}]},
        {"responses": [{"text": "ok"}]},
    ]);
    let live = LiveRun::with_rules(3, rules, "3");
    let run_dir = live.dir.clone();
    wait_status(&run_dir, |s| {
        s["running"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["task_id"] == "q1" && t["phase"] == "run_harness")
            && s["counts"]["finished"] == 2
    });
    assert_eq!(
        ctl_ok(&run_dir, &["cancel", "q1"]),
        "q1: running, stopped (not scored)\n"
    );
    exits_ok(live.run);
    let results = published_results(&run_dir);
    assert_eq!(results.len(), 2);
    assert!(!results.contains_key("q1"));
    let metrics: Value =
        serde_json::from_str(&fs::read_to_string(run_dir.join("metrics.json")).unwrap()).unwrap();
    assert_eq!(
        metrics["extra"]["skipped"]["reasons"]["cancelled_by_user"], 1,
        "{metrics}"
    );
}

#[test]
fn another_user_cannot_use_the_control_socket() {
    assert_eq!(
        nix_uid(),
        0,
        "this test switches to `nobody`: it runs as root"
    );
    let live = LiveRun::start(2, 60_000, "2");
    let run_dir = live.dir.clone();
    // Let `nobody` read progress.json (and so find the socket) and run the binary.
    let mut dir = run_dir.clone();
    while dir.pop() {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&dir).unwrap().permissions().mode();
        fs::set_permissions(&dir, fs::Permissions::from_mode(mode | 0o005)).unwrap();
        if dir == Path::new("/") {
            break;
        }
    }
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(host_bin())
        .arg("ctl")
        .arg(&run_dir)
        .arg("pause")
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("permission denied"), "{stderr}");
    // Nothing was done: the run is not paused, no action recorded.
    let status: Value = serde_json::from_str(&ctl_ok(&run_dir, &["status", "--json"])).unwrap();
    assert_eq!(status["paused"], false);
    ctl_ok(&run_dir, &["cancel", "q0", "q1"]);
    exits_ok(live.run);
}

/// This process's user id.
fn nix_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    fs::metadata("/proc/self").unwrap().uid()
}

/// `view RESULTS` (plus `extra`) on a free port: the child and the URL it printed.
fn start_view(setup: &QaSetup, extra: &[&str]) -> (Child, String) {
    use std::io::BufRead;
    let mut child = setup
        .ws
        .command()
        .arg("view")
        .arg(setup.ws.cwd.join("results"))
        .args(["--port", "0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start view");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("agentcompass viewer: ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    (child, url)
}

/// `METHOD target` to the viewer at `url` with the control header `token`: (status, body).
fn request(url: &str, method: &str, target: &str, token: Option<&str>) -> (u16, Value) {
    use std::io::{Read, Write};
    let port: u16 = url
        .strip_prefix("http://127.0.0.1:")
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let header = token.map_or(String::new(), |t| format!("x-agentcompass-token: {t}\r\n"));
    write!(
        stream,
        "{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n{header}Content-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).unwrap();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

fn percent(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[test]
fn the_viewer_steers_a_live_run_only_with_its_secret_and_never_when_read_only() {
    let live = LiveRun::start(40, 100, "4");
    let run_dir = live.dir.clone();
    let results = live.setup.ws.cwd.join("results");
    let rel = run_dir.strip_prefix(&results).unwrap().to_str().unwrap();
    let run_param = percent(rel);

    let (mut viewer, url) = start_view(&live.setup, &[]);
    let secret = url
        .split("/?token=")
        .nth(1)
        .expect("the URL carries the secret")
        .to_string();
    assert_eq!(secret.len(), 64, "{url}");
    // The run page says controls are offered and shows the live limits.
    let (status, body) = request(&url, "GET", &format!("/api/run?run={run_param}"), None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["controls"], true);
    assert!(body["progress"]["control"]["socket"].is_string(), "{body}");
    // Without the secret, or with another: refused, nothing done.
    let target = format!("/api/control?run={run_param}&op=pause");
    for token in [None, Some("0".repeat(64))] {
        let (status, body) = request(&url, "POST", &target, token.as_deref());
        assert_eq!(status, 403, "{body}");
    }
    let status: Value = serde_json::from_str(&ctl_ok(&run_dir, &["status", "--json"])).unwrap();
    assert_eq!(status["paused"], false);
    // With it: pause, status, concurrency, resume, as `ctl` does.
    let (code, body) = request(&url, "POST", &target, Some(&secret));
    assert_eq!(
        (code, body["changed"].clone()),
        (200, json!(true)),
        "{body}"
    );
    let (_, status) = request(
        &url,
        "POST",
        &format!("/api/control?run={run_param}&op=status"),
        Some(&secret),
    );
    assert_eq!(status["paused"], true, "{status}");
    let (code, body) = request(
        &url,
        "POST",
        &format!("/api/control?run={run_param}&op=concurrency&n=8"),
        Some(&secret),
    );
    assert_eq!(
        (code, body["task_concurrency"].clone()),
        (200, json!(8)),
        "{body}"
    );
    let (code, _) = request(
        &url,
        "POST",
        &format!("/api/control?run={run_param}&op=resume"),
        Some(&secret),
    );
    assert_eq!(code, 200);
    viewer.kill().unwrap();
    viewer.wait().unwrap();

    // A read-only viewer prints no secret, offers no controls and refuses every request.
    let (mut read_only, url) = start_view(&live.setup, &["--read-only"]);
    assert!(!url.contains("token"), "{url}");
    let (_, body) = request(&url, "GET", &format!("/api/run?run={run_param}"), None);
    assert_eq!(body["controls"], false);
    let (status, body) = request(&url, "POST", &target, Some(&secret));
    assert_eq!(status, 403, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("read-only"),
        "{body}"
    );
    read_only.kill().unwrap();
    read_only.wait().unwrap();

    exits_ok(live.run);
    // The viewer's actions are recorded like `ctl`'s.
    let info: Value =
        serde_json::from_str(&fs::read_to_string(run_dir.join("run_info.json")).unwrap()).unwrap();
    let actions: Vec<&str> = info["provenance"]["control"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["pause", "concurrency", "resume"]);
}

#[test]
fn a_paused_tasks_run_watchdog_stands_still() {
    // One question whose answer takes 4.5 s, under a 3 s run watchdog (no compensation): it
    // times out unless the
    // run is paused while the call is out (the watchdog does not run while paused).
    let setup = QaSetup::new(&ok_questions(1));
    let server = ScriptedServer::start(
        &json!({"require_key": KEY, "rules": [{"responses": [{"text": "ok", "delay_ms": 4500}]}]}),
        None,
    )
    .unwrap();
    let timeout = [
        "--execution-params",
        r#"{"run_timeout_seconds": 3, "run_timer_compensation_seconds": 0}"#,
    ];
    // Unpaused: the run timeout fires.
    let mut run = spawn_run_with(&setup, &server, "1", &timeout);
    let first = live_run_dir(&setup, &mut run);
    exits_ok(run);
    let result = &published_results(&first)["q0"].1;
    assert_eq!(result["issues"][0]["code"], "run_timeout", "{result}");
    // Paused once the call is out: no timeout, scored.
    let mut run = spawn_run_with(&setup, &server, "1", &timeout);
    let results = setup.ws.cwd.join("results");
    let run_dir = loop {
        let dir = live_run_dir(&setup, &mut run);
        if dir != first {
            break dir;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(run_dir.starts_with(&results));
    wait_status(&run_dir, |s| {
        s["running"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["phase"] == "run_harness")
    });
    ctl_ok(&run_dir, &["pause"]);
    // The call already sent is answered while paused; its task finishes (nothing new starts,
    // and nothing else is left), past the 3 s it would have had unpaused.
    exits_ok(run);
    let result = &published_results(&run_dir)["q0"].1;
    assert_eq!(result["issues"], json!([]), "{result}");
    assert_eq!(result["metrics"]["correct"], true);
    let paused = result["meta"]["harness"]["telemetry"]["paused_seconds"]
        .as_f64()
        .unwrap();
    assert!(paused > 0.0, "{result}");
}
