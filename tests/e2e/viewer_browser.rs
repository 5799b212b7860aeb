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
    /// `http://127.0.0.1:PORT`.
    url: String,
    /// The controls' secret the printed URL carried (`?token=`).
    token: String,
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
        let printed = line.trim().rsplit(' ').next().unwrap();
        let (url, token) = printed
            .split_once("/?token=")
            .unwrap_or_else(|| panic!("no control secret in {line:?}"));
        assert!(url.starts_with("http://127.0.0.1:"), "{line}");
        Viewer {
            child,
            url: url.to_string(),
            token: token.to_string(),
        }
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
pub(crate) fn dump_dom(url: &str) -> String {
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

/// The runs the test renders, all under one results root.
struct Runs {
    /// `harbor` / `terminus` against the demo's scripted model (with an XSS observation).
    terminus: PathBuf,
    /// `qa` / `example_calculator` on questions with XSS payloads.
    qa: PathBuf,
    /// `harbor` / `oracle`.
    oracle: PathBuf,
    /// `qa` / `openai_chat` on the same questions (its input: chat messages as JSON text;
    /// one task fixed and one broken against `qa`).
    chat: PathBuf,
    /// A copy of `qa` turned into a run that is still going.
    live: PathBuf,
}

/// What the scripted model answers the QA questions through `openai_chat`: q-add wrong
/// (broken against the calculator), q-mul as recorded (fixed), the others as the calculator.
fn chat_rules() -> Vec<serde_json::Value> {
    [
        ("1 + 1", "2"),
        ("2 + 2", "5"),
        ("6 * 7", "41"),
        ("9 - 1", "8"),
    ]
    .map(|(asked, answer)| {
        json!({"match": {"any_message_contains": format!("What is {asked}?")}, "responses": [
                {"text": answer, "usage": {"prompt_tokens": 12, "completion_tokens": 1}}]})
    })
    .to_vec()
}

/// The demo's two runs (oracle, then terminus against the demo's scripted model), a QA run with
/// XSS payloads, the same questions through `openai_chat`, and a live copy of the QA run, all
/// under `root`.
fn make_runs(ws: &Workspace, root: &Path) -> Runs {
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
    for (at, rule) in chat_rules().into_iter().enumerate() {
        script["rules"].as_array_mut().unwrap().insert(at, rule);
    }
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
    let chat = run(
        common(&[])
            .into_iter()
            .chain(
                [
                    "qa",
                    "openai_chat",
                    "scripted-model",
                    "--benchmark-params",
                    &qa_params,
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
    let live = make_live_copy(&qa, &root.join("live/live-copy"));
    Runs {
        terminus,
        qa,
        oracle,
        chat,
        live,
    }
}

/// A copy of the finished run `run` at `to`, turned into a run still going: status `running`
/// (run_info.json, progress.json, with one active task updated just now), no metrics.json yet,
/// and its task `q-sub` back in `details/running/`.
fn make_live_copy(run: &Path, to: &Path) -> PathBuf {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    let copied = Command::new("cp")
        .arg("-r")
        .arg(run)
        .arg(to)
        .status()
        .unwrap();
    assert!(copied.success());
    let edit = |name: &str, change: &dyn Fn(&mut serde_json::Value)| {
        let path = to.join(name);
        let mut value: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        change(&mut value);
        std::fs::write(&path, value.to_string()).unwrap();
    };
    edit("run_info.json", &|info| {
        info["status"] = json!("running");
        info["run_id"] = json!("live-copy");
        info.as_object_mut().unwrap().remove("finished_at");
    });
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    edit("progress.json", &|progress| {
        progress["status"] = json!("running");
        progress["running_tasks"] = json!(1);
        progress["updated_at"] = json!(now);
        progress["active_tasks"] = json!({"q-sub": {"category": "sub", "phase": "run_harness",
            "attempt": 1, "updated_at": now}});
        // Paused through its control socket, its endpoint rate-limited.
        progress["control"] = json!({"socket": "/nonexistent/ctl.sock", "paused": true,
            "task_concurrency": 4});
        progress["model_endpoints"] = json!({"http://127.0.0.1:9/v1/chat/completions": {
            "limit": 3, "max": 32, "in_flight": 2, "waiting": 5, "rate_limited": 61,
            "waited_seconds": 12.5}});
    });
    std::fs::remove_file(to.join("metrics.json")).unwrap();
    let moved = task_ref(to, "q-sub");
    let name = moved.split_once('/').unwrap().1;
    std::fs::create_dir_all(to.join("details/running")).unwrap();
    std::fs::rename(
        to.join("details").join(&moved),
        to.join("details/running").join(name),
    )
    .unwrap();
    to.to_path_buf()
}

#[test]
fn the_viewer_and_the_report_render_real_runs_and_untrusted_text_as_text_in_chromium() {
    let ws = Workspace::new();
    let root = ws.root().join("results");
    let runs = make_runs(&ws, &root);
    let (terminus, qa) = (&runs.terminus, &runs.qa);
    let viewer = Viewer::start(&root);

    // The runs page lists every run.
    let page = dump_dom(&format!("{}/#/", viewer.url));
    for run in [terminus, qa, &runs.oracle, &runs.chat] {
        let id = run.file_name().unwrap().to_string_lossy().into_owned();
        assert!(page.contains(&id), "{id} missing from the runs page");
    }
    runs_page_words_times_and_so_far(&page, &root, &runs.live);
    screenshot(&format!("{}/#/", viewer.url), "runs");

    // The terminus run page: its headline metric and its task list.
    let run_url = format!("{}/#/run/{}", viewer.url, route(&root, terminus));
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
    // Its model (`scripted-model`) is in no price list: its cost reads "no price", not $0.
    assert!(page.contains("no price"), "{page}");
    assert!(!page.contains("$0.0000"), "{page}");
    // Harbor's headline is a scalar (reward, 3 of 4 tasks solved): four decimals, as the CLI.
    assert!(page.contains("id=\"headline\">0.7500<"), "{page}");
    assert_marks_mean_correct(&page);
    assert_durations_readable(&page, 4);
    run_page_charts(&page, terminus, 4);
    screenshot(&run_url, "run-terminus");

    // A filter narrows the list: two of the four recorded answers are wrong; a binary
    // headline is a percentage with two decimals.
    let qa_url = format!("{}/#/run/{}", viewer.url, route(&root, qa));
    let page = dump_dom(&qa_url);
    assert_eq!(count(&page, "data-task-id="), 4);
    assert!(page.contains("id=\"headline\">50.00%<"), "{page}");
    let rewards = chart(&page, "rewards");
    assert_eq!(bin_counts(rewards), [2, 2], "{rewards}");
    let correct = count(
        &dump_dom(&format!("{qa_url}?filter=correct")),
        "data-task-id=",
    );
    assert!(correct < 4 && correct > 0, "{correct} of 4");

    live_run_page(&viewer, &root, &runs.live);

    // The terminus trajectory of hello-file shows its commands, steps numbered from 1, an
    // empty output as "(no output)" and the verifier's output; times are readable.
    let task_url = viewer.task_url(&root, terminus, "hello-file");
    let task = dump_dom(&task_url);
    assert!(task.contains("class=\"step"), "{task}");
    assert!(task.contains("cat /app/hello.txt"), "{task}");
    assert!(task.contains("data-step=\"1\""), "{task}");
    assert!(task.contains("(no output)"), "{task}");
    let verifier = between(&task, "id=\"verifier\"", "</section>");
    assert!(verifier.contains("hello.txt is correct"), "{verifier}");
    assert!(verifier.contains("data-exit-code=\"0\""), "{verifier}");
    let timings = between(&task, "<h2>Timings</h2>", "</section>");
    assert!(timings.contains(" UTC"), "{timings}");
    assert_no_epoch(timings);
    screenshot(&task_url, "task-terminus-hello-file");

    // openai_chat records the messages it sent as JSON text in a step numbered 0: shown as
    // chat messages with their roles, the step numbered 1.
    let chat_url = viewer.task_url(&root, &runs.chat, "q-add");
    let chat = dump_dom(&chat_url);
    assert!(chat.contains("data-role=\"user\""), "{chat}");
    assert!(
        chat.contains("What is 2 + 2? Answer with only the number."),
        "{chat}"
    );
    assert!(!chat.contains("[{\"role\""), "raw JSON messages: {chat}");
    assert!(chat.contains("data-step=\"1\""), "{chat}");
    assert!(
        !chat.contains("data-step=\"0\"") && !chat.contains(">Step 0<"),
        "{chat}"
    );
    screenshot(&chat_url, "task-chat-q-add");

    // The payloads show as characters and never run: in the question (as a string and inside
    // chat messages) and in an observation.
    let xss_url = viewer.task_url(&root, qa, "xss-question");
    let chat_xss_url = viewer.task_url(&root, &runs.chat, "xss-question");
    let observation_url = viewer.task_url(&root, terminus, "xss-observation");
    for (url, shown) in [
        (
            &xss_url,
            "&lt;script&gt;document.title='pwned'&lt;/script&gt;",
        ),
        (
            &chat_xss_url,
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

    compare_page(&ws, &viewer, &root, qa, &runs.chat);

    report_opens_offline(&ws, terminus);
}

/// The markup from `start` up to the next `end` (panics when `start` is missing).
fn between<'a>(dom: &'a str, start: &str, end: &str) -> &'a str {
    let at = dom
        .find(start)
        .unwrap_or_else(|| panic!("no {start}: {dom}"));
    let rest = &dom[at..];
    &rest[..rest.find(end).unwrap_or(rest.len())]
}

/// The markup of the chart `name`: its `<svg data-chart="name">` element.
fn chart<'a>(dom: &'a str, name: &str) -> &'a str {
    let marker = format!("data-chart=\"{name}\"");
    let at = dom
        .find(&marker)
        .unwrap_or_else(|| panic!("no chart {name}: {dom}"));
    let start = dom[..at].rfind("<svg").unwrap();
    let end = at + dom[at..].find("</svg>").unwrap();
    &dom[start..end]
}

/// The task counts (`data-n`) of a histogram chart's bins (`data-bin`).
fn bin_counts(chart: &str) -> Vec<u64> {
    assert_eq!(
        count(chart, "data-bin="),
        count(chart, "data-n="),
        "{chart}"
    );
    chart
        .split("data-n=\"")
        .skip(1)
        .map(|rest| rest[..rest.find('"').unwrap()].parse().unwrap())
        .collect()
}

/// The headline series of a run's `metrics.json`.
fn headline_series(run: &Path) -> serde_json::Value {
    let metrics: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("metrics.json")).unwrap()).unwrap();
    metrics["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["role"] == "headline")
        .cloned()
        .unwrap()
}

/// The run page's charts of `run` (`tasks` published tasks): one bar per category of its
/// headline series, histograms of the primary metric (ten bins: Harbor's reward is a scalar
/// from 0 to 1), durations and tokens holding every task, and one timeline point per task.
fn run_page_charts(page: &str, run: &Path, tasks: u64) {
    let categories = headline_series(run)["categories"]
        .as_object()
        .unwrap()
        .len();
    let bars = chart(page, "categories");
    assert_eq!(count(bars, "data-bar="), categories, "{bars}");
    let rewards = bin_counts(chart(page, "rewards"));
    assert_eq!(rewards.len(), 10, "{rewards:?}");
    for name in ["rewards", "durations", "tokens"] {
        let counts = bin_counts(chart(page, name));
        assert_eq!(counts.iter().sum::<u64>(), tasks, "{name}: {counts:?}");
    }
    let timeline = chart(page, "timeline");
    assert!(
        timeline.contains(&format!("data-points=\"{tasks}\"")),
        "{timeline}"
    );
    assert_eq!(count(timeline, "<polyline"), 2, "{timeline}");
}

/// ✓ and ✗ mean correct and wrong and nothing else: every ✓ is a correctness mark.
fn assert_marks_mean_correct(page: &str) {
    assert!(count(page, "✓") > 0, "{page}");
    assert_eq!(
        count(page, "✓"),
        count(page, "title=\"correct\">✓"),
        "{page}"
    );
    assert_eq!(count(page, "✗"), count(page, "title=\"wrong\">✗"), "{page}");
}

/// Every task row's duration reads like `850 ms`, `1.2 s` or `3 min 04 s`.
fn assert_durations_readable(page: &str, rows: usize) {
    let cells: Vec<&str> = page
        .split("class=\"num duration\"")
        .skip(1)
        .map(|rest| {
            let text = &rest[rest.find('>').unwrap() + 1..];
            &text[..text.find("</td>").unwrap()]
        })
        .collect();
    assert_eq!(cells.len(), rows, "{page}");
    for cell in cells {
        let (number, unit) = cell.rsplit_once(' ').unwrap_or((cell, ""));
        assert!(
            matches!(unit, "ms" | "s") && number.split(' ').next().unwrap().parse::<f64>().is_ok(),
            "duration {cell:?}"
        );
    }
}

/// No Unix time (ten digits or more in a row) in the text of the markup `html` (its tags and
/// their attributes left out).
fn assert_no_epoch(html: &str) {
    let (mut digits, mut in_tag) = (0, false);
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            _ if in_tag => {}
            _ => {
                digits = if c.is_ascii_digit() { digits + 1 } else { 0 };
                assert!(digits < 10, "a raw epoch number in {html}");
            }
        }
    }
}

