//! `example_exact_match`: generated arithmetic questions, exact-match scoring.

use agentcompass_plugin_api::contracts::{
    BenchmarkPlan, EnvironmentSpec, MetricValue, PreparedTask, RunRequest, RunResult, TaskOutput,
    TaskSpec,
};
use agentcompass_plugin_api::sdk::{
    async_trait, runtime, Benchmark, Ctx, EvaluationInput, SessionRef,
};
use agentcompass_plugin_api::{Error, Result};
use serde::{Deserialize, Serialize};

/// Registry id.
pub const ID: &str = "example_exact_match";

/// Parameters (defaults match the declared schema).
#[derive(Debug, Deserialize)]
#[serde(default)]
struct Params {
    size: u64,
    seed: u64,
    case_sensitive: bool,
    /// How long `evaluate` takes (to exercise slow evaluations).
    evaluate_delay_ms: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            size: 5,
            seed: 0,
            case_sensitive: false,
            evaluate_delay_ms: 0,
        }
    }
}

fn params(req: &RunRequest) -> Result<Params> {
    let mut map = req.benchmark.params.clone();
    map.remove("sample_ids");
    serde_json::from_value(serde_json::Value::Object(map))
        .map_err(|e| Error::invalid_input(format!("{ID} params: {e}")))
}

/// The evaluator state carried in the typed benchmark plan.
#[derive(Debug, Serialize, Deserialize)]
struct Plan {
    expected: String,
    case_sensitive: bool,
}

/// The benchmark.
pub struct ExampleExactMatch;

/// splitmix64: a tiny deterministic generator (same seed, same questions, on every machine).
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

pub(crate) fn question(index: u64, seed: u64) -> (String, String) {
    let mut state = seed ^ index.wrapping_mul(0xA24B_AED4_963E_E407);
    let a = (splitmix(&mut state) % 90 + 10) as i64;
    let b = (splitmix(&mut state) % 90 + 10) as i64;
    let (op, answer) = match splitmix(&mut state) % 3 {
        0 => ('+', a + b),
        1 => ('-', a - b),
        _ => ('*', a * b),
    };
    (
        format!("What is {a} {op} {b}? Answer with only the number."),
        answer.to_string(),
    )
}

/// The operands and operator of a prompt [`question`] writes ("What is A op B? ..."): `None`
/// for any other prompt (another operator, or more than `A op B` before the `?`).
pub(crate) fn parse_question(prompt: &str) -> Option<(i64, char, i64)> {
    let rest = prompt.strip_prefix("What is ")?;
    let expression = rest.split('?').next()?;
    let mut parts = expression.split_whitespace();
    let a: i64 = parts.next()?.parse().ok()?;
    let op = match parts.next()? {
        "+" => '+',
        "-" => '-',
        "*" => '*',
        _ => return None,
    };
    let b: i64 = parts.next()?.parse().ok()?;
    if parts.next().is_some() {
        return None;
    }
    Some((a, op, b))
}

fn matches(answer: &str, expected: &str, case_sensitive: bool) -> bool {
    let answer = answer.trim();
    if case_sensitive {
        answer == expected
    } else {
        answer.to_lowercase() == expected.to_lowercase()
    }
}

#[async_trait]
impl Benchmark for ExampleExactMatch {
    async fn load_tasks(&self, _ctx: &Ctx, req: &RunRequest) -> Result<Vec<TaskSpec>> {
        let params = params(req)?;
        Ok((0..params.size)
            .map(|i| {
                let (prompt, answer) = question(i, params.seed);
                let mut task = TaskSpec::new(format!("arith-{i:04}"), prompt);
                task.category = "arithmetic".to_string();
                task.ground_truth = serde_json::Value::String(answer);
                task.metadata
                    .insert("generator_seed".into(), params.seed.into());
                task
            })
            .collect())
    }

    fn build_plan(
        &self,
        task: &TaskSpec,
        req: &RunRequest,
        _environment: &EnvironmentSpec,
    ) -> Result<BenchmarkPlan> {
        let plan = Plan {
            expected: task.ground_truth.as_str().unwrap_or_default().to_string(),
            case_sensitive: params(req)?.case_sensitive,
        };
        Ok(BenchmarkPlan::default().with_payload(&plan)?)
    }

    async fn prepare_task(
        &self,
        _ctx: &Ctx,
        task: &TaskSpec,
        _env: &SessionRef,
        _req: &RunRequest,
        _plan: &BenchmarkPlan,
    ) -> Result<PreparedTask> {
        // The answer stays in TaskSpec.ground_truth: the harness must not see it.
        let mut prepared = PreparedTask::from_task(task);
        prepared.output = TaskOutput {
            answer: Some("Return only the number.".to_string()),
            ..TaskOutput::default()
        };
        Ok(prepared)
    }

    async fn evaluate_attempt(&self, _ctx: &Ctx, input: EvaluationInput<'_>) -> Result<RunResult> {
        let EvaluationInput {
            mut result,
            req,
            plan,
            ..
        } = input;

        let delay = params(req)?.evaluate_delay_ms;
        if delay > 0 {
            runtime::sleep(std::time::Duration::from_millis(delay)).await?;
        }
        let plan: Plan = plan.benchmark_plan.payload()?;
        let correct = result
            .final_answer
            .as_deref()
            .is_some_and(|answer| matches(answer, &plan.expected, plan.case_sensitive));
        result
            .metrics
            .insert("correct".to_string(), MetricValue::from(correct));
        result.ground_truth = Some(serde_json::Value::String(plan.expected));
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_are_deterministic_and_answers_right() {
        assert_eq!(question(3, 7), question(3, 7));
        assert_ne!(question(3, 7), question(4, 7));
        let (prompt, answer) = question(0, 0);
        let expected = match parse_question(&prompt).unwrap() {
            (a, '+', b) => a + b,
            (a, '-', b) => a - b,
            (a, _, b) => a * b,
        };
        assert_eq!(answer, expected.to_string());
        assert_eq!(parse_question("What is 1 + 2 3?"), None);
        assert_eq!(parse_question("What is 1 / 2?"), None);
    }

    #[test]
    fn matching_honours_case_sensitivity() {
        assert!(matches(" Paris ", "paris", false));
        assert!(!matches("Paris", "paris", true));
    }
}
