//! A task's own image in the `sandbox` (issue 54): Harbor tasks whose `environment/Dockerfile`
//! the sandbox builds with Podman in a store of its own, exports once and enters read-only
//! with bubblewrap — the task's tools, never the host's. The tasks' `FROM ubuntu:24.04` is the
//! tests' busybox-with-bash image, saved from the tests' Docker engine and loaded into the
//! sandbox's store (no registry is reachable here). Needs Docker (the base image) and Podman.

use std::path::Path;
use std::process::Command;

use agentcompass_e2e::{
    pack_run, published_results as results, run_dir, Outcome, Packs, Workspace,
};
use serde_json::{json, Value};

use crate::harbor_images::{
    engine_cli, features, image_config_tasks, reward, serve_registry, tag_base_images,
    tasks_of_one_image, BASE_TAGS,
};

/// The sandbox's image store of a test, under its workspace: Podman's overlay driver makes
/// its directory a mount of its own, undone when the test ends so that nothing is left
/// mounted and the workspace can be removed.
pub(crate) struct Store(std::path::PathBuf);

impl Store {
    pub(crate) fn new(ws: &Workspace) -> Store {
        Store(ws.root().join("sandbox-images"))
    }
}

impl std::ops::Deref for Store {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg(self.0.join("storage/overlay"))
            .output();
    }
}

