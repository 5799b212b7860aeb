//! One run of an installed agent: its files and directories, the CLI under what is left of
//! the run timeout (stdout and stderr to its log directory), then its record parsed into the
//! result.

use std::time::Instant;

use agentcompass_plugin_api::contracts::{
    ExecRequest, ExecResult, ExecutionIssue, HarnessPlan, IssuePhase, PreparedTask, RunResult,
    Trajectory,
};
use agentcompass_plugin_api::sdk::{Ctx, SessionRef};
use agentcompass_plugin_api::{Error, Result};
use serde_json::{json, Value};

use super::agents::{AgentCli, Launch, LaunchInput, Record};
use super::settings::Settings;
use crate::cli_agent::instruction_text;
use crate::text::{one_line_tail, scrub};
use crate::trajectory::iso_now;
use crate::transcript::{codex_events, mini_trajectory, stream_json, Transcript};

/// The wrapper every agent runs under: makes its directories and files (from the
/// `AGENTCOMPASS_SETUP_*` variables, which the agent does not see), then replaces itself with
/// the agent, stdin closed, stdout and stderr into the log directory.
const WRAPPER: &str = r#"set -e
while IFS= read -r dir; do
  if [ -n "$dir" ]; then mkdir -p -- "$dir"; fi
done <<AGENTCOMPASS_DIRS
$AGENTCOMPASS_SETUP_DIRS
AGENTCOMPASS_DIRS
n=0
while path_var="AGENTCOMPASS_SETUP_FILE_$n" && [ -n "${!path_var:-}" ]; do
  text_var="AGENTCOMPASS_SETUP_TEXT_$n"
  mkdir -p -- "$(dirname -- "${!path_var}")"
  printf '%s' "${!text_var}" > "${!path_var}"
  n=$((n + 1))
done
while IFS='	' read -r from to; do
  if [ -n "$from" ]; then
    mkdir -p -- "$to"
    cp -r -- "$from"/. "$to"/ 2>/dev/null || true
  fi
done <<AGENTCOMPASS_COPIES
$AGENTCOMPASS_SETUP_COPIES
AGENTCOMPASS_COPIES
logs="$AGENTCOMPASS_SETUP_LOGS"
unset "${!AGENTCOMPASS_SETUP_@}"
exec "$@" > "$logs/stdout.log" 2> "$logs/stderr.log" < /dev/null
"#;

/// The seconds of the run timeout left for the agent itself: the exec's own timeout stops it
/// (killing its process group) just before the host's watchdog would.
const TIMEOUT_MARGIN_SECONDS: f64 = 0.5;

/// Characters of stderr kept in an issue message.
const MAX_STDERR_IN_ISSUE: usize = 400;

/// Runs `agent` on the prepared task and reads its record into the result.
pub(super) async fn run(
    agent: AgentCli,
    ctx: &Ctx,
    env: &SessionRef,
    settings: &Settings,
    prepared: &PreparedTask,
    plan: &HarnessPlan,
) -> Result<RunResult> {
    let started = Instant::now();
    let started_at = iso_now();
    let id = agent.id();
    let endpoint = ctx
        .model_endpoint()
        .await
        .map_err(|e| e.context(format!("{id}: the model endpoint is unavailable")))?;
    let prompt = instruction_text(prepared);
    let launch = agent.launch(&LaunchInput {
        endpoint: &endpoint,
        prompt: &prompt,
        retries: settings.agent_retries,
        extra_args: &settings.extra_args,
        max_turns: settings.max_turns,
        inputs: &prepared.agent_inputs,
    })?;
    let mut request = exec_request(agent, &launch, prepared);
    let timeout = agent_timeout(plan, started);
    request.timeout_seconds = timeout;
    if ctx.is_cancelled() {
        return Err(Error::cancelled());
    }
    ctx.progress(json!({"step": "running agent", "agent": id, "task_id": prepared.task_id}));
    let outcome = env.exec(request).await.map_err(|e| {
        Error::new(
            e.kind,
            format!(
                "{id}: running the agent: {}",
                scrub(&e.message, &endpoint.api_key)
            ),
        )
    })?;
    let mut result = RunResult::for_task(prepared);
    record_telemetry(agent, settings, &outcome, started, &mut result);
    let transcript = read_transcript(agent, ctx, env, &endpoint.api_key, &mut result).await;
    let stderr = read_scrubbed(
        ctx,
        env,
        &format!("{}/stderr.log", agent.log_dir()),
        &endpoint.api_key,
    )
    .await
    .unwrap_or_default();
    record_outcome(
        agent,
        &outcome,
        timeout,
        settings.max_turns,
        &transcript,
        &stderr,
        &mut result,
    );
    fill(&mut result, transcript, &prompt, started_at);
    Ok(result)
}

