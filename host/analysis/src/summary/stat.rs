//! The counts of one category × analyzer cell of the summary tables.

/// Counts of one category × analyzer cell.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Stat {
    /// Tasks counted.
    pub(super) total: u64,
    /// Tasks with a truthy `is_badcase`.
    pub(super) badcase: u64,
    /// Tasks with a truthy `error`.
    pub(super) error: u64,
    /// Whether any task answered `is_badcase` (not `null`).
    pub(super) has_badcase_field: bool,
    /// The sum of the numeric scores.
    pub(super) score_sum: f64,
    /// How many tasks had a numeric score.
    pub(super) score_count: u64,
}

impl Stat {
    /// The share of bad cases (`0` without tasks).
    pub(super) fn ratio(&self) -> f64 {
        if self.total > 0 {
            self.badcase as f64 / self.total as f64
        } else {
            0.0
        }
    }

    /// The mean score, `None` without scores.
    pub(super) fn avg_score(&self) -> Option<f64> {
        (self.score_count > 0).then(|| self.score_sum / self.score_count as f64)
    }

    /// Whether a per-category row is shown: statistics-only analyzers always, others when
    /// they found a bad case or an error.
    pub(super) fn shown(&self) -> bool {
        !self.has_badcase_field || self.badcase > 0 || self.error > 0
    }

    /// Counts one task: bad case or not, error or not, its score if any.
    pub(super) fn count(&mut self, badcase: bool, error: bool, score: Option<f64>) {
        self.total += 1;
        self.badcase += u64::from(badcase);
        self.error += u64::from(error);
        if let Some(score) = score {
            self.score_sum += score;
            self.score_count += 1;
        }
    }
}
