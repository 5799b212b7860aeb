//! Planner precedence rules, one test per rule, with small in-process components.

use std::collections::BTreeMap;
use std::sync::Arc;

use agentcompass_plugin_api::contracts::{
    ArtifactSpec, BenchmarkPlan, ComponentInfo, ComponentKind, EnvironmentSetup, EnvironmentSpec,
    EvaluationEnvironmentMode, ExecutionPlan, HarnessPlan, NetworkMode, NetworkPolicy,
    OpenEnvironmentRequest, PreparedTask, ProviderCapabilities, RunRequest, RunResult, TaskSpec,
    MAIN_ARTIFACTS_DIR,
};
use agentcompass_plugin_api::sdk::{
    async_trait, Benchmark, BenchmarkHandle, Ctx, EnvironmentProvider, Harness, HarnessSession,
    Recipe, SessionRef,
};
use agentcompass_plugin_api::Result;

use super::{PlanError, Planner};

#[derive(Default, Clone)]
struct TestBenchmark {
    mode: EvaluationEnvironmentMode,
    run_timeout: Option<f64>,
    evaluation_timeout: Option<f64>,
    resolved_artifacts: Option<Vec<ArtifactSpec>>,
}

#[async_trait]
impl Benchmark for TestBenchmark {
    fn evaluation_environment_mode(&self, _: &RunRequest) -> Result<EvaluationEnvironmentMode> {
        Ok(self.mode)
    }
    async fn load_tasks(&self, _: &Ctx, _: &RunRequest) -> Result<Vec<TaskSpec>> {
        Ok(vec![])
    }
    fn build_plan(
        &self,
        _: &TaskSpec,
        _: &RunRequest,
        _: &EnvironmentSpec,
    ) -> Result<BenchmarkPlan> {
        Ok(BenchmarkPlan {
            run_timeout_seconds: self.run_timeout,
            evaluation_timeout_seconds: self.evaluation_timeout,
            ..BenchmarkPlan::default()
        })
    }
    fn resolve_artifacts(
        &self,
        _: &TaskSpec,
        _: &RunRequest,
        plan: &ExecutionPlan,
    ) -> Result<Option<Vec<ArtifactSpec>>> {
        // Sees the final (post-recipe) plan: derives a path from the recipe's workdir.
        Ok(self.resolved_artifacts.clone().map(|mut list| {
            if let Some(workdir) = &plan.environment.setup.workdir {
                list.push(ArtifactSpec::new(format!("{workdir}/out")));
            }
            list
        }))
    }
    async fn prepare_task(
        &self,
        _: &Ctx,
        t: &TaskSpec,
        _: &SessionRef,
        _: &RunRequest,
        _: &BenchmarkPlan,
    ) -> Result<PreparedTask> {
        Ok(PreparedTask::new(t.task_id.clone(), Default::default()))
    }
    async fn evaluate(
        &self,
        _: &Ctx,
        _: &TaskSpec,
        _: &PreparedTask,
        r: RunResult,
        _: &RunRequest,
        _: &ExecutionPlan,
        _: Option<&SessionRef>,
    ) -> Result<RunResult> {
        Ok(r)
    }
}

struct TestHarness(Option<f64>);

#[async_trait]
impl Harness for TestHarness {
    fn build_plan(&self, _: &RunRequest, _: &EnvironmentSpec) -> Result<HarnessPlan> {
        Ok(HarnessPlan {
            default_run_timeout_seconds: self.0,
            ..HarnessPlan::default()
        })
    }
    async fn start_session(
        &self,
        _: &Ctx,
        _: &SessionRef,
        _: &RunRequest,
        _: &HarnessPlan,
    ) -> Result<HarnessSession> {
        Ok(Arc::new(()))
    }
    async fn execute_task(
        &self,
        _: &Ctx,
        _: &HarnessSession,
        p: &PreparedTask,
        _: &RunRequest,
        _: &HarnessPlan,
    ) -> Result<RunResult> {
        Ok(RunResult::new(p.task_id.clone()))
    }
}

/// Sets the image when none is chosen; records what it saw.
struct ImageRecipe;

impl Recipe for ImageRecipe {
    fn matches(&self, _: &RunRequest, _: &TaskSpec, plan: &ExecutionPlan) -> Result<bool> {
        Ok(plan.environment.setup.image.is_none())
    }
    fn apply(
        &self,
        mut plan: ExecutionPlan,
        _: &RunRequest,
        _: &TaskSpec,
    ) -> Result<ExecutionPlan> {
        plan.environment.setup.image = Some("recipe/image:1".into());
        plan.environment.setup.workdir = Some("/work".into());
        Ok(plan)
    }
}

