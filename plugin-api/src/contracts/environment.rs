//! Environment-provider contracts: capabilities, open requests and session descriptions.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::{EnvironmentSpec, NetworkMode, NetworkPolicy, RedactedMap};

/// What an environment provider supports (checked during planning, failing closed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProviderCapabilities {
    /// Enforceable network modes.
    pub network_modes: Vec<NetworkMode>,
    /// Accepted entry types of `allowlist` and `denylist` policies (see
    /// [`super::HostPattern::entry_type`]; empty: every pattern type), plus
    /// [`super::PORT_ENTRY_TYPE`] when entries may carry a port (`host:port`).
    pub allowlist_entry_types: Vec<String>,
    /// Can switch policies on a live session.
    pub dynamic_network_policy: bool,
    /// Supported [`super::ResourceRequirements`] field names.
    pub resource_fields: Vec<String>,
    /// Supported operating systems (empty: no OS selection).
    pub operating_systems: Vec<String>,
    /// Supports per-task environment variables.
    pub task_env: bool,
    /// Can inject variables at startup.
    pub startup_env: bool,
    /// Makes the [`HostEndpoint`]s of an open request reachable inside the environment under
    /// every network policy (`no-network` included). Needed by harnesses whose agent calls
    /// the model from inside the environment; a provider without it is refused for them.
    pub host_endpoints: bool,
    /// Makes the [`HostMount`]s of an open request visible inside the environment (a bind
    /// mount, or a copy where the engine cannot reach the host's files). Needed by harnesses
    /// that run a tool installed in the host's install cache; a provider without it is refused
    /// for them.
    #[serde(default)]
    pub host_mounts: bool,
    /// The provider params that change what an installer makes in its environments (the
    /// root filesystem, an image build), as opposed to how the engine is reached (a socket,
    /// a network name): the host's install cache keys its entries by these, the provider id
    /// and `setup.image`/`setup.os`. `None`: every param.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform_params: Option<Vec<String>>,
    /// Builds an environment's image from its own definition (`setup.build_context`) when it
    /// opens, once per definition: the host then builds the tasks' images in a build phase
    /// before the tasks take their concurrency slots (an open and close per image).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub builds_images: bool,
    /// Runs a command as the user its request names ([`super::ExecRequest::user`]): needed
    /// by plans with a phase user ([`super::ExecutionPlan::run_user`] /
    /// [`super::ExecutionPlan::evaluation_user`]); a provider without it is refused for them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exec_user: bool,
    /// Runs the services of a Compose file beside the environment
    /// ([`super::EnvironmentSetup::compose`]): a plan whose environment has them is refused by
    /// a provider without it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub compose: bool,
}

impl Default for ProviderCapabilities {
    fn default() -> Self {
        ProviderCapabilities {
            network_modes: vec![NetworkMode::Public],
            allowlist_entry_types: Vec::new(),
            dynamic_network_policy: false,
            resource_fields: Vec::new(),
            operating_systems: Vec::new(),
            task_env: false,
            startup_env: false,
            host_endpoints: false,
            host_mounts: false,
            platform_params: None,
            builds_images: false,
            exec_user: false,
            compose: false,
        }
    }
}

impl ProviderCapabilities {
    /// Public network only, nothing else (the default).
    pub fn public_only() -> Self {
        ProviderCapabilities::default()
    }

    /// Whether `mode` can be enforced.
    pub fn supports_mode(&self, mode: NetworkMode) -> bool {
        self.network_modes.contains(&mode)
    }
}

/// Which environment of an attempt is being opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EnvironmentRole {
    /// The task (agent) environment.
    #[default]
    Task,
    /// A fresh evaluation environment.
    Evaluation,
}

/// The key of the close parameters of a session whose open did not finish (the host was
/// killed, or the run cancelled, while a provider was opening it): `{"opening": {"run_id",
/// "task_id", "attempt", "role", "run_dir", "params"}}` ([`OpenEnvironmentRequest::opening_close_params`]).
/// The host records them before it calls `open` and replaces them with the session's own
/// once it opened; a provider that labels what it creates with the request's run, task,
/// attempt and role releases all of it on `close`, others release nothing (`Ok`).
pub const OPENING_CLOSE_KEY: &str = "opening";

