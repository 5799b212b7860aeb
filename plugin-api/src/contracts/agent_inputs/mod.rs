//! What an agent is handed besides its instruction: MCP tool servers, skills and extra
//! environment variables (Harbor's `[[environment.mcp_servers]]`, `skills_dir`, `--mcp-config`,
//! `--skill`, `--ae`).
//!
//! A task declares servers and a skills directory ([`super::TaskSpec::mcp_servers`],
//! [`super::TaskSpec::skills_dir`]); a run adds servers, skills and variables for its harness
//! ([`super::HarnessSpec`]). The host merges both into the [`AgentInputs`] of the prepared task
//! ([`super::PreparedTask::agent_inputs`]): run-level servers replace task servers of the same
//! name, header `${VAR}` references and `--agent-env` values resolved. Each harness declares
//! what it can take ([`AgentInputSupport`]); a run that asks a harness for inputs it cannot
//! take is refused before the first task.

mod headers;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use headers::{header_references, resolve_template, sensitive_name, HeaderProblem};

/// How an agent talks to an MCP server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum McpTransport {
    /// A process the agent starts, speaking JSON-RPC on its stdin and stdout.
    #[serde(rename = "stdio")]
    Stdio,
    /// HTTP with server-sent events (the older transport; Harbor's default).
    #[default]
    #[serde(rename = "sse")]
    Sse,
    /// Streamable HTTP (Harbor also accepts `http`).
    #[serde(rename = "streamable-http", alias = "http")]
    StreamableHttp,
}

impl McpTransport {
    /// The name Harbor writes (`stdio`, `sse`, `streamable-http`).
    pub fn as_str(self) -> &'static str {
        match self {
            McpTransport::Stdio => "stdio",
            McpTransport::Sse => "sse",
            McpTransport::StreamableHttp => "streamable-http",
        }
    }

    /// The transport named `name` (`http` is `streamable-http`, as in Harbor).
    pub fn parse(name: &str) -> Option<McpTransport> {
        match name {
            "stdio" => Some(McpTransport::Stdio),
            "sse" => Some(McpTransport::Sse),
            "streamable-http" | "http" => Some(McpTransport::StreamableHttp),
            _ => None,
        }
    }
}

/// One MCP server, in Harbor's `MCPServerConfig` shape.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServer {
    /// The server's name (the agent prefixes its tools with it).
    pub name: String,
    /// The transport.
    #[serde(default)]
    pub transport: McpTransport,
    /// The URL of an HTTP transport.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The program of a `stdio` server (run inside the environment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// HTTP headers. As declared they may hold `${VAR}` references (credentials only as
    /// references); in [`AgentInputs`] they are resolved, and secret.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.name)
            .field("transport", &self.transport)
            .field("url", &self.url)
            .field("command", &self.command)
            .field("args", &self.args)
            .field("headers", &super::RedactedMap(&self.headers))
            .finish()
    }
}

/// Why a server declaration is not valid: the field and what was expected there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerProblem {
    /// The field (`url`, `command`, `headers.Authorization`, ...).
    pub field: String,
    /// What was expected and found (never a header's value).
    pub message: String,
}

impl McpServer {
    /// Checks the declaration as Harbor's `MCPServerConfig` validators do: a name; a `url`
    /// for HTTP transports; a `command` and no headers for `stdio`; header names that are
    /// HTTP tokens, values without line breaks and credentials only as `${VAR}` references
    /// without a default.
    pub fn check(&self) -> Result<(), McpServerProblem> {
        let problem = |field: &str, message: &str| McpServerProblem {
            field: field.to_string(),
            message: message.to_string(),
        };
        if self.name.trim().is_empty() {
            return Err(problem("name", "expected a non-empty name, found none"));
        }
        let command = self.command.as_deref().unwrap_or_default();
        let url = self.url.as_deref().unwrap_or_default();
        match self.transport {
            McpTransport::Stdio if command.is_empty() => {
                return Err(problem(
                    "command",
                    "expected a command for transport \"stdio\", found none",
                ))
            }
            McpTransport::Stdio if !self.headers.is_empty() => {
                return Err(problem(
                    "headers",
                    "expected no headers for transport \"stdio\" (only HTTP transports take them), found some",
                ))
            }
            McpTransport::Sse | McpTransport::StreamableHttp if url.is_empty() => {
                return Err(problem("url", "expected a url for an HTTP transport, found none"))
            }
            _ => {}
        }
        for (name, value) in &self.headers {
            headers::check_header(name, value).map_err(|p| McpServerProblem {
                field: format!("headers.{name}"),
                message: p.to_string(),
            })?;
        }
        Ok(())
    }