/// The runs page: task counts in words (no ✓ or ✗: they mean correct and wrong), start times
/// in UTC and no epoch numbers, and the live run's score so far.
fn runs_page_words_times_and_so_far(page: &str, root: &Path, live: &Path) {
    assert_eq!(count(page, "✓") + count(page, "✗"), 0, "{page}");
    assert!(page.contains("data-count=\"completed\""), "{page}");
    assert!(count(page, " UTC") >= 5, "{page}");
    assert_no_epoch(between(page, "id=\"runs-table\"", "</table>"));
    let rel = live
        .strip_prefix(root)
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let row = between(page, &format!("data-run=\"{rel}\""), "</tr>");
    assert!(row.contains("data-so-far="), "{row}");
    assert!(row.contains("66.67%") && row.contains("so far"), "{row}");
}

/// The live run's page: its score so far as the headline, its progress and active tasks with
/// readable times.
fn live_run_page(viewer: &Viewer, root: &Path, live: &Path) {
    let url = format!("{}/#/run/{}", viewer.url, route(root, live));
    let page = dump_dom(&url);
    assert!(page.contains("id=\"headline\">66.67%<"), "{page}");
    let label = between(&page, "id=\"headline-label\"", "</span>");
    assert!(label.contains("so far"), "{label}");
    let progress = between(&page, "id=\"run-live\"", "id=\"run-charts\"");
    assert!(
        progress.contains(" UTC") && progress.contains(" ago"),
        "{progress}"
    );
    assert!(
        progress.contains("data-active-task=\"q-sub\""),
        "{progress}"
    );
    assert_no_epoch(progress);
    // The endpoint's limit and the pause are shown; the page opened without the secret offers
    // no controls.
    assert!(
        progress.contains("data-endpoint=\"http://127.0.0.1:9/v1/chat/completions\"")
            && progress.contains(">3 / 32<")
            && progress.contains("id=\"paused\""),
        "{progress}"
    );
    assert!(
        !page.contains("id=\"control-pause\""),
        "controls without the secret"
    );
    screenshot(&url, "run-live");
    // Opened from the URL `view` printed (with its secret): the controls, in the run's state.
    let with_secret = format!(
        "{}/?token={}#/run/{}",
        viewer.url,
        viewer.token,
        route(root, live)
    );
    let page = dump_dom(&with_secret);
    let controls = between(&page, "id=\"run-control\"", "id=\"run-live\"");
    assert!(
        controls.contains("id=\"control-pause\"") && controls.contains(">Resume<"),
        "{controls}"
    );
    assert!(
        controls.contains("id=\"control-concurrency\""),
        "{controls}"
    );
    assert!(!page.contains(&viewer.token), "the secret left in the page");
    screenshot(&with_secret, "run-live-controls");
}

