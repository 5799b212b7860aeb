use std::sync::Mutex;

use agentcompass_plugin_api::contracts::{IssueSeverity, ProgressEvent as EventLineContract};
use serde_json::json;

use super::*;

/// The typed event of a (name, task, phase, status, payload) line, as the tests write them.
fn legacy<'a>(
    name: &str,
    task: Option<TaskRef<'a>>,
    phase: Option<&str>,
    status: Option<&str>,
    payload: Value,
) -> event::ProgressEvent<'a> {
    use event::{ProgressEvent as E, TaskOutcome, TaskPhase};
    let task_of = || task.expect("a task event needs a task");
    let outcome = |status: Option<&str>| match status {
        Some("failed") => TaskOutcome::Failed,
        Some("skipped") => TaskOutcome::Skipped,
        _ => TaskOutcome::Completed,
    };
    let phase_of = |name: &str| match name {
        "run_harness" => TaskPhase::RunHarness,
        "evaluate" => TaskPhase::Evaluate,
        "prepare_task" => TaskPhase::PrepareTask,
        "run_task" => TaskPhase::RunTask,
        "open_environment" => TaskPhase::OpenEnvironment,
        other => panic!("phase {other} not mapped in the tests"),
    };
    let index = |key: &str| payload.get(key).and_then(Value::as_u64).unwrap_or(0) as usize;
    match name {
        "run_started" => E::RunStarted {
            benchmark: "bench",
            harness: "harness",
            environment: "host_process",
            model: "model",
        },
        "tasks_loaded" => E::TasksLoaded {
            total: payload["total_tasks"].as_u64().unwrap_or(0),
        },
        "reuse_loaded" => E::ReuseLoaded(payload),
        "task_started" => E::TaskStarted {
            task: task_of(),
            index: index("index"),
            total: index("total"),
        },
        "attempt_started" => E::AttemptStarted(task_of()),
        "phase_changed" => E::PhaseChanged {
            task: task_of(),
            phase: phase_of(phase.expect("a phase")),
            detail: payload,
        },
        "attempt_finished" => E::AttemptFinished {
            task: task_of(),
            status: outcome(status),
        },
        "partial_saved" => E::PartialSaved(task_of()),
        "task_finished" => E::TaskFinished {
            task: task_of(),
            status: outcome(status),
            severity: match payload.get("severity").and_then(Value::as_str) {
                Some("fatal") => Some(IssueSeverity::Fatal),
                Some("error") => Some(IssueSeverity::Error),
                Some("warning") => Some(IssueSeverity::Warning),
                _ => None,
            },
            index: index("index"),
            total: index("total"),
        },
        "summary_started" => E::SummaryStarted,
        "run_finished" => E::RunFinished {
            status: serde_json::from_value(json!(status.unwrap_or("completed"))).unwrap(),
            error: None,
        },
        other => panic!("event {other} not mapped in the tests"),
    }
}

fn meta() -> ProgressMeta {
    ProgressMeta {
        run_id: "run-1".into(),
        benchmark: "bench".into(),
        harness: "harness".into(),
        environment: "host_process".into(),
        model: "model".into(),
        request_name: "req-a".into(),
        orchestration_id: "orch-1".into(),
        ..ProgressMeta::default()
    }
}

struct Paths {
    _dir: tempfile::TempDir,
    jsonl: PathBuf,
    snapshot: PathBuf,
}

fn paths() -> Paths {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("results").join("run-1");
    Paths {
        jsonl: run.join("progress.jsonl"),
        snapshot: run.join("progress.json"),
        _dir: dir,
    }
}

fn recorder(p: &Paths, terminal: Option<Arc<dyn TerminalSink>>) -> ProgressRecorder {
    ProgressRecorder::create(&p.jsonl, &p.snapshot, meta(), terminal).unwrap()
}

fn task(id: &str) -> TaskRef<'_> {
    TaskRef {
        task_id: id,
        category: "cat",
        attempt: None,
    }
}

fn attempt(id: &str, n: u32) -> TaskRef<'_> {
    TaskRef {
        attempt: Some(n),
        ..task(id)
    }
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

