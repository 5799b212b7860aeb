//! Tests of the `terminus` harness against a scripted model and a fake shell.

use agentcompass_plugin_api::contracts::{
    ExecResult, IssueSeverity, TaskInput, TaskStatus, TokenUsage,
};
use agentcompass_plugin_api::{Error, ErrorKind};
use serde_json::Value;

use agentcompass_plugin_api::contracts::PreparedTask;
use agentcompass_plugin_api::sdk::Harness;
use std::sync::Arc;

use super::prompt::NUDGE;
use super::*;
use crate::testkit::{
    bash_answer, block_on, script_of, text_answer, tool_answer, FakeHost, FakeSession,
};

fn settings(params: Value) -> Settings {
    let mut req = RunRequest::default();
    req.harness.params = params.as_object().cloned().unwrap_or_default();
    Settings::read(&req).unwrap()
}

fn task() -> PreparedTask {
    let mut input = TaskInput::new("Create /app/hello.txt containing hello");
    input.system_prompt = Some("Stay in /app.".into());
    PreparedTask::new("hello", input)
}

fn run_agent(
    host: &Arc<FakeHost>,
    fake: &Arc<FakeSession>,
    settings: &Settings,
    plan: &HarnessPlan,
) -> Result<RunResult> {
    let ctx = host.ctx();
    let env = fake.session_ref();
    let task = task();
    block_on(Agent::new(&ctx, &env, settings, &task, plan).run())
}

/// A shell that knows `ls`, `echo hello > hello.txt` and `cat hello.txt`.
fn shell() -> Arc<FakeSession> {
    FakeSession::new(|req| {
        let script = script_of(req);
        Ok(match script.as_str() {
            "ls" => ExecResult::new(0, "README.md\n", ""),
            "echo hello > hello.txt" => ExecResult::new(0, "", ""),
            "cat hello.txt" => ExecResult::new(0, "hello\n", ""),
            "sleep 999" => ExecResult::timeout("", ""),
            _ => ExecResult::new(127, "", format!("bash: {script}: command not found")),
        })
    })
}

