use std::collections::HashSet;
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use super::*;

fn ns(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|p| p.to_string()).collect()
}

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn info(run_id: &str, started_at: &str) -> RunInfo {
    RunInfo::new(run_id, started_at, json!({"benchmark": {"id": "b"}}))
}

#[test]
fn store_is_shareable() {
    fn check<T: Send + Sync>() {}
    check::<RunStore>();
    check::<TaskWriter>();
}

#[test]
fn create_generates_ids_and_moves_on_collision() {
    let root = tempfile::tempdir().unwrap();
    let namespace = ns(&["exp", "m_b_h"]);
    let now = at(1_700_000_000);
    let first = RunStore::create_at(root.path(), &namespace, None, now).unwrap();
    assert_eq!(first.run_id(), "20231114_221320");
    assert_eq!(first.namespace_dir(), root.path().join("exp").join("m_b_h"));
    assert_eq!(
        first.run_dir(),
        first.namespace_dir().join("20231114_221320")
    );
    assert!(first.run_dir().join("details/running").is_dir());
    assert!(first.env_resources_dir().is_dir());
    assert_eq!(
        first.progress_jsonl_path(),
        first.run_dir().join("progress.jsonl")
    );
    assert_eq!(
        first.progress_json_path(),
        first.run_dir().join("progress.json")
    );
    assert_eq!(first.run_log_path(), first.run_dir().join("run.log"));

    let second = RunStore::create_at(root.path(), &namespace, None, now).unwrap();
    assert_eq!(second.run_id(), "20231114_221321");
}

#[test]
fn create_gives_up_after_the_collision_window() {
    let root = tempfile::tempdir().unwrap();
    let namespace = ns(&["n"]);
    for offset in 0..=60 {
        fs::create_dir_all(root.path().join("n").join(new_run_id(at(100 + offset)))).unwrap();
    }
    let err = RunStore::create_at(root.path(), &namespace, None, at(100)).unwrap_err();
    assert!(matches!(err, StoreError::NoFreeRunId { .. }), "{err}");
    assert!(err.to_string().contains("19700101_000140"), "{err}");
}

#[test]
fn explicit_run_ids() {
    let root = tempfile::tempdir().unwrap();
    let namespace = ns(&["n"]);
    let store = RunStore::create(root.path(), &namespace, Some("my run")).unwrap();
    assert_eq!(store.run_id(), "my_run");
    let err = RunStore::create(root.path(), &namespace, Some("my run")).unwrap_err();
    let expected = format!(
        "run directory {} already exists; choose a different --run-id or use --reuse",
        root.path().join("n/my_run").display()
    );
    assert_eq!(err.to_string(), expected);
    for bad in ["..", ".", ""] {
        let err = RunStore::create(root.path(), &namespace, Some(bad)).unwrap_err();
        assert!(matches!(err, StoreError::InvalidName { .. }), "{err}");
    }
    let err = RunStore::create(root.path(), &ns(&[".."]), None).unwrap_err();
    assert!(
        err.to_string().starts_with("invalid namespace part \"..\""),
        "{err}"
    );
    assert!(!err.to_string().contains('\n'));
}

#[test]
fn open_existing_requires_run_info() {
    let root = tempfile::tempdir().unwrap();
    let store = RunStore::create(root.path(), &ns(&["n"]), Some("r1")).unwrap();
    let err = RunStore::open_existing(store.run_dir()).unwrap_err();
    assert!(matches!(err, StoreError::NotARunDir { .. }), "{err}");
    store
        .write_run_info(&info("r1", "2026-01-01T00:00:00Z"))
        .unwrap();
    let opened = RunStore::open_existing(store.run_dir()).unwrap();
    assert_eq!(opened.run_id(), "r1");
    assert_eq!(opened.namespace_dir(), store.namespace_dir());
    assert_eq!(
        opened.read_run_info().unwrap(),
        info("r1", "2026-01-01T00:00:00Z")
    );
}

