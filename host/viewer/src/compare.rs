//! Comparing two runs task by task (matched by task id): which tasks a change fixed or broke,
//! and the accuracy per category on each side.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::index::RunIndex;

/// How a task changed from run A to run B.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    /// Wrong in A, right in B.
    Fixed,
    /// Right in A, wrong in B.
    Broken,
    /// Only in A.
    OnlyA,
    /// Only in B.
    OnlyB,
    /// Wrong (or not evaluated) in both.
    BothWrong,
    /// Right in both.
    BothRight,
}

impl Change {
    /// The change's name in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Fixed => "fixed",
            Change::Broken => "broken",
            Change::OnlyA => "only_a",
            Change::OnlyB => "only_b",
            Change::BothWrong => "both_wrong",
            Change::BothRight => "both_right",
        }
    }

    /// The change of a task correct (`Some(true)`), wrong or not evaluated in each run
    /// (outer `None`: not in that run).
    pub fn of(a: Option<Option<bool>>, b: Option<Option<bool>>) -> Change {
        match (a, b) {
            (Some(_), None) => Change::OnlyA,
            (None, _) => Change::OnlyB,
            (Some(a), Some(b)) => match (a == Some(true), b == Some(true)) {
                (false, true) => Change::Fixed,
                (true, false) => Change::Broken,
                (true, true) => Change::BothRight,
                (false, false) => Change::BothWrong,
            },
        }
    }
}

/// One compared task.
#[derive(Debug, Clone, PartialEq)]
pub struct Compared {
    /// The task id.
    pub task_id: String,
    /// Correctness in A (outer `None`: not in A).
    pub a: Option<Option<bool>>,
    /// Correctness in B.
    pub b: Option<Option<bool>>,
    /// The change.
    pub change: Change,
}

fn facts(index: &RunIndex) -> BTreeMap<&str, (Option<bool>, &str)> {
    index
        .entries()
        .iter()
        .map(|e| {
            let correct = match e.correct {
                1 => Some(true),
                0 => Some(false),
                _ => None,
            };
            (index.task_id(e), (correct, index.category(e)))
        })
        .collect()
}

/// The comparison of `a` and `b`: every task (changes first: fixed, broken, only in A, only
/// in B, both wrong, both right; by task id within), and the per-category accuracies.
pub fn compare(a: &RunIndex, b: &RunIndex) -> (Vec<Compared>, Vec<Value>) {
    let fa = facts(a);
    let fb = facts(b);
    let mut tasks = Vec::new();
    // category -> (a right, a total, b right, b total)
    let mut cats: BTreeMap<&str, (u64, u64, u64, u64)> = BTreeMap::new();
    for (id, (correct, category)) in &fa {
        let c = cats.entry(category).or_default();
        c.1 += 1;
        c.0 += u64::from(*correct == Some(true));
        let other = fb.get(id).map(|(c, _)| *c);
        tasks.push(Compared {
            task_id: id.to_string(),
            a: Some(*correct),
            b: other,
            change: Change::of(Some(*correct), other),
        });
    }
    for (id, (correct, category)) in &fb {
        let c = cats.entry(category).or_default();
        c.3 += 1;
        c.2 += u64::from(*correct == Some(true));
        if !fa.contains_key(id) {
            tasks.push(Compared {
                task_id: id.to_string(),
                a: None,
                b: Some(*correct),
                change: Change::OnlyB,
            });
        }
    }
    tasks.sort_by(|x, y| (x.change, &x.task_id).cmp(&(y.change, &y.task_id)));
    let ratio = |right: u64, total: u64| (total > 0).then(|| right as f64 / total as f64);
    let categories = cats
        .into_iter()
        .map(|(category, (ar, at, br, bt))| {
            let (a, b) = (ratio(ar, at), ratio(br, bt));
            let delta = a.zip(b).map(|(a, b)| b - a);
            json!({"category": category, "a": a, "b": b, "delta": delta})
        })
        .collect();
    (tasks, categories)
}

/// The counts of each change.
pub fn counts(tasks: &[Compared]) -> Value {
    let n = |c: Change| tasks.iter().filter(|t| t.change == c).count();
    json!({
        "fixed": n(Change::Fixed),
        "broken": n(Change::Broken),
        "both_right": n(Change::BothRight),
        "both_wrong": n(Change::BothWrong),
        "only_a": n(Change::OnlyA),
        "only_b": n(Change::OnlyB),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::RunIndex;

    use crate::index::write_correct_task as task;

    #[test]
    fn changes_and_categories() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        task(a.path(), "t1", "x", false);
        task(b.path(), "t1", "x", true);
        task(a.path(), "t2", "x", true);
        task(b.path(), "t2", "x", false);
        task(a.path(), "t3", "y", true);
        task(b.path(), "t3", "y", true);
        task(a.path(), "t4", "y", false);
        task(b.path(), "t4", "y", false);
        task(a.path(), "t5", "y", true);
        task(b.path(), "t6", "y", true);
        let (tasks, cats) = compare(&RunIndex::build(a.path()), &RunIndex::build(b.path()));
        let order: Vec<(&str, &str)> = tasks
            .iter()
            .map(|t| (t.task_id.as_str(), t.change.as_str()))
            .collect();
        assert_eq!(
            order,
            [
                ("t1", "fixed"),
                ("t2", "broken"),
                ("t5", "only_a"),
                ("t6", "only_b"),
                ("t4", "both_wrong"),
                ("t3", "both_right")
            ]
        );
        let c = counts(&tasks);
        assert_eq!(c["fixed"], 1);
        assert_eq!(c["only_b"], 1);
        assert_eq!(
            cats[0],
            json!({"category": "x", "a": 0.5, "b": 0.5, "delta": 0.0})
        );
        assert_eq!(cats[1]["a"], json!(2.0 / 3.0));
        assert_eq!(Change::of(Some(None), Some(Some(true))), Change::Fixed);
    }
}
