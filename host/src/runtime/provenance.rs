//! What ran, recorded in `run_info.json` `provenance` so a result can be reproduced: the host
//! (version, build commit), every loaded plugin (name, version, sha256), the request's
//! components and where each comes from, the model (id, protocol, endpoint host — never the
//! key), the resolved value of every non-secret `${VAR}` reference, the machine (OS, kernel,
//! CPUs), the environment provider's tools (bwrap, Docker Engine), the seeds in the request's
//! parameters, and the dataset digests its benchmark reports on its tasks.

use std::collections::BTreeMap;
use std::time::Duration;

use agentcompass_plugin_api::contracts::{ComponentKind, RunRequest, TaskSpec};
use serde_json::{json, Map, Value};

use crate::registry::{Registry, Source};

/// The masked stand-in for a secret value.
const MASK: &str = "********";

/// Task metadata keys through which a benchmark reports the digest (and path) of the dataset
/// a task comes from.
const DATASET_DIGEST_KEY: &str = "dataset_sha256";
const DATASET_PATH_KEY: &str = "dataset_path";

/// The most distinct datasets recorded (a benchmark reporting one per task stays bounded).
const MAX_DATASETS: usize = 64;

/// The part of the provenance known before the run starts. `request` is the request as
/// written (references kept), `resolved` the one that executes.
pub fn before_run(registry: &Registry, request: &RunRequest, resolved: &RunRequest) -> Value {
    let plugins: Vec<Value> = registry
        .plugins()
        .map(|p| {
            json!({
                "name": p.source.name,
                "version": p.source.version,
                "sha256": p.sha256,
                "path": p.source.path,
            })
        })
        .collect();
    let component = |kind: ComponentKind, id: &str| match registry.find(kind, id) {
        Some(entry) => match &entry.source {
            Source::BuiltIn => {
                json!({"id": id, "source": "built-in", "version": env!("CARGO_PKG_VERSION")})
            }
            Source::Plugin(p) => json!({"id": id, "source": p.name, "version": p.version}),
        },
        None => json!({"id": id}),
    };
    let protocol = agentcompass_gateway::Protocol::choose(&resolved.model)
        .map(|p| p.name())
        .unwrap_or("unknown");
    let endpoint = agentcompass_gateway::Protocol::choose(&resolved.model)
        .map(|p| p.url(&resolved.model.base_url))
        .ok()
        .and_then(|url| url::Url::parse(&url).ok())
        .map(|url| match (url.host_str(), url.port()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_string(),
            _ => String::new(),
        });
    let mut components = Map::new();
    components.insert(
        "benchmark".into(),
        component(ComponentKind::Benchmark, &request.benchmark.id),
    );
    if !request.is_harness_free() {
        components.insert(
            "harness".into(),
            component(ComponentKind::Harness, &request.harness.id),
        );
    }
    components.insert(
        "environment".into(),
        component(ComponentKind::Environment, &request.environment.id),
    );
    json!({
        "host": {
            "name": "agentcompass-host",
            "version": env!("CARGO_PKG_VERSION"),
            "commit": option_env!("AGENTCOMPASS_BUILD_COMMIT"),
        },
        "plugins": plugins,
        "components": components,
        "model": {"id": resolved.model.id, "protocol": protocol, "endpoint_host": endpoint},
        "variables": variables(request),
        "seeds": seeds(resolved),
        "machine": machine(),
    })
}

/// Every `${VAR}` the request refers to, with its value from the environment now — masked
/// when the variable's name or a field it fills looks secret (a key, a token, a password), or
/// when it fills an environment-variable map.
fn variables(request: &RunRequest) -> Value {
    let Ok(value) = serde_json::to_value(request) else {
        return Value::Null;
    };
    let mut found: BTreeMap<String, bool> = BTreeMap::new();
    let _ = crate::config::replace_references("", &value, &mut |site| {
        let secret = agentcompass_redact::is_sensitive_key(site.name)
            || site
                .keys
                .iter()
                .any(|key| agentcompass_redact::is_sensitive_key(key));
        *found.entry(site.name.to_string()).or_default() |= secret;
        Ok(None)
    });
    let mut out = Map::new();
    for (name, secret) in found {
        let shown = match crate::config::process_env(&name) {
            Some(_) if secret => json!(MASK),
            Some(value) => json!(value),
            None => Value::Null,
        };
        out.insert(name, shown);
    }
    Value::Object(out)
}

/// The `seed` parameters of the request's components and model.
fn seeds(resolved: &RunRequest) -> Value {
    let mut out = Map::new();
    for (owner, params) in [
        ("benchmark", &resolved.benchmark.params),
        ("harness", &resolved.harness.params),
        ("environment", &resolved.environment.params),
        ("model", &resolved.model.params),
    ] {
        if let Some(seed) = params.get("seed") {
            out.insert(owner.to_string(), seed.clone());
        }
    }
    Value::Object(out)
}

/// The machine: OS, kernel release, architecture and CPU count.
fn machine() -> Value {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .map(|s| s.trim().to_string())
    };
    let os = read("/etc/os-release").and_then(|text| {
        text.lines()
            .find_map(|l| l.strip_prefix("PRETTY_NAME="))
            .map(|v| v.trim_matches('"').to_string())
    });
    json!({
        "os": os.unwrap_or_else(|| std::env::consts::OS.to_string()),
        "kernel": read("/proc/sys/kernel/osrelease"),
        "arch": std::env::consts::ARCH,
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
    })
}

/// The versions of the tools the request's environment provider runs on: `bwrap` for
/// `sandbox`, the Docker Engine for `docker` (asked within 5 s; `null` when it does not
/// answer).
pub async fn provider_tools(environment: &str) -> Value {
    match environment {
        "sandbox" => json!({"bwrap": command_version("bwrap", &["--version"]).await}),
        "docker" => json!({
            "docker_engine": command_version("docker", &["version", "--format", "{{.Server.Version}}"]).await,
        }),
        _ => json!({}),
    }
}

async fn command_version(program: &str, args: &[&str]) -> Option<String> {
    let output = tokio::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(5), output)
        .await
        .ok()?
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_string();
    (output.status.success() && !text.is_empty()).then(|| {
        agentcompass_redact::scrub_and_truncate(text.lines().next().unwrap_or_default(), 100)
    })
}

/// The distinct datasets the request's tasks came from, as their benchmark reports them
/// (`metadata.dataset_sha256`, with `metadata.dataset_path`).
#[derive(Debug, Default)]
pub struct Datasets(std::sync::Mutex<BTreeMap<String, Option<String>>>);

impl Datasets {
    /// Notes the dataset `task` reports (if any).
    pub fn note(&self, task: &TaskSpec) {
        let Some(digest) = task
            .metadata
            .get(DATASET_DIGEST_KEY)
            .and_then(Value::as_str)
        else {
            return;
        };
        let mut seen = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if seen.len() < MAX_DATASETS && !seen.contains_key(digest) {
            let path = task
                .metadata
                .get(DATASET_PATH_KEY)
                .and_then(Value::as_str)
                .map(str::to_string);
            seen.insert(digest.to_string(), path);
        }
    }

    /// `[{"sha256", "path"}]`.
    pub fn to_json(&self) -> Value {
        let seen = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Value::Array(
            seen.iter()
                .map(|(sha256, path)| json!({"sha256": sha256, "path": path}))
                .collect(),
        )
    }
}