#[test]
fn params_metrics_summary() {
    let root = tempfile::tempdir().unwrap();
    let store = RunStore::create(root.path(), &ns(&["n"]), Some("r")).unwrap();
    store
        .write_params(&json!({"b": 1, "a": {"d": 2, "c": 3}}))
        .unwrap();
    store.write_metrics(&json!({"score": 0.5})).unwrap();
    store.write_summary("# Summary\n").unwrap();
    let params = fs::read_to_string(store.run_dir().join("params.json")).unwrap();
    assert!(params.contains("\n  \"a\": {"), "pretty: {params}");
    assert_eq!(read_json(&store.metrics_path()), json!({"score": 0.5}));
    assert_eq!(
        fs::read_to_string(store.run_dir().join("summary.md")).unwrap(),
        "# Summary\n"
    );
    let leftovers: Vec<String> = names(store.run_dir())
        .into_iter()
        .filter(|n| n.contains("tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn begin_write_publish() {
    let root = tempfile::tempdir().unwrap();
    let store = RunStore::create(root.path(), &ns(&["n"]), Some("r")).unwrap();
    let writer = store.begin_task("suite/task 1").unwrap();
    let name = task_dir_name("suite/task 1");
    assert_eq!(
        writer.dir(),
        store.details_dir().join("running").join(&name)
    );
    assert_eq!(writer.dir_name(), name);
    assert!(writer.dir().is_dir());
    assert!(
        !writer.attempt_dir(1).exists(),
        "attempt dirs are created on demand"
    );

    let result = writer
        .write_attempt_result(1, &json!({"status": "completed", "metrics": {"a": 1}}))
        .unwrap();
    assert_eq!(result, writer.attempt_dir(1).join("result.json"));
    assert!(
        !fs::read_to_string(&result).unwrap().contains('\n'),
        "compact"
    );
    assert_eq!(writer.read_checkpoint(1), None);
    writer
        .write_checkpoint(1, &json!({"evaluation": {"x": 1}}))
        .unwrap();
    assert_eq!(
        writer.read_checkpoint(1),
        Some(json!({"evaluation": {"x": 1}}))
    );
    writer.ensure_attempt_dir(2).unwrap();
    fs::write(writer.attempt_dir(2).join("checkpoint.json"), b"{").unwrap();
    assert_eq!(writer.read_checkpoint(2), None);
    let retry = writer
        .write_retry(
            1,
            2,
            "run/x",
            &json!({"schema_version": "agentcompass.retry.v1"}),
        )
        .unwrap();
    assert_eq!(
        retry,
        writer
            .attempt_dir(1)
            .join("retries")
            .join(format!("{name}.attempt1.retry2.run_x.json"))
    );
    fs::create_dir_all(writer.attempt_dir(1).join("artifacts/logs")).unwrap();
    fs::write(writer.attempt_dir(1).join("artifacts/logs/a.txt"), b"log").unwrap();

    let task_json = json!({"task_id": "suite/task 1", "attempts": {"1": "attempt-1"}});
    let running = writer.dir().to_path_buf();
    let published = writer.publish(&task_json, TaskState::Error).unwrap();
    assert_eq!(published, store.details_dir().join("error").join(&name));
    assert!(!running.exists());
    assert!(names(&store.details_dir().join("running")).is_empty());
    assert_eq!(read_json(&published.join("task.json")), task_json);
    assert_eq!(
        fs::read(published.join("attempt-1/artifacts/logs/a.txt")).unwrap(),
        b"log"
    );
    let tasks: Vec<PublishedTask> = published_tasks(store.run_dir()).collect();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].task_id, "suite/task 1");
    assert_eq!(tasks[0].state, TaskState::Error);
    assert!(attempts_complete(&tasks[0]));
}

#[test]
fn begin_task_discards_a_stale_running_dir() {
    let root = tempfile::tempdir().unwrap();
    let store = RunStore::create(root.path(), &ns(&["n"]), Some("r")).unwrap();
    let first = store.begin_task("t").unwrap();
    first.write_attempt_result(1, &json!({})).unwrap();
    drop(first);
    let again = store.begin_task("t").unwrap();
    assert!(names(again.dir()).is_empty());
    assert_eq!(running_tasks(store.run_dir()).len(), 1);
    assert_eq!(running_tasks(store.run_dir())[0].0, task_dir_name("t"));
}

#[test]
fn publish_replaces_stale_copies() {
    let root = tempfile::tempdir().unwrap();
    let store = RunStore::create(root.path(), &ns(&["n"]), Some("r")).unwrap();
    let name = task_dir_name("t");
    for state in ["normal", "fatal"] {
        let stale = store.details_dir().join(state).join(&name);
        fs::create_dir_all(stale.join("attempt-9")).unwrap();
        fs::write(stale.join("task.json"), b"{\"task_id\": \"t\"}").unwrap();
    }
    let writer = store.begin_task("t").unwrap();
    writer
        .write_attempt_result(1, &json!({"status": "ok"}))
        .unwrap();
    let dest = writer
        .publish(
            &json!({"task_id": "t", "attempts": {"1": "attempt-1"}}),
            TaskState::Normal,
        )
        .unwrap();
    assert_eq!(names(&dest), ["attempt-1", "task.json"]);
    assert!(!store.details_dir().join("fatal").join(&name).exists());
    let hidden: Vec<String> = names(&store.details_dir())
        .into_iter()
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "{hidden:?}");
    assert_eq!(published_tasks(store.run_dir()).count(), 1);
}

