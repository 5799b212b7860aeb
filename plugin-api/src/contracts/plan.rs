//! Plans: the per-attempt `ExecutionPlan` with its benchmark and harness subplans.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{
    ArtifactCollectCommand, ArtifactLimits, ArtifactSpec, EnvironmentSetup, EnvironmentSpec,
    EvaluationEnvironmentMode, ExecutionSpec, NetworkPolicy, ResourceRequirements,
};

/// Typed access to a component-private JSON `payload`.
macro_rules! impl_payload {
    ($($ty:ty),*) => {$(
        impl $ty {
            /// Replaces the component-private payload with `value` serialised to JSON.
            pub fn with_payload<T: Serialize>(mut self, value: &T) -> Result<Self, serde_json::Error> {
                self.payload = serde_json::to_value(value)?;
                Ok(self)
            }

            /// Deserialises the component-private payload.
            pub fn payload<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
                T::deserialize(&self.payload)
            }
        }
    )*};
}

/// The benchmark's task-specific subplan.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BenchmarkPlan {
    /// Task/benchmark run-phase timeout default, in seconds.
    pub run_timeout_seconds: Option<f64>,
    /// Task/benchmark evaluation timeout default, in seconds.
    pub evaluation_timeout_seconds: Option<f64>,
    /// Benchmark-private typed state (see [`BenchmarkPlan::payload`]).
    pub payload: serde_json::Value,
}

/// The harness subplan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HarnessPlan {
    /// Append the network restriction notice to the prompt when the run policy is not public.
    pub inject_network_restriction_notice: bool,
    /// Harness fallback run timeout (used only without a task/benchmark default).
    pub default_run_timeout_seconds: Option<f64>,
    /// Resolved native run timeout, in seconds.
    pub run_timeout_seconds: Option<f64>,
    /// Harness-private typed state (see [`HarnessPlan::payload`]).
    pub payload: serde_json::Value,
    /// The harness's agent runs inside the environment and calls the model from there: the
    /// host serves the run's model endpoint inside the task environment (see
    /// [`super::HostEndpoint`]) and `Ctx::model_endpoint` answers with its address and a
    /// per-session placeholder token instead of the real key.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub model_endpoint_in_environment: bool,
    /// Packages the agent needs inside the environment. The host installs each once per
    /// machine and platform into its install cache and mounts it read-only at
    /// [`ToolInstall::mount_path`] (the provider declares
    /// [`super::ProviderCapabilities::host_mounts`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub installs: Vec<ToolInstall>,
    /// Files the harness leaves in the environment that are kept as attempt artifacts (its
    /// agent's raw logs), collected after the declared artifacts of the benchmark when the
    /// benchmark collects artifacts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<ArtifactSpec>,
}

/// The package manager that makes a [`ToolInstall`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Installer {
    /// `npm install --prefix DIR PACKAGE@VERSION` (the environment needs `npm` and `node`).
    Npm,
    /// `python3 -m venv DIR && DIR/bin/pip install PACKAGE==VERSION` (the environment needs
    /// `python3` with `venv`).
    Pip,
}

impl Installer {
    /// The name users see (`npm`, `pip`).
    pub fn as_str(self) -> &'static str {
        match self {
            Installer::Npm => "npm",
            Installer::Pip => "pip",
        }
    }
}

/// One package a harness runs inside the environment. It is made by its installer inside a
/// helper environment of the same provider and image (public network, the cache entry mounted
/// writable at `mount_path`), so native parts and absolute paths fit the environment it runs in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolInstall {
    /// The package manager.
    pub installer: Installer,
    /// The registry package (`@anthropic-ai/claude-code`, `mini-swe-agent`).
    pub package: String,
    /// The exact version.
    pub version: String,
    /// Absolute path at which the environment sees the installation (read-only).
    pub mount_path: String,
    /// The registry or index URL (npm `--registry`, pip `--index-url`); `None`: the
    /// installer's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
    /// How long the install may take, in seconds.
    #[serde(default = "default_install_timeout")]
    pub timeout_seconds: f64,
}

