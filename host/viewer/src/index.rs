//! The compact per-run index behind filters, issue counts, comparisons and charts: a few bytes
//! per task (state, correct bit, category id, issue-code ids, the primary metric's value,
//! duration and tokens) plus the task's directory name and id in one string arena, built once
//! from every task's `task.json` and final `result.json` (and the run's finished-task events,
//! [`crate::timeline::Timeline`]) and cached per run directory. A run that is not terminal is
//! re-read when its index is older than [`RUNNING_INDEX_TTL`]. Memory is O(tasks × (names +
//! ~48 bytes)), never O(task JSON).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::OnceCell;

use crate::metrics::PrimaryMetric;
use crate::tasks::{list_task_dirs, read_facts, State, TaskFacts};
use crate::timeline::Timeline;

/// How long the index of a run that is still running is reused before it is rebuilt.
pub const RUNNING_INDEX_TTL: Duration = Duration::from_secs(2);
/// How many run indexes are kept.
const MAX_CACHED: usize = 16;

/// One task in the index.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    name_at: u32,
    name_len: u16,
    id_at: u32,
    id_len: u16,
    /// The state's index ([`State`] as u8).
    pub state: u8,
    /// 1 correct, 0 wrong, -1 not evaluated.
    pub correct: i8,
    /// The category's id in [`RunIndex::categories`].
    pub category: u16,
    codes_at: u32,
    codes_len: u16,
    /// The primary metric's value (NaN: the task has none).
    pub value: f64,
    /// The final attempt's duration in seconds (NaN: not recorded).
    pub duration: f32,
    /// The final attempt's model tokens (NaN: not recorded).
    pub tokens: f32,
}

impl Entry {
    /// The primary metric's value, when the task has one.
    pub fn value(&self) -> Option<f64> {
        (!self.value.is_nan()).then_some(self.value)
    }

    /// Whether the task is published (not in `details/running/`).
    pub fn published(&self) -> bool {
        self.state != State::Running as u8
    }
}

/// The index of one run, in listing order (running first, then published by name).
#[derive(Debug, Default)]
pub struct RunIndex {
    arena: String,
    entries: Vec<Entry>,
    codes: Vec<u16>,
    running: usize,
    categories: Vec<String>,
    code_names: Vec<String>,
    issue_counts: Vec<(String, String, u64)>,
    metric: PrimaryMetric,
    timeline: Option<Timeline>,
}

fn intern(names: &mut Vec<String>, lookup: &mut HashMap<String, u16>, name: &str) -> u16 {
    if let Some(id) = lookup.get(name) {
        return *id;
    }
    let id = u16::try_from(names.len()).unwrap_or(u16::MAX);
    names.push(name.to_string());
    lookup.insert(name.to_string(), id);
    id
}

/// Builds a [`RunIndex`] one task at a time, in listing order.
#[derive(Default)]
pub struct IndexBuilder {
    index: RunIndex,
    categories: HashMap<String, u16>,
    codes: HashMap<String, u16>,
    counts: BTreeMap<(String, String), u64>,
    run_dir: Option<PathBuf>,
}

impl IndexBuilder {
    /// A builder for the run at `run_dir`: its primary metric from its `metrics.json`, and its
    /// finished-task events read when the index is finished.
    pub fn for_run(run_dir: &Path) -> IndexBuilder {
        let mut builder = IndexBuilder {
            run_dir: Some(run_dir.to_path_buf()),
            ..IndexBuilder::default()
        };
        if let Some(metric) = PrimaryMetric::declared(run_dir) {
            builder.index.metric = metric;
        }
        builder
    }

    /// The primary metric's observation of `facts`; the first one found names an undeclared
    /// primary metric.
    fn primary_value(&mut self, facts: &TaskFacts) -> f64 {
        let metric = &mut self.index.metric;
        let asked = (!metric.id.is_empty()).then_some(metric.id.as_str());
        let Some((id, observed)) = facts.primary(asked) else {
            return f64::NAN;
        };
        if metric.id.is_empty() {
            metric.id = id.to_string();
            metric.binary = observed.binary;
        }
        observed.value
    }

