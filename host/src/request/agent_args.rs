//! The agent inputs of a run, by Harbor's flag names: `--mcp-config FILE`, `--skill
//! DIR|GIT`, `--agent-env KEY=VALUE` (`--ae`), `--agent-kwarg KEY=VALUE` (`--ak`) and
//! `--extra-instruction-path FILE`, resolved into the request's [`HarnessSpec`] (kwargs into
//! its params, as a layer over `--harness-params`).

use std::path::{Path, PathBuf};

use agentcompass_plugin_api::contracts::{
    merge_mcp_servers, HarnessSpec, McpServer, McpServerProblem, McpTransport, HARNESS_NONE,
};
use serde_json::{Map, Value};

use super::layers::Layer;
use crate::config::ConfigError;

/// The agent flags as given.
#[derive(Debug, Clone, Default)]
pub struct AgentArgs {
    /// `--mcp-config FILE` (repeatable; later files replace same-named servers).
    pub mcp_configs: Vec<PathBuf>,
    /// `--skill DIR|GIT_SOURCE` (repeatable).
    pub skills: Vec<String>,
    /// `--agent-env KEY=VALUE` (repeatable).
    pub env: Vec<String>,
    /// `--agent-kwarg KEY=VALUE` (repeatable).
    pub kwargs: Vec<String>,
    /// `--extra-instruction-path FILE` (repeatable).
    pub extra_instruction_paths: Vec<PathBuf>,
}

impl AgentArgs {
    /// Whether any agent flag was given.
    pub fn is_empty(&self) -> bool {
        self.mcp_configs.is_empty()
            && self.skills.is_empty()
            && self.env.is_empty()
            && self.kwargs.is_empty()
            && self.extra_instruction_paths.is_empty()
    }

    /// `--agent-kwarg`s as a params layer: each value read as JSON first, then Python's
    /// `True`/`False`/`None`, else kept as a string (Harbor's `parse_kwargs`).
    pub fn kwargs_layer(&self) -> Result<Option<Layer>, ConfigError> {
        if self.kwargs.is_empty() {
            return Ok(None);
        }
        let mut map = Map::new();
        for item in &self.kwargs {
            let (key, value) = key_value("--agent-kwarg", item)?;
            let value = match value {
                "True" => Value::Bool(true),
                "False" => Value::Bool(false),
                "None" => Value::Null,
                text => serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.into())),
            };
            map.insert(key.to_string(), value);
        }
        Ok(Some(Layer::new("--agent-kwarg", "", map)))
    }

    /// Puts the servers, skills, variables and extra instructions into `spec`.
    pub fn apply(&self, spec: &mut HarnessSpec) -> Result<(), ConfigError> {
        if self.is_empty() {
            return Ok(());
        }
        if spec.id == HARNESS_NONE {
            return Err(ConfigError::invalid(
                "command line",
                "HARNESS",
                "harness `none` runs no agent, so it takes no --mcp-config, --skill, \
                 --agent-env, --agent-kwarg or --extra-instruction-path",
            ));
        }
        for file in &self.mcp_configs {
            let servers = load_mcp_config(file)?;
            spec.mcp_servers = merge_mcp_servers(&spec.mcp_servers, &servers);
        }
        for source in &self.skills {
            spec.skills.push(skill_source(source)?);
        }
        for item in &self.env {
            let (key, value) = key_value("--agent-env", item)?;
            spec.env.insert(key.to_string(), value.to_string());
        }
        for file in &self.extra_instruction_paths {
            let text = std::fs::read_to_string(file).map_err(|e| {
                ConfigError::invalid(
                    "--extra-instruction-path",
                    file.display().to_string(),
                    format!("expected a readable text file, found: {e}"),
                )
            })?;
            spec.extra_instructions.push(text);
        }
        Ok(())
    }
}

/// `KEY=VALUE` with a variable-like key.
fn key_value<'a>(flag: &str, item: &'a str) -> Result<(&'a str, &'a str), ConfigError> {
    let bad = |found: String| {
        ConfigError::invalid(
            flag,
            "",
            format!("expected KEY=VALUE with KEY a name of letters, digits and `_`, found {found}"),
        )
    };
    let Some((key, value)) = item.split_once('=') else {
        return Err(bad("no `=`".into()));
    };
    let name_ok = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !name_ok {
        return Err(bad(format!("key {key:?}")));
    }
    Ok((key, value))
}

/// A `--skill` value: an existing local path (made absolute), or a git source when it does
/// not exist and does not start with `.`, `/` or `~` (Harbor's `resolve_skill_sources`).
fn skill_source(source: &str) -> Result<String, ConfigError> {
    let path = Path::new(source);
    if path.exists() {
        let absolute = std::fs::canonicalize(path).map_err(|e| {
            ConfigError::invalid("--skill", source, format!("cannot resolve the path: {e}"))
        })?;
        return Ok(absolute.display().to_string());
    }
    if source.starts_with(['.', '/', '~']) {
        return Err(ConfigError::invalid(
            "--skill",
            source,
            "expected an existing skill directory (holding SKILL.md) or a skill root, found no such path",
        ));
    }
    Ok(source.to_string())
}

