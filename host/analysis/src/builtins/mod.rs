//! The built-in analyzers, one module per family, and [`builtins`] listing them.

use std::sync::Arc;

use agentcompass_plugin_api::contracts::{AnalyzerInfo, ComponentInfo, ComponentKind, JsonMap};
use agentcompass_plugin_api::sdk::Analyzer;
use serde_json::{json, Value};

mod basic_metric;
mod completion_length;
mod empty_content;
mod exception;
mod hack_detection;
mod latency;
mod tool_error;
mod tool_repetition;
mod truncation;

pub use basic_metric::BasicMetricAnalyzer;
pub use completion_length::CompletionLengthAnalyzer;
pub use empty_content::EmptyContentAnalyzer;
pub use exception::ExceptionAnalyzer;
pub use hack_detection::HackDetectionAnalyzer;
pub use latency::{
    LlmInferLatencyAnalyzer, ToolExecutionLatencyAnalyzer, TrajectoryTimeCostAnalyzer,
};
pub use tool_error::ToolErrorAnalyzer;
pub use tool_repetition::{
    ConsecutiveToolRepetitionAnalyzer, CrossStepToolRepetitionAnalyzer, StepToolRepetitionAnalyzer,
};
pub use truncation::TruncationAnalyzer;

/// Upstream's analyzer categories (`AnalyzerCategory`).
pub mod category {
    /// `AnalyzerCategory.ERROR`: the model's output is broken (empty, truncated).
    pub const LLM_ERROR: &str = "llm_error";
    /// `AnalyzerCategory.EFFICIENCY`: time and tokens.
    pub const EFFICIENCY: &str = "efficiency";
    /// `AnalyzerCategory.BEHAVIOR`: how the agent acts (loops, tool errors, tampering).
    pub const BEHAVIOR: &str = "behavior";
    /// `AnalyzerCategory.ENV_FRAMEWORK_ERROR`: the environment or the framework failed.
    pub const ENV_FRAMEWORK_ERROR: &str = "env_framework_error";
}

/// Every built-in analyzer with its description, in a stable order (upstream's registration
/// order where it has the analyzer, then this host's additions).
pub fn builtins() -> Vec<(ComponentInfo, Arc<dyn Analyzer>)> {
    vec![
        (BasicMetricAnalyzer::info(), Arc::new(BasicMetricAnalyzer)),
        (
            CompletionLengthAnalyzer::info(),
            Arc::new(CompletionLengthAnalyzer),
        ),
        (EmptyContentAnalyzer::info(), Arc::new(EmptyContentAnalyzer)),
        (ExceptionAnalyzer::info(), Arc::new(ExceptionAnalyzer)),
        (
            LlmInferLatencyAnalyzer::info(),
            Arc::new(LlmInferLatencyAnalyzer),
        ),
        (
            ToolExecutionLatencyAnalyzer::info(),
            Arc::new(ToolExecutionLatencyAnalyzer),
        ),
        (
            TrajectoryTimeCostAnalyzer::info(),
            Arc::new(TrajectoryTimeCostAnalyzer),
        ),
        (
            StepToolRepetitionAnalyzer::info(),
            Arc::new(StepToolRepetitionAnalyzer),
        ),
        (
            CrossStepToolRepetitionAnalyzer::info(),
            Arc::new(CrossStepToolRepetitionAnalyzer),
        ),
        (
            ConsecutiveToolRepetitionAnalyzer::info(),
            Arc::new(ConsecutiveToolRepetitionAnalyzer),
        ),
        (TruncationAnalyzer::info(), Arc::new(TruncationAnalyzer)),
        (
            HackDetectionAnalyzer::info(),
            Arc::new(HackDetectionAnalyzer),
        ),
        (ToolErrorAnalyzer::info(), Arc::new(ToolErrorAnalyzer)),
    ]
}

