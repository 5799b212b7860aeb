//! The request's own task selection over the benchmark's stream (`execution.include_tasks`,
//! `exclude_tasks`, `n_tasks`; Harbor's `-i`, `-x`, `-l`): include first, then exclude, then
//! the first N, in the benchmark's order. The stream is read twice — once to count what is
//! kept (so the run knows its size before its first task, and an include pattern that
//! matches nothing is refused then), once to run — holding no more than a page either time.

use agentcompass_plugin_api::contracts::{ExecutionSpec, TaskSpec};
use agentcompass_plugin_api::sdk::TaskStream;
use agentcompass_plugin_api::Result as PluginResult;

use crate::request::task_globs::{TaskGlobError, TaskGlobs};

/// Tasks read from the benchmark at a time while counting.
const COUNT_PAGE: usize = 256;

/// Task ids named when an include pattern matches nothing (as Harbor names up to five).
const SAMPLE_IDS: usize = 5;

/// Which tasks of the stream a request keeps.
#[derive(Debug, Clone)]
pub struct TaskSelection {
    include: TaskGlobs,
    exclude: TaskGlobs,
    first: Option<usize>,
}

/// What counting the stream found.
#[derive(Debug, Clone, PartialEq)]
pub struct Counted {
    /// Tasks kept, after the first-N cut.
    pub kept: usize,
    /// Tasks an include pattern matched (every task without one).
    pub included: usize,
    /// The first task ids of the stream.
    pub sample: Vec<String>,
}

impl TaskSelection {
    /// The selection of `execution`, `None` when it selects every task.
    pub fn of(execution: &ExecutionSpec) -> Result<Option<Self>, TaskGlobError> {
        if execution.include_tasks.is_empty()
            && execution.exclude_tasks.is_empty()
            && execution.n_tasks.is_none()
        {
            return Ok(None);
        }
        Ok(Some(TaskSelection {
            include: TaskGlobs::new(&execution.include_tasks)?,
            exclude: TaskGlobs::new(&execution.exclude_tasks)?,
            first: execution.n_tasks.map(|n| n as usize),
        }))
    }

    /// The include patterns, as given.
    pub fn include_patterns(&self) -> &[String] {
        self.include.patterns()
    }

    fn included(&self, task_id: &str) -> bool {
        self.include.is_empty() || self.include.matches(task_id)
    }

    fn keeps(&self, task_id: &str) -> bool {
        self.included(task_id) && !self.exclude.matches(task_id)
    }

    /// Reads `stream` to its end and counts what the selection keeps.
    pub fn count(&self, mut stream: Box<dyn TaskStream>) -> PluginResult<Counted> {
        let mut counted = Counted {
            kept: 0,
            included: 0,
            sample: Vec::new(),
        };
        loop {
            let page = stream.next_page(COUNT_PAGE)?;
            if page.is_empty() {
                break;
            }
            for task in &page {
                if counted.sample.len() < SAMPLE_IDS {
                    counted.sample.push(task.task_id.clone());
                }
                counted.included += usize::from(self.included(&task.task_id));
                counted.kept += usize::from(self.keeps(&task.task_id));
            }
        }
        if let Some(first) = self.first {
            counted.kept = counted.kept.min(first);
        }
        Ok(counted)
    }

    /// `stream` with only the selected tasks, `kept` of them (what [`TaskSelection::count`]
    /// found).
    pub fn over(self, stream: Box<dyn TaskStream>, kept: usize) -> Box<dyn TaskStream> {
        Box::new(SelectedStream {
            inner: stream,
            selection: self,
            remaining: kept,
            total: kept,
        })
    }
}

/// The selected tasks of a stream, stopping after the count.
struct SelectedStream {
    inner: Box<dyn TaskStream>,
    selection: TaskSelection,
    remaining: usize,
    total: usize,
}

impl TaskStream for SelectedStream {
    fn total(&self) -> usize {
        self.total
    }

    fn next_page(&mut self, max: usize) -> PluginResult<Vec<TaskSpec>> {
        let mut page = Vec::new();
        while self.remaining > 0 && page.is_empty() {
            let read = self.inner.next_page(max.max(1))?;
            if read.is_empty() {
                break;
            }
            for task in read {
                if self.remaining > 0 && self.selection.keeps(&task.task_id) {
                    self.remaining -= 1;
                    page.push(task);
                }
            }
        }
        Ok(page)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentcompass_plugin_api::sdk::VecTaskStream;

    fn stream(ids: &[&str]) -> Box<dyn TaskStream> {
        let tasks = ids.iter().map(|id| TaskSpec::new(*id, "q")).collect();
        Box::new(VecTaskStream::new(tasks).unwrap())
    }

    fn selection(include: &[&str], exclude: &[&str], n: Option<u32>) -> TaskSelection {
        let strings = |list: &[&str]| list.iter().map(|s| s.to_string()).collect();
        let execution = ExecutionSpec {
            include_tasks: strings(include),
            exclude_tasks: strings(exclude),
            n_tasks: n,
            ..ExecutionSpec::default()
        };
        TaskSelection::of(&execution).unwrap().unwrap()
    }

    fn run(selection: TaskSelection, ids: &[&str]) -> (usize, Vec<String>) {
        let counted = selection.count(stream(ids)).unwrap();
        let mut selected = selection.over(stream(ids), counted.kept);
        let total = selected.total();
        let mut out = Vec::new();
        loop {
            let page = selected.next_page(2).unwrap();
            if page.is_empty() {
                break;
            }
            out.extend(page.into_iter().map(|t| t.task_id));
        }
        (total, out)
    }

    #[test]
    fn include_then_exclude_then_the_first_n_in_stream_order() {
        let ids = ["a1", "b1", "a2", "a3", "b2", "a4"];
        assert_eq!(
            run(selection(&["a*"], &["a2"], Some(2)), &ids),
            (2, vec!["a1".to_string(), "a3".into()])
        );
        assert_eq!(
            run(selection(&[], &["b*"], None), &ids),
            (4, vec!["a1".into(), "a2".into(), "a3".into(), "a4".into()])
        );
        assert_eq!(run(selection(&[], &[], Some(10)), &ids).0, 6);
    }

    #[test]
    fn counting_reports_what_an_include_matched_and_the_first_ids() {
        let counted = selection(&["z*"], &[], None)
            .count(stream(&["a", "b", "c", "d", "e", "f"]))
            .unwrap();
        assert_eq!(counted.included, 0);
        assert_eq!(counted.sample, ["a", "b", "c", "d", "e"]);
    }

    #[test]
    fn no_selection_when_nothing_is_set() {
        assert!(TaskSelection::of(&ExecutionSpec::default())
            .unwrap()
            .is_none());
    }
}
