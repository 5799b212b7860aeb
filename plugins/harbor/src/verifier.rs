//! The verifier of a Harbor task or step: `tests/test.sh` (or the image's own, when a separate
//! verifier's image bundles its tests) run in the evaluation environment within the
//! evaluation budget, its output tails kept, its reward read (`reward.json` over
//! `reward.txt`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use agentcompass_plugin_api::contracts::{
    EvaluationEnvironmentMode, ExecRequest, ExecResult, ExecutionIssue, ExecutionPlan, IssuePhase,
    RunResult, TaskSpec, TaskStep,
};
use agentcompass_plugin_api::sdk::{Ctx, EvaluationInput, SessionRef};
use agentcompass_plugin_api::Result;
use serde_json::{json, Value};

use crate::commands::{
    open_logs, run_checked, tail, LOG_DIRS, OUTPUT_TAIL_CHARS, TEST_STDERR, TEST_STDOUT,
};
use crate::names::ID;
use crate::reward::{self, RewardError, REWARD_JSON, REWARD_TXT};
use crate::verifier_files::VerifierFiles;

/// The issue when evaluation has no environment to run `tests/test.sh` in.
fn no_environment_issue(plan: &ExecutionPlan) -> ExecutionIssue {
    ExecutionIssue::error(
        IssuePhase::Evaluate,
        "no_environment",
        format!(
            "{ID}: tests/test.sh needs an environment, but the evaluation mode is `{}` (use reuse or fresh)",
            plan.evaluation_environment_mode
        ),
    )
}

/// Where `tests/test.sh` runs: the working directory of the evaluation environment. A fresh
/// verifier has only its own (seed 004: omitted values of an explicit verifier environment
/// are not inherited, so no workdir means the environment's default directory); the reused
/// task environment has its own, else the one recorded in the plan.
fn verifier_workdir(plan: &ExecutionPlan, planned: Option<String>) -> Option<String> {
    match (
        plan.evaluation_environment_mode,
        &plan.evaluation_environment,
    ) {
        (EvaluationEnvironmentMode::Fresh, Some(fresh)) => fresh.setup.workdir.clone(),
        _ => plan.environment.setup.workdir.clone().or(planned),
    }
}

/// What a verifier run uploads and runs: the test directories (uploaded to `/tests` in
/// order, later ones over earlier ones), extra bindings of `test.sh`, and the script's name
/// for messages. A separate verifier whose image bundles its tests (`bundled`) runs the
/// image's `/tests/test.sh` as Harbor does, uploading nothing (unless the image has none: a
/// request that replaced the verifier's image).
pub(crate) struct Verifier {
    pub(crate) tests: Vec<PathBuf>,
    pub(crate) env: BTreeMap<String, String>,
    pub(crate) script: String,
    pub(crate) bundled: bool,
}

