//! What a run of the contract found.

use std::fmt;
use std::time::Duration;

/// The result of one check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every expectation held.
    Passed,
    /// Not run ([`super::ContractOptions::skip`]).
    Skipped,
    /// The first expectation that did not hold, with what was observed.
    Failed(String),
}

/// One check and its result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckOutcome {
    /// The check's name (or `setup` / `options` for a problem before the checks).
    pub check: &'static str,
    /// Its result.
    pub outcome: Outcome,
    /// How long it took (sessions opened and closed included).
    pub elapsed: Duration,
}

/// Every check run against one provider, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContractReport {
    /// The provider's id.
    pub provider: String,
    /// The checks, in the order they ran.
    pub checks: Vec<CheckOutcome>,
}

impl ContractReport {
    pub(super) fn push(&mut self, check: &'static str, outcome: Outcome, elapsed: Duration) {
        self.checks.push(CheckOutcome {
            check,
            outcome,
            elapsed,
        });
    }

    /// How many checks passed.
    pub fn passed(&self) -> usize {
        self.count(|o| *o == Outcome::Passed)
    }

    /// How many checks were skipped.
    pub fn skipped(&self) -> usize {
        self.count(|o| *o == Outcome::Skipped)
    }

    /// The failed checks, with what they observed.
    pub fn failures(&self) -> impl Iterator<Item = (&'static str, &str)> + '_ {
        self.checks.iter().filter_map(|c| match &c.outcome {
            Outcome::Failed(why) => Some((c.check, why.as_str())),
            _ => None,
        })
    }

    fn count(&self, matches: impl Fn(&Outcome) -> bool) -> usize {
        self.checks.iter().filter(|c| matches(&c.outcome)).count()
    }

    pub(super) fn into_result(self) -> Result<ContractReport, ContractFailure> {
        if self.failures().next().is_none() {
            Ok(self)
        } else {
            Err(ContractFailure(self))
        }
    }
}

impl fmt::Display for ContractReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for check in &self.checks {
            let seconds = check.elapsed.as_secs_f64();
            match &check.outcome {
                Outcome::Passed => writeln!(f, "  ok    {} ({seconds:.2}s)", check.check)?,
                Outcome::Skipped => writeln!(f, "  skip  {}", check.check)?,
                Outcome::Failed(why) => writeln!(f, "  FAIL  {}: {why}", check.check)?,
            }
        }
        Ok(())
    }
}

/// A run of the contract in which at least one check failed (its `Debug` is the readable
/// report, so `.unwrap()` in a test shows every failure).
#[derive(Clone, PartialEq, Eq)]
pub struct ContractFailure(pub ContractReport);

impl fmt::Display for ContractFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let report = &self.0;
        let failed = report.failures().count();
        writeln!(
            f,
            "environment `{}`: {failed} of {} contract checks failed:",
            report.provider,
            report.checks.len()
        )?;
        write!(f, "{report}")
    }
}

impl fmt::Debug for ContractFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for ContractFailure {}
