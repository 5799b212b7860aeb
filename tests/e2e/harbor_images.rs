//! Harbor tasks that bring their own image, run as Harbor runs them (issue 54), end to end in
//! the tests' engine (`docker`, or `podman` in the podman tiers): `examples/harbor-features/`
//! — a task whose `environment/Dockerfile` installs a tool from the task directory and
//! downloads data from a registry during the build (a loopback server here; the task then
//! runs `no-network`), a build that fails, a task naming a prebuilt `docker_image`, a
//! multi-step task whose step waits on its health check and an environment whose health
//! check never passes — each declaring `cpus`, `memory_mb` and `storage_mb`. The tasks' `FROM ubuntu:24.04` and
//! `docker_image` name local test images (busybox with bash), tagged by the test.

use std::path::{Path, PathBuf};
use std::process::Command;

use agentcompass_e2e::{
    container_engine, container_host, container_host_param, loopback, pack_run,
    published_results as results, run_dir, Outcome, Packs, Workspace,
};
use serde_json::{json, Value};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the repository")
        .to_path_buf()
}

/// The port of the registry the `dockerfile-build` task's build downloads from (its
/// Dockerfile's `ARG REGISTRY` default).
const REGISTRY_PORT: u16 = 18741;

/// What the `dockerfile-build` task's build downloads.
const SUFFIX: &str = "built with the network\n";

/// The images the example tasks name, tagged on the tests' engine from one local build.
pub(crate) const BASE_TAGS: [&str; 2] = [
    "ubuntu:24.04",
    "ghcr.io/agentcompass/harbor-features-base:1",
];

