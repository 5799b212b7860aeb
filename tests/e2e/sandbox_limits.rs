//! A task's `cpus` and `memory_mb` in the `sandbox` (issue 54): a cgroup of the session's own
//! that every command joins, where the machine lets the host make one (the tests run as root);
//! with the prepared namespace or a bwrap per command; `--memory-mode ignore` leaves the task
//! unlimited; nothing of it is left after the run.

use std::path::{Path, PathBuf};

use agentcompass_e2e::{
    pack_run, published_results as results, run_dir, Outcome, Packs, Workspace,
};
use serde_json::json;

use crate::harbor_images::write_task;

/// A Harbor task named `name` (no image: the host root) declaring `cpus = 1` and
/// `memory_mb = 64`, whose solution writes 768 MiB and records how that ended.
fn memory_hungry_task(dir: &Path, name: &str) {
    write_task(
        &dir.join(name),
        &[
            (
                "task.toml",
                "schema_version = \"1.4\"\n\n[environment]\ncpus = 1\nmemory_mb = 64\n",
            ),
            ("instruction.md", "Use 768 MiB of memory.\n"),
            (
                "solution/solve.sh",
                "#!/bin/bash\npython3 -c 'b = b\"x\" * (768 << 20)'\necho $? > /app/status\n",
            ),
            // Reward 1 when the allocation was killed (128 + SIGKILL), 0 when it went through.
            (
                "tests/test.sh",
                "#!/bin/bash\nif [ \"$(cat /app/status)\" = 137 ]; then echo 1; else echo 0; fi \
                 > /logs/verifier/reward.txt\n",
            ),
        ],
    );
}

fn oracle(ws: &Workspace, tasks: &Path, extra: &[&str]) -> Outcome {
    let plugins = Packs::new(&["harbor-pack", "agents-pack"]);
    let params = json!({"path": tasks}).to_string();
    let mut args = pack_run(
        &plugins,
        ["harbor", "oracle", "scripted-model"],
        &params,
        &["--env", "sandbox", "--progress", "none"],
    );
    args.extend_from_slice(extra);
    ws.run(&args, &[])
}

/// This process's cgroup directories in the v1 `cpu` and `memory` hierarchies (the host's
/// sessions' cgroups are made under them).
fn own_cgroups() -> Vec<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    own.lines()
        .filter_map(|line| {
            let mut fields = line.splitn(3, ':').skip(1);
            let (controllers, path) = (fields.next()?, fields.next()?);
            let listed: Vec<&str> = controllers.split(',').collect();
            (listed.contains(&"cpu") || listed.contains(&"memory")).then(|| {
                Path::new("/sys/fs/cgroup")
                    .join(controllers)
                    .join(path.trim_start_matches('/'))
            })
        })
        .collect()
}

#[test]
fn a_tasks_memory_limit_holds_in_the_sandbox_and_ignore_lifts_it() {
    let ws = Workspace::new();
    let tasks = ws.root().join("tasks");
    let name = format!("limited-{}", std::process::id());
    memory_hungry_task(&tasks, &name);
    let out = oracle(&ws, &tasks, &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let run = run_dir(&out);
    let published = results(&run);
    let (_, limited) = &published[&name];
    assert_eq!(
        limited["metrics"]["reward"], 1.0,
        "killed at 64 MiB: {limited}"
    );
    // Enforced, so not recorded as not enforced.
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run_info.json")).unwrap()).unwrap();
    let resources = &info["provenance"]["resources"];
    assert!(
        resources["not_enforced"].get("memory_mb").is_none()
            && resources["not_enforced"].get("cpu").is_none(),
        "{resources}"
    );
    // The same with a bwrap per command (which starts in the cgroup through the entry binary)
    // instead of the prepared namespace.
    let params = r#"{"prepared_namespace": false}"#;
    let out = oracle(&ws, &tasks, &["--env-params", params]);
    assert_eq!(out.code, 0, "{out:?}");
    let published = results(&run_dir(&out));
    assert_eq!(published[&name].1["metrics"]["reward"], 1.0);
    // Unlimited when the user says so.
    let out = oracle(
        &ws,
        &tasks,
        &["--memory-mode", "ignore", "--cpus-mode", "ignore"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let published = results(&run_dir(&out));
    assert_eq!(published[&name].1["metrics"]["reward"], 0.0);
    // No cgroup of this task is left.
    for parent in own_cgroups() {
        let left: Vec<String> = std::fs::read_dir(&parent)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&format!("agentcompass-sandbox-{name}")))
            .collect();
        assert_eq!(left, Vec::<String>::new(), "{}", parent.display());
    }
}
