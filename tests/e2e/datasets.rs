//! Harbor registry datasets end to end (issue 35): a `registry.json` whose tasks live in a
//! git repository made here (`file://`), run by `oracle` in the `sandbox` through the
//! `harbor` benchmark's `dataset` param; the cache under the data directory serving later
//! runs with the repository gone; a cached file altered by hand refused or fetched again;
//! provenance and digests on record; `--reuse` by digest; the refusals of bad input.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use agentcompass_e2e::{
    files_under, pack_run, published_results, read_json, run_dir, Outcome, Packs, Workspace,
};
use serde_json::{json, Value};

/// The digests Harbor 0.25 gives the bundled examples (`docs/design/harbor-datasets.md` §4).
const DIGESTS: [(&str, &str); 3] = [
    (
        "fizzbuzz",
        "e1d4a623f22772e6a4971ba090f96b7b70112894d1c241206e16c110bf777d01",
    ),
    (
        "hello-file",
        "afa6a31bc9ec4e10716d8324eff7eb90c8b3f72c360840ee1379d9adff8de62c",
    ),
    (
        "primes",
        "7fd72628955ae24254261a05e26c5041271fa723dd9772d03087092adef01c65",
    ),
];

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the repository")
        .join("examples/harbor")
}

/// Runs git in `dir` with a fixed identity, no user or system config.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A workspace with the harbor pack, a git repository holding the three bundled examples
/// under `tasks/`, and a registry naming them as `demo@1.0`.
pub(crate) struct Dataset {
    pub(crate) ws: Workspace,
    plugins: Packs,
    repo: PathBuf,
    commit: String,
    pub(crate) registry: PathBuf,
    pub(crate) data: PathBuf,
}

impl Dataset {
    pub(crate) fn new() -> Self {
        let ws = Workspace::new();
        let repo = ws.root().join("repo");
        fs::create_dir_all(repo.join("tasks")).unwrap();
        for (task, _) in DIGESTS {
            agentcompass_e2e::copy_tree(&examples().join(task), &repo.join("tasks").join(task));
        }
        git(&repo, &["init", "-q", "-b", "main"]);
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "tasks"]);
        let commit = git(&repo, &["rev-parse", "HEAD"]);
        let registry = ws.root().join("registry/registry.json");
        let data = ws.root().join("data");
        let dataset = Dataset {
            ws,
            plugins: Packs::harbor(),
            repo,
            commit,
            registry,
            data,
        };
        dataset.write_registry(&dataset.commit.clone());
        dataset
    }

    /// `registry.json`: `demo@1.0` (the three tasks at `commit`) and `demo@0.9`.
    fn write_registry(&self, commit: &str) {
        let url = format!("file://{}", self.repo.display());
        let tasks: Vec<Value> = DIGESTS
            .iter()
            .map(|(task, _)| {
                json!({"name": task, "git_url": url, "git_commit_id": commit,
                       "path": format!("tasks/{task}")})
            })
            .collect();
        let registry = json!([
            {"name": "demo", "version": "1.0", "description": "three examples", "tasks": tasks,
             "metrics": [{"type": "mean"}, {"type": "max"},
                         {"type": "uv-script", "kwargs": {"script_path": "metric.py"}}]},
            {"name": "demo", "version": "0.9", "description": "older", "tasks": [tasks[0]]},
        ]);
        fs::create_dir_all(self.registry.parent().unwrap()).unwrap();
        fs::write(&self.registry, registry.to_string()).unwrap();
    }

    fn params(&self, dataset: &str) -> String {
        json!({"dataset": dataset, "registry_path": self.registry}).to_string()
    }

    /// `run harbor oracle` on `params` in the sandbox with the data directory, then `extra`.
    fn run(&self, params: &str, extra: &[&str]) -> Outcome {
        let data = self.data.to_str().unwrap();
        let mut args = pack_run(
            &self.plugins,
            ["harbor", "oracle", "scripted-model"],
            params,
            &["--env", "sandbox", "--progress", "none", "--data-dir", data],
        );
        args.extend_from_slice(extra);
        self.ws.run(&args, &[])
    }

    fn results_root(&self) -> PathBuf {
        self.ws.cwd.join("results")
    }

    /// The cached copy of `task` (`tasks/<key>/task/`).
    fn cached(&self, task: &str) -> PathBuf {
        let tasks = self.data.join("datasets/tasks");
        fs::read_dir(&tasks)
            .unwrap()
            .flatten()
            .map(|e| e.path().join("task"))
            .find(|dir| {
                let entry = read_json(&dir.parent().unwrap().join("entry.json"));
                entry["path"] == format!("tasks/{task}")
            })
            .unwrap_or_else(|| panic!("no cached {task} under {}", tasks.display()))
    }
}

