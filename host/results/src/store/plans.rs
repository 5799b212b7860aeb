//! Resolved execution plans: appended to `resolved_plans.jsonl` during the run and streamed
//! into `run_info.json` by `finalize_run_info` without holding all plans in memory.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::PoisonError;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::ser::{Error as _, SerializeMap};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::{RunInfo, RunStore, StoreError, FILE_MODE, RESOLVED_PLANS_FILE, RUN_INFO_FILE};

/// Key of the plans in `run_info.json`.
const PLANS_KEY: &str = "resolved_execution_plans";

/// The open append log (opened on first use).
#[derive(Debug, Default)]
pub(super) struct PlanLog {
    file: Option<File>,
    /// A previous append failed part-way: start the next one on a fresh line so the broken
    /// fragment stays a line of its own (skipped when folding).
    broken: bool,
}

#[derive(Serialize)]
struct PlanLine<'a> {
    task_id: &'a str,
    attempts: &'a Value,
}

/// First pass: only the task id of a line (the attempts are validated, not kept).
#[derive(Deserialize)]
struct PlanLineHead {
    task_id: String,
    #[allow(dead_code)]
    attempts: IgnoredAny,
}

#[derive(Deserialize)]
struct PlanLineOwned {
    task_id: String,
    attempts: Value,
}

#[derive(Serialize)]
struct TaskPlans<'a> {
    attempts: &'a Value,
}

impl RunStore {
    /// Appends the resolved plans of one task (`attempts` = `{"1": plan, "2": plan, ...}`) as
    /// one line of `resolved_plans.jsonl`. A later line for the same task replaces earlier ones
    /// when folded, so pass every attempt of the task each time. The task-entry shape
    /// `{"attempts": {...}}` is accepted too and unwrapped. Safe to call from many threads.
    pub fn append_resolved_plans(&self, task_id: &str, attempts: &Value) -> Result<(), StoreError> {
        let attempts = match attempts.get("attempts") {
            Some(inner) if inner.is_object() => inner,
            _ => attempts,
        };
        let path = self.resolved_plans_path();
        let mut line = serde_json::to_vec(&PlanLine { task_id, attempts })
            .map_err(|e| StoreError::json(&path, e))?;
        line.push(b'\n');
        let mut log = self.plans.lock().unwrap_or_else(PoisonError::into_inner);
        if log.broken {
            line.insert(0, b'\n');
        }
        let result = (|| {
            if log.file.is_none() {
                log.file = Some(
                    OpenOptions::new()
                        .create(true)
                        .append(true)
                        .mode(FILE_MODE)
                        .open(&path)?,
                );
            }
            match log.file.as_mut() {
                Some(file) => file.write_all(&line),
                None => Ok(()),
            }
        })();
        log.broken = result.is_err();
        result.map_err(|e| StoreError::io("append to", &path, e))
    }

    /// Atomically writes `run_info.json` with `resolved_execution_plans` folded in from
    /// `resolved_plans.jsonl`: the last line of each task wins, invalid lines (e.g. a line
    /// truncated by a crash) are skipped. The log is read twice (task id → last line number,
    /// then the chosen lines, one at a time), so the plans are never all in memory.
    pub fn finalize_run_info(&self, info: &RunInfo) -> Result<(), StoreError> {
        // Hold the log lock so no line is appended while folding.
        let _log = self.plans.lock().unwrap_or_else(PoisonError::into_inner);
        let plans_path = self.resolved_plans_path();
        let chosen = last_line_per_task(&plans_path)?;
        let stream = chosen.map(|lines| PlansStream {
            path: &plans_path,
            lines,
            failure: RefCell::new(None),
        });
        let path = self.run_info_path();
        super::write_streaming_atomic(&path, |out| {
            write_run_info_doc(&path, out, info, stream.as_ref())
        })
    }

