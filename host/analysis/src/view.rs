//! Lenient, read-only views over JSON objects: each view names the fields it reads once
//! ([`json_view!`]) and answers every one as `Option<&Value>`, exactly as a lookup by key
//! would (a missing key or a non-object is `None`; a present `null` is `Some(Value::Null)`),
//! so callers keep their own type checks and Python truthiness rules. Also the view of an
//! attempt's persisted `result.json`.

use serde_json::Value;

/// Declares a view: a `Copy` struct over an optional JSON object with one accessor per
/// field, named as the key it reads, and `From<&Value>` / `From<&Map>` to build it (a
/// non-object value has no fields).
macro_rules! json_view {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident { $($(#[$fmeta:meta])* $field:ident),* $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy)]
        $vis struct $name<'a>(Option<&'a serde_json::Map<String, serde_json::Value>>);

        impl<'a> From<&'a serde_json::Value> for $name<'a> {
            fn from(value: &'a serde_json::Value) -> Self {
                $name(value.as_object())
            }
        }

        impl<'a> From<&'a serde_json::Map<String, serde_json::Value>> for $name<'a> {
            fn from(map: &'a serde_json::Map<String, serde_json::Value>) -> Self {
                $name(Some(map))
            }
        }

        impl<'a> $name<'a> {
            $(
                $(#[$fmeta])*
                $vis fn $field(&self) -> Option<&'a serde_json::Value> {
                    self.0?.get(stringify!($field))
                }
            )*
        }
    };
}
pub(crate) use json_view;

json_view! {
    /// An attempt's persisted `result.json`.
    pub(crate) struct AttemptResult {
        /// The ACTF trajectory.
        trajectory,
        /// The attempt's metrics (see [`AttemptResult::correct`]).
        metrics,
        /// The execution issues recorded on the attempt.
        issues,
        /// The attempt's artifacts.
        artifacts,
        /// The attempt's status.
        status,
    }
}

json_view! {
    /// The `metrics` object of an attempt result.
    struct Metrics {
        /// Whether the attempt was graded correct.
        correct,
    }
}

impl<'a> AttemptResult<'a> {
    /// `metrics.correct`, as written.
    pub(crate) fn correct(&self) -> Option<&'a Value> {
        Metrics::from(self.metrics()?).correct()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn views_answer_as_lookups_do() {
        let v = json!({"metrics": {"correct": null}, "status": 0});
        let r = AttemptResult::from(&v);
        assert_eq!(r.correct(), Some(&Value::Null));
        assert_eq!(r.status(), Some(&json!(0)));
        assert!(r.issues().is_none());
        for odd in [
            json!(null),
            json!([1]),
            json!("x"),
            json!({"metrics": [true]}),
        ] {
            assert!(AttemptResult::from(&odd).correct().is_none());
        }
    }
}
