//! Finding and parsing configuration files.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{deep_merge, validate_config, ConfigError};

/// File names looked for in the user and project configuration directories, in order.
pub const CONFIG_FILE_NAMES: [&str; 4] =
    ["config.toml", "config.yaml", "config.yml", "config.json"];

/// One parsed configuration file.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its top-level mapping.
    pub payload: Map<String, Value>,
}

/// Every configuration file of an invocation, in precedence order, and their merge.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadedConfig {
    /// Files in load order (user, project, then each `--config`).
    pub files: Vec<ConfigFile>,
    /// The deep merge of every file (later files win).
    pub payload: Map<String, Value>,
}

impl LoadedConfig {
    /// A top-level section of the merged configuration, if it is a mapping.
    pub fn section(&self, name: &str) -> Option<&Map<String, Value>> {
        self.payload.get(name).and_then(Value::as_object)
    }

    /// The merged entry of one component (`benchmarks.<id>` ...); `null` counts as empty.
    pub fn component(&self, section: &str, id: &str) -> Map<String, Value> {
        self.section(section)
            .and_then(|s| s.get(id))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    }

    /// The `environments.<id>` entry of each file, in order, with the file it came from
    /// (`None` when a file sets the entry to `null`, which clears earlier layers).
    pub fn environment_layers(&self, id: &str) -> Vec<(String, Option<Map<String, Value>>)> {
        self.files
            .iter()
            .filter_map(|file| {
                let entry = file.payload.get("environments")?.as_object()?.get(id)?;
                Some((file.path.display().to_string(), entry.as_object().cloned()))
            })
            .collect()
    }

    /// The `metadata.config_path` value: the single path, or a JSON array of paths.
    pub fn config_path(&self) -> String {
        match self.files.as_slice() {
            [] => String::new(),
            [one] => one.path.display().to_string(),
            many => Value::from(
                many.iter()
                    .map(|f| f.path.display().to_string())
                    .collect::<Vec<_>>(),
            )
            .to_string(),
        }
    }
}

/// The configuration file in `dir`, if any; two candidates in one directory are an error.
fn config_in(dir: &Path) -> Result<Option<PathBuf>, ConfigError> {
    let found: Vec<PathBuf> = CONFIG_FILE_NAMES
        .iter()
        .map(|name| dir.join(name))
        .filter(|p| p.is_file())
        .collect();
    match found.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one.clone())),
        [first, second, ..] => Err(ConfigError::invalid(
            dir.display().to_string(),
            "",
            format!(
                "both {} and {} exist; keep one configuration file per directory",
                first.display(),
                second.display()
            ),
        )),
    }
}

/// The user configuration directory: `$XDG_CONFIG_HOME/agentcompass`, else
/// `~/.config/agentcompass`.
pub fn user_config_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    match env("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(xdg) => Some(PathBuf::from(xdg).join("agentcompass")),
        None => env("HOME")
            .filter(|v| !v.is_empty())
            .map(|home| PathBuf::from(home).join(".config").join("agentcompass")),
    }
}

/// The files to load, in order: the user config, the nearest project config walking up from
/// `cwd`, then each explicit file. Missing implicit files are skipped; a missing explicit
/// file is an error; a file reached twice is loaded once.
pub fn discover_config_files(
    explicit: &[PathBuf],
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<PathBuf>, ConfigError> {
    let mut paths = Vec::new();
    if let Some(dir) = user_config_dir(env) {
        paths.extend(config_in(&dir)?);
    }
    for dir in cwd.ancestors() {
        if let Some(found) = config_in(dir)? {
            paths.push(found);
            break;
        }
    }
    for path in explicit {
        let path = if path.is_absolute() {
            path.clone()
        } else {
            cwd.join(path)
        };
        if !path.is_file() {
            return Err(ConfigError::Missing(path));
        }
        paths.push(path);
    }
    let mut seen = std::collections::HashSet::new();
    Ok(paths
        .into_iter()
        .filter(|p| seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())))
        .collect())
}

/// Loads, validates and merges the configuration files of an invocation.
pub fn load_run_config(
    explicit: &[PathBuf],
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<LoadedConfig, ConfigError> {
    let mut loaded = LoadedConfig::default();
    for path in discover_config_files(explicit, cwd, env)? {
        let payload = match parse_file(&path)? {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                return Err(ConfigError::Parse {
                    path,
                    message: format!(
                        "expected a mapping at the top level, found {}",
                        kind(&other)
                    ),
                })
            }
        };
        validate_config(&path.display().to_string(), &payload)?;
        loaded.payload = match deep_merge(
            &Value::Object(loaded.payload),
            &Value::Object(payload.clone()),
        ) {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        loaded.files.push(ConfigFile { path, payload });
    }
    Ok(loaded)
}

fn kind(value: &Value) -> &'static str {
    agentcompass_plugin_api::contracts::json_type_name(value)
}

/// Parses a TOML (`.toml`), YAML (`.yaml`, `.yml`) or JSON (`.json`) file into JSON values.
pub fn parse_file(path: &Path) -> Result<Value, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let parse_error = |message: String| ConfigError::Parse {
        path: path.to_path_buf(),
        message: agentcompass_plugin_api::one_line(&message),
    };
    match path.extension().and_then(|e| e.to_str()) {
        Some("toml") => {
            // The message and position only: the default rendering quotes the offending source
            // line, which may hold a secret.
            let value: toml::Value =
                toml::from_str(&text).map_err(|e| parse_error(toml_message(&text, &e)))?;
            Ok(toml_to_json(value))
        }
        Some("yaml" | "yml") => {
            if text.trim().is_empty() {
                return Ok(Value::Null);
            }
            let value: yaml_serde::Value =
                yaml_serde::from_str(&text).map_err(|e| parse_error(e.to_string()))?;
            serde_json::to_value(value).map_err(|e| parse_error(e.to_string()))
        }
        Some("json") => serde_json::from_str(&text).map_err(|e| parse_error(e.to_string())),
        _ => Err(parse_error(
            "unknown configuration format: use .toml, .yaml, .yml or .json".to_string(),
        )),
    }
}

/// `TOML parse error at line L, column C: MESSAGE`, without the quoted source line.
fn toml_message(text: &str, error: &toml::de::Error) -> String {
    let message = error.message().trim();
    match error.span() {
        Some(span) => {
            let mut start = span.start.min(text.len());
            while !text.is_char_boundary(start) {
                start -= 1;
            }
            let before = &text[..start];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("TOML parse error at line {line}, column {column}: {message}")
        }
        None => format!("TOML parse error: {message}"),
    }
}

fn toml_to_json(value: toml::Value) -> Value {
    match value {
        toml::Value::String(s) => Value::String(s),
        toml::Value::Integer(i) => Value::from(i),
        toml::Value::Float(f) => serde_json::Number::from_f64(f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(items) => Value::Array(items.into_iter().map(toml_to_json).collect()),
        toml::Value::Table(table) => Value::Object(
            table
                .into_iter()
                .map(|(k, v)| (k, toml_to_json(v)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
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
        let err =
            discover_config_files(&[tmp.path().join("nope.toml")], tmp.path(), &env).unwrap_err();
        assert_eq!(err, ConfigError::Missing(tmp.path().join("nope.toml")));
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
        let path = tmp.path().join("c.ini");
        std::fs::write(&path, "").unwrap();
        assert!(parse_file(&path)
            .unwrap_err()
            .to_string()
            .contains("unknown configuration format"));
    }
}