/// The compare page of `a` against `b`: the lines `agentcompass-host compare A B` prints (the
/// difference with its interval, McNemar's test), B − A per category as bars and the tasks
/// fixed and broken.
fn compare_page(ws: &Workspace, viewer: &Viewer, root: &Path, a: &Path, b: &Path) {
    let cli = ws.run_ok(&["compare", a.to_str().unwrap(), b.to_str().unwrap()], &[]);
    let url = format!(
        "{}/#/compare/{}/{}",
        viewer.url,
        route(root, a),
        route(root, b)
    );
    let page = dump_dom(&url);
    let paired = between(&page, "id=\"paired\"", "</section>");
    let printed: Vec<&str> = cli
        .stdout
        .lines()
        .filter(|l| l.starts_with("A ") || l.starts_with("McNemar") || l.starts_with("shared"))
        .filter(|l| !l.starts_with("A: "))
        .collect();
    assert_eq!(printed.len(), 3, "{}", cli.stdout);
    for line in printed {
        assert!(paired.contains(line), "{line:?} not in {paired}");
    }
    assert!(paired.contains("fixed 1, broken 1"), "{paired}");
    let deltas = chart(&page, "category-deltas");
    assert_eq!(count(deltas, "data-bar="), 4, "{deltas}");
    let fixed_broken = chart(&page, "fixed-broken");
    assert_eq!(count(fixed_broken, "data-bar="), 2, "{fixed_broken}");
    assert_marks_mean_correct(&page);
    screenshot(&url, "compare");
}

