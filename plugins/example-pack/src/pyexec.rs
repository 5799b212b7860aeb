//! `example_pyexec`: Python exercises scored in the environment by hidden tests, written
//! against the SDK's typed contracts as a third party would.
//!
//! A task directory holds `instruction.md` (what the agent sees), `tests/` (the hidden tests,
//! uploaded into the session's own tests directory only at evaluation time; `test.sh` writes
//! the fraction of passed checks to `$AGENTCOMPASS_VERIFIER_DIR/reward.txt`) and `solution/`
//! (`solve.sh`, the reference solution, offered to reference harnesses only). The same code
//! runs in `sandbox`, `docker` and `host_process`: every path comes from the session.

use agentcompass_plugin_api::contracts::{
    EvaluationEnvironmentMode, MetricContract, PreparedTask, RunRequest, RunResult, TaskSpec,
};
use agentcompass_plugin_api::sdk::params::{self, Params};
use agentcompass_plugin_api::sdk::verifier::{
    load_task_dirs, reference_solution, task_dir, Verifier,
};
use agentcompass_plugin_api::sdk::{async_trait, Benchmark, Ctx, EvaluationInput, PrepareInput};
use agentcompass_plugin_api::{Error, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Registry id.
pub const ID: &str = "example_pyexec";

/// The benchmark's parameters.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PyexecParams {
    /// Directory of task directories (`ID/instruction.md`, `ID/tests/`, `ID/solution/`).
    pub tasks_dir: String,
    /// Run only these task ids (default: every task).
    pub only: Vec<String>,
    /// Seconds the hidden tests of one task may run.
    pub test_timeout_seconds: f64,
}

impl Default for PyexecParams {
    fn default() -> Self {
        PyexecParams {
            tasks_dir: String::new(),
            only: Vec::new(),
            test_timeout_seconds: 60.0,
        }
    }
}

impl Params for PyexecParams {
    fn validate(&self) -> std::result::Result<(), String> {
        if self.tasks_dir.trim().is_empty() {
            return Err("`tasks_dir` is required: a directory of task directories".into());
        }
        if !(self.test_timeout_seconds > 0.0 && self.test_timeout_seconds.is_finite()) {
            return Err(format!(
                "`test_timeout_seconds` must be a positive number of seconds, found {}",
                self.test_timeout_seconds
            ));
        }
        match self.only.iter().find(|id| id.trim().is_empty()) {
            Some(_) => Err("`only` must list task ids, found an empty one".into()),
            None => Ok(()),
        }
    }
}

/// The benchmark.
pub struct Pyexec;

impl Pyexec {
    fn params(req: &RunRequest) -> Result<PyexecParams> {
        params::read(&format!("benchmark `{ID}`"), &req.benchmark.params)
    }
}

#[async_trait]
impl Benchmark for Pyexec {
    /// The hidden tests run in the agent's environment, after the agent.
    fn evaluation_environment_mode(&self, _req: &RunRequest) -> Result<EvaluationEnvironmentMode> {
        Ok(EvaluationEnvironmentMode::Reuse)
    }

    /// Primary `reward` (the fraction of checks passed) and `correct` (all of them).
    fn metric_contract(&self) -> Result<MetricContract> {
        Ok(MetricContract::correct()
            .with_scalar("reward", "Fraction of the hidden checks passed")
            .with_primary("reward"))
    }

    async fn load_tasks(&self, _ctx: &Ctx, req: &RunRequest) -> Result<Vec<TaskSpec>> {
        load_task_dirs(Self::params(req)?.tasks_dir)
    }

    /// The `only` tasks, in dataset order; an id the dataset does not have is refused.
    async fn select_tasks(
        &self,
        _ctx: &Ctx,
        tasks: Vec<TaskSpec>,
        req: &RunRequest,
    ) -> Result<Vec<TaskSpec>> {
        let only = Self::params(req)?.only;
        if let Some(unknown) = only
            .iter()
            .find(|id| !tasks.iter().any(|t| &t.task_id == *id))
        {
            return Err(Error::invalid_input(format!(
                "{ID}: `only` names task `{unknown}`, which the dataset does not have"
            )));
        }
        Ok(tasks
            .into_iter()
            .filter(|t| only.is_empty() || only.contains(&t.task_id))
            .collect())
    }

    /// The instruction, and the reference solution for reference harnesses.
    async fn prepare(&self, _ctx: &Ctx, input: PrepareInput<'_>) -> Result<PreparedTask> {
        let prepared = PreparedTask::from_task(input.task);
        Ok(match reference_solution(input.task)? {
            Some(solution) => prepared.with_reference_solution(solution),
            None => prepared,
        })
    }

    /// Uploads the hidden tests, runs them and reads the reward.
    async fn evaluate_attempt(&self, ctx: &Ctx, input: EvaluationInput<'_>) -> Result<RunResult> {
        let params = Self::params(input.req)?;
        let env = input.environment()?;
        let tests = task_dir(input.task)?.join("tests");
        let verifier = Verifier::new(tests).timeout_seconds(params.test_timeout_seconds);
        let mut result = input.result;
        verifier.run(ctx, env).await?.record(&mut result);
        Ok(result)
    }
}
