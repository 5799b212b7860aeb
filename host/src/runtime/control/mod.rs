//! Live control of a running process (`ctl`): the requests it runs register here (each
//! with its `LiveTasks`, `runtime/live`), and a
//! control socket only the owner can use (`server`) lets `ctl` read their state, change the
//! task concurrency, pause and resume, and cancel tasks. Every action is recorded: a
//! `control` event in each request's `progress.jsonl` and `run_info.json`
//! `provenance.control`, so a result's history says it was paused or re-limited.

mod server;

/// The wire records (`agentcompass_schema::control`, shared with the viewer).
pub use agentcompass_schema::control as protocol;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::SystemTime;

use serde_json::{json, Value};

use super::context::RequestContext;
use super::limits::Limits;
use crate::progress::ProgressEvent;
use protocol::{ControlAction, ControlAnswer, ControlRequest};

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The live control of this process's requests.
pub struct RunControl {
    limits: Arc<Limits>,
    /// Whether tasks are scheduled here (the local executor); `cancel` needs it.
    local: bool,
    requests: Mutex<Vec<Weak<RequestContext>>>,
    /// The socket, while it listens.
    socket: Mutex<Option<server::ControlSocket>>,
}

impl RunControl {
    /// Control over `limits`; `local`: the tasks are scheduled in this process.
    pub fn new(limits: Arc<Limits>, local: bool) -> Arc<RunControl> {
        Arc::new(RunControl {
            limits,
            local,
            requests: Mutex::new(Vec::new()),
            socket: Mutex::new(None),
        })
    }

    /// Starts listening on a control socket in a private (0700) directory; a run that
    /// cannot listen runs on without control (a warning says so).
    pub fn listen(self: &Arc<Self>) {
        match server::ControlSocket::bind(Arc::downgrade(self)) {
            Ok(socket) => *lock(&self.socket) = Some(socket),
            Err(e) => tracing::warn!("no control socket (`ctl` cannot steer this run): {e}"),
        }
    }

    /// The socket's path, while it listens.
    pub fn socket_path(&self) -> Option<PathBuf> {
        lock(&self.socket).as_ref().map(|s| s.path().to_path_buf())
    }

    /// Registers a started request: `ctl RUN_DIR` finds it, its `progress.json` names the
    /// socket.
    pub fn register(&self, rc: &Arc<RequestContext>) {
        lock(&self.requests).push(Arc::downgrade(rc));
        rc.progress.set_control(self.describe());
    }

    /// What `progress.json` says of the control: `None` without a socket.
    fn describe(&self) -> Option<Value> {
        let socket = self.socket_path()?;
        Some(json!({
            "socket": socket,
            "paused": self.limits.pause_gate().is_paused(),
            "task_concurrency": self.limits.task_concurrency(),
        }))
    }

    fn live_requests(&self) -> Vec<Arc<RequestContext>> {
        let mut requests = lock(&self.requests);
        requests.retain(|r| r.strong_count() > 0);
        requests.iter().filter_map(Weak::upgrade).collect()
    }

    /// The running request whose results directory is `run_dir`.
    fn request(&self, run_dir: &Path) -> Option<Arc<RequestContext>> {
        let wanted = std::fs::canonicalize(run_dir).ok()?;
        self.live_requests()
            .into_iter()
            .find(|rc| std::fs::canonicalize(rc.store.run_dir()).is_ok_and(|dir| dir == wanted))
    }

    /// Answers one request from the user `uid` (process `pid`).
    fn handle(&self, request: ControlRequest, uid: u32, pid: Option<i32>) -> ControlAnswer {
        let Some(rc) = self.request(Path::new(&request.run_dir)) else {
            return ControlAnswer::refused(format!(
                "{}: not a request of this running process",
                request.run_dir
            ));
        };
        let detail = match &request.action {
            ControlAction::Status => return ControlAnswer::done(self.status(&rc)),
            ControlAction::Concurrency { n } if *n == 0 => {
                return ControlAnswer::refused("concurrency: expected at least 1, found 0")
            }
            ControlAction::Concurrency { n } => {
                let was = self.limits.task_concurrency();
                self.limits.set_task_concurrency(*n);
                json!({"task_concurrency": n, "was": was})
            }
            ControlAction::Pause => json!({"changed": self.limits.pause_gate().pause()}),
            ControlAction::Resume => json!({"changed": self.limits.pause_gate().resume()}),
            ControlAction::Cancel { .. } if !self.local => {
                return ControlAnswer::refused(
                    "cancel: tasks run as Slurm jobs here; cancel those with `scancel`",
                )
            }
            ControlAction::Cancel { tasks } => {
                let (running, pending): (Vec<&String>, Vec<&String>) =
                    tasks.iter().partition(|task| rc.live.cancel(task));
                json!({"cancelled": running, "skipped_when_reached": pending})
            }
        };
        self.record(&request.action, &detail, uid, pid);
        ControlAnswer::done(detail)
    }

    /// Records an action taken: in every request's progress and in the provenance list.
    fn record(&self, action: &ControlAction, detail: &Value, uid: u32, pid: Option<i32>) {
        let mut entry = json!({
            "action": action.name(),
            "uid": uid,
            "pid": pid,
            "at": agentcompass_results::time::rfc3339(SystemTime::now()),
        });
        if let (Some(entry), Some(detail)) = (entry.as_object_mut(), detail.as_object()) {
            entry.extend(detail.clone());
        }
        if let ControlAction::Cancel { tasks } = action {
            entry["tasks"] = json!(tasks);
        }
        tracing::info!("control: {entry}");
        let described = self.describe();
        for rc in self.live_requests() {
            rc.live.record(entry.clone());
            rc.emit(ProgressEvent::Control(entry.clone()));
            rc.progress.set_control(described.clone());
        }
    }

    /// `status`: the request's counts and running tasks, the process's limits.
    fn status(&self, rc: &RequestContext) -> Value {
        let snapshot = rc.progress.snapshot();
        let now = SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let mut running: Vec<Value> = snapshot["active_tasks"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(id, task)| {
                let started = task["started_at"].as_f64().unwrap_or(now);
                json!({
                    "task_id": id,
                    "phase": task["phase"],
                    "attempt": task["attempt"],
                    "age_seconds": (now - started).max(0.0),
                })
            })
            .collect();
        running.sort_by(|a, b| {
            b["age_seconds"]
                .as_f64()
                .partial_cmp(&a["age_seconds"].as_f64())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        let count = |key: &str| snapshot[key].clone();
        json!({
            "run_dir": rc.store.run_dir(),
            "run_id": rc.store.run_id(),
            "status": snapshot["status"],
            "paused": self.limits.pause_gate().is_paused(),
            "paused_seconds": self.limits.pause_gate().paused_total().as_secs_f64(),
            "task_concurrency": self.limits.task_concurrency(),
            "attempts_running": self.limits.attempts_running(),
            "counts": {
                "total": count("total_tasks"),
                "pending": count("pending_tasks"),
                "running": count("running_tasks"),
                "finished": count("finished_tasks"),
                "completed": count("completed_tasks"),
                "failed": count("failed_tasks"),
                "skipped": count("skipped_tasks"),
            },
            "running": running,
            "model_endpoints": snapshot.get("model_endpoints").cloned().unwrap_or(Value::Null),
            "model_limit": rc.model.is_configured().then(|| {
                let mut limit = serde_json::to_value(rc.model.limit()).unwrap_or(Value::Null);
                limit["endpoint"] = json!(rc.model.url());
                limit
            }),
        })
    }
}
