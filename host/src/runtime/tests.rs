//! In-process runs of the whole runtime with test components: a panic of the host in any
//! lifecycle stage of an attempt still publishes the task, with a `host_panic` issue.

use std::path::Path;
use std::sync::Arc;

use agentcompass_builtins::{Builtin, BuiltinFactory};
use agentcompass_plugin_api::contracts::{
    ArtifactCollectCommand, ArtifactSpec, ComponentInfo, ComponentKind, EvaluationEnvironmentMode,
    ExecRequest, ExecutionIssue, ExecutionPlan, HarnessPlan, IssuePhase, MetricValue, PreparedTask,
    RunRequest, RunResult, TaskInput, TaskSpec, TaskStep,
};
use agentcompass_plugin_api::sdk::{
    async_trait, Benchmark, BenchmarkHandle, Ctx, EvaluationInput, Harness, HarnessFreeBenchmark,
    HarnessSession, SessionRef,
};
use agentcompass_plugin_api::Result;
use agentcompass_results::store::published_tasks;
use serde_json::json;

use super::failpoint::task_id_for;
use crate::progress::TaskPhase;
use crate::registry::Registry;
use crate::request::{OrchestratedRun, Orchestration, ResolvedRuntimeOptions};

/// Every phase a run with a harness passes through (fresh evaluation, artifacts and an
/// artifact command make each one happen; the `run_step` task has steps, the `retry_wait`
/// task's harness fails once).
const HARNESS_PHASES: [TaskPhase; 14] = [
    TaskPhase::Plan,
    TaskPhase::OpenEnvironment,
    TaskPhase::PrepareTask,
    TaskPhase::StartHarness,
    TaskPhase::RunHarness,
    TaskPhase::CollectHarnessResult,
    TaskPhase::CollectArtifacts,
    TaskPhase::DownloadArtifacts,
    TaskPhase::SaveEvaluationCheckpoint,
    TaskPhase::EvaluateEnvironment,
    TaskPhase::RestoreArtifacts,
    TaskPhase::Evaluate,
    TaskPhase::RunStep,
    TaskPhase::RetryWait,
];

/// Tasks `panic-at-<phase>` for each of `phases`, plus `ok`; evaluated in a fresh environment
/// with `<workdir>/out` as an artifact.
struct PanicBench {
    phases: &'static [TaskPhase],
}

