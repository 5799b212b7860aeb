//! `cli_agent`: runs an external agent command (Claude Code, Codex, mini-swe-agent, ...) inside
//! the task environment. The run's model endpoint reaches the command only through the exec
//! request's environment variables; the key is scrubbed from everything the harness records.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use agentcompass_plugin_api::contracts::{
    ComponentInfo, ComponentKind, ConfigField, ConfigSchema, ConfigType, EnvironmentSpec,
    ExecRequest, ExecResult, ExecutionIssue, HarnessPlan, IssuePhase, ModelEndpoint, ModelSpec,
    PreparedTask, RunRequest, RunResult, Trajectory, TrajectoryMetric, TrajectoryStep,
};
use agentcompass_plugin_api::sdk::{async_trait, Ctx, Harness, HarnessSession, SessionRef};
use agentcompass_plugin_api::{Error, Result};
use serde_json::{json, Value};

use crate::oracle::runs_bash;
use crate::params::Params;
use crate::text::{one_line_tail, scrub, tail, truncate_middle};
use crate::trajectory::iso_now;

/// Registry id.
pub const ID: &str = "cli_agent";

/// Where the instruction is written in the environment.
pub const INSTRUCTION_FILE: &str = "/tmp/agentcompass-instruction.md";

/// Instructions longer than this (bytes) are passed by file only (`AGENTCOMPASS_INSTRUCTION`
/// is then unset): one environment string is limited to 128 KiB on Linux.
const MAX_INSTRUCTION_ENV_BYTES: usize = 100_000;

/// Output files larger than this (characters) are kept as a text tail, never parsed.
const MAX_OUTPUT_FILE_CHARS: usize = 2_000_000;

/// Fallback run timeout when neither the task nor the benchmark gives one.
const DEFAULT_RUN_TIMEOUT_SECONDS: f64 = 3600.0;

/// The public parameters.
pub fn schema() -> ConfigSchema {
    ConfigSchema::empty()
        .field(
            ConfigField::new(
                "command",
                ConfigType::String,
                json!(null),
                "The agent command, run with `bash -c` in the task workspace (or the \
                 environment's default workdir); it gets the model endpoint and the instruction \
                 through OPENAI_*/ANTHROPIC_*/AGENTCOMPASS_* variables",
            )
            .required(),
        )
        .field(ConfigField::new(
            "install_command",
            ConfigType::String,
            json!(null),
            "Run first with `bash -c` (no model variables); a failure skips `command`",
        ))
        .field(ConfigField::new(
            "install_timeout_seconds",
            ConfigType::Number,
            json!(600),
            "Timeout of `install_command`",
        ))
        .field(ConfigField::new(
            "output_files",
            ConfigType::Array,
            json!(null),
            "Absolute paths read after the run (e.g. a trajectory JSON the CLI writes): JSON \
             files are kept parsed, others as a text tail, in the run step's observations",
        ))
        .field(ConfigField::new(
            "answer_file",
            ConfigType::String,
            json!(null),
            "Absolute path of a file holding the final answer (default: the stdout tail)",
        ))
        .field(ConfigField::new(
            "max_output_chars",
            ConfigType::Integer,
            json!(10_000),
            "Characters of stdout/stderr kept in the trajectory (head and tail) and of the \
             stdout tail used as the answer",
        ))
}

/// Registry entry.
pub fn info() -> ComponentInfo {
    let mut info = ComponentInfo::new(
        ComponentKind::Harness,
        ID,
        "Runs an external agent command in the environment, pointed at the run's model \
         endpoint through OPENAI_*/ANTHROPIC_*/AGENTCOMPASS_* variables",
    )
    .with_schema(schema());
    info.parallel_attempts_safe = true;
    info
}

/// Validated params.
#[derive(Debug, Clone, PartialEq)]
struct Settings {
    command: String,
    install_command: Option<String>,
    install_timeout_seconds: f64,
    output_files: Vec<String>,
    answer_file: Option<String>,
    max_output_chars: usize,
}

impl Settings {
    fn read(req: &RunRequest) -> Result<Self> {
        if req.harness.params.contains_key("env") {
            return Err(Error::invalid_input(format!(
                "harness `{ID}`: parameter `env` is not supported (set variables with the \
                 environment's run_env_variables)"
            )));
        }
        let params = Params::read(ID, &schema(), req)?;
        let command = params
            .string("command", true)?
            .ok_or_else(|| params.error("command", "is required"))?;
        let answer_file = params.string("answer_file", true)?;
        if let Some(path) = answer_file.as_deref().filter(|p| !p.starts_with('/')) {
            return Err(params.error(
                "answer_file",
                format!("needs an absolute path (found `{path}`)"),
            ));
        }
        let max_output_chars = params.integer("max_output_chars", 100)?.unwrap_or(10_000);
        Ok(Settings {
            command,
            install_command: params.string("install_command", true)?,
            install_timeout_seconds: params
                .positive_number("install_timeout_seconds")?
                .unwrap_or(600.0),
            output_files: params.absolute_paths("output_files")?,
            answer_file,
            max_output_chars: usize::try_from(max_output_chars)
                .map_err(|_| params.error("max_output_chars", "is too large"))?,
        })
    }
}