/// Everything a provider needs to open one environment. `Debug` hides `resolved_env` values.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenEnvironmentRequest {
    /// Run id.
    pub run_id: String,
    /// Task id.
    pub task_id: String,
    /// Semantic attempt number.
    #[serde(default = "default_attempt")]
    pub attempt: u32,
    /// Which environment.
    #[serde(default)]
    pub role: EnvironmentRole,
    /// The resolved environment spec.
    pub environment: EnvironmentSpec,
    /// Policy to apply at creation.
    #[serde(default)]
    pub baseline_network_policy: NetworkPolicy,
    /// Run directory on the host, when inside a run.
    #[serde(default)]
    pub run_dir: Option<String>,
    /// Already-resolved common bindings. These are secret values: providers must never log them.
    #[serde(default)]
    pub resolved_env: BTreeMap<String, String>,
    /// Host services to make reachable inside the environment at `127.0.0.1:PORT` whatever
    /// the network policy (a provider declares [`ProviderCapabilities::host_endpoints`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_endpoints: Vec<HostEndpoint>,
    /// Static names (name → IP address) the environment's egress proxy resolves before DNS,
    /// like Docker's `--add-host`: the runtime option `runtime.egress.hosts`, validated by the
    /// host. Used by providers that enforce `allowlist`/`denylist` with a proxy.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub egress_hosts: BTreeMap<String, String>,
    /// Host directories to make visible inside the environment (a provider declares
    /// [`ProviderCapabilities::host_mounts`]): the installed tools of the harness, read-only;
    /// the staging directory of an install, writable, in the helper environment that makes it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_mounts: Vec<HostMount>,
    /// The run's model endpoint as served inside the environment (the host's relay, among
    /// `host_endpoints` as `model`; a placeholder token, never the real key), for services
    /// beside the environment that need a model: a provider that runs a task's services
    /// hands it to those whose variables name a model key (`ANTHROPIC_API_KEY`, ...) instead
    /// of the host's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_endpoint: Option<super::ModelEndpoint>,
}

/// A host directory seen inside an environment at `target`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostMount {
    /// The absolute path of the directory on the host.
    pub source: String,
    /// The absolute path inside the environment.
    pub target: String,
    /// Whether the environment may only read it (the default).
    #[serde(default = "default_read_only")]
    pub read_only: bool,
}

fn default_read_only() -> bool {
    true
}

/// A host service an environment must reach: a Unix socket on the host that the provider
/// makes reachable at `127.0.0.1:port` inside the environment. In an isolated network
/// namespace the provider forwards that port to the socket; where the environment shares
/// the host's network (`host_process`, a `public` sandbox, a host-network container) the
/// host already listens on `127.0.0.1:port` itself and nothing needs forwarding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostEndpoint {
    /// What it serves (`model`: the run's model endpoint).
    pub name: String,
    /// The Unix socket's path on the host (in a private directory of the attempt).
    pub socket: String,
    /// The TCP port on the environment's loopback (and on the host's, where the host listens
    /// too).
    pub port: u16,
}

fn default_attempt() -> u32 {
    1
}

impl OpenEnvironmentRequest {
    /// A task-environment request for the first attempt, with a public baseline.
    pub fn new(
        run_id: impl Into<String>,
        task_id: impl Into<String>,
        environment: EnvironmentSpec,
    ) -> Self {
        OpenEnvironmentRequest {
            run_id: run_id.into(),
            task_id: task_id.into(),
            attempt: default_attempt(),
            role: EnvironmentRole::Task,
            environment,
            baseline_network_policy: NetworkPolicy::public(),
            run_dir: None,
            resolved_env: BTreeMap::new(),
            host_endpoints: Vec::new(),
            egress_hosts: BTreeMap::new(),
            host_mounts: Vec::new(),
            model_endpoint: None,
        }
    }
}