fn workdir(req: &RunRequest) -> String {
    req.environment.params["workdir"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[async_trait]
impl Benchmark for PanicBench {
    async fn load_tasks(&self, _ctx: &Ctx, req: &RunRequest) -> Result<Vec<TaskSpec>> {
        let ids = self.phases.iter().map(|p| task_id_for(*p));
        Ok(ids
            .chain(["ok".to_string()])
            .map(|id| {
                let mut task = TaskSpec::new(id.clone(), "q");
                if id == task_id_for(TaskPhase::RunStep) {
                    // Multi-step tasks are evaluated in their own environment.
                    task.steps = vec![TaskStep::new("only", "q")];
                    task.evaluation_environment_mode = Some(EvaluationEnvironmentMode::Reuse);
                    return task;
                }
                task.evaluation_environment_mode = Some(EvaluationEnvironmentMode::Fresh);
                let out = format!("{}/{id}/out", workdir(req));
                task.artifacts = Some(vec![ArtifactSpec::new(out)]);
                task.artifact_collect = vec![ArtifactCollectCommand::new("true")];
                task
            })
            .collect())
    }

    async fn prepare_task(
        &self,
        _ctx: &Ctx,
        task: &TaskSpec,
        env: &SessionRef,
        req: &RunRequest,
        _plan: &agentcompass_plugin_api::contracts::BenchmarkPlan,
    ) -> Result<PreparedTask> {
        // Each task its own artifact: attempts run concurrently in one working directory.
        let dir = format!("{}/{}", workdir(req), task.task_id);
        env.exec(ExecRequest::argv(["mkdir", "-p", dir.as_str()]))
            .await?;
        env.write_text(&format!("{dir}/out"), "output").await?;
        Ok(PreparedTask::new(task.task_id.clone(), TaskInput::new("q")))
    }

    async fn evaluate_attempt(&self, _ctx: &Ctx, input: EvaluationInput<'_>) -> Result<RunResult> {
        let mut result = input.result;
        result
            .metrics
            .insert("correct".into(), MetricValue::Bool(true));
        Ok(result)
    }
}

#[async_trait]
impl HarnessFreeBenchmark for PanicBench {
    async fn run_task(
        &self,
        _ctx: &Ctx,
        task: &TaskSpec,
        _prepared: &PreparedTask,
        _req: &RunRequest,
        _plan: &ExecutionPlan,
        _env: Option<&SessionRef>,
    ) -> Result<RunResult> {
        Ok(RunResult::new(task.task_id.clone()))
    }
}

struct Answers;

#[async_trait]
impl Harness for Answers {
    async fn start_session(
        &self,
        _ctx: &Ctx,
        _env: &SessionRef,
        _req: &RunRequest,
        _plan: &HarnessPlan,
    ) -> Result<HarnessSession> {
        Ok(Arc::new(()))
    }

    async fn execute_task(
        &self,
        _ctx: &Ctx,
        _session: &HarnessSession,
        prepared: &PreparedTask,
        _req: &RunRequest,
        _plan: &HarnessPlan,
    ) -> Result<RunResult> {
        let mut result = RunResult::new(prepared.task_id.clone());
        if prepared.task_id == task_id_for(TaskPhase::RetryWait) {
            // A FATAL issue: the runtime retries the attempt (and waits first).
            result.push_issue(ExecutionIssue::fatal(IssuePhase::Run, "test", "fails once"));
        }
        Ok(result)
    }
}

/// The `answers` harness as a built-in.
fn answers() -> Builtin {
    Builtin {
        info: ComponentInfo::new(ComponentKind::Harness, "answers", "test"),
        factory: BuiltinFactory::Harness(|| Ok(Arc::new(Answers))),
    }
}

/// A data directory no test component asks anything of.
fn test_datasets() -> Arc<crate::datasets::DatasetService> {
    Arc::new(crate::datasets::DatasetService::new(
        &std::env::temp_dir().join("agentcompass-unused-data"),
        Default::default(),
    ))
}

fn registry() -> Registry {
    let mut builtins = agentcompass_builtins::all();
    builtins.push(Builtin {
        info: ComponentInfo::new(ComponentKind::Benchmark, "panic_bench", "test"),
        factory: BuiltinFactory::Benchmark(|| {
            Ok(BenchmarkHandle {
                benchmark: Arc::new(PanicBench {
                    phases: &HARNESS_PHASES,
                }),
                harness_free: None,
            })
        }),
    });
    builtins.push(Builtin {
        info: ComponentInfo::new(ComponentKind::Benchmark, "panic_free", "test"),
        factory: BuiltinFactory::Benchmark(|| {
            let bench = Arc::new(PanicBench {
                phases: &[TaskPhase::RunTask],
            });
            Ok(BenchmarkHandle {
                benchmark: bench.clone(),
                harness_free: Some(bench),
            })
        }),
    });
    builtins.push(answers());
    Registry::with_builtins(&builtins)
}

fn request(benchmark: &str, harness: &str, workdir: &Path) -> RunRequest {
    let mut req = RunRequest::default();
    req.benchmark.id = benchmark.into();
    req.harness.id = harness.into();
    req.model.id = "m".into();
    req.environment.id = "host_process".into();
    req.environment.params = json!({"workdir": workdir})
        .as_object()
        .cloned()
        .unwrap_or_default();
    req.execution.attempts.k = 1;
    req.execution.max_retries = 1;
    req
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_panic_in_any_stage_still_publishes_the_task() {
    let root = tempfile::tempdir().unwrap();
    let work = root.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let runtime = ResolvedRuntimeOptions {
        results_dir: root.path().join("results").display().to_string(),
        ..ResolvedRuntimeOptions::default()
    };
    let requests = [("panic_bench", "answers"), ("panic_free", "none")]
        .into_iter()
        .enumerate()
        .map(|(index, (benchmark, harness))| OrchestratedRun {
            key: format!("t/{index}"),
            index,
            name: benchmark.into(),
            request: request(benchmark, harness, &work),
        })
        .collect();
    let orchestration = Orchestration {
        id: "t".into(),
        name: "failpoints".into(),
        task_concurrency: 4,
        runtime,
        requests,
    };
    let registry = registry();
    let mut prepared = super::preflight_all(&registry, &orchestration, &test_datasets()).unwrap();
    for request in &mut prepared {
        request.load_tasks().await.unwrap();
    }
    let outcome = super::execute(&orchestration, prepared, |_| {}).await;
    let expected = [HARNESS_PHASES.len() + 1, 2];
    for (request, tasks) in outcome.requests.iter().zip(expected) {
        let run_dir = request.run_dir.clone().expect("a run dir");
        let published: Vec<_> = published_tasks(&run_dir).collect();
        assert_eq!(
            published.len(),
            tasks,
            "{}: every task is published",
            request.name
        );
        for task in published {
            let result: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(task.dir.join("attempt-1/result.json")).unwrap(),
            )
            .unwrap();
            let issues = result["issues"].to_string();
            if task.task_id == "ok" {
                assert_eq!(result["metrics"]["correct"], true, "{result}");
                assert!(!issues.contains("host_panic"), "{issues}");
            } else {
                let phase = task.task_id.trim_start_matches("panic-at-");
                assert!(
                    issues.contains("host_panic")
                        && issues.contains(&format!("injected host panic at {phase}")),
                    "{}: {issues}",
                    task.task_id
                );
            }
        }
    }
}

/// Tasks an interrupted run leaves to be resumed: `panic-at-recover_evaluation` (its fresh
/// evaluation checkpointed, then too slow for the deadline) and `panic-at-restore_steps`
/// (step `one` finished and snapshotted, step `two`'s evaluation too slow).
struct SlowToFinish;

#[async_trait]
impl Benchmark for SlowToFinish {
    async fn load_tasks(&self, _ctx: &Ctx, req: &RunRequest) -> Result<Vec<TaskSpec>> {
        let mut recover = TaskSpec::new(task_id_for(TaskPhase::RecoverEvaluation), "q");
        recover.evaluation_environment_mode = Some(EvaluationEnvironmentMode::Fresh);
        let mut steps = TaskSpec::new(task_id_for(TaskPhase::RestoreSteps), "q");
        steps.steps = vec![TaskStep::new("one", "q"), TaskStep::new("two", "q")];
        steps.evaluation_environment_mode = Some(EvaluationEnvironmentMode::Reuse);
        let _ = req;
        Ok(vec![recover, steps])
    }

    async fn prepare_task(
        &self,
        _ctx: &Ctx,
        task: &TaskSpec,
        _env: &SessionRef,
        _req: &RunRequest,
        _plan: &agentcompass_plugin_api::contracts::BenchmarkPlan,
    ) -> Result<PreparedTask> {
        Ok(PreparedTask::new(task.task_id.clone(), TaskInput::new("q")))
    }

    async fn evaluate_attempt(&self, _ctx: &Ctx, input: EvaluationInput<'_>) -> Result<RunResult> {
        if input.task.steps.is_empty() {
            // Outlives the first run's deadline (the checkpoint is already written).
            tokio::time::sleep(std::time::Duration::from_secs(60)).await;
        }
        let mut result = input.result;
        result
            .metrics
            .insert("correct".into(), MetricValue::Bool(true));
        Ok(result)
    }

    async fn evaluate_step(
        &self,
        ctx: &Ctx,
        step: &TaskStep,
        input: EvaluationInput<'_>,
    ) -> Result<RunResult> {
        if step.name == "two" {
            tokio::time::sleep(std::time::Duration::from_secs(60)).await;
        }
        let mut result = input.result;
        result
            .metrics
            .insert("correct".into(), MetricValue::Bool(true));
        let _ = ctx;
        Ok(result)
    }
}

/// One `slow_to_finish`/`answers` request over `work`, as an orchestration.
fn resume_orchestration(root: &Path, work: &Path, deadline: f64, reuse: bool) -> Orchestration {
    let mut request = request("slow_to_finish", "answers", work);
    request.execution.max_retries = 0;
    request.runtime.reuse = Some(reuse);
    Orchestration {
        id: "r".into(),
        name: "resume".into(),
        task_concurrency: 2,
        runtime: ResolvedRuntimeOptions {
            results_dir: root.join("results").display().to_string(),
            timeout_seconds: deadline,
            ..ResolvedRuntimeOptions::default()
        },
        requests: vec![OrchestratedRun {
            key: "r/0".into(),
            index: 0,
            name: String::new(),
            request,
        }],
    }
}

/// The resume paths are part of the lifecycle too: a run stopped by its deadline leaves an
/// evaluation checkpoint and a step checkpoint behind, and the `--reuse` run that resumes
/// them panics at `recover_evaluation` and at `restore_steps` — both tasks are published.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_panic_while_resuming_an_interrupted_run_still_publishes_the_task() {
    let root = tempfile::tempdir().unwrap();
    let work = root.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut builtins = agentcompass_builtins::all();
    builtins.push(Builtin {
        info: ComponentInfo::new(ComponentKind::Benchmark, "slow_to_finish", "test"),
        factory: BuiltinFactory::Benchmark(|| {
            Ok(BenchmarkHandle {
                benchmark: Arc::new(SlowToFinish),
                harness_free: None,
            })
        }),
    });
    builtins.push(answers());
    let registry = Registry::with_builtins(&builtins);
    let mut last = None;
    for (deadline, reuse) in [(2.0, false), (0.0, true)] {
        let orchestration = resume_orchestration(root.path(), &work, deadline, reuse);
        let mut prepared =
            super::preflight_all(&registry, &orchestration, &test_datasets()).unwrap();
        for request in &mut prepared {
            request.load_tasks().await.unwrap();
        }
        last = Some(super::execute(&orchestration, prepared, |_| {}).await);
    }
    let outcome = last.unwrap();
    let run_dir = outcome.requests[0].run_dir.clone().expect("a run dir");
    let published: Vec<_> = published_tasks(&run_dir).collect();
    assert_eq!(published.len(), 2, "both resumed tasks are published");
    for task in published {
        let result: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(task.dir.join("attempt-1/result.json")).unwrap(),
        )
        .unwrap();
        let phase = task.task_id.trim_start_matches("panic-at-");
        let issues = result["issues"].to_string();
        assert!(
            issues.contains("host_panic")
                && issues.contains(&format!("injected host panic at {phase}")),
            "{}: {issues}",
            task.task_id
        );
    }
}