/// The harness.
pub struct CliAgent;

struct CliSession {
    settings: Settings,
    env: SessionRef,
}

/// The instruction handed to the CLI: the task's system prompt (if any), then its prompt (or,
/// without one, the text of its user messages).
pub(crate) fn instruction_text(prepared: &PreparedTask) -> String {
    let input = &prepared.input;
    let body = if input.prompt.trim().is_empty() {
        input
            .messages
            .iter()
            .filter(|m| m.role == "user")
            .filter_map(|m| match &m.content {
                Value::String(s) => Some(s.clone()),
                Value::Null => None,
                other => Some(other.to_string()),
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    } else {
        input.prompt.clone()
    };
    match input
        .system_prompt
        .as_deref()
        .filter(|s| !s.trim().is_empty())
    {
        Some(system) => format!("{system}\n\n{body}"),
        None => body,
    }
}

/// The variables that point the CLI at the model endpoint and the instruction.
pub(crate) fn agent_env(endpoint: &ModelEndpoint, instruction: &str) -> BTreeMap<String, String> {
    let anthropic_base = endpoint.base_url.trim_end_matches('/');
    let anthropic_base = anthropic_base.strip_suffix("/v1").unwrap_or(anthropic_base);
    let mut env = BTreeMap::new();
    let mut set = |key: &str, value: &str| {
        env.insert(key.to_string(), value.to_string());
    };
    set("OPENAI_BASE_URL", &endpoint.base_url);
    set("OPENAI_API_KEY", &endpoint.api_key);
    set("OPENAI_MODEL", &endpoint.model);
    set("ANTHROPIC_BASE_URL", anthropic_base);
    set("ANTHROPIC_API_KEY", &endpoint.api_key);
    set("ANTHROPIC_MODEL", &endpoint.model);
    set("AGENTCOMPASS_MODEL", &endpoint.model);
    set("AGENTCOMPASS_MODEL_PROTOCOL", &endpoint.protocol);
    set("AGENTCOMPASS_INSTRUCTION_FILE", INSTRUCTION_FILE);
    if instruction.len() <= MAX_INSTRUCTION_ENV_BYTES {
        set("AGENTCOMPASS_INSTRUCTION", instruction);
    }
    env
}

#[async_trait]
impl Harness for CliAgent {
    fn supports(&self, environment: &EnvironmentSpec, _model: &ModelSpec) -> Result<bool> {
        Ok(runs_bash(environment))
    }

    fn build_plan(&self, req: &RunRequest, _environment: &EnvironmentSpec) -> Result<HarnessPlan> {
        Settings::read(req)?;
        Ok(HarnessPlan {
            default_run_timeout_seconds: Some(DEFAULT_RUN_TIMEOUT_SECONDS),
            ..HarnessPlan::default()
        })
    }

    async fn start_session(
        &self,
        _ctx: &Ctx,
        env: &SessionRef,
        req: &RunRequest,
        _plan: &HarnessPlan,
    ) -> Result<HarnessSession> {
        Ok(Arc::new(CliSession {
            settings: Settings::read(req)?,
            env: env.clone(),
        }))
    }

    async fn execute_task(
        &self,
        ctx: &Ctx,
        session: &HarnessSession,
        prepared: &PreparedTask,
        _req: &RunRequest,
        plan: &HarnessPlan,
    ) -> Result<RunResult> {
        let session = downcast(session)?;
        run(ctx, &session.env, &session.settings, prepared, plan).await
    }

    /// After a run the host cut short (no trajectory), salvages the output and answer files.
    async fn collect_result(
        &self,
        _ctx: &Ctx,
        session: &HarnessSession,
        _prepared: &PreparedTask,
        _req: &RunRequest,
        _plan: &HarnessPlan,
        mut result: RunResult,
    ) -> Result<RunResult> {
        if result.trajectory.is_some() {
            return Ok(result);
        }
        let session = downcast(session)?;
        let mut step = TrajectoryStep {
            step_id: 1,
            user_content: json!("collect output files after an interrupted run"),
            ..TrajectoryStep::default()
        };
        let collector = Collector {
            env: &session.env,
            settings: &session.settings,
            secret: "",
        };
        collector.output_files(&mut result, &mut step).await;
        if let Some(answer) = collector.answer_from_file(&mut result).await {
            result.final_answer = Some(answer);
        }
        if !step.observation.is_empty() {
            result.trajectory = Some(Trajectory {
                steps: vec![step],
                ..Trajectory::default()
            });
        }
        Ok(result)
    }
}

fn downcast(session: &HarnessSession) -> Result<&CliSession> {
    session
        .downcast_ref::<CliSession>()
        .ok_or_else(|| Error::msg(format!("{ID}: foreign harness session")))
}

/// Reads what the CLI left behind, scrubbing the key from it.
struct Collector<'a> {
    env: &'a SessionRef,
    settings: &'a Settings,
    secret: &'a str,
}

impl Collector<'_> {
    /// Adds one observation per output file to `step` (a missing file is a warning).
    async fn output_files(&self, result: &mut RunResult, step: &mut TrajectoryStep) {
        for path in &self.settings.output_files {
            match self.env.read_text(path).await {
                Ok(text) => {
                    let text = scrub(&text, self.secret);
                    let parsed = (text.chars().count() <= MAX_OUTPUT_FILE_CHARS)
                        .then(|| serde_json::from_str::<Value>(&text).ok())
                        .flatten();
                    step.observation.push(match parsed {
                        Some(value) => json!({"output_file": path, "json": value}),
                        None => json!({
                            "output_file": path,
                            "text": tail(&text, self.settings.max_output_chars),
                        }),
                    });
                }
                Err(err) => {
                    let message = scrub(&err.message, self.secret);
                    step.observation
                        .push(json!({"output_file": path, "error": message}));
                    result.push_issue(ExecutionIssue::warning(
                        IssuePhase::Run,
                        "output_file_missing",
                        format!("{ID}: cannot read output file {path}: {message}"),
                    ));
                }
            }
        }
    }

    /// The trimmed content of `answer_file` (a missing file is a warning and no answer).
    async fn answer_from_file(&self, result: &mut RunResult) -> Option<String> {
        let path = self.settings.answer_file.as_deref()?;
        match self.env.read_text(path).await {
            Ok(text) => Some(scrub(text.trim(), self.secret)),
            Err(err) => {
                result.push_issue(ExecutionIssue::warning(
                    IssuePhase::Run,
                    "answer_file_missing",
                    format!(
                        "{ID}: cannot read answer file {path}: {}",
                        scrub(&err.message, self.secret)
                    ),
                ));
                None
            }
        }
    }
}