/// The exec of `launch`: the agent under the `WRAPPER` script, its setup in the wrapper's
/// `AGENTCOMPASS_SETUP_*` variables, in the task's workspace (if it names one).
fn exec_request(agent: AgentCli, launch: &Launch, prepared: &PreparedTask) -> ExecRequest {
    let mut request = ExecRequest::argv(
        ["bash", "-c", WRAPPER, agent.id()]
            .into_iter()
            .map(str::to_string)
            .chain(launch.argv.iter().cloned()),
    );
    request.env = launch.env.clone();
    request
        .env
        .insert("AGENTCOMPASS_SETUP_DIRS".into(), launch.dirs.join("\n"));
    request
        .env
        .insert("AGENTCOMPASS_SETUP_LOGS".into(), agent.log_dir());
    let copies: Vec<String> = launch
        .copies
        .iter()
        .map(|(from, to)| format!("{from}\t{to}"))
        .collect();
    request
        .env
        .insert("AGENTCOMPASS_SETUP_COPIES".into(), copies.join("\n"));
    for (i, (path, text)) in launch.files.iter().enumerate() {
        request
            .env
            .insert(format!("AGENTCOMPASS_SETUP_FILE_{i}"), path.clone());
        request
            .env
            .insert(format!("AGENTCOMPASS_SETUP_TEXT_{i}"), text.clone());
    }
    request.cwd = prepared
        .input
        .workspace
        .clone()
        .filter(|w| !w.trim().is_empty());
    request
}

/// The seconds of the run timeout left for the agent (at least one), if the plan has one.
fn agent_timeout(plan: &HarnessPlan, started: Instant) -> Option<f64> {
    plan.run_timeout_seconds
        .map(|run| (run - started.elapsed().as_secs_f64() - TIMEOUT_MARGIN_SECONDS).max(1.0))
}

/// The agent, its package, version and protocol, its exit code and duration in the result's
/// telemetry.
fn record_telemetry(
    agent: AgentCli,
    settings: &Settings,
    outcome: &ExecResult,
    started: Instant,
    result: &mut RunResult,
) {
    result.telemetry.insert("agent".into(), json!(agent.id()));
    result
        .telemetry
        .insert("agent_package".into(), json!(agent.package()));
    result
        .telemetry
        .insert("agent_version".into(), json!(settings.version));
    result
        .telemetry
        .insert("agent_protocol".into(), json!(agent.protocol()));
    result
        .telemetry
        .insert("exit_code".into(), json!(outcome.returncode));
    result.telemetry.insert(
        "agent_duration_ms".into(),
        json!(started.elapsed().as_millis() as u64),
    );
}

/// After a run the host cut short: what the agent recorded so far.
pub(super) async fn salvage(
    agent: AgentCli,
    ctx: &Ctx,
    env: &SessionRef,
    prepared: &PreparedTask,
    mut result: RunResult,
) -> RunResult {
    let transcript = read_transcript(agent, ctx, env, "", &mut result).await;
    if !transcript.steps.is_empty() {
        fill(
            &mut result,
            transcript,
            &instruction_text(prepared),
            iso_now(),
        );
    }
    result
}

/// `path` in the environment with the host's secrets and `secret` scrubbed; `None` when it
/// cannot be read.
async fn read_scrubbed(ctx: &Ctx, env: &SessionRef, path: &str, secret: &str) -> Option<String> {
    let text = env.read_text(path).await.ok()?;
    Some(scrub(&ctx.scrub(&text).await, secret))
}