    /// Copies the resolved plans of the tasks `wanted` accepts from the run at
    /// `source_run_dir` into this run's log (for reused tasks). Reads the source's
    /// `run_info.json` as a stream; when it holds no plans (the source never finalized), its
    /// `resolved_plans.jsonl` instead. Returns how many task entries were copied.
    pub fn import_resolved_plans(
        &self,
        source_run_dir: &Path,
        wanted: &dyn Fn(&str) -> bool,
    ) -> Result<usize, StoreError> {
        let info_path = source_run_dir.join(RUN_INFO_FILE);
        let copy = PlanCopy {
            store: self,
            wanted,
            copied: RefCell::new(0),
            found: RefCell::new(false),
            failure: RefCell::new(None),
        };
        if info_path.is_file() {
            let file = File::open(&info_path).map_err(|e| StoreError::io("open", &info_path, e))?;
            let mut de = serde_json::Deserializer::from_reader(BufReader::new(file));
            let parsed = RunInfoPlans(&copy).deserialize(&mut de);
            if let Some(failure) = copy.failure.borrow_mut().take() {
                return Err(failure);
            }
            parsed.map_err(|e| StoreError::json(&info_path, e))?;
        }
        if !*copy.found.borrow() {
            let log_path = source_run_dir.join(RESOLVED_PLANS_FILE);
            match File::open(&log_path) {
                Ok(file) => {
                    for_each_line(&log_path, BufReader::new(file), |_, bytes| {
                        if let Ok(line) = serde_json::from_slice::<PlanLineOwned>(bytes) {
                            if wanted(&line.task_id) {
                                self.append_resolved_plans(&line.task_id, &line.attempts)?;
                                *copy.copied.borrow_mut() += 1;
                            }
                        }
                        Ok(())
                    })?;
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(StoreError::io("open", &log_path, e)),
            }
        }
        let copied = *copy.copied.borrow();
        Ok(copied)
    }
}

/// Calls `each(line_number, bytes)` for every line of `reader`, one line in memory at a time.
fn for_each_line(
    path: &Path,
    reader: impl BufRead,
    each: impl FnMut(usize, &[u8]) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    for_each_line_or(path, reader, |e| e, each)
}

/// [`for_each_line`] for a caller with its own error type: a read error becomes
/// `read_error(..)`.
fn for_each_line_or<E>(
    path: &Path,
    mut reader: impl BufRead,
    read_error: impl Fn(StoreError) -> E,
    mut each: impl FnMut(usize, &[u8]) -> Result<(), E>,
) -> Result<(), E> {
    let mut buf = Vec::new();
    let mut number = 0usize;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| read_error(StoreError::io("read", path, e)))?;
        if n == 0 {
            return Ok(());
        }
        each(number, &buf)?;
        number += 1;
    }
}

/// Line numbers of the log, as a bitset (one bit a line).
#[derive(Debug, Default)]
pub(super) struct LineSet(Vec<u64>);

impl LineSet {
    /// Adds a line number.
    pub(super) fn insert(&mut self, line: usize) {
        let (word, bit) = (line / 64, line % 64);
        if self.0.len() <= word {
            self.0.resize(word + 1, 0);
        }
        self.0[word] |= 1 << bit;
    }

    /// Whether the line number was added.
    pub(super) fn contains(&self, line: usize) -> bool {
        self.0
            .get(line / 64)
            .is_some_and(|word| word & (1 << (line % 64)) != 0)
    }
}

/// First pass: the numbers of the last valid line of every task, or `None` without a log.
///
/// Keeps 16 bytes a line (the task id's hash and the line number), not the ids: lines are
/// sorted by hash, and only where two lines share a hash are their ids read again to tell
/// one task's repeated line from a hash collision.
fn last_line_per_task(path: &Path) -> Result<Option<LineSet>, StoreError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StoreError::io("open", path, e)),
    };
    let mut lines: Vec<(u64, usize)> = Vec::new();
    for_each_line(path, BufReader::new(file), |number, bytes| {
        if let Ok(head) = serde_json::from_slice::<PlanLineHead>(bytes) {
            lines.push((crate::naming::task_id_hash(&head.task_id), number));
        }
        Ok(())
    })?;
    if lines.is_empty() {
        return Ok(None);
    }
    lines.sort_unstable();
    let mut chosen = LineSet::default();
    let mut shared: Vec<usize> = Vec::new();
    for group in lines.chunk_by(|a, b| a.0 == b.0) {
        match group {
            [(_, only)] => chosen.insert(*only),
            _ => shared.extend(group.iter().map(|(_, number)| *number)),
        }
    }
    drop(lines);
    if !shared.is_empty() {
        // Lines whose hash is shared: the last line of each actual task id wins.
        let wanted: HashSet<usize> = shared.into_iter().collect();
        let mut last: HashMap<String, usize> = HashMap::new();
        let file = File::open(path).map_err(|e| StoreError::io("open", path, e))?;
        for_each_line(path, BufReader::new(file), |number, bytes| {
            if wanted.contains(&number) {
                if let Ok(head) = serde_json::from_slice::<PlanLineHead>(bytes) {
                    last.insert(head.task_id, number);
                }
            }
            Ok(())
        })?;
        for number in last.into_values() {
            chosen.insert(number);
        }
    }
    Ok(Some(chosen))
}

