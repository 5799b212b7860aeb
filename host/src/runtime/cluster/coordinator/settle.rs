//! Settling the tasks of a job that ended (counted, resubmitted or published `job_lost`), and
//! cancelling every job of a cancelled run.

use std::collections::HashSet;
use std::time::Instant;

use agentcompass_cluster::JobState;
use agentcompass_plugin_api::contracts::{ExecutionIssue, IssuePhase, RunResult, TaskSpec};
use agentcompass_results::records::{attempt_payload, task_payload};
use agentcompass_results::store::{claim, TaskState};
use agentcompass_schema::progress::EventLine;
use serde_json::{json, Map};

use super::{Coordinator, Job, Pending, CANCEL_WAIT, POLL};
use crate::issue_codes as codes;
use crate::runtime::cluster::events::Tail;

impl Coordinator<'_> {
    /// Settles an ended job: its last events, then each task it did not publish — published
    /// after all (its event lost) → counted; else its claim settled and the task resubmitted
    /// (`resubmit`) or, past `max_resubmits`, published FATAL `job_lost`.
    pub(super) fn settle(&mut self, mut job: Job, resubmit: bool) {
        let events: Vec<EventLine<'static>> =
            job.tails.iter_mut().flat_map(Tail::read_new).collect();
        self.jobs.push(job);
        let j = self.jobs.len() - 1;
        for event in events {
            self.forward(j, event);
        }
        let job = self.jobs.swap_remove(j);
        let state = job
            .state
            .as_ref()
            .map_or("gone from the queue".to_string(), |s| s.to_string());
        let details = self.rc.store.details_dir();
        let mut all_published = true;
        let runs = job.tails.len() as u32;
        for mut pending in job.tasks {
            match claim::settle_claim(&details, "running", &pending.name) {
                Ok(claim::Settled::Published) => {
                    self.count_settled(pending);
                    continue;
                }
                Ok(claim::Settled::Released { holder }) => {
                    tracing::warn!(task_id = %pending.unit.task.task_id, holder, "the job ended between claiming and publishing; claim released");
                }
                Ok(claim::Settled::Unclaimed) => {}
                Err(e) => {
                    tracing::error!("cannot settle task {}: {e}", pending.unit.task.task_id);
                    self.scheduled.store_failed = true;
                    continue;
                }
            }
            all_published = false;
            if !resubmit {
                continue;
            }
            pending.lost += 1;
            if pending.lost > self.options.max_resubmits {
                self.publish_lost(pending, job.id, &state);
            } else {
                tracing::warn!(task_id = %pending.unit.task.task_id, job_id = job.id, state, "the job ended without publishing the task; resubmitting it");
                self.resubmit.push_back(pending);
            }
        }
        if all_published {
            self.remove_job_files(job.id, job.seq, runs);
        }
    }

    /// Removes what a job that published all its tasks leaves that nothing reads again: its
    /// unit and its runs' events (already in the run's `progress.jsonl`) and snapshots. Its
    /// script, output and logs stay. A job that lost tasks keeps everything, for inspection.
    pub(super) fn remove_job_files(&self, id: u64, seq: u64, runs: u32) {
        let job = id.to_string();
        let mut files = vec![self.dir.unit(seq)];
        for restart in 0..runs.max(1) {
            files.push(self.dir.events(&job, restart));
            files.push(self.dir.snapshot(&job, restart));
        }
        for file in files {
            match std::fs::remove_file(&file) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => tracing::debug!("cannot remove {}: {e}", file.display()),
            }
        }
    }

    /// Publishes a task every job of which was lost: FATAL `job_lost` (from the coordinator,
    /// fenced like any copy).
    pub(super) fn publish_lost(&mut self, pending: Pending, job_id: u64, state: &str) {
        let rc = self.rc;
        let task: &TaskSpec = &pending.unit.task;
        let issue: ExecutionIssue = codes::JOB_LOST.fatal(
            IssuePhase::Run,
            format!(
                "{} Slurm jobs took the task and ended without publishing it (the last, job {job_id}: {state}; its output: {})",
                pending.lost,
                self.dir.root().join("logs").display()
            ),
        );
        let mut result = RunResult::new(task.task_id.clone());
        result.category = task.category.clone();
        result.push_issue(issue);
        let attempts = rc.resolved.execution.attempts;
        let published = (|| {
            let writer = rc.store.begin_task_fenced(&task.task_id, "coordinator")?;
            writer.write_attempt_result(1, &attempt_payload(&result, 0))?;
            let mut retries = Map::new();
            retries.insert("1".into(), json!(0));
            let payload = task_payload(task, &[1], &attempts, &rc.reuse_key, &retries);
            writer.publish_fenced(&payload, TaskState::Fatal)
        })();
        match published {
            Ok(_) => self.count_settled(pending),
            Err(e) => {
                tracing::error!("cannot publish task {}: {e}", task.task_id);
                self.scheduled.store_failed = true;
            }
        }
    }

    /// Cancels every job in flight (`scancel`) and waits until Slurm shows none active,
    /// counting what they published meanwhile.
    pub(super) async fn cancel_all(&mut self) {
        let ids: Vec<u64> = self.jobs.iter().map(|j| j.id).collect();
        if ids.is_empty() {
            return;
        }
        tracing::info!(jobs = ids.len(), "cancelling the run's Slurm jobs");
        if let Err(e) = self.slurm.cancel(&ids) {
            tracing::error!("cannot cancel the run's jobs: {e}");
        }
        let deadline = Instant::now() + self.rc.cleanup_grace + CANCEL_WAIT;
        while !self.jobs.is_empty() && Instant::now() < deadline {
            tokio::time::sleep(POLL).await;
            self.read_events();
            let Ok(listed) = self.slurm.jobs(&self.prefix) else {
                continue;
            };
            let active: HashSet<u64> = listed
                .into_iter()
                .filter(|j| j.state.is_active() || j.state == JobState::Completing)
                .map(|j| j.id)
                .collect();
            let mut i = 0;
            while i < self.jobs.len() {
                if active.contains(&self.jobs[i].id) {
                    i += 1;
                } else {
                    let job = self.jobs.swap_remove(i);
                    self.settle(job, false);
                }
            }
        }
        for job in std::mem::take(&mut self.jobs) {
            tracing::warn!(job_id = job.id, "still active after cancellation");
            self.settle(job, false);
        }
    }
}
