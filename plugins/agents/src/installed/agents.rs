//! The four agent CLIs: what each is (package, installer, pinned version, protocol) and how it
//! runs unattended against the model endpoint inside the environment — only through its
//! documented settings (`docs/research/agent-clis.md` has the measurements behind them).

use std::collections::BTreeMap;

use agentcompass_plugin_api::contracts::{Installer, ModelEndpoint};
use serde_json::json;

/// Where the agents' own state lives in the environment (homes, configs): a fresh directory
/// per attempt, not collected.
const HOME_ROOT: &str = "/tmp/agentcompass-agent";

/// Where the agents' raw logs are written: collected as attempt artifacts.
pub(crate) const LOG_ROOT: &str = "/logs/agent";

/// Where installed agents are mounted (read-only).
const MOUNT_ROOT: &str = "/opt/agentcompass/agents";

/// One of the installed agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AgentCli {
    /// Anthropic's Claude Code (`claude -p`).
    ClaudeCode,
    /// OpenAI's Codex CLI (`codex exec`).
    Codex,
    /// mini-swe-agent (`python -m minisweagent.run.mini`).
    MiniSweAgent,
    /// Qwen Code (`qwen` one-shot prompt).
    QwenCode,
}

/// Where the agent's record of the run is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Record {
    /// Its stdout is a Claude-style `stream-json` event stream.
    StreamJson,
    /// Its stdout is `codex exec --json` events.
    CodexEvents,
    /// The trajectory file it writes (mini-swe-agent `-o`).
    MiniTrajectory(String),
}

/// How one run of the agent is started.
#[derive(Debug, Clone)]
pub(crate) struct Launch {
    /// The program and its arguments.
    pub(crate) argv: Vec<String>,
    /// Its environment variables (the endpoint's placeholder token among them).
    pub(crate) env: BTreeMap<String, String>,
    /// Directories made before it starts.
    pub(crate) dirs: Vec<String>,
    /// Files written before it starts (`path`, content).
    pub(crate) files: Vec<(String, String)>,
}

/// What a launch is made from.
pub(crate) struct LaunchInput<'a> {
    /// The model endpoint inside the environment.
    pub(crate) endpoint: &'a ModelEndpoint,
    /// The instruction.
    pub(crate) prompt: &'a str,
    /// The agent's own retries of a failed model call (the gateway retried first).
    pub(crate) retries: u64,
    /// Arguments appended to the agent's command line.
    pub(crate) extra_args: &'a [String],
    /// The request's `execution.limits.max_turns`: Claude Code's `--max-turns`,
    /// mini-swe-agent's `agent.step_limit` (Codex and Qwen Code take no such limit; their
    /// calls are still bounded by the host's `max_model_calls`).
    pub(crate) max_turns: Option<u64>,
}

impl AgentCli {
    /// Every agent, in the order they are registered.
    pub(crate) const ALL: [AgentCli; 4] = [
        AgentCli::ClaudeCode,
        AgentCli::Codex,
        AgentCli::MiniSweAgent,
        AgentCli::QwenCode,
    ];

