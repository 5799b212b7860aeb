//! `--junit FILE`: JUnit XML (the `testsuites` form CI systems read) with one test suite per
//! run and one test case per published task: a task its headline metric does not count as
//! solved is a `failure`, one without a score an `error`, both with the attempt's first issue.
//! Serialised by `quick-junit` (nextest's writer: escaping, characters XML cannot hold dropped)
//! and written through a temporary file renamed into place.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentcompass_plugin_api::contracts::IssueSeverity;
use agentcompass_results::store::published_tasks;
use agentcompass_schema::metrics::{MetricKind, MetricReport, METRICS_FILE};
use agentcompass_schema::read_json;
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::metrics::{attempt_records, observation};

/// The headline metric of a run (`metrics.json`'s first series).
fn headline(run: &Path) -> (String, MetricKind) {
    read_json::<MetricReport>(&run.join(METRICS_FILE), METRICS_FILE)
        .ok()
        .and_then(|r| r.series.into_iter().next())
        .map(|s| (s.metric_id, s.kind))
        .unwrap_or(("correct".to_string(), MetricKind::BinarySuccess))
}

/// A non-success status with its message and type.
fn problem(kind: NonSuccessKind, message: String, ty: &str) -> TestCaseStatus {
    let mut status = TestCaseStatus::non_success(kind);
    status.set_message(message).set_type(ty);
    status
}

/// The test suite of one run: a case per published task.
fn suite(label: &str, run: &Path) -> TestSuite {
    let (metric, kind) = headline(run);
    let mut suite = TestSuite::new(label);
    let mut suite_time = Duration::ZERO;
    for task in published_tasks(run) {
        let records = attempt_records(&task.dir, &task.record);
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
        let status = if values.is_empty() {
            let (code, message) =
                first_issue.unwrap_or(("not_scored".into(), format!("no `{metric}` value")));
            problem(NonSuccessKind::Error, message, &code)
        } else {
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            let solved = match kind {
                MetricKind::BinarySuccess => mean >= 0.5,
                MetricKind::Scalar => mean >= 1.0,
            };
            if solved {
                TestCaseStatus::success()
            } else {
                let detail = first_issue.map_or(String::new(), |(_, m)| format!(" ({m})"));
                let message = format!("{metric} = {mean:.4}{detail}");
                problem(NonSuccessKind::Failure, message, "unsolved")
            }
        };
        let category = task.record.category_or_default();
        let took = task_duration(&task.dir, &task.record);
        suite_time += took;
        let mut case = TestCase::new(task.task_id.as_str(), status);
        case.set_classname(format!("{label}.{category}"))
            .set_time(took);
        suite.add_test_case(case);
    }
    suite.set_time(suite_time);
    suite
}

/// A task's time: its attempts' `meta.harness.telemetry.duration_seconds`, summed (zero when
/// none is recorded, as in runs written before the host recorded it).
fn task_duration(dir: &Path, record: &agentcompass_schema::task::TaskRecord) -> Duration {
    let seconds: f64 = record
        .valid_attempts()
        .into_iter()
        .filter_map(|(_, attempt)| {
            let path = dir
                .join(attempt)
                .join(agentcompass_schema::attempt::RESULT_FILE);
            let result: serde_json::Value = read_json(&path, "result.json").ok()?;
            result["meta"]["harness"]["telemetry"]["duration_seconds"].as_f64()
        })
        .filter(|s| s.is_finite() && *s >= 0.0)
        .sum();
    Duration::from_secs_f64(seconds)
}

/// Writes the JUnit XML of `runs` (`label`, run dir) to `path`.
pub fn write_junit(path: &Path, runs: &[(String, PathBuf)]) -> std::io::Result<()> {
    let mut report = Report::new("agentcompass-host");
    for (label, run) in runs {
        report.add_test_suite(suite(label, run));
    }
    let xml = report.to_string().map_err(std::io::Error::other)?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut temp = tempfile::NamedTempFile::new_in(&dir)?;
    std::io::Write::write_all(&mut temp, xml.as_bytes())?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
