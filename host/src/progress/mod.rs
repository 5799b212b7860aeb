//! Per-request progress recording: `progress.jsonl` (one JSON line per event), the
//! `progress.json` snapshot (counters and active tasks), and terminal display.
//!
//! [`ProgressRecorder::emit`] is called several times per task, from many tokio tasks, at high
//! rates. It serialises the event line into a reused thread-local buffer outside any lock,
//! appends it to a buffered file, updates counters, and occasionally forwards a small view to
//! the [`TerminalSink`]. The snapshot file is rewritten atomically by a background thread (at
//! most every 500 ms, only when something changed), synchronously on `run_finished` and in
//! [`ProgressRecorder::finish`]. The JSONL file is flushed at most every 200 ms, and always on
//! `tasks_loaded`, `task_finished` and `run_finished`. I/O failures are logged once and never
//! break the run.
//!
//! Counter semantics: `tasks_loaded {total_tasks}` sets the total; `reuse_loaded
//! {reused_tasks, tasks_to_run, reused_severity_counts}` sets the reused tasks, which count as
//! finished (completed, or failed for `fatal`); `task_started` moves a task from pending to
//! running (an active task); `task_finished` with status `completed|failed|skipped` and payload
//! `{severity}` moves it to finished and counts it by status and severity (`error`, `warning`);
//! `phase_changed` sets the active task's phase; `summary_started` → `summarizing`;
//! `run_finished` sets the terminal status (default `completed`).

mod event;
mod snapshot;
mod terminal;

use std::borrow::Cow;
use std::cell::RefCell;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;

use agentcompass_results::fsutil::write_atomic;
use agentcompass_schema::progress::EventLine;
use snapshot::SnapshotState;

pub use event::{parse_severity, severity_name, EventKind, ProgressEvent, TaskOutcome, TaskPhase};
pub use terminal::{
    plain_line, terminal_for, BarSink, PlainSink, ProgressMode, ProgressSnapshotView, TerminalSink,
};

/// How often the JSONL file is flushed at most (except on key events).
const JSONL_FLUSH_INTERVAL: Duration = Duration::from_millis(200);
/// How often `progress.json` is rewritten at most (except on `run_finished` / finish).
const SNAPSHOT_INTERVAL: Duration = Duration::from_millis(500);
/// How often a view is forwarded to the terminal sink at most (except on key events).
const TERMINAL_INTERVAL: Duration = Duration::from_millis(100);
/// Period of the background writer.
const TICK: Duration = Duration::from_millis(200);
/// File mode of `progress.json`.
const SNAPSHOT_MODE: u32 = 0o644;
/// Thread-local line buffers above this size are released after use.
const MAX_KEPT_LINE_BUFFER: usize = 64 * 1024;

/// Identity of the request run whose progress is recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ProgressMeta {
    /// Run id.
    pub run_id: String,
    /// Benchmark id.
    pub benchmark: String,
    /// Harness id.
    pub harness: String,
    /// Environment provider id.
    pub environment: String,
    /// Model id.
    pub model: String,
    /// Request name (orchestration `metadata.request_name`; may be empty).
    pub request_name: String,
    /// Orchestration id (may be empty).
    pub orchestration_id: String,
    /// The request's key in its orchestration (`<orchestration id>/<index>`; may be empty).
    #[serde(skip)]
    pub request_key: String,
    /// The request's position in its orchestration.
    #[serde(skip)]
    pub request_index: Option<usize>,
}

impl ProgressMeta {
    /// The label shown on the terminal: the request name, else `benchmark/model`.
    pub fn label(&self) -> String {
        if self.request_name.is_empty() {
            format!("{}/{}", self.benchmark, self.model)
        } else {
            self.request_name.clone()
        }
    }
}

/// The task an event is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskRef<'a> {
    /// Task id.
    pub task_id: &'a str,
    /// Task category.
    pub category: &'a str,
    /// Semantic attempt number, if the event concerns one attempt.
    pub attempt: Option<u32>,
}

