//! A third party's verifier-style benchmark end to end: `example_pyexec` (the example pack's
//! Python exercises, written against the SDK's typed contracts) scored by hidden tests in
//! `sandbox`, `host_process` and `docker` (the reference solution is correct, an agent's
//! wrong solution earns a partial reward); bad parameter content refused at resolution; and
//! concurrent `oracle` and `cli_agent` tasks on `host_process` each in their own session
//! directories, with nothing left in `/` or `/tmp` (the host runs in a mount namespace of its
//! own whose `/tmp` is a fresh tmpfs, so the snapshot sees only this run).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use agentcompass_e2e::{
    copy_tree, host_bin, pack_run, published_results as results, run_dir, Outcome, Packs, Workspace,
};
use serde_json::{json, Value};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the repository")
        .to_path_buf()
}

fn exercises() -> PathBuf {
    repo_root().join("examples/pyexec")
}

/// `agents-pack` (`oracle`, `cli_agent`) and the `docker` provider beside the workspace's
/// example pack.
fn agents() -> Packs {
    Packs::new(&["agents-pack", "docker-provider"])
}

/// A `cli_agent` whose "agent" writes a half-wrong `solution.py` for both exercises.
const WRONG_AGENT: &str = r#"{"command": "printf 'def add(a, b):\n    return a - b\n\ndef word_count(text):\n    return len(text.split(\" \"))\n' > solution.py"}"#;