    /// Adds the task directory `name` in `state` with its `facts` (running ones come first).
    pub fn add(&mut self, state: State, name: &str, facts: &TaskFacts) {
        let value = self.primary_value(facts);
        let index = &mut self.index;
        let name_at = u32::try_from(index.arena.len()).unwrap_or(u32::MAX);
        index.arena.push_str(name);
        let id_at = u32::try_from(index.arena.len()).unwrap_or(u32::MAX);
        index.arena.push_str(&facts.task_id);
        let codes_at = u32::try_from(index.codes.len()).unwrap_or(u32::MAX);
        let mut seen = Vec::new();
        for (code, severity) in &facts.issues {
            let id = intern(&mut index.code_names, &mut self.codes, code);
            if !seen.contains(&id) {
                seen.push(id);
                index.codes.push(id);
            }
            *self
                .counts
                .entry((code.clone(), severity.clone()))
                .or_default() += 1;
        }
        index.entries.push(Entry {
            name_at,
            name_len: u16::try_from(name.len()).unwrap_or(u16::MAX),
            id_at,
            id_len: u16::try_from(facts.task_id.len()).unwrap_or(u16::MAX),
            state: state as u8,
            correct: facts.correct.map_or(-1, i8::from),
            category: intern(&mut index.categories, &mut self.categories, &facts.category),
            codes_at,
            codes_len: u16::try_from(seen.len()).unwrap_or(u16::MAX),
            value,
            duration: facts.duration_seconds.map_or(f32::NAN, |d| d as f32),
            tokens: facts.tokens.map_or(f32::NAN, |t| t as f32),
        });
        if state == State::Running {
            index.running += 1;
        }
    }

    /// The finished index (with the run's timeline when the builder is [`Self::for_run`]).
    pub fn finish(self) -> RunIndex {
        let mut index = self.index;
        index.issue_counts = self
            .counts
            .into_iter()
            .map(|((code, severity), n)| (code, severity, n))
            .collect();
        if let Some(dir) = &self.run_dir {
            let values: HashMap<&str, Option<f64>> = index
                .entries
                .iter()
                .map(|e| (index.task_id(e), e.value()))
                .collect();
            index.timeline = Timeline::read(dir, &values);
        }
        index
    }
}

impl RunIndex {
    /// Reads every task of the run at `run_dir`.
    pub fn build(run_dir: &Path) -> RunIndex {
        let mut builder = IndexBuilder::for_run(run_dir);
        for (state, name) in list_task_dirs(run_dir) {
            let dir = run_dir.join("details").join(state.as_str()).join(&name);
            builder.add(state, &name, &read_facts(&dir, state, &name));
        }
        builder.finish()
    }

