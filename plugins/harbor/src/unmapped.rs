//! Official Harbor fields this host does not act on: each is validated exactly as Harbor
//! validates it (an invalid value is refused, as Harbor refuses it) and then, when present,
//! becomes a `load_warnings` entry (`gpu_types`, which changes no score here) or refuses the
//! task (`tpu`, `skills_dir`, `mcp_servers`: without them the agent is not what the task
//! measures).

use agentcompass_plugin_api::Result;
use toml::Value;

use crate::fields::{Section, Warnings};

/// `gpu_types`, `tpu`, `skills_dir` and `mcp_servers` of an environment table.
pub(crate) fn environment_fields(section: &Section, warnings: &mut Warnings) -> Result<()> {
    section.string_list("gpu_types")?;
    warnings.unsupported(section, "gpu_types", "GPU models are not selected");
    if let Some(tpu) = section.table("tpu")? {
        tpu_spec(&tpu)?;
    }
    warnings.refuse(section, "tpu", "no environment here has TPUs");
    section.string("skills_dir")?;
    warnings.refuse(
        section,
        "skills_dir",
        "skills are not installed for the agent yet",
    );
    mcp_servers(section)?;
    warnings.refuse(
        section,
        "mcp_servers",
        "MCP servers are not started for the agent yet",
    );
    Ok(())
}

/// `multi_step_reward_strategy`: `"mean"` or `"final"`.
pub(crate) fn reward_strategy(root: &Section) -> Result<Option<String>> {
    root.choice("multi_step_reward_strategy", &["mean", "final"])
}

/// A required field: an error naming the table when it is absent.
fn required<'a>(section: &Section<'a>, key: &str, what: &str) -> Result<&'a Value> {
    section.get(key).ok_or_else(|| {
        section.file_error(format!(
            "field `{}`: expected {what}, found none",
            section.key(key)
        ))
    })
}

/// A required string field.
fn required_string(section: &Section, key: &str) -> Result<String> {
    required(section, key, "a string")?;
    section.string(key).map(|s| s.unwrap_or_default())
}

/// `TpuSpec`: a non-empty `type` and a `topology` such as `2x4` or `2x2x1` (trimmed).
fn tpu_spec(tpu: &Section) -> Result<()> {
    let kind = required_string(tpu, "type")?;
    if kind.is_empty() {
        return Err(tpu.error("type", "expected a non-empty string, found an empty string"));
    }
    let topology = required_string(tpu, "topology")?;
    let valid = {
        let dims: Vec<&str> = topology.trim().split('x').collect();
        dims.len() >= 2
            && dims.iter().all(|d| {
                !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()) && !d.starts_with('0')
            })
    };
    if !valid {
        return Err(tpu.error(
            "topology",
            format!(
                "expected positive dimensions separated by `x` (such as \"2x4\" or \"2x2x1\"), found {topology:?}"
            ),
        ));
    }
    Ok(())
}

/// `mcp_servers`: tables with a `name`, a `transport` (`stdio`, `sse`, `streamable-http` or
/// its alias `http`; default `sse`), the `url` an HTTP transport needs or the `command`
/// `stdio` needs, `args` and HTTP `headers` (credentials only as `${VAR}` references).
fn mcp_servers(section: &Section) -> Result<()> {
    let items = match section.get("mcp_servers") {
        None => return Ok(()),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(section.expected("mcp_servers", "an array of tables", other)),
    };
    for (i, item) in items.iter().enumerate() {
        let key = section.key(&format!("mcp_servers[{i}]"));
        let Value::Table(table) = item else {
            return Err(section.expected(&format!("mcp_servers[{i}]"), "a table", item));
        };
        let server = section.child(key, table);
        required_string(&server, "name")?;
        let transport = match server.get("transport") {
            None => "sse".to_string(),
            Some(Value::String(s)) if s == "http" => "streamable-http".to_string(),
            Some(_) => server
                .choice("transport", &["stdio", "sse", "streamable-http", "http"])?
                .unwrap_or_default(),
        };
        let url = server.string("url")?.unwrap_or_default();
        let command = server.string("command")?.unwrap_or_default();
        server.string_list("args")?;
        let headers = server.string_map("headers")?.unwrap_or_default();
        for (name, value) in &headers {
            header(&server, name, value)?;
        }
        let problem = match transport.as_str() {
            "stdio" if command.is_empty() => {
                Some(("command", "a command for transport \"stdio\", found none"))
            }
            "stdio" if !headers.is_empty() => Some((
                "headers",
                "no headers for transport \"stdio\" (only HTTP transports take them), found some",
            )),
            "stdio" => None,
            _ if url.is_empty() => Some(("url", "a url for an HTTP transport, found none")),
            _ => None,
        };
        if let Some((field, expected)) = problem {
            return Err(server.error(field, format!("expected {expected}")));
        }
    }
    Ok(())
}

