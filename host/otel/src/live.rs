//! Spans of a run being made: the host hands over each attempt once its record is written
//! and the run at its end; a background thread sends them. Nothing here blocks or fails the
//! run: a collector that cannot be reached is one warning for the whole run, after which this
//! run's spans are dropped (`export otel RUN_DIR` sends them once the collector is back; the
//! ids are the same).

use std::collections::BTreeMap;
use std::sync::mpsc::{channel, Receiver, Sender as Channel};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use agentcompass_schema::atif::Trajectory;
use agentcompass_schema::attempt::AttemptRecord;
use opentelemetry_sdk::trace::SpanData;
use serde_json::Value;

use crate::otlp::Sender;
use crate::spans::Spans;
use crate::tree::{push_attempt, push_run, push_task, AttemptInput, RunMeta, SpanOptions};
use crate::OtelError;

/// How long [`OtelExporter::finish`] waits for the spans still queued.
const FINISH_WAIT: Duration = Duration::from_secs(30);

/// `runtime.otel` as a configuration file or the flags (`--otel-endpoint`,
/// `--otel-content`) write it: every field optional, later layers win field by field. Set
/// (even `{}`, which takes the endpoint from the `OTEL_EXPORTER_OTLP_*` variables), it turns
/// on the export of a run's spans as it runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtelOverlay {
    /// The traces endpoint (a full URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Export contents too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<bool>,
}

impl OtelOverlay {
    /// `over`'s set fields replace these.
    pub fn apply(&mut self, over: &OtelOverlay) {
        if over.endpoint.is_some() {
            self.endpoint.clone_from(&over.endpoint);
        }
        if over.content.is_some() {
            self.content = over.content;
        }
    }

    /// The exporter's settings: the endpoint resolved ([`crate::resolve_endpoint`]); `None`
    /// when none is set anywhere.
    pub fn config(&self) -> Option<OtelConfig> {
        Some(OtelConfig {
            endpoint: crate::resolve_endpoint(self.endpoint.as_deref())?,
            content: self.content.unwrap_or(false),
        })
    }
}

/// A live run's exporter settings (`--otel-endpoint`, `runtime.otel`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OtelConfig {
    /// The traces endpoint (a full URL, see [`crate::resolve_endpoint`]).
    pub endpoint: String,
    /// Export contents too ([`SpanOptions::content`]).
    pub content: bool,
}

/// The tasks seen so far: first start, last end, attempts.
type TaskBounds = BTreeMap<String, (SystemTime, SystemTime, u64)>;

/// Sends a live run's spans from a background thread.
#[derive(Debug)]
pub struct OtelExporter {
    options: SpanOptions,
    tasks: Mutex<TaskBounds>,
    queue: Mutex<Option<Channel<Vec<SpanData>>>>,
    thread: Mutex<Option<(JoinHandle<()>, Receiver<()>)>>,
}

impl OtelExporter {
    /// An exporter to `config.endpoint` (an error only for an endpoint that is no URL).
    /// The exporter (and its runtime) lives on its own thread, so this may be called from
    /// async code.
    pub fn new(config: &OtelConfig) -> Result<OtelExporter, OtelError> {
        let (queue, batches) = channel::<Vec<SpanData>>();
        let (done, finished) = channel();
        let (ready, started) = channel();
        let endpoint = config.endpoint.clone();
        let thread = std::thread::Builder::new()
            .name("otel-export".into())
            .spawn(
                move || match Sender::new(&endpoint, Duration::from_secs(10)) {
                    Ok(sender) => {
                        let _ = ready.send(Ok(()));
                        send_all(&sender, &batches);
                        drop(sender);
                        let _ = done.send(());
                    }
                    Err(e) => {
                        let _ = ready.send(Err(e));
                    }
                },
            )
            .map_err(|e| OtelError::Setup(format!("{}: {e}", config.endpoint)))?;
        started
            .recv()
            .map_err(|e| OtelError::Setup(format!("{}: {e}", config.endpoint)))??;
        Ok(OtelExporter {
            options: SpanOptions {
                content: config.content,
            },
            tasks: Mutex::new(BTreeMap::new()),
            queue: Mutex::new(Some(queue)),
            thread: Mutex::new(Some((thread, finished))),
        })
    }

    /// Queues the spans of attempt `attempt` of `task_id` from its written record (`record`,
    /// the `result.json` value) and its ATIF trajectory. `run` must be the same at every call
    /// (it makes the trace id).
    pub fn attempt(
        &self,
        run: &RunMeta,
        task_id: &str,
        attempt: u32,
        record: &Value,
        trajectory: Option<&Trajectory>,
    ) {
        let Ok(record) = serde_json::from_value::<AttemptRecord>(record.clone()) else {
            return;
        };
        let trajectories: Vec<(Option<String>, Trajectory)> =
            trajectory.map(|t| (None, t.clone())).into_iter().collect();
        let mut spans = Spans::new(&run.seed());
        let input = AttemptInput {
            task_id,
            attempt,
            record: &record,
            trajectories: &trajectories,
            times: None,
        };
        let (start, end) = push_attempt(&mut spans, run, &input, self.options);
        if let Ok(mut tasks) = self.tasks.lock() {
            let entry = tasks.entry(task_id.to_string()).or_insert((start, end, 0));
            entry.0 = entry.0.min(start);
            entry.1 = entry.1.max(end);
            entry.2 += 1;
        }
        self.queue(spans.out);
    }

    /// Queues the tasks' and the run's spans, then waits (at most 30 s) for everything
    /// queued to be sent.
    pub fn finish(&self, run: &RunMeta) {
        let mut spans = Spans::new(&run.seed());
        let tasks = self.tasks.lock().map(|t| t.clone()).unwrap_or_default();
        for (task, (start, end, attempts)) in &tasks {
            push_task(&mut spans, task, *attempts, *start, *end);
        }
        let start = run
            .started_at
            .or(tasks.values().map(|t| t.0).min())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let end = run
            .finished_at
            .or(tasks.values().map(|t| t.1).max())
            .unwrap_or_else(SystemTime::now)
            .max(start);
        push_run(&mut spans, run, start, end);
        self.queue(spans.out);
        if let Ok(mut queue) = self.queue.lock() {
            queue.take();
        }
        let thread = self.thread.lock().ok().and_then(|mut t| t.take());
        if let Some((handle, finished)) = thread {
            if finished.recv_timeout(FINISH_WAIT).is_ok() {
                let _ = handle.join();
            }
        }
    }

    fn queue(&self, spans: Vec<SpanData>) {
        if let Ok(queue) = self.queue.lock() {
            if let Some(queue) = queue.as_ref() {
                let _ = queue.send(spans);
            }
        }
    }
}

/// Sends every batch until the queue closes; after the first failure (one warning) the rest
/// are dropped.
fn send_all(sender: &Sender, batches: &Receiver<Vec<SpanData>>) {
    let mut down = false;
    for batch in batches {
        if down {
            continue;
        }
        if let Err(e) = sender.send(batch) {
            down = true;
            tracing::warn!(
                "OpenTelemetry: {e}; this run's spans are not exported (`agentcompass-host export otel RUN_DIR` sends them later)"
            );
        }
    }
}
