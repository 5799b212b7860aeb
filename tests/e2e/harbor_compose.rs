//! Harbor tasks with sidecar services (issue 55), end to end in the tests' engine (`docker`,
//! or `podman` rootful and rootless in the podman tiers): the `compose-*` tasks of
//! `examples/harbor-features/` with `oracle` — `main` asking an API built from its own context
//! and gated by `service_healthy`, a secret `${VAR}` and a named volume seeded by a one-shot
//! service, `no-network` and `allowlist` projects, a service that never becomes healthy, an
//! `[environment.healthcheck]` that fails, an unsupported key — then what a Ctrl-C and a
//! SIGKILL leave (nothing, and what `env close --all` releases), and a compose task on the
//! Slurm executor. The tasks' images name `ubuntu:24.04` and `busybox:1.36`: local test
//! images tagged here.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use agentcompass_e2e::{
    container_engine, container_host, container_host_param, files_containing, pack_run,
    published_results as results, run_dir, Outcome, Packs, Workspace,
};
use serde_json::{json, Value};

use crate::harbor_images::{
    builds_of, built_image, engine_cli, features, now, reward, serve_registry, tag_base_images,
    ImageEvents,
};

/// The secret the `compose-secret` task's API hands out (from `COMPOSE_API_TOKEN`).
const TOKEN: &str = "tok-COMPOSE-SECRET-4417";

/// The port the `compose-no-network` task checks the host does not answer on.
const OUTSIDE_PORT: u16 = 18742;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the repository")
        .to_path_buf()
}

/// Tags `busybox:1.36` (the sidecars' image): the tests' busybox with every applet linked.
fn tag_busybox(dir: &Path) {
    let context = dir.join("busybox-image");
    fs::create_dir_all(&context).unwrap();
    fs::write(
        context.join("Dockerfile"),
        "FROM agentcompass-test/busybox:1\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n",
    )
    .unwrap();
    engine_cli(&[
        "build",
        "-q",
        "-t",
        "busybox:1.36",
        &context.display().to_string(),
    ]);
}

/// The images the tasks name.
fn tag_images(ws: &Workspace) {
    tag_base_images(ws.root());
    tag_busybox(ws.root());
}

/// The runtime's egress names of the `compose-allowlist` task, as a config file.
fn egress_config(ws: &Workspace) -> String {
    ws.write(
        "cfg/egress.toml",
        "[runtime.egress.hosts]\n\"registry.internal\" = \"127.0.0.1\"\n\
         \"denied.internal\" = \"127.0.0.1\"\n",
    )
    .display()
    .to_string()
}

/// The packs of the runs here.
fn packs() -> Packs {
    Packs::new(&["harbor-pack", "agents-pack", "docker-provider"])
}

/// `run harbor oracle` over the benchmark parameters `params` in the tests' engine, with
/// `extra` and the process variables `env`.
fn oracle(ws: &Workspace, params: &Value, extra: &[&str], env: &[(&str, &str)]) -> Outcome {
    let plugins = packs();
    let args = oracle_args(&plugins, params, extra);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ws.run(&args, env)
}

/// The arguments of `run harbor oracle` over `params` with `plugins`, then `extra`.
fn oracle_args(plugins: &Packs, params: &Value, extra: &[&str]) -> Vec<String> {
    let env = json!({container_host_param(): container_host()}).to_string();
    let params = params.to_string();
    let mut args = pack_run(
        plugins,
        ["harbor", "oracle", "scripted-model"],
        &params,
        &[
            "--env",
            container_engine(),
            "--env-params",
            &env,
            "--progress",
            "none",
        ],
    );
    args.extend_from_slice(extra);
    args.iter().map(|a| a.to_string()).collect()
}

/// The run id of a run directory.
fn run_id(run: &Path) -> String {
    let info: Value =
        serde_json::from_str(&fs::read_to_string(run.join("run_info.json")).unwrap()).unwrap();
    info["run_id"].as_str().unwrap().to_string()
}

/// What of run `run_id` is still in the engine: containers, networks and volumes with its
/// label and the name of one of `tasks` (runs of concurrent tests may share a run id: each
/// test's tasks have names of their own), as `kind name`.
fn leftovers(run_id: &str, tasks: &[&str]) -> Vec<String> {
    let prefixes: Vec<String> = tasks.iter().map(|t| format!("agentcompass-{t}-")).collect();
    let filter = format!("label=agentcompass.run_id={run_id}");
    let mut found = Vec::new();
    let listings: [(&str, &[&str], &str); 3] = [
        ("container", &["ps", "-a"], "{{.Names}}"),
        ("network", &["network", "ls"], "{{.Name}}"),
        ("volume", &["volume", "ls"], "{{.Name}}"),
    ];
    for (kind, command, format) in listings {
        let mut args = command.to_vec();
        args.extend(["--filter", &filter, "--format", format]);
        found.extend(
            engine_cli(&args)
                .lines()
                .filter(|name| prefixes.iter().any(|p| name.starts_with(p.as_str())))
                .map(|name| format!("{kind} {name}")),
        );
    }
    found
}

