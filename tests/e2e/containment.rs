//! The real loader, in-process: the example pack goes through every ABI method a run uses,
//! and a plugin's panic or misuse of tokio inside an async method becomes an error naming
//! the plugin while the host carries on.

use agentcompass_e2e::PluginDirs;
use agentcompass_host::registry::Registry;
use agentcompass_host::setup::{build_registry, PluginSettings};
use agentcompass_plugin_api::contracts::{
    EnvironmentSpec, ExecRequest, ExecutionPlan, HarnessPlan, OpenEnvironmentRequest, RunRequest,
    TaskAttempts,
};
use agentcompass_plugin_api::sdk::{Ctx, EvaluationInput, SessionRef};

fn registry(dirs: &PluginDirs) -> Registry {
    let plugin_dir = dirs.package("p", "example-pack");
    dirs.package("p", "bad-pack");
    let setup = build_registry(&PluginSettings {
        plugin_dirs: vec![plugin_dir],
        ..PluginSettings::default()
    })
    .expect("registry");
    assert!(setup.problems.is_empty(), "{:?}", setup.problems);
    setup.registry
}

fn request(harness: &str) -> RunRequest {
    let mut req = RunRequest::default();
    req.benchmark.id = "example_exact_match".into();
    req.benchmark.params.insert("size".into(), 3.into());
    req.harness.id = harness.into();
    req.environment = EnvironmentSpec::new("host_process");
    req
}