/// The servers of one `--mcp-config` file, read as Harbor's `load_mcp_servers` reads them:
/// `.json`, `.yaml`/`.yml` or `.toml`; servers under `mcpServers` (Claude's `.mcp.json`),
/// else `mcp_servers`, else `environment.mcp_servers`; a map of name → entry or a list of
/// entries; `type` read as `transport`; an entry with a `command` and no transport is
/// `stdio`. Keys Harbor drops (`env`, `cwd`, ...) are refused here instead: an MCP server
/// given variables that never reach it would not be the server the file describes.
pub fn load_mcp_config(file: &Path) -> Result<Vec<McpServer>, ConfigError> {
    let source = format!("--mcp-config {}", file.display());
    let invalid = |path: &str, message: String| ConfigError::invalid(&source, path, message);
    let text = std::fs::read_to_string(file).map_err(|e| ConfigError::Io {
        path: file.to_path_buf(),
        message: e.to_string(),
    })?;
    let parse = |message: String| ConfigError::Parse {
        path: file.to_path_buf(),
        message,
    };
    let root: Value = match file.extension().and_then(|e| e.to_str()) {
        Some("json") => serde_json::from_str(&text).map_err(|e| parse(e.to_string()))?,
        Some("yaml" | "yml") => yaml_serde::from_str(&text).map_err(|e| parse(e.to_string()))?,
        Some("toml") => {
            let value: toml::Value = toml::from_str(&text).map_err(|e| parse(e.to_string()))?;
            serde_json::to_value(value).map_err(|e| parse(e.to_string()))?
        }
        other => {
            return Err(invalid(
                "",
                format!(
                    "expected a .json, .yaml, .yml or .toml file, found {}",
                    other.map_or("no extension".to_string(), |e| format!(".{e}"))
                ),
            ))
        }
    };
    let Value::Object(root) = root else {
        return Err(invalid("", "expected a mapping at the top level".into()));
    };
    let non_empty = |v: Option<&Value>| v.filter(|v| !is_empty(v)).cloned();
    let (key, collection) = if let Some(c) = non_empty(root.get("mcpServers")) {
        ("mcpServers", c)
    } else if let Some(c) = non_empty(root.get("mcp_servers")) {
        ("mcp_servers", c)
    } else if let Some(c) = non_empty(root.get("environment").and_then(|e| e.get("mcp_servers"))) {
        ("environment.mcp_servers", c)
    } else {
        return Err(invalid(
            "",
            "expected servers under `mcpServers`, `mcp_servers` or `environment.mcp_servers`, found none".into(),
        ));
    };
    let entries: Vec<(String, Value)> = match collection {
        Value::Object(map) => map
            .into_iter()
            .map(|(name, mut entry)| {
                if let Value::Object(e) = &mut entry {
                    e.insert("name".into(), Value::String(name.clone()));
                }
                (format!("{key}.{name}"), entry)
            })
            .collect(),
        Value::Array(list) => list
            .into_iter()
            .enumerate()
            .map(|(i, entry)| (format!("{key}[{i}]"), entry))
            .collect(),
        _ => {
            return Err(invalid(
                key,
                "expected a mapping or a list of servers".into(),
            ))
        }
    };
    let mut servers = Vec::new();
    for (at, entry) in entries {
        let server = server_entry(&entry, key == "mcpServers").map_err(|p| {
            let field = if p.field.is_empty() {
                String::new()
            } else {
                format!("field `{}`: ", p.field)
            };
            invalid(&at, format!("{field}{}", p.message))
        })?;
        servers = merge_mcp_servers(&servers, &[server]);
    }
    Ok(servers)
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// One server entry of an MCP config file.
fn server_entry(entry: &Value, claude_style: bool) -> Result<McpServer, McpServerProblem> {
    let problem = |field: &str, message: String| McpServerProblem {
        field: field.to_string(),
        message,
    };
    let Value::Object(map) = entry else {
        return Err(problem("", "expected a mapping".into()));
    };
    const KEYS: [&str; 7] = [
        "name",
        "transport",
        "type",
        "url",
        "command",
        "args",
        "headers",
    ];
    // An empty `env: {}` (common in Claude's files) asks for nothing.
    let dropped = map
        .iter()
        .find(|(k, v)| !KEYS.contains(&k.as_str()) && !is_empty(v));
    if let Some((key, _)) = dropped {
        return Err(problem(
            key,
            format!(
                "expected only {} (Harbor drops the rest, so the server would not get it), \
                 found `{key}`",
                KEYS.join(", ")
            ),
        ));
    }
    let text = |key: &str| -> Result<Option<String>, McpServerProblem> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(problem(key, format!("expected a string, found {other}"))),
        }
    };
    let transport_name = match text("transport")? {
        Some(t) => Some(t),
        None => text("type")?,
    };
    let command = text("command")?;
    let transport = match transport_name {
        Some(name) => McpTransport::parse(&name).ok_or_else(|| {
            problem(
                "transport",
                format!("expected stdio, sse, streamable-http or http, found {name:?}"),
            )
        })?,
        None if claude_style && command.is_some() => McpTransport::Stdio,
        None => McpTransport::default(),
    };
    let args = map.get("args").cloned().unwrap_or(Value::Array(vec![]));
    let headers = map
        .get("headers")
        .cloned()
        .unwrap_or(Value::Object(Map::new()));
    let server = McpServer {
        name: text("name")?.unwrap_or_default(),
        transport,
        url: text("url")?,
        command,
        args: serde_json::from_value(args)
            .map_err(|_| problem("args", "expected a list of strings".into()))?,
        headers: serde_json::from_value(headers)
            .map_err(|_| problem("headers", "expected a mapping of strings".into()))?,
    };
    server.check()?;
    Ok(server)
}

#[cfg(test)]
mod tests;
