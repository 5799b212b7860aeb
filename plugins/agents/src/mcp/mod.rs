//! The MCP client of the host-side harnesses (`terminus`): the task's and the run's MCP
//! servers connected when the run starts, their tools offered to the model as
//! `mcp__<server>__<tool>` (Claude Code's naming), each call made and answered — and
//! recorded as a trajectory step (server, tool, arguments, result).
//!
//! The protocol is the small part of MCP a client needs (module `wire`); module `route`
//! reaches each server where it runs. A server that cannot be reached is left out with a
//! warning (the run goes on with the others, as an agent CLI does).

mod route;
mod wire;

use agentcompass_plugin_api::contracts::{AgentInputs, ToolDef};
use agentcompass_plugin_api::sdk::SessionRef;
use serde_json::Value;

use route::Route;

/// One connected server.
struct Server {
    name: String,
    route: Route,
    session: Option<String>,
}

/// One offered tool: its name for the model, its server and its name there.
struct Tool {
    name: String,
    server: usize,
    tool: String,
    def: ToolDef,
}

/// What one call did.
#[derive(Debug, Clone)]
pub(crate) struct McpCall {
    /// The server's name.
    pub(crate) server: String,
    /// The tool's name on its server.
    pub(crate) tool: String,
    /// The result's text (or the failure's).
    pub(crate) text: String,
    /// Whether the tool (or the call) failed.
    pub(crate) is_error: bool,
}

/// The servers of one run and their tools.
#[derive(Default)]
pub(crate) struct McpTools {
    servers: Vec<Server>,
    tools: Vec<Tool>,
    /// One line per server left out.
    pub(crate) warnings: Vec<String>,
}

/// `text` as a tool-name part: letters, digits, `_` and `-` kept, anything else `_`.
fn name_part(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

impl McpTools {
    /// Connects to every server of `inputs` and lists its tools.
    pub(crate) async fn connect(env: &SessionRef, inputs: &AgentInputs, timeout: f64) -> McpTools {
        let mut tools = McpTools::default();
        for server in &inputs.mcp_servers {
            let connected = match Route::of(server) {
                Ok(route) => connect(env, &server.name, route, timeout).await,
                Err(e) => Err(e),
            };
            match connected {
                Ok((connected, listed)) => tools.add(connected, listed),
                Err(e) => tools
                    .warnings
                    .push(format!("MCP server `{}` left out: {e}", server.name)),
            }
        }
        tools
    }

    fn add(&mut self, server: Server, listed: Vec<Value>) {
        let index = self.servers.len();
        for tool in listed {
            let Some(tool_name) = tool["name"].as_str() else {
                continue;
            };
            let mut name = format!("mcp__{}__{}", name_part(&server.name), name_part(tool_name));
            name.truncate(64);
            let def = ToolDef {
                name: name.clone(),
                description: tool["description"].as_str().unwrap_or_default().to_string(),
                parameters: tool
                    .get("inputSchema")
                    .cloned()
                    .unwrap_or_else(|| serde_json::json!({"type": "object"})),
            };
            self.tools.push(Tool {
                name,
                server: index,
                tool: tool_name.to_string(),
                def,
            });
        }
        self.servers.push(server);
    }

    /// The tools offered to the model.
    pub(crate) fn defs(&self) -> impl Iterator<Item = &ToolDef> {
        self.tools.iter().map(|t| &t.def)
    }

    /// Whether `name` is one of the servers' tools.
    pub(crate) fn owns(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.name == name)
    }

    /// Calls the tool the model knows as `name` with `arguments`.
    pub(crate) async fn call(
        &mut self,
        env: &SessionRef,
        name: &str,
        arguments: &Value,
        timeout: f64,
    ) -> Option<McpCall> {
        let tool = self.tools.iter().find(|t| t.name == name)?;
        let server = self.servers.get(tool.server)?;
        let request = wire::call_tool(&tool.tool, arguments);
        let answer = match &server.route {
            Route::Stdio { .. } => server.route.stdio(env, &request, timeout).await,
            route => route
                .post(env, &request, server.session.as_deref(), timeout)
                .await
                .map(|a| a.messages),
        };
        let (text, is_error) = match answer.and_then(|messages| wire::response(&messages, 2)) {
            Ok(result) => wire::call_text(&result),
            Err(e) => (format!("error: the MCP call failed: {e}"), true),
        };
        Some(McpCall {
            server: server.name.clone(),
            tool: tool.tool.clone(),
            text,
            is_error,
        })
    }
}

/// Initialises a session with the server at `route` and lists its tools.
async fn connect(
    env: &SessionRef,
    name: &str,
    route: Route,
    timeout: f64,
) -> Result<(Server, Vec<Value>), String> {
    let mut server = Server {
        name: name.to_string(),
        route,
        session: None,
    };
    let messages = match &server.route {
        Route::Stdio { .. } => {
            server
                .route
                .stdio(env, &wire::list_tools(), timeout)
                .await?
        }
        route => {
            let init = route.post(env, &wire::initialize(), None, timeout).await?;
            if init.status >= 300 {
                return Err(format!("initialize answered HTTP {}", init.status));
            }
            wire::response(&init.messages, 1)?;
            server.session = init.session;
            let session = server.session.as_deref();
            route
                .post(env, &wire::initialized(), session, timeout)
                .await?;
            route
                .post(env, &wire::list_tools(), session, timeout)
                .await?
                .messages
        }
    };
    let listed = wire::response(&messages, 2)?;
    let tools = listed["tools"].as_array().cloned().unwrap_or_default();
    Ok((server, tools))
}
