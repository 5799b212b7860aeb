use super::*;

fn http(name: &str, url: &str) -> McpServer {
    McpServer {
        name: name.into(),
        transport: McpTransport::StreamableHttp,
        url: Some(url.into()),
        ..McpServer::default()
    }
}

#[test]
fn transports_read_as_harbor_names_them() {
    let server: McpServer =
        serde_json::from_str(r#"{"name": "a", "transport": "http", "url": "http://x/mcp"}"#)
            .unwrap();
    assert_eq!(server.transport, McpTransport::StreamableHttp);
    let server: McpServer =
        serde_json::from_str(r#"{"name": "a", "url": "http://x/sse"}"#).unwrap();
    assert_eq!(server.transport, McpTransport::Sse, "Harbor's default");
    assert_eq!(
        serde_json::to_value(http("a", "u")).unwrap(),
        serde_json::json!({"name": "a", "transport": "streamable-http", "url": "u"})
    );
}

#[test]
fn check_names_the_field_of_each_mistake() {
    let stdio = McpServer {
        name: "s".into(),
        transport: McpTransport::Stdio,
        ..McpServer::default()
    };
    assert_eq!(stdio.check().unwrap_err().field, "command");
    let mut with_headers = McpServer {
        command: Some("srv".into()),
        ..stdio.clone()
    };
    assert!(with_headers.check().is_ok());
    with_headers.headers.insert("X-A".into(), "b".into());
    assert_eq!(with_headers.check().unwrap_err().field, "headers");
    let no_url = McpServer {
        name: "h".into(),
        ..McpServer::default()
    };
    assert_eq!(no_url.check().unwrap_err().field, "url");
}

#[test]
fn credentials_only_as_references() {
    let mut server = http("a", "http://x/mcp");
    server
        .headers
        .insert("Authorization".into(), "Bearer abc123".into());
    let problem = server.check().unwrap_err();
    assert_eq!(problem.field, "headers.Authorization");
    assert!(!problem.message.contains("abc123"), "{problem:?}");
    server
        .headers
        .insert("Authorization".into(), "Bearer ${TOK}".into());
    server.check().unwrap();
    server
        .headers
        .insert("Authorization".into(), "Token ${ID}:${SECRET}".into());
    server.check().unwrap();
    server
        .headers
        .insert("Authorization".into(), "Bearer ${TOK:-dflt}".into());
    assert!(server.check().is_err(), "a default is a literal credential");
    server.headers.clear();
    server.headers.insert("X-Team".into(), "blue".into());
    server.check().unwrap();
    server.headers.insert("X-Team".into(), "${oops".into());
    assert_eq!(
        server.check().unwrap_err().message,
        HeaderProblem::Malformed.to_string()
    );
    assert!(sensitive_name("x-api-key") && sensitive_name("TOKEN"));
    assert!(!sensitive_name("max_tokens"));
}

#[test]
fn templates_resolve_with_defaults_and_name_an_unset_variable() {
    let lookup = |name: &str| (name == "TOK").then(|| "s3cret".to_string());
    assert_eq!(
        resolve_template("Bearer ${TOK}", lookup).unwrap(),
        "Bearer s3cret"
    );
    assert_eq!(
        resolve_template("${A:-x}-${TOK}", lookup).unwrap(),
        "x-s3cret"
    );
    assert_eq!(
        resolve_template("${MISSING}", lookup).unwrap_err(),
        HeaderProblem::Unset("MISSING".into())
    );
}

#[test]
fn later_servers_replace_same_named_ones_in_place() {
    let task = [http("a", "1"), http("b", "2")];
    let run = [http("c", "3"), http("a", "9")];
    let merged = merge_mcp_servers(&task, &run);
    let view: Vec<(&str, &str)> = merged
        .iter()
        .map(|s| (s.name.as_str(), s.url.as_deref().unwrap()))
        .collect();
    assert_eq!(view, [("a", "9"), ("b", "2"), ("c", "3")]);
}

#[test]
fn the_instruction_text_is_harbors() {
    let inputs = AgentInputs {
        mcp_servers: vec![
            http("search", "http://tools:8000/mcp"),
            McpServer {
                name: "fs".into(),
                transport: McpTransport::Stdio,
                command: Some("fs-server".into()),
                args: vec!["--root".into(), "/app".into()],
                ..McpServer::default()
            },
        ],
        ..AgentInputs::default()
    };
    assert_eq!(
        inputs.mcp_servers_text(),
        "\n\nMCP Servers:\nThe following MCP servers are available for this task.\n\
         - search: streamable-http transport, url: http://tools:8000/mcp\n\
         - fs: stdio transport, command: fs-server --root /app\n"
    );
    assert!(AgentInputs::default().mcp_servers_text().is_empty());
    assert!(inputs.needs().mcp_servers && !inputs.needs().skills);
}

#[test]
fn debug_never_shows_a_header_or_variable_value() {
    let mut server = http("a", "u");
    server
        .headers
        .insert("Authorization".into(), "Bearer s3cret".into());
    let inputs = AgentInputs {
        mcp_servers: vec![server],
        env: [("K".to_string(), "v4lue".to_string())].into(),
        ..AgentInputs::default()
    };
    let text = format!("{inputs:?}");
    assert!(
        !text.contains("s3cret") && !text.contains("v4lue"),
        "{text}"
    );
}