thread_local! {
    /// Reused serialisation buffer for event lines.
    static LINE_BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn epoch_seconds() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn elapsed_since(last: Instant, now: Instant, interval: Duration) -> bool {
    now.saturating_duration_since(last) >= interval
}

/// Logs an I/O failure the first time it happens.
fn log_once(flag: &AtomicBool, what: &str, path: &Path, error: &dyn std::fmt::Display) {
    if !flag.swap(true, Ordering::Relaxed) {
        tracing::warn!(path = %path.display(), "progress: cannot write {what}: {error}");
    }
}

/// The buffered `progress.jsonl` writer.
struct Jsonl {
    out: BufWriter<File>,
    last_flush: Instant,
    unflushed: bool,
}

/// Counters plus throttling bookkeeping.
struct State {
    snap: SnapshotState,
    last_snapshot: Instant,
    last_forward: Option<Instant>,
    forwarded_seq: u64,
}

/// Everything shared between the recorder and its background writer.
struct Shared {
    meta: ProgressMeta,
    label: String,
    jsonl_path: PathBuf,
    snapshot_path: PathBuf,
    started: Instant,
    started_at: f64,
    jsonl: Mutex<Jsonl>,
    state: Mutex<State>,
    /// Serialises `progress.json` replacements.
    snapshot_file: Mutex<()>,
    /// `seq` of the snapshot last written.
    written_seq: AtomicU64,
    /// No background writer: throttled snapshots are written by `emit`.
    inline_snapshots: AtomicBool,
    terminal: Option<Arc<dyn TerminalSink>>,
    finished: AtomicBool,
    jsonl_error_logged: AtomicBool,
    snapshot_error_logged: AtomicBool,
}

impl Shared {
    fn elapsed(&self, now: Instant) -> f64 {
        now.saturating_duration_since(self.started).as_secs_f64()
    }

    /// Appends one serialised line (with its newline) and flushes when due.
    fn append(&self, line: &[u8], force_flush: bool, now: Instant) {
        let mut jsonl = lock(&self.jsonl);
        let mut result = jsonl.out.write_all(line);
        if result.is_ok() {
            if force_flush || elapsed_since(jsonl.last_flush, now, JSONL_FLUSH_INTERVAL) {
                result = jsonl.out.flush();
                jsonl.last_flush = now;
                jsonl.unflushed = false;
            } else {
                jsonl.unflushed = true;
            }
        }
        drop(jsonl);
        if let Err(error) = result {
            self.jsonl_failed(&error);
        }
    }

    /// Logs (once a run) that `progress.jsonl` could not be written.
    fn jsonl_failed(&self, error: &dyn std::fmt::Display) {
        log_once(
            &self.jsonl_error_logged,
            "progress.jsonl",
            &self.jsonl_path,
            error,
        );
    }

    /// Serialises `line` into `buf` and appends it.
    fn append_event(&self, buf: &mut Vec<u8>, line: &EventLine<'_>, force_flush: bool) {
        buf.clear();
        if let Err(error) = serde_json::to_writer(&mut *buf, line) {
            self.jsonl_failed(&error);
            return;
        }
        buf.push(b'\n');
        self.append(buf, force_flush, Instant::now());
        if buf.capacity() > MAX_KEPT_LINE_BUFFER {
            *buf = Vec::new();
        }
    }

    fn flush_jsonl(&self, only_if_due: bool) {
        let now = Instant::now();
        let mut jsonl = lock(&self.jsonl);
        if only_if_due
            && (!jsonl.unflushed || !elapsed_since(jsonl.last_flush, now, JSONL_FLUSH_INTERVAL))
        {
            return;
        }
        let result = jsonl.out.flush();
        jsonl.last_flush = now;
        jsonl.unflushed = false;
        drop(jsonl);
        if let Err(error) = result {
            self.jsonl_failed(&error);
        }
    }

    /// The snapshot document as pretty JSON.
    fn render(&self, snap: &SnapshotState, now: Instant) -> Option<Vec<u8>> {
        let document = snap.document(&self.meta, self.started_at, self.elapsed(now));
        match serde_json::to_vec_pretty(&document) {
            Ok(mut bytes) => {
                bytes.push(b'\n');
                Some(bytes)
            }
            Err(error) => {
                log_once(
                    &self.snapshot_error_logged,
                    "progress.json",
                    &self.snapshot_path,
                    &error,
                );
                None
            }
        }
    }

    /// Replaces `progress.json` unless a newer snapshot was written. Without `force`, gives up
    /// when another writer is busy (a later write covers it).
    fn store(&self, seq: u64, bytes: &[u8], force: bool) -> io::Result<()> {
        let _guard = if force {
            lock(&self.snapshot_file)
        } else {
            match self.snapshot_file.try_lock() {
                Ok(guard) => guard,
                Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
                Err(TryLockError::WouldBlock) => return Ok(()),
            }
        };
        let written = self.written_seq.load(Ordering::Acquire);
        if seq < written || (seq == written && !force) {
            return Ok(());
        }
        write_atomic(&self.snapshot_path, bytes, SNAPSHOT_MODE)?;
        self.written_seq.store(seq, Ordering::Release);
        Ok(())
    }

    fn store_logged(&self, seq: u64, bytes: &[u8], force: bool) {
        if let Err(error) = self.store(seq, bytes, force) {
            log_once(
                &self.snapshot_error_logged,
                "progress.json",
                &self.snapshot_path,
                &error,
            );
        }
    }

    /// Records that the terminal is shown the state as of `now`, and returns the view it
    /// shows.
    fn forward_view(&self, state: &mut State, now: Instant) -> ProgressSnapshotView {
        state.last_forward = Some(now);
        state.forwarded_seq = state.snap.seq;
        state.snap.view(&self.label, self.elapsed(now))
    }

    /// Outside the state lock: stores a taken snapshot (`force`: waiting for a write in
    /// progress instead of leaving it to that one) and shows a forwarded view.
    fn publish(
        &self,
        snapshot: Option<(u64, Vec<u8>)>,
        view: Option<ProgressSnapshotView>,
        force: bool,
    ) {
        if let Some((seq, bytes)) = snapshot {
            self.store_logged(seq, &bytes, force);
        }
        if let (Some(view), Some(terminal)) = (view, &self.terminal) {
            terminal.update(&view);
        }
    }

    /// Renders the current snapshot if `due` says so (given the state and `now`).
    fn take_snapshot(&self, state: &mut State, now: Instant, due: bool) -> Option<(u64, Vec<u8>)> {
        if !due {
            return None;
        }
        state.last_snapshot = now;
        let bytes = self.render(&state.snap, now)?;
        Some((state.snap.seq, bytes))
    }

    /// One period of the background writer: flush the JSONL file, rewrite the snapshot and
    /// forward the view when something changed.
    fn tick(&self) {
        self.flush_jsonl(true);
        let now = Instant::now();
        let (snapshot, view) = {
            let mut state = lock(&self.state);
            let changed = state.snap.seq > self.written_seq.load(Ordering::Acquire);
            let due = changed && elapsed_since(state.last_snapshot, now, SNAPSHOT_INTERVAL);
            let snapshot = self.take_snapshot(&mut state, now, due);
            // Every period, changed or not: the terminal's elapsed time, rate and ETA move on.
            let view = self
                .terminal
                .is_some()
                .then(|| self.forward_view(&mut state, now));
            (snapshot, view)
        };
        self.publish(snapshot, view, false);
    }
}

/// The background writer: ticks until stopped or the recorder is gone.
fn background_writer(shared: Weak<Shared>, stop: mpsc::Receiver<()>) {
    loop {
        match stop.recv_timeout(TICK) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
        }
        let Some(shared) = shared.upgrade() else {
            return;
        };
        if shared.finished.load(Ordering::Acquire) {
            return;
        }
        shared.tick();
    }
}