/// Second pass, as a serde map: the chosen lines of the log, read one at a time.
pub(super) struct PlansStream<'a> {
    path: &'a Path,
    lines: LineSet,
    /// An I/O error met while serializing (serde can only carry a message).
    failure: RefCell<Option<StoreError>>,
}

impl Serialize for PlansStream<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let fail = |err: StoreError| {
            let message = err.to_string();
            *self.failure.borrow_mut() = Some(err);
            S::Error::custom(message)
        };
        let file = File::open(self.path).map_err(|e| fail(StoreError::io("open", self.path, e)))?;
        let mut map = serializer.serialize_map(None)?;
        for_each_line_or(self.path, BufReader::new(file), fail, |number, bytes| {
            if !self.lines.contains(number) {
                return Ok(());
            }
            match serde_json::from_slice::<PlanLineOwned>(bytes) {
                Ok(line) => map.serialize_entry(
                    &line.task_id,
                    &TaskPlans {
                        attempts: &line.attempts,
                    },
                ),
                Err(_) => Ok(()),
            }
        })?;
        map.end()
    }
}

enum DocValue<'a> {
    Value(Value),
    Plans(&'a PlansStream<'a>),
}

impl Serialize for DocValue<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            DocValue::Value(v) => v.serialize(serializer),
            DocValue::Plans(p) => p.serialize(serializer),
        }
    }
}

/// `run_info.json` with sorted top-level keys.
struct RunInfoDoc<'a>(Vec<(String, DocValue<'a>)>);

impl Serialize for RunInfoDoc<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in &self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// Writes `info` (plus the streamed plans, if any) as pretty JSON with sorted top-level keys.
pub(super) fn write_run_info_doc(
    path: &Path,
    out: &mut impl Write,
    info: &RunInfo,
    plans: Option<&PlansStream<'_>>,
) -> Result<(), StoreError> {
    let mut fields: Vec<(String, DocValue<'_>)> =
        match serde_json::to_value(info).map_err(|e| StoreError::json(path, e))? {
            Value::Object(map) => map
                .into_iter()
                .map(|(k, v)| (k, DocValue::Value(v)))
                .collect(),
            _ => Vec::new(),
        };
    if let Some(plans) = plans {
        fields.push((PLANS_KEY.to_string(), DocValue::Plans(plans)));
    }
    fields.sort_by(|a, b| a.0.cmp(&b.0));
    let written = serde_json::to_writer_pretty(&mut *out, &RunInfoDoc(fields));
    if let Some(failure) = plans.and_then(|p| p.failure.borrow_mut().take()) {
        return Err(failure);
    }
    written.map_err(|e| {
        if e.is_io() {
            StoreError::io("write", path, io::Error::from(e))
        } else {
            StoreError::json(path, e)
        }
    })?;
    out.write_all(b"\n")
        .map_err(|e| StoreError::io("write", path, e))
}

/// Streaming copy of selected plans out of a source `run_info.json`.
struct PlanCopy<'a> {
    store: &'a RunStore,
    wanted: &'a dyn Fn(&str) -> bool,
    copied: RefCell<usize>,
    found: RefCell<bool>,
    failure: RefCell<Option<StoreError>>,
}

/// Seed for the whole `run_info.json` object: every key but the plans is skipped.
struct RunInfoPlans<'a, 'b>(&'b PlanCopy<'a>);

impl<'de> DeserializeSeed<'de> for RunInfoPlans<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RunInfoPlans<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a run_info object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == PLANS_KEY {
                *self.0.found.borrow_mut() = true;
                map.next_value_seed(TaskPlansSeed(self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// Seed for `resolved_execution_plans`: wanted tasks are appended to the target log.
struct TaskPlansSeed<'a, 'b>(&'b PlanCopy<'a>);

impl<'de> DeserializeSeed<'de> for TaskPlansSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

#[derive(Deserialize)]
struct TaskPlansOwned {
    #[serde(default)]
    attempts: Value,
}

impl<'de> Visitor<'de> for TaskPlansSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of task ids to plans")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let copy = self.0;
        while let Some(task_id) = map.next_key::<String>()? {
            if !(copy.wanted)(&task_id) {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let plans: TaskPlansOwned = map.next_value()?;
            if let Err(e) = copy.store.append_resolved_plans(&task_id, &plans.attempts) {
                let message = e.to_string();
                *copy.failure.borrow_mut() = Some(e);
                return Err(de::Error::custom(message));
            }
            *copy.copied.borrow_mut() += 1;
        }
        Ok(())
    }
}