/// Applies only after an image is set; derives the timeout from it.
struct TimeoutRecipe;

impl Recipe for TimeoutRecipe {
    fn matches(&self, _: &RunRequest, _: &TaskSpec, plan: &ExecutionPlan) -> Result<bool> {
        Ok(plan.environment.setup.image.as_deref() == Some("recipe/image:1"))
    }
    fn apply(
        &self,
        mut plan: ExecutionPlan,
        _: &RunRequest,
        _: &TaskSpec,
    ) -> Result<ExecutionPlan> {
        plan.run_timeout_seconds = Some(plan.run_timeout_seconds.unwrap_or(0.0) + 7.0);
        plan.artifact_collection_supported = true;
        Ok(plan)
    }
}

fn info(collect: bool) -> ComponentInfo {
    let mut info = ComponentInfo::new(ComponentKind::Benchmark, "b", "");
    info.collect_artifacts = collect;
    info
}

fn planner_with(
    bench: TestBenchmark,
    collect: bool,
    harness_default: Option<f64>,
    recipes: Vec<(&str, Arc<dyn Recipe>)>,
) -> Planner {
    let provider = crate::registry::Registry::with_builtins(&agentcompass_builtins::all())
        .environment("host_process")
        .unwrap();
    Planner::from_parts(
        BenchmarkHandle {
            benchmark: Arc::new(bench),
            harness_free: None,
        },
        info(collect),
        Some(Arc::new(TestHarness(harness_default))),
        recipes
            .into_iter()
            .map(|(id, r)| (id.to_string(), r))
            .collect(),
        provider,
    )
}

pub(super) fn planner() -> Planner {
    planner_with(TestBenchmark::default(), true, None, vec![])
}

pub(super) fn request() -> RunRequest {
    let mut req = RunRequest::default();
    req.benchmark.id = "b".into();
    req.harness.id = "h".into();
    req.environment = EnvironmentSpec::new("host_process");
    req
}

pub(super) fn task() -> TaskSpec {
    TaskSpec::new("t1", "q")
}

/// The owned map of `pairs`.
pub(super) fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn evaluation_mode_request_over_task_over_benchmark() {
    let bench = TestBenchmark {
        mode: EvaluationEnvironmentMode::Reuse,
        ..TestBenchmark::default()
    };
    let planner = planner_with(bench, true, None, vec![]);
    let mut req = request();
    let mut task = task();
    assert_eq!(
        planner
            .plan(&task, &req, 1)
            .unwrap()
            .evaluation_environment_mode,
        EvaluationEnvironmentMode::Reuse
    );
    task.evaluation_environment_mode = Some(EvaluationEnvironmentMode::NoEnvironment);
    assert_eq!(
        planner
            .plan(&task, &req, 1)
            .unwrap()
            .evaluation_environment_mode,
        EvaluationEnvironmentMode::NoEnvironment
    );
    req.environment.evaluation_environment_mode = Some(EvaluationEnvironmentMode::Fresh);
    let plan = planner.plan(&task, &req, 1).unwrap();
    assert_eq!(
        plan.evaluation_environment_mode,
        EvaluationEnvironmentMode::Fresh
    );
    assert!(
        plan.evaluation_environment.is_some(),
        "fresh creates the evaluation environment"
    );
    req.environment.evaluation_environment_mode = Some(EvaluationEnvironmentMode::Reuse);
    assert!(
        planner
            .plan(&task, &req, 1)
            .unwrap()
            .evaluation_environment
            .is_none(),
        "other modes clear it"
    );
}

#[test]
fn request_policy_wins_over_task_hint_and_missing_ones_are_public() {
    let planner = planner();
    let mut req = request();
    let mut task = task();
    task.run_network_policy = Some(NetworkPolicy::allowlist(["B.example.org", "a.example.org"]));
    task.evaluation_network_policy = Some(NetworkPolicy::no_network());
    req.environment.evaluation_network_policy = Some(NetworkPolicy::public());
    let plan = planner.plan(&task, &req, 1).unwrap();
    assert_eq!(
        plan.run_network_policy,
        Some(NetworkPolicy::allowlist(["a.example.org", "b.example.org"])),
        "task hint used, normalised"
    );
    assert_eq!(
        plan.evaluation_network_policy,
        Some(NetworkPolicy::public()),
        "request wins"
    );
    assert_eq!(
        plan.baseline_network_policy,
        Some(NetworkPolicy::public()),
        "missing becomes public"
    );
    task.run_network_policy = Some(NetworkPolicy::allowlist(["https://x.org/path"]));
    let err = planner.plan(&task, &req, 1).unwrap_err().to_string();
    assert!(err.starts_with("task t1: run_network_policy:"), "{err}");
}