/// Records the progress of one request run (see the module docs).
pub struct ProgressRecorder {
    shared: Arc<Shared>,
    stop: Mutex<Option<mpsc::Sender<()>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for ProgressRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgressRecorder")
            .field("meta", &self.shared.meta)
            .field("jsonl_path", &self.shared.jsonl_path)
            .field("snapshot_path", &self.shared.snapshot_path)
            .finish_non_exhaustive()
    }
}

impl ProgressRecorder {
    /// Opens `jsonl_path` for appending (creating parent directories), writes the initial
    /// snapshot (status `created`) to `snapshot_path` and starts the background writer.
    pub fn create(
        jsonl_path: &Path,
        snapshot_path: &Path,
        meta: ProgressMeta,
        terminal: Option<Arc<dyn TerminalSink>>,
    ) -> io::Result<Self> {
        for path in [jsonl_path, snapshot_path] {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                fs::create_dir_all(dir)?;
            }
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(jsonl_path)?;
        let now = Instant::now();
        let started_at = epoch_seconds();
        let shared = Arc::new(Shared {
            label: meta.label(),
            meta,
            jsonl_path: jsonl_path.to_path_buf(),
            snapshot_path: snapshot_path.to_path_buf(),
            started: now,
            started_at,
            jsonl: Mutex::new(Jsonl {
                out: BufWriter::with_capacity(64 * 1024, file),
                last_flush: now,
                unflushed: false,
            }),
            state: Mutex::new(State {
                snap: SnapshotState::new(started_at),
                last_snapshot: now,
                last_forward: None,
                forwarded_seq: 0,
            }),
            snapshot_file: Mutex::new(()),
            written_seq: AtomicU64::new(0),
            inline_snapshots: AtomicBool::new(false),
            terminal,
            finished: AtomicBool::new(false),
            jsonl_error_logged: AtomicBool::new(false),
            snapshot_error_logged: AtomicBool::new(false),
        });
        let initial = {
            let state = lock(&shared.state);
            shared.render(&state.snap, now)
        };
        if let Some(bytes) = initial {
            shared.store(0, &bytes, true)?;
        }

        let (stop_tx, stop_rx) = mpsc::channel();
        let weak = Arc::downgrade(&shared);
        let writer = std::thread::Builder::new()
            .name("progress-writer".to_string())
            .spawn(move || background_writer(weak, stop_rx));
        let writer = match writer {
            Ok(handle) => Some(handle),
            Err(error) => {
                tracing::warn!("progress: no background writer ({error}); writing inline");
                shared.inline_snapshots.store(true, Ordering::Relaxed);
                None
            }
        };
        Ok(ProgressRecorder {
            shared,
            stop: Mutex::new(Some(stop_tx)),
            writer: Mutex::new(writer),
        })
    }

