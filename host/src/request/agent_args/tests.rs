use super::*;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn claude_style_json_reads_as_harbor_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "mcp.json",
        r#"{"mcpServers": {
            "fs": {"command": "fs-server", "args": ["--root", "/app"], "env": {}},
            "search": {"type": "http", "url": "http://tools:8000/mcp",
                       "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"}},
            "old": {"url": "http://tools:8000/sse"}}}"#,
    );
    let servers = load_mcp_config(&file).unwrap();
    let view: Vec<(&str, McpTransport)> = servers
        .iter()
        .map(|s| (s.name.as_str(), s.transport))
        .collect();
    assert_eq!(
        view,
        [
            ("fs", McpTransport::Stdio),
            ("old", McpTransport::Sse),
            ("search", McpTransport::StreamableHttp)
        ]
    );
    assert_eq!(servers[0].args, ["--root", "/app"]);
}

#[test]
fn yaml_lists_and_task_toml_files_work_too() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = write(
        dir.path(),
        "servers.yaml",
        "mcp_servers:\n  - name: a\n    transport: sse\n    url: http://a/sse\n",
    );
    assert_eq!(load_mcp_config(&yaml).unwrap()[0].name, "a");
    let toml = write(
        dir.path(),
        "task.toml",
        "[[environment.mcp_servers]]\nname = \"b\"\ntransport = \"stdio\"\ncommand = \"srv\"\n",
    );
    assert_eq!(
        load_mcp_config(&toml).unwrap()[0].transport,
        McpTransport::Stdio
    );
}

#[test]
fn mistakes_name_the_file_and_the_entry() {
    let dir = tempfile::tempdir().unwrap();
    let literal = write(
        dir.path(),
        "bad.json",
        r#"{"mcpServers": {"s": {"type": "http", "url": "http://x", "headers": {"Authorization": "Bearer abc123"}}}}"#,
    );
    let err = load_mcp_config(&literal).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!(
            "--mcp-config {}: mcpServers.s: field `headers.Authorization`",
            literal.display()
        )),
        "{err}"
    );
    assert!(!err.contains("abc123"), "{err}");
    let env = write(
        dir.path(),
        "env.json",
        r#"{"mcpServers": {"s": {"command": "x", "env": {"A": "1"}}}}"#,
    );
    let err = load_mcp_config(&env).unwrap_err().to_string();
    assert!(err.contains("field `env`"), "{err}");
    let ini = write(dir.path(), "x.ini", "");
    assert!(load_mcp_config(&ini)
        .unwrap_err()
        .to_string()
        .contains("found .ini"));
    let none = write(dir.path(), "none.json", r#"{"mcpServers": {}}"#);
    assert!(load_mcp_config(&none)
        .unwrap_err()
        .to_string()
        .contains("found none"));
}

#[test]
fn kwargs_parse_as_harbor_parses_them() {
    let args = AgentArgs {
        kwargs: vec![
            "max_turns=30".into(),
            "verbose=True".into(),
            "version=\"1.10\"".into(),
            "name=plain text".into(),
            "opts={\"a\": [1]}".into(),
        ],
        ..AgentArgs::default()
    };
    let layer = args.kwargs_layer().unwrap().unwrap();
    assert_eq!(
        Value::Object(layer.map.clone()),
        serde_json::json!({"max_turns": 30, "verbose": true, "version": "1.10",
                           "name": "plain text", "opts": {"a": [1]}})
    );
    let bad = AgentArgs {
        kwargs: vec!["no-equals".into()],
        ..AgentArgs::default()
    };
    assert!(bad.kwargs_layer().is_err());
}

#[test]
fn apply_fills_the_harness_spec_and_refuses_harness_none() {
    let dir = tempfile::tempdir().unwrap();
    let extra = write(dir.path(), "extra.md", "Use the lookup tool.");
    let skill = dir.path().join("my-skill");
    std::fs::create_dir(&skill).unwrap();
    let args = AgentArgs {
        skills: vec![skill.display().to_string(), "org/skills@v1".into()],
        env: vec!["TOKEN=${HOST_TOKEN}".into()],
        extra_instruction_paths: vec![extra],
        ..AgentArgs::default()
    };
    let mut spec = HarnessSpec::new("terminus");
    args.apply(&mut spec).unwrap();
    assert_eq!(spec.skills[1], "org/skills@v1");
    assert_eq!(spec.env["TOKEN"], "${HOST_TOKEN}");
    assert_eq!(spec.extra_instructions, ["Use the lookup tool."]);
    let mut none = HarnessSpec::new(HARNESS_NONE);
    assert!(args.apply(&mut none).is_err());
    let missing = AgentArgs {
        skills: vec!["./no-such-skill".into()],
        ..AgentArgs::default()
    };
    let err = missing
        .apply(&mut HarnessSpec::new("x"))
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("--skill: ./no-such-skill:"), "{err}");
}