#[test]
fn planning_works_on_a_task_local_copy() {
    let planner = planner_with(
        TestBenchmark::default(),
        true,
        None,
        vec![("image", Arc::new(ImageRecipe))],
    );
    let req = request();
    let before = req.clone();
    let plan = planner.plan(&task(), &req, 2).unwrap();
    assert_eq!(
        plan.environment.setup.image.as_deref(),
        Some("recipe/image:1")
    );
    assert_eq!(plan.attempt, 2);
    assert_eq!(req, before, "the request is never mutated");
}

#[test]
fn timeouts_benchmark_then_task_then_harness_fallback_then_overrides() {
    let mut task = task();
    let req = request();
    // Harness fallback only when there is no task/benchmark default.
    let p = planner_with(TestBenchmark::default(), true, Some(900.0), vec![]);
    assert_eq!(
        p.plan(&task, &req, 1).unwrap().run_timeout_seconds,
        Some(900.0)
    );
    task.run_timeout_seconds = Some(300.0);
    assert_eq!(
        p.plan(&task, &req, 1).unwrap().run_timeout_seconds,
        Some(300.0)
    );
    let bench = TestBenchmark {
        run_timeout: Some(100.0),
        evaluation_timeout: Some(50.0),
        ..TestBenchmark::default()
    };
    let p = planner_with(bench, true, Some(900.0), vec![]);
    let plan = p.plan(&task, &req, 1).unwrap();
    assert_eq!(
        (plan.run_timeout_seconds, plan.evaluation_timeout_seconds),
        (Some(100.0), Some(50.0))
    );
    assert_eq!(
        plan.harness_plan.run_timeout_seconds,
        Some(100.0),
        "mapped to the harness field"
    );
    let mut req = request();
    req.execution.timeout_multiplier = 2.0;
    req.execution.evaluation_timeout_multiplier = Some(3.0);
    let plan = p.plan(&task, &req, 1).unwrap();
    assert_eq!(
        (plan.run_timeout_seconds, plan.evaluation_timeout_seconds),
        (Some(200.0), Some(150.0))
    );
    req.execution.run_timeout_seconds = Some(10.0);
    req.execution.run_timeout_multiplier = Some(1.5);
    assert_eq!(
        p.plan(&task, &req, 1).unwrap().run_timeout_seconds,
        Some(15.0)
    );
}

#[test]
fn recipes_compose_in_registry_order_and_set_the_final_timeout() {
    let recipes: Vec<(&str, Arc<dyn Recipe>)> = vec![
        ("image", Arc::new(ImageRecipe)),
        ("timeout", Arc::new(TimeoutRecipe)),
    ];
    let planner = planner_with(TestBenchmark::default(), true, None, recipes);
    let plan = planner.plan(&task(), &request(), 1).unwrap();
    assert_eq!(plan.applied_recipes, ["image", "timeout"]);
    assert_eq!(
        plan.environment.setup.image.as_deref(),
        Some("recipe/image:1")
    );
    assert_eq!(
        plan.run_timeout_seconds,
        Some(7.0),
        "the second recipe saw the first one's plan"
    );
    assert_eq!(plan.harness_plan.run_timeout_seconds, Some(7.0));
    // Reversed order: the timeout recipe no longer matches (no image yet when it runs).
    let recipes: Vec<(&str, Arc<dyn Recipe>)> = vec![
        ("timeout", Arc::new(TimeoutRecipe)),
        ("image", Arc::new(ImageRecipe)),
    ];
    let plan = planner_with(TestBenchmark::default(), true, None, recipes)
        .plan(&task(), &request(), 1)
        .unwrap();
    assert_eq!(plan.applied_recipes, ["image"]);
    // An explicit user image is preserved: the image recipe does not match.
    let mut req = request();
    req.environment.setup.image = Some("user/image".into());
    let recipes: Vec<(&str, Arc<dyn Recipe>)> = vec![("image", Arc::new(ImageRecipe))];
    let plan = planner_with(TestBenchmark::default(), true, None, recipes)
        .plan(&task(), &req, 1)
        .unwrap();
    assert!(plan.applied_recipes.is_empty());
    assert_eq!(plan.environment.setup.image.as_deref(), Some("user/image"));
}