impl OpenEnvironmentRequest {
    /// The close parameters that release what an unfinished open of this request created
    /// ([`OPENING_CLOSE_KEY`]); the provider parameters are included (they say where the
    /// engine is) and are redacted like any record when persisted.
    pub fn opening_close_params(&self) -> serde_json::Value {
        serde_json::json!({
            OPENING_CLOSE_KEY: {
                "run_id": self.run_id,
                "task_id": self.task_id,
                "attempt": self.attempt,
                "role": self.role,
                "run_dir": self.run_dir,
                "params": self.environment.params,
            }
        })
    }
}

impl fmt::Debug for OpenEnvironmentRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenEnvironmentRequest")
            .field("run_id", &self.run_id)
            .field("task_id", &self.task_id)
            .field("attempt", &self.attempt)
            .field("role", &self.role)
            .field("environment", &self.environment)
            .field("baseline_network_policy", &self.baseline_network_policy)
            .field("run_dir", &self.run_dir)
            .field("resolved_env", &RedactedMap(&self.resolved_env))
            .field("host_endpoints", &self.host_endpoints)
            .field("egress_hosts", &self.egress_hosts)
            .finish()
    }
}

/// Description of an open environment session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// Session id.
    pub id: String,
    /// Provider id.
    pub provider: String,
    /// Default working directory for commands.
    #[serde(default)]
    pub default_workdir: Option<String>,
    /// JSON-serialisable parameters sufficient to close the environment later.
    #[serde(default)]
    pub close_params: serde_json::Value,
    /// The session's own directories (environment paths). A provider that does not report
    /// them (one built against plugin API 0.1.1 or earlier) gets the container conventions.
    #[serde(default)]
    pub dirs: SessionDirs,
    /// The log of the build that made the session's image from its definition
    /// (`setup.build_context`), now or for an earlier session: a file on the host the provider
    /// keeps, which the host copies into the attempt's directory. `None` for an image that was
    /// not built (or whose log is gone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_log: Option<String>,
}

/// The directories an environment gives one session to itself, as paths inside the
/// environment. No other session sees them and the provider removes them when the session
/// closes, so plugins put files there instead of at fixed paths (no plugin branches on a
/// provider's name):
///
/// | field | `sandbox`, `docker` | `host_process` |
/// |---|---|---|
/// | `workspace` | `/app` (`setup.workdir`) | `ROOT/app` (or its `workdir` param) |
/// | `tests` | `/tests` | `ROOT/tests` |
/// | `solution` | `/solution` | `ROOT/solution` |
/// | `logs` | `/logs` | `ROOT/logs` |
/// | `tmp` | `/tmp` | `ROOT/tmp` |
///
/// where `ROOT` is the session's private directory under the host's temporary directory.
/// Only `workspace` is meant for the agent; `tests` and `solution` are for the benchmark and
/// reference harnesses (hidden files are uploaded there at evaluation time).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionDirs {
    /// The task's working directory (the agent's).
    pub workspace: String,
    /// Hidden tests, uploaded at evaluation time.
    pub tests: String,
    /// A reference solution (reference harnesses only).
    pub solution: String,
    /// Logs (`logs/agent`, `logs/verifier`: Harbor's reward files live in the latter).
    pub logs: String,
    /// Scratch files of harnesses and benchmarks (instructions, small scripts).
    pub tmp: String,
}

impl Default for SessionDirs {
    /// The container conventions (`/app`, `/tests`, `/solution`, `/logs`, `/tmp`).
    fn default() -> Self {
        SessionDirs::under("/", "app")
    }
}

impl SessionDirs {
    /// The directories `root/workspace`, `root/tests`, `root/solution`, `root/logs` and
    /// `root/tmp` (`root` an environment path).
    pub fn under(root: &str, workspace: &str) -> Self {
        let root = root.trim_end_matches('/');
        let join = |name: &str| format!("{root}/{name}");
        SessionDirs {
            workspace: join(workspace),
            tests: join("tests"),
            solution: join("solution"),
            logs: join("logs"),
            tmp: join("tmp"),
        }
    }