/// A listener on every address of the host, so that a task that could leave its network
/// would find something to reach (`compose-no-network` checks it does not).
fn outside_listener() -> Option<std::net::TcpListener> {
    std::net::TcpListener::bind(("0.0.0.0", OUTSIDE_PORT)).ok()
}

#[test]
fn compose_tasks_run_with_their_services_and_leave_nothing_behind() {
    let ws = Workspace::new();
    tag_images(&ws);
    serve_registry();
    let _outside = outside_listener();
    let config = egress_config(&ws);
    let env = [("COMPOSE_API_TOKEN", TOKEN)];
    let good = [
        "compose-sidecar",
        "compose-secret",
        "compose-no-network",
        "compose-allowlist",
    ];
    let out = oracle(&ws, &features(&good), &["--config", &config], &env).expect_code(0);
    let run = run_dir(&out);
    let published = results(&run);
    assert_eq!(published.len(), 4);
    for (id, (_, result)) in &published {
        assert_eq!(reward(result), 1.0, "{id}: {result}");
    }
    // The token went from the host's environment to the sidecar, the agent printed it: no
    // file of the run and no line the host printed holds it.
    assert_eq!(files_containing(&run, TOKEN), Vec::<PathBuf>::new());
    assert!(!out.stdout.contains(TOKEN) && !out.stderr.contains(TOKEN));
    let shown = published["compose-secret"].1["trajectory"].to_string();
    assert!(
        shown.contains("********"),
        "the oracle's output, scrubbed: {shown}"
    );
    assert_eq!(leftovers(&run_id(&run), &good), Vec::<String>::new());
}

#[test]
fn compose_failures_are_their_tasks_issues_named_before_the_agent() {
    // A service that never becomes healthy, an environment health check that fails, an
    // unsupported key: each its task's issue, named; nothing left either.
    let ws = Workspace::new();
    tag_images(&ws);
    let bad = [
        "compose-unhealthy",
        "compose-healthcheck-fails",
        "compose-unsupported",
    ];
    let out = oracle(&ws, &features(&bad), &[], &[]).expect_code(1);
    let run = run_dir(&out);
    let failed = results(&run);
    let issue = |id: &str| failed[id].1["issues"][0].clone();
    let unhealthy = issue("compose-unhealthy");
    assert_eq!(unhealthy["code"], "environment_failed", "{unhealthy}");
    let message = unhealthy["message"].as_str().unwrap();
    assert!(
        message.contains("service `db` of ")
            && message
                .contains("compose-unhealthy/environment/docker-compose.yaml never became healthy")
            && message
                .contains("failed after 3 consecutive retries (exit 1): db is still starting"),
        "{message}"
    );
    let check = issue("compose-healthcheck-fails");
    assert_eq!(check["code"], "prepare_failed", "{check}");
    assert!(
        check["message"].as_str().unwrap().contains(
            "the environment's healthcheck `wget -q -O /dev/null http://api:8000/ready` failed"
        ),
        "{check}"
    );
    let refused = issue("compose-unsupported");
    assert_eq!(refused["code"], "unsupported", "{refused}");
    assert!(
        refused["message"].as_str().unwrap().contains(
            "compose-unsupported/environment/docker-compose.yaml: `services.web.ports` is not \
             supported: publishes a port on the host"
        ),
        "{refused}"
    );
    assert_eq!(leftovers(&run_id(&run), &bad), Vec::<String>::new());

    // `--dry-run` says so, naming the file and the key.
    let out = oracle(&ws, &features(&bad), &["--dry-run"], &[]).expect_code(0);
    assert!(
        out.stderr.contains(
            "task compose-unsupported: refused before the first task (its `unsupported` issue)"
        ) && out.stderr.contains("`services.web.ports` is not supported"),
        "{out:?}"
    );
    // Refused before the first task: a run of only the unsupported task is refused whole.
    let out = oracle(&ws, &features(&["compose-unsupported"]), &[], &[]).expect_code(2);
    assert!(
        out.stderr.contains("`services.web.ports` is not supported"),
        "{out:?}"
    );
    // So is a task whose secret is not set, naming the variable, never a value.
    let out = oracle(&ws, &features(&["compose-secret"]), &[], &[]).expect_code(2);
    assert!(
        out.stderr
            .contains("services.api.environment[0]: variable `COMPOSE_API_TOKEN` is not set"),
        "{out:?}"
    );
}

