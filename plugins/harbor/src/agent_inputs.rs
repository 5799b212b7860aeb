//! What a task hands its agent besides the instruction: `[[environment.mcp_servers]]` (each
//! validated as Harbor's `MCPServerConfig`, through the plugin API's [`McpServer::check`])
//! and `skills_dir` (a directory inside the environment).

use agentcompass_plugin_api::contracts::{merge_mcp_servers, McpServer, McpTransport};
use agentcompass_plugin_api::Result;
use toml::Value;

use crate::fields::Section;

/// `mcp_servers`: tables with a `name`, a `transport` (`stdio`, `sse`, `streamable-http` or
/// its alias `http`; default `sse`), the `url` an HTTP transport needs or the `command`
/// `stdio` needs, `args` and HTTP `headers` (credentials only as `${VAR}` references).
pub(crate) fn mcp_servers(section: &Section) -> Result<Vec<McpServer>> {
    let items = match section.get("mcp_servers") {
        None => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(section.expected("mcp_servers", "an array of tables", other)),
    };
    let mut servers = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let key = section.key(&format!("mcp_servers[{i}]"));
        let Value::Table(table) = item else {
            return Err(section.expected(&format!("mcp_servers[{i}]"), "a table", item));
        };
        let server = section.child(key, table);
        if server.get("name").is_none() {
            return Err(server.file_error(format!(
                "field `{}`: expected a string, found none",
                server.key("name")
            )));
        }
        let transport = match server.get("transport") {
            None => McpTransport::default(),
            Some(_) => server
                .choice("transport", &["stdio", "sse", "streamable-http", "http"])?
                .as_deref()
                .and_then(McpTransport::parse)
                .unwrap_or_default(),
        };
        let declared = McpServer {
            name: server.string("name")?.unwrap_or_default(),
            transport,
            url: server.string("url")?,
            command: server.string("command")?,
            args: server.string_list("args")?.unwrap_or_default(),
            headers: server.string_map("headers")?.unwrap_or_default(),
        };
        declared
            .check()
            .map_err(|problem| server.error(&problem.field, problem.message))?;
        // Harbor keys the servers by name: a later one of the same name replaces it.
        servers = merge_mcp_servers(&servers, &[declared]);
    }
    Ok(servers)
}

/// `skills_dir`: a path inside the environment (absolute when the run adds skills, which
/// the host checks); empty is none, as Harbor reads it.
pub(crate) fn skills_dir(section: &Section) -> Result<Option<String>> {
    Ok(section.string("skills_dir")?.filter(|dir| !dir.is_empty()))
}