#[test]
fn run_info_without_and_with_plans() {
    let root = tempfile::tempdir().unwrap();
    let store = RunStore::create(root.path(), &ns(&["n"]), Some("r")).unwrap();
    let mut run_info = info("r", "2026-11-30T01:02:03Z");
    run_info.orchestration = Some(json!({"id": "o", "key": "k", "name": "nightly"}));
    store.write_run_info(&run_info).unwrap();
    let written = read_json(&store.run_info_path());
    assert_eq!(written["schema_version"], RUN_INFO_SCHEMA);
    assert_eq!(written["status"], "running");
    assert!(written.get("resolved_execution_plans").is_none());
    assert!(written.get("finished_at").is_none());

    store
        .append_resolved_plans("a", &json!({"1": {"v": "a-old"}}))
        .unwrap();
    store
        .append_resolved_plans("b", &json!({"attempts": {"1": {"v": "b"}}}))
        .unwrap();
    store
        .append_resolved_plans("a", &json!({"1": {"v": "a-new"}, "2": {"v": "a2"}}))
        .unwrap();
    // A crash while appending leaves a truncated last line.
    let mut log = fs::OpenOptions::new()
        .append(true)
        .open(store.run_dir().join("resolved_plans.jsonl"))
        .unwrap();
    log.write_all(b"{\"task_id\": \"c\", \"attempts\": {\"1\": {\"v\"")
        .unwrap();
    drop(log);

    run_info.status = crate::status::RunStatus::Completed;
    run_info.finished_at = Some("2026-11-30T02:00:00Z".into());
    store.finalize_run_info(&run_info).unwrap();
    let text = fs::read_to_string(store.run_info_path()).unwrap();
    let written: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        written["resolved_execution_plans"],
        json!({
            "a": {"attempts": {"1": {"v": "a-new"}, "2": {"v": "a2"}}},
            "b": {"attempts": {"1": {"v": "b"}}},
        })
    );
    assert_eq!(written["status"], "completed");
    assert_eq!(written["finished_at"], "2026-11-30T02:00:00Z");
    // Top-level keys are written sorted.
    let top: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("  \"") && !l.starts_with("   "))
        .map(|l| l.trim_start().split('"').nth(1).unwrap())
        .collect();
    let mut sorted = top.clone();
    sorted.sort();
    assert_eq!(top, sorted);
    assert!(top.contains(&"resolved_execution_plans"));
    // Reading run_info back ignores the plans.
    assert_eq!(read_run_info(store.run_dir()).unwrap(), run_info);
}

#[test]
fn finalize_without_plans_omits_the_key() {
    let root = tempfile::tempdir().unwrap();
    let store = RunStore::create(root.path(), &ns(&["n"]), Some("r")).unwrap();
    store
        .finalize_run_info(&info("r", "2026-01-01T00:00:00Z"))
        .unwrap();
    assert!(read_json(&store.run_info_path())
        .get("resolved_execution_plans")
        .is_none());
}

