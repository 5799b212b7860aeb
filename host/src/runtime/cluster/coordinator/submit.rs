//! Submitting jobs: the next tasks (lost ones first, then the stream's), their unit file and
//! script, `sbatch`, and the submission log (`jobs.jsonl`).

use std::io::Write;

use agentcompass_cluster::JobSpec;
use agentcompass_results::naming::task_dir_name;
use serde_json::{json, Map};

use super::{Coordinator, Job, Pending};
use crate::runtime::cluster::events::Tail;
use crate::runtime::cluster::unit::{write_unit, Unit, UnitTask, UNIT_SCHEMA};
use crate::runtime::cluster_error::ClusterRunError;

impl Coordinator<'_> {
    /// Submits jobs until `max_jobs` are in flight or no task is left.
    pub(super) async fn fill(&mut self) -> Result<(), ClusterRunError> {
        while self.jobs.len() < self.max_jobs {
            let tasks = self.next_tasks();
            if tasks.is_empty() {
                return Ok(());
            }
            let slot = tokio::select! {
                slot = self.shared.limits.attempt_slot() => slot,
                _ = self.shared.cancel.cancelled() => {
                    // Not submitted: nothing to count.
                    return Ok(());
                }
            };
            self.submit(tasks, slot)?;
        }
        Ok(())
    }

    /// The tasks of the next job: lost tasks first, then the stream's.
    pub(super) fn next_tasks(&mut self) -> Vec<Pending> {
        let per_job = self.options.attempts_per_job.max(1) as usize;
        let mut tasks = Vec::with_capacity(per_job);
        while tasks.len() < per_job {
            if let Some(task) = self.resubmit.pop_front() {
                tasks.push(task);
                continue;
            }
            if self.stream_done {
                break;
            }
            let index = self.next_index;
            let task = match self.tasks.next_task() {
                Ok(Some(task)) => task,
                Ok(None) => {
                    self.stream_done = true;
                    break;
                }
                Err(e) => {
                    self.stream_done = true;
                    self.scheduled.load_error = Some(e.to_string());
                    break;
                }
            };
            self.next_index += 1;
            if self.reused.contains(&task.task_id) {
                continue;
            }
            for warning in &task.load_warnings {
                tracing::warn!("task {}: {warning}", task.task_id);
            }
            let name = task_dir_name(&task.task_id);
            let resume_from = self
                .rc
                .resumable
                .get(&name)
                .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()));
            tasks.push(Pending {
                unit: UnitTask {
                    index,
                    total: self.tasks.total(),
                    task,
                    resume_from,
                },
                name,
                lost: 0,
                started: false,
                plans: Map::new(),
            });
        }
        tasks
    }

    /// Writes the unit and script of the next job and submits it.
    pub(super) fn submit(
        &mut self,
        tasks: Vec<Pending>,
        slot: Option<crate::runtime::limits::AttemptSlot>,
    ) -> Result<(), ClusterRunError> {
        let seq = self.next_seq;
        self.next_seq += 1;
        let unit = Unit {
            schema_version: UNIT_SCHEMA.to_string(),
            seq,
            tasks: tasks.iter().map(|t| t.unit.clone()).collect(),
        };
        let unit_path = self.dir.unit(seq);
        write_unit(&unit, &unit_path).map_err(|cause| ClusterRunError::Write {
            what: "a unit of work",
            cause,
        })?;
        let script = self.dir.script(seq);
        let args = [
            "cluster".to_string(),
            "work".to_string(),
            self.run_dir.display().to_string(),
            unit_path.display().to_string(),
        ];
        agentcompass_cluster::slurm::write_job_script(&script, &self.program, &args)?;
        let name = format!("{}{seq}", self.prefix);
        let spec = JobSpec {
            name: name.clone(),
            script,
            output: self.dir.output(seq),
            workdir: self.workdir.clone(),
            partition: self.options.partition.clone(),
            account: self.options.account.clone(),
            qos: self.options.qos.clone(),
            time_limit: self.options.time_limit.clone(),
            cpus: Some(self.options.cpus_per_job),
            memory: self.options.mem_per_job.clone(),
            requeue: true,
            extra_args: self.options.extra_sbatch_args.clone(),
            env: self.env.clone(),
        };
        let id = self.slurm.submit(&spec).map_err(ClusterRunError::Submit)?;
        self.log_submission(seq, id, &name, tasks.len());
        tracing::debug!(job_id = id, seq, tasks = tasks.len(), "job submitted");
        self.jobs.push(Job {
            id,
            seq,
            tasks,
            tails: vec![Tail::new(self.dir.events(&id.to_string(), 0))],
            _slot: slot,
            state: None,
            done_reported: false,
        });
        Ok(())
    }

    /// Appends the job to `jobs.jsonl` (what `--reuse` and `cluster list` read to find the
    /// jobs of a coordinator that died).
    pub(super) fn log_submission(&self, seq: u64, id: u64, name: &str, tasks: usize) {
        let line = json!({"seq": seq, "job_id": id, "name": name, "tasks": tasks});
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.jobs_log())
            .and_then(|mut f| writeln!(f, "{line}"));
        if let Err(e) = appended {
            tracing::warn!(
                "cannot record job {id} in {}: {e}",
                self.dir.jobs_log().display()
            );
        }
    }
}
