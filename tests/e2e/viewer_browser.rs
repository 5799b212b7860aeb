//! The viewer in a real browser: Debian's `chromium`, headless (`./dev.sh test` installs it),
//! loads `agentcompass-host view` on real runs — the demo's (`oracle` and `terminus` on the
//! bundled Harbor tasks in `sandbox`, driven by the demo's scripted model) and a run whose task
//! question and trajectory observation carry XSS payloads — and the test reads the DOM after
//! the page's scripts ran (`--dump-dom`); then `report` of the terminus run opens from
//! `file://` with no network request (chromium's net log). Chromium's proxy is a loopback
//! dead end, so nothing it sends leaves the machine. Screenshots go to
//! `<target>/viewer-screenshots/`.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use agentcompass_e2e::scripted::ScriptedServer;
use agentcompass_e2e::{host_bin, report_data_block, run_dir, target_dir, PluginDirs, Workspace};
use serde_json::json;

/// A payload that changes the title if it ever runs as markup.
const IMG_PAYLOAD: &str = r#"<img src=x onerror="document.title='pwned'">"#;
const SCRIPT_PAYLOAD: &str = "<script>document.title='pwned'</script>";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `agentcompass-host view ROOT` on a free port, killed on drop.
struct Viewer {
    child: Child,
    url: String,
}

impl Viewer {
    fn start(root: &Path) -> Viewer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = Command::new(host_bin())
            .args(["--no-bundled-plugins", "view"])
            .arg(root)
            .args(["--port", &port.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .rsplit(' ')
            .next()
            .unwrap()
            .trim_end_matches('/')
            .to_string();
        assert!(url.starts_with("http://127.0.0.1:"), "{line}");
        Viewer { child, url }
    }
}

impl Viewer {
    /// The task page of `task_id` in `run` (under `root`).
    fn task_url(&self, root: &Path, run: &Path, task_id: &str) -> String {
        format!(
            "{}/#/task/{}/{}",
            self.url,
            route(root, run),
            task_ref(run, task_id).replace('/', "%2F")
        )
    }
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port that accepts connections and closes them unanswered: chromium's proxy in
/// every test, so nothing it sends to a non-loopback address (its own background requests —
/// clock, sign-in, spelling dictionaries — included) leaves the machine.
fn dead_end_proxy() -> u16 {
    static PORT: OnceLock<u16> = OnceLock::new();
    *PORT.get_or_init(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                drop(stream);
            }
        });
        port
    })
}

fn chromium_args(profile: &Path) -> Vec<String> {
    vec![
        "--headless=new".into(),
        "--no-sandbox".into(),
        "--disable-gpu".into(),
        "--hide-scrollbars".into(),
        "--virtual-time-budget=3000".into(),
        "--no-first-run".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--disable-sync".into(),
        "--disable-extensions".into(),
        // Loopback (the viewer) is never proxied; everything else dead-ends.
        format!("--proxy-server=http://127.0.0.1:{}", dead_end_proxy()),
        format!("--user-data-dir={}", profile.display()),
    ]
}

/// The DOM of `url` after its scripts ran.
fn dump_dom(url: &str) -> String {
    dump_dom_logged(url).0
}

/// The DOM of `url` after its scripts ran, and the URLs of the requests the page made (from
/// chromium's net log: requests that have an initiator; chromium's own have none).
fn dump_dom_logged(url: &str) -> (String, Vec<String>) {
    let profile = tempfile::tempdir().unwrap();
    let netlog = profile.path().join("netlog.json");
    let out = Command::new("chromium")
        .args(chromium_args(profile.path()))
        .arg(format!("--log-net-log={}", netlog.display()))
        .arg("--dump-dom")
        .arg(url)
        .output()
        .expect("chromium is not installed: run the tests with ./dev.sh test, which installs it");
    assert!(out.status.success(), "chromium failed: {out:?}");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        page_requests(&netlog),
    )
}

/// The URLs of the requests a page made, from a chromium net log: `URL_REQUEST_START_JOB`
/// events whose initiator is an origin (the browser's own requests say "not an origin").
fn page_requests(netlog: &Path) -> Vec<String> {
    let log: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(netlog).unwrap()).unwrap();
    let start_job = &log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"];
    assert!(
        start_job.is_number(),
        "no URL_REQUEST_START_JOB in the net log"
    );
    log["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| &e["type"] == start_job)
        .filter(|e| {
            e["params"]["initiator"]
                .as_str()
                .is_some_and(|i| i != "not an origin")
        })
        .filter_map(|e| e["params"]["url"].as_str().map(str::to_string))
        .collect()
}

