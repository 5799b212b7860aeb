//! Tests of the `cli_agent` harness against a fake host and a scripted shell.

use agentcompass_plugin_api::contracts::{
    ExecResult, IssueSeverity, ModelEndpoint, TaskInput, TaskStatus,
};
use serde_json::Value;

use std::sync::Arc;

use agentcompass_plugin_api::contracts::PreparedTask;
use agentcompass_plugin_api::sdk::{Harness, HarnessSession};

use super::instruction::{agent_env, instruction_text, MAX_INSTRUCTION_ENV_BYTES};
use super::*;
use crate::testkit::{block_on, script_of, Call, FakeHost, FakeSession};

const KEY: &str = "sk-test-0123456789secret";

fn endpoint() -> ModelEndpoint {
    ModelEndpoint {
        model: "gpt-test".into(),
        base_url: "http://gateway:4000/v1".into(),
        api_key: KEY.into(),
        protocol: "openai-chat".into(),
    }
}

fn settings(params: Value) -> Result<Settings> {
    let mut req = RunRequest::default();
    req.harness.params = params.as_object().cloned().unwrap_or_default();
    Settings::read(&req)
}

fn host() -> Arc<FakeHost> {
    let host = FakeHost::new(vec![]);
    *host.endpoint.lock().unwrap() = Some(endpoint());
    host
}

fn task() -> PreparedTask {
    let mut input = TaskInput::new("Fix the bug in /app");
    input.workspace = Some("/app".into());
    PreparedTask::new("bug-1", input)
}

/// A session whose agent command echoes the key everywhere and writes output files.
fn leaky_session() -> Arc<FakeSession> {
    let fake = FakeSession::new(|req| {
        let script = script_of(req);
        Ok(if script.starts_with("pip") {
            ExecResult::new(0, "installed\n", "")
        } else {
            let key = req.env.get("OPENAI_API_KEY").cloned().unwrap_or_default();
            ExecResult::new(
                0,
                format!("using {key}\nall fixed\n"),
                format!("warn {key}"),
            )
        })
    });
    fake.files.lock().unwrap().insert(
        "/logs/traj.json".into(),
        json!({"steps": [{"auth": KEY, "n": 1}]}).to_string(),
    );
    fake.files
        .lock()
        .unwrap()
        .insert("/logs/notes.txt".into(), format!("plain notes {KEY}"));
    fake
}

#[test]
fn env_carries_the_endpoint_and_instruction() {
    let env = agent_env(&endpoint(), "do it", "/private/tmp/i.md", "task-7");
    let expected = [
        ("OPENAI_BASE_URL", "http://gateway:4000/v1"),
        ("OPENAI_API_KEY", KEY),
        ("OPENAI_MODEL", "gpt-test"),
        ("ANTHROPIC_BASE_URL", "http://gateway:4000"),
        ("ANTHROPIC_API_KEY", KEY),
        ("ANTHROPIC_MODEL", "gpt-test"),
        ("AGENTCOMPASS_MODEL", "gpt-test"),
        ("AGENTCOMPASS_MODEL_PROTOCOL", "openai-chat"),
        ("AGENTCOMPASS_INSTRUCTION", "do it"),
        ("AGENTCOMPASS_INSTRUCTION_FILE", "/private/tmp/i.md"),
        ("AGENTCOMPASS_TASK_ID", "task-7"),
    ];
    assert_eq!(env.len(), expected.len());
    for (key, value) in expected {
        assert_eq!(env.get(key).map(String::as_str), Some(value), "{key}");
    }
    let huge = "x".repeat(MAX_INSTRUCTION_ENV_BYTES + 1);
    assert!(!agent_env(&endpoint(), &huge, "/f", "t").contains_key("AGENTCOMPASS_INSTRUCTION"));
}

#[test]
fn runs_install_then_command_and_never_records_the_key() {
    let host = host();
    let fake = leaky_session();
    let settings = settings(json!({
        "command": "agent --task \"$AGENTCOMPASS_INSTRUCTION\"",
        "install_command": "pip install agent",
        "output_files": ["/logs/traj.json", "/logs/notes.txt", "/logs/absent.json"],
    }))
    .unwrap();
    let plan = HarnessPlan {
        run_timeout_seconds: Some(900.0),
        ..HarnessPlan::default()
    };
    let result = block_on(run(
        &host.ctx(),
        &fake.session_ref(),
        &settings,
        &task(),
        &plan,
    ))
    .unwrap();

    let calls = fake.calls();
    assert_eq!(
        calls[0],
        // The session's own tmp directory (the fake reports the container conventions).
        Call::Write(
            "/tmp/agentcompass-instruction.md".into(),
            "Fix the bug in /app".into()
        )
    );
    let (Call::Exec(install), Call::Exec(main)) = (&calls[1], &calls[2]) else {
        panic!("expected two execs: {calls:?}");
    };
    assert_eq!(script_of(install), "pip install agent");
    assert!(
        install.env.is_empty(),
        "the install step gets no model variables"
    );
    assert_eq!(install.timeout_seconds, Some(600.0));
    assert_eq!(install.cwd.as_deref(), Some("/app"));
    assert_eq!(main.env["OPENAI_API_KEY"], KEY);
    assert_eq!(main.env["AGENTCOMPASS_INSTRUCTION"], "Fix the bug in /app");
    assert!(main.timeout_seconds.unwrap() <= 900.0);
    assert_eq!(
        &calls[3..],
        &[
            Call::Read("/logs/traj.json".into()),
            Call::Read("/logs/notes.txt".into()),
            Call::Read("/logs/absent.json".into()),
        ]
    );

    assert_eq!(result.status, TaskStatus::Completed);
    assert_eq!(result.issues.len(), 1);
    assert_eq!(result.issues[0].code, "output_file_missing");
    assert_eq!(result.issues[0].severity, IssueSeverity::Warning);
    assert_eq!(
        result.final_answer.as_deref(),
        Some("using ********\nall fixed")
    );
    let traj = result.trajectory.as_ref().unwrap();
    assert_eq!(traj.steps.len(), 2);
    assert_eq!(traj.steps[0].observation[0]["stdout"], "installed\n");
    let run_step = &traj.steps[1];
    assert_eq!(run_step.user_content, json!("Fix the bug in /app"));
    assert_eq!(
        run_step.observation[1]["json"]["steps"][0]["auth"],
        "********"
    );
    assert_eq!(run_step.observation[2]["text"], "plain notes ********");
    assert!(run_step.observation[3]["error"].is_string());
    let everything = serde_json::to_string(&result).unwrap();
    assert!(!everything.contains(KEY), "{everything}");
    assert!(host.logs.lock().unwrap().iter().all(|l| !l.contains(KEY)));
}

