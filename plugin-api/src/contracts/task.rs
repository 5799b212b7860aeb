//! Task-side carriers: `TaskSpec` (loaded by the benchmark) and `PreparedTask` (seen by the harness).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{
    AgentInputs, ArtifactCollectCommand, ArtifactSpec, EnvironmentSetup, EvaluationEnvironmentMode,
    JsonMap, McpServer, NetworkPolicy, ResourceRequirements, TaskStep,
};

/// One task as loaded by a benchmark, with optional per-task execution hints.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskSpec {
    /// Stable task id.
    pub task_id: String,
    /// The question / instruction.
    pub question: String,
    /// Category used in breakdowns.
    #[serde(default)]
    pub category: String,
    /// Reference answer (evaluator-only).
    #[serde(default)]
    pub ground_truth: serde_json::Value,
    /// Dataset-native metadata.
    #[serde(default)]
    pub metadata: JsonMap,
    /// Resources for every environment of the task.
    #[serde(default)]
    pub resources: Option<ResourceRequirements>,
    /// Resources of the task (run) environment.
    #[serde(default)]
    pub run_resources: Option<ResourceRequirements>,
    /// Resources of the evaluation environment.
    #[serde(default)]
    pub evaluation_resources: Option<ResourceRequirements>,
    /// Policy at environment creation.
    #[serde(default)]
    pub baseline_network_policy: Option<NetworkPolicy>,
    /// Startup policy of a fresh verifier.
    #[serde(default)]
    pub evaluation_baseline_network_policy: Option<NetworkPolicy>,
    /// Policy during the agent phase.
    #[serde(default)]
    pub run_network_policy: Option<NetworkPolicy>,
    /// Policy during evaluation.
    #[serde(default)]
    pub evaluation_network_policy: Option<NetworkPolicy>,
    /// Per-task evaluation mode.
    #[serde(default)]
    pub evaluation_environment_mode: Option<EvaluationEnvironmentMode>,
    /// Common bindings.
    #[serde(default)]
    pub env_variables: BTreeMap<String, String>,
    /// Agent-phase bindings.
    #[serde(default)]
    pub run_env_variables: BTreeMap<String, String>,
    /// Evaluation-command bindings.
    #[serde(default)]
    pub evaluation_env_variables: BTreeMap<String, String>,
    /// Fresh-verifier startup bindings (`None` inherits `env_variables`; a map replaces them).
    #[serde(default)]
    pub evaluation_environment_env_variables: Option<BTreeMap<String, String>>,
    /// Bindings must be injected at startup.
    #[serde(default)]
    pub require_startup_env: bool,
    /// Extra artifact paths (`None`: none declared).
    #[serde(default)]
    pub artifacts: Option<Vec<ArtifactSpec>>,
    /// Submission-preparation commands.
    #[serde(default)]
    pub artifact_collect: Vec<ArtifactCollectCommand>,
    /// Task environment setup defaults.
    #[serde(default)]
    pub environment_setup: EnvironmentSetup,
    /// Separate verifier setup (`None` inherits the run setup).
    #[serde(default)]
    pub evaluation_environment_setup: Option<EnvironmentSetup>,
    /// Task run-phase timeout default, in seconds.
    #[serde(default)]
    pub run_timeout_seconds: Option<f64>,
    /// Task evaluation timeout default, in seconds.
    #[serde(default)]
    pub evaluation_timeout_seconds: Option<f64>,
    /// Unmapped declarations found while loading.
    #[serde(default)]
    pub load_warnings: Vec<String>,
    /// The task's steps, run in order in the same task environment (empty: a single-step
    /// task, prepared by `prepare_task` and scored by `evaluate_attempt`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<TaskStep>,
    /// The user the agent phase's commands run as (Harbor's `[agent].user`; `None`: the
    /// image's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_user: Option<String>,
    /// The user the evaluation phase's commands run as (Harbor's `[verifier].user`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation_user: Option<String>,
    /// MCP servers the agent is handed (Harbor's `[[environment.mcp_servers]]`; headers as
    /// declared, `${VAR}` references unresolved).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<McpServer>,
    /// A directory inside the environment holding skills for the agent (Harbor's
    /// `[environment].skills_dir`: `<dir>/<name>/SKILL.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills_dir: Option<String>,
}