/// `dom` without the report's JSON data block (which holds every text of the run as JSON).
pub(crate) fn rendered(dom: &str) -> String {
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
    // The charts are drawn from the embedded data too.
    run_page_charts(&page, terminus, 4);

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

/// The front end's number formats, run by Chromium on app.js itself, are the CLI's: a binary
/// metric `{:.2}%` of the value × 100, a scalar `{:.4}`, a difference `{:+.2} pp` (Rust's
/// formatter: ties round half to even, a negative zero keeps its sign); durations read like
/// `1.2 s` and `3 min 04 s`, times like `2026-03-04 12:34:56 UTC`.
#[test]
fn the_front_ends_number_formats_are_the_clis() {
    let ws = Workspace::new();
    let values = [
        // Exact ties at four decimals, and (× 100) at two.
        0.03125,
        0.09375,
        0.15625,
        -0.03125,
        0.0003125,
        0.0009375,
        0.0,
        -0.0,
        1.0,
        0.5,
        0.125,
        0.375,
        0.0625,
        0.00125,
        0.00625,
        1.0 / 3.0,
        2.0 / 3.0,
        0.83335,
        1.00005,
        12.345,
        -0.25,
        -0.125,
        2.5e-5,
        0.999999,
        0.7549999,
        123456.78125,
    ];
    let app = repo().join("host/viewer/assets/app.js");
    let page = ws.write(
        "formats.html",
        &format!(
            "<!doctype html><html><head><script src=\"file://{}\"></script></head><body>\
             <pre id=\"out\"></pre><script>\
             const values = {};\
             const out = values.map((v) => [fmtMetric(v, 'binary_success'), fmtMetric(v, 'scalar'),\
               fmtDelta(v, 'binary_success'), fmtDelta(v, 'scalar')]);\
             out.push([fmtDuration(0.0432), fmtDuration(1.234), fmtDuration(59.96), fmtDuration(184),\
               fmtDuration(7500), fmtTime(1772627696), fmtTime('2026-03-04T12:34:56Z'), fmtMetric(null, 'scalar')]);\
             document.getElementById('out').textContent = JSON.stringify(out);\
             </script></body></html>",
            app.display(),
            serde_json::to_string(&values.to_vec()).unwrap()
        ),
    );
    let dom = dump_dom(&format!("file://{}", page.display()));
    let text = between(&dom, "<pre id=\"out\">", "</pre>")
        .trim_start_matches("<pre id=\"out\">")
        .replace("&amp;", "&");
    let got: Vec<Vec<String>> =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {dom}"));
    for (v, row) in values.iter().zip(&got) {
        let expected = [
            format!("{:.2}%", v * 100.0),
            format!("{v:.4}"),
            format!("{:+.2} pp", v * 100.0),
            format!("{v:+.4}"),
        ];
        assert_eq!(row, &expected, "{v}");
    }
    assert_eq!(
        got[values.len()],
        [
            "43 ms",
            "1.2 s",
            "1 min 00 s",
            "3 min 04 s",
            "2 h 05 min",
            "2026-03-04 12:34:56 UTC",
            "2026-03-04 12:34:56 UTC",
            "n/a"
        ]
    );
}
