//! Reading a verifier's reward files (Harbor's convention, `verifier/verifier.py`).
//!
//! `reward.json` (a flat map of name → finite number) wins when both files exist; otherwise
//! `reward.txt` holds a single number, exposed as key `reward`. A missing or empty file and a
//! value that is not a finite number are errors. The exit code of the test command is not the
//! reward.

use std::collections::BTreeMap;

use crate::contracts::MetricValue;

/// The multi-metric reward file's name.
pub const REWARD_JSON_NAME: &str = "reward.json";
/// The single-number reward file's name.
pub const REWARD_TXT_NAME: &str = "reward.txt";
/// The key of the primary reward.
pub const REWARD_KEY: &str = "reward";

/// Why no reward could be read: a machine-readable code and a one-line message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewardError {
    /// `reward_file_missing`, `reward_file_empty` or `reward_parse_error`.
    pub code: &'static str,
    /// What went wrong, naming the file.
    pub message: String,
}

impl RewardError {
    fn parse(path: &str, message: impl std::fmt::Display) -> Self {
        RewardError {
            code: "reward_parse_error",
            message: format!("{path}: {message}"),
        }
    }

    fn empty(path: &str) -> Self {
        RewardError {
            code: "reward_file_empty",
            message: format!("{path} is empty"),
        }
    }
}

/// The rewards of one evaluation and the file they came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Rewards {
    /// Reward values by name.
    pub values: BTreeMap<String, f64>,
    /// The path of the file read.
    pub source: String,
}

impl Rewards {
    /// Key `reward`, else the only key, else the mean of all values (kept for plugins that
    /// read it; the metrics use [`Rewards::headline`], which never averages keys).
    pub fn primary(&self) -> f64 {
        self.headline().unwrap_or_else(|| {
            let count = self.values.len().max(1) as f64;
            self.values.values().sum::<f64>() / count
        })
    }

    /// The headline reward, Harbor's rule: key `reward`, else the only key; `None` for
    /// several keys without `reward` — each is reported on its own, never as their mean.
    pub fn headline(&self) -> Option<f64> {
        match (self.values.get(REWARD_KEY), self.values.len()) {
            (Some(value), _) => Some(*value),
            (None, 1) => self.values.values().next().copied(),
            _ => None,
        }
    }

    /// The metrics: `reward` (the headline reward) and `correct` (`reward >= 1`); none for
    /// several keys without `reward` (each key is the run's metric then, as Harbor reports it).
    pub fn metrics(&self) -> BTreeMap<String, MetricValue> {
        let mut metrics = BTreeMap::new();
        if let Some(headline) = self.headline() {
            metrics.insert(REWARD_KEY.into(), MetricValue::from(headline));
            metrics.insert("correct".into(), MetricValue::from(headline >= 1.0));
        }
        metrics
    }
}

/// Shortens a file's content for an error message.
fn excerpt(text: &str) -> String {
    const MAX: usize = 80;
    let trimmed = text.trim();
    let shown: String = trimmed.chars().take(MAX).collect();
    if trimmed.chars().count() > MAX {
        format!("{shown:?}...")
    } else {
        format!("{shown:?}")
    }
}

/// Parses the `reward.json` at `path`: a non-empty flat object of finite numbers.
pub fn parse_json(text: &str, path: &str) -> Result<BTreeMap<String, f64>, RewardError> {
    if text.trim().is_empty() {
        return Err(RewardError::empty(path));
    }
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        RewardError::parse(
            path,
            format!("expected a JSON object, found invalid JSON ({e})"),
        )
    })?;
    let serde_json::Value::Object(map) = value else {
        return Err(RewardError::parse(
            path,
            format!(
                "expected a JSON object of name → number, found {}",
                excerpt(text)
            ),
        ));
    };
    if map.is_empty() {
        return Err(RewardError::parse(
            path,
            "expected at least one reward, found an empty object",
        ));
    }
    map.iter()
        .map(|(name, value)| match value.as_f64() {
            Some(number) if value.is_number() && number.is_finite() => Ok((name.clone(), number)),
            _ => Err(RewardError::parse(
                path,
                format!("reward \"{name}\": expected a finite number, found {value}"),
            )),
        })
        .collect()
}

/// Parses the `reward.txt` at `path`: one finite number (surrounding whitespace allowed).
pub fn parse_txt(text: &str, path: &str) -> Result<f64, RewardError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(RewardError::empty(path));
    }
    match trimmed.parse::<f64>() {
        Ok(value) if value.is_finite() => Ok(value),
        _ => Err(RewardError::parse(
            path,
            format!(
                "expected a single finite number, found {}",
                excerpt(trimmed)
            ),
        )),
    }
}

/// The rewards from the contents of the files at `json_path` and `txt_path` (`None`: the
/// file does not exist).
pub fn from_files(
    json: Option<&str>,
    txt: Option<&str>,
    json_path: &str,
    txt_path: &str,
) -> Result<Rewards, RewardError> {
    match (json, txt) {
        (Some(json), _) => Ok(Rewards {
            values: parse_json(json, json_path)?,
            source: json_path.to_string(),
        }),
        (None, Some(txt)) => Ok(Rewards {
            values: BTreeMap::from([(REWARD_KEY.to_string(), parse_txt(txt, txt_path)?)]),
            source: txt_path.to_string(),
        }),
        (None, None) => Err(RewardError {
            code: "reward_file_missing",
            message: format!(
                "the verifier wrote no reward file (expected {json_path} or {txt_path})"
            ),
        }),
    }
}