impl TaskSpec {
    /// A task with only an id and a question.
    pub fn new(task_id: impl Into<String>, question: impl Into<String>) -> Self {
        TaskSpec {
            task_id: task_id.into(),
            question: question.into(),
            ..TaskSpec::default()
        }
    }
}

/// The media type of a [`MediaItem`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MediaKind {
    /// An image.
    Image,
    /// An audio clip.
    Audio,
    /// A video.
    Video,
}

/// One media input (by path, URL or inline data).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MediaItem {
    /// Media type (serialised as `type`).
    #[serde(rename = "type")]
    pub kind: MediaKind,
    /// Path in the environment.
    #[serde(default)]
    pub path: Option<String>,
    /// Remote URL.
    #[serde(default)]
    pub url: Option<String>,
    /// Inline (base64) data.
    #[serde(default)]
    pub data: Option<String>,
    /// MIME type.
    #[serde(default)]
    pub mime_type: Option<String>,
    /// Human-readable label.
    #[serde(default)]
    pub label: Option<String>,
}

/// An input file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRef {
    /// Path in the environment.
    pub path: String,
    /// Human-readable label.
    #[serde(default)]
    pub label: Option<String>,
}

/// A tool offered to the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    /// Tool name.
    pub name: String,
    /// What the tool does.
    #[serde(default)]
    pub description: String,
    /// JSON schema of the arguments.
    #[serde(default)]
    pub parameters: serde_json::Value,
}

/// One chat message (optional fields are omitted when unset, as chat APIs expect).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// Text or structured content.
    #[serde(default)]
    pub content: serde_json::Value,
    /// Participant name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Assistant tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<serde_json::Value>,
    /// The call a `tool` message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    /// A message with text content.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        Message {
            role: role.into(),
            content: serde_json::Value::String(content.into()),
            name: None,
            tool_calls: None,
            tool_call_id: None,
        }
    }
}

/// Harness-facing input of a task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskInput {
    /// The prompt.
    pub prompt: String,
    /// Optional system prompt.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// Media inputs.
    #[serde(default)]
    pub media: Vec<MediaItem>,
    /// Input files.
    #[serde(default)]
    pub files: Vec<FileRef>,
    /// Absolute workspace path in the environment.
    #[serde(default)]
    pub workspace: Option<String>,
    /// Tools offered to the agent.
    #[serde(default)]
    pub tools: Vec<ToolDef>,
    /// Pre-built conversation.
    #[serde(default)]
    pub messages: Vec<Message>,
}

impl TaskInput {
    /// An input with only a prompt.
    pub fn new(prompt: impl Into<String>) -> Self {
        TaskInput {
            prompt: prompt.into(),
            ..TaskInput::default()
        }
    }
}

/// An expected output file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputFileSpec {
    /// Path in the environment.
    pub path: String,
    /// What the file should contain.
    #[serde(default)]
    pub description: String,
}

/// What the agent is expected to produce.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskOutput {
    /// Answer-format instructions.
    pub answer: Option<String>,
    /// Expected output files.
    pub files: Vec<OutputFileSpec>,
}

/// The execution-ready task handed to the harness (must not contain hidden answers).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PreparedTask {
    /// Task id.
    pub task_id: String,
    /// Category.
    #[serde(default)]
    pub category: String,
    /// Ground truth visible to the harness; keep `None` unless it is safe to expose.
    #[serde(default)]
    pub ground_truth: Option<serde_json::Value>,
    /// Harness input.
    pub input: TaskInput,
    /// Expected output.
    #[serde(default)]
    pub output: TaskOutput,
    /// Filtered metadata.
    #[serde(default)]
    pub metadata: JsonMap,
    /// The task's reference solution, offered by the benchmark
    /// ([`PreparedTask::with_reference_solution`]). The host hands it only to reference
    /// harnesses ([`super::ComponentInfo::reads_reference_solution`]); every other harness
    /// sees `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_solution: Option<ReferenceSolution>,
    /// What the agent is handed besides its instruction — MCP servers, skills, variables —,
    /// set by the host from the task and the run ([`AgentInputs`]); a benchmark leaves it
    /// empty.
    #[serde(default, skip_serializing_if = "AgentInputs::is_empty")]
    pub agent_inputs: AgentInputs,
}