#[test]
fn concurrent_appends_stay_whole_lines() {
    let root = tempfile::tempdir().unwrap();
    let store = Arc::new(RunStore::create(root.path(), &ns(&["n"]), Some("r")).unwrap());
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                for i in 0..50 {
                    let plan = json!({"1": {"pad": "x".repeat(1000), "i": i}});
                    store
                        .append_resolved_plans(&format!("t{t}-{i}"), &plan)
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    store
        .finalize_run_info(&info("r", "2026-01-01T00:00:00Z"))
        .unwrap();
    let written = read_json(&store.run_info_path());
    assert_eq!(
        written["resolved_execution_plans"]
            .as_object()
            .unwrap()
            .len(),
        400
    );
}

#[test]
fn import_resolved_plans_from_a_source_run() {
    let root = tempfile::tempdir().unwrap();
    let source = RunStore::create(root.path(), &ns(&["n"]), Some("src")).unwrap();
    source
        .append_resolved_plans("a", &json!({"1": {"v": "a"}}))
        .unwrap();
    source
        .append_resolved_plans("b", &json!({"1": {"v": "b"}}))
        .unwrap();
    let wanted = |id: &str| id == "a";

    // Not finalized: the plans come from the source's log.
    let target = RunStore::create(root.path(), &ns(&["n"]), Some("t1")).unwrap();
    source
        .write_run_info(&info("src", "2026-01-01T00:00:00Z"))
        .unwrap();
    assert_eq!(
        target
            .import_resolved_plans(source.run_dir(), &wanted)
            .unwrap(),
        1
    );
    target
        .finalize_run_info(&info("t1", "2026-01-02T00:00:00Z"))
        .unwrap();
    assert_eq!(
        read_json(&target.run_info_path())["resolved_execution_plans"],
        json!({"a": {"attempts": {"1": {"v": "a"}}}})
    );

    // Finalized: streamed out of the source's run_info.json.
    source
        .finalize_run_info(&info("src", "2026-01-01T00:00:00Z"))
        .unwrap();
    fs::remove_file(source.run_dir().join("resolved_plans.jsonl")).unwrap();
    let target = RunStore::create(root.path(), &ns(&["n"]), Some("t2")).unwrap();
    assert_eq!(
        target
            .import_resolved_plans(source.run_dir(), &wanted)
            .unwrap(),
        1
    );
    target
        .append_resolved_plans("a", &json!({"1": {"v": "rerun"}}))
        .unwrap();
    target
        .finalize_run_info(&info("t2", "2026-01-02T00:00:00Z"))
        .unwrap();
    assert_eq!(
        read_json(&target.run_info_path())["resolved_execution_plans"],
        json!({"a": {"attempts": {"1": {"v": "rerun"}}}})
    );
}

fn make_run(root: &Path, id: &str, started_at: Option<&str>) -> PathBuf {
    let store = RunStore::create(root, &ns(&["n"]), Some(id)).unwrap();
    if let Some(started_at) = started_at {
        store.write_run_info(&info(id, started_at)).unwrap();
    }
    store.run_dir().to_path_buf()
}

#[test]
fn find_reuse_source_ranks_by_started_at() {
    let root = tempfile::tempdir().unwrap();
    let namespace = ns(&["n"]);
    assert_eq!(
        find_reuse_source(root.path(), &namespace, None, None).unwrap(),
        None
    );
    // Names sort the other way round from start times; +08:00 is earlier than it looks.
    let latest = make_run(root.path(), "a", Some("2026-01-02T00:00:00Z"));
    make_run(root.path(), "b", Some("2026-01-02T07:00:00+08:00"));
    make_run(root.path(), "c", Some("2026-01-01T00:00:00Z"));
    make_run(root.path(), "d", None); // no run_info.json
    let broken = make_run(root.path(), "e", None);
    fs::write(broken.join("run_info.json"), b"{\"started_at\": ").unwrap();

    assert_eq!(
        find_reuse_source(root.path(), &namespace, None, None).unwrap(),
        Some(latest.clone())
    );
    assert_eq!(
        find_reuse_source(root.path(), &namespace, None, Some(&latest)).unwrap(),
        Some(root.path().join("n/b"))
    );
    assert_eq!(
        find_reuse_source(root.path(), &namespace, Some("c"), None).unwrap(),
        Some(root.path().join("n/c"))
    );
    for missing in ["zzz", "d"] {
        let err = find_reuse_source(root.path(), &namespace, Some(missing), None).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "reuse run {missing} not found under {}",
                root.path().join("n").display()
            )
        );
    }
    let err = find_reuse_source(root.path(), &namespace, Some("a"), Some(&latest)).unwrap_err();
    assert!(matches!(err, StoreError::ReuseSelf { .. }), "{err}");
}

#[test]
fn a_run_killed_while_importing_is_never_a_reuse_source() {
    let root = tempfile::tempdir().unwrap();
    let namespace = ns(&["n"]);
    let complete = make_run(root.path(), "a", Some("2026-01-01T00:00:00Z"));
    // b imported a completely; c was killed while importing b; d while importing c.
    let chain = [("b", &complete), ("c", &root.path().join("n/b"))];
    for (i, (id, from)) in chain.iter().enumerate() {
        let store = RunStore::create(root.path(), &namespace, Some(id)).unwrap();
        let mut run = info(id, &format!("2026-01-0{}T00:00:00Z", i + 2));
        run.reused_from = Some(json!({"run_id": "x", "path": from}));
        run.reuse_import = Some(ReuseImport::Complete);
        store.write_run_info(&run).unwrap();
    }
    let killed = |id: &str, from: &Path, day: u32| {
        let store = RunStore::create(root.path(), &namespace, Some(id)).unwrap();
        let mut run = info(id, &format!("2026-01-{day:02}T00:00:00Z"));
        run.reused_from = Some(json!({"run_id": "x", "path": from}));
        run.reuse_import = Some(ReuseImport::Pending);
        store.write_run_info(&run).unwrap();
        store.run_dir().to_path_buf()
    };
    let c = root.path().join("n/c");
    let d = killed("d", &c, 10);
    let e = killed("e", &d, 11);
    // The latest complete run is the source; the newer, half-imported ones are skipped.
    assert_eq!(
        find_reuse_source(root.path(), &namespace, None, None).unwrap(),
        Some(c.clone())
    );
    // Named, a half-imported run leads back through the chain to a complete one.
    assert_eq!(
        find_reuse_source(root.path(), &namespace, Some("e"), None).unwrap(),
        Some(c.clone())
    );
    assert_eq!(
        find_reuse_source(root.path(), &namespace, Some("b"), None).unwrap(),
        Some(root.path().join("n/b"))
    );
    // A pending run whose source is gone is all there is.
    fs::remove_dir_all(&c).unwrap();
    fs::remove_dir_all(&d).unwrap();
    assert_eq!(
        find_reuse_source(root.path(), &namespace, Some("e"), None).unwrap(),
        Some(e)
    );
}

