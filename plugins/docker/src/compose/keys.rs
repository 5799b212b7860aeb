//! The Compose keys the host acts on. Any other key is refused with its path, before the
//! first task: a key the host would ignore (a published port, a network, a capability)
//! would run the task differently from what its author wrote. Extension keys (`x-…`) are
//! ignored everywhere, as Compose ignores them.

use serde_norway::Value;

/// Top-level keys: `version` and `name` are informational (Compose ignores the first; the
/// project is named by the host).
const TOP: &[&str] = &["version", "name", "services", "volumes"];

/// A service's keys.
const SERVICE: &[&str] = &[
    "image",
    "build",
    "command",
    "entrypoint",
    "environment",
    "expose",
    "volumes",
    "healthcheck",
    "depends_on",
    "working_dir",
    "user",
    "init",
    "labels",
    "restart",
    "hostname",
    "tty",
    "stdin_open",
    "shm_size",
    "pull_policy",
];

/// What `main` (the task's own container) may add: the host builds or pulls its image and
/// runs its keep-alive command, as Harbor's base file does.
const MAIN: &[&str] = &[
    "build",
    "environment",
    "expose",
    "volumes",
    "healthcheck",
    "depends_on",
    "labels",
    "hostname",
    "shm_size",
];

/// `build` in its long form.
const BUILD: &[&str] = &["context", "dockerfile", "args"];

/// `healthcheck`.
const HEALTHCHECK: &[&str] = &[
    "test",
    "interval",
    "timeout",
    "retries",
    "start_period",
    "start_interval",
    "disable",
];

/// One long-form `depends_on` entry.
const DEPENDS_ON: &[&str] = &["condition", "required", "restart"];

/// One long-form `volumes` entry of a service.
const SERVICE_VOLUME: &[&str] = &["type", "source", "target", "read_only"];

/// One top-level volume: a local volume of the project.
const VOLUME: &[&str] = &["driver", "labels"];

/// Why a key is refused, where a reason helps more than the key's name.
fn reason(key: &str) -> &'static str {
    match key {
        "ports" => {
            "publishes a port on the host; services reach each other by name on the task's \
             own network (use `expose`)"
        }
        "networks" | "network_mode" => "the host gives the task one network of its own",
        "container_name" => "concurrent tasks would collide; services are reached by name",
        "command" | "entrypoint" | "image" | "user" | "working_dir" => {
            "`main` is the task's own container (its image and keep-alive command are the \
             host's); set these in the task's Dockerfile or `[environment]`"
        }
        "privileged" | "cap_add" | "devices" | "security_opt" | "pid" | "ipc" => {
            "it widens what a container may do to the machine"
        }
        "env_file" => "write the variables under `environment`",
        "deploy" | "cpus" | "mem_limit" => {
            "resources are the task's `[environment]` (`cpus`, `memory_mb`)"
        }
        _ => "the host does not act on it",
    }
}

/// The refusal of `key` at `path`.
fn refuse(path: &str, key: &str) -> String {
    format!("`{path}` is not supported: {}", reason(key))
}

/// Checks every key of the file's tree `root` against what the host acts on; the first
/// unsupported one as `path: why`.
pub(crate) fn check(root: &Value) -> Result<(), String> {
    let map = mapping(root, "the file")?;
    for (key, value) in map {
        let key = name(key);
        if skip(&key) {
            continue;
        }
        if !TOP.contains(&key.as_str()) {
            return Err(refuse(&key, &key));
        }
        match key.as_str() {
            "services" => {
                for (service, body) in mapping(value, "services")? {
                    self::service(&name(service), body)?;
                }
            }
            "volumes" => {
                for (volume, body) in mapping(value, "volumes")? {
                    if !body.is_null() {
                        keys(body, &format!("volumes.{}", name(volume)), VOLUME)?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// One service's keys.
fn service(service: &str, body: &Value) -> Result<(), String> {
    let at = format!("services.{service}");
    if body.is_null() {
        return Ok(());
    }
    let allowed = if service == "main" { MAIN } else { SERVICE };
    keys(body, &at, allowed)?;
    let map = mapping(body, &at)?;
    for (key, value) in map {
        let key = name(key);
        let at = format!("{at}.{key}");
        match key.as_str() {
            "build" if !value.is_string() => keys(value, &at, BUILD)?,
            "healthcheck" => keys(value, &at, HEALTHCHECK)?,
            "depends_on" if value.is_mapping() => {
                for (dependency, entry) in mapping(value, &at)? {
                    if !entry.is_null() {
                        keys(entry, &format!("{at}.{}", name(dependency)), DEPENDS_ON)?;
                    }
                }
            }
            "volumes" => {
                for (i, entry) in value.as_sequence().into_iter().flatten().enumerate() {
                    if entry.is_mapping() {
                        keys(entry, &format!("{at}[{i}]"), SERVICE_VOLUME)?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Checks that `value`'s keys (at `at`) are among `allowed`.
fn keys(value: &Value, at: &str, allowed: &[&str]) -> Result<(), String> {
    for key in mapping(value, at)?.keys() {
        let key = name(key);
        if !skip(&key) && !allowed.contains(&key.as_str()) {
            return Err(refuse(&format!("{at}.{key}"), &key));
        }
    }
    Ok(())
}

/// An extension key (`x-…`), which Compose ignores.
fn skip(key: &str) -> bool {
    key.starts_with("x-")
}

/// `value` as a mapping.
fn mapping<'a>(value: &'a Value, at: &str) -> Result<&'a serde_norway::Mapping, String> {
    value
        .as_mapping()
        .ok_or_else(|| format!("`{at}`: expected a mapping, found {}", kind(value)))
}

/// A key as text.
fn name(key: &Value) -> String {
    match key {
        Value::String(s) => s.clone(),
        other => serde_norway::to_string(other)
            .unwrap_or_default()
            .trim()
            .to_string(),
    }
}

/// What a YAML value is, for messages (never its content: it may hold a secret).
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(yaml: &str) -> Result<(), String> {
        check(&serde_norway::from_str(yaml).unwrap())
    }

    #[test]
    fn accepts_what_the_host_acts_on() {
        checked(
            "version: '3.8'\nx-common: {a: 1}\nservices:\n  main:\n    depends_on:\n      api:\n        \
             condition: service_healthy\n  api:\n    build:\n      context: ./api\n    \
             healthcheck:\n      test: [CMD, true]\n      interval: 1s\n    x-note: 1\n\
             volumes:\n  data: {}\n",
        )
        .unwrap();
    }

    #[test]
    fn refuses_other_keys_by_path_with_a_reason() {
        assert_eq!(
            checked("services:\n  api:\n    image: x\n    ports: ['8000:8000']\n").unwrap_err(),
            "`services.api.ports` is not supported: publishes a port on the host; services \
             reach each other by name on the task's own network (use `expose`)"
        );
        assert!(checked("services:\n  main:\n    command: [sleep, '1']\n")
            .unwrap_err()
            .starts_with("`services.main.command` is not supported: `main` is the task's own"));
        assert!(checked("networks:\n  a: {}\n")
            .unwrap_err()
            .starts_with("`networks` is not supported"));
        assert!(
            checked("services:\n  a:\n    build:\n      context: .\n      target: t\n")
                .unwrap_err()
                .starts_with("`services.a.build.target` is not supported")
        );
        assert!(
            checked("services:\n  a:\n    healthcheck:\n      bogus: 1\n")
                .unwrap_err()
                .starts_with("`services.a.healthcheck.bogus`")
        );
        assert_eq!(
            checked("services: [a]\n").unwrap_err(),
            "`services`: expected a mapping, found a list"
        );
    }
}
