//! Choosing the analyzers of a run and running them over one attempt (upstream's
//! `analyze_task`): candidates are the allow-list, else every analyzer enabled by default
//! minus the excluded ones; per attempt, those whose `datasets` name another benchmark, or
//! whose `only_incorrect` option is set while the attempt is not incorrect, drop out; then in
//! each family the highest priority wins (the first on a tie).

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use agentcompass_plugin_api::contracts::{
    json_type_name, AnalysisInput, AnalysisOutcome, AnalyzerInfo, ComponentInfo, JsonMap,
};
use agentcompass_plugin_api::sdk::Analyzer;
use agentcompass_plugin_api::Error;
use serde_json::{json, Value};

use crate::options::Options;
use crate::params::{AnalysisParams, ParamsError};
use crate::py::{num, truthy};
use crate::view::AttemptResult;

/// One analyzer that may run.
struct Candidate {
    id: String,
    family: String,
    priority: i32,
    datasets: Vec<String>,
    options: JsonMap,
    analyzer: Arc<dyn Analyzer>,
}

/// The analyzers of a run, ready to analyze attempts.
pub struct Analysis {
    candidates: Vec<Candidate>,
}

impl std::fmt::Debug for Analysis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Analysis")
            .field("candidates", &self.candidate_ids())
            .finish()
    }
}

/// Whether an override may replace a default: the same JSON type (any two numbers).
fn same_type(default: &Value, value: &Value) -> bool {
    matches!(
        (default, value),
        (Value::Number(_), Value::Number(_))
            | (Value::Bool(_), Value::Bool(_))
            | (Value::String(_), Value::String(_))
            | (Value::Array(_), Value::Array(_))
            | (Value::Object(_), Value::Object(_))
    )
}

/// The JSON type of a default, for a message.
fn type_phrase(value: &Value) -> &'static str {
    match value {
        Value::Number(_) => "a number",
        Value::Bool(_) => "a boolean",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
        Value::Null => "null",
    }
}

