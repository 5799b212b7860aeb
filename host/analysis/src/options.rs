//! Typed reads of an analyzer's merged options, and the outcome of an analyzer that had
//! nothing to look at.

use agentcompass_plugin_api::contracts::{json_type_name, AnalysisOutcome, JsonMap};
use agentcompass_plugin_api::{Error, Result};
use serde_json::{json, Value};

/// An analyzer's options (`defaults` with the run's `analysis_params[<id>]` merged over them).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Options<'a>(pub &'a JsonMap);

/// A number option: its value, and the JSON it was written as (echoed in messages and
/// details as upstream prints it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Number<'a> {
    /// The value.
    pub value: f64,
    /// The option as written (a JSON number).
    pub raw: &'a Value,
}

impl<'a> Options<'a> {
    /// The raw value of `key` (`None` when missing or `null`).
    pub(crate) fn get(&self, key: &str) -> Option<&'a Value> {
        self.0.get(key).filter(|v| !v.is_null())
    }

    /// Whether `key` is set to a truthy value (Python truthiness; missing is false).
    pub(crate) fn truthy(&self, key: &str) -> bool {
        self.get(key).is_some_and(crate::py::truthy)
    }

    /// A number option with the JSON it was written as, `None` when missing or `null`.
    pub(crate) fn number(&self, key: &str) -> Result<Option<Number<'a>>> {
        match self.get(key) {
            None => Ok(None),
            Some(raw) => raw
                .as_f64()
                .map(|value| Some(Number { value, raw }))
                .ok_or_else(|| wrong_type(key, "a number", raw)),
        }
    }

    /// A number option, `None` when missing or `null`.
    pub(crate) fn opt_f64(&self, key: &str) -> Result<Option<f64>> {
        Ok(self.number(key)?.map(|n| n.value))
    }

    /// A number option with a default.
    pub(crate) fn f64_or(&self, key: &str, default: f64) -> Result<f64> {
        Ok(self.opt_f64(key)?.unwrap_or(default))
    }

    /// A boolean option with a default.
    pub(crate) fn bool_or(&self, key: &str, default: bool) -> Result<bool> {
        match self.get(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(value) => Err(wrong_type(key, "a boolean", value)),
        }
    }

    /// A non-negative integer option with a default (a float is truncated, as `int()` does).
    pub(crate) fn usize_or(&self, key: &str, default: usize) -> Result<usize> {
        match self.get(key) {
            None => Ok(default),
            Some(value) => match value.as_f64() {
                Some(f) if f >= 0.0 => Ok(f as usize),
                _ => Err(wrong_type(key, "a non-negative number", value)),
            },
        }
    }
}

/// The error for an option of the wrong type.
fn wrong_type(key: &str, expected: &str, found: &Value) -> Error {
    Error::invalid_input(format!(
        "option `{key}`: expected {expected}, found {}",
        json_type_name(found)
    ))
}

/// The outcome of an analyzer that could not tell (`is_badcase: null`), saying why in
/// `details.skipped`.
pub(crate) fn skipped(why: &str) -> AnalysisOutcome {
    AnalysisOutcome {
        is_badcase: None,
        details: json!({ "skipped": why }),
        score: None,
        extra: None,
    }
}

/// Upstream's `is_threshold_badcase` with a numeric threshold, extended as its truncation
/// rule is: `value >= threshold > 0`, or any hit at all when the threshold is `0`.
pub(crate) fn ratio_badcase(ratio: f64, hits: usize, threshold: f64) -> bool {
    (threshold > 0.0 && ratio >= threshold) || (hits > 0 && threshold == 0.0)
}

/// The outcome of a ratio analyzer: bad by [`ratio_badcase`], scored by the ratio (to 4
/// digits), with its typed `details`.
pub(crate) fn ratio_outcome(
    ratio: f64,
    hits: usize,
    threshold: f64,
    details: impl serde::Serialize,
) -> AnalysisOutcome {
    AnalysisOutcome {
        is_badcase: Some(ratio_badcase(ratio, hits, threshold)),
        details: json!(details),
        score: Some(crate::py::round(ratio, 4)),
        extra: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_reads() {
        let map = json!({"a": 1, "b": "x", "c": null, "d": true, "e": -1})
            .as_object()
            .cloned()
            .unwrap();
        let o = Options(&map);
        assert_eq!(o.f64_or("a", 0.0).unwrap(), 1.0);
        assert_eq!(o.f64_or("c", 2.0).unwrap(), 2.0);
        assert_eq!(o.f64_or("zz", 3.0).unwrap(), 3.0);
        assert_eq!(
            o.f64_or("b", 0.0).unwrap_err().message,
            "option `b`: expected a number, found string"
        );
        assert!(o.bool_or("d", false).unwrap());
        assert!(o.bool_or("a", false).is_err());
        assert!(o.usize_or("e", 1).is_err());
        assert_eq!(o.usize_or("a", 9).unwrap(), 1);
    }

    #[test]
    fn threshold_rule() {
        assert!(ratio_badcase(0.1, 1, 0.0));
        assert!(!ratio_badcase(0.0, 0, 0.0));
        assert!(!ratio_badcase(0.1, 1, 0.2));
        assert!(ratio_badcase(0.2, 1, 0.2));
        assert!(!ratio_badcase(0.5, 3, -1.0));
    }
}