    /// The request identity.
    pub fn meta(&self) -> &ProgressMeta {
        &self.shared.meta
    }

    /// Records one event: appends it to `progress.jsonl`, updates the snapshot counters and
    /// forwards the view to the terminal sink when due.
    pub fn emit(&self, event: ProgressEvent<'_>) {
        let shared = &*self.shared;
        let timestamp = epoch_seconds();
        let meta = &shared.meta;
        let fields = event.fields();
        let line = EventLine {
            run_id: Cow::Borrowed(&meta.run_id),
            event: fields.kind,
            timestamp,
            task_id: fields.task.map(|t| Cow::Borrowed(t.task_id)),
            category: fields.task.map(|t| Cow::Borrowed(t.category)),
            attempt: fields.task.and_then(|t| t.attempt),
            phase: fields.phase,
            status: fields.status.map(Cow::Borrowed),
            payload: Cow::Borrowed(fields.payload.as_ref()),
            request_name: Cow::Borrowed(&meta.request_name),
            orchestration_id: Cow::Borrowed(&meta.orchestration_id),
            request_key: Cow::Borrowed(&meta.request_key),
            request_index: meta.request_index,
        };
        let force_flush = matches!(
            event,
            ProgressEvent::TasksLoaded { .. }
                | ProgressEvent::TaskFinished { .. }
                | ProgressEvent::RunFinished { .. }
        );
        LINE_BUFFER.with(|cell| match cell.try_borrow_mut() {
            Ok(mut buf) => shared.append_event(&mut buf, &line, force_flush),
            Err(_) => shared.append_event(&mut Vec::new(), &line, force_flush),
        });

        let run_finished = matches!(event, ProgressEvent::RunFinished { .. });
        let key_event = matches!(
            event,
            ProgressEvent::TasksLoaded { .. }
                | ProgressEvent::ImagesProgress { .. }
                | ProgressEvent::ReuseLoaded(_)
                | ProgressEvent::SummaryStarted
                | ProgressEvent::RunFinished { .. }
        );
        let now = Instant::now();
        let (snapshot, view) = {
            let mut state = lock(&shared.state);
            let elapsed = shared.elapsed(now);
            state.snap.apply(&event, timestamp, elapsed);
            let due = run_finished
                || (shared.inline_snapshots.load(Ordering::Relaxed)
                    && elapsed_since(state.last_snapshot, now, SNAPSHOT_INTERVAL));
            let snapshot = shared.take_snapshot(&mut state, now, due);
            let forward = shared.terminal.is_some()
                && (key_event
                    || state
                        .last_forward
                        .is_none_or(|last| elapsed_since(last, now, TERMINAL_INTERVAL)));
            let view = forward.then(|| shared.forward_view(&mut state, now));
            (snapshot, view)
        };
        shared.publish(snapshot, view, run_finished);
    }

