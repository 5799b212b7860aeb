//! A run's task rows: the listing of task directories (running first, then the published
//! state directories, each sorted by name), the facts of one task (its `task.json` and final
//! attempt's `result.json`) and its row.

use std::fs::{self, File};
use std::io::BufReader;
use std::path::Path;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::paths::is_plain_name;

/// Where a task directory sits: `details/running/` or a published state directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum State {
    /// Still running (or interrupted): `details/running/`.
    Running = 0,
    /// Published without errors.
    Normal = 1,
    /// Published with an ERROR issue.
    Error = 2,
    /// Published with a FATAL issue.
    Fatal = 3,
}

impl State {
    /// Every state, in listing order.
    pub const ALL: [State; 4] = [State::Running, State::Normal, State::Error, State::Fatal];

    /// The state directory's name.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Running => "running",
            State::Normal => "normal",
            State::Error => "error",
            State::Fatal => "fatal",
        }
    }

    /// The state named `name`.
    pub fn parse(name: &str) -> Option<State> {
        State::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// The state from its index (`as u8`).
    pub fn from_u8(n: u8) -> State {
        State::ALL
            .get(usize::from(n))
            .copied()
            .unwrap_or(State::Normal)
    }
}

/// The task directories of a run in listing order: running ones first, then every published
/// one, sorted by directory name (`<task>--<hash>`). Only names are read.
pub fn list_task_dirs(run_dir: &Path) -> Vec<(State, String)> {
    let details = run_dir.join("details");
    let names = |state: State| -> Vec<(State, String)> {
        let Ok(entries) = fs::read_dir(details.join(state.as_str())) else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| !n.starts_with('.'))
            .map(|n| (state, n))
            .collect()
    };
    let mut running = names(State::Running);
    running.sort_by(|a, b| a.1.cmp(&b.1));
    let mut published: Vec<(State, String)> = [State::Normal, State::Error, State::Fatal]
        .into_iter()
        .flat_map(names)
        .collect();
    published.sort_by(|a, b| a.1.cmp(&b.1));
    running.extend(published);
    running
}

/// What `task.json` says that a row needs.
#[derive(Deserialize, Default)]
struct TaskHead {
    #[serde(default)]
    task_id: Option<String>,
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    attempts: Option<Map<String, Value>>,
}

/// What `result.json` says that a row needs (the trajectory is skipped while parsing).
#[derive(Deserialize, Default)]
struct ResultHead {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    metrics: Map<String, Value>,
    #[serde(default)]
    issues: Vec<IssueHead>,
    #[serde(default)]
    meta: Option<MetaHead>,
    #[serde(default)]
    #[allow(dead_code)]
    trajectory: IgnoredAny,
}

#[derive(Deserialize, Default)]
struct MetaHead {
    #[serde(default)]
    harness: Option<HarnessMeta>,
}

#[derive(Deserialize, Default)]
struct HarnessMeta {
    #[serde(default)]
    telemetry: Map<String, Value>,
}

#[derive(Deserialize)]
struct IssueHead {
    #[serde(default)]
    code: String,
    #[serde(default)]
    severity: String,
}

/// The facts about one task a row, a filter or a comparison needs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskFacts {
    /// The task id (`task.json`, else the directory name).
    pub task_id: String,
    /// The task's category (`""` when none).
    pub category: String,
    /// How many attempts it has.
    pub attempts: usize,
    /// The final attempt's status (`running` while it runs).
    pub status: String,
    /// The final attempt's correctness: `metrics.correct`, else `reward >= 1`.
    pub correct: Option<bool>,
    /// The final attempt's `metrics.reward`.
    pub reward: Option<f64>,
    /// The final attempt's issues as (code, severity).
    pub issues: Vec<(String, String)>,
    /// The final attempt's duration, when its telemetry records one.
    pub duration_seconds: Option<f64>,
    /// The final attempt's numeric and boolean metrics, by id (a boolean is 0 or 1).
    pub metrics: Vec<(String, Observed)>,
    /// The final attempt's model tokens (prompt + completion), when its telemetry records them.
    pub tokens: Option<u64>,
}