    /// The variables its headers reference (`${VAR}`), in order, with their defaults.
    pub fn header_variables(&self) -> Vec<(String, Option<String>)> {
        self.headers
            .values()
            .filter_map(|v| header_references(v))
            .flatten()
            .collect()
    }

    /// Whether the server is an HTTP one (`sse` or `streamable-http`).
    pub fn is_http(&self) -> bool {
        self.transport != McpTransport::Stdio
    }
}

/// Harbor's `merge_mcp_servers`: one list keyed by name, `later` replacing a same-named
/// server of `earlier` in its position, new names appended.
pub fn merge_mcp_servers(earlier: &[McpServer], later: &[McpServer]) -> Vec<McpServer> {
    let mut merged: Vec<McpServer> = earlier.to_vec();
    for server in later {
        match merged.iter_mut().find(|s| s.name == server.name) {
            Some(slot) => *slot = server.clone(),
            None => merged.push(server.clone()),
        }
    }
    merged
}

/// What a harness can take of [`AgentInputs`] ([`super::ComponentInfo::agent_inputs`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentInputSupport {
    /// It hands MCP servers to the agent (or is an MCP client itself).
    pub mcp_servers: bool,
    /// It forwards HTTP headers of MCP servers.
    pub mcp_headers: bool,
    /// It places skills where the agent reads them.
    pub skills: bool,
}

impl AgentInputSupport {
    /// Everything: servers, headers and skills.
    pub const ALL: AgentInputSupport = AgentInputSupport {
        mcp_servers: true,
        mcp_headers: true,
        skills: true,
    };

    /// `true` when it takes nothing (the default).
    pub fn is_none(&self) -> bool {
        *self == AgentInputSupport::default()
    }
}

/// One skill placed in the environment for the agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillRef {
    /// Its name (the directory's name).
    pub name: String,
    /// Where its `SKILL.md` is in the environment.
    pub path: String,
}

/// What the agent of one attempt is handed besides its instruction (set by the host).
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentInputs {
    /// The MCP servers, task and run merged, headers resolved (secret values).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<McpServer>,
    /// The directory in the environment holding one directory per skill (`<name>/SKILL.md`):
    /// the task's `skills_dir`, or where the host placed the run's skills.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skills_dir: Option<String>,
    /// The skills the host placed (the run's `--skill`s), by name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<SkillRef>,
    /// Variables for the agent's processes (`--agent-env`, resolved; secret values). They
    /// override the harness's own variables of the same name, as Harbor's `--ae` does.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

impl std::fmt::Debug for AgentInputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentInputs")
            .field("mcp_servers", &self.mcp_servers)
            .field("skills_dir", &self.skills_dir)
            .field("skills", &self.skills)
            .field("env", &super::RedactedMap(&self.env))
            .finish()
    }
}

impl AgentInputs {
    /// `true` when the agent is handed nothing extra.
    pub fn is_empty(&self) -> bool {
        self.mcp_servers.is_empty()
            && self.skills_dir.is_none()
            && self.skills.is_empty()
            && self.env.is_empty()
    }

    /// What these inputs need of a harness.
    pub fn needs(&self) -> AgentInputSupport {
        AgentInputSupport {
            mcp_servers: !self.mcp_servers.is_empty(),
            mcp_headers: self.mcp_servers.iter().any(|s| !s.headers.is_empty()),
            skills: self.skills_dir.is_some() || !self.skills.is_empty(),
        }
    }

    /// Harbor's text block describing the servers to an agent that is told about them in its
    /// instruction (mini-swe-agent, terminus-2): empty when there are none.
    pub fn mcp_servers_text(&self) -> String {
        if self.mcp_servers.is_empty() {
            return String::new();
        }
        let mut text = String::from(
            "\n\nMCP Servers:\nThe following MCP servers are available for this task.\n",
        );
        for server in &self.mcp_servers {
            let line = match server.transport {
                // As Harbor writes it: the command, a space, the arguments.
                McpTransport::Stdio => format!(
                    "- {}: stdio transport, command: {} {}",
                    server.name,
                    server.command.as_deref().unwrap_or_default(),
                    server.args.join(" ")
                ),
                transport => format!(
                    "- {}: {} transport, url: {}",
                    server.name,
                    transport.as_str(),
                    server.url.as_deref().unwrap_or_default()
                ),
            };
            text.push_str(&line);
            text.push('\n');
        }
        text
    }
}

#[cfg(test)]
mod tests;
