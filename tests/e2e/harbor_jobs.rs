//! Issue 57: Harbor job directories both ways. `export harbor` of a run: Harbor 0.25's own
//! viewer backend (started on loopback on the exported jobs directory) lists the job, its
//! trials and their rewards and serves each trajectory; its `traces export` reads the job
//! (one row per attempt); its pydantic models load every record. The same run, exported and
//! read back, compares equal to the original, task by task.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agentcompass_e2e::atif::harbor_python;
use agentcompass_e2e::scripted::ScriptedServer;
use agentcompass_e2e::{closed_loopback_port, http_get, run_dir, terminus_args, Packs, Workspace};
use serde_json::{json, Value};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Harbor's CLI beside its Python, kept off every public endpoint (LiteLLM's price map and
/// Hugging Face's hub are read offline).
pub(crate) fn harbor(args: &[&str]) -> Command {
    let python = harbor_python();
    let mut command = Command::new(python.with_file_name("harbor"));
    command
        .args(args)
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("HF_DATASETS_OFFLINE", "1")
        .env("HF_HUB_OFFLINE", "1");
    command
}

/// `harbor view JOBS --jobs` on a loopback port, killed when dropped.
struct HarborViewer {
    child: Child,
    port: u16,
}

impl HarborViewer {
    fn start(jobs: &Path) -> HarborViewer {
        let port = closed_loopback_port();
        let child = harbor(&["view"])
            .arg(jobs)
            .args(["--jobs", "--no-build", "--host", "127.0.0.1", "--port"])
            .arg(port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("harbor view");
        let viewer = HarborViewer { child, port };
        let deadline = Instant::now() + Duration::from_secs(60);
        while viewer.try_get("/api/health").is_none() {
            assert!(Instant::now() < deadline, "harbor view did not answer");
            std::thread::sleep(Duration::from_millis(200));
        }
        viewer
    }

    fn try_get(&self, target: &str) -> Option<(u16, Vec<u8>)> {
        http_get(self.port, target)
    }

    fn json(&self, target: &str) -> Value {
        let (status, body) = self.try_get(target).expect("an answer");
        assert_eq!(status, 200, "{target}: {}", String::from_utf8_lossy(&body));
        serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{target}: {e}"))
    }
}

impl Drop for HarborViewer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A terminus run of the bundled tasks in the sandbox against the demo's scripted model.
fn terminus_run(ws: &Workspace) -> PathBuf {
    let text = fs::read_to_string(repo_root().join("examples/demo/terminus-script.json")).unwrap();
    let script: Value = serde_json::from_str(&text).unwrap();
    let key = script["require_key"].as_str().unwrap().to_string();
    let server = ScriptedServer::start(&script, None).unwrap();
    let plugins = Packs::harbor();
    let params = json!({"path": repo_root().join("examples/harbor")}).to_string();
    let base_url = server.base_url();
    let mut args = terminus_args(&plugins, &params, &base_url, "${E2E_JOBS_KEY}");
    args.extend(["--progress", "none"]);
    let out = ws.run(&args, &[("E2E_JOBS_KEY", &key)]).expect_code(0);
    run_dir(&out)
}

#[test]
fn an_exported_run_opens_in_harbors_viewer_and_traces_export() {
    let ws = Workspace::new();
    let run = terminus_run(&ws);
    let jobs = ws.root().join("jobs");
    fs::create_dir_all(&jobs).unwrap();
    let job = jobs.join("terminus-job");
    let out = ws.run(
        &[
            "export",
            "harbor",
            run.to_str().unwrap(),
            "--out",
            job.to_str().unwrap(),
        ],
        &[],
    );
    let out = out.expect_code(0);
    assert!(out.stdout.contains("exported 3 trials"), "{out:?}");
    // Harbor's models load every record.
    let load = "import json, sys, pathlib\n\
        from harbor.models.job.config import JobConfig\n\
        from harbor.models.job.result import JobResult\n\
        from harbor.models.trial.config import TrialConfig\n\
        from harbor.models.trial.result import TrialResult\n\
        job = pathlib.Path(sys.argv[1])\n\
        JobConfig.model_validate_json((job / 'config.json').read_text())\n\
        JobResult.model_validate_json((job / 'result.json').read_text())\n\
        n = 0\n\
        for trial in sorted(p for p in job.iterdir() if p.is_dir()):\n\
        \x20   TrialConfig.model_validate_json((trial / 'config.json').read_text())\n\
        \x20   TrialResult.model_validate_json((trial / 'result.json').read_text())\n\
        \x20   n += 1\n\
        print('trials', n)\n";
    let loaded = Command::new(harbor_python())
        .args(["-c", load])
        .arg(&job)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&loaded.stdout).trim(),
        "trials 3",
        "{}",
        String::from_utf8_lossy(&loaded.stderr)
    );
    // Harbor's viewer backend: the job, its trials with their rewards, each trajectory.
    let viewer = HarborViewer::start(&jobs);
    let listed = viewer.json("/api/jobs");
    assert_eq!(listed["total"], json!(1), "{listed}");
    let summary = &listed["items"][0];
    assert_eq!(summary["name"], json!("terminus-job"));
    assert_eq!(summary["n_total_trials"], json!(3));
    assert_eq!(summary["agents"], json!(["terminus-2"]), "{summary}");
    let trials = viewer.json("/api/jobs/terminus-job/trials");
    let items = trials["items"].as_array().unwrap();
    assert_eq!(items.len(), 3, "{trials}");
    for trial in items {
        assert_eq!(trial["reward"], json!(1.0), "{trial}");
        let name = trial["name"].as_str().unwrap();
        let trajectory = viewer.json(&format!("/api/jobs/terminus-job/trials/{name}/trajectory"));
        assert_eq!(trajectory["schema_version"], json!("ATIF-v1.8"));
        assert_eq!(trajectory["agent"]["name"], json!("terminus-2"));
        assert!(
            trajectory["steps"].as_array().unwrap().len() >= 3,
            "{trajectory}"
        );
    }
    drop(viewer);
    // Harbor's trace export: one row per attempt (its last episode).
    let traces = harbor(&["traces", "export", "--episodes", "last", "-p"])
        .arg(&job)
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&traces.stdout);
    assert!(
        traces.status.success() && printed.contains("Exported 3 rows"),
        "{printed}{}",
        String::from_utf8_lossy(&traces.stderr)
    );
    // Read back as a run and compared with the original: the same reward on every task.
    let compared = ws
        .run(
            &[
                "compare",
                job.to_str().unwrap(),
                run.to_str().unwrap(),
                "--json",
            ],
            &[],
        )
        .expect_code(0);
    let comparison: Value = serde_json::from_str(&compared.stdout).unwrap();
    assert_eq!(comparison["shared"], json!(3), "{comparison}");
    assert_eq!(comparison["only_a"], json!([]));
    assert_eq!(comparison["only_b"], json!([]));
    assert_eq!(comparison["mean_a"], json!(1.0));
    assert_eq!(comparison["difference"], json!(0.0));
    assert_eq!(comparison["interval"]["low"], json!(0.0), "{comparison}");
    assert_eq!(comparison["interval"]["high"], json!(0.0), "{comparison}");
    assert_eq!(comparison["a"]["run_dir"], json!(job.to_str().unwrap()));
    let summary = ws
        .run(&["summary", job.to_str().unwrap()], &[])
        .expect_code(0);
    assert!(
        summary
            .stdout
            .contains("| reward | native@1 | 1.0000 | 3 |"),
        "{}",
        summary.stdout
    );
}