/// Runs `example_pyexec` on the bundled exercises with `harness` in `env_args`; the rewards
/// by task id.
fn rewards(ws: &Workspace, packs: &Packs, harness: &str, env_args: &[&str]) -> Vec<(String, f64)> {
    let params = json!({"tasks_dir": exercises()}).to_string();
    let mut extra = vec!["--progress", "none"];
    extra.extend_from_slice(env_args);
    if harness == "cli_agent" {
        extra.extend(["--harness-params", WRONG_AGENT]);
    }
    let args = pack_run(packs, ["example_pyexec", harness, "m"], &params, &extra);
    let out = ws.run(&args, &[]).expect_code(0);
    let mut found: Vec<(String, f64)> = results(&run_dir(&out))
        .into_iter()
        .map(|(id, (_, result))| {
            let reward = result["metrics"]["reward"].as_f64();
            (id, reward.unwrap_or_else(|| panic!("no reward: {result}")))
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// The reference solution scores 1 on both exercises, the wrong agent 0.5 on each.
fn scores_reference_and_wrong_solutions(env_args: &[&str]) {
    let (ws, packs) = (Workspace::new(), agents());
    let expect = |reward: f64| vec![("add".to_string(), reward), ("word_count".into(), reward)];
    assert_eq!(rewards(&ws, &packs, "oracle", env_args), expect(1.0));
    assert_eq!(rewards(&ws, &packs, "cli_agent", env_args), expect(0.5));
}

#[test]
fn pyexec_scores_reference_and_wrong_solutions_in_the_sandbox() {
    scores_reference_and_wrong_solutions(&["--env", "sandbox"]);
}

#[test]
fn pyexec_scores_reference_and_wrong_solutions_on_host_process() {
    scores_reference_and_wrong_solutions(&["--env", "host_process"]);
}

#[test]
fn pyexec_scores_reference_and_wrong_solutions_in_docker() {
    let required = |var: &str| {
        std::env::var(var).unwrap_or_else(|_| panic!("{var} is not set: run ./dev.sh test"))
    };
    let params = json!({
        "docker_host": required("AGENTCOMPASS_TEST_DOCKER_HOST"),
        "setup": {"image": required("AGENTCOMPASS_TEST_AGENT_IMAGE")},
    })
    .to_string();
    scores_reference_and_wrong_solutions(&["--env", "docker", "--env-params", &params]);
}

#[test]
fn bad_parameter_content_is_refused_at_resolution_by_dry_run_and_plan() {
    let ws = Workspace::new();
    for (params, problem) in [
        (
            json!({"tasks_dir": exercises(), "test_timeout_seconds": 0}),
            "`test_timeout_seconds` must be a positive number of seconds, found 0",
        ),
        (json!({}), "`tasks_dir` is required"),
        (
            json!({"tasks_dir": exercises(), "only": [""]}),
            "`only` must list task ids, found an empty one",
        ),
    ] {
        let params = params.to_string();
        for command in [&["run", "--dry-run"][..], &["plan", "--task", "add"][..]] {
            let mut args = command.to_vec();
            args.extend(["example_pyexec", "example_calculator", "m"]);
            args.extend(["--benchmark-params", &params, "--results-dir", "results"]);
            let out = ws.run(&args, &[]).expect_code(2);
            let line = out.stderr.trim();
            assert_eq!(line.lines().count(), 1, "{line}");
            assert!(line.contains("benchmark `example_pyexec`"), "{line}");
            assert!(line.contains(problem), "{command:?}: {line}");
        }
    }
    assert!(!ws.cwd.join("results").exists(), "nothing written");
    // `run --dry-run example_pyexec` with `params`, which must be refused (exit 2).
    let dry_run = |params: Value, env: &[(&str, &str)]| {
        let params = params.to_string();
        let mut args = vec![
            "run",
            "--dry-run",
            "example_pyexec",
            "example_calculator",
            "m",
        ];
        args.extend(["--benchmark-params", &params]);
        ws.run(&args, env).expect_code(2).stderr
    };
    // An id the dataset does not have: found when the tasks are selected, before any runs.
    let stderr = dry_run(json!({"tasks_dir": exercises(), "only": ["nope"]}), &[]);
    assert!(stderr.contains("`only` names task `nope`"), "{stderr}");
    // A plugin's error quoting a resolved `${VAR}` value is scrubbed on the way out.
    let secret = "sk-e2e-tasks-dir-5150";
    let env = [("E2E_TASKS_DIR", secret)];
    let stderr = dry_run(json!({"tasks_dir": "${E2E_TASKS_DIR}"}), &env);
    assert!(stderr.contains("tasks directory"), "{stderr}");
    assert!(!stderr.contains(secret), "{stderr}");
}

/// Writes `count` tasks `echo_K` under `dir`: the instruction's last line is `K`, the hidden
/// test wants `K` in `answer.txt`, and the reference solution writes it (both pause first, so
/// that concurrent tasks overlap).
fn echo_tasks(dir: &Path, count: usize) {
    for k in 0..count {
        let task = dir.join(format!("echo_{k}"));
        let write = |relative: &str, content: String| {
            let path = task.join(relative);
            fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            fs::write(&path, content).expect("write");
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
        };
        write(
            "instruction.md",
            format!("Write the number below to answer.txt.\n{k}\n"),
        );
        write(
            "tests/test.sh",
            format!(
                "cd \"$AGENTCOMPASS_WORKSPACE\"\n\
                 if [ \"$(cat answer.txt)\" = {k} ]; then r=1; else r=0; fi\n\
                 echo $r > \"$AGENTCOMPASS_VERIFIER_DIR/reward.txt\"\n"
            ),
        );
        write(
            "solution/solve.sh",
            format!("sleep 0.3\necho {k} > answer.txt\n"),
        );
    }
}

#[test]
fn concurrent_oracle_and_cli_agent_tasks_on_host_process_stay_in_their_session_dirs() {
    // Everything this run reads or writes lives outside /tmp, which the host's mount
    // namespace replaces by an empty tmpfs.
    let base = tempfile::tempdir_in("/var/tmp").expect("temp dir outside /tmp");
    let base = base.path();
    echo_tasks(&base.join("tasks"), 6);
    let (ws, packs) = (Workspace::new(), agents());
    copy_tree(&ws.plugins, &base.join("plugins"));
    copy_tree(&packs, &base.join("plugins"));
    fs::create_dir_all(base.join("home")).expect("home");

    let params = json!({"tasks_dir": base.join("tasks")}).to_string();
    let agent =
        json!({"command": "sleep 0.3; tail -n 1 \"$AGENTCOMPASS_INSTRUCTION_FILE\" > answer.txt"})
            .to_string();
    let run = |harness: &str, extra: &str| {
        format!(
            "\"$HOST\" --no-bundled-plugins --plugin-dir plugins run example_pyexec {harness} m \
             --env host_process --task-concurrency 6 --progress none --results-dir results \
             --benchmark-params '{params}' {extra} > {harness}.out 2> {harness}.err; \
             echo $? > {harness}.rc"
        )
    };
    let script = format!(
        "mount -t tmpfs -o mode=1777 agentcompass-e2e /tmp || exit 97\n\
         ls -A / > root-before\n\
         {}\n{}\n\
         ls -A /tmp > tmp-after\n\
         ls -A / > root-after\n",
        run("oracle", ""),
        run("cli_agent", &format!("--harness-params '{agent}'")),
    );
    let out = Outcome::of(
        Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c", &script])
            .current_dir(base)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", base.join("home"))
            .env("HOST", host_bin())
            .output()
            .expect("unshare (util-linux)"),
    )
    .expect_code(0);
    let read = |name: &str| fs::read_to_string(base.join(name)).unwrap_or_default();
    for harness in ["oracle", "cli_agent"] {
        assert_eq!(
            read(&format!("{harness}.rc")).trim(),
            "0",
            "{harness}: {}",
            read(&format!("{harness}.err"))
        );
        let dir = PathBuf::from(
            read(&format!("{harness}.out"))
                .lines()
                .last()
                .unwrap_or_default(),
        );
        let found = results(&base.join(&dir));
        assert_eq!(found.len(), 6, "{harness}: {dir:?}");
        for (id, (_, result)) in found {
            assert_eq!(
                result["metrics"]["reward"],
                json!(1.0),
                "{harness} {id}: {result}"
            );
            let rendered = result.to_string();
            assert!(!rendered.contains("/solution\""), "{rendered}");
        }
    }
    assert_eq!(read("root-before"), read("root-after"), "{}", out.stderr);
    assert_eq!(read("tmp-after"), "", "the run left these in /tmp");
}