    /// Every entry, in listing order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    fn text(&self, at: u32, len: u16) -> &str {
        let at = at as usize;
        self.arena
            .get(at..at + usize::from(len))
            .unwrap_or_default()
    }

    /// The entry's task directory name.
    pub fn name(&self, entry: &Entry) -> &str {
        self.text(entry.name_at, entry.name_len)
    }

    /// The entry's task id.
    pub fn task_id(&self, entry: &Entry) -> &str {
        self.text(entry.id_at, entry.id_len)
    }

    /// The entry's category name.
    pub fn category(&self, entry: &Entry) -> &str {
        self.categories
            .get(usize::from(entry.category))
            .map_or("", String::as_str)
    }

    /// Whether the entry's final attempt has the issue code `code` (an id).
    pub fn has_code(&self, entry: &Entry, code: u16) -> bool {
        let at = entry.codes_at as usize;
        self.codes
            .get(at..at + usize::from(entry.codes_len))
            .is_some_and(|c| c.contains(&code))
    }

    /// The entry of the task directory `name` in `state`, by binary search.
    pub fn entry(&self, state: State, name: &str) -> Option<&Entry> {
        let (range, offset) = if state == State::Running {
            (&self.entries[..self.running], 0)
        } else {
            (&self.entries[self.running..], self.running)
        };
        let at = range.binary_search_by(|e| self.name(e).cmp(name)).ok()?;
        let entry = self.entries.get(offset + at)?;
        (entry.state == state as u8).then_some(entry)
    }

    /// The distinct categories, sorted.
    pub fn categories(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.categories.iter().map(String::as_str).collect();
        names.sort_unstable();
        names
    }

    /// The distinct issue codes of final attempts, sorted.
    pub fn code_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.code_names.iter().map(String::as_str).collect();
        names.sort_unstable();
        names
    }

    /// The id of the category `name` (`None`: no task has it).
    pub fn category_id(&self, name: &str) -> Option<u16> {
        self.categories
            .iter()
            .position(|c| c == name)
            .and_then(|p| u16::try_from(p).ok())
    }

    /// The id of the issue code `name` (`None`: no task has it).
    pub fn code_id(&self, name: &str) -> Option<u16> {
        self.code_names
            .iter()
            .position(|c| c == name)
            .and_then(|p| u16::try_from(p).ok())
    }

    /// Final attempts' issues counted as (code, severity, count), sorted by code.
    pub fn issue_counts(&self) -> &[(String, String, u64)] {
        &self.issue_counts
    }

    /// The run's primary metric (its id is empty when no task has one).
    pub fn metric(&self) -> &PrimaryMetric {
        &self.metric
    }

    /// Tasks finished and the score over time (`None`: no `progress.jsonl`, or too large).
    pub fn timeline(&self) -> Option<&Timeline> {
        self.timeline.as_ref()
    }
}

struct Slot {
    cell: Arc<OnceCell<Arc<RunIndex>>>,
    created: Instant,
    terminal: bool,
    /// The index this slot's replaces (a live run's previous one), until this one is built.
    previous: Option<Arc<RunIndex>>,
}

/// The cached indexes, per canonical run directory.
#[derive(Default)]
pub struct IndexCache {
    slots: Mutex<HashMap<PathBuf, Slot>>,
}

