use agentcompass_plugin_api::contracts::{AgentInputs, Installer, ModelEndpoint, RunRequest};
use agentcompass_plugin_api::sdk::Harness;
use serde_json::json;

use super::agents::{AgentCli, LaunchInput};
use super::{InstalledAgent, Settings};

fn endpoint() -> ModelEndpoint {
    ModelEndpoint {
        model: "m-test".into(),
        base_url: "http://127.0.0.1:4567/v1".into(),
        api_key: "placeholder-token-123".into(),
        protocol: "openai-chat".into(),
    }
}

fn request(agent: AgentCli, params: serde_json::Value) -> RunRequest {
    let mut req = RunRequest::default();
    req.harness.id = agent.id().into();
    req.harness.params = params.as_object().cloned().unwrap_or_default();
    req
}

#[test]
fn each_plan_installs_its_pinned_package_and_keeps_its_logs() {
    for agent in AgentCli::ALL {
        let harness = InstalledAgent { agent };
        let plan = harness
            .build_plan(&request(agent, json!({})), &Default::default())
            .unwrap();
        assert!(plan.model_endpoint_in_environment);
        assert_eq!(plan.installs.len(), 1);
        let install = &plan.installs[0];
        assert_eq!(install.package, agent.package());
        assert_eq!(install.version, agent.default_version());
        assert_eq!(
            install.mount_path,
            format!("/opt/agentcompass/agents/{}", agent.id())
        );
        assert_eq!(
            install.installer,
            if agent == AgentCli::MiniSweAgent {
                Installer::Pip
            } else {
                Installer::Npm
            }
        );
        assert_eq!(
            plan.artifacts[0].source,
            format!("/logs/agent/{}", agent.id())
        );
    }
    let pinned = InstalledAgent {
        agent: AgentCli::Codex,
    }
    .build_plan(
        &request(
            AgentCli::Codex,
            json!({"version": "0.170.0", "registry": "http://127.0.0.1:9/"}),
        ),
        &Default::default(),
    )
    .unwrap();
    assert_eq!(pinned.installs[0].version, "0.170.0");
    assert_eq!(
        pinned.installs[0].registry.as_deref(),
        Some("http://127.0.0.1:9/")
    );
}

#[test]
fn bad_params_are_one_line_naming_the_harness_and_parameter() {
    let cases = [
        (
            json!({"version": "1.0 && rm"}),
            "parameter `version` must be a plain version",
        ),
        (
            json!({"extra_args": ["--x", 3]}),
            "parameter `extra_args` [1] must be a string",
        ),
        (json!({"nope": 1}), "nope"),
    ];
    for (params, expected) in cases {
        let err = Settings::read(AgentCli::ClaudeCode, &request(AgentCli::ClaudeCode, params))
            .unwrap_err();
        assert!(
            err.message.starts_with("harness `claude_code`: "),
            "{}",
            err.message
        );
        assert!(err.message.contains(expected), "{}", err.message);
    }
}

#[test]
fn launches_use_the_documented_unattended_settings_and_the_placeholder() {
    let endpoint = endpoint();
    let extra = vec!["--max-turns".to_string(), "30".to_string()];
    let input = LaunchInput {
        endpoint: &endpoint,
        prompt: "Do the task.",
        retries: 1,
        extra_args: &extra,
        max_turns: None,
        inputs: &AgentInputs::default(),
    };
    let claude = AgentCli::ClaudeCode.launch(&input).unwrap();
    assert_eq!(
        claude.argv[0],
        "/opt/agentcompass/agents/claude_code/node_modules/.bin/claude"
    );
    assert_eq!(&claude.argv[1..3], ["-p", "Do the task."]);
    assert!(claude.argv.ends_with(&extra));
    assert_eq!(claude.env["ANTHROPIC_BASE_URL"], "http://127.0.0.1:4567");
    assert_eq!(claude.env["ANTHROPIC_API_KEY"], "placeholder-token-123");
    assert_eq!(claude.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"], "1");

    let codex = AgentCli::Codex.launch(&input).unwrap();
    assert_eq!(codex.argv.last().unwrap(), "Do the task.");
    assert!(codex.argv.iter().any(|a| a.contains(
        "base_url=\"http://127.0.0.1:4567/v1\",env_key=\"AGENTCOMPASS_CODEX_KEY\",wire_api=\"responses\""
    )), "{:?}", codex.argv);
    assert_eq!(codex.env["AGENTCOMPASS_CODEX_KEY"], "placeholder-token-123");
    assert!(codex.dirs.contains(&codex.env["CODEX_HOME"]));
    // The key is only ever in the environment, never on the command line.
    for launch in [&claude, &codex] {
        assert!(!launch
            .argv
            .iter()
            .any(|a| a.contains("placeholder-token-123")));
    }

    let mini = AgentCli::MiniSweAgent.launch(&input).unwrap();
    assert_eq!(
        mini.argv[0],
        "/opt/agentcompass/agents/mini_swe_agent/bin/python"
    );
    assert!(mini.argv.contains(&"openai/m-test".to_string()));
    assert!(mini
        .argv
        .contains(&"model.model_kwargs.api_base=http://127.0.0.1:4567/v1".to_string()));
    assert_eq!(mini.env["MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT"], "2");
    assert_eq!(mini.env["LITELLM_LOCAL_MODEL_COST_MAP"], "True");

    let qwen = AgentCli::QwenCode.launch(&input).unwrap();
    assert_eq!(qwen.files.len(), 1);
    assert!(qwen.files[0].0.ends_with("/qwen/settings.json"));
    let settings: serde_json::Value = serde_json::from_str(&qwen.files[0].1).unwrap();
    assert_eq!(settings["privacy"]["usageStatisticsEnabled"], false);
    assert_eq!(settings["memory"]["enableManagedAutoMemory"], false);
    assert_eq!(qwen.env["OPENAI_BASE_URL"], "http://127.0.0.1:4567/v1");
}

#[test]
fn the_requests_max_turns_reaches_the_agents_that_take_one() {
    let endpoint = endpoint();
    let input = LaunchInput {
        endpoint: &endpoint,
        prompt: "Do the task.",
        retries: 1,
        extra_args: &[],
        max_turns: Some(7),
        inputs: &AgentInputs::default(),
    };
    let claude = AgentCli::ClaudeCode.launch(&input).unwrap().argv;
    assert_eq!(claude[claude.len() - 2..], ["--max-turns", "7"]);
    let mini = AgentCli::MiniSweAgent.launch(&input).unwrap().argv;
    assert_eq!(mini[mini.len() - 2..], ["-c", "agent.step_limit=7"]);
    let codex = AgentCli::Codex.launch(&input).unwrap().argv;
    assert!(!codex.iter().any(|a| a.contains("turn")), "{codex:?}");
}