#[test]
fn solves_a_scripted_multi_step_task() {
    let host = FakeHost::new(vec![
        bash_answer("c1", "ls"),
        bash_answer("c2", "echo hello > hello.txt"),
        bash_answer("c3", "cat hello.txt"),
        tool_answer("c4", "done", json!({"summary": "wrote hello.txt"})),
    ]);
    let fake = shell();
    let plan = HarnessPlan::default();
    let result = run_agent(&host, &fake, &settings(json!({})), &plan).unwrap();
    assert_eq!(result.status, TaskStatus::Completed, "{:?}", result.issues);
    assert_eq!(result.final_answer.as_deref(), Some("wrote hello.txt"));
    assert_eq!(
        fake.scripts(),
        ["ls", "echo hello > hello.txt", "cat hello.txt"]
    );
    let crate::testkit::Call::Exec(first) = &fake.calls()[0] else {
        panic!("expected exec");
    };
    assert_eq!(
        first.command,
        agentcompass_plugin_api::contracts::ExecCommand::Argv(vec![
            "bash".into(),
            "-c".into(),
            "ls".into()
        ])
    );
    assert_eq!(first.timeout_seconds, Some(120.0));
    assert_eq!(first.cwd, None);

    // The conversation grows with each assistant turn and tool result.
    let requests = host.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(requests[0].messages.len(), 2);
    assert!(requests[0].messages[0]
        .content
        .as_str()
        .unwrap()
        .contains("Stay in /app."));
    assert!(requests[0].messages[0]
        .content
        .as_str()
        .unwrap()
        .contains("`/app`"));
    assert_eq!(requests[0].tools.len(), 2);
    let last = &requests[3].messages;
    assert_eq!(last.len(), 2 + 3 * 2);
    assert_eq!(last[3].role, "tool");
    assert_eq!(last[3].tool_call_id.as_deref(), Some("c1"));
    assert_eq!(last[3].content, "exit_code: 0\nREADME.md\n");
    assert_eq!(last[7].content, "exit_code: 0\nhello\n");

    let traj = result.trajectory.unwrap();
    assert_eq!(traj.steps.len(), 4);
    assert_eq!(
        traj.steps.iter().map(|s| s.step_id).collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
    let first = &traj.steps[0];
    assert_eq!(
        first.user_content,
        json!("Create /app/hello.txt containing hello")
    );
    assert!(first.system_prompt.is_some() && traj.steps[1].system_prompt.is_none());
    assert_eq!(first.tools[0]["name"], "bash");
    assert_eq!(first.observation[0]["command"], "ls");
    assert_eq!(first.observation[0]["exit_code"], 0);
    assert_eq!(first.observation[0]["output"], "README.md\n");
    assert!(first.observation[0]["duration_ms"].is_u64());
    assert_eq!(first.metric.prompt_tokens_len, Some(10));
    assert_eq!(first.metric.llm_infer_ms, Some(5.0));
    assert!(first.metric.env_action_ms.is_some());
    assert_eq!(
        first.assistant_content.tool_calls[0]["function"]["name"],
        "bash"
    );
    assert_eq!(traj.steps[3].observation[0]["summary"], "wrote hello.txt");
    assert_eq!(result.telemetry["turns"], 4);
    assert_eq!(result.telemetry["tool_calls"], 4);
    assert_eq!(result.telemetry["bash_calls"], 3);
    assert_eq!(result.telemetry["finish_reason"], "done");
}

#[test]
fn failing_and_timed_out_commands_are_observed() {
    let host = FakeHost::new(vec![
        bash_answer("c1", "frobnicate"),
        bash_answer("c2", "sleep 999"),
        tool_answer("c3", "bash", json!({})),
        tool_answer("c4", "python", json!({"code": "1"})),
        tool_answer("c5", "submit", json!("{\"summary\": \"gave up\"}")),
    ]);
    let fake = shell();
    let plan = HarnessPlan {
        run_timeout_seconds: Some(1000.0),
        ..HarnessPlan::default()
    };
    let settings = settings(json!({"command_timeout_seconds": 7}));
    let result = run_agent(&host, &fake, &settings, &plan).unwrap();
    assert_eq!(result.status, TaskStatus::Completed);
    assert_eq!(result.final_answer.as_deref(), Some("gave up"));
    let last = host.requests().pop().unwrap().messages;
    let tool_texts: Vec<String> = last
        .iter()
        .filter(|m| m.role == "tool")
        .map(|m| m.content.as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        tool_texts[0],
        "exit_code: 127\n[stderr]\nbash: frobnicate: command not found"
    );
    assert_eq!(
        tool_texts[1],
        "exit_code: 124 (timed out after 7s)\n(no output)"
    );
    assert!(tool_texts[2].contains("needs a non-empty string argument `command`"));
    assert!(tool_texts[3].contains("unknown tool `python`"));
    let traj = result.trajectory.unwrap();
    assert_eq!(traj.steps[1].observation[0]["timed_out"], true);
    assert_eq!(traj.steps[1].observation[0]["exit_code"], 124);
}

#[test]
fn the_run_timeout_caps_the_command_timeout() {
    let ctx = Ctx::detached();
    let fake = shell();
    let env = fake.session_ref();
    let settings = settings(json!({}));
    let task = task();
    let plan = |run: Option<f64>| HarnessPlan {
        run_timeout_seconds: run,
        ..HarnessPlan::default()
    };
    let capped = Agent::new(&ctx, &env, &settings, &task, &plan(Some(50.0)));
    let timeout = capped.command_timeout();
    assert!((49.0..=50.0).contains(&timeout), "{timeout}");
    let spent = Agent::new(&ctx, &env, &settings, &task, &plan(Some(0.5)));
    assert_eq!(spent.command_timeout(), 1.0);
    let free = Agent::new(&ctx, &env, &settings, &task, &plan(None));
    assert_eq!(free.command_timeout(), 120.0);
}

#[test]
fn the_requests_max_turns_is_a_limit_exceeded() {
    let host = FakeHost::new(vec![
        bash_answer("c1", "ls"),
        bash_answer("c2", "ls"),
        bash_answer("c3", "ls"),
    ]);
    let fake = shell();
    let mut req = RunRequest::default();
    req.execution.limits.max_turns = Some(2);
    let limited = Settings::read(&req).unwrap();
    assert_eq!(
        (limited.max_turns, limited.turns_limited_by_request),
        (2, true)
    );
    let result = run_agent(&host, &fake, &limited, &HarnessPlan::default()).unwrap();
    assert_eq!(result.issues.len(), 1);
    assert_eq!(result.issues[0].code, "limit_exceeded");
    assert_eq!(
        result.issues[0].message,
        "execution.limits.max_turns (2) reached: 2 turns without calling `done`"
    );
    assert_eq!(host.requests().len(), 2);
    // The harness's own max_turns wins when it is lower.
    req.harness.params = json!({"max_turns": 1}).as_object().cloned().unwrap();
    let own = Settings::read(&req).unwrap();
    assert_eq!((own.max_turns, own.turns_limited_by_request), (1, false));
}

#[test]
fn turn_limit() {
    let host = FakeHost::new(vec![
        bash_answer("c1", "ls"),
        bash_answer("c2", "ls"),
        bash_answer("c3", "ls"),
    ]);
    let fake = shell();
    let result = run_agent(
        &host,
        &fake,
        &settings(json!({"max_turns": 2})),
        &HarnessPlan::default(),
    )
    .unwrap();
    assert_eq!(result.status, TaskStatus::RunError);
    assert_eq!(result.issues.len(), 1);
    assert_eq!(result.issues[0].code, "turn_limit");
    assert_eq!(
        result.issues[0].message,
        "terminus: reached max_turns (2) without calling `done`"
    );
    assert_eq!(host.requests().len(), 2);
    assert_eq!(result.trajectory.unwrap().steps.len(), 2);
    assert_eq!(result.telemetry["finish_reason"], "turn_limit");
}

#[test]
fn cost_limit() {
    let priced = |id: &str, cost: f64| {
        let mut answer = bash_answer(id, "ls").unwrap();
        answer.usage = TokenUsage {
            cost_usd: Some(cost),
            requests: 1,
            ..TokenUsage::default()
        };
        Ok(answer)
    };
    let host = FakeHost::new(vec![
        priced("c1", 0.4),
        priced("c2", 0.4),
        priced("c3", 0.4),
    ]);
    let fake = shell();
    let result = run_agent(
        &host,
        &fake,
        &settings(json!({"cost_limit_usd": 0.5})),
        &HarnessPlan::default(),
    )
    .unwrap();
    assert_eq!(result.issues.len(), 1, "{:?}", result.issues);
    assert_eq!(result.issues[0].code, "cost_limit");
    assert!(result.issues[0].message.contains("after 2 turn(s)"));
    assert_eq!(host.requests().len(), 2);
    assert_eq!(result.telemetry["finish_reason"], "cost_limit");
}

#[test]
fn nudges_once_then_treats_a_second_toolless_reply_as_done() {
    let host = FakeHost::new(vec![
        text_answer("I think I should look around."),
        bash_answer("c1", "ls"),
        text_answer("The answer is 42."),
    ]);
    let fake = shell();
    let result = run_agent(&host, &fake, &settings(json!({})), &HarnessPlan::default()).unwrap();
    assert_eq!(result.status, TaskStatus::Completed);
    assert_eq!(result.final_answer.as_deref(), Some("The answer is 42."));
    let requests = host.requests();
    assert_eq!(requests.len(), 3);
    let nudge = &requests[1].messages[3];
    assert_eq!(
        (nudge.role.as_str(), nudge.content.as_str()),
        ("user", Some(NUDGE))
    );
    let traj = result.trajectory.unwrap();
    assert_eq!(traj.steps[1].user_content, json!(NUDGE));
    assert_eq!(result.telemetry["nudges"], 1);
    assert_eq!(result.telemetry["finish_reason"], "no_tool_calls");
}

#[test]
fn output_is_truncated_keeping_head_and_tail() {
    let big: String = format!("HEAD{}TAIL", "x".repeat(5000));
    let fake = FakeSession::new(move |_| Ok(ExecResult::new(0, big.clone(), "")));
    let host = FakeHost::new(vec![
        bash_answer("c1", "cat big"),
        tool_answer("c2", "done", json!({})),
    ]);
    let result = run_agent(
        &host,
        &fake,
        &settings(json!({"max_output_chars": 200})),
        &HarnessPlan::default(),
    )
    .unwrap();
    let tool = host.requests()[1].messages[3]
        .content
        .as_str()
        .unwrap()
        .to_string();
    assert!(tool.starts_with("exit_code: 0\nHEAD"), "{tool}");
    assert!(tool.ends_with("TAIL"), "{tool}");
    assert!(
        tool.contains("[... 4808 characters truncated ...]"),
        "{tool}"
    );
    assert!(tool.len() < 300);
    let traj = result.trajectory.unwrap();
    let observed = traj.steps[0].observation[0]["output"].as_str().unwrap();
    assert!(observed.len() < 300);
    // No summary and no content: no final answer.
    assert_eq!(result.final_answer, None);
}

#[test]
fn gateway_and_environment_failures_end_the_run() {
    let host = FakeHost::new(vec![bash_answer("c1", "ls"), Err(Error::msg("HTTP 503"))]);
    let result = run_agent(
        &host,
        &shell(),
        &settings(json!({})),
        &HarnessPlan::default(),
    )
    .unwrap();
    assert_eq!(result.issues[0].code, "model_failed");
    assert_eq!(result.issues[0].severity, IssueSeverity::Fatal);
    assert_eq!(result.trajectory.unwrap().steps.len(), 2);

    let broken = FakeSession::new(|_| Err(Error::environment("container is gone")));
    let host = FakeHost::new(vec![bash_answer("c1", "ls")]);
    let result = run_agent(
        &host,
        &broken,
        &settings(json!({})),
        &HarnessPlan::default(),
    )
    .unwrap();
    assert_eq!(result.issues[0].code, "environment_failed");
    assert!(result.issues[0].message.contains("container is gone"));
    assert_eq!(result.telemetry["finish_reason"], "environment_error");
}

#[test]
fn cancellation_stops_the_loop() {
    let host = FakeHost::new(vec![bash_answer("c1", "ls"), bash_answer("c2", "ls")]);
    *host.cancel_after.lock().unwrap() = Some(1);
    let err = run_agent(
        &host,
        &shell(),
        &settings(json!({})),
        &HarnessPlan::default(),
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Cancelled);
    assert_eq!(host.requests().len(), 1);
}

#[test]
fn a_spent_run_budget_stops_the_loop_gracefully() {
    let host = FakeHost::new(vec![bash_answer("c1", "ls")]);
    let plan = HarnessPlan {
        run_timeout_seconds: Some(1e-9),
        ..HarnessPlan::default()
    };
    let result = run_agent(&host, &shell(), &settings(json!({})), &plan).unwrap();
    assert_eq!(result.issues[0].code, "run_timeout");
    assert_eq!(result.telemetry["finish_reason"], "run_timeout");
    assert!(host.requests().is_empty());
    // The model timeout follows the remaining budget.
    let ctx = Ctx::detached();
    let fake = shell();
    let env = fake.session_ref();
    let task = task();
    let configured = settings(json!({"request_timeout_seconds": 30}));
    let long = HarnessPlan {
        run_timeout_seconds: Some(1000.0),
        ..HarnessPlan::default()
    };
    let agent = Agent::new(&ctx, &env, &configured, &task, &long);
    assert_eq!(agent.model_timeout(), Some(30.0));
    let short = HarnessPlan {
        run_timeout_seconds: Some(10.0),
        ..HarnessPlan::default()
    };
    let agent = Agent::new(&ctx, &env, &configured, &task, &short);
    assert_eq!(agent.model_timeout(), Some(10.0));
    let defaults = settings(json!({}));
    let agent = Agent::new(&ctx, &env, &defaults, &task, &HarnessPlan::default());
    assert_eq!(agent.model_timeout(), None);
}

#[test]
fn collect_result_keeps_the_steps_of_an_interrupted_run() {
    let host = FakeHost::new(vec![bash_answer("c1", "ls"), bash_answer("c2", "ls")]);
    let fake = shell();
    let req = RunRequest::default();
    let ctx = host.ctx();
    let session =
        block_on(Terminus.start_session(&ctx, &fake.session_ref(), &req, &HarnessPlan::default()))
            .unwrap();
    // The script runs out after two turns: the loop ends with a model error, but the
    // journal has both steps whatever happens to the returned result.
    let executed =
        block_on(Terminus.execute_task(&ctx, &session, &task(), &req, &HarnessPlan::default()))
            .unwrap();
    assert_eq!(executed.trajectory.unwrap().steps.len(), 3);
    let interrupted = RunResult::new("hello");
    let collected = block_on(Terminus.collect_result(
        &ctx,
        &session,
        &task(),
        &req,
        &HarnessPlan::default(),
        interrupted,
    ))
    .unwrap();
    let steps = collected.trajectory.unwrap().steps;
    assert_eq!(steps.len(), 3);
    assert_eq!(steps[0].observation[0]["command"], "ls");
}

#[test]
fn params_are_validated() {
    let mut req = RunRequest::default();
    req.harness.params = json!({"max_turns": 0}).as_object().cloned().unwrap();
    assert_eq!(
        Settings::read(&req).unwrap_err().message,
        "harness `terminus`: parameter `max_turns` must be an integer of at least 1 (found 0)"
    );
    req.harness.params = json!({"cost_limit_usd": "1"}).as_object().cloned().unwrap();
    assert_eq!(
        Settings::read(&req).unwrap_err().message,
        "harness `terminus`: parameter `cost_limit_usd` expects number, found string"
    );
    let defaults = settings(json!({}));
    assert_eq!(defaults.max_turns, 30);
    assert_eq!(defaults.command_timeout_seconds, 120.0);
    assert_eq!(defaults.max_output_chars, 10_000);
    assert_eq!(defaults.cost_limit_usd, None);
}
