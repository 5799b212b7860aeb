//! The viewer in a real browser: Debian's `chromium`, headless (`./dev.sh test` installs it),
//! loads `agentcompass-host view` on real runs — the demo's (`oracle` and `terminus` on the
//! bundled Harbor tasks in `sandbox`, driven by the demo's scripted model) and a run whose task
//! question and trajectory observation carry XSS payloads — and the test reads the DOM after
//! the page's scripts ran (`--dump-dom`). Screenshots go to `<target>/viewer-screenshots/`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use agentcompass_e2e::scripted::ScriptedServer;
use agentcompass_e2e::{host_bin, run_dir, target_dir, PluginDirs, Workspace};
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

fn chromium_args(profile: &Path) -> Vec<String> {
    vec![
        "--headless=new".into(),
        "--no-sandbox".into(),
        "--disable-gpu".into(),
        "--hide-scrollbars".into(),
        "--virtual-time-budget=3000".into(),
        format!("--user-data-dir={}", profile.display()),
    ]
}

/// The DOM of `url` after its scripts ran.
fn dump_dom(url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new("chromium")
        .args(chromium_args(profile.path()))
        .arg("--dump-dom")
        .arg(url)
        .output()
        .expect("chromium is not installed: run the tests with ./dev.sh test, which installs it");
    assert!(out.status.success(), "chromium failed: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
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
        let out = ws.run(&args, env);
        assert_eq!(out.code, 0, "{out:?}");
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
fn the_viewer_renders_real_runs_and_untrusted_text_as_text_in_chromium() {
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