/// One `bash -c` step of the run, as recorded.
struct Recorded {
    outcome: ExecResult,
    step: TrajectoryStep,
}

async fn exec_step(
    env: &SessionRef,
    request: ExecRequest,
    step_id: u64,
    label: &str,
    command: &str,
    secret: &str,
    max_chars: usize,
) -> Result<Recorded> {
    let started_at = iso_now();
    let clock = Instant::now();
    let outcome = env.exec(request).await.map_err(|e| {
        Error::new(
            e.kind,
            format!("{ID}: running the {label}: {}", scrub(&e.message, secret)),
        )
    })?;
    let duration_ms = clock.elapsed().as_millis();
    let outcome = ExecResult {
        stdout: scrub(&outcome.stdout, secret),
        stderr: scrub(&outcome.stderr, secret),
        ..outcome
    };
    let step = TrajectoryStep {
        step_id,
        user_content: json!(label),
        observation: vec![json!({
            "command": scrub(command, secret),
            "exit_code": outcome.returncode,
            "timed_out": outcome.timed_out,
            "stdout": truncate_middle(&outcome.stdout, max_chars),
            "stderr": truncate_middle(&outcome.stderr, max_chars),
            "duration_ms": duration_ms,
        })],
        metric: TrajectoryMetric {
            env_action_ms: Some(duration_ms as f64),
            ..TrajectoryMetric::default()
        },
        started_at: Some(started_at),
        finished_at: Some(iso_now()),
        ..TrajectoryStep::default()
    };
    Ok(Recorded { outcome, step })
}

/// Pushes the issue for a failed or timed-out step; `true` when there was one.
fn step_issue(
    result: &mut RunResult,
    outcome: &ExecResult,
    what: &str,
    code: &str,
    timeout: Option<f64>,
) -> bool {
    if outcome.timed_out {
        let limit = timeout.map_or_else(String::new, |t| format!(" ({t}s)"));
        result.push_issue(ExecutionIssue::error(
            IssuePhase::Run,
            format!("{code}_timeout"),
            format!("{ID}: the {what} hit its timeout{limit}"),
        ));
        true
    } else if outcome.returncode != 0 {
        result.push_issue(ExecutionIssue::error(
            IssuePhase::Run,
            format!("{code}_failed"),
            format!(
                "{ID}: the {what} exited with {}: {}",
                outcome.returncode,
                one_line_tail(&outcome.stderr, 300)
            ),
        ));
        true
    } else {
        false
    }
}