/// One MCP HTTP header: a token name, a value without line breaks, well-formed `${VAR}`
/// references, and credentials only as references without defaults.
fn header(server: &Section, name: &str, value: &str) -> Result<()> {
    let key = format!("headers.{name}");
    let token_char = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+.^_`|~-".contains(c);
    if name.is_empty() || !name.chars().all(token_char) {
        return Err(server.error(
            &key,
            format!("expected an HTTP header name (token characters), found {name:?}"),
        ));
    }
    if value.contains('\r') || value.contains('\n') {
        return Err(server.error(
            &key,
            "expected a value without line breaks, found a line break",
        ));
    }
    let templates = templates(value)
        // The value is not echoed: a header may hold a credential.
        .ok_or_else(|| {
            server.error(
                &key,
                "expected well-formed ${VAR} references, found a malformed one",
            )
        })?;
    let sensitive_header = sensitive_name(name)
        || name.eq_ignore_ascii_case("cookie")
        || name.eq_ignore_ascii_case("set-cookie");
    let literal_default = templates.iter().any(|(variable, default)| {
        default.as_ref().is_some_and(|d| !d.is_empty())
            && (sensitive_header || sensitive_name(variable))
    });
    if literal_default
        || (sensitive_header && !value.trim().is_empty() && !templated_credential(value))
    {
        return Err(server.error(
            &key,
            "expected credentials only as ${VAR} references without a default (such as \"Bearer ${TOKEN}\"), found a literal",
        ));
    }
    Ok(())
}

/// Harbor's `_SENSITIVE_KEY_RE`: `KEY`, `SECRET`, `TOKEN` (not `TOKENS`), `PASSWORD`,
/// `CREDENTIAL` or `AUTH`, in any case.
fn sensitive_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH"]
        .iter()
        .any(|w| upper.contains(w))
        || upper
            .match_indices("TOKEN")
            .any(|(i, _)| upper.as_bytes().get(i + 5) != Some(&b'S'))
}

/// The `${NAME}` / `${NAME:-default}` references of `value` (`None` when a `${` is left that
/// is not a well-formed reference, or a default holds `${`).
fn templates(value: &str) -> Option<Vec<(String, Option<String>)>> {
    let mut found = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let (name, default, consumed) = reference(after)?;
        if default.as_deref().is_some_and(|d| d.contains("${")) {
            return None;
        }
        found.push((name, default));
        rest = &after[consumed..];
    }
    Some(found)
}

/// One reference after its `${`: the name, the default and the characters consumed
/// (through the closing brace).
fn reference(text: &str) -> Option<(String, Option<String>, usize)> {
    let name_len = text
        .char_indices()
        .take_while(|(i, c)| c.is_ascii_alphabetic() || *c == '_' || (*i > 0 && c.is_ascii_digit()))
        .count();
    if name_len == 0 {
        return None;
    }
    let name = text[..name_len].to_string();
    let tail = &text[name_len..];
    if tail.starts_with('}') {
        return Some((name, None, name_len + 1));
    }
    let default_text = tail.strip_prefix(":-")?;
    let end = default_text.find('}')?;
    Some((
        name,
        Some(default_text[..end].to_string()),
        name_len + 2 + end + 1,
    ))
}

/// Harbor's `_TEMPLATED_CREDENTIAL_RE`: an optional auth scheme, then `${VAR}` references
/// (an empty `:-` allowed) joined only by whitespace, `:` and `-`.
fn templated_credential(value: &str) -> bool {
    let text = value.trim();
    let text = match text.split_once(|c: char| c.is_whitespace()) {
        Some((scheme, rest))
            if !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphabetic()) =>
        {
            rest.trim_start()
        }
        _ => text,
    };
    let mut rest = text;
    loop {
        let Some(after) = rest.strip_prefix("${") else {
            return false;
        };
        let Some((_, default, consumed)) = reference(after) else {
            return false;
        };
        if default.is_some_and(|d| !d.is_empty()) {
            return false;
        }
        let tail = &after[consumed..];
        rest = tail.trim_start_matches(|c: char| c.is_whitespace() || c == ':' || c == '-');
        if rest.is_empty() {
            // Only whitespace may follow the last reference.
            return tail.chars().all(char::is_whitespace);
        }
    }
}
