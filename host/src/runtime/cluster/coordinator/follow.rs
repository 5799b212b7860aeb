//! Following the jobs: their events into the run's progress, and what they publish into the
//! run's metrics and issues.

use std::collections::HashMap;
use std::time::Instant;

use agentcompass_plugin_api::contracts::RunResult;
use agentcompass_results::store::TaskState;
use agentcompass_schema::progress::{EventLine, TaskPayload};
use agentcompass_schema::read_json;
use agentcompass_schema::task::{TaskRecord, TASK_FILE};
use serde::Deserialize;
use serde_json::Value;

use super::{Coordinator, Pending, SQUEUE_INTERVAL};
use crate::metrics::{attempt_records, AttemptRecord};
use crate::progress::{parse_severity, EventKind, ProgressEvent, TaskOutcome, TaskRef};
use crate::runtime::cluster::events::Tail;

impl Coordinator<'_> {
    /// Reads every job's new events and, when due, `squeue`'s view; settles the jobs that
    /// ended.
    pub(super) fn poll(&mut self) {
        self.read_events();
        let due = self
            .last_squeue
            .is_none_or(|at| at.elapsed() >= SQUEUE_INTERVAL)
            || self.jobs.iter().any(|job| job.done_reported);
        if !due {
            return;
        }
        self.last_squeue = Some(Instant::now());
        let states = match self.slurm.jobs(&self.prefix) {
            Ok(jobs) => jobs
                .into_iter()
                .map(|j| (j.id, j.state))
                .collect::<HashMap<_, _>>(),
            Err(e) => {
                tracing::warn!("cannot read the jobs' states: {e}");
                return;
            }
        };
        let mut ended = Vec::new();
        for (i, job) in self.jobs.iter_mut().enumerate() {
            job.state = states.get(&job.id).cloned();
            match &job.state {
                Some(state) if !state.is_final() => {}
                _ => ended.push(i),
            }
        }
        for i in ended.into_iter().rev() {
            let job = self.jobs.swap_remove(i);
            self.settle(job, true);
        }
    }

    /// Forwards every job's new events.
    pub(super) fn read_events(&mut self) {
        for j in 0..self.jobs.len() {
            let events = {
                let job = &mut self.jobs[j];
                // A requeued job's next run writes the next file.
                let next = job.tails.len() as u32;
                let path = self.dir.events(&job.id.to_string(), next);
                if path.exists() {
                    job.tails.push(Tail::new(path));
                    job.done_reported = false;
                }
                job.tails
                    .iter_mut()
                    .flat_map(Tail::read_new)
                    .collect::<Vec<_>>()
            };
            for event in events {
                self.forward(j, event);
            }
        }
    }

    /// Forwards one event of job `j` into the run's progress; a `task_finished` counts the
    /// published task.
    pub(super) fn forward(&mut self, j: usize, event: EventLine<'static>) {
        let rc = self.rc;
        let Some(task_id) = event.task_id.clone() else {
            if event.event == EventKind::RunFinished {
                self.jobs[j].done_reported = true;
            }
            return;
        };
        let Some(pending) = self.jobs[j].task_mut(&task_id) else {
            return;
        };
        let task = TaskRef {
            task_id: &pending.unit.task.task_id,
            category: &pending.unit.task.category,
            attempt: event.attempt,
        };
        let status = event.outcome();
        let payload = event.payload.into_owned();
        match event.event {
            EventKind::TaskStarted if !pending.started => {
                pending.started = true;
                rc.emit(ProgressEvent::TaskStarted {
                    task,
                    index: pending.unit.index,
                    total: pending.unit.total,
                });
            }
            EventKind::AttemptStarted => rc.emit(ProgressEvent::AttemptStarted(task)),
            EventKind::PhaseChanged => {
                if let Some(phase) = event.phase {
                    rc.emit(ProgressEvent::PhaseChanged {
                        task,
                        phase,
                        detail: payload,
                    });
                }
            }
            EventKind::ExecutionPlanResolved => {
                if let Some(attempt) = event.attempt {
                    pending.plans.insert(attempt.to_string(), payload.clone());
                }
                rc.emit(ProgressEvent::ExecutionPlanResolved {
                    task,
                    plan: payload,
                });
            }
            EventKind::AttemptRetry => rc.emit(ProgressEvent::AttemptRetry {
                task,
                detail: payload,
            }),
            EventKind::AttemptFinished => {
                if let Some(status) = status {
                    rc.emit(ProgressEvent::AttemptFinished { task, status });
                }
            }
            EventKind::PartialSaved => rc.emit(ProgressEvent::PartialSaved(task)),
            EventKind::TaskFinished => {
                let job = &mut self.jobs[j];
                if let Some(at) = job
                    .tasks
                    .iter()
                    .position(|t| t.unit.task.task_id == *task_id)
                {
                    let pending = job.tasks.swap_remove(at);
                    let severity = TaskPayload::deserialize(&payload)
                        .ok()
                        .and_then(|p| p.severity)
                        .as_deref()
                        .and_then(parse_severity);
                    if let Err(pending) = self.count_published(pending, Some((status, severity))) {
                        // Not visible here yet (a shared file system's cache): the job's
                        // end settles it.
                        self.jobs[j].tasks.push(*pending);
                    }
                }
            }
            _ => {}
        }
    }

    /// Counts a task a copy published: metrics and issues from its published results, its
    /// plans into the run's plan log, `task_finished` into the progress. Gives the task back
    /// when its published directory is not found.
    pub(super) fn count_published(
        &mut self,
        mut pending: Pending,
        reported: Option<(
            Option<TaskOutcome>,
            Option<agentcompass_plugin_api::contracts::IssueSeverity>,
        )>,
    ) -> Result<(), Box<Pending>> {
        let rc = self.rc;
        let details = rc.store.details_dir();
        let Some(dir) = TaskState::ALL
            .iter()
            .map(|s| details.join(s.as_str()).join(&pending.name))
            .find(|d| d.is_dir())
        else {
            return Err(Box::new(pending));
        };
        let task = &pending.unit.task;
        let records = read_json::<TaskRecord>(&dir.join(TASK_FILE), "task.json")
            .map(|record| attempt_records(&dir, &record))
            .unwrap_or_default();
        let outcomes: Vec<_> = records.iter().map(AttemptRecord::outcome).collect();
        let mut worst = None;
        for record in records {
            let mut result = RunResult::new(String::new());
            result.issues = record.issues;
            worst = worst.max(result.highest_severity());
            rc.issues.record(&result);
        }
        rc.record_metrics(&task.category, &outcomes);
        if !pending.plans.is_empty() {
            let plans = Value::Object(std::mem::take(&mut pending.plans));
            if let Err(e) = rc.store.append_resolved_plans(&task.task_id, &plans) {
                tracing::warn!("cannot record the plans of task {}: {e}", task.task_id);
            }
        }
        let (status, severity) = match reported {
            Some((Some(status), severity)) => (status, severity),
            _ => (TaskOutcome::from_severity(worst), worst),
        };
        if !pending.started {
            rc.emit(ProgressEvent::TaskStarted {
                task: TaskRef {
                    task_id: &task.task_id,
                    category: &task.category,
                    attempt: None,
                },
                index: pending.unit.index,
                total: pending.unit.total,
            });
        }
        rc.emit(ProgressEvent::TaskFinished {
            task: TaskRef {
                task_id: &task.task_id,
                category: &task.category,
                attempt: None,
            },
            status,
            severity,
            index: pending.unit.index,
            total: pending.unit.total,
        });
        self.scheduled.published += 1;
        Ok(())
    }

    /// Counts a task found published when its job ended (or published by the coordinator).
    pub(super) fn count_settled(&mut self, pending: Pending) {
        if let Err(pending) = self.count_published(pending, None) {
            tracing::error!(
                "task {} is published but its directory cannot be read",
                pending.unit.task.task_id
            );
            self.scheduled.store_failed = true;
        }
    }
}