/// The agent's record of the run, parsed (a missing or unreadable record is a warning issue
/// and an empty transcript).
async fn read_transcript(
    agent: AgentCli,
    ctx: &Ctx,
    env: &SessionRef,
    secret: &str,
    result: &mut RunResult,
) -> Transcript {
    let record = agent.record();
    let path = match &record {
        Record::StreamJson | Record::CodexEvents => format!("{}/stdout.log", agent.log_dir()),
        Record::MiniTrajectory(path) => path.clone(),
    };
    let Some(text) = read_scrubbed(ctx, env, &path, secret).await else {
        result.push_issue(ExecutionIssue::warning(
            IssuePhase::Run,
            "agent_record_missing",
            format!("{}: the agent left no record at {path}", agent.id()),
        ));
        return Transcript::default();
    };
    match record {
        Record::StreamJson => stream_json(&text),
        Record::CodexEvents => codex_events(&text),
        Record::MiniTrajectory(_) => mini_trajectory(&text).unwrap_or_else(|why| {
            result.push_issue(ExecutionIssue::warning(
                IssuePhase::Run,
                "agent_record_unreadable",
                format!("{}: cannot read its trajectory {path}: {why}", agent.id()),
            ));
            Transcript::default()
        }),
    }
}

/// The issue of the run's ending: stopped at the run timeout, a failing exit, or a failure the
/// agent reported itself.
fn record_outcome(
    agent: AgentCli,
    outcome: &ExecResult,
    timeout: Option<f64>,
    max_turns: Option<u64>,
    transcript: &Transcript,
    stderr: &str,
    result: &mut RunResult,
) {
    let id = agent.id();
    let why = || {
        transcript
            .failure
            .clone()
            .unwrap_or_else(|| one_line_tail(stderr, MAX_STDERR_IN_ISSUE))
    };
    let failed = outcome.returncode != 0 || transcript.failure.is_some();
    if let Some(turns) = max_turns.filter(|_| !outcome.timed_out && failed) {
        let why = why();
        if stopped_at_turn_limit(&why) {
            result.push_issue(ExecutionIssue::error(
                IssuePhase::Run,
                "limit_exceeded",
                format!("execution.limits.max_turns ({turns}) reached: {id} stopped ({why})"),
            ));
            return;
        }
    }
    if outcome.timed_out {
        let limit = timeout.map_or_else(String::new, |t| format!(" ({t:.0} s left of it)"));
        result
            .telemetry
            .insert("timed_out".into(), Value::Bool(true));
        result.push_issue(ExecutionIssue::error(
            IssuePhase::Run,
            "run_timeout",
            format!("{id}: the agent ran into the run timeout{limit} and was stopped"),
        ));
    } else if outcome.returncode != 0 {
        result.push_issue(ExecutionIssue::error(
            IssuePhase::Run,
            "agent_failed",
            format!(
                "{id}: the agent exited with {}: {}",
                outcome.returncode,
                why()
            ),
        ));
    } else if let Some(failure) = &transcript.failure {
        result.push_issue(ExecutionIssue::error(
            IssuePhase::Run,
            "agent_failed",
            format!("{id}: the agent reported a failure: {failure}"),
        ));
    }
}

/// Whether an agent's failure is its own turn limit: Claude Code's `error_max_turns`,
/// mini-swe-agent's `LimitsExceeded`.
fn stopped_at_turn_limit(failure: &str) -> bool {
    failure.contains("error_max_turns") || failure.contains("LimitsExceeded")
}

/// The transcript's steps, answer, commands and the agent's own figures in the result.
fn fill(result: &mut RunResult, transcript: Transcript, prompt: &str, started_at: String) {
    let Transcript {
        mut steps,
        commands,
        final_answer,
        warnings,
        reported_usage,
        ..
    } = transcript;
    if let Some(first) = steps.first_mut() {
        if first.user_content.is_null() {
            first.user_content = json!(prompt);
        }
    }
    result.final_answer = final_answer;
    result
        .telemetry
        .insert("agent_commands".into(), json!(commands));
    if !warnings.is_empty() {
        result
            .telemetry
            .insert("agent_warnings".into(), json!(warnings));
    }
    if let Some(usage) = reported_usage {
        result.telemetry.insert(
            "agent_reported_usage".into(),
            json!({
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "cost_usd": usage.cost_usd,
            }),
        );
    }
    result.trajectory = Some(Trajectory {
        steps,
        started_at: Some(started_at),
        finished_at: Some(iso_now()),
        ..Trajectory::default()
    });
}
