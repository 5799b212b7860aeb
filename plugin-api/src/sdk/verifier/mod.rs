//! Evaluating in the environment with hidden tests, in one call: [`Verifier`] uploads a
//! task's hidden files into the session's own `tests` directory at evaluation time, runs the
//! test command, and reads Harbor's reward convention (`reward.txt` or `reward.json` in
//! `LOGS/verifier/`) into metrics.
//!
//! ```no_run
//! # use agentcompass_plugin_api::sdk::{Ctx, EvaluationInput};
//! # use agentcompass_plugin_api::sdk::verifier::Verifier;
//! # use agentcompass_plugin_api::contracts::RunResult;
//! # async fn evaluate(ctx: &Ctx, input: EvaluationInput<'_>) -> agentcompass_plugin_api::Result<RunResult> {
//! let env = input.env.expect("evaluation mode `reuse`");
//! let verifier = Verifier::new("/data/tasks/t1/tests").timeout_seconds(60.0);
//! let mut result = input.result;
//! verifier.run(ctx, env).await?.record(&mut result);
//! # Ok(result) }
//! ```
//!
//! The test command (`bash test.sh` by default; a leading `bash FILE` runs the uploaded
//! `FILE`) runs in the session's working directory with these variables, so a test script
//! needs no fixed path:
//!
//! | variable | value |
//! |---|---|
//! | `AGENTCOMPASS_TESTS_DIR` | the session's `tests` directory (the hidden files) |
//! | `AGENTCOMPASS_VERIFIER_DIR` | `LOGS/verifier`, where the reward file goes |
//! | `AGENTCOMPASS_WORKSPACE` | the session's workspace (the agent's work) |
//!
//! Issue codes (phase `evaluate`, severity `error`): `verifier_timeout`,
//! `reward_file_missing`, `reward_file_empty`, `reward_parse_error`.

pub mod reward;
mod task_dirs;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{json, Value};

use super::{Ctx, SessionRef};
use crate::contracts::{ExecRequest, ExecutionIssue, IssuePhase, RunResult};
use crate::{Error, Result};
use reward::{RewardError, Rewards, REWARD_JSON_NAME, REWARD_TXT_NAME};
pub use task_dirs::{load_task_dirs, reference_solution, task_dir};

/// Characters of the test command's stdout and stderr kept in the outcome.
const OUTPUT_TAIL_CHARS: usize = 4_000;

/// Runs hidden tests in an evaluation environment (see the module documentation).
#[derive(Debug, Clone)]
pub struct Verifier {
    tests: PathBuf,
    command: String,
    timeout_seconds: Option<f64>,
    env: BTreeMap<String, String>,
}

/// What one verifier run found: the rewards, or why there are none, and the command's exit.
#[derive(Debug, Clone)]
pub struct VerifierOutcome {
    /// The rewards read, or why none could be.
    pub rewards: std::result::Result<Rewards, ExecutionIssue>,
    /// The test command's exit code.
    pub exit_code: i32,
    /// Whether the test command hit its timeout.
    pub timed_out: bool,
    /// The end of the test command's stdout (scrubbed of secrets).
    pub stdout_tail: String,
    /// The end of the test command's stderr (scrubbed of secrets).
    pub stderr_tail: String,
}

impl Verifier {
    /// Hidden tests in host directory `tests`, run as `bash test.sh`.
    pub fn new(tests: impl Into<PathBuf>) -> Self {
        Verifier {
            tests: tests.into(),
            command: "bash test.sh".to_string(),
            timeout_seconds: None,
            env: BTreeMap::new(),
        }
    }

    /// The shell command to run (in the workspace; the tests are under
    /// `$AGENTCOMPASS_TESTS_DIR`, and `bash X` runs the uploaded `X`).
    pub fn command(mut self, command: impl Into<String>) -> Self {
        self.command = command.into();
        self
    }

    /// Stops the test command after `seconds`.
    pub fn timeout_seconds(mut self, seconds: f64) -> Self {
        self.timeout_seconds = Some(seconds);
        self
    }