fn default_install_timeout() -> f64 {
    1800.0
}

impl ToolInstall {
    /// `package@version` (npm) or `package==version` (pip), as the installer spells it.
    pub fn requirement(&self) -> String {
        match self.installer {
            Installer::Npm => format!("{}@{}", self.package, self.version),
            Installer::Pip => format!("{}=={}", self.package, self.version),
        }
    }
}

impl Default for HarnessPlan {
    fn default() -> Self {
        HarnessPlan {
            inject_network_restriction_notice: true,
            default_run_timeout_seconds: None,
            run_timeout_seconds: None,
            payload: serde_json::Value::Null,
            model_endpoint_in_environment: false,
            installs: Vec::new(),
            artifacts: Vec::new(),
        }
    }
}

impl_payload!(BenchmarkPlan, HarnessPlan);

/// The resolved plan of one task attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ExecutionPlan {
    /// Task id.
    pub task_id: String,
    /// Semantic attempt number (1-based).
    pub attempt: u32,
    /// Task environment.
    pub environment: EnvironmentSpec,
    /// Separate evaluation environment (fresh mode).
    pub evaluation_environment: Option<EnvironmentSpec>,
    /// Resolved evaluation mode.
    pub evaluation_environment_mode: EvaluationEnvironmentMode,
    /// Policy at task environment creation.
    pub baseline_network_policy: Option<NetworkPolicy>,
    /// Policy during the agent phase.
    pub run_network_policy: Option<NetworkPolicy>,
    /// Policy during evaluation.
    pub evaluation_network_policy: Option<NetworkPolicy>,
    /// Startup policy of a fresh evaluation environment.
    pub evaluation_baseline_network_policy: Option<NetworkPolicy>,
    /// Benchmark subplan.
    pub benchmark_plan: BenchmarkPlan,
    /// Harness subplan.
    pub harness_plan: HarnessPlan,
    /// Execution settings.
    pub execution: ExecutionSpec,
    /// Ids of the recipes applied, in order.
    pub applied_recipes: Vec<String>,
    /// Resolved artifact paths.
    pub artifacts: Vec<ArtifactSpec>,
    /// Resolved submission-preparation commands.
    pub artifact_collect: Vec<ArtifactCollectCommand>,
    /// Whether the benchmark supports artifact collection.
    pub artifact_collection_supported: bool,
    /// Transfer limits.
    pub artifact_limits: ArtifactLimits,
    /// Total budget of the collect commands.
    pub artifact_collect_timeout_seconds: Option<f64>,
    /// Harness `collect_result` budget.
    pub runresult_collect_timeout_seconds: f64,
    /// Added to the harness watchdog.
    pub run_timer_compensation_seconds: f64,
    /// Final run-phase timeout.
    pub run_timeout_seconds: Option<f64>,
    /// Final evaluation timeout.
    pub evaluation_timeout_seconds: Option<f64>,
    /// Persist collected artifacts locally.
    pub save_artifacts: bool,
    /// The user the agent phase's commands run as (`None`: the image's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_user: Option<String>,
    /// The user the evaluation phase's commands run as (`None`: the image's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evaluation_user: Option<String>,
}

impl Default for ExecutionPlan {
    fn default() -> Self {
        ExecutionPlan {
            task_id: String::new(),
            attempt: 1,
            environment: EnvironmentSpec::default(),
            evaluation_environment: None,
            evaluation_environment_mode: EvaluationEnvironmentMode::default(),
            baseline_network_policy: None,
            run_network_policy: None,
            evaluation_network_policy: None,
            evaluation_baseline_network_policy: None,
            benchmark_plan: BenchmarkPlan::default(),
            harness_plan: HarnessPlan::default(),
            execution: ExecutionSpec::default(),
            applied_recipes: Vec::new(),
            artifacts: Vec::new(),
            artifact_collect: Vec::new(),
            artifact_collection_supported: true,
            artifact_limits: ArtifactLimits::default(),
            artifact_collect_timeout_seconds: None,
            runresult_collect_timeout_seconds: 60.0,
            run_timer_compensation_seconds: 120.0,
            run_timeout_seconds: None,
            evaluation_timeout_seconds: None,
            save_artifacts: false,
            run_user: None,
            evaluation_user: None,
        }
    }
}