async fn open(registry: &Registry, ctx: &Ctx, task_id: &str) -> SessionRef {
    let provider = registry.environment("host_process").expect("host_process");
    let request = OpenEnvironmentRequest::new("run", task_id, EnvironmentSpec::new("host_process"));
    provider.open(ctx, &request).await.expect("open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn example_pack_round_trips_through_the_abi() {
    let dirs = PluginDirs::new();
    let registry = registry(&dirs);
    let ctx = Ctx::detached();
    let req = request("example_calculator");
    let bench = registry
        .benchmark("example_exact_match")
        .expect("benchmark")
        .benchmark;
    let harness = registry.harness("example_calculator").expect("harness");

    let tasks = bench.load_tasks(&ctx, &req).await.expect("load_tasks");
    let ids: Vec<&str> = tasks.iter().map(|t| t.task_id.as_str()).collect();
    assert_eq!(ids, ["arith-0000", "arith-0001", "arith-0002"]);
    let mut results = Vec::new();
    for task in &tasks {
        let env = open(&registry, &ctx, &task.task_id).await;
        let plan = ExecutionPlan {
            benchmark_plan: bench
                .build_plan(task, &req, &req.environment)
                .expect("plan"),
            harness_plan: harness
                .build_plan(&req, &req.environment)
                .expect("harness plan"),
            ..ExecutionPlan::default()
        };
        let prepared = bench
            .prepare_task(&ctx, task, &env, &req, &plan.benchmark_plan)
            .await
            .expect("prepare");
        assert_eq!(
            prepared.ground_truth, None,
            "the harness must not see the answer"
        );
        let session = harness
            .start_session(&ctx, &env, &req, &plan.harness_plan)
            .await
            .expect("start");
        let result = harness
            .execute_task(&ctx, &session, &prepared, &req, &plan.harness_plan)
            .await
            .expect("execute");
        let result = harness
            .collect_result(&ctx, &session, &prepared, &req, &plan.harness_plan, result)
            .await
            .expect("collect");
        harness
            .close_session(&ctx, session)
            .await
            .expect("close session");
        let scored = bench
            .evaluate_attempt(
                &ctx,
                EvaluationInput {
                    task,
                    prepared: &prepared,
                    result,
                    req: &req,
                    plan: &plan,
                    env: Some(&env),
                },
            )
            .await
            .expect("evaluate");
        assert_eq!(
            scored.final_answer.as_ref(),
            task.ground_truth.as_str().map(str::to_string).as_ref()
        );
        assert_eq!(scored.metrics.get("correct").map(|m| m.as_f64()), Some(1.0));
        // The session crossed the boundary both ways and still works on the host side.
        let echoed = env
            .exec(ExecRequest::argv(["echo", "still here"]))
            .await
            .expect("exec");
        assert_eq!(echoed.stdout, "still here\n");
        env.close().await.expect("close env");
        results.push(TaskAttempts {
            task_id: task.task_id.clone(),
            category: task.category.clone(),
            attempts: vec![scored],
        });
    }
    let report = bench
        .aggregate_metrics(&ctx, &results, &req)
        .await
        .expect("metrics");
    assert_eq!(report.headline().and_then(|s| s.value), Some(1.0));
}

async fn run_bad_harness(harness_id: &str) -> agentcompass_plugin_api::Error {
    let dirs = PluginDirs::new();
    let registry = registry(&dirs);
    let ctx = Ctx::detached();
    let req = request(harness_id);
    let harness = registry.harness(harness_id).expect("harness");
    let bench = registry
        .benchmark("example_exact_match")
        .expect("benchmark")
        .benchmark;
    let task = bench.load_tasks(&ctx, &req).await.expect("tasks").remove(0);
    let env = open(&registry, &ctx, &task.task_id).await;
    let plan = HarnessPlan::default();
    let prepared = bench
        .prepare_task(&ctx, &task, &env, &req, &Default::default())
        .await
        .expect("prepare");
    let session = harness
        .start_session(&ctx, &env, &req, &plan)
        .await
        .expect("start");
    let err = harness
        .execute_task(&ctx, &session, &prepared, &req, &plan)
        .await
        .expect_err("the bad harness must fail");

    // The host goes on: the same process still runs the good harness to completion.
    let calculator = registry.harness("example_calculator").expect("calculator");
    let calc_req = request("example_calculator");
    let session = calculator
        .start_session(&ctx, &env, &calc_req, &plan)
        .await
        .expect("start");
    let result = calculator
        .execute_task(&ctx, &session, &prepared, &calc_req, &plan)
        .await
        .expect("the good harness still works");
    assert!(result.final_answer.is_some());
    env.close().await.expect("close");
    err
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panic_inside_an_async_method_is_an_error_naming_the_plugin() {
    let err = run_bad_harness("bad_async_panic").await;
    assert_eq!(err.kind, agentcompass_plugin_api::ErrorKind::Panicked);
    assert!(
        err.message.starts_with(
            "plugin bad-pack@0.1.0 harness bad_async_panic: execute_task: panicked: \
             bad_async_panic exploded on arith-0000"
        ),
        "{err}"
    );
    assert!(!err.message.contains('\n'));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_without_the_sdk_runtime_is_an_error_not_an_abort() {
    let err = run_bad_harness("bad_tokio").await;
    assert!(
        err.message
            .starts_with("plugin bad-pack@0.1.0 harness bad_tokio: execute_task: panicked:"),
        "{err}"
    );
    assert!(err.message.contains("no reactor running"), "{err}");
}

#[test]
fn panicking_constructor_is_an_error_naming_the_plugin() {
    let dirs = PluginDirs::new();
    let registry = registry(&dirs);
    let err = registry
        .benchmark("bad_ctor")
        .err()
        .expect("constructor fails");
    let text = err.to_string();
    assert!(
        text.starts_with(
            "plugin bad-pack@0.1.0 benchmark bad_ctor: constructor: panicked: bad_ctor \
             constructor exploded"
        ),
        "{text}"
    );
}

/// Collects progress payloads.
#[derive(Default)]
struct Progress(std::sync::Mutex<Vec<(String, serde_json::Value)>>);

impl agentcompass_host::host_services::ProgressSink for Progress {
    fn emit(&self, component: &str, payload: &serde_json::Value) {
        self.0
            .lock()
            .unwrap()
            .push((component.to_string(), payload.clone()));
    }
}

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The test binary's global `tracing` output (a scoped subscriber would race with the
/// callsite-interest cache of tests running on other threads).
fn global_log() -> &'static Captured {
    static LOG: std::sync::OnceLock<Captured> = std::sync::OnceLock::new();
    LOG.get_or_init(|| {
        let logs = Captured::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("one global subscriber");
        logs
    })
}

#[test]
fn host_services_cross_the_boundary() {
    use agentcompass_host::host_services::{CancelToken, HostServices};
    use std::sync::Arc;

    let logs = global_log();
    let dirs = PluginDirs::new();
    let registry = registry(&dirs);
    let progress = Arc::new(Progress::default());
    let cancel = CancelToken::new();
    let ctx =
        HostServices::for_component("example_calculator", cancel.clone(), Some(progress.clone()))
            .into_ctx();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    runtime.block_on(async {
        let mut req = request("example_calculator");
        req.benchmark.params.insert("size".into(), 7.into());
        let bench = registry.benchmark("example_exact_match").unwrap().benchmark;
        let harness = registry.harness("example_calculator").unwrap();
        // Task 6: no other test solves it, so its log line is this test's.
        let task = bench.load_tasks(&ctx, &req).await.unwrap().remove(6);
        let env = open(&registry, &ctx, &task.task_id).await;
        let prepared = bench
            .prepare_task(&ctx, &task, &env, &req, &Default::default())
            .await
            .unwrap();
        let plan = HarnessPlan::default();
        let session = harness
            .start_session(&ctx, &env, &req, &plan)
            .await
            .unwrap();
        harness
            .execute_task(&ctx, &session, &prepared, &req, &plan)
            .await
            .unwrap();

        // Cooperative cancellation reaches the plugin through the same context.
        cancel.cancel();
        let err = harness
            .execute_task(&ctx, &session, &prepared, &req, &plan)
            .await
            .expect_err("cancelled");
        assert_eq!(err.kind, agentcompass_plugin_api::ErrorKind::Cancelled);

        // Dropping a running call cancels it: a 60 s agent step ends at the timeout.
        let mut slow_req = request("example_calculator");
        slow_req
            .harness
            .params
            .insert("delay_ms".into(), 60_000.into());
        let fresh = HostServices::for_plugin("test").into_ctx();
        let slow = harness
            .start_session(&fresh, &env, &slow_req, &plan)
            .await
            .unwrap();
        let started = std::time::Instant::now();
        let call = harness.execute_task(&fresh, &slow, &prepared, &slow_req, &plan);
        let out = tokio::time::timeout(std::time::Duration::from_millis(200), call).await;
        assert!(
            out.is_err(),
            "the call must still be running at the timeout"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        env.close().await.unwrap();
    });

    let events = progress.0.lock().unwrap().clone();
    assert!(
        events
            .iter()
            .any(|(component, payload)| component == "example_calculator"
                && payload["step"] == "solving"
                && payload["task_id"] == "arith-0006"),
        "{events:?}"
    );
    let logs = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.lines().any(|l| l.contains("DEBUG")
            && l.contains("plugin=\"example-pack\"")
            && l.contains("solved task_id=arith-0006")),
        "plugin logs must reach the host's tracing with the plugin's name:\n{logs}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn example_calculator_params_shape_the_answers() {
    let dirs = PluginDirs::new();
    let registry = registry(&dirs);
    let ctx = Ctx::detached();
    let mut req = request("example_calculator");
    req.benchmark.params.insert("size".into(), 4.into());
    req.harness.params.insert("wrong_every".into(), 2.into());
    req.harness
        .params
        .insert("panic_on_task".into(), "arith-0002".into());
    let bench = registry.benchmark("example_exact_match").unwrap().benchmark;
    let harness = registry.harness("example_calculator").unwrap();
    let env = open(&registry, &ctx, "t").await;
    let plan = HarnessPlan::default();
    let session = harness
        .start_session(&ctx, &env, &req, &plan)
        .await
        .unwrap();
    let mut outcomes = Vec::new();
    for task in bench.load_tasks(&ctx, &req).await.unwrap() {
        let exec_plan = ExecutionPlan {
            benchmark_plan: bench.build_plan(&task, &req, &req.environment).unwrap(),
            ..ExecutionPlan::default()
        };
        let prepared = bench
            .prepare_task(&ctx, &task, &env, &req, &exec_plan.benchmark_plan)
            .await
            .unwrap();
        let outcome = match harness
            .execute_task(&ctx, &session, &prepared, &req, &plan)
            .await
        {
            Ok(result) => {
                let scored = bench
                    .evaluate_attempt(
                        &ctx,
                        EvaluationInput {
                            task: &task,
                            prepared: &prepared,
                            result,
                            req: &req,
                            plan: &exec_plan,
                            env: None,
                        },
                    )
                    .await
                    .unwrap();
                format!("{}", scored.metrics["correct"].as_f64())
            }
            Err(err) => err.message,
        };
        outcomes.push(outcome);
    }
    env.close().await.unwrap();
    assert_eq!(outcomes[0], "1");
    assert_eq!(
        outcomes[1], "0",
        "wrong_every = 2 answers task index 1 wrongly"
    );
    assert!(
        outcomes[2].starts_with(
            "plugin example-pack@0.1.0 harness example_calculator: execute_task: panicked: \
             example_calculator was asked to panic on arith-0002"
        ),
        "{}",
        outcomes[2]
    );
    assert_eq!(outcomes[3], "0");
}
