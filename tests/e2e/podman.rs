//! `--env podman` end to end, in the podman tier of `./dev.sh test`: no Docker daemon runs, the
//! tier's Podman store is named by `CONTAINERS_CONF` and `CONTAINERS_STORAGE_CONF` (exported),
//! and no test names a service: each run starts a private `podman system service` of its own
//! (under the run's `TMPDIR`) and stops it. The bundled Harbor tasks with `oracle` and with
//! `terminus` (against the scripted model on loopback), the cleanup after a SIGKILL through
//! `env list`/`env close`, and the Slurm cluster with a node lost mid-run.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentcompass_e2e::scripted::ScriptedServer;
use agentcompass_e2e::{
    pack_run, published_results as results, run_dir, Outcome, Packs, Workspace,
};
use serde_json::{json, Value};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the repository")
        .to_path_buf()
}

/// The tier's Podman configuration, which every run (and the `podman` CLI here) is given.
fn podman_env() -> Vec<(&'static str, String)> {
    ["CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF"]
        .into_iter()
        .map(|key| {
            let value = std::env::var(key).unwrap_or_else(|_| {
                panic!("{key} is not set: run the podman tier with ./dev.sh test")
            });
            (key, value)
        })
        .collect()
}

/// The `podman` CLI on the tier's store.
fn podman(args: &[&str]) -> String {
    let out = Command::new("podman")
        .args(args)
        .envs(podman_env())
        .output()
        .expect("the podman CLI");
    assert!(out.status.success(), "podman {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The provider's containers whose name starts with `agentcompass-<prefix>`.
fn managed_containers(prefix: &str) -> Vec<String> {
    let name = format!("name=agentcompass-{prefix}");
    containers(&["label=agentcompass.managed=true", &name])
}

/// The containers of the run in `run` (by its `run_dir` label: concurrent tests' runs may
/// share a run id, which has seconds' precision).
fn containers_of_run(run: &Path) -> Vec<String> {
    let mut dirs = vec![run.to_path_buf()];
    dirs.extend(fs::canonicalize(run).ok());
    let mut found: Vec<String> = dirs
        .iter()
        .flat_map(|dir| containers(&[&format!("label=agentcompass.run_dir={}", dir.display())]))
        .collect();
    found.sort();
    found.dedup();
    found
}

/// The containers (running or not) matching every `podman ps` filter of `filters`.
fn containers(filters: &[&str]) -> Vec<String> {
    let mut args = vec!["ps", "-a", "-q"];
    for filter in filters {
        args.extend(["--filter", filter]);
    }
    podman(&args).lines().map(str::to_string).collect()
}

/// A run's environment: the tier's store, and where the private service's directory goes —
/// the user's runtime directory when there is one (the rootless tier's, which rootless Podman
/// needs: its run root follows it), else a temp dir of the workspace's own.
fn run_env(ws: &Workspace) -> (PathBuf, Vec<(&'static str, String)>) {
    let tmp = ws.root().join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    let mut env = podman_env();
    env.push(("TMPDIR", tmp.display().to_string()));
    match std::env::var("XDG_RUNTIME_DIR") {
        Ok(runtime) if !runtime.is_empty() => {
            env.push(("XDG_RUNTIME_DIR", runtime.clone()));
            (PathBuf::from(runtime), env)
        }
        _ => (tmp, env),
    }
}

fn refs<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'a str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// Waits until the private services' directories under `tmp` are gone (the watchdog removes
/// its directory once the service has stopped, right after the host exits).
fn assert_no_private_service_left(tmp: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let left = || -> Vec<String> {
        fs::read_dir(tmp)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("agentcompass-podman-"))
            .collect()
    };
    while !left().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(left(), Vec::<String>::new(), "a private service was left");
    let running = Command::new("pgrep")
        .args(["-f", &format!("{}/agentcompass-podman-", tmp.display())])
        .output()
        .unwrap();
    assert!(
        running.stdout.is_empty(),
        "a process of a private service is still running: {}",
        String::from_utf8_lossy(&running.stdout)
    );
}

/// The bundled tasks' image: busybox, bash, `find` and `seq`, built from a context by the
/// provider (the same for every task, so built once).
fn env_params(dir: &Path) -> String {
    let context = crate::docker_networks::image_context(dir, &["/usr/bin/find", "/usr/bin/seq"]);
    json!({"build_context": context, "setup": {"build_timeout_seconds": 300}}).to_string()
}

/// `run harbor HARNESS` on the bundled tasks in Podman, with `extra` arguments.
fn bundled_tasks(ws: &Workspace, harness: &str, extra: &[&str], env: &[(&str, &str)]) -> Outcome {
    let plugins = Packs::new(&["harbor-pack", "agents-pack", "docker-provider"]);
    let params = json!({"path": repo_root().join("examples/harbor")}).to_string();
    let env_params = env_params(ws.root());
    let mut args = pack_run(
        &plugins,
        ["harbor", harness, "scripted-model"],
        &params,
        &[
            "--env",
            "podman",
            "--env-params",
            &env_params,
            "--progress",
            "none",
        ],
    );
    args.extend_from_slice(extra);
    ws.run(&args, env)
}

fn reward(result: &Value) -> f64 {
    result["metrics"]["reward"].as_f64().unwrap_or(-1.0)
}

#[test]
fn oracle_solves_the_bundled_tasks_in_podman_on_a_private_service() {
    let ws = Workspace::new();
    let (tmp, env) = run_env(&ws);
    let out = bundled_tasks(&ws, "oracle", &[], &refs(&env)).expect_code(0);
    let run = run_dir(&out);
    let results = results(&run);
    assert_eq!(results.len(), 3, "{results:?}");
    for (id, (_, result)) in &results {
        assert_eq!(result["status"], "completed", "{id}: {result}");
        assert_eq!(reward(result), 1.0, "{id}: {result}");
    }
    assert!(
        containers_of_run(&run).is_empty(),
        "every container removed"
    );
    assert_no_private_service_left(&tmp);
}

#[test]
fn terminus_solves_the_bundled_tasks_in_podman() {
    let script: Value = serde_json::from_str(
        &fs::read_to_string(repo_root().join("examples/demo/terminus-script.json")).unwrap(),
    )
    .unwrap();
    let key = script["require_key"].as_str().unwrap().to_string();
    let server = ScriptedServer::start(&script, None).unwrap();
    let base_url = server.base_url();
    let ws = Workspace::new();
    let (tmp, mut env) = run_env(&ws);
    env.push(("E2E_TERMINUS_KEY", key.clone()));
    let extra = [
        "--model-base-url",
        &base_url,
        "--model-api-key",
        "${E2E_TERMINUS_KEY}",
    ];
    let out = bundled_tasks(&ws, "terminus", &extra, &refs(&env)).expect_code(0);
    let run = run_dir(&out);
    let results = results(&run);
    assert_eq!(results.len(), 3);
    for (id, (_, result)) in &results {
        assert_eq!(reward(result), 1.0, "{id}: {result}");
    }
    let (_, hello) = &results["hello-file"];
    let outputs: Vec<String> = hello["trajectory"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["observation"].as_array().cloned().unwrap_or_default())
        .filter_map(|o| o["output"].as_str().map(str::to_string))
        .collect();
    assert!(
        outputs.iter().any(|o| o.contains("Hello, world!")),
        "{outputs:?}"
    );
    assert!(
        containers_of_run(&run).is_empty(),
        "every container removed"
    );
    assert_no_private_service_left(&tmp);
}

/// `run` of `size` calculator tasks that take 30 s each, `concurrency` at a time, in Podman
/// on a private service (the busybox image), with the run environment `env`.
fn slow_calculator_run(
    ws: &Workspace,
    env: &[(&'static str, String)],
    plugins: &Path,
    size: usize,
    concurrency: usize,
) -> Command {
    let params = json!({"setup": {"image": "agentcompass-test/busybox:1"}}).to_string();
    let mut command = ws.command();
    command
        .envs(env.iter().map(|(k, v)| (*k, v)))
        .args(["--plugin-dir", plugins.to_str().unwrap(), "--plugin-dir"])
        .arg(&ws.plugins)
        .args(["run", "example_exact_match", "example_calculator", "calc"])
        .args(["--env", "podman", "--env-params", &params])
        .args(["--benchmark-params", &json!({"size": size}).to_string()])
        .args(["--harness-params", r#"{"delay_ms": 30000}"#])
        .args(["--task-concurrency", &concurrency.to_string()])
        .args(["--progress", "none"]);
    command
}

#[test]
fn a_killed_run_leaves_containers_that_env_close_removes_through_a_new_service() {
    let ws = Workspace::new();
    let (tmp, env) = run_env(&ws);
    let plugins = Packs::new(&["docker-provider"]);
    let mut child = slow_calculator_run(&ws, &env, &plugins, 20, 2)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let records = || {
        let mut count = 0;
        for namespace in fs::read_dir(ws.cwd.join("results"))
            .into_iter()
            .flatten()
            .flatten()
        {
            for run in fs::read_dir(namespace.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                // Opened sessions' records (an `opening-` record is of one still opening).
                count += fs::read_dir(run.path().join(".env-resources"))
                    .into_iter()
                    .flatten()
                    .flatten()
                    .filter(|r| !r.file_name().to_string_lossy().starts_with("opening-"))
                    .count();
            }
        }
        count
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while (managed_containers("arith-").len() < 2 || records() < 2) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // The run's service went with it; its containers stayed (their conmons keep them).
    assert_no_private_service_left(&tmp);
    assert_eq!(
        managed_containers("arith-").len(),
        2,
        "two containers were open at the kill"
    );

    let plugin_args = ["--plugin-dir", plugins.to_str().unwrap()];
    let listed = ws.run(&[&plugin_args[..], &["env", "list"]].concat(), &refs(&env));
    let listed: Value = serde_json::from_str(&listed.stdout).unwrap();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 2, "{listed:?}");
    for record in listed {
        assert_eq!(record["provider"], "podman", "{record}");
        assert_eq!(record["close_params"]["podman"], "podman", "{record}");
        assert!(record["close_params"]["store"].is_string(), "{record}");
    }
    let closed = ws.run(
        &[&plugin_args[..], &["env", "close", "--all"]].concat(),
        &refs(&env),
    );
    assert_eq!(closed.code, 0, "{closed:?}");
    assert!(
        managed_containers("arith-").is_empty(),
        "env close removed them"
    );
    assert_no_private_service_left(&tmp);
}

#[test]
fn ctrl_c_at_the_terminal_removes_every_container_and_the_service() {
    // A terminal's Ctrl-C goes to its whole foreground process group: the host, and anything
    // it started in its group. The private service runs in a group of its own, so it is still
    // there while the interrupted run removes its containers through it.
    use std::os::unix::process::CommandExt;
    let ws = Workspace::new();
    let (tmp, env) = run_env(&ws);
    let plugins = Packs::new(&["docker-provider"]);
    let child = slow_calculator_run(&ws, &env, &plugins, 6, 3)
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while managed_containers("arith-").len() < 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(managed_containers("arith-").len(), 3, "three tasks running");
    let group = format!("-{}", child.id());
    let sent = Command::new("kill")
        .args(["-INT", "--", &group])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = Outcome::of(child.wait_with_output().unwrap());
    assert_eq!(out.code, 130, "{out:?}");
    assert!(
        managed_containers("arith-").is_empty(),
        "the interrupted run removed its containers: {out:?}"
    );
    assert_no_private_service_left(&tmp);
}

/// The tasks of the Slurm run: `count` copies of the bundled `hello-file`, each solution
/// slowed down so that the run is still going when a node is lost.
fn slow_tasks(dir: &Path, count: usize) {
    let source = repo_root().join("examples/harbor/hello-file");
    fs::create_dir_all(dir).unwrap();
    for i in 0..count {
        let task = dir.join(format!("hello-{i:02}"));
        let copied = Command::new("cp")
            .arg("-r")
            .arg(&source)
            .arg(&task)
            .status()
            .unwrap();
        assert!(copied.success());
        let toml = fs::read_to_string(task.join("task.toml")).unwrap();
        fs::write(
            task.join("task.toml"),
            toml.replace(
                "agentcompass/hello-file",
                &format!("agentcompass/hello-{i:02}"),
            ),
        )
        .unwrap();
        let solve = task.join("solution/solve.sh");
        let script = fs::read_to_string(&solve).unwrap();
        fs::write(&solve, format!("sleep 3\n{script}")).unwrap();
    }
}

/// The builds of the image `tag` since `since` (`podman events`: every `image build` event
/// whose image carries `tag`'s context label, a duplicate build's untagged image included).
pub(crate) fn builds_of(tag: &str, since: &str) -> usize {
    let label = "{{index .Labels \"agentcompass.context_sha256\"}}";
    let sha = podman(&["image", "inspect", "--format", label, tag]);
    let events = podman(&[
        "events",
        "--stream=false",
        "--since",
        since,
        "--filter",
        "event=build",
    ]);
    // `<time> image build  <id>` (Podman 4.3 leaves a build event's `{{.ID}}` empty).
    events
        .lines()
        .filter_map(|line| line.split_whitespace().last())
        .filter(|id| {
            let out = Command::new("podman")
                .args(["image", "inspect", "--format", label, id])
                .envs(podman_env())
                .output()
                .unwrap();
            out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == sha.trim()
        })
        .count()
}

#[test]
fn slurm_runs_harbor_tasks_in_podman_on_every_node_once_with_a_node_lost() {
    use crate::slurm::{
        kill_slurmd, nodes, published, restart_slurmd, running_jobs, slurm_conf, slurm_config,
        wait_until,
    };
    let ws = Workspace::new();
    let (_tmp, env) = run_env(&ws);
    let since = format!(
        "{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            - 1
    );
    // Three jobs of 8 tasks, a whole node (4 CPUs) each. Relative paths mean the same on the
    // nodes.
    slow_tasks(&ws.cwd.join("tasks"), 24);
    // An image of this test's own (a file only it has): each task ships it as its
    // `environment/` (hard links of one build context), as a Harbor task ships its Dockerfile.
    let context =
        crate::docker_networks::image_context(&ws.cwd, &["/usr/bin/find", "/usr/bin/seq"]);
    let marker = ws.cwd.display().to_string();
    fs::write(context.join("root/agentcompass-test"), &marker).unwrap();
    for task in fs::read_dir(ws.cwd.join("tasks")).unwrap().flatten() {
        let linked = Command::new("cp")
            .arg("-al")
            .arg(&context)
            .arg(task.path().join("environment"))
            .status()
            .unwrap();
        assert!(linked.success());
    }
    let env_params = json!({"setup": {"build_timeout_seconds": 300}}).to_string();
    let config = slurm_config(
        &ws,
        "attempts_per_job = 8\ncpus_per_job = 4\nmax_jobs_in_flight = 3",
    );
    let plugins = Packs::new(&["harbor-pack", "agents-pack", "docker-provider"]);
    let params = json!({"path": "tasks"}).to_string();
    let mut args = vec!["--config", config.as_str()];
    args.extend(pack_run(
        &plugins,
        ["harbor", "oracle", "scripted-model"],
        &params,
        &[
            "--env",
            "podman",
            "--env-params",
            &env_params,
            "--executor",
            "slurm",
            "--task-concurrency",
            "4",
            "--progress",
            "none",
        ],
    ));
    let started = Instant::now();
    let child = ws
        .command()
        .envs(env.iter().map(|(k, v)| (*k, v)))
        .env("SLURM_CONF", slurm_conf())
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("three running jobs", Duration::from_secs(180), || {
        running_jobs(&ws).len() == 3
    });
    // Once containers run, a node other than n1 loses its slurmd (its job's processes go on,
    // as on a node cut off the network; Slurm requeues the job).
    wait_until("containers running", Duration::from_secs(180), || {
        !managed_containers("hello-").is_empty()
    });
    let jobs = running_jobs(&ws);
    let victim = jobs
        .iter()
        .map(|j| j["nodes"].as_str().unwrap().to_string())
        .find(|n| n != "n1")
        .unwrap_or_else(|| jobs[0]["nodes"].as_str().unwrap().to_string());
    kill_slurmd(&victim);
    let out = Outcome::of(child.wait_with_output().unwrap());
    restart_slurmd(&victim);
    assert_eq!(out.code, 0, "{out:?}");
    let run = run_dir(&out);
    let tasks = published(&run);
    assert_eq!(tasks.len(), 24, "every task published exactly once");
    for (id, (_, result)) in &results(&run) {
        assert_eq!(reward(result), 1.0, "{id}: {result}");
    }
    let spread = nodes(&tasks);
    let tag = podman(&[
        "image",
        "ls",
        "--filter",
        "label=agentcompass.context_sha256",
        "--format",
        "{{.Repository}}:{{.Tag}}",
    ])
    .lines()
    .map(str::to_string)
    .find(|image| {
        let out = Command::new("podman")
            .args(["run", "--rm", "--network", "none", "--entrypoint", "cat"])
            .args([image.as_str(), "/agentcompass-test"])
            .envs(podman_env())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout) == marker
    })
    .expect("the tasks' image");
    let builds = builds_of(&tag, &since);
    eprintln!(
        "slurm + podman: 24 Harbor tasks in {:.1} s with {victim}'s slurmd killed; tasks by \
         node {spread:?}; image built {builds} time(s)",
        started.elapsed().as_secs_f64()
    );
    // The tasks' own image, built by the first open on the nodes (the coordinator has no
    // build phase on Slurm), found by every other: the build lock is per machine, and this
    // cluster's three nodes are one machine — each node builds the digest once.
    assert_eq!(builds, 1, "the image was built {builds} times");
    assert!(
        containers_of_run(&run).is_empty(),
        "every container removed"
    );
}

#[path = "podman_harbor_job.rs"]
mod harbor_job;