fn published_source(root: &Path) -> (RunStore, PublishedTask) {
    let source = RunStore::create(root, &ns(&["n"]), Some("src")).unwrap();
    let writer = source.begin_task("task/1").unwrap();
    writer
        .write_attempt_result(1, &json!({"status": "completed"}))
        .unwrap();
    writer
        .write_attempt_result(2, &json!({"status": "completed"}))
        .unwrap();
    let artifacts = writer.attempt_dir(1).join("artifacts/bin");
    fs::create_dir_all(&artifacts).unwrap();
    fs::write(artifacts.join("run.sh"), b"#!/bin/sh\n").unwrap();
    fs::set_permissions(artifacts.join("run.sh"), fs::Permissions::from_mode(0o750)).unwrap();
    std::os::unix::fs::symlink("run.sh", artifacts.join("link")).unwrap();
    let task_json = json!({
        "schema_version": "agentcompass.task.v3",
        "task_id": "task/1",
        "attempts": {"1": "attempt-1", "2": "attempt-2"},
    });
    writer.publish(&task_json, TaskState::Fatal).unwrap();
    let task = published_tasks(source.run_dir()).next().unwrap();
    (source, task)
}

#[test]
fn import_published_copies_the_tree() {
    let root = tempfile::tempdir().unwrap();
    let (_source, task) = published_source(root.path());
    let target = RunStore::create(root.path(), &ns(&["n"]), Some("dst")).unwrap();
    let dest = target.import_published(&task).unwrap();
    assert_eq!(
        dest,
        target
            .details_dir()
            .join("fatal")
            .join(task_dir_name("task/1"))
    );
    assert_eq!(names(&dest), ["attempt-1", "attempt-2", "task.json"]);
    let script = dest.join("attempt-1/artifacts/bin/run.sh");
    assert_eq!(fs::read(&script).unwrap(), b"#!/bin/sh\n");
    assert_eq!(
        fs::metadata(&script).unwrap().permissions().mode() & 0o777,
        0o750
    );
    let link = dest.join("attempt-1/artifacts/bin/link");
    assert_eq!(fs::read_link(&link).unwrap(), Path::new("run.sh"));
    // The host's records are hard links of the source's (replaced only by rename)...
    use std::os::unix::fs::MetadataExt;
    let inode = |p: &Path| fs::metadata(p).unwrap().ino();
    assert_eq!(
        inode(&dest.join("task.json")),
        inode(&task.dir.join("task.json"))
    );
    // ... an artifact is a copy, not a hard link.
    fs::write(&script, b"changed").unwrap();
    assert_eq!(
        fs::read(task.dir.join("attempt-1/artifacts/bin/run.sh")).unwrap(),
        b"#!/bin/sh\n"
    );

    let imported: Vec<PublishedTask> = published_tasks(target.run_dir()).collect();
    assert_eq!(imported.len(), 1);
    assert_eq!(imported[0].record, task.record);
    assert!(attempts_complete(&imported[0]));
    // Importing again replaces the copy.
    target.import_published(&task).unwrap();
    assert_eq!(published_tasks(target.run_dir()).count(), 1);
    // A run cannot import its own tasks.
    assert!(matches!(
        target.import_published(&imported[0]),
        Err(StoreError::ReuseSelf { .. })
    ));
}

#[test]
fn import_published_is_all_or_nothing() {
    let root = tempfile::tempdir().unwrap();
    let (_source, task) = published_source(root.path());
    let target = RunStore::create(root.path(), &ns(&["n"]), Some("dst")).unwrap();
    let mut copied = 0;
    let mut fail_late = |path: &Path| {
        copied += 1;
        if copied == 3 {
            Err(std::io::Error::other(format!(
                "injected at {}",
                path.display()
            )))
        } else {
            Ok(())
        }
    };
    let err = published::import_published(&target, &task, &mut fail_late).unwrap_err();
    assert!(err.to_string().contains("injected"), "{err}");
    assert!(
        !target.details_dir().join("fatal").exists()
            || names(&target.details_dir().join("fatal")).is_empty()
    );
    assert_eq!(names(&target.details_dir()), ["running"]);
    assert_eq!(published_tasks(target.run_dir()).count(), 0);
}