#[test]
fn environment_bindings_request_over_task_phase_over_common() {
    let planner = planner();
    let mut task = task();
    task.env_variables = map(&[("A", "task"), ("B", "task")]);
    task.run_env_variables = map(&[("B", "task-run"), ("R", "task-run")]);
    let mut req = request();
    req.environment.env_variables = map(&[("A", "req")]);
    req.environment.run_env_variables = map(&[("R", "req-run:${HOME_DIR:-/home}")]);
    let plan = planner.plan(&task, &req, 1).unwrap();
    let run = super::phase_bindings(&plan, super::Phase::Run);
    assert_eq!(
        run,
        map(&[
            ("A", "req"),
            ("B", "task-run"),
            ("R", "req-run:${HOME_DIR:-/home}")
        ])
    );
    let common = super::phase_bindings(&plan, super::Phase::Common);
    assert_eq!(
        common,
        map(&[("A", "req"), ("B", "task")]),
        "run-only bindings stay out of the common phase"
    );
    let resolved = super::resolve_bindings(&run, &|_| None).unwrap();
    assert_eq!(resolved["R"], "req-run:/home");
    // A missing reference fails before allocation, naming only the variable.
    req.environment
        .env_variables
        .insert("KEY".into(), "${GRADER_KEY}".into());
    let plan = planner.plan(&task, &req, 1).unwrap();
    let err = planner.check(&plan, &|_| None).unwrap_err().to_string();
    assert_eq!(err, "task t1: environment bindings refer to unset variables: GRADER_KEY (export them before the run)");
    assert!(planner
        .check(&plan, &|name| (name == "GRADER_KEY").then(|| "v".into()))
        .is_ok());
}

#[test]
fn fresh_verifier_gets_its_own_setup_bindings_and_baseline() {
    let planner = planner_with(
        TestBenchmark::default(),
        true,
        None,
        vec![("image", Arc::new(ImageRecipe))],
    );
    let mut req = request();
    req.environment.evaluation_environment_mode = Some(EvaluationEnvironmentMode::Fresh);
    req.environment.env_variables = map(&[("COMMON", "c")]);
    req.environment.run_env_variables = map(&[("RUN_ONLY", "r")]);
    let mut task = task();
    let plan = planner.plan(&task, &req, 1).unwrap();
    let eval = plan.evaluation_environment.as_ref().unwrap();
    assert_eq!(
        eval.setup.image.as_deref(),
        Some("recipe/image:1"),
        "no verifier setup: inherits the resolved run setup"
    );
    assert_eq!(
        super::phase_bindings(&plan, super::Phase::FreshStartup),
        map(&[("COMMON", "c")])
    );
    assert!(plan.save_artifacts, "fresh saves artifacts by default");
    task.evaluation_environment_setup = Some(EnvironmentSetup::default());
    let plan = planner.plan(&task, &req, 1).unwrap();
    assert_eq!(
        plan.evaluation_environment.unwrap().setup.image,
        None,
        "an explicit empty verifier setup is independent"
    );
    req.execution.save_artifacts = Some(false);
    let err = planner.plan(&task, &req, 1).unwrap_err().to_string();
    assert!(err.contains("save_artifacts cannot be false"), "{err}");
}

#[test]
fn fresh_only_request_fields_need_fresh_mode() {
    let planner = planner();
    let mut req = request();
    req.environment.evaluation_baseline_network_policy = Some(NetworkPolicy::no_network());
    let err = planner.plan(&task(), &req, 1).unwrap_err().to_string();
    assert_eq!(
        err,
        "task t1: environment.evaluation_baseline_network_policy applies to a fresh evaluation environment, but the evaluation mode is `none`"
    );
}

#[test]
fn artifacts_main_dir_overrides_and_resolution_after_recipes() {
    let bench = TestBenchmark {
        resolved_artifacts: Some(vec![ArtifactSpec::new("/app/result.json")]),
        ..TestBenchmark::default()
    };
    let planner = planner_with(bench, true, None, vec![("image", Arc::new(ImageRecipe))]);
    let mut task = task();
    task.artifacts = Some(vec![ArtifactSpec::new("/app/task-extra")]);
    let plan = planner.plan(&task, &request(), 1).unwrap();
    let sources: Vec<&str> = plan.artifacts.iter().map(|a| a.source.as_str()).collect();
    assert_eq!(
        sources,
        [MAIN_ARTIFACTS_DIR, "/app/result.json", "/work/out"],
        "resolve_artifacts ran after the recipe"
    );
    assert!(
        plan.save_artifacts,
        "the task declares artifacts: saved by default, as Harbor saves them"
    );
    let mut bare = crate::planner::tests::task();
    bare.artifacts = None;
    let plan = planner.plan(&bare, &request(), 1).unwrap();
    assert!(!plan.save_artifacts, "none mode does not save by default");
    // An explicit request list is authoritative and bypasses resolve_artifacts.
    let mut req = request();
    req.execution.artifacts = Some(vec![]);
    let plan = planner.plan(&task, &req, 1).unwrap();
    assert_eq!(plan.artifacts, vec![ArtifactSpec::main_dir()]);
    // Overlapping destinations are rejected at planning.
    req.execution.artifacts = Some(vec![
        ArtifactSpec {
            destination: Some("out".into()),
            ..ArtifactSpec::new("/a")
        },
        ArtifactSpec {
            destination: Some("out/x".into()),
            ..ArtifactSpec::new("/b")
        },
    ]);
    let err = planner.plan(&task, &req, 1).unwrap_err().to_string();
    assert!(err.contains("overlapping destinations"), "{err}");
}