fn read_lines(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn start(r: &ProgressRecorder, id: &str) {
    r.emit(legacy(
        "task_started",
        Some(task(id)),
        None,
        None,
        json!({}),
    ));
}

/// The stream's `tasks_loaded`: `total` tasks.
fn loaded(r: &ProgressRecorder, total: usize) {
    r.emit(legacy(
        "tasks_loaded",
        None,
        None,
        None,
        json!({ "total_tasks": total }),
    ));
}

fn finish_task(r: &ProgressRecorder, id: &str, status: &str, severity: &str) {
    r.emit(legacy(
        "task_finished",
        Some(task(id)),
        None,
        Some(status),
        json!({"severity": severity}),
    ));
}

#[test]
fn jsonl_lines_parse_and_carry_fields() {
    let p = paths();
    let r = recorder(&p, None);
    r.emit(legacy(
        "run_started",
        None,
        None,
        None,
        json!({"benchmark": "bench", "model": "model"}),
    ));
    r.emit(legacy(
        "task_started",
        Some(task("t1")),
        None,
        None,
        json!({"index": 0, "total": 1}),
    ));
    r.emit(legacy(
        "phase_changed",
        Some(attempt("t1", 2)),
        Some("run_harness"),
        None,
        Value::Null,
    ));
    r.emit(legacy(
        "task_finished",
        Some(task("t1")),
        None,
        Some("completed"),
        json!({"severity": "none"}),
    ));
    // task_finished is flushed immediately.
    let lines = read_lines(&p.jsonl);
    assert_eq!(lines.len(), 4);
    r.finish();

    for line in &lines {
        assert_eq!(line["run_id"], "run-1");
        assert_eq!(line["request_name"], "req-a");
        assert_eq!(line["orchestration_id"], "orch-1");
        assert!(line["timestamp"].as_f64().unwrap() > 1.6e9);
        let event: EventLineContract = serde_json::from_value(line.clone()).unwrap();
        assert_eq!(event.run_id, "run-1");
        // The schema's record reads every line the recorder writes, back to the same JSON.
        let typed: agentcompass_schema::progress::EventLine<'_> =
            serde::Deserialize::deserialize(line).unwrap();
        assert_eq!(typed.event.as_str(), event.event);
        assert_eq!(&serde_json::to_value(&typed).unwrap(), line);
    }
    assert_eq!(lines[0]["event"], "run_started");
    assert_eq!(lines[0]["payload"]["benchmark"], "bench");
    // Every key of upstream's event is on every line, null when it does not apply.
    for key in [
        "task_id",
        "category",
        "attempt",
        "phase",
        "status",
        "request_key",
        "request_index",
    ] {
        assert!(lines[0].get(key).is_some(), "{key}: {}", lines[0]);
    }
    assert!(lines[0]["task_id"].is_null());
    let phase: EventLineContract = serde_json::from_value(lines[2].clone()).unwrap();
    assert_eq!(phase.event, "phase_changed");
    assert_eq!(phase.task_id.as_deref(), Some("t1"));
    assert_eq!(phase.category.as_deref(), Some("cat"));
    assert_eq!(phase.attempt, Some(2));
    assert_eq!(phase.phase.as_deref(), Some("run_harness"));
    assert_eq!(phase.payload, Value::Null);
    assert_eq!(lines[3]["status"], "completed");
    assert_eq!(lines[3]["payload"]["severity"], "none");
    let ts: Vec<f64> = lines
        .iter()
        .filter_map(|l| l["timestamp"].as_f64())
        .collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn snapshot_counters_after_a_sequence_of_events() {
    let p = paths();
    let r = recorder(&p, None);
    assert_eq!(r.snapshot()["status"], "created");
    r.emit(legacy("run_started", None, None, None, json!({})));
    loaded(&r, 6);
    r.emit(legacy(
        "reuse_loaded",
        None,
        None,
        None,
        json!({"reused_tasks": 2, "tasks_to_run": 4,
               "reused_severity_counts": {"warning": 1, "fatal": 1}}),
    ));
    let s = r.snapshot();
    assert_eq!(s["status"], "running");
    assert_eq!(
        (s["total_tasks"].as_u64(), s["pending_tasks"].as_u64()),
        (Some(6), Some(4))
    );
    assert_eq!(s["reused_tasks"], 2);
    assert_eq!(s["finished_tasks"], 2);

    for id in ["t1", "t2", "t3"] {
        start(&r, id);
        r.emit(legacy(
            "attempt_started",
            Some(attempt(id, 1)),
            None,
            None,
            json!({}),
        ));
    }
    r.emit(legacy(
        "phase_changed",
        Some(attempt("t1", 1)),
        Some("run_harness"),
        None,
        json!({}),
    ));
    r.emit(legacy(
        "phase_changed",
        Some(attempt("t2", 1)),
        Some("run_harness"),
        None,
        json!({}),
    ));
    r.emit(legacy(
        "phase_changed",
        Some(attempt("t3", 1)),
        Some("evaluate"),
        None,
        json!({}),
    ));
    let s = r.snapshot();
    assert_eq!(s["pending_tasks"], 1);
    assert_eq!(s["running_tasks"], 3);
    assert_eq!(s["attempts_started"], 3);
    assert_eq!(
        s["current_phase_counts"],
        json!({"run_harness": 2, "evaluate": 1})
    );
    assert_eq!(s["active_tasks"]["t1"]["phase"], "run_harness");
    assert_eq!(s["active_tasks"]["t1"]["attempt"], 1);
    assert_eq!(s["active_tasks"]["t1"]["category"], "cat");
    assert!(s["active_tasks"]["t1"]["updated_at"].as_f64().unwrap() > 1.6e9);

    r.emit(legacy(
        "phase_changed",
        Some(attempt("t2", 1)),
        Some("evaluate"),
        None,
        json!({}),
    ));
    r.emit(legacy(
        "attempt_finished",
        Some(attempt("t1", 1)),
        None,
        Some("completed"),
        json!({}),
    ));
    finish_task(&r, "t1", "completed", "none");
    finish_task(&r, "t2", "failed", "fatal");
    r.emit(legacy(
        "partial_saved",
        Some(task("t3")),
        None,
        None,
        json!({}),
    ));
    finish_task(&r, "t3", "completed", "error");
    // Finished without starting.
    finish_task(&r, "t4", "skipped", "warning");
    let s = r.snapshot();
    assert_eq!(s["current_phase_counts"], json!({}));
    assert_eq!(s["active_tasks"], json!({}));
    assert_eq!(s["running_tasks"], 0);
    assert_eq!(s["pending_tasks"], 0);
    assert_eq!(s["finished_tasks"], 6);
    assert_eq!(s["completed_tasks"], 3); // t1, t3 + 1 reused
    assert_eq!(s["failed_tasks"], 2); // t2 + 1 reused fatal
    assert_eq!(s["skipped_tasks"], 1);
    assert_eq!(s["error_tasks"], 1);
    assert_eq!(s["warning_tasks"], 2);
    assert_eq!(s["attempts_finished"], 1);
    assert_eq!(s["partials_saved"], 1);

    r.emit(legacy("summary_started", None, None, None, json!({})));
    assert_eq!(r.snapshot()["status"], "summarizing");
    r.emit(legacy(
        "run_finished",
        None,
        None,
        Some("failed"),
        json!({"error": null}),
    ));
    let s = r.snapshot();
    assert_eq!(s["status"], "failed");
    for key in [
        "run_id",
        "benchmark",
        "harness",
        "environment",
        "model",
        "request_name",
    ] {
        assert_eq!(s[key], serde_json::to_value(meta()).unwrap()[key], "{key}");
    }
    let elapsed = s["elapsed_seconds"].as_f64().unwrap();
    std::thread::sleep(Duration::from_millis(20));
    // Elapsed time is frozen once the run finished.
    assert_eq!(r.snapshot()["elapsed_seconds"].as_f64().unwrap(), elapsed);
    // run_finished writes the snapshot immediately.
    assert_eq!(read_json(&p.snapshot)["status"], "failed");
    let view = r.view();
    assert_eq!(
        (
            view.label.as_str(),
            view.total,
            view.finished,
            view.failed,
            view.reused
        ),
        ("req-a", 6, 6, 2, 2)
    );
}

#[test]
fn active_tasks_are_cleared_on_task_finished() {
    let p = paths();
    let r = recorder(&p, None);
    loaded(&r, 1000);
    for i in 0..1000 {
        let id = format!("t{i}");
        start(&r, &id);
        r.emit(legacy(
            "phase_changed",
            Some(task(&id)),
            Some("run_task"),
            None,
            json!({}),
        ));
        finish_task(&r, &id, "completed", "none");
        // Events after the task finished do not resurrect it.
        r.emit(legacy(
            "phase_changed",
            Some(task(&id)),
            Some("run_harness"),
            None,
            json!({}),
        ));
    }
    let s = r.snapshot();
    assert_eq!(s["active_tasks"], json!({}));
    assert_eq!(s["current_phase_counts"], json!({}));
    assert_eq!(s["finished_tasks"], 1000);
    // Re-starting an already active task is not double counted.
    start(&r, "x");
    start(&r, "x");
    assert_eq!(r.snapshot()["running_tasks"], 1);
}

#[test]
fn snapshot_file_is_written_at_create_and_after_finish() {
    let p = paths();
    let r = recorder(&p, None);
    let initial = read_json(&p.snapshot);
    assert_eq!(initial["status"], "created");
    assert_eq!(initial["run_id"], "run-1");
    loaded(&r, 2);
    start(&r, "a");
    r.finish();
    let s = read_json(&p.snapshot);
    assert_eq!(s["total_tasks"], 2);
    assert_eq!(s["running_tasks"], 1);
    // What the readers (the viewer) take of it, through the schema's record.
    let head: agentcompass_schema::progress::SnapshotHead =
        serde_json::from_value(s.clone()).unwrap();
    assert_eq!(head.total_tasks, Some(2));
    assert_eq!(head.running_tasks, Some(1));
    assert_eq!(head.finished_tasks, Some(0));
    assert_eq!(head.status.as_str(), s["status"]);
    assert_eq!(s["active_tasks"]["a"]["category"], "cat");
    assert_eq!(r.snapshot()["running_tasks"], s["running_tasks"]);
    // Finishing again is harmless.
    r.finish();
    assert_eq!(read_lines(&p.jsonl).len(), 2);
    // No stray temp files.
    let names: Vec<_> = fs::read_dir(p.snapshot.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn throttle_does_not_lose_the_final_state() {
    let p = paths();
    let r = recorder(&p, None);
    loaded(&r, 500);
    for i in 0..500 {
        let id = format!("t{i}");
        start(&r, &id);
        finish_task(&r, &id, "completed", "none");
    }
    r.finish();
    let s = read_json(&p.snapshot);
    assert_eq!(s["finished_tasks"], 500);
    assert_eq!(s["completed_tasks"], 500);
    assert_eq!(s["pending_tasks"], 0);
    assert_eq!(read_lines(&p.jsonl).len(), 1001);
}

#[test]
fn background_writer_persists_idle_state() {
    let p = paths();
    let r = recorder(&p, None);
    loaded(&r, 3);
    start(&r, "a");
    r.emit(legacy(
        "phase_changed",
        Some(task("a")),
        Some("run_harness"),
        None,
        json!({}),
    ));
    // No further events: the background writer catches up within a few ticks.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let s = read_json(&p.snapshot);
        if s["running_tasks"] == 1 {
            assert_eq!(s["current_phase_counts"]["run_harness"], 1);
            break;
        }
        assert!(Instant::now() < deadline, "snapshot never updated: {s}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The unflushed phase_changed line is flushed too.
    let deadline = Instant::now() + Duration::from_secs(5);
    while read_lines(&p.jsonl).len() < 3 {
        assert!(Instant::now() < deadline, "jsonl never flushed");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A sink recording what it receives.
#[derive(Default)]
struct Recording {
    updates: Mutex<Vec<ProgressSnapshotView>>,
    finishes: Mutex<Vec<ProgressSnapshotView>>,
}

impl TerminalSink for Recording {
    fn update(&self, snapshot: &ProgressSnapshotView) {
        self.updates.lock().unwrap().push(snapshot.clone());
    }
    fn finish(&self, snapshot: &ProgressSnapshotView) {
        self.finishes.lock().unwrap().push(snapshot.clone());
    }
}

#[test]
fn terminal_sink_gets_throttled_updates_and_one_finish() {
    let p = paths();
    let sink = Arc::new(Recording::default());
    let r = recorder(&p, Some(sink.clone()));
    loaded(&r, 100);
    for i in 0..100 {
        let id = format!("t{i}");
        start(&r, &id);
        finish_task(&r, &id, "completed", "none");
    }
    r.emit(legacy(
        "run_finished",
        None,
        None,
        Some("completed"),
        json!({}),
    ));
    r.finish();
    r.finish();
    let updates = sink.updates.lock().unwrap();
    assert!(updates.len() < 50, "not throttled: {}", updates.len());
    assert_eq!(updates[0].total, 100);
    assert_eq!(
        updates.last().unwrap().status,
        agentcompass_results::status::RunStatus::Completed
    );
    let finishes = sink.finishes.lock().unwrap();
    assert_eq!(finishes.len(), 1);
    // The elapsed time is the run's own (checked by the terminal tests).
    assert!(finishes[0].elapsed_seconds >= 0.0);
    assert_eq!(
        finishes[0],
        ProgressSnapshotView {
            label: "req-a".into(),
            elapsed_seconds: finishes[0].elapsed_seconds,
            total: 100,
            finished: 100,
            completed: 100,
            status: agentcompass_results::status::RunStatus::Completed,
            ..Default::default()
        }
    );
}

#[test]
fn drop_finishes_the_recording() {
    let p = paths();
    let sink = Arc::new(Recording::default());
    {
        let r = recorder(&p, Some(sink.clone()));
        loaded(&r, 1);
        start(&r, "a");
        r.emit(legacy(
            "attempt_started",
            Some(attempt("a", 1)),
            None,
            None,
            json!({}),
        ));
    }
    assert_eq!(read_json(&p.snapshot)["attempts_started"], 1);
    assert_eq!(read_lines(&p.jsonl).len(), 3);
    assert_eq!(sink.finishes.lock().unwrap().len(), 1);
}

#[test]
fn concurrent_emitters_keep_lines_intact() {
    let p = paths();
    let r = Arc::new(recorder(&p, Some(Arc::new(Recording::default()))));
    loaded(&r, 8000);
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let r = Arc::clone(&r);
            std::thread::spawn(move || {
                for i in 0..1000 {
                    let id = format!("t{t}-{i}");
                    start(&r, &id);
                    r.emit(legacy(
                        "phase_changed",
                        Some(task(&id)),
                        Some("run_task"),
                        None,
                        json!({"i": i}),
                    ));
                    finish_task(
                        &r,
                        &id,
                        if i % 10 == 0 { "failed" } else { "completed" },
                        "none",
                    );
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    r.finish();
    let s = read_json(&p.snapshot);
    assert_eq!(s["finished_tasks"], 8000);
    assert_eq!(s["failed_tasks"], 800);
    assert_eq!(s["running_tasks"], 0);
    assert_eq!(read_lines(&p.jsonl).len(), 1 + 8 * 3000);
}

#[test]
fn label_falls_back_to_benchmark_and_model() {
    let m = ProgressMeta {
        request_name: String::new(),
        ..meta()
    };
    assert_eq!(m.label(), "bench/model");
    assert_eq!(meta().label(), "req-a");
}

#[test]
fn create_fails_on_an_unwritable_path() {
    let p = paths();
    fs::create_dir_all(p.jsonl.parent().unwrap()).unwrap();
    // A directory where the JSONL file should be.
    fs::create_dir_all(&p.jsonl).unwrap();
    assert!(ProgressRecorder::create(&p.jsonl, &p.snapshot, meta(), None).is_err());
}

#[test]
fn recorded_names_parse_back() {
    for phase in TaskPhase::ALL {
        assert_eq!(TaskPhase::parse(phase.as_str()), Some(phase));
    }
    for outcome in [
        TaskOutcome::Completed,
        TaskOutcome::Failed,
        TaskOutcome::Skipped,
    ] {
        assert_eq!(TaskOutcome::parse(outcome.as_str()), Some(outcome));
    }
    for worst in [
        None,
        Some(IssueSeverity::Warning),
        Some(IssueSeverity::Error),
        Some(IssueSeverity::Fatal),
    ] {
        assert_eq!(parse_severity(severity_name(worst)), worst);
    }
}