    /// The current snapshot (the `progress.json` document).
    pub fn snapshot(&self) -> Value {
        let now = Instant::now();
        let state = lock(&self.shared.state);
        let document = state.snap.document(
            &self.shared.meta,
            self.shared.started_at,
            self.shared.elapsed(now),
        );
        serde_json::to_value(&document).unwrap_or(Value::Null)
    }

    /// Sets the headline so far (`correct 84.20%`) the terminal shows.
    pub fn set_score(&self, score: Option<String>) {
        lock(&self.shared.state).snap.score = score;
    }

    /// Sets what `progress.json` says of the live run's control (`socket`, `paused`,
    /// `task_concurrency`; `None` once it ended) and writes the snapshot at once: `ctl`
    /// finds the socket there.
    pub fn set_control(&self, control: Option<Value>) {
        let shared = &*self.shared;
        let now = Instant::now();
        let snapshot = {
            let mut state = lock(&shared.state);
            state.snap.control = control;
            state.snap.seq += 1;
            shared.take_snapshot(&mut state, now, true)
        };
        shared.publish(snapshot, None, true);
    }

    /// The current terminal view of this request.
    pub fn view(&self) -> ProgressSnapshotView {
        let elapsed = self.shared.elapsed(Instant::now());
        lock(&self.shared.state)
            .snap
            .view(&self.shared.label, elapsed)
    }

    /// Stops the background writer, flushes `progress.jsonl`, writes the final snapshot and
    /// (the first time) tells the terminal sink this request finished. Safe to call again.
    pub fn finish(&self) {
        let shared = &*self.shared;
        let first = !shared.finished.swap(true, Ordering::AcqRel);
        if first {
            if let Some(stop) = lock(&self.stop).take() {
                // An error means the writer already exited.
                let _ = stop.send(());
            }
            if let Some(handle) = lock(&self.writer).take() {
                if handle.join().is_err() {
                    tracing::warn!("progress: the background writer panicked");
                }
            }
        }
        shared.flush_jsonl(false);
        let now = Instant::now();
        let (snapshot, view) = {
            let mut state = lock(&shared.state);
            // A frozen snapshot written already (at `run_finished`) is not written again.
            let due = !state.snap.is_frozen()
                || state.snap.seq > shared.written_seq.load(Ordering::Acquire);
            let snapshot = shared.take_snapshot(&mut state, now, due);
            (
                snapshot,
                state.snap.view(&shared.label, shared.elapsed(now)),
            )
        };
        if let Some((seq, bytes)) = snapshot {
            shared.store_logged(seq, &bytes, true);
        }
        if first {
            if let Some(terminal) = &shared.terminal {
                terminal.finish(&view);
            }
        }
    }
}

/// Finishes the recording if [`ProgressRecorder::finish`] was not called.
impl Drop for ProgressRecorder {
    fn drop(&mut self) {
        if !self.shared.finished.load(Ordering::Acquire) {
            self.finish();
        }
    }
}

#[cfg(test)]
mod tests;