/// The audit view of one environment in a [`ResolvedPlanSummary`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EnvironmentSummary {
    /// Provider id.
    pub id: String,
    /// Startup policy.
    pub baseline_network_policy: Option<NetworkPolicy>,
    /// Requested resources.
    pub resources: Option<ResourceRequirements>,
    /// Build/start settings.
    pub setup: EnvironmentSetup,
}

/// The safe, persisted audit view of an [`ExecutionPlan`] (no params, no env var values).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ResolvedPlanSummary {
    /// Task environment.
    pub environment: EnvironmentSummary,
    /// Fresh evaluation environment.
    pub evaluation_environment: Option<EnvironmentSummary>,
    /// Evaluation mode.
    pub evaluation_environment_mode: EvaluationEnvironmentMode,
    /// Agent-phase policy.
    pub run_network_policy: Option<NetworkPolicy>,
    /// Evaluation policy.
    pub evaluation_network_policy: Option<NetworkPolicy>,
    /// Applied recipe ids.
    pub applied_recipes: Vec<String>,
    /// Final run-phase timeout.
    pub run_timeout_seconds: Option<f64>,
    /// Final evaluation timeout.
    pub evaluation_timeout_seconds: Option<f64>,
    /// Transfer limits.
    pub artifact_limits: ArtifactLimits,
    /// Benchmark collection capability.
    pub artifact_collection_supported: bool,
    /// Whether the collection pipeline runs (see [`ExecutionPlan::collect_artifacts`]).
    pub collect_artifacts: bool,
    /// Whether collected artifacts are stored.
    pub save_artifacts: bool,
    /// Harness `collect_result` budget.
    pub runresult_collect_timeout_seconds: f64,
    /// Added to the harness watchdog.
    pub run_timer_compensation_seconds: f64,
    /// Total budget of the collect commands.
    pub artifact_collect_timeout_seconds: Option<f64>,
}

impl EnvironmentSummary {
    fn of(spec: &EnvironmentSpec, baseline: Option<&NetworkPolicy>) -> Self {
        EnvironmentSummary {
            id: spec.id.clone(),
            baseline_network_policy: baseline.or(spec.baseline_network_policy.as_ref()).cloned(),
            resources: spec.resources.clone(),
            setup: spec.setup.clone(),
        }
    }
}

impl ExecutionPlan {
    /// Whether the collection pipeline runs: supported and at least one path or command.
    pub fn collect_artifacts(&self) -> bool {
        self.artifact_collection_supported
            && !(self.artifacts.is_empty() && self.artifact_collect.is_empty())
    }