impl Analysis {
    /// The candidates among `analyzers` (built-ins and plugin ones, in order) under
    /// `params`. An option override whose type differs from its non-null default (a string
    /// for a numeric threshold) is an error naming `analysis_params.<Id>.<option>`.
    pub fn new(
        analyzers: Vec<(ComponentInfo, Arc<dyn Analyzer>)>,
        params: &AnalysisParams,
    ) -> Result<Analysis, ParamsError> {
        let mut candidates = Vec::new();
        for (info, analyzer) in analyzers {
            let traits = info.analyzer.clone().unwrap_or_else(AnalyzerInfo::default);
            let overrides = params.options.get(&info.id);
            if let Some(overrides) = overrides {
                for (key, value) in overrides {
                    if let Some(default) = traits.defaults.get(key).filter(|d| !d.is_null()) {
                        if !same_type(default, value) {
                            return Err(ParamsError::new(
                                format!("analysis_params.{}.{key}", info.id),
                                type_phrase(default),
                                json_type_name(value),
                            ));
                        }
                    }
                }
            }
            let selected = match &params.analyzers {
                Some(allowed) => allowed.contains(&info.id),
                None => traits.enabled_by_default && !params.exclude_analyzers.contains(&info.id),
            };
            if !selected {
                continue;
            }
            let mut options = traits.defaults.clone();
            if let Some(overrides) = overrides {
                options.extend(overrides.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            candidates.push(Candidate {
                family: traits.family.clone().unwrap_or_else(|| info.id.clone()),
                id: info.id,
                priority: traits.priority,
                datasets: traits.datasets,
                options,
                analyzer,
            });
        }
        Ok(Analysis { candidates })
    }

    /// The ids of the analyzers that may run, in order.
    pub fn candidate_ids(&self) -> Vec<&str> {
        self.candidates.iter().map(|c| c.id.as_str()).collect()
    }

    /// Whether no analyzer may run.
    pub fn is_empty(&self) -> bool {
        self.candidates.is_empty()
    }

    /// Analyzes one attempt; `input.options` is ignored (each analyzer gets its own). The
    /// answer is the attempt's `analysis_result`: by family, `{is_badcase, details, score?,
    /// extra?}`, or `{is_badcase: null, details: {}, error}` for an analyzer that failed or
    /// panicked (a panic is caught; the panic hook still prints it).
    pub fn analyze_attempt(&self, input: &AnalysisInput) -> JsonMap {
        let incorrect = AttemptResult::from(&input.result).correct() == Some(&Value::Bool(false));
        let mut best: Vec<&Candidate> = Vec::new();
        let mut by_family: BTreeMap<&str, usize> = BTreeMap::new();
        for candidate in &self.candidates {
            if !candidate.datasets.is_empty() && !candidate.datasets.contains(&input.benchmark) {
                continue;
            }
            if Options(&candidate.options).truthy("only_incorrect") && !incorrect {
                continue;
            }
            match by_family.get(candidate.family.as_str()) {
                Some(&i) => {
                    if best.get(i).is_some_and(|b| candidate.priority > b.priority) {
                        best[i] = candidate;
                    }
                }
                None => {
                    by_family.insert(&candidate.family, best.len());
                    best.push(candidate);
                }
            }
        }
        let mut input = input.clone();
        let mut out = JsonMap::new();
        for candidate in best {
            input.options = candidate.options.clone();
            let analyzer = &candidate.analyzer;
            let outcome = catch_unwind(AssertUnwindSafe(|| analyzer.analyze(&input)));
            let payload = match outcome {
                Ok(Ok(outcome)) => payload(outcome),
                Ok(Err(err)) => failed(&err),
                Err(panic) => failed(&Error::from_panic(panic.as_ref())),
            };
            out.insert(candidate.family.clone(), payload);
        }
        out
    }
}

/// The persisted form of an outcome.
fn payload(outcome: AnalysisOutcome) -> Value {
    let mut map = JsonMap::new();
    map.insert("is_badcase".into(), json!(outcome.is_badcase));
    let details = match outcome.details {
        Value::Null => json!({}),
        other => other,
    };
    map.insert("details".into(), details);
    if let Some(score) = outcome.score.filter(|s| s.is_finite()) {
        map.insert("score".into(), num(score));
    }
    if let Some(extra) = outcome.extra.filter(truthy) {
        map.insert("extra".into(), extra);
    }
    Value::Object(map)
}

/// The persisted form of a failed analyzer.
fn failed(err: &Error) -> Value {
    json!({"is_badcase": null, "details": {}, "error": err.message})
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentcompass_plugin_api::contracts::ComponentKind;
    use agentcompass_plugin_api::Result;

    /// An analyzer answering a fixed outcome, failing, or panicking.
    enum Fake {
        Says(f64),
        Fails,
        Panics,
        EchoOptions,
    }

    impl Analyzer for Fake {
        fn analyze(&self, input: &AnalysisInput) -> Result<AnalysisOutcome> {
            match self {
                Fake::Says(score) => Ok(AnalysisOutcome {
                    is_badcase: Some(*score > 0.5),
                    details: Value::Null,
                    score: Some(*score),
                    extra: Some(json!({})),
                }),
                Fake::Fails => Err(Error::msg("cannot read the trajectory")),
                Fake::Panics => panic!("boom"),
                Fake::EchoOptions => Ok(AnalysisOutcome {
                    is_badcase: None,
                    details: Value::Object(input.options.clone()),
                    score: None,
                    extra: Some(json!({"k": 1})),
                }),
            }
        }
    }

    fn fake(id: &str, traits: AnalyzerInfo, analyzer: Fake) -> (ComponentInfo, Arc<dyn Analyzer>) {
        (
            ComponentInfo::new(ComponentKind::Analyzer, id, "fake").with_analyzer(traits),
            Arc::new(analyzer),
        )
    }

    fn plain() -> AnalyzerInfo {
        AnalyzerInfo::default()
    }

    fn known() -> Vec<(ComponentInfo, Arc<dyn Analyzer>)> {
        vec![
            fake("A", plain(), Fake::Says(0.9)),
            fake("B", plain(), Fake::Says(0.1)),
            fake(
                "C",
                AnalyzerInfo {
                    enabled_by_default: false,
                    ..plain()
                },
                Fake::Says(0.2),
            ),
            fake(
                "A2",
                AnalyzerInfo {
                    family: Some("A".into()),
                    priority: 1,
                    datasets: vec!["tb".into()],
                    ..plain()
                },
                Fake::Says(0.3),
            ),
            fake(
                "A3",
                AnalyzerInfo {
                    family: Some("A".into()),
                    priority: 1,
                    ..plain()
                },
                Fake::Says(0.4),
            ),
        ]
    }

    fn input(benchmark: &str) -> AnalysisInput {
        AnalysisInput {
            benchmark: benchmark.into(),
            task_id: "t".into(),
            attempt: 1,
            result: json!({"metrics": {"correct": true}}),
            ..AnalysisInput::default()
        }
    }

    fn params(value: Value) -> AnalysisParams {
        crate::parse_params(&value, &["A", "B", "C", "A2", "A3", "D"]).unwrap()
    }

    #[test]
    fn defaults_exclusions_and_allow_lists() {
        let all = Analysis::new(known(), &AnalysisParams::default()).unwrap();
        assert_eq!(all.candidate_ids(), vec!["A", "B", "A2", "A3"]);
        let out = all.analyze_attempt(&input("other"));
        // A3 outranks A in family A; A2 does not apply to `other`.
        assert_eq!(
            Value::Object(out),
            json!({"A": {"is_badcase": false, "details": {}, "score": 0.4},
                   "B": {"is_badcase": false, "details": {}, "score": 0.1}})
        );
        // On `tb`, A2 and A3 tie at priority 1: the first (A2) wins.
        assert_eq!(all.analyze_attempt(&input("tb"))["A"]["score"], 0.3);

        let some =
            Analysis::new(known(), &params(json!({"exclude_analyzers": ["B", "A3"]}))).unwrap();
        assert_eq!(some.candidate_ids(), vec!["A", "A2"]);
        assert_eq!(some.analyze_attempt(&input("x"))["A"]["score"], 0.9);

        // The allow-list wins over exclusions and enables what is off by default.
        let allow = Analysis::new(
            known(),
            &params(json!({"analyzers": ["C", "B"], "exclude_analyzers": ["B"]})),
        )
        .unwrap();
        assert_eq!(allow.candidate_ids(), vec!["B", "C"]);
        let none = Analysis::new(known(), &params(json!({"analyzers": []}))).unwrap();
        assert!(none.is_empty());
        assert!(none.analyze_attempt(&input("x")).is_empty());
    }

    #[test]
    fn options_merge_and_only_incorrect() {
        let analyzers = vec![fake(
            "D",
            AnalyzerInfo {
                defaults: json!({"threshold": 0.2, "only_incorrect": false, "other": null})
                    .as_object()
                    .cloned()
                    .unwrap(),
                ..plain()
            },
            Fake::EchoOptions,
        )];
        let analysis = Analysis::new(
            analyzers.clone(),
            &params(json!({"D": {"threshold": 1, "other": "x"}})),
        )
        .unwrap();
        let out = analysis.analyze_attempt(&input("x"));
        assert_eq!(
            out["D"],
            json!({"is_badcase": null, "details": {"threshold": 1, "only_incorrect": false, "other": "x"}, "extra": {"k": 1}})
        );
        let err = Analysis::new(
            analyzers.clone(),
            &params(json!({"D": {"threshold": "high"}})),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "analysis_params.D.threshold: expected a number, found string"
        );

        let only =
            Analysis::new(analyzers, &params(json!({"D": {"only_incorrect": true}}))).unwrap();
        assert!(
            only.analyze_attempt(&input("x")).is_empty(),
            "a correct attempt is skipped"
        );
        let mut wrong = input("x");
        wrong.result = json!({"metrics": {"correct": false}});
        assert!(only.analyze_attempt(&wrong).contains_key("D"));
    }

    #[test]
    fn failures_and_panics_are_recorded() {
        let analyzers = vec![
            fake("E", plain(), Fake::Fails),
            fake("P", plain(), Fake::Panics),
            fake("A", plain(), Fake::Says(0.7)),
        ];
        let analysis = Analysis::new(analyzers, &AnalysisParams::default()).unwrap();
        let out = analysis.analyze_attempt(&input("x"));
        assert_eq!(
            Value::Object(out),
            json!({
                "E": {"is_badcase": null, "details": {}, "error": "cannot read the trajectory"},
                "P": {"is_badcase": null, "details": {}, "error": "panicked: boom"},
                "A": {"is_badcase": true, "details": {}, "score": 0.7},
            })
        );
    }
}