/// A 1280x900 screenshot of `url` into `<target>/viewer-screenshots/NAME.png`.
fn screenshot(url: &str, name: &str) -> PathBuf {
    let dir = target_dir().join("viewer-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{name}.png"));
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new("chromium")
        .args(chromium_args(profile.path()))
        .arg("--window-size=1280,900")
        .arg(format!("--screenshot={}", file.display()))
        .arg(url)
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium failed: {out:?}");
    assert!(
        std::fs::metadata(&file).unwrap().len() > 10_000,
        "{}",
        file.display()
    );
    file
}

/// How many times `needle` occurs in `text`.
fn count(text: &str, needle: &str) -> usize {
    text.matches(needle).count()
}

/// The run directory's path relative to `root`, encoded for the viewer's hash routes.
fn route(root: &Path, run: &Path) -> String {
    let relative = run
        .strip_prefix(root)
        .unwrap()
        .to_string_lossy()
        .into_owned();
    relative.replace('/', "%2F")
}

/// The demo's two runs (oracle, then terminus against the demo's scripted model) and a run with
/// XSS payloads, all under `root`; returns (terminus run, qa run, oracle run).
fn make_runs(ws: &Workspace, root: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let dirs = PluginDirs::new();
    let packs = dirs.package("packs", "harbor-pack");
    dirs.package("packs", "agents-pack");
    dirs.package("packs", "qa-pack");
    let results = root.to_str().unwrap();
    // The bundled tasks, plus one whose agent prints markup (an XSS payload in an observation).
    let tasks = ws.root().join("tasks");
    let copied = Command::new("cp")
        .arg("-r")
        .arg(repo().join("examples/harbor"))
        .arg(&tasks)
        .status()
        .unwrap();
    assert!(copied.success());
    ws.write(
        "tasks/xss-observation/instruction.md",
        "XSS-MARK: print the markup.\n",
    );
    ws.write(
        "tasks/xss-observation/task.toml",
        "schema_version = \"1.4\"\n[task]\nname = \"agentcompass/xss-observation\"\n\
         [metadata]\ncategory = \"xss\"\n[environment]\nworkdir = \"/app\"\n\
         network_mode = \"no-network\"\n",
    );
    ws.write(
        "tasks/xss-observation/tests/test.sh",
        "#!/bin/bash\nmkdir -p /logs/verifier\necho 0 > /logs/verifier/reward.txt\n",
    );
    let harbor = json!({"path": tasks}).to_string();
    let bundled = json!({"path": repo().join("examples/harbor")}).to_string();
    let common = |extra: &[&str]| {
        let mut args = vec![
            "--plugin-dir",
            packs.to_str().unwrap(),
            "run",
            "--results-dir",
            results,
            "--progress",
            "none",
        ];
        args.extend_from_slice(extra);
        args.into_iter().map(str::to_string).collect::<Vec<_>>()
    };
    let run = |args: Vec<String>, env: &[(&str, &str)]| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = ws.run_ok(&args, env);
        run_dir(&out)
    };
    let oracle = run(
        common(&[])
            .into_iter()
            .chain(
                [
                    "harbor",
                    "oracle",
                    "reference",
                    "--env",
                    "sandbox",
                    "--benchmark-params",
                    &bundled,
                ]
                .map(str::to_string),
            )
            .collect(),
        &[],
    );
    let script: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("examples/demo/terminus-script.json")).unwrap(),
    )
    .unwrap();
    let mut script = script;
    // The XSS task: a bash call whose output is markup.
    script["rules"].as_array_mut().unwrap().insert(
        0,
        json!({"match": {"any_message_contains": "XSS-MARK"}, "responses": [
            {"text": "Printing it.", "tool_calls": [{"name": "bash", "arguments":
                {"command": format!("printf '%s\\n' '{IMG_PAYLOAD}'")}}],
             "usage": {"prompt_tokens": 10, "completion_tokens": 5}},
            {"text": "done", "tool_calls": [{"name": "done", "arguments": {"summary": SCRIPT_PAYLOAD}}],
             "usage": {"prompt_tokens": 10, "completion_tokens": 5}}]}),
    );
    let server = ScriptedServer::start(&script, None).unwrap();
    let base = server.base_url();
    let terminus = run(
        common(&[])
            .into_iter()
            .chain(
                [
                    "harbor",
                    "terminus",
                    "scripted-model",
                    "--env",
                    "sandbox",
                    "--benchmark-params",
                    &harbor,
                    "--model-base-url",
                    &base,
                    "--model-api-key",
                    "${DEMO_MODEL_KEY}",
                ]
                .map(str::to_string),
            )
            .collect(),
        &[("DEMO_MODEL_KEY", "demo-key-not-a-secret")],
    );
    let dataset = ws.write(
        "data/xss.jsonl",
        &[
            json!({"id": "xss-question", "question": format!("What is 1 + 1? {SCRIPT_PAYLOAD} {IMG_PAYLOAD}"), "answer": "2", "category": "xss"}),
            json!({"id": "q-add", "question": "What is 2 + 2? Answer with only the number.", "answer": "4", "category": "add"}),
            // Two whose recorded answer is wrong: the calculator's right answer scores 0.
            json!({"id": "q-mul", "question": "What is 6 * 7? Answer with only the number.", "answer": "41", "category": "mul"}),
            json!({"id": "q-sub", "question": "What is 9 - 1? Answer with only the number.", "answer": "7", "category": "sub"}),
        ]
        .iter()
        .map(|v| format!("{v}\n"))
        .collect::<String>(),
    );
    let qa_params = json!({"path": dataset}).to_string();
    let example = dirs.package("example", "example-pack");
    let qa = run(
        [
            "--plugin-dir",
            packs.to_str().unwrap(),
            "--plugin-dir",
            example.to_str().unwrap(),
            "run",
            "qa",
            "example_calculator",
            "calc",
            "--benchmark-params",
            &qa_params,
            "--results-dir",
            results,
            "--progress",
            "none",
        ]
        .map(str::to_string)
        .to_vec(),
        &[],
    );
    (terminus, qa, oracle)
}

