//! The selected tasks of a request, read from the benchmark a page at a time, so the host
//! never holds every pending task: memory stays flat however long the dataset is.

use std::collections::HashSet;

use agentcompass_plugin_api::contracts::{RunRequest, TaskSpec};
use agentcompass_plugin_api::sdk::{Ctx, TaskStream};

use super::error::RunError;
use super::task_selection::TaskSelection;
use crate::planner::Planner;
use agentcompass_results::naming::task_id_hash;

/// Tasks asked of the benchmark at a time.
const PAGE_SIZE: usize = 256;

/// A cursor over a request's selected tasks, in the benchmark's order.
pub struct TaskSource {
    benchmark: String,
    stream: Box<dyn TaskStream>,
    page: std::vec::IntoIter<TaskSpec>,
    total: usize,
    finished: bool,
    /// Hashes of the task ids returned so far (8 bytes a task, not the ids themselves).
    seen: HashSet<u64>,
}

impl TaskSource {
    /// Opens the benchmark's task stream and reads its first page, so that a dataset the
    /// benchmark rejects fails here, before anything is written.
    pub async fn open(
        planner: &Planner,
        ctx: &Ctx,
        resolved: &RunRequest,
    ) -> Result<Self, RunError> {
        let benchmark = resolved.benchmark.id.clone();
        let open = || async {
            planner
                .benchmark()
                .benchmark
                .open_tasks(ctx, resolved)
                .await
                .map_err(|error| RunError::Tasks {
                    benchmark: benchmark.clone(),
                    error,
                })
        };
        let selection = TaskSelection::of(&resolved.execution)
            .map_err(|error| RunError::Refused(format!("execution: {error}")))?;
        let stream = match selection {
            None => open().await?,
            Some(selection) => {
                let counted = selection
                    .count(open().await?)
                    .map_err(|error| RunError::Tasks {
                        benchmark: benchmark.clone(),
                        error,
                    })?;
                if !selection.include_patterns().is_empty() && counted.included == 0 {
                    return Err(RunError::NoTaskMatches {
                        benchmark,
                        patterns: selection.include_patterns().join(" "),
                        sample: counted.sample.join(", "),
                    });
                }
                selection.over(open().await?, counted.kept)
            }
        };
        let mut source = TaskSource::over(benchmark, stream);
        source.fill()?;
        Ok(source)
    }

    /// A cursor over `stream`, nothing read yet.
    fn over(benchmark: String, stream: Box<dyn TaskStream>) -> Self {
        let total = stream.total();
        TaskSource {
            benchmark,
            stream,
            page: Vec::new().into_iter(),
            total,
            finished: false,
            seen: HashSet::with_capacity(total.min(1 << 20)),
        }
    }

    /// How many tasks the benchmark selected.
    /// The tasks of the page read but not yet handed out (the first page, after `open`).
    pub fn buffered(&self) -> &[TaskSpec] {
        self.page.as_slice()
    }

    /// How many tasks the stream holds.
    pub fn total(&self) -> usize {
        self.total
    }

    /// The next task, `None` after the last one.
    pub fn next_task(&mut self) -> Result<Option<TaskSpec>, RunError> {
        if let Some(task) = self.page.next() {
            return Ok(Some(task));
        }
        self.fill()?;
        Ok(self.page.next())
    }

    /// Reads the next page (duplicate ids refused).
    fn fill(&mut self) -> Result<(), RunError> {
        if self.finished {
            return Ok(());
        }
        let page = self
            .stream
            .next_page(PAGE_SIZE)
            .map_err(|error| RunError::Tasks {
                benchmark: self.benchmark.clone(),
                error,
            })?;
        if page.is_empty() {
            self.finished = true;
        }
        for task in &page {
            if !self.seen.insert(task_id_hash(&task.task_id)) {
                return Err(RunError::DuplicateTask {
                    benchmark: self.benchmark.clone(),
                    task_id: task.task_id.clone(),
                });
            }
        }
        self.page = page.into_iter();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentcompass_plugin_api::sdk::VecTaskStream;

    fn source(ids: &[&str]) -> TaskSource {
        let tasks = ids.iter().map(|id| TaskSpec::new(*id, "q")).collect();
        TaskSource::over("b".into(), Box::new(VecTaskStream::new(tasks).unwrap()))
    }

    #[test]
    fn yields_every_task_in_order_across_pages() {
        let ids: Vec<String> = (0..PAGE_SIZE * 2 + 3).map(|i| format!("t{i}")).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let mut source = source(&refs);
        let mut got = Vec::new();
        while let Some(task) = source.next_task().unwrap() {
            got.push(task.task_id);
        }
        assert_eq!(got, ids);
        assert_eq!(source.total(), ids.len());
        assert!(source.next_task().unwrap().is_none());
    }

    /// A stream that (wrongly) repeats an id on its second page.
    struct Repeating(usize);

    impl TaskStream for Repeating {
        fn total(&self) -> usize {
            2
        }
        fn next_page(&mut self, _max: usize) -> agentcompass_plugin_api::Result<Vec<TaskSpec>> {
            self.0 += 1;
            Ok(if self.0 <= 2 {
                vec![TaskSpec::new("same", "q")]
            } else {
                Vec::new()
            })
        }
    }

    #[test]
    fn a_repeated_id_on_a_later_page_is_refused() {
        let mut source = TaskSource::over("b".into(), Box::new(Repeating(0)));
        assert_eq!(source.next_task().unwrap().unwrap().task_id, "same");
        let err = source.next_task().unwrap_err();
        assert_eq!(err.to_string(), "benchmark b returned task id `same` twice");
    }
}