/// A task's reference solution: a directory on the host that a reference harness uploads
/// into the session's `solution` directory ([`super::SessionDirs::solution`]) before it
/// runs `script` there with `bash` and `env`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReferenceSolution {
    /// The directory on the host (absolute), uploaded whole.
    pub dir: String,
    /// The script to run, relative to the directory (`solve.sh`).
    #[serde(default = "default_solution_script")]
    pub script: String,
    /// Extra variables for the script.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

fn default_solution_script() -> String {
    "solve.sh".to_string()
}

impl ReferenceSolution {
    /// The solution in host directory `dir`, run as `bash solve.sh`.
    pub fn new(dir: impl Into<String>) -> Self {
        ReferenceSolution {
            dir: dir.into(),
            script: default_solution_script(),
            env: BTreeMap::new(),
        }
    }

    /// Runs `script` (relative to the directory) instead of `solve.sh`.
    pub fn script(mut self, script: impl Into<String>) -> Self {
        self.script = script.into();
        self
    }

    /// Sets a variable for the script.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }
}

impl PreparedTask {
    /// A prepared task with only an id and input.
    pub fn new(task_id: impl Into<String>, input: TaskInput) -> Self {
        PreparedTask {
            task_id: task_id.into(),
            input,
            ..PreparedTask::default()
        }
    }

    /// The harness-facing view of `task` that shows no answer: its id, its question as the
    /// prompt and its category. `ground_truth`, `output` and `metadata` stay empty; add only
    /// what the harness may see.
    pub fn from_task(task: &TaskSpec) -> Self {
        let mut prepared =
            PreparedTask::new(task.task_id.clone(), TaskInput::new(task.question.clone()));
        prepared.category = task.category.clone();
        prepared
    }

    /// Offers the task's reference solution to reference harnesses (builder style); the host
    /// removes it before any other harness sees the prepared task.
    pub fn with_reference_solution(mut self, solution: ReferenceSolution) -> Self {
        self.reference_solution = Some(solution);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn task_spec_defaults_and_round_trip() {
        let task: TaskSpec = serde_json::from_str(r#"{"task_id":"t1","question":"q?"}"#).unwrap();
        assert_eq!(task, TaskSpec::new("t1", "q?"));
        assert!(!task.require_startup_env);
        assert!(task.artifacts.is_none());
        assert!(serde_json::from_str::<TaskSpec>(r#"{"question":"q"}"#).is_err());

        let mut task = TaskSpec::new("t2", "fix it");
        task.ground_truth = json!({"patch": "diff"});
        task.run_network_policy = Some(NetworkPolicy::allowlist(["pypi.org"]));
        task.evaluation_environment_mode = Some(EvaluationEnvironmentMode::Fresh);
        task.artifacts = Some(vec![ArtifactSpec::main_dir()]);
        task.artifact_collect = vec![ArtifactCollectCommand::new("git diff > /logs/artifacts/p")];
        task.evaluation_environment_env_variables = Some(BTreeMap::new());
        task.run_timeout_seconds = Some(3600.0);
        let value = serde_json::to_value(&task).unwrap();
        assert_eq!(value["evaluation_environment_mode"], "fresh");
        assert_eq!(value["evaluation_environment_env_variables"], json!({}));
        let back: TaskSpec = serde_json::from_value(value).unwrap();
        assert_eq!(back, task);
    }

    #[test]
    fn prepared_task_round_trip() {
        let mut input = TaskInput::new("What is 2+2?");
        input.media.push(MediaItem {
            kind: MediaKind::Image,
            path: Some("/data/x.png".into()),
            url: None,
            data: None,
            mime_type: Some("image/png".into()),
            label: None,
        });
        input.messages.push(Message::new("user", "hi"));
        input.tools.push(ToolDef {
            name: "bash".into(),
            description: "run".into(),
            parameters: json!({"type": "object"}),
        });
        let prepared = PreparedTask::new("t", input);
        assert_eq!(prepared.ground_truth, None);
        let value = serde_json::to_value(&prepared).unwrap();
        assert_eq!(value["input"]["media"][0]["type"], "image");
        assert_eq!(
            value["input"]["messages"][0],
            json!({"role": "user", "content": "hi"})
        );
        let back: PreparedTask = serde_json::from_value(value).unwrap();
        assert_eq!(back, prepared);
        let minimal: PreparedTask =
            serde_json::from_value(json!({"task_id": "t", "input": {"prompt": "p"}})).unwrap();
        assert_eq!(minimal, PreparedTask::new("t", TaskInput::new("p")));
    }
}