#[test]
fn the_viewer_and_the_report_render_real_runs_and_untrusted_text_as_text_in_chromium() {
    let ws = Workspace::new();
    let root = ws.root().join("results");
    let (terminus, qa, oracle) = make_runs(&ws, &root);
    let viewer = Viewer::start(&root);

    // The runs page lists all three runs.
    let runs = dump_dom(&format!("{}/#/", viewer.url));
    for run in [&terminus, &qa, &oracle] {
        let id = run.file_name().unwrap().to_string_lossy().into_owned();
        assert!(runs.contains(&id), "{id} missing from the runs page");
    }
    screenshot(&format!("{}/#/", viewer.url), "runs");

    // The terminus run page: its headline metric and its task list.
    let run_url = format!("{}/#/run/{}", viewer.url, route(&root, &terminus));
    let page = dump_dom(&run_url);
    assert!(page.contains("id=\"headline\""), "{page}");
    assert_eq!(count(&page, "data-task-id="), 4, "{page}");
    // What ran: the host and the plugins with their sha256, the model endpoint, the machine.
    for shown in [
        "agentcompass-host 0.1.0",
        "harbor-pack 0.1.0 sha256:",
        "model endpoint",
        "CPUs",
    ] {
        assert!(page.contains(shown), "{shown}: {page}");
    }
    screenshot(&run_url, "run-terminus");

    // A filter narrows the list: two of the four recorded answers are wrong.
    let qa_url = format!("{}/#/run/{}", viewer.url, route(&root, &qa));
    let all = count(&dump_dom(&qa_url), "data-task-id=");
    let correct = count(
        &dump_dom(&format!("{qa_url}?filter=correct")),
        "data-task-id=",
    );
    assert_eq!(all, 4);
    assert!(correct < all && correct > 0, "{correct} of {all}");

    // The terminus trajectory of hello-file shows its commands.
    let task_url = viewer.task_url(&root, &terminus, "hello-file");
    let task = dump_dom(&task_url);
    assert!(task.contains("class=\"step"), "{task}");
    assert!(task.contains("cat /app/hello.txt"), "{task}");
    screenshot(&task_url, "task-terminus-hello-file");

    // The payloads show as characters and never run: in the question and in an observation.
    let xss_url = viewer.task_url(&root, &qa, "xss-question");
    let observation_url = viewer.task_url(&root, &terminus, "xss-observation");
    for (url, shown) in [
        (
            &xss_url,
            "&lt;script&gt;document.title='pwned'&lt;/script&gt;",
        ),
        (
            &observation_url,
            "&lt;img src=x onerror=\"document.title='pwned'\"&gt;",
        ),
    ] {
        let dom = dump_dom(url);
        assert!(dom.contains(shown), "{url}: {dom}");
        assert_eq!(count(&dom, "<img"), 0, "{url}: {dom}");
        assert!(
            dom.contains("<title>agentcompass viewer</title>"),
            "{url}: {dom}"
        );
    }
    screenshot(&xss_url, "task-xss-question");
    screenshot(&observation_url, "task-xss-observation");

    report_opens_offline(&ws, &terminus);
}