#[test]
fn attempts_complete_checks_every_result() {
    let root = tempfile::tempdir().unwrap();
    let (_source, mut task) = published_source(root.path());
    assert!(attempts_complete(&task));
    fs::write(task.dir.join("attempt-2/result.json"), b"{\"status\": ").unwrap();
    assert!(!attempts_complete(&task));
    fs::remove_file(task.dir.join("attempt-2/result.json")).unwrap();
    assert!(!attempts_complete(&task));
    let attempts = |entries: &[(&str, &str)]| {
        entries
            .iter()
            .map(|(n, d)| (n.to_string(), d.to_string()))
            .collect()
    };
    task.record.attempts = attempts(&[("1", "attempt-1")]);
    assert!(attempts_complete(&task));
    task.record.attempts = attempts(&[("1", "../attempt-1")]);
    assert!(!attempts_complete(&task));
    task.record.attempts = attempts(&[("one", "attempt-1")]);
    assert!(!attempts_complete(&task));
    task.record.attempts = attempts(&[]);
    assert!(!attempts_complete(&task));
}

#[test]
fn published_tasks_skip_unparseable_dirs() {
    let root = tempfile::tempdir().unwrap();
    let (source, _task) = published_source(root.path());
    let details = source.details_dir();
    fs::create_dir_all(details.join("normal/no-task-json")).unwrap();
    fs::create_dir_all(details.join("error/bad-task-json")).unwrap();
    fs::write(details.join("error/bad-task-json/task.json"), b"{").unwrap();
    fs::create_dir_all(details.join("error/no-id")).unwrap();
    fs::write(details.join("error/no-id/task.json"), b"{}").unwrap();
    fs::create_dir_all(details.join("normal/.import.x")).unwrap();
    fs::write(
        details.join("normal/.import.x/task.json"),
        b"{\"task_id\": \"x\"}",
    )
    .unwrap();
    let ids: HashSet<String> = published_tasks(source.run_dir())
        .map(|t| t.task_id)
        .collect();
    assert_eq!(ids, HashSet::from(["task/1".to_string()]));
    assert!(running_tasks(source.run_dir()).is_empty());
    assert!(running_tasks(&root.path().join("missing")).is_empty());
    assert_eq!(published_tasks(&root.path().join("missing")).count(), 0);
}

#[test]
fn errors_are_one_line_and_name_the_path() {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("file");
    fs::write(&file, b"").unwrap();
    let err = RunStore::create(&file, &ns(&["n"]), None).unwrap_err();
    let text = err.to_string();
    assert!(text.contains(&file.display().to_string()), "{text}");
    assert!(!text.contains('\n'));
}

/// A published task whose attempt 1 holds `artifacts/out/{a.txt,b.bin}` and a manifest.
fn published_with_manifest(root: &Path) -> (RunStore, PublishedTask) {
    use crate::artifacts::{
        directory_digest, mode_string, sha256_file, write_manifest, ArtifactManifest, EntryKind,
        EntryStatus, FileRecord, ManifestEntry, MANIFEST_FILE,
    };
    use agentcompass_plugin_api::contracts::ArtifactSpec;
    let source = RunStore::create(root, &ns(&["n"]), Some("src")).unwrap();
    let writer = source.begin_task("task/1").unwrap();
    writer
        .write_attempt_result(1, &json!({"status": "completed"}))
        .unwrap();
    let out = writer.attempt_dir(1).join("artifacts/out");
    fs::create_dir_all(&out).unwrap();
    fs::write(out.join("a.txt"), b"hello").unwrap();
    fs::write(out.join("b.bin"), [0u8, 1, 2, 3]).unwrap();
    let mut spec = ArtifactSpec::new("/app/out");
    spec.destination = Some("out".into());
    let files: Vec<FileRecord> = ["a.txt", "b.bin"]
        .into_iter()
        .map(|name| {
            let path = out.join(name);
            FileRecord {
                path: name.into(),
                bytes: fs::metadata(&path).unwrap().len(),
                mode: mode_string(&fs::metadata(&path).unwrap()),
                sha256: sha256_file(&path).unwrap(),
            }
        })
        .collect();
    let entry = ManifestEntry {
        kind: Some(EntryKind::Directory),
        bytes: files.iter().map(|f| f.bytes).sum(),
        entries: files.len() as u64,
        sha256: Some(directory_digest(&files, &[])),
        files,
        ..ManifestEntry::empty(&spec, EntryStatus::Collected)
    };
    write_manifest(
        &writer.attempt_dir(1).join(MANIFEST_FILE),
        &ArtifactManifest::new(vec![entry]),
    )
    .unwrap();
    let task_json = json!({"task_id": "task/1", "attempts": {"1": "attempt-1"}});
    writer.publish(&task_json, TaskState::Normal).unwrap();
    let task = published_tasks(source.run_dir()).next().unwrap();
    (source, task)
}

#[test]
fn import_published_verifies_artifacts_against_the_manifest() {
    let root = tempfile::tempdir().unwrap();
    let (_source, task) = published_with_manifest(root.path());
    let target = RunStore::create(root.path(), &ns(&["n"]), Some("dst")).unwrap();
    let dest = target.import_published(&task).unwrap();
    assert_eq!(
        names(&dest.join("attempt-1")),
        ["artifacts", "artifacts.manifest.json", "result.json"]
    );
    assert_eq!(
        fs::read(dest.join("attempt-1/artifacts/out/a.txt")).unwrap(),
        b"hello"
    );
}