fn rewards(run: &Path) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = published_results(run)
        .into_iter()
        .map(|(id, (_, result))| (id, result["metrics"]["reward"].as_f64().unwrap()))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn all_pass() -> Vec<(String, f64)> {
    DIGESTS.iter().map(|(t, _)| (t.to_string(), 1.0)).collect()
}

/// A relative `--data-dir` (issue 58): the cached task directories the host hands the
/// `oracle` harness are absolute, so every reference solution runs (it refused them as "not an
/// existing absolute directory" before), and the cache lands under the working directory.
#[test]
fn a_relative_data_dir_serves_absolute_task_directories() {
    let d = Dataset::new();
    let params = d.params("demo@1.0");
    let args = pack_run(
        &d.plugins,
        ["harbor", "oracle", "scripted-model"],
        &params,
        &[
            "--env",
            "sandbox",
            "--progress",
            "none",
            "--data-dir",
            "./rel-data",
        ],
    );
    let out = d.ws.run(&args, &[]).expect_code(0);
    assert_eq!(rewards(&run_dir(&out)), all_pass(), "{}", out.stderr);
    assert!(d.ws.cwd.join("rel-data/datasets/tasks").is_dir());
}

#[test]
fn a_registry_dataset_runs_then_runs_from_the_cache_with_its_repository_gone() {
    let d = Dataset::new();
    let out = d.run(&d.params("demo@1.0"), &[]).expect_code(0);
    let run = run_dir(&out);
    assert_eq!(rewards(&run), all_pass());

    // The dataset's declared metrics, as Harbor computes them over the reward dicts (primes
    // writes two keys, so each key is aggregated); the kind not built in is one warning.
    let metrics = read_json(&run.join("metrics.json"));
    let declared = serde_json::to_string_pretty(&metrics["extra"]["dataset_metrics"]).unwrap();
    insta::assert_snapshot!("dataset_metrics", declared);
    let warnings: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("uv-script"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", out.stderr);
    assert!(
        warnings[0].contains("demo@1.0: uv-script metric.py is not computed: no such file"),
        "{}",
        warnings[0]
    );
    let summary = fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(
        summary.contains("| demo@1.0 | max | reward | 1.0000 |"),
        "{summary}"
    );

    // Provenance: the dataset, its registry, every task's source and digest.
    let info = read_json(&run.join("run_info.json"));
    let sources = &info["provenance"]["dataset_sources"];
    assert_eq!(sources[0]["kind"], "harbor_registry", "{sources}");
    assert_eq!(sources[0]["dataset"], "demo@1.0");
    assert_eq!(sources[0]["registry"], d.registry.display().to_string());
    let url = format!("file://{}", d.repo.display());
    for (i, (task, digest)) in DIGESTS.iter().enumerate() {
        let entry = &sources[0]["tasks"][i];
        assert_eq!(entry["git_url"], url, "{entry}");
        assert_eq!(entry["commit"], d.commit.as_str());
        assert_eq!(entry["path"], format!("tasks/{task}"));
        assert_eq!(entry["digest"], *digest, "{task}: Harbor's content hash");
    }
    // task.json carries the digest.
    for (task, digest) in DIGESTS {
        let (attempt, _) = &published_results(&run)[task];
        let record = read_json(&attempt.parent().unwrap().join("task.json"));
        assert_eq!(record["content_digest"], digest, "{record}");
    }

    // The repository moved away: the cache alone serves the same run.
    let moved = d.ws.root().join("repo-moved");
    fs::rename(&d.repo, &moved).unwrap();
    let again = d.run(&d.params("demo@1.0"), &[]).expect_code(0);
    assert_eq!(rewards(&run_dir(&again)), all_pass());

    // A cached file altered by hand is never run. With the source gone, the cache's own copy
    // of the commit (git checks its objects) puts the file back...
    let test_sh = d.cached("primes").join("tests/test.sh");
    let tamper = || {
        let mut text = fs::read_to_string(&test_sh).unwrap();
        text.push_str("\necho tampered\n");
        fs::write(&test_sh, text).unwrap();
    };
    tamper();
    let repaired = d.run(&d.params("demo@1.0"), &[]).expect_code(0);
    assert_eq!(rewards(&run_dir(&repaired)), all_pass());
    let restored = fs::read_to_string(d.cached("primes").join("tests/test.sh")).unwrap();
    assert!(!restored.contains("tampered"));
    // ...and without that copy either, it is refused in one line naming the task, exit 2, no
    // results directory.
    tamper();
    fs::remove_dir_all(d.data.join("datasets/repos")).unwrap();
    let runs_before = files_under(&d.results_root()).len();
    let refused = d.run(&d.params("demo@1.0"), &[]).expect_code(2);
    let lines = refused.stderr_lines("error:");
    assert_eq!(lines.len(), 1, "{}", refused.stderr);
    assert!(
        lines[0].contains("primes") && lines[0].contains("demo@1.0"),
        "{}",
        lines[0]
    );
    assert_eq!(files_under(&d.results_root()).len(), runs_before);

    // With the source back, the altered copy is fetched again and the run passes.
    fs::rename(&moved, &d.repo).unwrap();
    let healed = d.run(&d.params("demo@1.0"), &[]).expect_code(0);
    assert_eq!(rewards(&run_dir(&healed)), all_pass());
    assert!(
        !fs::read_to_string(d.cached("primes").join("tests/test.sh"))
            .unwrap()
            .contains("tampered")
    );
}

#[test]
fn a_name_without_version_runs_the_latest_and_the_default_data_dir_is_the_users_cache() {
    let d = Dataset::new();
    let params = json!({"dataset": "demo", "registry_path": d.registry.parent().unwrap()});
    let out =
        d.ws.run(
            &pack_run(
                &d.plugins,
                ["harbor", "oracle", "scripted-model"],
                &params.to_string(),
                &["--env", "sandbox", "--progress", "none"],
            ),
            &[],
        )
        .expect_code(0);
    assert_eq!(rewards(&run_dir(&out)), all_pass(), "1.0 is the latest");
    let cache =
        d.ws.home
            .join(".cache/agentcompass-host/data/datasets/tasks");
    assert_eq!(
        fs::read_dir(&cache).unwrap().count(),
        3,
        "{}",
        cache.display()
    );
    assert!(
        !d.ws.cwd.join("data").exists(),
        "nothing in the working directory"
    );
}

#[test]
fn reuse_imports_a_task_only_while_its_content_is_unchanged() {
    let d = Dataset::new();
    let first = d.run(&d.params("demo@1.0"), &[]).expect_code(0);
    let first = run_dir(&first);
    // A new commit changes fizzbuzz's instruction; the registry's 1.0 now points at it.
    let instruction = d.repo.join("tasks/fizzbuzz/instruction.md");
    let mut text = fs::read_to_string(&instruction).unwrap();
    text.push_str("\nPrint nothing else.\n");
    fs::write(&instruction, text).unwrap();
    git(&d.repo, &["commit", "-q", "-am", "fizzbuzz: clearer"]);
    let commit = git(&d.repo, &["rev-parse", "HEAD"]);
    d.write_registry(&commit);
    let reused = d.run(&d.params("demo@1.0"), &["--reuse"]).expect_code(0);
    assert!(
        reused.stderr.contains("(3 tasks, 2 reused)"),
        "{}",
        reused.stderr
    );
    assert!(
        reused
            .stderr
            .contains("1 tasks of the reuse source ran again: their content changed since"),
        "{}",
        reused.stderr
    );
    let second = run_dir(&reused);
    assert_ne!(first, second);
    let (attempt, _) = &published_results(&second)["fizzbuzz"];
    let record = read_json(&attempt.parent().unwrap().join("task.json"));
    assert_ne!(record["content_digest"], DIGESTS[0].1);
    assert_eq!(rewards(&second), all_pass());
}

/// `params` refused before anything is written: exit 2, one `error:` line holding every
/// part of `expected`, no results directory.
fn assert_refused(d: &Dataset, params: &str, expected: &[&str]) {
    let out = d.run(params, &[]).expect_code(2);
    let lines = out.stderr_lines("error:");
    assert_eq!(lines.len(), 1, "{params}: {}", out.stderr);
    for part in expected {
        assert!(
            lines[0].contains(part),
            "{params}: `{part}` not in: {}",
            lines[0]
        );
    }
    assert!(
        !d.results_root().exists(),
        "{params}: a results directory was made"
    );
}

#[test]
fn bad_datasets_are_refused_in_one_line_before_anything_is_written() {
    let d = Dataset::new();
    let registry = d.registry.to_str().unwrap();
    assert_refused(
        &d,
        &d.params("nope@1.0"),
        &["dataset `nope@1.0`", "no dataset `nope`", "`demo`"],
    );
    assert_refused(
        &d,
        &d.params("demo@9.9"),
        &["dataset `demo@9.9`", "no version `9.9`", "`1.0`"],
    );
    assert_refused(
        &d,
        &d.params("org/pack@v1"),
        &["org/pack@v1", "hosted registry", "--export"],
    );
    let both = json!({"dataset": "demo@1.0", "registry_path": registry, "path": "x"});
    assert_refused(
        &d,
        &both.to_string(),
        &["\"path\"", "\"dataset\"", "found both"],
    );
    let two = json!({"dataset": "demo@1.0", "registry_path": registry, "registry_url": "http://127.0.0.1:9/r.json"});
    assert_refused(
        &d,
        &two.to_string(),
        &["registry_path", "registry_url", "found both"],
    );

    // A commit the repository lacks, and a path missing at the commit.
    d.write_registry("0123456789abcdef0123456789abcdef01234567");
    assert_refused(
        &d,
        &d.params("demo@1.0"),
        &[
            "demo@1.0",
            "fizzbuzz",
            "0123456789abcdef0123456789abcdef01234567",
        ],
    );
    let url = format!("file://{}", d.repo.display());
    let missing = json!([{"name": "bar-ds", "version": "9.9", "description": "", "tasks": [
        {"name": "ghost", "git_url": url, "git_commit_id": d.commit, "path": "tasks/ghost"}]}]);
    fs::write(&d.registry, missing.to_string()).unwrap();
    assert_refused(
        &d,
        &d.params("bar-ds@9.9"),
        &["bar-ds@9.9", "ghost", "tasks/ghost", &d.commit[..12]],
    );

    // A malformed registry names the file and the JSON path.
    fs::write(
        &d.registry,
        r#"[{"name": "demo", "version": 1, "description": "", "tasks": []}]"#,
    )
    .unwrap();
    assert_refused(&d, &d.params("demo@1"), &[registry, "[0].version"]);
    fs::write(&d.registry, "{not json").unwrap();
    assert_refused(&d, &d.params("demo@1.0"), &[registry]);
    // No registry file at all.
    let absent = json!({"dataset": "demo@1.0", "registry_path": d.ws.root().join("none.json")});
    assert_refused(
        &d,
        &absent.to_string(),
        &["none.json", "expected a registry.json"],
    );
}

#[test]
fn datasets_list_download_and_verify_from_the_command_line() {
    let d = Dataset::new();
    let registry = d.registry.to_str().unwrap();
    let data = d.data.to_str().unwrap();
    let listed =
        d.ws.run_ok(&["datasets", "list", "--registry-path", registry], &[]);
    insta::assert_snapshot!("datasets_list", d.ws.redact(&listed.stdout));

    // `download NAME`: the latest version, into the cache, with its progress on stderr.
    let out = d.ws.root().join("export");
    let downloaded = d.ws.run_ok(
        &[
            "datasets",
            "download",
            "demo",
            "--registry-path",
            registry,
            "--data-dir",
            data,
            "--output-dir",
            out.to_str().unwrap(),
        ],
        &[],
    );
    insta::assert_snapshot!(
        "datasets_download",
        format!(
            "{}--- stderr\n{}",
            d.ws.redact(&downloaded.stdout),
            d.ws.redact(&downloaded.stderr)
        )
    );
    let mut exported: Vec<String> = files_under(&out)
        .iter()
        .map(|f| f.strip_prefix(&out).unwrap().display().to_string())
        .collect();
    exported.sort();
    assert_eq!(exported.len(), 12, "{exported:?}");
    assert!(exported.contains(&"demo/primes/tests/test.sh".to_string()));
    for (task, _) in DIGESTS {
        let solve = out.join("demo").join(task).join("solution/solve.sh");
        let mode =
            std::os::unix::fs::PermissionsExt::mode(&fs::metadata(&solve).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o755, "{}", solve.display());
    }

    // `verify`: intact, then one altered entry reported and dropped, then fetched again.
    let intact =
        d.ws.run_ok(&["datasets", "verify", "--data-dir", data], &[]);
    assert!(
        intact.stdout.contains("3 cached task(s) checked"),
        "{}",
        intact.stdout
    );
    assert!(
        intact.stdout.contains("3 intact, 0 dropped"),
        "{}",
        intact.stdout
    );
    fs::write(d.cached("hello-file").join("instruction.md"), "changed\n").unwrap();
    let dropped =
        d.ws.run_ok(&["datasets", "verify", "--data-dir", data], &[]);
    assert!(
        dropped.stdout.contains("2 intact, 1 dropped"),
        "{}",
        dropped.stdout
    );
    let line = dropped.stderr_lines("dropped:");
    assert_eq!(line.len(), 1, "{}", dropped.stderr);
    assert!(
        line[0].contains("tasks/hello-file") && line[0].contains(DIGESTS[1].1),
        "{}",
        line[0]
    );
    assert_eq!(
        fs::read_dir(d.data.join("datasets/tasks")).unwrap().count(),
        2
    );
    let run = d.run(&d.params("demo@1.0"), &[]).expect_code(0);
    assert_eq!(rewards(&run_dir(&run)), all_pass());
}

#[test]
fn the_default_registry_without_a_network_is_one_line() {
    let d = Dataset::new();
    // The user's proxy is honoured: a closed loopback port stands for "no network", so
    // nothing leaves the machine.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let env = [
        ("HTTPS_PROXY", proxy.as_str()),
        ("HTTP_PROXY", proxy.as_str()),
    ];
    let listed = d.ws.run(&["datasets", "list"], &env).expect_code(2);
    let lines = listed.stderr_lines("error:");
    assert_eq!(lines.len(), 1, "{}", listed.stderr);
    assert!(
        lines[0].contains("raw.githubusercontent.com/laude-institute/harbor"),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains("without a network give registry_path"),
        "{}",
        lines[0]
    );
    let params = json!({"dataset": "terminal-bench@2.0"}).to_string();
    let data = d.data.to_str().unwrap();
    let run = d.ws.run(
        &pack_run(
            &d.plugins,
            ["harbor", "oracle", "scripted-model"],
            &params,
            &["--env", "sandbox", "--data-dir", data],
        ),
        &env,
    );
    let run = run.expect_code(2);
    assert_eq!(run.stderr_lines("error:").len(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("Harbor's public registry"),
        "{}",
        run.stderr
    );
    assert!(!d.results_root().exists());
}

/// A `git` on `PATH` before the real one that stops in `git fetch` (after noting it in
/// `marker`), so the host can be killed mid-fetch.
fn stalling_git(dir: &Path, marker: &Path) -> PathBuf {
    let real = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let bin = dir.join("stall-bin");
    fs::create_dir_all(&bin).unwrap();
    let script = format!(
        "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = fetch ] && {{ : > '{}'; sleep 60; }}; done\nexec {} \"$@\"\n",
        marker.display(),
        real.trim()
    );
    let git = bin.join("git");
    fs::write(&git, script).unwrap();
    std::os::unix::fs::PermissionsExt::set_mode(
        &mut fs::metadata(&git).unwrap().permissions(),
        0o755,
    );
    fs::set_permissions(&git, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    bin
}

#[test]
fn a_run_killed_mid_fetch_leaves_nothing_a_later_run_uses() {
    use std::os::unix::process::CommandExt;
    let d = Dataset::new();
    let marker = d.ws.root().join("fetching");
    let bin = stalling_git(d.ws.root(), &marker);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let data = d.data.to_str().unwrap();
    let params = d.params("demo@1.0");
    let mut command = d.ws.command();
    command
        .env("PATH", &path)
        .args(pack_run(
            &d.plugins,
            ["harbor", "oracle", "scripted-model"],
            &params,
            &["--env", "sandbox", "--progress", "none", "--data-dir", data],
        ))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0);
    let mut child = command.spawn().unwrap();
    let started = std::time::Instant::now();
    while !marker.exists() {
        assert!(started.elapsed().as_secs() < 30, "the fetch never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SIGKILL the host and its git together (its process group).
    let group = child.id() as i32;
    let killed = Command::new("kill")
        .args(["-s", "KILL", "--", &format!("-{group}")])
        .status()
        .unwrap();
    assert!(killed.success());
    child.wait().unwrap();
    assert!(
        !d.results_root().exists(),
        "killed before any results directory"
    );
    let published = d.data.join("datasets/tasks");
    assert_eq!(
        fs::read_dir(&published).map(|e| e.count()).unwrap_or(0),
        0,
        "nothing published by the killed fetch"
    );
    // The same run again (real git): correct, every task fetched whole.
    let again = d.run(&params, &[]).expect_code(0);
    assert_eq!(rewards(&run_dir(&again)), all_pass());
    assert_eq!(fs::read_dir(&published).unwrap().count(), 3);
}

#[test]
fn two_runs_filling_the_cache_at_once_both_pass() {
    let d = Dataset::new();
    let params = d.params("demo@1.0");
    let data = d.data.to_str().unwrap();
    let spawn = |run_id: &str| {
        let mut command = d.ws.command();
        command.args(pack_run(
            &d.plugins,
            ["harbor", "oracle", "scripted-model"],
            &params,
            &[
                "--env",
                "sandbox",
                "--progress",
                "none",
                "--data-dir",
                data,
                "--run-id",
                run_id,
            ],
        ));
        command.spawn().unwrap()
    };
    let (first, second) = (spawn("first"), spawn("second"));
    for mut child in [first, second] {
        assert!(child.wait().unwrap().success());
    }
    for run_id in ["first", "second"] {
        let run = d
            .results_root()
            .join("scripted-model_harbor_oracle")
            .join(run_id);
        assert_eq!(rewards(&run), all_pass(), "{run_id}");
    }
    assert_eq!(
        fs::read_dir(d.data.join("datasets/tasks")).unwrap().count(),
        3
    );
}

#[test]
fn ssh_and_scp_style_urls_go_through_the_users_ssh_command() {
    let d = Dataset::new();
    // The user's `GIT_SSH_COMMAND` applies: here a local stand-in for ssh that runs the remote
    // command (`git-upload-pack '<path>'`) on this machine, and notes each connection.
    let log = d.ws.root().join("ssh.log");
    let ssh = d.ws.root().join("fake-ssh");
    fs::write(
        &ssh,
        format!(
            "#!/bin/sh\n# fake-ssh [-o opt]... [-p port] host command\nwhile [ $# -gt 1 ]; do case \"$1\" in -o|-p) shift 2;; -*) shift;; *) break;; esac; done\necho \"$1\" >> '{}'\nshift\nexec sh -c \"$*\"\n",
            log.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&ssh, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let repo = d.repo.display().to_string();
    let tasks = json!([
        {"name": "fizzbuzz", "git_url": format!("ssh://git@example.invalid{repo}"), "git_commit_id": d.commit, "path": "tasks/fizzbuzz"},
        {"name": "primes", "git_url": format!("git@example.invalid:{repo}"), "git_commit_id": d.commit, "path": "tasks/primes"},
    ]);
    let registry = json!([{"name": "over-ssh", "version": "1", "description": "", "tasks": tasks}]);
    fs::write(&d.registry, registry.to_string()).unwrap();
    let data = d.data.to_str().unwrap();
    let ssh_command = ssh.to_str().unwrap();
    let out = d.ws.run(
        &pack_run(
            &d.plugins,
            ["harbor", "oracle", "scripted-model"],
            &d.params("over-ssh@1"),
            &["--env", "sandbox", "--progress", "none", "--data-dir", data],
        ),
        &[("GIT_SSH_COMMAND", ssh_command)],
    );
    let out = out.expect_code(0);
    let got = rewards(&run_dir(&out));
    assert_eq!(
        got,
        [("fizzbuzz".to_string(), 1.0), ("primes".to_string(), 1.0)]
    );
    let connections = fs::read_to_string(&log).unwrap();
    assert!(connections.lines().count() >= 2, "{connections}");
    assert!(
        connections.lines().all(|l| l.ends_with("example.invalid")),
        "{connections}"
    );
}

/// Serves `body` to every request on a loopback port until the process ends; returns the
/// port and the count of requests served.
fn serve_forever(body: Vec<u8>) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = served.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    (port, served)
}

#[test]
fn a_registry_url_with_credentials_never_reaches_a_record_or_a_line() {
    let d = Dataset::new();
    let (port, served) = serve_forever(fs::read(&d.registry).unwrap());
    let token = "tok-REGISTRYSECRET-8812";
    let url = format!("http://reader:{token}@127.0.0.1:{port}/registry.json");
    let params = json!({"dataset": "demo@1.0", "registry_url": url}).to_string();
    let out = d.run(&params, &[]).expect_code(0);
    assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 1);
    let run = run_dir(&out);
    assert_eq!(rewards(&run), all_pass());
    assert!(!out.stderr.contains(token) && !out.stdout.contains(token));
    let leaked = agentcompass_e2e::files_containing(&run, token);
    assert!(leaked.is_empty(), "{leaked:?}");
    let info = read_json(&run.join("run_info.json"));
    let registry = info["provenance"]["dataset_sources"][0]["registry"]
        .as_str()
        .unwrap();
    assert_eq!(registry, format!("http://127.0.0.1:{port}/registry.json"));
    // A refusal names the URL without them too.
    let missing = json!({"dataset": "nope@1", "registry_url": url}).to_string();
    let refused = d.run(&missing, &[]).expect_code(2);
    assert!(!refused.stderr.contains(token), "{}", refused.stderr);
    assert!(
        refused.stderr.contains("no dataset `nope`"),
        "{}",
        refused.stderr
    );
}

/// A smart-HTTP git server on loopback: `git http-backend` (CGI) under `root`, behind HTTP basic
/// auth for `user`/`password`. Returns the port and the `Authorization` headers it was sent.
fn git_http_server(
    root: &Path,
    user: &str,
    password: &str,
) -> (u16, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use base64::Engine;
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    );
    let (root, log) = (root.to_path_buf(), seen.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let mut parts = line.split_whitespace();
            let method = parts.next().unwrap_or_default().to_string();
            let target = parts.next().unwrap_or_default().to_string();
            let mut headers = std::collections::HashMap::new();
            loop {
                let mut header = String::new();
                reader.read_line(&mut header).unwrap();
                let header = header.trim_end();
                if header.is_empty() {
                    break;
                }
                if let Some((name, value)) = header.split_once(':') {
                    headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
                }
            }
            let mut out = stream;
            let auth = headers.get("authorization").cloned().unwrap_or_default();
            log.lock().unwrap().push(auth.clone());
            if auth != expected {
                let _ = out.write_all(
                    b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"git\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
                continue;
            }
            let length: usize = headers
                .get("content-length")
                .and_then(|l| l.parse().ok())
                .unwrap_or(0);
            let mut body = vec![0u8; length];
            reader.read_exact(&mut body).unwrap();
            let (path, query) = target.split_once('?').unwrap_or((&target, ""));
            let mut cgi = Command::new("git");
            cgi.arg("http-backend")
                .env_clear()
                .env("PATH", std::env::var("PATH").unwrap())
                .env("GIT_PROJECT_ROOT", &root)
                .env("GIT_HTTP_EXPORT_ALL", "1")
                .env("REQUEST_METHOD", &method)
                .env("PATH_INFO", path)
                .env("QUERY_STRING", query)
                .env("REMOTE_USER", "reader")
                .env("REMOTE_ADDR", "127.0.0.1")
                .env("CONTENT_LENGTH", length.to_string())
                .env(
                    "CONTENT_TYPE",
                    headers.get("content-type").cloned().unwrap_or_default(),
                )
                .env(
                    "GIT_PROTOCOL",
                    headers.get("git-protocol").cloned().unwrap_or_default(),
                )
                .env(
                    "HTTP_CONTENT_ENCODING",
                    headers.get("content-encoding").cloned().unwrap_or_default(),
                )
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped());
            let mut child = cgi.spawn().unwrap();
            child.stdin.take().unwrap().write_all(&body).unwrap();
            let output = child.wait_with_output().unwrap();
            let split = output.stdout.windows(4).position(|w| w == b"\r\n\r\n");
            let (head, payload) = match split {
                Some(at) => (&output.stdout[..at], &output.stdout[at + 4..]),
                None => (&output.stdout[..0], &output.stdout[..]),
            };
            let head = String::from_utf8_lossy(head);
            let status = head
                .lines()
                .find_map(|l| l.strip_prefix("Status: "))
                .unwrap_or("200 OK")
                .to_string();
            let mut response = format!("HTTP/1.1 {status}\r\n");
            for header in head.lines().filter(|l| !l.starts_with("Status:")) {
                response.push_str(header);
                response.push_str("\r\n");
            }
            response.push_str(&format!(
                "Content-Length: {}\r\nConnection: close\r\n\r\n",
                payload.len()
            ));
            let _ = out.write_all(response.as_bytes());
            let _ = out.write_all(payload);
        }
    });
    (port, seen)
}

