//! What the agent of each attempt is handed besides its instruction, from the task and the
//! run: the merged MCP servers with their headers resolved, the skills placed in the
//! environment, the `--agent-env` variables and the extra instructions.
//!
//! The run's part ([`RunAgentInputs`]) is resolved once, before anything is written (an unset
//! variable or a missing skill refuses the run); each attempt then gets its [`AgentInputs`]
//! ([`RunAgentInputs::for_task`]) and the skills are uploaded into its environment
//! ([`RunAgentInputs::place_skills`]). Every resolved value is registered as a secret, so it
//! is scrubbed from whatever the host prints or persists.

pub mod skills;

use std::collections::BTreeMap;

use agentcompass_datasets::TaskCache;
use agentcompass_plugin_api::contracts::{
    merge_mcp_servers, resolve_template, AgentInputs, ExecRequest, PreparedTask, RunRequest,
    SkillRef, TaskSpec,
};
use agentcompass_plugin_api::sdk::SessionRef;

pub use skills::Skill;

use agentcompass_plugin_api::contracts::HeaderProblem;

/// Why the agent inputs of a run or a task cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum AgentInputError {
    /// An `--agent-env` value's reference.
    #[error("--agent-env {key}: {problem}")]
    Env {
        /// The variable.
        key: String,
        /// What is wrong (never its value).
        problem: HeaderProblem,
    },
    /// A header of an MCP server.
    #[error("MCP server `{server}`: header `{header}`: {problem}")]
    Header {
        /// The server.
        server: String,
        /// The header.
        header: String,
        /// What is wrong (never its value).
        problem: HeaderProblem,
    },
    /// A `--skill` source.
    #[error(transparent)]
    Skill(#[from] skills::SourceError),
    /// The task's skills directory is relative while the run adds skills.
    #[error("the task's `skills_dir` must be absolute for the run's --skill, found {0:?}")]
    RelativeSkillsDir(String),
}