/// A metric observation as a number: a boolean is 0 or 1 and marks the metric binary.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Observed {
    /// The value.
    pub value: f64,
    /// Whether it was a boolean (a binary metric).
    pub binary: bool,
}

impl Observed {
    /// The observation of a metric's JSON value (`None`: not a boolean or a finite number).
    pub fn of(value: &Value) -> Option<Observed> {
        match value {
            Value::Bool(b) => Some(Observed {
                value: f64::from(u8::from(*b)),
                binary: true,
            }),
            Value::Number(n) => n.as_f64().filter(|v| v.is_finite()).map(|value| Observed {
                value,
                binary: false,
            }),
            _ => None,
        }
    }
}

/// The metrics tried, in order, as a run's primary metric when its `metrics.json` (written when
/// the run ends) does not name the headline one.
pub const PRIMARY_FALLBACK: [&str; 3] = ["score", "reward", "correct"];

impl TaskFacts {
    /// The observation of the run's primary metric: `metric` when the run names it, else the
    /// first of [`PRIMARY_FALLBACK`] the task has.
    pub fn primary(&self, metric: Option<&str>) -> Option<(&str, Observed)> {
        let find = |id: &str| {
            self.metrics
                .iter()
                .find(|(m, _)| m == id)
                .map(|(m, o)| (m.as_str(), *o))
        };
        match metric {
            Some(id) => find(id),
            None => PRIMARY_FALLBACK.into_iter().find_map(find),
        }
    }
}

/// Reads a JSON file as `T` (`None` if missing or unparsable).
pub fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Option<T> {
    let file = File::open(path).ok()?;
    serde_json::from_reader(BufReader::new(file)).ok()
}

/// The attempt directory names of a task: from `task.json`'s `attempts`, else the
/// `attempt-N` directories present; sorted by number.
pub fn attempt_names(task_dir: &Path, attempts: Option<&Map<String, Value>>) -> Vec<String> {
    let mut names: Vec<String> = match attempts {
        Some(map) => map
            .values()
            .filter_map(Value::as_str)
            .filter(|n| is_plain_name(n))
            .map(str::to_string)
            .collect(),
        None => fs::read_dir(task_dir)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .filter_map(|e| e.file_name().into_string().ok())
                    .filter(|n| n.starts_with("attempt-"))
                    .collect()
            })
            .unwrap_or_default(),
    };
    names.sort_by_key(|n| attempt_number(n));
    names.dedup();
    names
}

fn attempt_number(name: &str) -> (u64, String) {
    let n = name
        .strip_prefix("attempt-")
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX);
    (n, name.to_string())
}

/// Whether a result's metrics say it is correct: `metrics.correct`, else `reward >= 1`.
pub fn correctness(metrics: &Map<String, Value>) -> Option<bool> {
    match metrics.get("correct") {
        Some(Value::Bool(b)) => return Some(*b),
        Some(Value::Number(n)) => return n.as_f64().map(|v| v >= 1.0),
        _ => {}
    }
    metrics
        .get("reward")
        .and_then(Value::as_f64)
        .map(|r| r >= 1.0)
}

/// Reads the facts of the task directory `dir` in `state` (named `name`).
pub fn read_facts(dir: &Path, state: State, name: &str) -> TaskFacts {
    let head: TaskHead = read_json(&dir.join("task.json")).unwrap_or_default();
    let attempts = attempt_names(dir, head.attempts.as_ref());
    let result: Option<ResultHead> = attempts
        .last()
        .and_then(|last| read_json(&dir.join(last).join("result.json")));
    let task_id = head.task_id.unwrap_or_else(|| {
        name.rsplit_once("--")
            .map_or(name, |(id, _)| id)
            .to_string()
    });
    let mut facts = TaskFacts {
        task_id,
        category: head.category.unwrap_or_default(),
        attempts: attempts.len(),
        status: String::new(),
        ..TaskFacts::default()
    };
    match (state, result) {
        (State::Running, _) => facts.status = "running".to_string(),
        (_, None) => facts.status = "unknown".to_string(),
        (_, Some(result)) => {
            facts.status = result.status.unwrap_or_else(|| "completed".to_string());
            facts.correct = correctness(&result.metrics);
            facts.reward = result.metrics.get("reward").and_then(Value::as_f64);
            facts.issues = result
                .issues
                .into_iter()
                .map(|i| (i.code, i.severity))
                .collect();
            facts.metrics = result
                .metrics
                .iter()
                .filter_map(|(id, v)| Observed::of(v).map(|o| (id.clone(), o)))
                .collect();
            let telemetry = result.meta.and_then(|m| m.harness).map(|h| h.telemetry);
            if let Some(telemetry) = telemetry {
                facts.duration_seconds = telemetry.get("duration_seconds").and_then(Value::as_f64);
                facts.tokens = tokens(&telemetry);
            }
        }
    }
    facts
}