#[test]
fn benchmarks_that_do_not_collect_refuse_overrides_and_recipes_cannot_re_enable() {
    let recipes: Vec<(&str, Arc<dyn Recipe>)> = vec![
        ("image", Arc::new(ImageRecipe)),
        ("timeout", Arc::new(TimeoutRecipe)),
    ];
    let planner = planner_with(TestBenchmark::default(), false, None, recipes);
    let plan = planner.plan(&task(), &request(), 1).unwrap();
    assert!(
        !plan.artifact_collection_supported,
        "TimeoutRecipe tried to re-enable collection"
    );
    assert!(plan.artifacts.is_empty());
    let mut req = request();
    req.execution.artifact_collect = Some(vec![]);
    let err = planner.plan(&task(), &req, 1).unwrap_err().to_string();
    assert!(
        err.contains("unsupported: execution.artifact_collect"),
        "{err}"
    );
}

#[test]
fn provider_validation_fails_closed() {
    let planner = planner();
    let mut req = request();
    req.environment.run_network_policy = Some(NetworkPolicy::no_network());
    let plan = planner.plan(&task(), &req, 1).unwrap();
    let err = planner.check(&plan, &|_| None).unwrap_err();
    assert!(matches!(err, PlanError::Unsupported { .. }));
    assert_eq!(
        err.to_string(),
        "task t1: environment `host_process` cannot enforce run_network_policy mode `no-network` (it supports: public)"
    );
}

/// A provider built before denylists and port entries: it declares allowlists of hostnames,
/// and its own (older) plan check could not know to refuse what it does not declare.
struct OlderProvider;

#[async_trait]
impl EnvironmentProvider for OlderProvider {
    fn capabilities(&self) -> Result<ProviderCapabilities> {
        Ok(ProviderCapabilities {
            network_modes: vec![
                NetworkMode::Public,
                NetworkMode::NoNetwork,
                NetworkMode::Allowlist,
            ],
            allowlist_entry_types: vec!["hostname".into()],
            dynamic_network_policy: true,
            ..ProviderCapabilities::public_only()
        })
    }

    fn validate_plan(&self, _: &ExecutionPlan) -> Result<()> {
        Ok(())
    }

    async fn open(&self, _: &Ctx, _: &OpenEnvironmentRequest) -> Result<SessionRef> {
        Err(agentcompass_plugin_api::Error::unsupported(
            "planning tests open nothing",
        ))
    }
}

#[test]
fn the_host_checks_declared_capabilities_before_the_providers_own_check() {
    let mut planner = planner();
    planner.provider = Arc::new(OlderProvider);
    let mut req = request();
    req.environment.id = "older".into();
    req.environment.run_network_policy = Some(NetworkPolicy::allowlist(["pypi.org"]));
    let plan = planner.plan(&task(), &req, 1).unwrap();
    planner.check(&plan, &|_| None).unwrap();
    for (policy, line) in [
        (
            NetworkPolicy::denylist(["evil.example"]),
            "task t1: environment `older` cannot enforce run_network_policy mode `denylist` (it \
             supports: public, no-network, allowlist)",
        ),
        (
            NetworkPolicy::allowlist(["pypi.org:443"]),
            "task t1: environment `older` cannot enforce run_network_policy entry \
             `pypi.org:443` (entries with a port are not supported)",
        ),
    ] {
        req.environment.run_network_policy = Some(policy);
        let plan = planner.plan(&task(), &req, 1).unwrap();
        let err = planner.check(&plan, &|_| None).unwrap_err();
        assert!(matches!(err, PlanError::Unsupported { .. }));
        assert_eq!(err.to_string(), line);
    }
}
