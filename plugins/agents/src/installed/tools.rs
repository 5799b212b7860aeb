//! The agent's tools in each CLI's own configuration: MCP servers (Claude Code's
//! `.claude.json`, Codex's `config.toml`, Qwen Code's `settings.json`; mini-swe-agent is told
//! about them in its instruction, as Harbor does) and where each reads skills.
//!
//! A header's resolved value never enters a configuration file: each goes into a variable of
//! the agent's process (`AGENTCOMPASS_MCP_AUTH_<server>_<header>`, a name the host's
//! redaction treats as secret) that the file references, as Harbor's `MCP_AUTH_*` variables.

use std::collections::BTreeMap;

use agentcompass_plugin_api::contracts::{AgentInputs, McpServer, McpTransport};
use agentcompass_plugin_api::{Error, Result};
use serde_json::{json, Map, Value};

/// The variable holding header `header` of server `server` (both indexes).
fn header_variable(server: usize, header: usize) -> String {
    format!("AGENTCOMPASS_MCP_AUTH_{server}_{header}")
}

/// Each server's headers as `name → reference` (`reference(variable)`), and the variables
/// with their values.
fn header_refs(
    index: usize,
    server: &McpServer,
    reference: impl Fn(&str) -> String,
    env: &mut BTreeMap<String, String>,
) -> Map<String, Value> {
    let mut headers = Map::new();
    for (j, (name, value)) in server.headers.iter().enumerate() {
        let variable = header_variable(index, j);
        headers.insert(name.clone(), Value::String(reference(&variable)));
        env.insert(variable, value.clone());
    }
    headers
}

/// Claude Code's user-scope `.claude.json` (`mcpServers`; `${VAR}` in headers expanded by
/// Claude Code from its environment), or `None` without servers.
pub(super) fn claude_code_config(
    inputs: &AgentInputs,
    env: &mut BTreeMap<String, String>,
) -> Option<String> {
    if inputs.mcp_servers.is_empty() {
        return None;
    }
    let mut servers = Map::new();
    for (i, server) in inputs.mcp_servers.iter().enumerate() {
        let mut entry = match server.transport {
            McpTransport::Stdio => json!({"type": "stdio", "command": server.command,
                                          "args": server.args}),
            McpTransport::Sse => json!({"type": "sse", "url": server.url}),
            McpTransport::StreamableHttp => json!({"type": "http", "url": server.url}),
        };
        let headers = header_refs(i, server, |v| format!("${{{v}}}"), env);
        if !headers.is_empty() {
            entry["headers"] = Value::Object(headers);
        }
        servers.insert(server.name.clone(), entry);
    }
    Some(json!({"mcpServers": servers}).to_string())
}

/// Codex's `config.toml` tables `[mcp_servers."<name>"]` (stdio `command`/`args`, streamable
/// HTTP `url` with `env_http_headers` naming the variables), or `None` without servers.
/// Codex has no SSE client: an `sse` server is refused rather than silently unreachable.
pub(super) fn codex_config(
    inputs: &AgentInputs,
    env: &mut BTreeMap<String, String>,
) -> Result<Option<String>> {
    if inputs.mcp_servers.is_empty() {
        return Ok(None);
    }
    let mut toml = String::new();
    for (i, server) in inputs.mcp_servers.iter().enumerate() {
        toml.push_str(&format!("[mcp_servers.{}]\n", basic_string(&server.name)));
        match server.transport {
            McpTransport::Stdio => {
                let command = server.command.as_deref().unwrap_or_default();
                toml.push_str(&format!("command = {}\n", basic_string(command)));
                let args: Vec<String> = server.args.iter().map(|a| basic_string(a)).collect();
                toml.push_str(&format!("args = [{}]\n", args.join(", ")));
            }
            McpTransport::Sse => {
                return Err(Error::unsupported(format!(
                    "codex: MCP server `{}` uses the `sse` transport, which Codex cannot reach \
                     (it speaks stdio and streamable HTTP); declare `transport = \
                     \"streamable-http\"` if the server speaks it",
                    server.name
                )));
            }
            McpTransport::StreamableHttp => {
                let url = server.url.as_deref().unwrap_or_default();
                toml.push_str(&format!("url = {}\n", basic_string(url)));
                let headers = header_refs(i, server, str::to_string, env);
                if !headers.is_empty() {
                    let pairs: Vec<String> = headers
                        .iter()
                        .map(|(name, var)| {
                            format!(
                                "{} = {}",
                                basic_string(name),
                                basic_string(var.as_str().unwrap_or_default())
                            )
                        })
                        .collect();
                    toml.push_str(&format!("env_http_headers = {{ {} }}\n", pairs.join(", ")));
                }
            }
        }
        toml.push('\n');
    }
    Ok(Some(toml))
}