/// Writes the compose task `name` (its own benchmark directory `ws/name/name`): `main` from
/// `ubuntu:24.04` in `/app`, the Compose file `compose`, the solution `solve`, a verifier
/// that scores 1. Its benchmark parameters.
fn compose_task(ws: &Workspace, name: &str, toml: &str, compose: &str, solve: &str) -> Value {
    let dir = ws.cwd.join(name);
    let files = [
        (
            "task.toml",
            format!("schema_version = \"1.4\"\n{toml}[environment]\nworkdir = \"/app\"\n"),
        ),
        ("instruction.md", "Wait.\n".to_string()),
        (
            "environment/Dockerfile",
            "FROM ubuntu:24.04\nWORKDIR /app\n".to_string(),
        ),
        ("environment/docker-compose.yaml", compose.to_string()),
        ("solution/solve.sh", format!("#!/bin/bash\n{solve}\n")),
        (
            "tests/test.sh",
            "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n".to_string(),
        ),
    ];
    for (path, text) in files {
        let file = dir.join(name).join(path);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(file, text).unwrap();
    }
    json!({"path": dir})
}

/// A compose task whose agent takes a minute: its environment stays open meanwhile.
fn slow_task(ws: &Workspace) -> Value {
    compose_task(
        ws,
        "slow-compose",
        "[agent]\ntimeout_sec = 300.0\n",
        "services:\n  main:\n    depends_on:\n      api:\n        condition: service_healthy\n  \
         api:\n    image: busybox:1.36\n    command: [sh, -c, 'echo ok > /data/index.html && \
         httpd -f -p 8000 -h /data']\n    \
         volumes: [data:/data]\n    healthcheck:\n      test: [CMD, wget, -q, -O, /dev/null, \
         'http://localhost:8000/']\n      interval: 500ms\n      retries: 30\n\
         volumes:\n  data: {}\n",
        "sleep 120",
    )
}

/// A compose task whose service never becomes healthy within the test: its open lasts.
fn slow_open_task(ws: &Workspace) -> Value {
    compose_task(
        ws,
        "slow-open",
        "",
        "services:\n  db:\n    image: busybox:1.36\n    command: [sleep, infinity]\n    \
         volumes: [data:/data]\n    healthcheck:\n      test: [CMD, test, -f, /never]\n      \
         interval: 500ms\n      retries: 1000\nvolumes:\n  data: {}\n",
        "true",
    )
}