/// Prompt plus completion tokens of a harness's `telemetry.model_usage` (`None` when it records
/// neither).
fn tokens(telemetry: &Map<String, Value>) -> Option<u64> {
    let usage = telemetry.get("model_usage")?;
    let count = |key: &str| usage.get(key).and_then(Value::as_u64);
    match (count("prompt_tokens"), count("completion_tokens")) {
        (None, None) => None,
        (p, c) => Some(p.unwrap_or(0).saturating_add(c.unwrap_or(0))),
    }
}

/// One task row of `/api/tasks`.
pub fn row_json(state: State, name: &str, facts: &TaskFacts) -> Value {
    let mut codes: Vec<&str> = facts.issues.iter().map(|(c, _)| c.as_str()).collect();
    codes.dedup();
    json!({
        "task_id": facts.task_id,
        "ref": format!("{}/{name}", state.as_str()),
        "state": state.as_str(),
        "status": facts.status,
        "category": facts.category,
        "correct": facts.correct,
        "reward": facts.reward,
        "issues": codes,
        "attempts": facts.attempts,
        "duration_seconds": facts.duration_seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn correctness_rules() {
        let m = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(correctness(&m(json!({"correct": true}))), Some(true));
        assert_eq!(
            correctness(&m(json!({"correct": false, "reward": 1}))),
            Some(false)
        );
        assert_eq!(correctness(&m(json!({"reward": 1.0}))), Some(true));
        assert_eq!(correctness(&m(json!({"reward": 0.5}))), Some(false));
        assert_eq!(correctness(&m(json!({}))), None);
    }

    #[test]
    fn facts_hold_metrics_duration_and_tokens() {
        let dir = tempfile::tempdir().unwrap();
        let task = dir.path().join("t--1");
        fs::create_dir_all(task.join("attempt-1")).unwrap();
        fs::write(
            task.join("attempt-1/result.json"),
            r#"{"status":"completed","metrics":{"correct":true,"reward":0.25,"note":"x"},
               "meta":{"harness":{"telemetry":{"duration_seconds":1.5,
               "model_usage":{"prompt_tokens":100,"completion_tokens":20}}}}}"#,
        )
        .unwrap();
        let facts = read_facts(&task, State::Normal, "t--1");
        assert_eq!(facts.duration_seconds, Some(1.5));
        assert_eq!(facts.tokens, Some(120));
        assert_eq!(facts.metrics.len(), 2);
        let (id, reward) = facts.primary(None).unwrap();
        assert_eq!((id, reward.value, reward.binary), ("reward", 0.25, false));
        let (_, correct) = facts.primary(Some("correct")).unwrap();
        assert_eq!((correct.value, correct.binary), (1.0, true));
        assert!(facts.primary(Some("missing")).is_none());
        assert_eq!(
            tokens(json!({"model_usage": {}}).as_object().unwrap()),
            None
        );
    }

    #[test]
    fn attempts_sorted_by_number() {
        let map = json!({"1": "attempt-1", "10": "attempt-10", "2": "attempt-2", "x": "../up"});
        let names = attempt_names(Path::new("/nonexistent"), map.as_object());
        assert_eq!(names, ["attempt-1", "attempt-2", "attempt-10"]);
    }
}