/// `dom` without the report's JSON data block (which holds every text of the run as JSON).
fn rendered(dom: &str) -> String {
    match report_data_block(dom) {
        Some((tag, json)) => format!("{}{}", &dom[..tag], &dom[json.end..]),
        None => dom.to_string(),
    }
}

/// `report` on the terminus run opens from `file://`, renders from its embedded data and
/// makes no network request (chromium's net log records none from the page; a control page
/// shows that the log would).
fn report_opens_offline(ws: &Workspace, terminus: &Path) {
    let control = ws.write(
        "control.html",
        "<img src=\"http://192.0.2.1/pixel.png\"><script>fetch('https://example.invalid/x')</script>",
    );
    let (_, seen) = dump_dom_logged(&format!("file://{}", control.display()));
    assert!(
        seen.iter().any(|u| u.contains("192.0.2.1"))
            && seen.iter().any(|u| u.contains("example.invalid")),
        "the net log misses a page's requests: {seen:?}"
    );

    let file = ws.root().join("terminus-report.html");
    ws.run_ok(
        &[
            "report",
            terminus.to_str().unwrap(),
            "--out",
            file.to_str().unwrap(),
        ],
        &[],
    );
    let base = format!("file://{}", file.display());
    let run_path = terminus.file_name().unwrap().to_string_lossy().into_owned();
    let mut requests = Vec::new();

    let (page, seen) = dump_dom_logged(&format!("{base}#/"));
    requests.extend(seen);
    let page = rendered(&page);
    assert!(page.contains("id=\"headline\""), "{page}");
    assert!(page.contains("Report of"), "{page}");
    assert_eq!(count(&page, "data-task-id="), 4, "{page}");

    let task_url = |id: &str| {
        format!(
            "{base}#/task/{run_path}/{}",
            task_ref(terminus, id).replace('/', "%2F")
        )
    };
    let (task, seen) = dump_dom_logged(&task_url("hello-file"));
    requests.extend(seen);
    let task = rendered(&task);
    assert!(task.contains("class=\"step"), "{task}");
    assert!(task.contains("cat /app/hello.txt"), "{task}");

    let (xss, seen) = dump_dom_logged(&task_url("xss-observation"));
    requests.extend(seen);
    let xss = rendered(&xss);
    assert!(
        xss.contains("&lt;img src=x onerror=\"document.title='pwned'\"&gt;"),
        "{xss}"
    );
    assert_eq!(count(&xss, "<img"), 0, "{xss}");
    assert!(xss.contains("<title>agentcompass report</title>"), "{xss}");
    assert!(
        requests.is_empty(),
        "the report made requests: {requests:?}"
    );

    screenshot(&format!("{base}#/"), "report-terminus");
    screenshot(&task_url("hello-file"), "report-task-hello-file");
}

/// `state/dir` of the published task `task_id` in `run`.
fn task_ref(run: &Path, task_id: &str) -> String {
    for state in ["normal", "error", "fatal"] {
        for entry in std::fs::read_dir(run.join("details").join(state))
            .into_iter()
            .flatten()
            .flatten()
        {
            let task: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(entry.path().join("task.json")).unwrap_or_default(),
            )
            .unwrap_or_default();
            if task["task_id"] == json!(task_id) {
                return format!("{state}/{}", entry.file_name().to_string_lossy());
            }
        }
    }
    panic!("{task_id} not published in {}", run.display());
}