#[test]
fn answer_file_and_failures() {
    let host = host();
    let fake = FakeSession::new(|_| Ok(ExecResult::new(2, "noise", "agent crashed")));
    fake.files
        .lock()
        .unwrap()
        .insert("/app/answer.txt".into(), "  42\n".into());
    let settings = settings(json!({"command": "agent", "answer_file": "/app/answer.txt"})).unwrap();
    let result = block_on(run(
        &host.ctx(),
        &fake.session_ref(),
        &settings,
        &task(),
        &HarnessPlan::default(),
    ))
    .unwrap();
    assert_eq!(result.final_answer.as_deref(), Some("42"));
    assert_eq!(result.status, TaskStatus::RunError);
    assert_eq!(result.issues[0].code, "agent_failed");
    assert_eq!(
        result.issues[0].message,
        "cli_agent: the agent command exited with 2: agent crashed"
    );

    let failing_install = FakeSession::new(|_| Ok(ExecResult::timeout("", "")));
    let settings = settings_with_install();
    let result = block_on(run(
        &host.ctx(),
        &failing_install.session_ref(),
        &settings,
        &task(),
        &HarnessPlan::default(),
    ))
    .unwrap();
    assert_eq!(result.issues[0].code, "agent_install_timeout");
    assert_eq!(
        failing_install.scripts(),
        ["install-it"],
        "the command is skipped"
    );
    assert_eq!(result.trajectory.unwrap().steps.len(), 1);
}

fn settings_with_install() -> Settings {
    settings(json!({"command": "agent", "install_command": "install-it"})).unwrap()
}

#[test]
fn collect_result_salvages_files_after_an_interrupted_run() {
    let fake = leaky_session();
    fake.files
        .lock()
        .unwrap()
        .insert("/app/answer.txt".into(), "partial".into());
    let session: HarnessSession = Arc::new(CliSession {
        settings: settings(json!({
            "command": "agent",
            "output_files": ["/logs/traj.json"],
            "answer_file": "/app/answer.txt",
        }))
        .unwrap(),
        env: fake.session_ref(),
    });
    let interrupted = RunResult::new("bug-1");
    let collected = block_on(CliAgent.collect_result(
        &Ctx::detached(),
        &session,
        &task(),
        &RunRequest::default(),
        &HarnessPlan::default(),
        interrupted,
    ))
    .unwrap();
    assert_eq!(collected.final_answer.as_deref(), Some("partial"));
    let traj = collected.trajectory.unwrap();
    assert_eq!(traj.steps[0].observation[0]["json"]["steps"][0]["n"], 1);
}

#[test]
fn params_are_validated() {
    assert_eq!(
        settings(json!({"command": "x", "env": {"A": "1"}}))
            .unwrap_err()
            .message,
        "harness `cli_agent`: parameter `env` is not supported (set variables with the \
         environment's run_env_variables)"
    );
    assert_eq!(
        settings(json!({})).unwrap_err().message,
        "harness `cli_agent`: missing required parameter `command`"
    );
    assert_eq!(
        settings(json!({"command": "  "})).unwrap_err().message,
        "harness `cli_agent`: parameter `command` must not be empty"
    );
    assert!(settings(json!({"command": "x", "answer_file": "rel.txt"}))
        .unwrap_err()
        .message
        .contains("parameter `answer_file` needs an absolute path"));
    assert!(settings(json!({"command": "x", "output_files": ["rel"]}))
        .unwrap_err()
        .message
        .contains("parameter `output_files` needs absolute paths"));
    let ok = settings(json!({"command": "x"})).unwrap();
    assert_eq!(ok.install_timeout_seconds, 600.0);
    assert_eq!(ok.max_output_chars, 10_000);
}

#[test]
fn instruction_from_messages_and_system_prompt() {
    let mut input = TaskInput::new("");
    input.system_prompt = Some("Rules.".into());
    input.messages = vec![
        agentcompass_plugin_api::contracts::Message::new("user", "part one"),
        agentcompass_plugin_api::contracts::Message::new("assistant", "ignored"),
        agentcompass_plugin_api::contracts::Message::new("user", "part two"),
    ];
    assert_eq!(
        instruction_text(&PreparedTask::new("t", input)),
        "Rules.\n\npart one\n\npart two"
    );
}
