//! The four agent CLIs: what each is (package, installer, pinned version, protocol) and how it
//! runs unattended against the model endpoint inside the environment — only through its
//! documented settings (`docs/research/agent-clis.md` has the measurements behind them).

use std::collections::BTreeMap;

use agentcompass_plugin_api::contracts::{
    AgentInputSupport, AgentInputs, Installer, ModelEndpoint,
};
use agentcompass_plugin_api::Result;
use serde_json::json;

use super::tools;

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
    /// Directories whose contents are copied before it starts (`from`, `to`; a failed copy
    /// is ignored, as Harbor's `cp -r … || true`): the skills.
    pub(crate) copies: Vec<(String, String)>,
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
    /// The MCP servers, skills and variables the agent is handed.
    pub(crate) inputs: &'a AgentInputs,
}

impl AgentCli {
    /// Every agent, in the order they are registered.
    pub(crate) const ALL: [AgentCli; 4] = [
        AgentCli::ClaudeCode,
        AgentCli::Codex,
        AgentCli::MiniSweAgent,
        AgentCli::QwenCode,
    ];

    /// What the agent can be handed besides its instruction: Claude Code, Codex and Qwen
    /// Code take MCP servers (with headers) and skills in their own configuration;
    /// mini-swe-agent is told about MCP servers in its instruction, as Harbor does.
    pub(crate) fn agent_inputs(self) -> AgentInputSupport {
        match self {
            AgentCli::MiniSweAgent => AgentInputSupport {
                mcp_servers: true,
                ..AgentInputSupport::default()
            },
            _ => AgentInputSupport::ALL,
        }
    }

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

    /// How to start one unattended run. The run's `--agent-env` variables override the
    /// agent's own, as Harbor's `--ae` does.
    pub(crate) fn launch(self, input: &LaunchInput<'_>) -> Result<Launch> {
        let mut setup = Setup::new(self, input);
        let argv = match self {
            AgentCli::ClaudeCode => claude_code(&mut setup, input),
            AgentCli::Codex => codex(&mut setup, input)?,
            AgentCli::MiniSweAgent => mini_swe_agent(&mut setup, input),
            AgentCli::QwenCode => qwen_code(&mut setup, input),
        };
        let argv = self.with_extra_args(argv, input);
        setup.env.extend(input.inputs.env.clone());
        Ok(Launch {
            argv,
            env: setup.env,
            dirs: setup.dirs,
            files: setup.files,
            copies: setup.copies,
        })
    }

    /// `argv` with the turn limit (for the agents that take one) and the extra arguments
    /// added, before a trailing positional prompt.
    fn with_extra_args(self, mut argv: Vec<String>, input: &LaunchInput<'_>) -> Vec<String> {
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
        argv
    }
}

/// A launch being assembled: where the agent is and what it gets besides its command line.
struct Setup {
    /// The agent's mount path.
    mount: String,
    /// The agent's fresh home.
    home: String,
    /// The agent's own retries, as text.
    retries: String,
    /// Its environment variables so far.
    env: BTreeMap<String, String>,
    /// The directories made before it starts, so far.
    dirs: Vec<String>,
    /// The files written before it starts, so far.
    files: Vec<(String, String)>,
    /// The directories copied before it starts, so far.
    copies: Vec<(String, String)>,
}

impl Setup {
    /// The start of `agent`'s launch: `HOME` set, its home and log directory made.
    fn new(agent: AgentCli, input: &LaunchInput<'_>) -> Setup {
        let home = agent.home();
        Setup {
            mount: agent.mount_path(),
            env: BTreeMap::from([("HOME".to_string(), home.clone())]),
            dirs: vec![home.clone(), agent.log_dir()],
            home,
            retries: input.retries.to_string(),
            files: Vec::new(),
            copies: Vec::new(),
        }
    }

    /// Copies the task's skills (when it has any) into `dest`.
    fn skills_to(&mut self, input: &LaunchInput<'_>, dest: String) {
        if let Some(dir) = &input.inputs.skills_dir {
            self.copies.push((dir.clone(), dest));
        }
    }

    /// Sets the environment variable `key` to `value`.
    fn set(&mut self, key: &str, value: &str) {
        self.env.insert(key.to_string(), value.to_string());
    }
}