/// The rows of `export traces` of the run at `run`, as Harbor's `traces export` writes them
/// for the same run exported as a job (`job`).
fn harbor_traces_diff(ws: &Workspace, run: &Path, job: &Path) -> Value {
    let ours = ws.root().join("ours.jsonl");
    ws.run(
        &[
            "export",
            "traces",
            run.to_str().unwrap(),
            "--out",
            ours.to_str().unwrap(),
        ],
        &[],
    )
    .expect_code(0);
    let mut command = Command::new(harbor_python());
    command
        .arg(repo_root().join("tests/harbor_oracle/traces.py"))
        .arg(job)
        .arg(&ours)
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True");
    last_json_line(command)
}

/// The JSON of the last line `command` (a Harbor-Python script, kept offline) prints.
fn last_json_line(mut command: Command) -> Value {
    let out = command
        .env("HF_DATASETS_OFFLINE", "1")
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout}{}", String::from_utf8_lossy(&out.stderr)))
}

/// Loads `file` with Hugging Face `datasets` (`load_dataset("parquet", ...)`): its row count
/// and columns.
fn load_parquet(file: &Path) -> Value {
    let script = "import json, sys\n\
        from datasets import load_dataset\n\
        d = load_dataset('parquet', data_files=sys.argv[1], split='train')\n\
        print(json.dumps({'rows': d.num_rows, 'columns': d.column_names, \
        'last': d[0]['conversations'][-1]['role'] if d.num_rows else None}))\n";
    let mut command = Command::new(harbor_python());
    command
        .args(["-c", script])
        .arg(file)
        .env("HF_DATASETS_CACHE", file.with_extension("cache"));
    last_json_line(command)
}

