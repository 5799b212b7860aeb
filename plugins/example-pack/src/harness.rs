//! `example_calculator`: parses the question and computes the answer (no model).

use std::time::{Duration, Instant};

use agentcompass_plugin_api::contracts::{RunRequest, RunResult, Trajectory, TrajectoryStep};
use agentcompass_plugin_api::sdk::{
    async_trait, runtime, Ctx, SessionHarness, StartInput, TaskCall,
};
use agentcompass_plugin_api::{tracing, Error, Result};
use serde::Deserialize;

use crate::benchmark::parse_question;

/// Registry id.
pub const ID: &str = "example_calculator";

/// The harness's params: its session.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Params {
    delay_ms: u64,
    wrong_every: u64,
    panic_on_task: Option<String>,
}

/// The harness.
pub struct ExampleCalculator;

fn params(req: &RunRequest) -> Result<Params> {
    serde_json::from_value(serde_json::Value::Object(req.harness.params.clone()))
        .map_err(|e| Error::invalid_input(format!("{ID} params: {e}")))
}

/// Computes "What is A op B? ..." questions.
fn solve(prompt: &str) -> Option<i64> {
    match parse_question(prompt)? {
        (a, '+', b) => a.checked_add(b),
        (a, '-', b) => a.checked_sub(b),
        (a, '*', b) => a.checked_mul(b),
        _ => None,
    }
}

/// The task's position from an id such as `arith-0042`.
fn task_index(task_id: &str) -> Option<u64> {
    task_id.rsplit('-').next()?.parse().ok()
}

#[async_trait]
impl SessionHarness for ExampleCalculator {
    type Session = Params;

    async fn start(&self, _ctx: &Ctx, input: StartInput<'_>) -> Result<Params> {
        params(input.req)
    }

    async fn execute(&self, ctx: &Ctx, params: &Params, call: TaskCall<'_>) -> Result<RunResult> {
        let prepared = call.prepared;
        if params.panic_on_task.as_deref() == Some(prepared.task_id.as_str()) {
            panic!(
                "example_calculator was asked to panic on {}",
                prepared.task_id
            );
        }
        let started = Instant::now();
        ctx.progress(serde_json::json!({"step": "solving", "task_id": prepared.task_id}));
        if params.delay_ms > 0 {
            runtime::sleep(Duration::from_millis(params.delay_ms)).await?;
        }
        if ctx.is_cancelled() {
            return Err(Error::cancelled());
        }
        let mut answer = solve(&prepared.input.prompt);
        let index = task_index(&prepared.task_id).unwrap_or(0);
        if params.wrong_every > 0 && (index + 1) % params.wrong_every == 0 {
            answer = answer.map(|a| a + 1);
        }
        tracing::debug!(task_id = %prepared.task_id, answer = ?answer, "solved");
        let mut result = RunResult::for_task(prepared);
        result.final_answer = answer.map(|a| a.to_string());
        let step = TrajectoryStep::answer(
            prepared.input.prompt.clone(),
            result.final_answer.clone(),
            started.elapsed().as_secs_f64() * 1000.0,
        );
        result.trajectory = Some(Trajectory::new(vec![step]));
        Ok(result)
    }

    fn label(&self) -> &str {
        ID
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solves_the_generated_questions() {
        assert_eq!(
            solve("What is 17 + 25? Answer with only the number."),
            Some(42)
        );
        assert_eq!(
            solve("What is 10 - 25? Answer with only the number."),
            Some(-15)
        );
        assert_eq!(
            solve("What is 12 * 3? Answer with only the number."),
            Some(36)
        );
        assert_eq!(solve("Name a colour."), None);
        assert_eq!(task_index("arith-0042"), Some(42));
    }
}
