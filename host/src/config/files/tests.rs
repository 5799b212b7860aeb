use super::*;
use std::collections::HashMap;

fn env_of(vars: HashMap<&'static str, String>) -> impl Fn(&str) -> Option<String> {
    move |key| vars.get(key).cloned()
}

#[test]
fn user_then_project_then_explicit_and_each_format() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let user = home.join(".config/agentcompass");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(
        user.join("config.toml"),
        "[execution]\nmax_retries = 1\nk = 0\n",
    )
    .unwrap();
    let project = tmp.path().join("proj");
    let cwd = project.join("a/b");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(
        project.join("config.yaml"),
        "execution:\n  max_retries: 2\n",
    )
    .unwrap();
    let explicit = tmp.path().join("x.json");
    std::fs::write(&explicit, r#"{"execution": {"task_concurrency": 3}}"#).unwrap();
    let env = env_of(HashMap::from([("HOME", home.display().to_string())]));
    let files = discover_config_files(std::slice::from_ref(&explicit), &cwd, &env).unwrap();
    assert_eq!(
        files,
        [
            user.join("config.toml"),
            project.join("config.yaml"),
            explicit
        ]
    );
    let err = load_run_config(&[], &cwd, &env).unwrap_err();
    assert!(err.to_string().contains("execution.k"), "{err}");
}

#[test]
fn xdg_wins_and_missing_explicit_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let xdg = tmp.path().join("xdg/agentcompass");
    std::fs::create_dir_all(&xdg).unwrap();
    std::fs::write(xdg.join("config.json"), "{}").unwrap();
    let env = env_of(HashMap::from([
        (
            "XDG_CONFIG_HOME",
            tmp.path().join("xdg").display().to_string(),
        ),
        ("HOME", "/nonexistent".to_string()),
    ]));
    let files = discover_config_files(&[], tmp.path(), &env).unwrap();
    assert_eq!(files, [xdg.join("config.json")]);
    let err = discover_config_files(&[tmp.path().join("nope.toml")], tmp.path(), &env).unwrap_err();
    assert_eq!(err, ConfigError::Missing(tmp.path().join("nope.toml")));
    let dir = tmp.path().join("dir.toml");
    std::fs::create_dir(&dir).unwrap();
    let err = discover_config_files(std::slice::from_ref(&dir), tmp.path(), &env).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "cannot read {}: expected a config file, found a directory",
            dir.display()
        )
    );
}

#[test]
fn two_configs_in_one_directory_are_ambiguous() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("config.toml"), "").unwrap();
    std::fs::write(tmp.path().join("config.json"), "{}").unwrap();
    let env = env_of(HashMap::new());
    let err = discover_config_files(&[], tmp.path(), &env).unwrap_err();
    assert!(
        err.to_string().contains("keep one configuration file"),
        "{err}"
    );
}

/// Found with the `config_loader` fuzz target (fuzz/regressions/config_loader/
/// yaml-deep-flow-*): deeply nested YAML flow collections took seconds to be refused (the
/// YAML scanner is quadratic in the depth; yaml/yaml-serde#1).
#[test]
fn deep_yaml_flow_nesting_is_refused_before_parsing() {
    let path = Path::new("deep.yaml");
    for text in [
        "[".repeat(50_000),
        "{a: ".repeat(50_000),
        format!("k: {}", "{\"\":[".repeat(20_000)),
    ] {
        let started = std::time::Instant::now();
        let err = parse_text(path, &text).unwrap_err().to_string();
        assert!(
            err.contains("nested more than 256 levels deep at line 1"),
            "{err}"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }
    // Brackets in quotes, comments, block scalars and inside plain scalars do not count.
    let opened = "[ { ".repeat(300);
    let text = format!(
        "a: \"{opened}\"\nb: '{opened} it''s'\n# {opened}\nc: |\n  {opened}\nd: x{}\ne: [[1]]\n",
        "[{".repeat(300)
    );
    let value = parse_text(path, &text).unwrap();
    assert_eq!(value["e"], serde_json::json!([[1]]));
    // Within the limit, the parser's own recursion limit still answers.
    let err = parse_text(path, &"[".repeat(200)).unwrap_err().to_string();
    assert!(err.contains("recursion limit exceeded"), "{err}");
}

/// Found with the `config_loader` fuzz target (fuzz/regressions/config_loader/
/// yaml-alias-expansion): aliases of aliases expanded into millions of values and took
/// seconds before the YAML parser's own repetition limit stopped them.
#[test]
fn yaml_alias_expansion_is_bounded() {
    let path = Path::new("aliases.yaml");
    let mut text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n".to_string();
    for i in 1..12 {
        let items = vec![format!("*a{}", i - 1); 10].join(", ");
        text.push_str(&format!("a{i}: &a{i} [{items}]\n"));
    }
    let started = std::time::Instant::now();
    let err = parse_text(path, &text).unwrap_err().to_string();
    assert!(
        err.contains("more than 100000 values once aliases are expanded"),
        "{err}"
    );
    assert!(!err.contains('\n'));
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    let value = parse_text(path, "base: &b {k: 1, l: [1, 2]}\nuse: *b\n").unwrap();
    assert_eq!(value["use"], serde_json::json!({"k": 1, "l": [1, 2]}));
}

#[test]
fn parse_errors_name_the_file_on_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("bad.toml");
    std::fs::write(&path, "[execution\nk = 1\n").unwrap();
    let err = parse_file(&path).unwrap_err().to_string();
    assert!(err.starts_with(&path.display().to_string()), "{err}");
    assert!(!err.contains('\n'));
    std::fs::write(&path, "[x]\napi_key = \"sk-SECRET-1\" oops\n").unwrap();
    let err = parse_file(&path).unwrap_err().to_string();
    assert!(!err.contains("sk-SECRET-1"), "{err}");
    assert!(err.contains("line 2, column 25"), "{err}");
    // Any other extension is YAML, as upstream reads it.
    let path = tmp.path().join("c.ini");
    std::fs::write(&path, "").unwrap();
    assert_eq!(parse_file(&path).unwrap(), Value::Null);
    std::fs::write(&path, "execution: {k: 2}\n").unwrap();
    assert_eq!(parse_file(&path).unwrap()["execution"]["k"], 2);
    std::fs::write(&path, "[execution]\nk = 1\n").unwrap();
    let err = parse_file(&path).unwrap_err().to_string();
    assert!(err.starts_with(&path.display().to_string()), "{err}");
}
