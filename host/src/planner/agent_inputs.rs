//! Whether the harness can take what a task and the run hand its agent besides the
//! instruction (MCP servers, their headers, skills), and whether every variable a header names
//! is set: refused at planning, so a run never starts an agent that is not the one the task
//! measures (as Harbor's `_validate_agent_capabilities`, but before the first task).

use agentcompass_plugin_api::contracts::{
    merge_mcp_servers, AgentInputSupport, RunRequest, TaskSpec,
};

use super::PlanError;

/// What `task` and `req` hand the agent, as a need of the harness.
pub(crate) fn needs(task: &TaskSpec, req: &RunRequest) -> AgentInputSupport {
    let servers = merge_mcp_servers(&task.mcp_servers, &req.harness.mcp_servers);
    AgentInputSupport {
        mcp_servers: !servers.is_empty(),
        mcp_headers: servers.iter().any(|s| !s.headers.is_empty()),
        skills: task.skills_dir.is_some() || !req.harness.skills.is_empty(),
    }
}

/// The first input `needs` asks that `support` lacks, as the words of a refusal.
pub(crate) fn lacking(
    support: AgentInputSupport,
    needs: AgentInputSupport,
) -> Option<&'static str> {
    if needs.mcp_servers && !support.mcp_servers {
        Some("does not hand MCP servers to its agent")
    } else if needs.mcp_headers && !support.mcp_headers {
        Some("cannot forward the HTTP headers of MCP servers")
    } else if needs.skills && !support.skills {
        Some("does not place skills where its agent reads them")
    } else {
        None
    }
}

/// Refuses `task` when the harness `harness` (with `support`) cannot take its inputs, or a
/// header of one of its servers names a variable that is set nowhere (the run's
/// `--agent-env`, then the host's environment) and has no default.
pub(crate) fn check(
    harness: &str,
    support: AgentInputSupport,
    task: &TaskSpec,
    req: &RunRequest,
) -> Result<(), PlanError> {
    let unsupported = |message: String| PlanError::Unsupported {
        task_id: task.task_id.clone(),
        message,
    };
    if let Some(why) = lacking(support, needs(task, req)) {
        let what = if task.mcp_servers.is_empty() && task.skills_dir.is_none() {
            "the run's agent inputs"
        } else {
            "the task's `mcp_servers`/`skills_dir`"
        };
        return Err(unsupported(format!("harness `{harness}` {why} ({what})")));
    }
    for server in merge_mcp_servers(&task.mcp_servers, &req.harness.mcp_servers) {
        for (variable, default) in server.header_variables() {
            let set = req.harness.env.contains_key(&variable)
                || std::env::var_os(&variable).is_some()
                || default.is_some();
            if !set {
                return Err(unsupported(format!(
                    "MCP server `{}`: header variable `{variable}` is not set (export it or pass \
                     --agent-env {variable}=...)",
                    server.name
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentcompass_plugin_api::contracts::{McpServer, McpTransport};

    fn server(headers: &[(&str, &str)]) -> McpServer {
        McpServer {
            name: "tools".into(),
            transport: McpTransport::StreamableHttp,
            url: Some("http://tools:8000/mcp".into()),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..McpServer::default()
        }
    }

    #[test]
    fn a_harness_without_support_is_refused_naming_what_it_lacks() {
        let mut task = TaskSpec::new("t", "q");
        task.mcp_servers.push(server(&[]));
        let req = RunRequest::default();
        let err = check("oracle", AgentInputSupport::default(), &task, &req).unwrap_err();
        assert!(err.is_unsupported());
        assert_eq!(
            err.to_string(),
            "task t: harness `oracle` does not hand MCP servers to its agent (the task's \
             `mcp_servers`/`skills_dir`)"
        );
        check("claude_code", AgentInputSupport::ALL, &task, &req).unwrap();
        let mut req = RunRequest::default();
        req.harness.skills.push("./skills".into());
        let only_mcp = AgentInputSupport {
            mcp_servers: true,
            ..AgentInputSupport::default()
        };
        let err = check("x", only_mcp, &TaskSpec::new("t", "q"), &req).unwrap_err();
        assert!(err.to_string().contains("skills"), "{err}");
    }

    #[test]
    fn an_unset_header_variable_is_refused_unless_the_run_sets_it() {
        let mut task = TaskSpec::new("t", "q");
        task.mcp_servers.push(server(&[(
            "Authorization",
            "Bearer ${AC_TEST_UNSET_TOKEN_93}",
        )]));
        let mut req = RunRequest::default();
        let err = check("codex", AgentInputSupport::ALL, &task, &req).unwrap_err();
        assert!(err.to_string().contains("AC_TEST_UNSET_TOKEN_93"), "{err}");
        req.harness
            .env
            .insert("AC_TEST_UNSET_TOKEN_93".into(), "${OTHER}".into());
        check("codex", AgentInputSupport::ALL, &task, &req).unwrap();
    }
}
