//! Result reuse (`--reuse`): the reuse key, finding the source run, and importing its
//! finished tasks into the new run before the rest is scheduled.
//!
//! A task is reused when the source published it under the same reuse key with every attempt
//! complete; its directory is copied (artifacts verified against their manifest) and its
//! metrics counted. Interrupted tasks of the source with an evaluation checkpoint may resume
//! their evaluation instead of rerunning the agent ([`Imported::resumable`]).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use agentcompass_plugin_api::contracts::{
    IssueSeverity, RunRequest, RunRuntimeSpec, TASK_CONTENT_DIGEST_KEY,
};
use agentcompass_results::store::{
    count_published, find_reuse_source, published_task, running_tasks, PublishedTask,
};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::context::RequestContext;
use super::error::RunError;
use super::task_source::TaskSource;
use crate::issue_codes::class_of;
use crate::metrics::{complete_attempt_records, AttemptRecord};

/// The reuse key: benchmark id, benchmark params (except `sample_ids`, which selects tasks
/// but does not change them) and attempt plan, hashed. The task id is matched separately.
pub fn reuse_key(req: &RunRequest) -> String {
    let mut params = req.benchmark.params.clone();
    params.remove("sample_ids");
    let canonical = json!({
        "benchmark": req.benchmark.id,
        "params": params,
        "attempts": {"k": req.execution.attempts.k, "strategy": req.execution.attempts.strategy},
    });
    hex::encode(Sha256::digest(canonical.to_string().as_bytes()))
}

/// Threads copying reused tasks at once.
const IMPORT_WORKERS: usize = 2;

/// What a reuse import brought into the run.
pub(super) struct Imported {
    /// Ids of the imported tasks.
    pub(super) reused: HashSet<String>,
    /// Interrupted tasks of the source, by task directory name (evaluation resume).
    pub(super) resumable: HashMap<String, PathBuf>,
    /// The `reuse_loaded` progress payload.
    pub(super) summary: Value,
    /// Published tasks not reused because their content changed ([`CONTENT_CHANGED`]).
    pub(super) changed: u64,
}

/// The source run of `rc`'s reuse request: the named run, or the newest other run of the
/// namespace (`None`: nothing to reuse).
pub(super) fn source_run(
    rc: &RequestContext,
    results_dir: &Path,
    namespace: &[String],
) -> Result<Option<PathBuf>, RunError> {
    let named = &rc.request.runtime.reuse_run_id;
    find_reuse_source(
        results_dir,
        namespace,
        (!named.is_empty()).then_some(named.as_str()),
        Some(rc.store.run_dir()),
    )
    .map_err(RunError::from)
}