/// Starts the slow task's run.
fn spawn_slow(ws: &Workspace, plugins: &Packs, params: &Value) -> Child {
    ws.command()
        .args(oracle_args(plugins, params, &[]))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The run directory where the task's environment record (with its services) appears
/// (waiting up to two minutes).
fn wait_for_open_environment(ws: &Workspace, known: &[PathBuf]) -> PathBuf {
    wait_for_record(ws, known, "\"sidecars\"")
}

/// The run directory (not one of `known`) where an environment record holding `needle`
/// appears (waiting up to two minutes).
fn wait_for_record(ws: &Workspace, known: &[PathBuf], needle: &str) -> PathBuf {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while std::time::Instant::now() < deadline {
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
                // The task's session (the build phase records its own, without services).
                let recorded = fs::read_dir(run.path().join(".env-resources"))
                    .into_iter()
                    .flatten()
                    .flatten()
                    .filter(|r| fs::read_to_string(r.path()).is_ok_and(|t| t.contains(needle)))
                    .count();
                if recorded > 0 && !known.contains(&run.path()) {
                    return run.path();
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("no environment opened within two minutes");
}

#[test]
fn a_cancelled_or_killed_compose_task_leaves_nothing_behind() {
    let ws = Workspace::new();
    tag_images(&ws);
    let params = slow_task(&ws);
    let plugins = packs();
    // Ctrl-C while the agent runs: the run ends cancelled, the project is removed.
    let child = spawn_slow(&ws, &plugins, &params);
    let run = wait_for_open_environment(&ws, &[]);
    let id = run_id(&run);
    assert_eq!(
        leftovers(&id, &["slow-compose"]).len(),
        4,
        "main, api, network, volume"
    );
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let out = Outcome::of(child.wait_with_output().unwrap());
    assert_eq!(out.code, 130, "{out:?}");
    assert_eq!(leftovers(&id, &["slow-compose"]), Vec::<String>::new());

    // SIGKILL: everything stays, `env list` shows it, `env close --all` releases all of it.
    let mut child = spawn_slow(&ws, &plugins, &params);
    let run = wait_for_open_environment(&ws, &[run]);
    let id = run_id(&run);
    child.kill().unwrap();
    child.wait().unwrap();
    let mut left = leftovers(&id, &["slow-compose"]);
    left.sort();
    assert_eq!(left.len(), 4, "{left:?}");
    assert!(
        left[0].starts_with("container agentcompass-slow-compose-1-"),
        "{left:?}"
    );
    let dir = plugins.display().to_string();
    let listed = ws.run_ok(&["--plugin-dir", &dir, "env", "list"], &[]);
    let records: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(records.as_array().unwrap().len(), 1, "{listed:?}");
    ws.run_ok(&["--plugin-dir", &dir, "env", "close", "--all"], &[]);
    assert_eq!(leftovers(&id, &["slow-compose"]), Vec::<String>::new());

    // SIGKILL while the environment is still opening (its service's health check pending):
    // the record of its opening is there, and `env close --all` releases what it made.
    let mut child = spawn_slow(&ws, &plugins, &slow_open_task(&ws));
    let known: Vec<PathBuf> = fs::read_dir(ws.cwd.join("results"))
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|ns| fs::read_dir(ns.path()).into_iter().flatten().flatten())
        .map(|run| run.path())
        .collect();
    let run = wait_for_record(&ws, &known, "\"opening\"");
    let id = run_id(&run);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while leftovers(&id, &["slow-open"]).len() < 3 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let mut left = leftovers(&id, &["slow-open"]);
    left.sort();
    // The service, its network and volume, and `main` when it started before the kill (it
    // waits, as `up --wait` does, for every health check).
    assert!(
        (3..=4).contains(&left.len()) && left.iter().any(|l| l.ends_with("-db")),
        "{left:?}"
    );
    let listed = ws.run_ok(&["--plugin-dir", &dir, "env", "list"], &[]);
    assert!(listed.stdout.contains("\"opening\""), "{listed:?}");
    ws.run_ok(&["--plugin-dir", &dir, "env", "close", "--all"], &[]);
    assert_eq!(leftovers(&id, &["slow-open"]), Vec::<String>::new());
}

#[test]
fn slurm_runs_compose_tasks_on_the_nodes_building_each_image_once() {
    use crate::slurm::{nodes, published, slurm_conf, slurm_config};
    let ws = Workspace::new();
    tag_images(&ws);
    // Three copies of the sidecar task: one image of `main`, one of its API.
    let tasks = ws.cwd.join("tasks");
    fs::create_dir_all(&tasks).unwrap();
    for n in 1..=3 {
        let copied = Command::new("cp")
            .arg("-r")
            .arg(repo_root().join("examples/harbor-features/compose-sidecar"))
            .arg(tasks.join(format!("cluster-sidecar-{n}")))
            .status()
            .unwrap();
        assert!(copied.success());
    }
    let config = slurm_config(&ws, "cpus_per_job = 2\nmax_jobs_in_flight = 3");
    let since = now() - 1;
    let events = ImageEvents::watch(ws.root());
    let plugins = packs();
    let mut args = vec!["--config".to_string(), config];
    args.extend(oracle_args(
        &plugins,
        &json!({"path": "tasks"}),
        &["--executor", "slurm"],
    ));
    let out = ws
        .command()
        .env("SLURM_CONF", slurm_conf())
        .args(&args)
        .output()
        .unwrap();
    let out = Outcome::of(out).expect_code(0);
    let events = events.stop();
    let run = run_dir(&out);
    let tasks = published(&run);
    assert_eq!(tasks.len(), 3);
    let spread = nodes(&tasks);
    assert!(
        spread
            .keys()
            .all(|n| ["n1", "n2", "n3"].contains(&n.as_str())),
        "{spread:?}"
    );
    for (id, (_, result)) in results(&run) {
        assert_eq!(reward(&result), 1.0, "{id}: {result}");
    }
    // The API's image: built at most once by each node that ran a task (a node's build lock
    // is its own: here the nodes share this machine's engine, and an earlier test may have
    // built it already).
    let api = built_image("/www/health", "ok\n").expect("the API's image");
    let built = builds_of(&api, since, &events);
    assert!(
        built <= spread.len(),
        "{api}: {built} builds on {} nodes: {events:?}",
        spread.len()
    );
    assert_eq!(
        leftovers(
            &run_id(&run),
            &[
                "cluster-sidecar-1",
                "cluster-sidecar-2",
                "cluster-sidecar-3"
            ]
        ),
        Vec::<String>::new()
    );
}
