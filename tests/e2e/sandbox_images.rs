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
use serde_json::json;

use crate::harbor_images::{engine_cli, reward, tag_base_images, tasks_of_one_image};

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
    let plugins = Packs::new(&["harbor-pack", "agents-pack"]);
    let params = json!({"path": tasks}).to_string();
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
    let store = ws.root().join("sandbox-images");
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