#[test]
fn training_rows_are_harbors_and_load_with_hugging_face_datasets() {
    let ws = Workspace::new();
    let run = terminus_run(&ws);
    let job = ws.root().join("jobs/terminus-job");
    fs::create_dir_all(job.parent().unwrap()).unwrap();
    ws.run(
        &[
            "export",
            "harbor",
            run.to_str().unwrap(),
            "--out",
            job.to_str().unwrap(),
        ],
        &[],
    )
    .expect_code(0);
    // Every episode's row is the one Harbor's own export writes.
    let diff = harbor_traces_diff(&ws, &run, &job);
    assert_eq!(diff["diffs"], json!([]), "{diff}");
    assert_eq!(diff["rows"][0], diff["rows"][1], "{diff}");
    assert!(diff["rows"][0].as_u64().unwrap() >= 6, "{diff}");
    // Parquet, one row per attempt, loaded by `datasets`.
    let parquet = ws.root().join("last.parquet");
    let out = ws
        .run(
            &[
                "export",
                "traces",
                run.to_str().unwrap(),
                "--out",
                parquet.to_str().unwrap(),
                "--episodes",
                "last",
            ],
            &[],
        )
        .expect_code(0);
    assert!(
        out.stdout.contains("exported 3 rows from 3 attempts"),
        "{out:?}"
    );
    let loaded = load_parquet(&parquet);
    assert_eq!(loaded["rows"], json!(3), "{loaded}");
    assert_eq!(
        loaded["columns"],
        json!([
            "conversations",
            "agent",
            "model",
            "model_provider",
            "date",
            "task",
            "episode",
            "run_id",
            "trial_name",
            "result",
            "reward",
            "tool_definitions"
        ])
    );
    assert_eq!(loaded["last"], json!("assistant"));
    // The filters: no attempt failed, none reached a reward of 2.
    for filter in [["--filter", "failure"], ["--min-reward", "2"]] {
        let file = ws.root().join("filtered.jsonl");
        let mut args = vec![
            "export",
            "traces",
            run.to_str().unwrap(),
            "--out",
            file.to_str().unwrap(),
        ];
        args.extend(filter);
        let out = ws.run(&args, &[]).expect_code(0);
        assert!(
            out.stdout.contains("exported 0 rows from 0 attempts"),
            "{out:?}"
        );
        assert_eq!(fs::read_to_string(&file).unwrap(), "");
    }
    let bad = ws.run(
        &[
            "export",
            "traces",
            run.to_str().unwrap(),
            "--out",
            "rows.csv",
        ],
        &[],
    );
    let bad = bad.expect_code(2);
    assert!(
        bad.stderr
            .contains("expected a file ending in .jsonl or .parquet"),
        "{bad:?}"
    );
}
