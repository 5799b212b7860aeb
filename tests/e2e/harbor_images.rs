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

/// The images the example tasks name, tagged on the tests' engine from one local build.
const BASE_TAGS: [&str; 2] = [
    "ubuntu:24.04",
    "ghcr.io/agentcompass/harbor-features-base:1",
];

/// The Docker CLI against the tests' engine (Podman's compatible API in the podman tiers;
/// the classic builder on both).
fn engine_cli(args: &[&str]) -> String {
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
fn tag_base_images(dir: &Path) {
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

/// The image events (build, tag, pull) of the engine between `since` and now, as
/// `<action> <id>` lines.
fn image_events(since: u64) -> Vec<String> {
    let until = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 1;
    engine_cli(&[
        "events",
        "--since",
        &since.to_string(),
        "--until",
        &until.to_string(),
        "--filter",
        "type=image",
        "--format",
        "{{.Action}} {{.ID}}",
    ])
    .lines()
    .filter(|l| ["build", "tag", "pull"].iter().any(|a| l.starts_with(a)))
    .map(str::to_string)
    .collect()
}

/// The images the providers built from a context (by their label).
fn built_images() -> Vec<String> {
    engine_cli(&[
        "image",
        "ls",
        "-q",
        "--filter",
        "label=agentcompass.context_sha256",
    ])
    .lines()
    .map(str::to_string)
    .collect()
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// `run harbor oracle` over `examples/harbor-features/` tasks `tasks`, in the tests' engine.
fn oracle(ws: &Workspace, tasks: &[&str], extra: &[&str]) -> Outcome {
    let plugins = Packs::new(&["harbor-pack", "agents-pack", "docker-provider"]);
    let params = json!({
        "path": repo_root().join("examples/harbor-features"),
        "sample_ids": tasks,
    })
    .to_string();
    let env = json!({container_host_param(): container_host()}).to_string();
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
            "none",
        ],
    );
    args.extend_from_slice(extra);
    ws.run(&args, &[])
}

fn reward(result: &Value) -> f64 {
    result["metrics"]["reward"].as_f64().unwrap_or(-1.0)
}

#[test]
fn task_images_are_built_once_and_a_failed_build_names_its_instruction() {
    let ws = Workspace::new();
    tag_base_images(ws.root());
    let listener = std::net::TcpListener::bind(("127.0.0.1", REGISTRY_PORT))
        .expect("the registry port of examples/harbor-features/dockerfile-build");
    loopback::serve(listener, |head| {
        if head.starts_with("GET /greeting-suffix.txt ") {
            loopback::Reply::ok("built with the network\n")
        } else {
            loopback::Reply {
                status: "404 Not Found",
                content_type: None,
                body: String::new(),
            }
        }
    });
    let tasks = ["dockerfile-build", "prebuilt-image", "step-healthcheck"];
    let (since, before) = (now(), built_images());
    let out = oracle(&ws, &tasks, &[]).expect_code(0);
    // The first run on this engine builds the task's image, and the events show it (so their
    // absence below means something).
    if built_images().len() > before.len() {
        assert!(!image_events(since).is_empty(), "no build event seen");
    }
    let published = results(&run_dir(&out));
    for (id, (_, result)) in &published {
        assert_eq!(result["status"], "completed", "{id}: {result}");
        assert_eq!(reward(result), 1.0, "{id}: {result}");
    }
    assert_eq!(published.len(), 3);

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

    // Again: nothing is built or pulled, the images are reused. (Events are read by the
    // second: the window starts after the last second of the run before.)
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let since = now();
    let out = oracle(&ws, &["dockerfile-build", "prebuilt-image"], &[]).expect_code(0);
    for (id, (_, result)) in results(&run_dir(&out)) {
        assert_eq!(reward(&result), 1.0, "{id}: {result}");
    }
    assert_eq!(image_events(since), Vec::<String>::new());
}