impl IndexCache {
    /// The run's cell, and the last index built before it (while the cell is empty).
    fn cell(
        &self,
        run_dir: &Path,
        terminal: bool,
    ) -> (Arc<OnceCell<Arc<RunIndex>>>, Option<Arc<RunIndex>>) {
        let mut slots = match self.slots.lock() {
            Ok(slots) => slots,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut previous = None;
        if let Some(slot) = slots.get_mut(run_dir) {
            let fresh = slot.terminal || slot.created.elapsed() < RUNNING_INDEX_TTL;
            if fresh && (slot.terminal == terminal || !slot.cell.initialized()) {
                if slot.cell.initialized() {
                    // Built: the index it replaced is no longer needed.
                    slot.previous = None;
                }
                return (slot.cell.clone(), slot.previous.clone());
            }
            previous = slot.cell.get().cloned().or_else(|| slot.previous.clone());
        }
        if slots.len() >= MAX_CACHED && !slots.contains_key(run_dir) {
            if let Some(oldest) = slots
                .iter()
                .min_by_key(|(_, s)| s.created)
                .map(|(k, _)| k.clone())
            {
                slots.remove(&oldest);
            }
        }
        let cell = Arc::new(OnceCell::new());
        slots.insert(
            run_dir.to_path_buf(),
            Slot {
                cell: cell.clone(),
                created: Instant::now(),
                terminal,
                previous: previous.clone(),
            },
        );
        (cell, previous)
    }

    /// The run's index, built (on a blocking thread) if it is not cached or stale.
    /// `terminal`: the run has ended, so its index never goes stale.
    pub async fn get(&self, run_dir: &Path, terminal: bool) -> Arc<RunIndex> {
        let (cell, _) = self.cell(run_dir, terminal);
        let dir = run_dir.to_path_buf();
        cell.get_or_init(|| async move {
            let built = tokio::task::spawn_blocking(move || RunIndex::build(&dir)).await;
            Arc::new(built.unwrap_or_default())
        })
        .await
        .clone()
    }

    /// The run's index if it is built and fresh; otherwise starts building it in the
    /// background and returns `None`.
    pub fn ready_or_start(
        self: &Arc<Self>,
        run_dir: &Path,
        terminal: bool,
    ) -> Option<Arc<RunIndex>> {
        let (cell, _) = self.cell(run_dir, terminal);
        if let Some(index) = cell.get() {
            return Some(index.clone());
        }
        self.start(run_dir, terminal);
        None
    }

    /// The run's index if it is built and fresh; otherwise the one built before it (`None`:
    /// none yet) while a fresh one is built in the background. A summary polled every few
    /// seconds (the run list's score so far) never waits for a large run's index.
    pub fn latest_or_start(
        self: &Arc<Self>,
        run_dir: &Path,
        terminal: bool,
    ) -> Option<Arc<RunIndex>> {
        let (cell, previous) = self.cell(run_dir, terminal);
        if let Some(index) = cell.get() {
            return Some(index.clone());
        }
        self.start(run_dir, terminal);
        previous
    }

    /// Builds the run's index in the background.
    fn start(self: &Arc<Self>, run_dir: &Path, terminal: bool) {
        let cache = self.clone();
        let dir = run_dir.to_path_buf();
        tokio::spawn(async move {
            cache.get(&dir, terminal).await;
        });
    }
}

/// Writes task `id` of `category` in `state` with `result` as its one attempt's
/// `result.json` (for the tests of the modules that read runs).
/// Publishes task `id` of `category` with a binary `correct` result (tests).
#[cfg(test)]
pub(crate) fn write_correct_task(run: &Path, id: &str, category: &str, correct: bool) {
    let result = format!(r#"{{"status":"completed","metrics":{{"correct":{correct}}}}}"#);
    write_task(run, "normal", id, category, &result);
}

#[cfg(test)]
pub(crate) fn write_task(run: &Path, state: &str, id: &str, category: &str, result: &str) {
    let dir = run.join("details").join(state).join(format!("{id}--00"));
    std::fs::create_dir_all(dir.join("attempt-1")).unwrap();
    std::fs::write(
        dir.join("task.json"),
        format!(r#"{{"task_id":"{id}","category":"{category}","attempts":{{"1":"attempt-1"}}}}"#),
    )
    .unwrap();
    std::fs::write(dir.join("attempt-1/result.json"), result).unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn index_holds_the_facts() {
        let run = tempfile::tempdir().unwrap();
        write_task(
            run.path(),
            "normal",
            "b",
            "x",
            r#"{"status":"completed","metrics":{"correct":true}}"#,
        );
        write_task(
            run.path(),
            "fatal",
            "a",
            "y",
            r#"{"status":"run_error","metrics":{},"issues":[{"code":"run_timeout","severity":"FATAL"}]}"#,
        );
        write_task(
            run.path(),
            "normal",
            "c",
            "x",
            r#"{"status":"completed","metrics":{"reward":0.0}}"#,
        );
        fs::create_dir_all(run.path().join("details/running/z--00")).unwrap();
        let index = RunIndex::build(run.path());
        let ids: Vec<&str> = index.entries().iter().map(|e| index.task_id(e)).collect();
        assert_eq!(ids, ["z", "a", "b", "c"]);
        let b = index.entry(State::Normal, "b--00").unwrap();
        assert_eq!((b.correct, index.category(b)), (1, "x"));
        assert!(index.entry(State::Fatal, "b--00").is_none());
        let a = index.entry(State::Fatal, "a--00").unwrap();
        assert!(index.has_code(a, index.code_id("run_timeout").unwrap()));
        assert_eq!(index.entry(State::Normal, "c--00").unwrap().correct, 0);
        assert_eq!(index.entry(State::Running, "z--00").unwrap().correct, -1);
        assert_eq!(index.categories(), ["", "x", "y"]);
        assert_eq!(
            index.issue_counts(),
            [("run_timeout".to_string(), "FATAL".to_string(), 1)]
        );
    }

    #[tokio::test]
    async fn a_stale_live_index_is_served_while_the_next_is_built() {
        let run = tempfile::tempdir().unwrap();
        write_task(
            run.path(),
            "normal",
            "a",
            "x",
            r#"{"metrics":{"correct":true}}"#,
        );
        let cache = Arc::new(IndexCache::default());
        assert!(cache.latest_or_start(run.path(), false).is_none());
        let first = cache.get(run.path(), false).await;
        assert_eq!(first.entries().len(), 1);
        write_task(
            run.path(),
            "normal",
            "b",
            "x",
            r#"{"metrics":{"correct":true}}"#,
        );
        std::thread::sleep(RUNNING_INDEX_TTL);
        // Stale: the previous index answers at once while the next one is built.
        let served = cache.latest_or_start(run.path(), false).unwrap();
        assert!(Arc::ptr_eq(&served, &first) || served.entries().len() == 2);
        let next = cache.get(run.path(), false).await;
        assert_eq!(next.entries().len(), 2);
        let served = cache.latest_or_start(run.path(), false).unwrap();
        assert!(Arc::ptr_eq(&served, &next));
    }

    #[test]
    fn filters_use_the_index() {
        use crate::query::{select, Filter, Listing, TaskQuery};
        let run = tempfile::tempdir().unwrap();
        for i in 0..10 {
            let correct = i % 3 == 0;
            write_task(
                run.path(),
                "normal",
                &format!("t{i}"),
                if i < 5 { "low" } else { "high" },
                &format!(r#"{{"status":"completed","metrics":{{"correct":{correct}}}}}"#),
            );
        }
        let index = RunIndex::build(run.path());
        let listing = Listing::Dirs(list_task_dirs(run.path()));
        let q = |filter, category: Option<&str>, q: Option<&str>| TaskQuery {
            page: 0,
            size: 100,
            filter,
            category: category.map(str::to_string),
            issue: None,
            q: q.map(str::to_string),
        };
        assert_eq!(
            select(&listing, Some(&index), &q(Filter::Correct, None, None)).0,
            4
        );
        assert_eq!(
            select(&listing, Some(&index), &q(Filter::Wrong, None, None)).0,
            6
        );
        assert_eq!(
            select(
                &listing,
                Some(&index),
                &q(Filter::Correct, Some("high"), None)
            )
            .0,
            2
        );
        assert_eq!(
            select(&listing, Some(&index), &q(Filter::All, Some("none"), None)).0,
            0
        );
        assert_eq!(
            select(&listing, Some(&index), &q(Filter::All, None, Some("T1"))).0,
            1
        );
        let mut issue = q(Filter::All, None, None);
        issue.issue = Some("run_timeout".into());
        assert_eq!(select(&listing, Some(&index), &issue).0, 0);
        // The index as the listing pages the same tasks.
        let index = Arc::new(index);
        let indexed = Listing::Indexed(index.clone());
        for filter in [Filter::All, Filter::Correct, Filter::Wrong] {
            let mut page = q(filter, None, None);
            page.size = 3;
            page.page = 1;
            let (a, b) = (
                select(&listing, Some(&index), &page),
                select(&indexed, Some(&index), &page),
            );
            assert_eq!(a, b);
            let names = |l: &Listing, at: &[usize]| -> Vec<String> {
                at.iter()
                    .map(|i| l.get(*i).unwrap().1.to_string())
                    .collect()
            };
            assert_eq!(names(&listing, &a.1), names(&indexed, &b.1));
        }
    }
}