/// The description of a built-in analyzer: enabled by default, every benchmark, its own
/// family, `defaults` (an object) and its distribution fields in
/// `extra.distribution_fields` as `[field, method]` pairs (see
/// [`crate::distribution_fields`]).
fn info(
    id: &str,
    description: &str,
    category: &str,
    defaults: Value,
    distribution: &[(&str, &str)],
) -> ComponentInfo {
    let defaults = match defaults {
        Value::Object(map) => map,
        _ => JsonMap::new(),
    };
    let mut info =
        ComponentInfo::new(ComponentKind::Analyzer, id, description).with_analyzer(AnalyzerInfo {
            category: category.to_string(),
            family: None,
            priority: 0,
            enabled_by_default: true,
            datasets: Vec::new(),
            defaults,
        });
    if !distribution.is_empty() {
        let fields: Vec<Value> = distribution
            .iter()
            .map(|(field, method)| json!([field, method]))
            .collect();
        info.extra = json!({ "distribution_fields": fields });
    }
    info
}

#[cfg(test)]
pub(crate) mod testkit;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_are_unique_described_analyzers() {
        let all = builtins();
        let mut ids: Vec<&str> = all.iter().map(|(info, _)| info.id.as_str()).collect();
        assert_eq!(ids.len(), 13);
        for (info, _) in &all {
            assert_eq!(info.kind, ComponentKind::Analyzer);
            assert!(!info.description.is_empty());
            assert!(info.analyzer.is_some(), "{}", info.id);
        }
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 13);
    }

    /// A tiny deterministic generator (no dependency needed for a smoke fuzz).
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((self.0 >> 33) as usize) % n.max(1)
        }

        fn value(&mut self, depth: usize) -> Value {
            const STRINGS: &[&str] = &[
                "",
                "rm -rf /tests",
                "echo 1 > /logs/verifier/reward.txt",
                "'",
                "\\",
                "$(",
                "<<EOF",
                "exit_code: 1",
                "2026-01-01T00:00:00Z",
                "length",
                "{\"command\": 5}",
                "é\u{0}",
                "python3 -c \"open('/tests/x','w')\"",
                "cat <<'E' | bash\nrm /tests\nE",
            ];
            match self.next(if depth > 2 { 4 } else { 6 }) {
                0 => Value::Null,
                1 => json!(self.next(2) == 0),
                2 => json!(self.next(1000) as f64 - 500.5),
                3 => json!(STRINGS[self.next(STRINGS.len())]),
                4 => Value::Array((0..self.next(4)).map(|_| self.value(depth + 1)).collect()),
                _ => {
                    const KEYS: &[&str] = &[
                        "command",
                        "content",
                        "tool_calls",
                        "function",
                        "name",
                        "arguments",
                        "exit_code",
                        "output",
                        "steps",
                        "metric",
                        "stop_reason",
                        "llm_infer_ms",
                        "step_id",
                        "observation",
                        "path",
                        "error",
                    ];
                    let mut map = JsonMap::new();
                    for _ in 0..self.next(4) {
                        map.insert(
                            KEYS[self.next(KEYS.len())].to_string(),
                            self.value(depth + 1),
                        );
                    }
                    Value::Object(map)
                }
            }
        }
    }

    /// Replaces one random node of `value` with a random value.
    fn mutate(value: &mut Value, rng: &mut Lcg) {
        let replace = rng.next(4) == 0;
        match value {
            Value::Array(items) if !items.is_empty() && !replace => {
                let i = rng.next(items.len());
                mutate(&mut items[i], rng);
            }
            Value::Object(map) if !map.is_empty() && !replace => {
                let keys: Vec<String> = map.keys().cloned().collect();
                let key = &keys[rng.next(keys.len())];
                if let Some(child) = map.get_mut(key) {
                    mutate(child, rng);
                }
            }
            other => *other = rng.value(0),
        }
    }

    #[test]
    fn mutated_results_never_panic() {
        use testkit::{bash, result, step};
        let mut base = result(vec![
            bash(1, "cd /tests && sed -i 's/a/b/' t.py"),
            step(
                2,
                "x",
                &[("Write", json!({"file_path": "/tests/a.py", "content": "x"}))],
            ),
            bash(3, "ls"),
        ]);
        base["trajectory"]["started_at"] = json!("2026-01-01T00:00:00Z");
        base["issues"] = json!([{"severity": "error", "message": "Traceback\nKeyError: 'x'"}]);
        let mut rng = Lcg(7);
        let all = builtins();
        for _ in 0..400 {
            let mut r = base.clone();
            for _ in 0..3 {
                mutate(&mut r, &mut rng);
            }
            for (info, analyzer) in &all {
                let _ = testkit::run(analyzer.as_ref(), info, r.clone());
            }
        }
    }
}