/// What the import workers found: why tasks were not reused (by reason), and the reused ids.
type ImportOutcome = (HashMap<&'static str, u64>, HashSet<String>);

/// One published task to import, with what the selected task is now.
struct Candidate {
    category: String,
    /// The selected task's content digest now (`None`: its benchmark reports none).
    digest: Option<String>,
    published: PublishedTask,
}

/// One import worker: imports the published tasks it is sent until the queue closes.
fn import_worker(
    rc: &RequestContext,
    receive: &std::sync::Mutex<std::sync::mpsc::Receiver<Candidate>>,
    outcome: &std::sync::Mutex<ImportOutcome>,
) {
    loop {
        let next = match receive.lock() {
            Ok(queue) => queue.recv(),
            Err(poisoned) => poisoned.into_inner().recv(),
        };
        let Ok(candidate) = next else {
            return;
        };
        let result = import_task(rc, &candidate);
        let published = candidate.published;
        let mut guard = match outcome.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        match result {
            Ok(()) => {
                guard.1.insert(published.task_id);
            }
            Err(why) => *guard.0.entry(why).or_default() += 1,
        }
    }
}

/// Imports every selected task `source` published under this run's reuse key, reading the
/// task stream `tasks` once (the tasks to run are read again from a fresh stream).
pub(super) fn import(
    rc: &RequestContext,
    tasks: &mut TaskSource,
    source: PathBuf,
) -> Result<Imported, RunError> {
    // Each selected task is looked up by its directory name (the layout derives it from the
    // id), so memory stays flat in the source's size; the listings are only counted. The
    // copies run on [`IMPORT_WORKERS`] threads fed through a short queue: most of an import
    // is the kernel creating inodes and walking paths, which two cores do side by side.
    let outcome: std::sync::Mutex<ImportOutcome> = std::sync::Mutex::default();
    let mut found = 0u64;
    let (send, receive) = std::sync::mpsc::sync_channel::<Candidate>(64);
    let receive = std::sync::Mutex::new(receive);
    let read: Result<(), RunError> = std::thread::scope(|scope| {
        // Owned here: dropped when reading ends (normally or on an error), which ends the
        // workers' loops.
        let send = send;
        for _ in 0..IMPORT_WORKERS {
            scope.spawn(|| import_worker(rc, &receive, &outcome));
        }
        while let Some(task) = tasks.next_task()? {
            let Some(published) = published_task(&source, &task.task_id) else {
                continue;
            };
            found += 1;
            let digest = task
                .metadata
                .get(TASK_CONTENT_DIGEST_KEY)
                .and_then(Value::as_str)
                .map(str::to_string);
            let candidate = Candidate {
                category: task.category,
                digest,
                published,
            };
            if send.send(candidate).is_err() {
                break;
            }
        }
        Ok(())
    });
    read?;
    let (mut not_reused, reused) = match outcome.into_inner() {
        Ok(outcome) => outcome,
        Err(poisoned) => poisoned.into_inner(),
    };
    let unselected = count_published(&source).saturating_sub(found);
    if unselected > 0 {
        not_reused.insert("not selected", unselected);
    }
    let resumable: HashMap<String, PathBuf> = if rc.request.runtime.checkpoint_resume != Some(false)
    {
        running_tasks(&source).into_iter().collect()
    } else {
        HashMap::new()
    };
    if let Err(e) = rc
        .store
        .import_resolved_plans(&source, &|id| reused.contains(id))
    {
        tracing::warn!("cannot copy the plans of reused tasks: {e}");
    }
    let summary = json!({
        "reused_tasks": reused.len(),
        "tasks_to_run": (tasks.total()).saturating_sub(reused.len()),
        "source": source,
        "not_reused": not_reused,
        "interrupted_tasks_with_checkpoints": resumable.len(),
    });
    Ok(Imported {
        changed: not_reused.get(CONTENT_CHANGED).copied().unwrap_or(0),
        reused,
        resumable,
        summary,
    })
}

/// Whether a published task is to be rerun rather than reused (`--rerun`,
/// `--rerun-invalid`): one of its attempts has an ERROR or FATAL issue of a named class or
/// code, or (with `rerun_invalid`) an unscored FATAL one.
fn rerun_requested(spec: &RunRuntimeSpec, records: &[AttemptRecord]) -> bool {
    if spec.rerun_invalid && records.iter().any(|r| r.outcome().fatal) {
        return true;
    }
    !spec.rerun.is_empty()
        && records.iter().flat_map(|r| &r.issues).any(|issue| {
            issue.severity >= IssueSeverity::Error
                && spec.rerun.iter().any(|wanted| {
                    *wanted == issue.code || wanted.as_str() == class_of(issue).as_str()
                })
        })
}

/// Why a task whose files changed since it was published is not reused.
pub const CONTENT_CHANGED: &str = "task content changed";

/// Imports one published task, or says why it is not reused.
fn import_task(rc: &RequestContext, candidate: &Candidate) -> Result<(), &'static str> {
    let Candidate {
        category,
        digest,
        published,
    } = candidate;
    if published.record.reuse_key != rc.reuse_key {
        return Err("different benchmark, params or attempt plan");
    }
    // A task changed upstream (another commit of its dataset, an edited directory) runs
    // again; a benchmark that reports no digest is compared by its params alone.
    if digest.is_some() && *digest != published.record.content_digest {
        return Err(CONTENT_CHANGED);
    }
    let Some(records) = complete_attempt_records(&published.dir, &published.record) else {
        return Err("incomplete attempts");
    };
    if rerun_requested(&rc.request.runtime, &records) {
        return Err("rerun requested");
    }
    match rc.store.import_published(published) {
        Ok(_) => {
            let outcomes: Vec<_> = records.iter().map(AttemptRecord::outcome).collect();
            rc.record_metrics(category, &outcomes);
            // A budget covers the whole run: what the reused tasks spent counts against it.
            rc.breaker.spend_imported(&outcomes);
            Ok(())
        }
        Err(e) => {
            tracing::warn!("cannot reuse task {}: {e}", published.task_id);
            Err("copy failed")
        }
    }
}