/// The Docker CLI against the tests' engine (Podman's compatible API in the podman tiers;
/// the classic builder on both).
pub(crate) fn engine_cli(args: &[&str]) -> String {
    let out = Command::new("docker")
        .args(["-H", &container_host()])
        .args(args)
        .env("DOCKER_BUILDKIT", "0")
        .output()
        .expect("the docker CLI");
    assert!(out.status.success(), "docker {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Tags the base images the tasks name: busybox with bash (`docker_networks::image_context`).
pub(crate) fn tag_base_images(dir: &Path) {
    let context = crate::docker_networks::image_context(
        dir,
        &["/usr/bin/find", "/usr/bin/uname", "/usr/bin/date"],
    );
    let context = context.display().to_string();
    let mut args = vec!["build", "-q"];
    for tag in BASE_TAGS {
        args.extend(["-t", tag]);
    }
    args.push(&context);
    engine_cli(&args);
}

/// The engine's image events (build, tag, pull) while it lives, streamed as they happen
/// (Docker keeps only its last 256 events: a long run's image events are gone afterwards).
pub(crate) struct ImageEvents {
    child: std::process::Child,
    file: PathBuf,
}

impl ImageEvents {
    /// Starts watching (into a file under `dir`), once the watch is live.
    pub(crate) fn watch(dir: &Path) -> Self {
        let file = dir.join(format!("image-events-{}.txt", now()));
        let out = std::fs::File::create(&file).unwrap();
        let child = Command::new("docker")
            .args(["-H", &container_host(), "events", "--filter", "type=image"])
            .args(["--format", "{{.Action}} {{.Actor.Attributes.name}} {{.ID}}"])
            .stdout(out)
            .spawn()
            .expect("the docker CLI");
        // The stream starts with the request; give it a moment to be in place.
        std::thread::sleep(std::time::Duration::from_millis(500));
        ImageEvents { child, file }
    }

    /// Stops watching: the build, tag and pull events seen, as `<action> <name> <id>`.
    pub(crate) fn stop(mut self) -> Vec<String> {
        std::thread::sleep(std::time::Duration::from_millis(500));
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::fs::read_to_string(&self.file)
            .unwrap_or_default()
            .lines()
            .filter(|l| ["build", "tag", "pull"].iter().any(|a| l.starts_with(a)))
            .map(str::to_string)
            .collect()
    }
}

/// The image the providers built (tagged `agentcompass-build/...`) that holds `content` in
/// its file `path`.
pub(crate) fn built_image(path: &str, content: &str) -> Option<String> {
    engine_cli(&[
        "image",
        "ls",
        "--filter",
        "label=agentcompass.context_sha256",
        "--format",
        "{{.Repository}}:{{.Tag}}",
    ])
    .lines()
    .map(str::to_string)
    .find(|name| carries(name, path, content))
}

/// How many times the image `tag` was built since `since` (Unix seconds): Docker's tag events
/// of it in `events` (watched during the run), Podman's build events of an image with its
/// context label (`podman events`, which names the image of a build).
pub(crate) fn builds_of(tag: &str, since: u64, events: &[String]) -> usize {
    if container_engine() == "podman" {
        return crate::podman::builds_of(tag, &since.to_string());
    }
    let name = tag
        .strip_prefix("docker.io/")
        .or_else(|| tag.strip_prefix("localhost/"))
        .unwrap_or(tag);
    events
        .iter()
        .filter(|e| e.split(' ').nth(1).is_some_and(|n| n == name || n == tag))
        .count()
}

/// Whether image `name` holds `content` in its file `path` (read from a container created,
/// never started, from it: `docker run` does not return on rootless Podman's API here).
fn carries(name: &str, path: &str, content: &str) -> bool {
    let engine = |args: &[&str]| {
        Command::new("docker")
            .args(["-H", &container_host()])
            .args(args)
            .output()
            .expect("the docker CLI")
    };
    let created = engine(&["create", "--network", "none", name, "true"]);
    if !created.status.success() {
        return false;
    }
    let id = String::from_utf8_lossy(&created.stdout).trim().to_string();
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("file");
    let source = format!("{id}:{path}");
    let copied = engine(&["cp", &source, &copy.display().to_string()]);
    engine(&["rm", "-f", &id]);
    copied.status.success() && std::fs::read_to_string(&copy).is_ok_and(|text| text == content)
}

pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// `run harbor oracle` over `examples/harbor-features/` tasks `tasks`, in the tests' engine.
/// Serves, until the test ends, the registry the `dockerfile-build` task's build downloads
/// from (tests that run it are one test group: they share its port).
pub(crate) fn serve_registry() {
    let listener = std::net::TcpListener::bind(("127.0.0.1", REGISTRY_PORT))
        .expect("the registry port of examples/harbor-features/dockerfile-build");
    loopback::serve(listener, |head| {
        if head.starts_with("GET /greeting-suffix.txt ") {
            loopback::Reply::ok(SUFFIX)
        } else {
            loopback::Reply {
                status: "404 Not Found",
                content_type: None,
                body: String::new(),
            }
        }
    });
}

/// The benchmark parameters of the `examples/harbor-features` tasks `tasks`.
pub(crate) fn features(tasks: &[&str]) -> Value {
    json!({
        "path": repo_root().join("examples/harbor-features"),
        "sample_ids": tasks,
    })
}

fn oracle(ws: &Workspace, tasks: &[&str], extra: &[&str]) -> Outcome {
    oracle_on(ws, &features(tasks), "none", extra)
}

/// `run harbor oracle` with the benchmark parameters `params`, in the tests' engine, with
/// `--progress progress` and `extra`.
pub(crate) fn oracle_on(ws: &Workspace, params: &Value, progress: &str, extra: &[&str]) -> Outcome {
    let plugins = Packs::new(&["harbor-pack", "agents-pack", "docker-provider"]);
    let env = json!({container_host_param(): container_host()}).to_string();
    let params = params.to_string();
    let mut args = pack_run(
        &plugins,
        ["harbor", "oracle", "scripted-model"],
        &params,
        &[
            "--env",
            container_engine(),
            "--env-params",
            &env,
            "--progress",
            progress,
        ],
    );
    args.extend_from_slice(extra);
    ws.run(&args, &[])
}

pub(crate) fn reward(result: &Value) -> f64 {
    result["metrics"]["reward"].as_f64().unwrap_or(-1.0)
}

#[test]
fn task_images_are_built_once_and_a_failed_build_names_its_instruction() {
    let ws = Workspace::new();
    tag_base_images(ws.root());
    serve_registry();
    let tasks = [
        "dockerfile-build",
        "prebuilt-image",
        "step-healthcheck",
        "agent-user",
    ];
    let out = oracle(&ws, &tasks, &[]).expect_code(0);
    let published = results(&run_dir(&out));
    for (id, (_, result)) in &published {
        assert_eq!(result["status"], "completed", "{id}: {result}");
        assert_eq!(reward(result), 1.0, "{id}: {result}");
    }
    assert_eq!(published.len(), 4);
    // The build's log is kept in the attempt's directory.
    let (attempt, _) = &published["dockerfile-build"];
    let log = std::fs::read_to_string(attempt.join("build.log")).unwrap_or_default();
    assert!(log.contains("greeting-suffix.txt"), "build.log: {log}");

    // A failed build: the task's environment issue, quoting the instruction and its output;
    // a health check that never passes stops its task before the agent.
    let out = oracle(&ws, &["build-fails", "healthcheck-fails"], &[]).expect_code(1);
    let failed = results(&run_dir(&out));
    let (_, unhealthy) = &failed["healthcheck-fails"];
    assert_eq!(
        unhealthy["issues"][0]["code"], "prepare_failed",
        "{unhealthy}"
    );
    let (_, failed) = &failed["build-fails"];
    let issue = &failed["issues"][0];
    assert_eq!(issue["code"], "environment_failed", "{failed}");
    let message = issue["message"].as_str().unwrap_or_default();
    for needle in [
        "RUN echo \"fetching the toolchain\"",
        "toolchain 9.9 is not available",
        "fetching the toolchain",
    ] {
        assert!(message.contains(needle), "missing {needle:?} in {message}");
    }
    // ... and naming its whole log.
    let log = message
        .rsplit_once(" (its log: ")
        .map(|(_, l)| l.trim_end_matches(')'));
    let log = std::fs::read_to_string(log.expect("the log named")).unwrap();
    assert!(log.contains("toolchain 9.9 is not available"), "{log}");

    // Again: nothing is built or pulled, the images are reused.
    let tag = built_image("/usr/local/share/greeting-suffix.txt", SUFFIX)
        .expect("the dockerfile-build task's image");
    let since = now();
    let events = ImageEvents::watch(ws.root());
    let out = oracle(&ws, &["dockerfile-build", "prebuilt-image"], &[]).expect_code(0);
    for (id, (_, result)) in results(&run_dir(&out)) {
        assert_eq!(reward(&result), 1.0, "{id}: {result}");
    }
    // (Other tests build and tag meanwhile: their images are not this one.)
    let events = events.stop();
    assert_eq!(builds_of(&tag, since, &events), 0, "{events:?}");
    let pulls: Vec<&String> = events.iter().filter(|e| e.starts_with("pull")).collect();
    assert_eq!(pulls, Vec::<&String>::new());
}

/// Of a task whose image sets `WORKDIR /src` and puts its data there (`workdir`) and one whose
/// image also sets a `USER` (`user`), those named in `names`, under `dir`.
pub(crate) fn image_config_tasks(dir: &Path, names: &[&str]) {
    for (name, user) in [("workdir", ""), ("user", "USER 1000\n")] {
        if !names.contains(&name) {
            continue;
        }
        let dockerfile =
            format!("FROM ubuntu:24.04\nWORKDIR /src\nCOPY data.txt /src/data.txt\n{user}");
        write_task(
            &dir.join(name),
            &[
                (
                    "task.toml",
                    "schema_version = \"1.4\"\n\n[environment]\ncpus = 1\nmemory_mb = 2048\n",
                ),
                ("instruction.md", "Copy data.txt to out.txt.\n"),
                ("environment/Dockerfile", &dockerfile),
                ("environment/data.txt", "the image's data\n"),
                // Relative paths: the commands start in the image's WORKDIR.
                ("solution/solve.sh", "#!/bin/bash\ncp data.txt out.txt\n"),
                (
                    "tests/test.sh",
                    "#!/bin/bash\nif [ \"$(cat /src/out.txt)\" = \"the image's data\" ]; then \
                     echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
                ),
            ],
        );
    }
}

/// Writes a task directory: each `(path, text)` of `files` under `task`, parents created.
pub(crate) fn write_task(task: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let file = task.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
}

/// `count` copies of one task whose image its own Dockerfile builds (the same definition in
/// every task directory, so one image), under `dir`; the image carries `marker`.
pub(crate) fn tasks_of_one_image(dir: &Path, count: usize, marker: &str) {
    for i in 0..count {
        write_task(
            &dir.join(format!("same-image-{i:02}")),
            &[
                (
                    "task.toml",
                    "schema_version = \"1.4\"\n\n[environment]\ncpus = 1\nmemory_mb = 2048\n\
                     storage_mb = 10240\nworkdir = \"/app\"\nnetwork_mode = \"no-network\"\n",
                ),
                ("instruction.md", "Copy /built.txt to /app/seen.txt.\n"),
                (
                    "environment/Dockerfile",
                    "FROM ubuntu:24.04\nWORKDIR /app\nENV BUILT_FILE=/built.txt\n\
                     COPY marker.txt /built.txt\n",
                ),
                ("environment/marker.txt", marker),
                // The image's ENV names the file.
                (
                    "solution/solve.sh",
                    "#!/bin/bash\ncp \"$BUILT_FILE\" /app/seen.txt\n",
                ),
                (
                    "tests/test.sh",
                    "#!/bin/bash\nif [ \"$(cat /built.txt)\" = \"$(cat /app/seen.txt)\" ]; then \
                     echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
                ),
            ],
        );
    }
}

#[test]
fn fifty_tasks_of_one_image_build_it_once_before_taking_their_slots() {
    let ws = Workspace::new();
    tag_base_images(ws.root());
    let tasks = ws.root().join("tasks");
    let marker = format!("built for {}\n", ws.root().display());
    // Fifty in Docker; the Podman tiers, which repeat it, make the same point with sixteen.
    let count = if container_engine() == "podman" {
        16
    } else {
        50
    };
    tasks_of_one_image(&tasks, count, &marker);
    let since = now();
    let events = ImageEvents::watch(ws.root());
    let params = json!({"path": tasks});
    let out = oracle_on(&ws, &params, "plain", &["--task-concurrency", "8"]);
    assert_eq!(out.code, 0, "{out:?}");
    let published = results(&run_dir(&out));
    assert_eq!(published.len(), count);
    for (id, (_, result)) in &published {
        assert_eq!(reward(result), 1.0, "{id}: {result}");
    }
    // One build (the engine's events: one image made of this definition, whatever other
    // tests build meanwhile), shown on the terminal before the tasks ran, and in
    // progress.jsonl.
    let events = events.stop();
    let tag = built_image("/built.txt", &marker).expect("the tasks' image");
    assert_eq!(builds_of(&tag, since, &events), 1, "{tag}: {events:?}");
    let line = out
        .stderr
        .lines()
        .find(|l| l.contains("images 0/1"))
        .unwrap_or_else(|| panic!("no build-phase line: {}", out.stderr));
    assert!(line.contains(&format!("0/{count}")), "{line}");
    let events = std::fs::read_to_string(run_dir(&out).join("progress.jsonl")).unwrap();
    let phase: Vec<&str> = events
        .lines()
        .filter(|l| l.contains("\"images_progress\"") || l.contains("\"task_started\""))
        .take(3)
        .collect();
    assert!(
        phase[0].contains("\"built\":0") && phase[1].contains("\"built\":1"),
        "{phase:?}"
    );
    assert!(phase[2].contains("task_started"), "{phase:?}");
}

/// `gpus > 0` (issue 54): Docker is asked for that many NVIDIA devices, as Harbor asks (this
/// machine has none, so the engine's own refusal is the task's environment issue); Podman's
/// compatible API has no device requests, so a run of such a task is refused before it starts.
#[test]
fn gpus_are_requested_from_docker_and_refused_by_podman() {
    let ws = Workspace::new();
    tag_base_images(ws.root());
    let tasks = ws.root().join("gpu-tasks");
    agentcompass_e2e::copy_tree(
        &repo_root().join("examples/harbor-features/prebuilt-image"),
        &tasks.join("one-gpu"),
    );
    let toml = tasks.join("one-gpu/task.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(
        &toml,
        text.replace("storage_mb = 10240\n", "storage_mb = 10240\ngpus = 1\n"),
    )
    .unwrap();
    let out = oracle_on(&ws, &json!({"path": tasks}), "none", &[]);
    if container_engine() == "podman" {
        assert_eq!(out.code, 2, "{out:?}");
        assert!(out.stderr.contains("`gpu`"), "{}", out.stderr);
        return;
    }
    assert_eq!(out.code, 1, "{out:?}");
    let (_, result) = &results(&run_dir(&out))["one-gpu"];
    let issue = &result["issues"][0];
    assert_eq!(issue["code"], "environment_failed", "{result}");
    let message = issue["message"].as_str().unwrap_or_default();
    assert!(message.contains("nvidia"), "{message}");
}

#[test]
fn a_container_starts_in_its_images_workdir() {
    let ws = Workspace::new();
    tag_base_images(ws.root());
    let tasks = ws.root().join("tasks");
    image_config_tasks(&tasks, &["workdir"]);
    let out = oracle_on(&ws, &json!({"path": tasks}), "none", &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let published = results(&run_dir(&out));
    // The task names no workdir: its commands start in the image's (`cp data.txt out.txt`).
    assert_eq!(
        reward(&published["workdir"].1),
        1.0,
        "{:?}",
        published["workdir"]
    );
}