    /// Sets a variable for the test command.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Clears the session's `tests` directory and stale reward files (an agent could have
    /// pre-written a reward), uploads the hidden tests, runs the command and reads the reward.
    /// An `Err` is an environment failure (an upload or a command that could not start).
    pub async fn run(&self, ctx: &Ctx, env: &SessionRef) -> Result<VerifierOutcome> {
        let info = env.info();
        let dirs = &info.dirs;
        let verifier_dir = dirs.log_path("verifier");
        let (json_path, txt_path) = (
            format!("{verifier_dir}/{REWARD_JSON_NAME}"),
            format!("{verifier_dir}/{REWARD_TXT_NAME}"),
        );
        let vars = BTreeMap::from([
            ("AGENTCOMPASS_TESTS_DIR".to_string(), dirs.tests.clone()),
            (
                "AGENTCOMPASS_VERIFIER_DIR".to_string(),
                verifier_dir.clone(),
            ),
            ("AGENTCOMPASS_WORKSPACE".to_string(), dirs.workspace.clone()),
        ]);
        let clear = ExecRequest::shell(
            "mkdir -p -- \"$AGENTCOMPASS_TESTS_DIR\" \"$AGENTCOMPASS_VERIFIER_DIR\" && \
             find \"$AGENTCOMPASS_TESTS_DIR\" -mindepth 1 -delete && rm -f -- \
             \"$AGENTCOMPASS_VERIFIER_DIR/reward.txt\" \"$AGENTCOMPASS_VERIFIER_DIR/reward.json\"",
        )
        .cwd("/");
        let clear = with_env(clear, &vars);
        let cleared = env.exec(clear).await?;
        if cleared.returncode != 0 {
            return Err(Error::environment(format!(
                "verifier: cannot prepare {} and {verifier_dir}: {}",
                dirs.tests,
                cleared.stderr.trim()
            )));
        }
        env.upload_dir(&self.tests, &dirs.tests)
            .await
            .map_err(|e| {
                e.context(format!(
                    "verifier: uploading the hidden tests to {}",
                    dirs.tests
                ))
            })?;
        let mut request = ExecRequest::shell(self.command_in_tests()).cwd(info.workdir());
        request.env = self.env.clone();
        request = with_env(request, &vars);
        request.timeout_seconds = self.timeout_seconds;
        let out = env.exec(request).await?;
        let rewards = if out.timed_out {
            Err(ExecutionIssue::error(
                IssuePhase::Evaluate,
                "verifier_timeout",
                format!(
                    "verifier: `{}` hit its timeout ({}s)",
                    self.command,
                    self.timeout_seconds.unwrap_or_default()
                ),
            ))
        } else {
            read_rewards(env, &json_path, &txt_path).await?.map_err(
                |RewardError { code, message }| {
                    ExecutionIssue::error(
                        IssuePhase::Evaluate,
                        code,
                        format!("verifier: {message} (exit code {})", out.returncode),
                    )
                },
            )
        };
        Ok(VerifierOutcome {
            rewards,
            exit_code: out.returncode,
            timed_out: out.timed_out,
            stdout_tail: tail(&ctx.scrub(&out.stdout).await),
            stderr_tail: tail(&ctx.scrub(&out.stderr).await),
        })
    }

    /// The command with a leading `bash FILE` pointed at the uploaded file.
    fn command_in_tests(&self) -> String {
        match self.command.strip_prefix("bash ") {
            Some(rest) if !rest.starts_with(['/', '-', '$']) => {
                format!("bash \"$AGENTCOMPASS_TESTS_DIR\"/{rest}")
            }
            _ => self.command.clone(),
        }
    }
}

impl VerifierOutcome {
    /// Records the outcome in `result`: the metrics `reward` and `correct` (`reward >= 1`)
    /// plus every other named reward of `reward.json` as a scalar metric (declare them with
    /// [`crate::contracts::MetricContract::with_scalar`]), or the issue; the exit code and
    /// output tails go to `result.extra["verifier"]` (`meta.benchmark.verifier` in
    /// `result.json`).
    pub fn record(self, result: &mut RunResult) {
        let mut extra = json!({
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "stdout_tail": self.stdout_tail,
            "stderr_tail": self.stderr_tail,
        });
        match self.rewards {
            Ok(rewards) => {
                result.metrics.extend(rewards.metrics());
                for (name, value) in &rewards.values {
                    result
                        .metrics
                        .entry(name.clone())
                        .or_insert_with(|| (*value).into());
                }
                extra["reward_file"] = Value::from(rewards.source.clone());
            }
            Err(issue) => result.push_issue(issue),
        }
        result.extra.insert("verifier".into(), extra);
    }
}

fn with_env(mut request: ExecRequest, vars: &BTreeMap<String, String>) -> ExecRequest {
    request
        .env
        .extend(vars.iter().map(|(k, v)| (k.clone(), v.clone())));
    request
}

/// The rewards, or why none could be read (`Err` only when the environment failed).
async fn read_rewards(
    env: &SessionRef,
    json_path: &str,
    txt_path: &str,
) -> Result<std::result::Result<Rewards, RewardError>> {
    let json = read_optional(env, json_path).await?;
    let txt = match json {
        Some(_) => None,
        None => read_optional(env, txt_path).await?,
    };
    Ok(reward::from_files(
        json.as_deref(),
        txt.as_deref(),
        json_path,
        txt_path,
    ))
}

async fn read_optional(env: &SessionRef, path: &str) -> Result<Option<String>> {
    if env.is_file(path).await? {
        env.read_text(path).await.map(Some)
    } else {
        Ok(None)
    }
}

/// The last [`OUTPUT_TAIL_CHARS`] characters of `text`.
fn tail(text: &str) -> String {
    let count = text.chars().count();
    text.chars()
        .skip(count.saturating_sub(OUTPUT_TAIL_CHARS))
        .collect()
}
