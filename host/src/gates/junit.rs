//! `--junit FILE`: JUnit XML (the `testsuites` form CI systems read) with one test suite per
//! run and one test case per published task: a task its headline metric does not count as
//! solved is a `failure`, one without a score an `error`, both with the attempt's first issue.
//! Written through a temporary file renamed into place.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use agentcompass_plugin_api::contracts::{IssueSeverity, MetricKind};
use agentcompass_results::store::published_tasks;

use crate::metrics::{attempt_records, observation};

/// One task's verdict.
enum Case {
    Passed,
    Failure(String),
    Error(String, String),
}

/// XML 1.0 text: markup characters escaped, characters XML cannot hold dropped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

/// The headline metric of a run (`metrics.json`'s first series).
fn headline(run: &Path) -> (String, MetricKind) {
    std::fs::read_to_string(run.join("metrics.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|r| {
            let s = r["series"].get(0)?.clone();
            Some((
                s["metric_id"].as_str()?.to_string(),
                serde_json::from_value(s["kind"].clone()).ok()?,
            ))
        })
        .unwrap_or(("correct".to_string(), MetricKind::BinarySuccess))
}

/// Writes the test suite of one run into `out`; returns (tests, failures, errors).
fn suite(out: &mut String, label: &str, run: &Path) -> (u64, u64, u64) {
    let (metric, kind) = headline(run);
    let mut cases = String::new();
    let (mut tests, mut failures, mut errors) = (0, 0, 0);
    for task in published_tasks(run) {
        let records = attempt_records(&task.dir, &task.task_json["attempts"]);
        let outcomes: Vec<_> = records.iter().map(|r| r.outcome()).collect();
        let values: Vec<f64> = outcomes
            .iter()
            .filter_map(|o| observation(o, &metric, kind))
            .collect();
        let first_issue = records
            .iter()
            .flat_map(|r| r.issues.iter())
            .filter(|i| i.severity >= IssueSeverity::Error)
            .map(|i| (i.code.clone(), format!("{}: {}", i.code, i.message)))
            .next();
        let case = if values.is_empty() {
            let (code, message) =
                first_issue.unwrap_or(("not_scored".into(), format!("no `{metric}` value")));
            Case::Error(code, message)
        } else {
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            let solved = match kind {
                MetricKind::BinarySuccess => mean >= 0.5,
                MetricKind::Scalar => mean >= 1.0,
            };
            if solved {
                Case::Passed
            } else {
                let detail = first_issue.map_or(String::new(), |(_, m)| format!(" ({m})"));
                Case::Failure(format!("{metric} = {mean:.4}{detail}"))
            }
        };
        tests += 1;
        let category = task.task_json["category"].as_str().unwrap_or("default");
        let _ = write!(
            cases,
            "    <testcase name=\"{}\" classname=\"{}\" time=\"0\">",
            escape(&task.task_id),
            escape(&format!("{label}.{category}"))
        );
        match case {
            Case::Passed => {}
            Case::Failure(message) => {
                failures += 1;
                let _ = write!(
                    cases,
                    "\n      <failure message=\"{}\" type=\"unsolved\"/>\n    ",
                    escape(&message)
                );
            }
            Case::Error(code, message) => {
                errors += 1;
                let _ = write!(
                    cases,
                    "\n      <error message=\"{}\" type=\"{}\"/>\n    ",
                    escape(&message),
                    escape(&code)
                );
            }
        }
        cases.push_str("</testcase>\n");
    }
    let _ = write!(
        out,
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\" time=\"0\">\n{cases}  </testsuite>\n",
        escape(label)
    );
    (tests, failures, errors)
}

/// Writes the JUnit XML of `runs` (`label`, run dir) to `path`.
pub fn write_junit(path: &Path, runs: &[(String, PathBuf)]) -> std::io::Result<()> {
    let mut suites = String::new();
    let (mut tests, mut failures, mut errors) = (0, 0, 0);
    for (label, run) in runs {
        let (t, f, e) = suite(&mut suites, label, run);
        tests += t;
        failures += f;
        errors += e;
    }
    let xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"agentcompass-host\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\">\n{suites}</testsuites>\n"
    );
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut temp = tempfile::NamedTempFile::new_in(&dir)?;
    std::io::Write::write_all(&mut temp, xml.as_bytes())?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn text_is_escaped_and_control_characters_dropped() {
        assert_eq!(
            escape("a<b>&\"c'\u{1}\td"),
            "a&lt;b&gt;&amp;&quot;c&apos;\td"
        );
    }
}