#[test]
fn an_http_repository_behind_auth_is_fetched_with_the_users_credential_helper() {
    let d = Dataset::new();
    let secret = "pw-HTTPHELPER-4410";
    let (port, seen) = git_http_server(d.ws.root(), "reader", secret);
    let tasks: Vec<Value> = DIGESTS
        .iter()
        .map(|(task, _)| {
            json!({"name": task, "git_url": format!("http://127.0.0.1:{port}/repo"),
                   "git_commit_id": d.commit, "path": format!("tasks/{task}")})
        })
        .collect();
    let registry =
        json!([{"name": "over-http", "version": "1", "description": "", "tasks": tasks}]);
    fs::write(&d.registry, registry.to_string()).unwrap();
    // Without credentials: refused in one line (git's prompt is off), nothing written.
    let refused = d.run(&d.params("over-http@1"), &[]).expect_code(2);
    assert_eq!(
        refused.stderr_lines("error:").len(),
        1,
        "{}",
        refused.stderr
    );
    assert!(!d.results_root().exists());
    // The user's credential helper (git config from the environment) answers the password.
    let helper = format!("!f() {{ echo username=reader; echo password={secret}; }}; f");
    let env = [
        ("GIT_CONFIG_COUNT", "1"),
        ("GIT_CONFIG_KEY_0", "credential.helper"),
        ("GIT_CONFIG_VALUE_0", helper.as_str()),
    ];
    let data = d.data.to_str().unwrap();
    let out = d.ws.run(
        &pack_run(
            &d.plugins,
            ["harbor", "oracle", "scripted-model"],
            &d.params("over-http@1"),
            &["--env", "sandbox", "--progress", "none", "--data-dir", data],
        ),
        &env,
    );
    let out = out.expect_code(0);
    let run = run_dir(&out);
    assert_eq!(rewards(&run), all_pass());
    assert!(seen
        .lock()
        .unwrap()
        .iter()
        .any(|auth| auth.starts_with("Basic ")));
    assert!(agentcompass_e2e::files_containing(&run, secret).is_empty());
    assert!(agentcompass_e2e::files_containing(&d.data, secret).is_empty());
    assert!(!out.stderr.contains(secret));
}