    /// The same directories with `workspace` as the working directory.
    pub fn with_workspace(mut self, workspace: impl Into<String>) -> Self {
        self.workspace = workspace.into();
        self
    }

    /// `name` under the logs directory (`logs/verifier/reward.txt`).
    pub fn log_path(&self, name: &str) -> String {
        format!("{}/{}", self.logs.trim_end_matches('/'), name)
    }
}

impl SessionInfo {
    /// The working directory of commands: `default_workdir`, else the session's workspace.
    pub fn workdir(&self) -> &str {
        self.default_workdir
            .as_deref()
            .unwrap_or(&self.dirs.workspace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn capabilities_defaults() {
        let caps: ProviderCapabilities = serde_json::from_str("{}").unwrap();
        assert_eq!(caps, ProviderCapabilities::public_only());
        assert!(caps.supports_mode(NetworkMode::Public));
        assert!(!caps.supports_mode(NetworkMode::NoNetwork));
        let caps: ProviderCapabilities = serde_json::from_value(
            json!({"network_modes": ["public", "no-network"], "task_env": true}),
        )
        .unwrap();
        assert!(caps.supports_mode(NetworkMode::NoNetwork) && caps.task_env);
    }

    #[test]
    fn open_request_round_trip_and_redaction() {
        let mut req = OpenEnvironmentRequest::new("r", "t", EnvironmentSpec::new("docker"));
        req.role = EnvironmentRole::Evaluation;
        req.resolved_env
            .insert("API_KEY".into(), "very-secret".into());
        let printed = format!("{req:?}");
        assert!(
            printed.contains("API_KEY") && !printed.contains("very-secret"),
            "{printed}"
        );
        let value = serde_json::to_value(&req).unwrap();
        assert_eq!(value["role"], "evaluation");
        assert!(value.get("egress_hosts").is_none(), "{value}");
        let back: OpenEnvironmentRequest = serde_json::from_value(value).unwrap();
        assert_eq!(back, req);
        req.egress_hosts
            .insert("models.internal".into(), "127.0.0.2".into());
        let value = serde_json::to_value(&req).unwrap();
        assert_eq!(
            value["egress_hosts"],
            json!({"models.internal": "127.0.0.2"})
        );
        let back: OpenEnvironmentRequest = serde_json::from_value(value).unwrap();
        assert_eq!(back, req);
        let minimal: OpenEnvironmentRequest = serde_json::from_value(
            json!({"run_id": "r", "task_id": "t", "environment": {"id": "docker"}}),
        )
        .unwrap();
        assert_eq!(
            minimal,
            OpenEnvironmentRequest::new("r", "t", EnvironmentSpec::new("docker"))
        );
    }

    #[test]
    fn session_info_round_trip() {
        let info = SessionInfo {
            id: "s".into(),
            provider: "docker".into(),
            default_workdir: Some("/app".into()),
            close_params: json!({"container": "abc"}),
            dirs: SessionDirs::default().with_workspace("/work"),
            build_log: Some("/cache/builds/docker-ctx-1.log".into()),
        };
        let back: SessionInfo =
            serde_json::from_value(serde_json::to_value(&info).unwrap()).unwrap();
        assert_eq!(back, info);
        // A provider of plugin API 0.1.1 reports no dirs: the container conventions.
        let old: SessionInfo = serde_json::from_value(json!({"id": "s", "provider": "p"})).unwrap();
        assert_eq!(old.dirs.workspace, "/app");
        assert_eq!(old.build_log, None);
        assert_eq!(old.dirs.tests, "/tests");
        assert_eq!(
            old.dirs.log_path("verifier/reward.txt"),
            "/logs/verifier/reward.txt"
        );
        assert_eq!(old.workdir(), "/app");
        let private = SessionDirs::under("/tmp/agentcompass-t-1-x/", "app");
        assert_eq!(private.solution, "/tmp/agentcompass-t-1-x/solution");
        assert_eq!(private.tmp, "/tmp/agentcompass-t-1-x/tmp");
    }
}