#[test]
fn import_published_rejects_a_corrupt_or_missing_artifact() {
    let root = tempfile::tempdir().unwrap();
    let (_source, task) = published_with_manifest(root.path());
    let target = RunStore::create(root.path(), &ns(&["n"]), Some("dst")).unwrap();
    let corrupt = task.dir.join("attempt-1/artifacts/out/b.bin");
    // One flipped byte, same size.
    fs::write(&corrupt, [0u8, 1, 2, 4]).unwrap();
    let err = target.import_published(&task).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(&corrupt.display().to_string()) && text.contains("sha256"),
        "{text}"
    );
    assert!(!text.contains(".import."), "names the source file: {text}");
    assert!(!text.contains('\n'));
    assert_eq!(published_tasks(target.run_dir()).count(), 0);
    assert_eq!(names(&target.details_dir()), ["running"], "staging removed");
    // A missing file.
    fs::write(&corrupt, [0u8, 1, 2, 3]).unwrap();
    target.import_published(&task).unwrap();
    let other = RunStore::create(root.path(), &ns(&["n"]), Some("dst2")).unwrap();
    fs::remove_file(task.dir.join("attempt-1/artifacts/out/a.txt")).unwrap();
    let err = other.import_published(&task).unwrap_err();
    assert!(
        err.to_string().contains("a.txt") && err.to_string().contains("missing"),
        "{err}"
    );
    assert_eq!(published_tasks(other.run_dir()).count(), 0);
    // A manifest that cannot be read is a rejection too.
    fs::write(task.dir.join("attempt-1/artifacts.manifest.json"), b"{").unwrap();
    assert!(other.import_published(&task).is_err());
}

#[test]
fn line_set_holds_line_numbers_across_words() {
    let mut set = super::plans::LineSet::default();
    for line in [0, 63, 64, 1000] {
        set.insert(line);
    }
    let held: Vec<usize> = (0..1100).filter(|line| set.contains(*line)).collect();
    assert_eq!(held, [0, 63, 64, 1000]);
}

#[test]
fn a_retried_run_is_archived_under_retries_and_the_next_one_starts_empty() {
    let root = tempfile::tempdir().unwrap();
    let store = RunStore::create(root.path(), &ns(&["n"]), Some("r")).unwrap();
    let writer = store.begin_task("t").unwrap();
    let attempt = writer.ensure_attempt_dir(1).unwrap();
    assert_eq!(
        writer.archive_for_retry(1, 1, &["artifacts"]).unwrap(),
        None,
        "nothing to archive"
    );
    assert!(!attempt.join("retries").exists());
    writer.write_checkpoint(1, &json!({"run": 1})).unwrap();
    fs::create_dir_all(attempt.join("artifacts/out")).unwrap();
    fs::write(attempt.join("artifacts/out/a.txt"), "first run").unwrap();
    let archived = writer
        .archive_for_retry(1, 1, &["artifacts", "artifacts.manifest.json"])
        .unwrap();
    assert_eq!(archived.as_deref(), Some("retries/retry1"));
    assert_eq!(writer.read_checkpoint(1), None);
    assert!(!attempt.join("artifacts").exists());
    let kept = attempt.join("retries/retry1");
    assert_eq!(read_json(&kept.join("checkpoint.json")), json!({"run": 1}));
    assert_eq!(
        fs::read_to_string(kept.join("artifacts/out/a.txt")).unwrap(),
        "first run"
    );
}

#[test]
fn fenced_copies_of_one_task_publish_exactly_once() {
    let root = tempfile::tempdir().unwrap();
    let store = Arc::new(RunStore::create(root.path(), &ns(&["n"]), Some("r")).unwrap());
    let copies = 8;
    let barrier = Arc::new(std::sync::Barrier::new(copies));
    let handles: Vec<_> = (0..copies)
        .map(|copy| {
            let store = store.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let token = format!("job{copy}-0");
                let writer = store.begin_task_fenced("t", &token).unwrap();
                writer
                    .write_attempt_result(1, &json!({"copy": copy}))
                    .unwrap();
                // Half of the copies end in another state: still one publication.
                let state = if copy % 2 == 0 {
                    TaskState::Normal
                } else {
                    TaskState::Error
                };
                barrier.wait();
                (
                    token,
                    writer.publish_fenced(&json!({"task_id": "t"}), state),
                )
            })
        })
        .collect();
    let outcomes: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let winners: Vec<&String> = outcomes
        .iter()
        .filter(|(_, o)| matches!(o, Ok(FencedPublish::Published(_))))
        .map(|(t, _)| t)
        .collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    for (_, outcome) in &outcomes {
        match outcome {
            Ok(FencedPublish::Duplicate { holder }) => assert_eq!(holder, winners[0]),
            Ok(FencedPublish::Published(_)) => {}
            Err(e) => panic!("{e}"),
        }
    }
    let details = store.details_dir();
    let name = task_dir_name("t");
    let published: Vec<PathBuf> = TaskState::ALL
        .iter()
        .map(|s| details.join(s.as_str()).join(&name))
        .filter(|p| p.exists())
        .collect();
    assert_eq!(published.len(), 1, "{published:?}");
    let copy: u64 = winners[0][3..winners[0].len() - 2].parse().unwrap();
    assert_eq!(
        read_json(&published[0].join("attempt-1/result.json"))["copy"],
        copy
    );
    // Every loser's staging directory is gone; the claim names the winner.
    assert_eq!(names(&details.join("running")), Vec::<String>::new());
    assert_eq!(
        claim::claim_holder(&details, &name).unwrap().as_deref(),
        Some(winners[0].as_str())
    );
}

