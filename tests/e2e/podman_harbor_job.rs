//! Issue 57: a real Harbor job — Harbor 0.25 itself running the bundled tasks with `oracle`
//! through `--env podman` (podman-compose from PyPI in its venv) on the tier's Podman store —
//! opens in our `view`, `report` and `compare`, paired by task with our own oracle run of the
//! same tasks, rewards equal. (Harbor's Podman environment refuses `network_mode =
//! "no-network"`, and a task needs an image: the copies Harbor runs drop that line and build
//! `FROM` the agents' image of the tier's store.)

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use agentcompass_e2e::atif::harbor_python;
use agentcompass_e2e::{host_bin, http_get, pack_run, run_dir, Packs, Workspace};
use serde_json::{json, Value};

use super::{podman_env, repo_root};

/// Copies of the bundled tasks as Harbor's Podman environment runs them.
fn harbor_tasks(ws: &Workspace) -> std::path::PathBuf {
    let image = std::env::var("AGENTCOMPASS_TEST_AGENT_IMAGE")
        .expect("AGENTCOMPASS_TEST_AGENT_IMAGE: run the podman tier with ./dev.sh test");
    let tasks = ws.root().join("harbor-tasks");
    for name in ["fizzbuzz", "hello-file", "primes"] {
        let from = repo_root().join("examples/harbor").join(name);
        let to = tasks.join(name);
        for entry in agentcompass_e2e::files_under(&from) {
            let target = to.join(entry.strip_prefix(&from).unwrap());
            fs::create_dir_all(target.parent().unwrap()).unwrap();
            fs::copy(&entry, &target).unwrap();
        }
        let toml = fs::read_to_string(to.join("task.toml")).unwrap();
        let kept: Vec<&str> = toml
            .lines()
            .filter(|l| !l.starts_with("network_mode"))
            .collect();
        fs::write(to.join("task.toml"), kept.join("\n") + "\n").unwrap();
        fs::create_dir_all(to.join("environment")).unwrap();
        fs::write(
            to.join("environment/Dockerfile"),
            format!("FROM {image}\nWORKDIR /app\n"),
        )
        .unwrap();
    }
    tasks
}

/// `GET target` of our viewer on `port`, as JSON.
fn get_json(port: u16, target: &str) -> Value {
    let (_, body) = http_get(port, target).expect("an answer");
    serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{target}: {e}"))
}

/// Our viewer's runs over `dir` (a Harbor job), the viewer's temporary files under `tmp`;
/// the viewer is stopped as a user stops it (SIGINT), and leaves nothing in `tmp`.
fn viewer_runs(dir: &Path, tmp: &Path) -> Value {
    fs::create_dir_all(tmp).unwrap();
    let mut child = Command::new(host_bin())
        .args(["--no-bundled-plugins", "view"])
        .arg(dir)
        .args(["--port", "0"])
        .env("TMPDIR", tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start view");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line
        .trim()
        .strip_prefix("agentcompass viewer: http://127.0.0.1:")
        .and_then(|rest| rest.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    let runs = get_json(port, "/api/runs");
    // The job was read into a temporary directory under `tmp`, removed when the viewer stops.
    assert_eq!(
        fs::read_dir(tmp).unwrap().count(),
        1,
        "the job's temporary run"
    );
    let interrupted = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupted.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "view did not stop on SIGINT"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let left: Vec<_> = fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    runs
}

#[test]
fn a_harbor_job_opens_in_view_report_and_compare_paired_with_our_run() {
    let ws = Workspace::new();
    let tasks = harbor_tasks(&ws);
    let jobs = ws.root().join("jobs");
    let python = harbor_python();
    let bin = python.parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let harbor = Command::new(bin.join("harbor"))
        .args([
            "run", "-a", "oracle", "--env", "podman", "-n", "1", "-y", "-q",
        ])
        .args(["--job-name", "harbor-oracle", "-p"])
        .arg(&tasks)
        .arg("-o")
        .arg(&jobs)
        .envs(podman_env())
        .env("PATH", path)
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .expect("harbor run");
    assert!(
        harbor.status.success(),
        "{}{}",
        String::from_utf8_lossy(&harbor.stdout),
        String::from_utf8_lossy(&harbor.stderr)
    );
    let job = jobs.join("harbor-oracle");
    // Our oracle run of the same tasks.
    let plugins = Packs::harbor();
    let params = json!({"path": repo_root().join("examples/harbor")}).to_string();
    let args = pack_run(
        &plugins,
        ["harbor", "oracle", "m"],
        &params,
        &["--env", "sandbox", "--progress", "none"],
    );
    let ours = run_dir(&ws.run(&args, &[]).expect_code(0));
    // compare: paired by task, the same rewards.
    let compared = ws
        .run(
            &[
                "compare",
                job.to_str().unwrap(),
                ours.to_str().unwrap(),
                "--json",
            ],
            &[],
        )
        .expect_code(0);
    let comparison: Value = serde_json::from_str(&compared.stdout).unwrap();
    assert_eq!(comparison["shared"], json!(3), "{comparison}");
    assert_eq!(comparison["only_a"], json!([]), "{comparison}");
    assert_eq!(comparison["mean_a"], json!(1.0));
    assert_eq!(comparison["mean_b"], json!(1.0));
    assert_eq!(comparison["a"]["harness"], json!("oracle"));
    // report: one HTML file, the job's tasks in it; nothing else written in the job.
    let report = ws.root().join("harbor-report.html");
    ws.run(
        &[
            "report",
            job.to_str().unwrap(),
            "--out",
            report.to_str().unwrap(),
        ],
        &[],
    )
    .expect_code(0);
    let html = fs::read_to_string(&report).unwrap();
    for task in ["fizzbuzz", "hello-file", "primes"] {
        assert!(html.contains(task), "{task} in the report");
    }
    // view: the job is a run of the harbor benchmark by oracle, three tasks, reward 1.
    let runs = viewer_runs(&job, &ws.root().join("view-tmp"));
    let listed = runs["runs"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{runs}");
    assert_eq!(listed[0]["benchmark"], json!("harbor"));
    assert_eq!(listed[0]["harness"], json!("oracle"));
    assert_eq!(listed[0]["total_tasks"], json!(3), "{runs}");
    assert_eq!(listed[0]["headline"]["value"], json!(1.0), "{runs}");
}