/// Claude Code's settings and command line (`claude -p`).
fn claude_code(setup: &mut Setup, input: &LaunchInput<'_>) -> Vec<String> {
    let endpoint = input.endpoint;
    let home = setup.home.clone();
    let retries = setup.retries.clone();
    let base = endpoint.base_url.trim_end_matches('/');
    setup.set(
        "ANTHROPIC_BASE_URL",
        base.strip_suffix("/v1").unwrap_or(base),
    );
    setup.set("ANTHROPIC_API_KEY", &endpoint.api_key);
    setup.set("CLAUDE_CONFIG_DIR", &format!("{home}/config"));
    // The one switch that stops telemetry, error reports, update checks and the
    // connectivity probe; IS_SANDBOX lets root skip permission prompts.
    setup.set("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
    setup.set("IS_SANDBOX", "1");
    setup.set("CLAUDE_CODE_MAX_RETRIES", &retries);
    if let Some(config) = tools::claude_code_config(input.inputs, &mut setup.env) {
        setup
            .files
            .push((format!("{home}/config/.claude.json"), config));
    }
    setup.skills_to(input, format!("{home}/config/skills"));
    strings([
        &format!("{}/node_modules/.bin/claude", setup.mount),
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

/// Codex's settings and command line (`codex exec --json`, its own model provider).
fn codex(setup: &mut Setup, input: &LaunchInput<'_>) -> Result<Vec<String>> {
    let endpoint = input.endpoint;
    let retries = &setup.retries;
    let codex_home = format!("{}/codex", setup.home);
    let provider = format!(
        "model_providers.agentcompass={{name=\"agentcompass\",base_url={},\
         env_key=\"AGENTCOMPASS_CODEX_KEY\",wire_api=\"responses\",\
         request_max_retries={retries},stream_max_retries={retries}}}",
        json!(endpoint.base_url)
    );
    setup.dirs.push(codex_home.clone());
    setup.set("CODEX_HOME", &codex_home);
    setup.set("AGENTCOMPASS_CODEX_KEY", &endpoint.api_key);
    if let Some(config) = tools::codex_config(input.inputs, &mut setup.env)? {
        setup
            .files
            .push((format!("{codex_home}/config.toml"), config));
    }
    setup.skills_to(input, format!("{codex_home}/skills"));
    Ok(strings([
        &format!("{}/node_modules/.bin/codex", setup.mount),
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
    ]))
}

/// mini-swe-agent's settings and command line (`python -m minisweagent.run.mini`).
fn mini_swe_agent(setup: &mut Setup, input: &LaunchInput<'_>) -> Vec<String> {
    let endpoint = input.endpoint;
    let home = setup.home.clone();
    setup.set("OPENAI_API_KEY", &endpoint.api_key);
    setup.set("MSWEA_CONFIGURED", "true");
    setup.set("MSWEA_COST_TRACKING", "ignore_errors");
    setup.set("MSWEA_SILENT_STARTUP", "1");
    setup.set("MSWEA_GLOBAL_CONFIG_DIR", &format!("{home}/config"));
    setup.set(
        "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT",
        &(input.retries + 1).to_string(),
    );
    setup.set("LITELLM_LOCAL_MODEL_COST_MAP", "True");
    let trajectory = AgentCli::MiniSweAgent.trajectory_file();
    // Told about its MCP servers in the instruction, as Harbor tells it.
    let task = format!("{}{}", input.prompt, input.inputs.mcp_servers_text());
    strings([
        &format!("{}/bin/python", setup.mount),
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
        &task,
    ])
}

/// Qwen Code's settings, its `settings.json` and command line (one-shot prompt).
fn qwen_code(setup: &mut Setup, input: &LaunchInput<'_>) -> Vec<String> {
    let endpoint = input.endpoint;
    let qwen_home = format!("{}/qwen", setup.home);
    setup.set("QWEN_HOME", &qwen_home);
    setup.set("OPENAI_API_KEY", &endpoint.api_key);
    setup.set("OPENAI_BASE_URL", &endpoint.base_url);
    setup.set("OPENAI_MODEL", &endpoint.model);
    setup.set("QWEN_CODE_SUPPRESS_YOLO_WARNING", "1");
    setup.set("QWEN_USAGE_STATISTICS_ENABLED", "false");
    let mut settings = json!({
        "general": {"enableAutoUpdate": false},
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
        "memory": {"enableManagedAutoMemory": false, "enableManagedAutoDream": false},
    });
    if let Some(servers) = tools::qwen_code_servers(input.inputs, &mut setup.env) {
        settings["mcpServers"] = servers;
    }
    // Qwen Code reads skills from `~/.agents/skills` as well as its own home.
    let home = setup.home.clone();
    setup.skills_to(input, format!("{home}/.agents/skills"));
    setup
        .files
        .push((format!("{qwen_home}/settings.json"), settings.to_string()));
    strings([
        &format!("{}/node_modules/.bin/qwen", setup.mount),
        "--auth-type",
        "openai",
        "--yolo",
        "-o",
        "stream-json",
        input.prompt,
    ])
}

/// `items` as owned strings.
fn strings<const N: usize>(items: [&str; N]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}