/// Whether the fresh verifier of `plan` runs tests bundled in its image: the step's record
/// (`verifier_bundled`), else the task's.
pub(crate) fn bundled(task: &TaskSpec, step: Option<&TaskStep>, plan: &ExecutionPlan) -> bool {
    if plan.evaluation_environment_mode != EvaluationEnvironmentMode::Fresh {
        return false;
    }
    step.and_then(|s| s.metadata.get("verifier_bundled"))
        .or_else(|| {
            task.metadata
                .get(ID)
                .and_then(|h| h.get("verifier_bundled"))
        })
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// Runs `verifier` in the evaluation environment and reads its reward into the result.
pub(crate) async fn evaluate_with(
    ctx: &Ctx,
    input: EvaluationInput<'_>,
    planned_workdir: Option<String>,
    internal_user: Option<String>,
    verifier: &Verifier,
) -> Result<RunResult> {
    let EvaluationInput {
        task,
        mut result,
        plan,
        env,
        ..
    } = input;
    let started = Instant::now();
    let Some(env) = env else {
        result.push_issue(no_environment_issue(plan));
        return Ok(result);
    };
    let workdir = verifier_workdir(plan, planned_workdir);
    let root = internal_user.as_deref();
    let out = run_verifier(ctx, env, verifier, workdir, plan, started, root).await?;
    let files = VerifierFiles::read(env).await?;
    let mut extra = verifier_output(ctx, &files, &out).await;
    if out.timed_out {
        result.push_issue(ExecutionIssue::error(
            IssuePhase::Evaluate,
            "verifier_timeout",
            format!(
                "{ID}: {} of task {} did not finish within the evaluation timeout",
                verifier.script, task.task_id
            ),
        ));
        result.extra.insert("harbor".into(), extra);
        return Ok(result);
    }
    record_reward(&files, task, &out, &mut result, &mut extra);
    result.extra.insert("harbor".into(), extra);
    Ok(result)
}

/// Runs `tests/test.sh` in `env`: clears stale reward files and `/tests` (an agent could
/// pre-write a reward), uploads the task's `tests/` and runs the script, within what is
/// left of the evaluation budget (a small reserve lets the timeout be reported as
/// `verifier_timeout` before the runtime's watchdog fires).
async fn run_verifier(
    ctx: &Ctx,
    env: &SessionRef,
    verifier: &Verifier,
    workdir: Option<String>,
    plan: &ExecutionPlan,
    started: Instant,
    root: Option<&str>,
) -> Result<ExecResult> {
    let bundled = verifier.bundled && env.is_file("/tests/test.sh").await?;
    let clear = if bundled {
        ""
    } else {
        " && mkdir -p /tests && find /tests -mindepth 1 -delete"
    };
    run_checked(
        ctx,
        env,
        &open_logs(format!(
            "mkdir -p {LOG_DIRS} && rm -f {REWARD_TXT} {REWARD_JSON} {TEST_STDOUT} {TEST_STDERR}{clear}"
        ), root),
        "removing stale reward files and /tests",
        root,
    )
    .await?;
    if !bundled {
        for tests in &verifier.tests {
            env.upload_dir(tests, "/tests").await?;
        }
    }
    let mut request = ExecRequest::shell(format!(
        "bash /tests/test.sh > {TEST_STDOUT} 2> {TEST_STDERR}"
    ));
    request.cwd = workdir;
    request.env = verifier.env.clone();
    if let Some(budget) = plan.evaluation_timeout_seconds {
        let reserve = (budget * 0.05).min(5.0);
        let left = budget - started.elapsed().as_secs_f64() - reserve;
        request.timeout_seconds = Some(left.max(1.0));
    }
    env.exec(request).await
}

/// The verifier's exit status and output tails (unreadable output counts as empty).
async fn verifier_output(ctx: &Ctx, files: &VerifierFiles, out: &ExecResult) -> Value {
    let (stdout, stderr) = (files.stdout.as_deref(), files.stderr.as_deref());
    json!({
        "test_exit_code": out.returncode,
        "test_timed_out": out.timed_out,
        "test_stdout_tail": tail(&ctx.scrub(stdout.unwrap_or_default()).await, OUTPUT_TAIL_CHARS),
        "test_stderr_tail": tail(&ctx.scrub(stderr.unwrap_or_default()).await, OUTPUT_TAIL_CHARS),
    })
}

/// Reads the reward (`reward.json` wins over `reward.txt`) into the metrics, or records
/// why there is none as an issue.
fn record_reward(
    files: &VerifierFiles,
    task: &TaskSpec,
    out: &ExecResult,
    result: &mut RunResult,
    extra: &mut Value,
) {
    let json_text = files.reward_json.clone();
    let txt_text = if json_text.is_none() {
        files.reward_txt.clone()
    } else {
        None
    };
    match reward::from_files(json_text.as_deref(), txt_text.as_deref()) {
        Ok(rewards) => {
            result.metrics.extend(reward::metrics(&rewards));
            extra["reward_file"] = rewards.source.into();
            extra["rewards"] = json!(rewards.values);
        }
        Err(RewardError { code, message }) => {
            result.push_issue(ExecutionIssue::error(
                IssuePhase::Evaluate,
                code,
                format!(
                    "{ID}: task {}: {message} (test.sh exit code {})",
                    task.task_id, out.returncode
                ),
            ));
        }
    }
}
