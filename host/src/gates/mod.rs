//! CI gates over finished runs: `--fail-under METRIC=VALUE` (a series below a threshold),
//! `--baseline RUN_DIR --max-regression DELTA` (significantly worse than a baseline by
//! `compare`'s paired test) and `--junit FILE` (one test case per task for CI systems).

mod junit;

use std::path::{Path, PathBuf};

use agentcompass_schema::metrics::{find_series, MetricReport, METRICS_FILE};
use agentcompass_schema::read_json;
use agentcompass_schema::run_info::RUN_INFO_FILE;

pub use junit::write_junit;

use crate::compare::compare;

/// One `--fail-under METRIC=VALUE`.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// A series id (`correct.avg@2`) or a metric id (its first series).
    pub metric: String,
    /// The lowest passing value.
    pub value: f64,
}

/// Why a gate is refused or cannot be checked (one line naming the flag's value or file).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GateError {
    /// A `--fail-under` value of another shape.
    #[error("expected {expected}, found `{found}`")]
    Threshold {
        /// What the flag takes.
        expected: &'static str,
        /// What was given.
        found: String,
    },
    /// A flag names a path that is not what it should be.
    #[error("{flag} {}: expected {expected}", path.display())]
    Path {
        /// `--baseline` or `--junit`.
        flag: &'static str,
        /// The path given.
        path: PathBuf,
        /// What it should be.
        expected: &'static str,
    },
    /// A run has no readable `metrics.json`.
    #[error("{}: no readable metrics", .0.display())]
    NoMetrics(PathBuf),
    /// A `--fail-under` names a metric the benchmark does not declare (found before the run).
    #[error("--fail-under {metric}={value}: benchmark `{benchmark}` declares no metric `{metric}`{hint} (it declares: {})", declared.join(", "))]
    Undeclared {
        /// The metric or series id given.
        metric: String,
        /// The threshold given, as written.
        value: String,
        /// The benchmark.
        benchmark: String,
        /// Its declared metric ids.
        declared: Vec<String>,
        /// ` (did you mean `x`?)` or empty.
        hint: String,
    },
    /// The gate names a metric the run does not have.
    #[error("the run has no metric `{metric}` (its series: {})", series.join(", "))]
    UnknownMetric {
        /// The metric asked for.
        metric: String,
        /// The run's series ids.
        series: Vec<String>,
    },
}

impl std::str::FromStr for Threshold {
    type Err = GateError;

    fn from_str(text: &str) -> Result<Self, GateError> {
        let refused = |expected, found: &str| GateError::Threshold {
            expected,
            found: found.to_string(),
        };
        let (metric, value) = text
            .split_once('=')
            .ok_or_else(|| refused("METRIC=VALUE (for example correct=0.8)", text))?;
        let value: f64 = value
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| refused("a number after `=`", value))?;
        let metric = metric.trim();
        if metric.is_empty() {
            return Err(refused("a metric id before `=`", text));
        }
        Ok(Threshold {
            metric: metric.to_string(),
            value,
        })
    }
}

/// The gates of one `run` or `launch`.
#[derive(Debug, Clone, Default)]
pub struct Gates {
    /// `--fail-under`.
    pub fail_under: Vec<Threshold>,
    /// `--baseline`.
    pub baseline: Option<PathBuf>,
    /// `--max-regression` (0: any significant drop fails).
    pub max_regression: f64,
    /// `--junit`.
    pub junit: Option<PathBuf>,
}

/// What the gates found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    /// One line per gate checked.
    pub lines: Vec<String>,
    /// Some gate failed (exit 3).
    pub failed: bool,
    /// A gate could not be checked (bad input: an unknown metric, an unreadable baseline).
    pub error: Option<String>,
}

impl Gates {
    /// Whether any gate is set.
    pub fn any(&self) -> bool {
        !self.fail_under.is_empty() || self.baseline.is_some() || self.junit.is_some()
    }

    /// Refuses, before anything runs, a baseline that is not a run directory and a JUnit file
    /// whose directory does not exist.
    pub fn validate(&self) -> Result<(), GateError> {
        if let Some(baseline) = &self.baseline {
            if !baseline.join(RUN_INFO_FILE).is_file() {
                return Err(GateError::Path {
                    flag: "--baseline",
                    path: baseline.clone(),
                    expected: "a run directory (holding run_info.json), found none",
                });
            }
        }
        if let Some(junit) = &self.junit {
            let dir = junit.parent().filter(|p| !p.as_os_str().is_empty());
            if dir.is_some_and(|d| !d.is_dir()) || junit.is_dir() {
                return Err(GateError::Path {
                    flag: "--junit",
                    path: junit.clone(),
                    expected: "a file in an existing directory",
                });
            }
        }
        Ok(())
    }