/// Whether `server` is an HTTP server on the host's loopback (an internal tool service):
/// an agent inside an environment reaches it only through the attempt's tool relay, which
/// adds its headers on the host.
pub fn on_host_loopback(server: &agentcompass_plugin_api::contracts::McpServer) -> bool {
    let Some(url) = server.url.as_deref().filter(|_| server.is_http()) else {
        return false;
    };
    let Ok(url) = url::Url::parse(url) else {
        return false;
    };
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// The servers of `inputs` on the host's loopback, as the tool relay's routes (name, route).
pub fn loopback_routes(inputs: &AgentInputs) -> Vec<(String, agentcompass_gateway::ToolRoute)> {
    inputs
        .mcp_servers
        .iter()
        .filter(|s| on_host_loopback(s))
        .map(|s| {
            let route = agentcompass_gateway::ToolRoute {
                url: s.url.clone().unwrap_or_default(),
                headers: s.headers.clone().into_iter().collect(),
            };
            (s.name.clone(), route)
        })
        .collect()
}

/// Points the servers named in `relayed` (in route order) at the tool relay: its URL inside
/// the environment, and no headers (the relay adds them on the host).
pub fn through_relay(
    inputs: &mut AgentInputs,
    relayed: &[String],
    relay: &agentcompass_gateway::ToolRelay,
) {
    for server in &mut inputs.mcp_servers {
        if let Some(index) = relayed.iter().position(|name| *name == server.name) {
            server.url = Some(relay.url(index));
            server.headers.clear();
        }
    }
}

/// Where the run's skills go when the task names no `skills_dir` (Harbor's
/// `EnvironmentPaths.default_skills_dir`).
pub const DEFAULT_SKILLS_DIR: &str = "/runtime/skills";

/// The run's own agent inputs, resolved.
#[derive(Debug, Default)]
pub struct RunAgentInputs {
    /// `--agent-env`, resolved.
    env: BTreeMap<String, String>,
    /// `--skill`s, resolved.
    pub skills: Vec<Skill>,
    /// `--extra-instruction-path` texts.
    extra_instructions: Vec<String>,
}

impl RunAgentInputs {
    /// Resolves the request's agent inputs: `${VAR}` references of `--agent-env` values
    /// from the host's environment, skills from their sources (git ones through `cache`).
    pub fn resolve(req: &RunRequest, cache: Option<&TaskCache>) -> Result<Self, AgentInputError> {
        let mut env = BTreeMap::new();
        for (key, value) in &req.harness.env {
            let resolved =
                resolve_template(value, |name| std::env::var(name).ok()).map_err(|problem| {
                    AgentInputError::Env {
                        key: key.clone(),
                        problem,
                    }
                })?;
            if resolved != *value {
                agentcompass_redact::register_secret(&resolved);
            }
            env.insert(key.clone(), resolved);
        }
        Ok(RunAgentInputs {
            env,
            skills: skills::resolve(&req.harness.skills, cache)?,
            extra_instructions: req.harness.extra_instructions.clone(),
        })
    }

    /// What the agent of an attempt of `task` is handed: the task's servers and the run's
    /// (same-named run servers replacing the task's), headers resolved from `--agent-env`
    /// then the host's environment; the skills directory; the variables.
    pub fn for_task(
        &self,
        task: &TaskSpec,
        req: &RunRequest,
    ) -> Result<AgentInputs, AgentInputError> {
        let mut servers = merge_mcp_servers(&task.mcp_servers, &req.harness.mcp_servers);
        let lookup = |name: &str| {
            self.env
                .get(name)
                .cloned()
                .or_else(|| std::env::var(name).ok())
        };
        for server in &mut servers {
            for (header, value) in &mut server.headers {
                let resolved =
                    resolve_template(value, lookup).map_err(|problem| AgentInputError::Header {
                        server: server.name.clone(),
                        header: header.clone(),
                        problem,
                    })?;
                if resolved != *value {
                    agentcompass_redact::register_secret(&resolved);
                }
                *value = resolved;
            }
        }
        if let Some(dir) = task.skills_dir.as_deref() {
            if !self.skills.is_empty() && !dir.starts_with('/') {
                return Err(AgentInputError::RelativeSkillsDir(dir.to_string()));
            }
        }
        let skills_dir = match (&task.skills_dir, self.skills.is_empty()) {
            (Some(dir), _) => Some(dir.clone()),
            (None, false) => Some(DEFAULT_SKILLS_DIR.to_string()),
            (None, true) => None,
        };
        let skills = skills_dir
            .iter()
            .flat_map(|dir| {
                self.skills.iter().map(move |s| SkillRef {
                    name: s.name.clone(),
                    path: format!("{}/{}/SKILL.md", dir.trim_end_matches('/'), s.name),
                })
            })
            .collect();
        Ok(AgentInputs {
            mcp_servers: servers,
            skills_dir,
            skills,
            env: self.env.clone(),
        })
    }

    /// `prepared` as the harness sees it: its inputs set and the extra instructions
    /// appended to its prompt, each after a blank line (Harbor's composition).
    pub fn hand_over(&self, prepared: &mut PreparedTask, inputs: AgentInputs) {
        for extra in &self.extra_instructions {
            prepared.input.prompt.push_str("\n\n");
            prepared.input.prompt.push_str(extra);
        }
        prepared.agent_inputs = inputs;
    }

    /// Whether there is anything to hand over beyond what the task declares.
    pub fn is_empty(&self) -> bool {
        self.env.is_empty() && self.skills.is_empty() && self.extra_instructions.is_empty()
    }

    /// Uploads the run's skills into `session` under `inputs.skills_dir` (one directory per
    /// skill, readable by every user), as Harbor's `_upload_injected_skills`.
    pub async fn place_skills(
        &self,
        session: &SessionRef,
        inputs: &AgentInputs,
    ) -> agentcompass_plugin_api::Result<()> {
        let Some(dir) = inputs.skills_dir.as_deref() else {
            return Ok(());
        };
        if self.skills.is_empty() {
            return Ok(());
        }
        for skill in &self.skills {
            let target = format!("{}/{}", dir.trim_end_matches('/'), skill.name);
            session.upload_dir(&skill.dir, &target).await?;
        }
        let chmod = ExecRequest::argv(["chmod", "-R", "a+rX", dir])
            .user("0")
            .timeout(60.0);
        let done = session.exec(chmod).await?;
        if done.returncode != 0 {
            return Err(agentcompass_plugin_api::Error::environment(format!(
                "cannot make the skills under {dir} readable: chmod exited {}",
                done.returncode
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentcompass_plugin_api::contracts::{McpServer, McpTransport};

    fn server(name: &str, url: &str, header: Option<&str>) -> McpServer {
        McpServer {
            name: name.into(),
            transport: McpTransport::StreamableHttp,
            url: Some(url.into()),
            headers: header
                .map(|h| [("Authorization".to_string(), h.to_string())].into())
                .unwrap_or_default(),
            ..McpServer::default()
        }
    }

    #[test]
    fn the_run_and_the_task_merge_with_variables_resolved_and_registered() {
        std::env::set_var("AC_TEST_AGENT_INPUTS_HOST_9", "from-host-value");
        let mut req = RunRequest::default();
        req.harness.env.insert(
            "TOKEN_FROM_RUN".into(),
            "${AC_TEST_AGENT_INPUTS_HOST_9}".into(),
        );
        req.harness.mcp_servers.push(server(
            "tools",
            "http://127.0.0.1:4000/mcp",
            Some("Bearer ${TOKEN_FROM_RUN}"),
        ));
        req.harness.extra_instructions.push("Use the tools.".into());
        let run = RunAgentInputs::resolve(&req, None).unwrap();
        let mut task = TaskSpec::new("t", "q");
        task.mcp_servers
            .push(server("tools", "http://tools:8000/mcp", None));
        task.mcp_servers
            .push(server("search", "http://search:80/mcp", None));
        let inputs = run.for_task(&task, &req).unwrap();
        let names: Vec<&str> = inputs.mcp_servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["tools", "search"],
            "the run's replaces the task's in place"
        );
        assert_eq!(
            inputs.mcp_servers[0].headers["Authorization"],
            "Bearer from-host-value"
        );
        assert_eq!(inputs.env["TOKEN_FROM_RUN"], "from-host-value");
        assert_eq!(
            agentcompass_redact::scrub_text("x from-host-value y"),
            format!("x {} y", agentcompass_plugin_api::contracts::REDACTED)
        );
        // Only the host's loopback server goes through the relay.
        let routes = loopback_routes(&inputs);
        assert_eq!(routes.len(), 1);
        assert_eq!(routes[0].0, "tools");
        let mut prepared = agentcompass_plugin_api::contracts::PreparedTask::default();
        prepared.input.prompt = "Do it.".into();
        run.hand_over(&mut prepared, inputs);
        assert_eq!(prepared.input.prompt, "Do it.\n\nUse the tools.");
    }

    #[test]
    fn an_unset_variable_of_the_run_refuses_it() {
        let mut req = RunRequest::default();
        req.harness
            .env
            .insert("K".into(), "${AC_TEST_AGENT_INPUTS_UNSET_4}".into());
        let err = RunAgentInputs::resolve(&req, None).unwrap_err().to_string();
        assert!(err.starts_with("--agent-env K: "), "{err}");
        assert!(err.contains("AC_TEST_AGENT_INPUTS_UNSET_4"), "{err}");
    }

    #[test]
    fn skills_go_to_the_tasks_dir_or_the_default() {
        let tmp = tempfile::tempdir().unwrap();
        let skill = tmp.path().join("greet");
        std::fs::create_dir(&skill).unwrap();
        std::fs::write(skill.join("SKILL.md"), "x").unwrap();
        let mut req = RunRequest::default();
        req.harness.skills.push(skill.display().to_string());
        let run = RunAgentInputs::resolve(&req, None).unwrap();
        let inputs = run.for_task(&TaskSpec::new("t", "q"), &req).unwrap();
        assert_eq!(inputs.skills_dir.as_deref(), Some(DEFAULT_SKILLS_DIR));
        assert_eq!(inputs.skills[0].path, "/runtime/skills/greet/SKILL.md");
        let mut task = TaskSpec::new("t", "q");
        task.skills_dir = Some("skills".into());
        let err = run.for_task(&task, &req).unwrap_err().to_string();
        assert!(err.contains("absolute"), "{err}");
    }
}