#[test]
fn a_fenced_copy_never_replaces_a_published_task() {
    let root = tempfile::tempdir().unwrap();
    let store = RunStore::create(root.path(), &ns(&["n"]), Some("r")).unwrap();
    let first = store.begin_task_fenced("t", "a-1").unwrap();
    first
        .write_attempt_result(1, &json!({"copy": "a"}))
        .unwrap();
    let published = match first
        .publish_fenced(&json!({"task_id": "t"}), TaskState::Normal)
        .unwrap()
    {
        FencedPublish::Published(path) => path,
        other => panic!("{other:?}"),
    };
    // The same token again (a retried publish) wins its own claim but replaces nothing.
    let again = store.begin_task_fenced("t", "a-1").unwrap();
    assert!(matches!(
        again.publish_fenced(&json!({"task_id": "t"}), TaskState::Fatal),
        Err(StoreError::AlreadyPublished { .. })
    ));
    // A released claim (a coordinator's mistake) still cannot overwrite the published copy.
    claim::release_claim(&store.details_dir(), &task_dir_name("t")).unwrap();
    let late = store.begin_task_fenced("t", "b-1").unwrap();
    late.write_attempt_result(1, &json!({"copy": "b"})).unwrap();
    assert!(matches!(
        late.publish_fenced(&json!({"task_id": "t"}), TaskState::Normal),
        Err(StoreError::AlreadyPublished { .. })
    ));
    assert_eq!(
        read_json(&published.join("attempt-1/result.json"))["copy"],
        "a"
    );
    // Tokens must be directory-safe.
    assert!(matches!(
        store.begin_task_fenced("t", "../x"),
        Err(StoreError::InvalidToken { .. })
    ));
}

#[test]
fn a_settled_claim_fences_out_a_holder_that_is_still_running() {
    let root = tempfile::tempdir().unwrap();
    let store = RunStore::create(root.path(), &ns(&["n"]), Some("r")).unwrap();
    let details = store.details_dir();
    let name = task_dir_name("t");
    assert_eq!(
        claim::settle_claim(&details, "running", &name).unwrap(),
        claim::Settled::Unclaimed
    );
    // The holder (job 7, first run) claimed, then its node was lost before the rename; the
    // coordinator settles the claim while the holder is in fact still alive.
    let zombie = store.begin_task_fenced("t", "7-0").unwrap();
    zombie
        .write_attempt_result(1, &json!({"copy": "zombie"}))
        .unwrap();
    assert_eq!(
        claim::claim(&details, &name, "7-0").unwrap(),
        claim::Claim::Won
    );
    // Interrupted copies with a checkpoint are found under their task directory name.
    assert_eq!(running_tasks(store.run_dir())[0].0, name);
    assert_eq!(
        claim::settle_claim(&details, "running", &name).unwrap(),
        claim::Settled::Released {
            holder: "7-0".into()
        }
    );
    assert_eq!(claim::claim_holder(&details, &name).unwrap(), None);
    // The requeued copy claims and publishes; the zombie's late publish fails.
    let requeued = store.begin_task_fenced("t", "7-1").unwrap();
    requeued
        .write_attempt_result(1, &json!({"copy": "requeued"}))
        .unwrap();
    assert!(matches!(
        requeued
            .publish_fenced(&json!({"task_id": "t"}), TaskState::Normal)
            .unwrap(),
        FencedPublish::Published(_)
    ));
    assert!(zombie
        .publish_fenced(&json!({"task_id": "t"}), TaskState::Error)
        .is_err());
    let published = details.join("normal").join(&name);
    assert_eq!(
        read_json(&published.join("attempt-1/result.json"))["copy"],
        "requeued"
    );
    assert!(!details.join("error").join(&name).exists());
    assert_eq!(
        claim::settle_claim(&details, "running", &name).unwrap(),
        claim::Settled::Published
    );
}
