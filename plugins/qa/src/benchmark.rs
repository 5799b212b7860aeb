//! `qa`: question answering from a JSONL or JSON dataset (a local file, or one the host
//! downloads by URL and SHA-256), scored by exact or normalised match.

use agentcompass_plugin_api::contracts::{
    BenchmarkPlan, EnvironmentSpec, MetricValue, PreparedTask, RunRequest, RunResult, TaskSpec,
};
use agentcompass_plugin_api::sdk::select::sample_ids;
use agentcompass_plugin_api::sdk::{
    async_trait, Benchmark, Ctx, EvaluationInput, SessionRef, TaskStream,
};
use agentcompass_plugin_api::Result;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::scoring::{expected_answers, match_mode, matches, MatchMode};
use crate::source::open_source;

/// The evaluator state carried in the typed benchmark plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Plan {
    expected: Vec<String>,
    #[serde(rename = "match")]
    mode: MatchMode,
}

/// The benchmark.
pub struct Qa;

#[async_trait]
impl Benchmark for Qa {
    async fn load_tasks(&self, ctx: &Ctx, req: &RunRequest) -> Result<Vec<TaskSpec>> {
        match_mode(req)?;
        let mut stream = open_source(ctx, req, None).await?;
        let mut tasks = Vec::with_capacity(stream.total());
        loop {
            let page = stream.next_page(1024)?;
            if page.is_empty() {
                return Ok(tasks);
            }
            tasks.extend(page);
        }
    }

    async fn open_tasks(&self, ctx: &Ctx, req: &RunRequest) -> Result<Box<dyn TaskStream>> {
        match_mode(req)?;
        open_source(ctx, req, sample_ids(req)?).await
    }

    fn build_plan(
        &self,
        task: &TaskSpec,
        req: &RunRequest,
        _environment: &EnvironmentSpec,
    ) -> Result<BenchmarkPlan> {
        let plan = Plan {
            expected: expected_answers(task)?,
            mode: match_mode(req)?,
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
        // The answer stays in TaskSpec.ground_truth and the plan: the harness must not see it.
        let mut prepared = PreparedTask::from_task(task);
        if let Some(sha) = task.metadata.get("dataset_sha256") {
            prepared
                .metadata
                .insert("dataset_sha256".into(), sha.clone());
        }
        Ok(prepared)
    }

    async fn evaluate_attempt(&self, _ctx: &Ctx, input: EvaluationInput<'_>) -> Result<RunResult> {
        let EvaluationInput {
            mut result, plan, ..
        } = input;

        let plan: Plan = plan.benchmark_plan.payload()?;
        let correct = result.final_answer.as_deref().is_some_and(|answer| {
            plan.expected
                .iter()
                .any(|expected| matches(answer, expected, plan.mode))
        });
        result
            .metrics
            .insert("correct".to_string(), MetricValue::from(correct));
        // Safe to publish once the attempt is scored.
        result.ground_truth = Some(match plan.expected.as_slice() {
            [single] => Value::String(single.clone()),
            many => Value::from(many.to_vec()),
        });
        Ok(result)
    }
}

#[cfg(test)]
mod tests;