    /// The safe audit view persisted in `run_info.json` and sent with `execution_plan_resolved`.
    pub fn summary(&self) -> ResolvedPlanSummary {
        ResolvedPlanSummary {
            environment: EnvironmentSummary::of(
                &self.environment,
                self.baseline_network_policy.as_ref(),
            ),
            evaluation_environment: self.evaluation_environment.as_ref().map(|spec| {
                EnvironmentSummary::of(spec, self.evaluation_baseline_network_policy.as_ref())
            }),
            evaluation_environment_mode: self.evaluation_environment_mode,
            run_network_policy: self.run_network_policy.clone(),
            evaluation_network_policy: self.evaluation_network_policy.clone(),
            applied_recipes: self.applied_recipes.clone(),
            run_timeout_seconds: self.run_timeout_seconds,
            evaluation_timeout_seconds: self.evaluation_timeout_seconds,
            artifact_limits: self.artifact_limits.clone(),
            artifact_collection_supported: self.artifact_collection_supported,
            collect_artifacts: self.collect_artifacts(),
            save_artifacts: self.save_artifacts,
            runresult_collect_timeout_seconds: self.runresult_collect_timeout_seconds,
            run_timer_compensation_seconds: self.run_timer_compensation_seconds,
            artifact_collect_timeout_seconds: self.artifact_collect_timeout_seconds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct ExactMatch {
        expected: String,
        case_sensitive: bool,
    }

    #[test]
    fn typed_payloads() {
        let state = ExactMatch {
            expected: "Paris".into(),
            case_sensitive: false,
        };
        let plan = BenchmarkPlan {
            run_timeout_seconds: Some(60.0),
            ..Default::default()
        }
        .with_payload(&state)
        .unwrap();
        assert_eq!(plan.payload::<ExactMatch>().unwrap(), state);
        let back: BenchmarkPlan =
            serde_json::from_value(serde_json::to_value(&plan).unwrap()).unwrap();
        assert_eq!(back, plan);
        assert!(BenchmarkPlan::default().payload::<ExactMatch>().is_err());
        let harness: HarnessPlan = serde_json::from_str("{}").unwrap();
        assert_eq!(harness, HarnessPlan::default());
        assert!(harness.inject_network_restriction_notice);
        assert_eq!(harness.payload::<Option<u8>>().unwrap(), None);
    }

    #[test]
    fn plan_defaults_and_round_trip() {
        let plan: ExecutionPlan = serde_json::from_str("{}").unwrap();
        assert_eq!(plan, ExecutionPlan::default());
        assert_eq!(plan.attempt, 1);
        assert!(plan.artifact_collection_supported);
        let mut plan = ExecutionPlan {
            task_id: "t".into(),
            environment: EnvironmentSpec::new("docker"),
            run_network_policy: Some(NetworkPolicy::allowlist(["pypi.org"])),
            artifacts: vec![ArtifactSpec::main_dir()],
            ..Default::default()
        };
        plan.evaluation_environment = Some(EnvironmentSpec::new("docker"));
        plan.evaluation_environment_mode = EvaluationEnvironmentMode::Fresh;
        let back: ExecutionPlan =
            serde_json::from_value(serde_json::to_value(&plan).unwrap()).unwrap();
        assert_eq!(back, plan);
    }

    #[test]
    fn summary_hides_params_and_env_values() {
        let mut env = EnvironmentSpec::new("docker");
        env.params.insert("token".into(), json!("param-secret"));
        env.env_variables
            .insert("API_KEY".into(), "env-secret".into());
        env.baseline_network_policy = Some(NetworkPolicy::no_network());
        env.resources = Some(ResourceRequirements {
            cpu: Some(2.0),
            ..Default::default()
        });
        let plan = ExecutionPlan {
            environment: env.clone(),
            evaluation_environment: Some(env),
            evaluation_baseline_network_policy: Some(NetworkPolicy::public()),
            applied_recipes: vec!["swe".into()],
            artifacts: vec![ArtifactSpec::main_dir()],
            ..Default::default()
        };
        let summary = plan.summary();
        let text = serde_json::to_string(&summary).unwrap();
        assert!(!text.contains("secret"), "{text}");
        assert!(!text.contains("API_KEY"), "{text}");
        assert_eq!(
            summary.environment.baseline_network_policy,
            Some(NetworkPolicy::no_network())
        );
        assert_eq!(
            summary
                .evaluation_environment
                .unwrap()
                .baseline_network_policy,
            Some(NetworkPolicy::public())
        );
        assert!(summary.collect_artifacts);
        assert_eq!(summary.applied_recipes, ["swe"]);
        let value = serde_json::to_value(plan.summary()).unwrap();
        assert_eq!(value["environment"]["resources"]["cpu"], 2.0);
        let back: ResolvedPlanSummary = serde_json::from_value(value).unwrap();
        assert_eq!(back, plan.summary());
    }
}