    /// Refuses, before any task runs, a `--fail-under` whose metric `benchmark` does not
    /// declare: `METRIC` must be a declared metric id, or a series of one (`correct.avg@2`).
    pub fn check_declared(&self, benchmark: &str, declared: &[String]) -> Result<(), GateError> {
        for threshold in &self.fail_under {
            let metric = threshold.metric.as_str();
            let known = declared.iter().any(|id| {
                metric == id
                    || metric
                        .strip_prefix(id.as_str())
                        .is_some_and(|rest| rest.starts_with('.'))
            });
            if known {
                continue;
            }
            let ids: Vec<&str> = declared.iter().map(String::as_str).collect();
            let base = metric.split('.').next().unwrap_or(metric);
            let hint = crate::config::nearest_key(base, &ids)
                .map(|near| format!(" (did you mean `{near}`?)"))
                .unwrap_or_default();
            return Err(GateError::Undeclared {
                metric: metric.to_string(),
                value: threshold.value.to_string(),
                benchmark: benchmark.to_string(),
                declared: declared.to_vec(),
                hint,
            });
        }
        Ok(())
    }

    /// Checks the thresholds and the baseline against each finished run (name, run dir).
    pub fn check(&self, runs: &[(String, PathBuf)]) -> Verdict {
        let mut verdict = Verdict::default();
        for (name, run) in runs {
            let label = format!("{name}: ");
            for threshold in &self.fail_under {
                match threshold_value(run, &threshold.metric) {
                    Ok((series, value)) => {
                        let below = value.is_none_or(|v| v < threshold.value);
                        verdict.failed |= below;
                        verdict.lines.push(format!(
                            "{label}gate --fail-under {}={}: {series} = {} — {}",
                            threshold.metric,
                            threshold.value,
                            value.map_or("unavailable".to_string(), |v| format!("{v:.4}")),
                            if below { "FAILED" } else { "passed" }
                        ));
                    }
                    Err(e) => verdict.error = Some(format!("{label}--fail-under: {e}")),
                }
            }
            if let Some(baseline) = &self.baseline {
                match compare(baseline, run, None) {
                    Ok(c) => {
                        let worse = c.significantly_worse(self.max_regression);
                        verdict.failed |= worse;
                        let interval = c.interval.map_or(String::new(), |i| {
                            format!(", 95% CI [{:+.4}, {:+.4}]", i.low, i.high)
                        });
                        verdict.lines.push(format!(
                            "{label}gate --baseline {} --max-regression {}: {} {:+.4} on {} shared tasks{interval} — {}",
                            baseline.display(),
                            self.max_regression,
                            c.metric,
                            c.difference.unwrap_or(0.0),
                            c.shared,
                            if worse { "FAILED (significantly worse)" } else { "passed" }
                        ));
                    }
                    Err(e) => verdict.error = Some(format!("{label}--baseline: {e}")),
                }
            }
        }
        verdict
    }
}

/// The value of `metric` (a series id, or a metric id: its first series) in a run's
/// `metrics.json`.
fn threshold_value(run: &Path, metric: &str) -> Result<(String, Option<f64>), GateError> {
    let path = run.join(METRICS_FILE);
    let report: MetricReport =
        read_json(&path, METRICS_FILE).map_err(|_| GateError::NoMetrics(path))?;
    match find_series(&report, metric) {
        Some(s) => Ok((s.series_id.clone(), s.value)),
        None => Err(GateError::UnknownMetric {
            metric: metric.to_string(),
            series: report.series.iter().map(|s| s.series_id.clone()).collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_parse_or_say_what_was_expected() {
        assert_eq!(
            "correct.avg@2=0.75".parse::<Threshold>(),
            Ok(Threshold {
                metric: "correct.avg@2".into(),
                value: 0.75
            })
        );
        let refused = |text: &str| text.parse::<Threshold>().unwrap_err().to_string();
        assert_eq!(
            refused("correct"),
            "expected METRIC=VALUE (for example correct=0.8), found `correct`"
        );
        assert_eq!(
            refused("correct=high"),
            "expected a number after `=`, found `high`"
        );
        assert_eq!(refused("=1"), "expected a metric id before `=`, found `=1`");
    }

    #[test]
    fn thresholds_must_name_a_declared_metric_or_one_of_its_series() {
        let gates = |metric: &str| Gates {
            fail_under: vec![Threshold {
                metric: metric.into(),
                value: 0.8,
            }],
            ..Gates::default()
        };
        let declared = ["correct".to_string(), "reward".to_string()];
        for ok in ["correct", "reward", "correct.avg@2", "reward.native@1"] {
            assert_eq!(gates(ok).check_declared("qa", &declared), Ok(()), "{ok}");
        }
        assert_eq!(
            gates("corect")
                .check_declared("qa", &declared)
                .unwrap_err()
                .to_string(),
            "--fail-under corect=0.8: benchmark `qa` declares no metric `corect` (did you mean \
             `correct`?) (it declares: correct, reward)"
        );
        assert_eq!(
            gates("accuracy.avg@1")
                .check_declared("qa", &declared)
                .unwrap_err()
                .to_string(),
            "--fail-under accuracy.avg@1=0.8: benchmark `qa` declares no metric \
             `accuracy.avg@1` (it declares: correct, reward)"
        );
        assert!(gates("correctness")
            .check_declared("qa", &declared)
            .is_err());
    }
}
