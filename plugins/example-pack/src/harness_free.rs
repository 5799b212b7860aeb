//! `example_self_check`: a harness-free benchmark (selected with harness `none`). It runs each
//! generated arithmetic question as a shell command in the task environment and scores the
//! output by exact match.

use std::time::Instant;

use agentcompass_plugin_api::contracts::{
    ExecRequest, ExecutionPlan, MetricValue, PreparedTask, RunRequest, RunResult, TaskSpec,
    Trajectory, TrajectoryStep,
};
use agentcompass_plugin_api::sdk::{
    async_trait, Benchmark, Ctx, EvaluationInput, HarnessFreeBenchmark, SessionRef, TaskStream,
};
use agentcompass_plugin_api::{Error, Result};
use serde::Deserialize;
use serde_json::json;

use crate::benchmark::{parse_question, question};

/// Registry id.
pub const ID: &str = "example_self_check";

/// Parameters (defaults match the declared schema).
#[derive(Debug, Deserialize)]
#[serde(default)]
struct Params {
    size: u64,
    seed: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params { size: 5, seed: 0 }
    }
}

fn params(req: &RunRequest) -> Result<Params> {
    serde_json::from_value(serde_json::Value::Object(req.benchmark.params.clone()))
        .map_err(|e| Error::invalid_input(format!("{ID} params: {e}")))
}

/// The benchmark.
pub struct ExampleSelfCheck;

/// The shell command computing "What is A op B? ..." (`None` for any other prompt).
fn command(prompt: &str) -> Option<String> {
    let (a, op, b) = parse_question(prompt)?;
    // Single quotes keep `*` away from the outer shell's globbing.
    Some(format!("sh -c 'echo $(({a} {op} {b}))'"))
}

/// Task `i` of the generator seeded with `seed`.
fn generated_task(i: u64, seed: u64) -> TaskSpec {
    let (prompt, answer) = question(i, seed);
    let mut task = TaskSpec::new(format!("self-{i:04}"), prompt);
    task.category = "arithmetic".to_string();
    task.ground_truth = serde_json::Value::String(answer);
    task
}

/// The generated tasks, made a page at a time: neither the plugin nor the host ever holds
/// them all, however large `size` is.
struct GeneratedTasks {
    next: u64,
    size: u64,
    seed: u64,
}

impl TaskStream for GeneratedTasks {
    fn total(&self) -> usize {
        usize::try_from(self.size).unwrap_or(usize::MAX)
    }

    fn next_page(&mut self, max: usize) -> Result<Vec<TaskSpec>> {
        let end = self.size.min(self.next.saturating_add(max.max(1) as u64));
        let page = (self.next..end)
            .map(|i| generated_task(i, self.seed))
            .collect();
        self.next = end;
        Ok(page)
    }
}

#[async_trait]
impl Benchmark for ExampleSelfCheck {
    async fn load_tasks(&self, _ctx: &Ctx, req: &RunRequest) -> Result<Vec<TaskSpec>> {
        let params = params(req)?;
        Ok((0..params.size)
            .map(|i| generated_task(i, params.seed))
            .collect())
    }

    async fn open_tasks(&self, _ctx: &Ctx, req: &RunRequest) -> Result<Box<dyn TaskStream>> {
        let params = params(req)?;
        Ok(Box::new(GeneratedTasks {
            next: 0,
            size: params.size,
            seed: params.seed,
        }))
    }

    async fn evaluate_attempt(&self, _ctx: &Ctx, input: EvaluationInput<'_>) -> Result<RunResult> {
        let EvaluationInput {
            task, mut result, ..
        } = input;

        let expected = task.ground_truth.as_str().unwrap_or_default().to_string();
        let correct = result.final_answer.as_deref() == Some(expected.as_str());
        result
            .metrics
            .insert("correct".to_string(), MetricValue::from(correct));
        result.ground_truth = Some(serde_json::Value::String(expected));
        Ok(result)
    }
}

#[async_trait]
impl HarnessFreeBenchmark for ExampleSelfCheck {
    async fn run_task(
        &self,
        ctx: &Ctx,
        _task: &TaskSpec,
        prepared: &PreparedTask,
        _req: &RunRequest,
        _plan: &ExecutionPlan,
        env: Option<&SessionRef>,
    ) -> Result<RunResult> {
        let env = env.ok_or_else(|| Error::environment(format!("{ID} needs an environment")))?;
        let cmd = command(&prepared.input.prompt).ok_or_else(|| {
            Error::invalid_input(format!(
                "{ID}: not an arithmetic question: {}",
                prepared.task_id
            ))
        })?;
        ctx.progress(json!({"step": "exec", "task_id": prepared.task_id}));
        let started = Instant::now();
        let out = env.exec(ExecRequest::shell(cmd.clone())).await?;
        let mut result = RunResult::for_task(prepared);
        result.final_answer = Some(out.stdout.trim().to_string());
        let mut step = TrajectoryStep::answer(
            prepared.input.prompt.clone(),
            Some(cmd.clone()),
            started.elapsed().as_secs_f64() * 1000.0,
        );
        step.observation = vec![json!({
            "command": cmd,
            "returncode": out.returncode,
            "stdout": out.stdout,
        })];
        result.trajectory = Some(Trajectory::new(vec![step]));
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_a_quoted_shell_command() {
        assert_eq!(
            command("What is 12 * 3? Answer with only the number.").as_deref(),
            Some("sh -c 'echo $((12 * 3))'")
        );
        assert_eq!(
            command("What is 10 - 25? Answer with only the number.").as_deref(),
            Some("sh -c 'echo $((10 - 25))'")
        );
        assert_eq!(command("Name a colour."), None);
        let (prompt, _) = question(0, 0);
        assert!(command(&prompt).is_some());
    }

    #[test]
    fn the_stream_pages_through_the_same_tasks() {
        let mut stream = GeneratedTasks {
            next: 0,
            size: 7,
            seed: 3,
        };
        assert_eq!(stream.total(), 7);
        let mut ids = Vec::new();
        loop {
            let page = stream.next_page(3).unwrap();
            if page.is_empty() {
                break;
            }
            assert!(page.len() <= 3);
            ids.extend(page.into_iter().map(|t| (t.task_id, t.question)));
        }
        let expected: Vec<_> = (0..7)
            .map(|i| generated_task(i, 3))
            .map(|t| (t.task_id, t.question))
            .collect();
        assert_eq!(ids, expected);
    }
}