/// `podman` in the sandbox's image store `store`.
pub(crate) fn podman_in(store: &Path, args: &[&str]) -> String {
    let out = Command::new("podman")
        .arg("--root")
        .arg(store.join("storage"))
        .arg("--runroot")
        .arg(store.join("run"))
        .args(args)
        .output()
        .expect("podman");
    assert!(out.status.success(), "podman {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `run harbor oracle` over the tasks under `tasks` in the sandbox, images kept in `store`.
pub(crate) fn sandbox_run(ws: &Workspace, tasks: &Path, store: &Path) -> Outcome {
    sandbox_oracle(ws, &json!({"path": tasks}), store)
}

/// `run harbor oracle` with the benchmark parameters `params` in the sandbox, images kept in
/// `store`.
fn sandbox_oracle(ws: &Workspace, params: &Value, store: &Path) -> Outcome {
    let plugins = Packs::new(&["harbor-pack", "agents-pack"]);
    let params = params.to_string();
    let env = json!({"image_store": store}).to_string();
    let args = pack_run(
        &plugins,
        ["harbor", "oracle", "scripted-model"],
        &params,
        &[
            "--env",
            "sandbox",
            "--env-params",
            &env,
            "--progress",
            "plain",
        ],
    );
    ws.run(&args, &[])
}

#[test]
fn the_sandbox_runs_a_tasks_own_image_built_once() {
    let ws = Workspace::new();
    tag_base_images(ws.root());
    let store = Store::new(&ws);
    let base = ws.root().join("base.tar");
    engine_cli(&["save", "-o", &base.display().to_string(), "ubuntu:24.04"]);
    podman_in(&store, &["load", "-q", "-i", &base.display().to_string()]);
    let tasks = ws.root().join("tasks");
    let marker = format!("built for the sandbox in {}\n", ws.root().display());
    tasks_of_one_image(&tasks, 3, &marker);
    let out = sandbox_run(&ws, &tasks, &store);
    assert_eq!(out.code, 0, "{out:?}");
    let published = results(&run_dir(&out));
    assert_eq!(published.len(), 3);
    for (id, (_, result)) in &published {
        // The task read /built.txt, which only its image has, named by the image's ENV.
        assert_eq!(reward(result), 1.0, "{id}: {result}");
    }
    assert!(out.stderr.contains("images 0/1"), "{}", out.stderr);
    let rootfs: Vec<_> = std::fs::read_dir(store.join("rootfs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(rootfs.len(), 1, "one image for the three tasks: {rootfs:?}");
    assert_eq!(
        std::fs::read_to_string(rootfs[0].join("built.txt")).unwrap(),
        marker
    );
    let built = std::fs::metadata(&rootfs[0]).unwrap().modified().unwrap();
    // Again: nothing is built, the exported root filesystem is reused.
    let out = sandbox_run(&ws, &tasks, &store);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        std::fs::metadata(&rootfs[0]).unwrap().modified().unwrap(),
        built
    );
    let images = podman_in(&store, &["images", "--format", "{{.Repository}}"]);
    let builds = images
        .lines()
        .filter(|l| l.contains("agentcompass-build/ctx-"))
        .count();
    assert_eq!(builds, 1, "{images}");
    // No export container is left behind.
    assert_eq!(podman_in(&store, &["ps", "-a", "-q"]).trim(), "");
}

/// The tests' base images (`FROM ubuntu:24.04`, `docker_image`) from the Docker engine into
/// the sandbox's store `store`.
fn load_base_images(ws: &Workspace, store: &Path) {
    tag_base_images(ws.root());
    let base = ws.root().join("base.tar").display().to_string();
    let mut save = vec!["save", "-o", &base];
    save.extend(BASE_TAGS);
    engine_cli(&save);
    podman_in(store, &["load", "-q", "-i", &base]);
}

#[test]
fn the_features_tasks_run_in_the_sandbox_in_their_own_images() {
    let ws = Workspace::new();
    let store = Store::new(&ws);
    load_base_images(&ws, &store);
    serve_registry();
    // A Dockerfile task (its tool and its downloaded data only in its image), a task naming
    // its `docker_image`, a multi-step task with health checks: Harbor's rewards.
    let tasks = ["dockerfile-build", "prebuilt-image", "step-healthcheck"];
    let out = sandbox_oracle(&ws, &features(&tasks), &store);
    assert_eq!(out.code, 0, "{out:?}");
    let published = results(&run_dir(&out));
    assert_eq!(published.len(), 3);
    for (id, (_, result)) in &published {
        assert_eq!(reward(result), 1.0, "{id}: {result}");
    }
    let (attempt, _) = &published["dockerfile-build"];
    let log = std::fs::read_to_string(attempt.join("build.log")).unwrap_or_default();
    assert!(log.contains("greeting-suffix.txt"), "build.log: {log}");
    // A failed build, a health check that never passes and a task naming its users (the
    // sandbox cannot switch users): their tasks' issues.
    let tasks = ["build-fails", "healthcheck-fails", "agent-user"];
    let out = sandbox_oracle(&ws, &features(&tasks), &store);
    assert_eq!(out.code, 1, "{out:?}");
    let failed = results(&run_dir(&out));
    let issue = |id: &str| failed[id].1["issues"][0].clone();
    assert_eq!(issue("healthcheck-fails")["code"], "prepare_failed");
    assert_eq!(issue("build-fails")["code"], "environment_failed");
    assert_eq!(issue("agent-user")["code"], "unsupported");
    let message = issue("build-fails")["message"].to_string();
    assert!(message.contains("build.log)"), "its log named: {message}");
    assert!(
        message.contains("toolchain 9.9 is not available"),
        "{message}"
    );
}

#[test]
fn the_sandbox_starts_in_the_images_workdir_and_refuses_its_user() {
    let ws = Workspace::new();
    let store = Store::new(&ws);
    load_base_images(&ws, &store);
    let tasks = ws.root().join("tasks");
    image_config_tasks(&tasks, &["workdir", "user"]);
    let out = sandbox_run(&ws, &tasks, &store);
    assert_eq!(out.code, 1, "{out:?}");
    let published = results(&run_dir(&out));
    let (_, workdir) = &published["workdir"];
    assert_eq!(reward(workdir), 1.0, "{workdir}");
    let (_, user) = &published["user"];
    let issue = &user["issues"][0];
    assert_eq!(issue["code"], "environment_failed", "{user}");
    let message = issue["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("sets `USER 1000`, and the sandbox runs every command as the user"),
        "{message}"
    );
}