async fn run(
    ctx: &Ctx,
    env: &SessionRef,
    settings: &Settings,
    prepared: &PreparedTask,
    plan: &HarnessPlan,
) -> Result<RunResult> {
    let started = Instant::now();
    let started_at = iso_now();
    let endpoint = ctx
        .model_endpoint()
        .await
        .map_err(|e| e.context(format!("{ID}: the model endpoint is unavailable")))?;
    let secret = endpoint.api_key.as_str();
    let cwd = prepared
        .input
        .workspace
        .clone()
        .filter(|w| !w.trim().is_empty());
    let instruction = instruction_text(prepared);
    if instruction.len() > MAX_INSTRUCTION_ENV_BYTES {
        ctx.warn(&format!(
            "{ID}: the instruction ({} bytes) is passed by {INSTRUCTION_FILE} only",
            instruction.len()
        ));
    }
    env.write_text(INSTRUCTION_FILE, &instruction)
        .await
        .map_err(|e| e.context(format!("{ID}: writing {INSTRUCTION_FILE}")))?;

    let mut result = RunResult::new(prepared.task_id.clone());
    result.category = prepared.category.clone();
    result.telemetry.insert("agent".into(), json!(ID));
    let mut steps = Vec::new();
    let max_chars = settings.max_output_chars;

    if let Some(install) = &settings.install_command {
        if ctx.is_cancelled() {
            return Err(Error::cancelled());
        }
        ctx.progress(json!({"step": "installing agent", "task_id": prepared.task_id}));
        let mut request = ExecRequest::argv(["bash", "-c", install.as_str()]);
        request.cwd = cwd.clone();
        request.timeout_seconds = Some(settings.install_timeout_seconds);
        let recorded = exec_step(
            env,
            request,
            1,
            "install_command",
            install,
            secret,
            max_chars,
        )
        .await?;
        result.telemetry.insert(
            "install_exit_code".into(),
            json!(recorded.outcome.returncode),
        );
        let failed = step_issue(
            &mut result,
            &recorded.outcome,
            "install command",
            "agent_install",
            Some(settings.install_timeout_seconds),
        );
        steps.push(recorded.step);
        if failed {
            result.trajectory = Some(Trajectory {
                steps,
                started_at: Some(started_at),
                finished_at: Some(iso_now()),
                ..Trajectory::default()
            });
            return Ok(result);
        }
    }

    if ctx.is_cancelled() {
        return Err(Error::cancelled());
    }
    ctx.progress(json!({"step": "running agent", "task_id": prepared.task_id}));
    let mut request = ExecRequest::argv(["bash", "-c", settings.command.as_str()]);
    request.cwd = cwd;
    request.env = agent_env(&endpoint, &instruction);
    let timeout = plan
        .run_timeout_seconds
        .map(|run| (run - started.elapsed().as_secs_f64()).max(1.0));
    request.timeout_seconds = timeout;
    let step_id = steps.len() as u64 + 1;
    let mut recorded = exec_step(
        env,
        request,
        step_id,
        "command",
        &settings.command,
        secret,
        max_chars,
    )
    .await?;
    recorded.step.user_content = json!(instruction);
    result
        .telemetry
        .insert("exit_code".into(), json!(recorded.outcome.returncode));
    step_issue(
        &mut result,
        &recorded.outcome,
        "agent command",
        "agent",
        timeout,
    );

    let collector = Collector {
        env,
        settings,
        secret,
    };
    collector
        .output_files(&mut result, &mut recorded.step)
        .await;
    result.final_answer = if settings.answer_file.is_some() {
        collector.answer_from_file(&mut result).await
    } else {
        Some(tail(recorded.outcome.stdout.trim(), max_chars).to_string()).filter(|a| !a.is_empty())
    };
    steps.push(recorded.step);
    result.trajectory = Some(Trajectory {
        steps,
        started_at: Some(started_at),
        finished_at: Some(iso_now()),
        ..Trajectory::default()
    });
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{block_on, script_of, Call, FakeHost, FakeSession};
    use agentcompass_plugin_api::contracts::{IssueSeverity, TaskInput, TaskStatus};

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
        let env = agent_env(&endpoint(), "do it");
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
            ("AGENTCOMPASS_INSTRUCTION_FILE", INSTRUCTION_FILE),
        ];
        assert_eq!(env.len(), expected.len());
        for (key, value) in expected {
            assert_eq!(env.get(key).map(String::as_str), Some(value), "{key}");
        }
        let huge = "x".repeat(MAX_INSTRUCTION_ENV_BYTES + 1);
        assert!(!agent_env(&endpoint(), &huge).contains_key("AGENTCOMPASS_INSTRUCTION"));
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
            Call::Write(INSTRUCTION_FILE.into(), "Fix the bug in /app".into())
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
        let settings =
            settings(json!({"command": "agent", "answer_file": "/app/answer.txt"})).unwrap();
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
}