    /// The harness id.
    pub(crate) fn id(self) -> &'static str {
        match self {
            AgentCli::ClaudeCode => "claude_code",
            AgentCli::Codex => "codex",
            AgentCli::MiniSweAgent => "mini_swe_agent",
            AgentCli::QwenCode => "qwen_code",
        }
    }

    /// The registry package.
    pub(crate) fn package(self) -> &'static str {
        match self {
            AgentCli::ClaudeCode => "@anthropic-ai/claude-code",
            AgentCli::Codex => "@openai/codex",
            AgentCli::MiniSweAgent => "mini-swe-agent",
            AgentCli::QwenCode => "@qwen-code/qwen-code",
        }
    }

    /// The package manager.
    pub(crate) fn installer(self) -> Installer {
        match self {
            AgentCli::MiniSweAgent => Installer::Pip,
            _ => Installer::Npm,
        }
    }

    /// The pinned default version (the `version` param overrides it).
    pub(crate) fn default_version(self) -> &'static str {
        match self {
            AgentCli::ClaudeCode => "2.1.332",
            AgentCli::Codex => "0.171.0",
            AgentCli::MiniSweAgent => "2.4.6",
            AgentCli::QwenCode => "0.24.4",
        }
    }

    /// The wire protocol the agent speaks to the model endpoint.
    pub(crate) fn protocol(self) -> &'static str {
        match self {
            AgentCli::ClaudeCode => "anthropic",
            AgentCli::Codex => "openai-responses",
            AgentCli::MiniSweAgent | AgentCli::QwenCode => "openai-chat",
        }
    }

    /// What the registry lists.
    pub(crate) fn description(self) -> &'static str {
        match self {
            AgentCli::ClaudeCode => {
                "Claude Code (npm @anthropic-ai/claude-code) run with `claude -p` inside the \
                 environment, against the run's model endpoint (anthropic protocol)"
            }
            AgentCli::Codex => {
                "OpenAI Codex CLI (npm @openai/codex) run with `codex exec --json` inside the \
                 environment, against the run's model endpoint (Responses API)"
            }
            AgentCli::MiniSweAgent => {
                "mini-swe-agent (PyPI mini-swe-agent) run with its `mini` CLI inside the \
                 environment, against the run's model endpoint (chat completions)"
            }
            AgentCli::QwenCode => {
                "Qwen Code (npm @qwen-code/qwen-code) run with a one-shot prompt inside the \
                 environment, against the run's model endpoint (chat completions)"
            }
        }
    }

    /// Where the installation is mounted in the environment.
    pub(crate) fn mount_path(self) -> String {
        format!("{MOUNT_ROOT}/{}", self.id())
    }

    /// The directory of the agent's raw logs (`stdout.log`, `stderr.log`, its own files).
    pub(crate) fn log_dir(self) -> String {
        format!("{LOG_ROOT}/{}", self.id())
    }

    /// The agent's fresh home.
    fn home(self) -> String {
        format!("{HOME_ROOT}/{}", self.id())
    }

    /// Where its record of the run is.
    pub(crate) fn record(self) -> Record {
        match self {
            AgentCli::ClaudeCode | AgentCli::QwenCode => Record::StreamJson,
            AgentCli::Codex => Record::CodexEvents,
            AgentCli::MiniSweAgent => Record::MiniTrajectory(self.trajectory_file()),
        }
    }

    /// mini-swe-agent's trajectory file (`-o`).
    fn trajectory_file(self) -> String {
        format!("{}/trajectory.json", self.log_dir())
    }

    /// How to start one unattended run.
    pub(crate) fn launch(self, input: &LaunchInput<'_>) -> Launch {
        let mount = self.mount_path();
        let home = self.home();
        let endpoint = input.endpoint;
        let mut env = BTreeMap::from([("HOME".to_string(), home.clone())]);
        let mut set = |key: &str, value: &str| {
            env.insert(key.to_string(), value.to_string());
        };
        let mut dirs = vec![home.clone(), self.log_dir()];
        let mut files = Vec::new();
        let retries = input.retries.to_string();
        let mut argv: Vec<String> = match self {
            AgentCli::ClaudeCode => {
                let base = endpoint.base_url.trim_end_matches('/');
                set(
                    "ANTHROPIC_BASE_URL",
                    base.strip_suffix("/v1").unwrap_or(base),
                );
                set("ANTHROPIC_API_KEY", &endpoint.api_key);
                set("CLAUDE_CONFIG_DIR", &format!("{home}/config"));
                // The one switch that stops telemetry, error reports, update checks and the
                // connectivity probe; IS_SANDBOX lets root skip permission prompts.
                set("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
                set("IS_SANDBOX", "1");
                set("CLAUDE_CODE_MAX_RETRIES", &retries);
                strings([
                    &format!("{mount}/node_modules/.bin/claude"),
                    "-p",
                    input.prompt,
                    "--output-format",
                    "stream-json",
                    "--verbose",
                    "--dangerously-skip-permissions",
                    "--model",
                    &endpoint.model,
                ])
            }
            AgentCli::Codex => {
                let codex_home = format!("{home}/codex");
                dirs.push(codex_home.clone());
                set("CODEX_HOME", &codex_home);
                set("AGENTCOMPASS_CODEX_KEY", &endpoint.api_key);
                let provider = format!(
                    "model_providers.agentcompass={{name=\"agentcompass\",base_url={},\
                     env_key=\"AGENTCOMPASS_CODEX_KEY\",wire_api=\"responses\",\
                     request_max_retries={retries},stream_max_retries={retries}}}",
                    json!(endpoint.base_url)
                );
                strings([
                    &format!("{mount}/node_modules/.bin/codex"),
                    "exec",
                    "--json",
                    "--skip-git-repo-check",
                    "--dangerously-bypass-approvals-and-sandbox",
                    "--ephemeral",
                    "-c",
                    "model_provider=agentcompass",
                    "-c",
                    &provider,
                    "-c",
                    "analytics.enabled=false",
                    "-c",
                    "check_for_update_on_startup=false",
                    "--disable",
                    "plugins",
                    "-m",
                    &endpoint.model,
                    input.prompt,
                ])
            }
            AgentCli::MiniSweAgent => {
                set("OPENAI_API_KEY", &endpoint.api_key);
                set("MSWEA_CONFIGURED", "true");
                set("MSWEA_COST_TRACKING", "ignore_errors");
                set("MSWEA_SILENT_STARTUP", "1");
                set("MSWEA_GLOBAL_CONFIG_DIR", &format!("{home}/config"));
                set(
                    "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT",
                    &(input.retries + 1).to_string(),
                );
                set("LITELLM_LOCAL_MODEL_COST_MAP", "True");
                let trajectory = self.trajectory_file();
                strings([
                    &format!("{mount}/bin/python"),
                    "-m",
                    "minisweagent.run.mini",
                    "-y",
                    "--exit-immediately",
                    "-m",
                    &format!("openai/{}", endpoint.model),
                    "-c",
                    "mini.yaml",
                    "-c",
                    &format!("model.model_kwargs.api_base={}", endpoint.base_url),
                    "-o",
                    &trajectory,
                    "-t",
                    input.prompt,
                ])
            }
            AgentCli::QwenCode => {
                let qwen_home = format!("{home}/qwen");
                set("QWEN_HOME", &qwen_home);
                set("OPENAI_API_KEY", &endpoint.api_key);
                set("OPENAI_BASE_URL", &endpoint.base_url);
                set("OPENAI_MODEL", &endpoint.model);
                set("QWEN_CODE_SUPPRESS_YOLO_WARNING", "1");
                set("QWEN_USAGE_STATISTICS_ENABLED", "false");
                let settings = json!({
                    "general": {"enableAutoUpdate": false},
                    "privacy": {"usageStatisticsEnabled": false},
                    "telemetry": {"enabled": false},
                    "memory": {"enableManagedAutoMemory": false, "enableManagedAutoDream": false},
                });
                files.push((format!("{qwen_home}/settings.json"), settings.to_string()));
                strings([
                    &format!("{mount}/node_modules/.bin/qwen"),
                    "--auth-type",
                    "openai",
                    "--yolo",
                    "-o",
                    "stream-json",
                    input.prompt,
                ])
            }
        };
        // Extra arguments go before a trailing positional prompt.
        let prompt_last = matches!(self, AgentCli::Codex | AgentCli::QwenCode);
        let at = if prompt_last {
            argv.len() - 1
        } else {
            argv.len()
        };
        let mut extra: Vec<String> = match (self, input.max_turns) {
            (AgentCli::ClaudeCode, Some(turns)) => vec!["--max-turns".into(), turns.to_string()],
            (AgentCli::MiniSweAgent, Some(turns)) => {
                vec!["-c".into(), format!("agent.step_limit={turns}")]
            }
            _ => Vec::new(),
        };
        extra.extend(input.extra_args.iter().cloned());
        argv.splice(at..at, extra);
        Launch {
            argv,
            env,
            dirs,
            files,
        }
    }
}

/// `items` as owned strings.
fn strings<const N: usize>(items: [&str; N]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}