/// A TOML basic string (its escapes are JSON's).
fn basic_string(text: &str) -> String {
    Value::String(text.to_string()).to_string()
}

/// Qwen Code's `mcpServers` for its `settings.json` (stdio `command`/`args`, SSE `url`,
/// streamable HTTP `httpUrl`; `$VAR` in headers expanded by Qwen Code).
pub(super) fn qwen_code_servers(
    inputs: &AgentInputs,
    env: &mut BTreeMap<String, String>,
) -> Option<Value> {
    if inputs.mcp_servers.is_empty() {
        return None;
    }
    let mut servers = Map::new();
    for (i, server) in inputs.mcp_servers.iter().enumerate() {
        let mut entry = match server.transport {
            McpTransport::Stdio => json!({"command": server.command, "args": server.args}),
            McpTransport::Sse => json!({"url": server.url}),
            McpTransport::StreamableHttp => json!({"httpUrl": server.url}),
        };
        let headers = header_refs(i, server, |v| format!("${v}"), env);
        if !headers.is_empty() {
            entry["headers"] = Value::Object(headers);
        }
        servers.insert(server.name.clone(), entry);
    }
    Some(Value::Object(servers))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs() -> AgentInputs {
        let mut http = McpServer {
            name: "kv store".into(),
            transport: McpTransport::StreamableHttp,
            url: Some("http://tools:8000/mcp".into()),
            ..McpServer::default()
        };
        http.headers
            .insert("Authorization".into(), "Bearer s3cret-value".into());
        let stdio = McpServer {
            name: "fs".into(),
            transport: McpTransport::Stdio,
            command: Some("fs-server".into()),
            args: vec!["--root".into(), "/app".into()],
            ..McpServer::default()
        };
        AgentInputs {
            mcp_servers: vec![http, stdio],
            ..AgentInputs::default()
        }
    }

    #[test]
    fn claude_code_gets_user_scope_servers_with_header_references() {
        let mut env = BTreeMap::new();
        let config = claude_code_config(&inputs(), &mut env).unwrap();
        assert!(!config.contains("s3cret"), "{config}");
        let config: Value = serde_json::from_str(&config).unwrap();
        assert_eq!(
            config["mcpServers"]["kv store"],
            json!({"type": "http", "url": "http://tools:8000/mcp",
                   "headers": {"Authorization": "${AGENTCOMPASS_MCP_AUTH_0_0}"}})
        );
        assert_eq!(
            config["mcpServers"]["fs"],
            json!({"type": "stdio", "command": "fs-server", "args": ["--root", "/app"]})
        );
        assert_eq!(env["AGENTCOMPASS_MCP_AUTH_0_0"], "Bearer s3cret-value");
        assert!(claude_code_config(&AgentInputs::default(), &mut env).is_none());
    }

    #[test]
    fn codex_gets_toml_tables_and_refuses_sse() {
        let mut env = BTreeMap::new();
        let toml = codex_config(&inputs(), &mut env).unwrap().unwrap();
        assert_eq!(
            toml,
            "[mcp_servers.\"kv store\"]\nurl = \"http://tools:8000/mcp\"\n\
             env_http_headers = { \"Authorization\" = \"AGENTCOMPASS_MCP_AUTH_0_0\" }\n\n\
             [mcp_servers.\"fs\"]\ncommand = \"fs-server\"\nargs = [\"--root\", \"/app\"]\n\n"
        );
        let mut sse = inputs();
        sse.mcp_servers[0].transport = McpTransport::Sse;
        let err = codex_config(&sse, &mut env).unwrap_err();
        assert!(err.message.contains("`sse` transport"), "{err}");
    }

    #[test]
    fn qwen_code_gets_http_url_and_dollar_references() {
        let mut env = BTreeMap::new();
        let servers = qwen_code_servers(&inputs(), &mut env).unwrap();
        assert_eq!(
            servers["kv store"],
            json!({"httpUrl": "http://tools:8000/mcp",
                   "headers": {"Authorization": "$AGENTCOMPASS_MCP_AUTH_0_0"}})
        );
    }
}
