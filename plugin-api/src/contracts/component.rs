//! Component identity and the public configuration schema every component declares.

use serde::{Deserialize, Serialize};

/// The four kinds of component a plugin can provide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ComponentKind {
    /// Loads tasks, prepares them and scores results.
    Benchmark,
    /// The agent under test.
    Harness,
    /// An environment provider (sandbox).
    Environment,
    /// A plan adapter applied by the Planner.
    Recipe,
    /// Finds bad cases in finished attempts (plugin API 0.2).
    Analyzer,
}

impl ComponentKind {
    /// All kinds, in registry order.
    pub const ALL: [ComponentKind; 5] = [
        ComponentKind::Benchmark,
        ComponentKind::Harness,
        ComponentKind::Environment,
        ComponentKind::Recipe,
        ComponentKind::Analyzer,
    ];

    /// The lowercase name used in manifests, CLI arguments and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            ComponentKind::Benchmark => "benchmark",
            ComponentKind::Harness => "harness",
            ComponentKind::Environment => "environment",
            ComponentKind::Recipe => "recipe",
            ComponentKind::Analyzer => "analyzer",
        }
    }

    /// Parses a kind name; `env` is accepted as an alias of `environment`.
    pub fn parse(name: &str) -> Option<ComponentKind> {
        match name {
            "benchmark" => Some(ComponentKind::Benchmark),
            "harness" => Some(ComponentKind::Harness),
            "environment" | "env" => Some(ComponentKind::Environment),
            "recipe" => Some(ComponentKind::Recipe),
            "analyzer" => Some(ComponentKind::Analyzer),
            _ => None,
        }
    }
}

impl std::fmt::Display for ComponentKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The JSON type of one configuration field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfigType {
    /// `true` / `false`.
    Boolean,
    /// A whole number.
    Integer,
    /// Any finite number.
    Number,
    /// A string.
    String,
    /// A JSON array.
    Array,
    /// A JSON object.
    Object,
    /// Any JSON value.
    Any,
}

impl ConfigType {
    /// Whether `value` is acceptable for this type (`null` is always accepted: it means "default").
    pub fn accepts(self, value: &serde_json::Value) -> bool {
        use serde_json::Value;
        match (self, value) {
            (_, Value::Null) | (ConfigType::Any, _) => true,
            (ConfigType::Boolean, Value::Bool(_)) => true,
            (ConfigType::Integer, Value::Number(n)) => n.is_i64() || n.is_u64(),
            (ConfigType::Number, Value::Number(_)) => true,
            (ConfigType::String, Value::String(_)) => true,
            (ConfigType::Array, Value::Array(_)) => true,
            (ConfigType::Object, Value::Object(_)) => true,
            _ => false,
        }
    }

    /// The lowercase name shown by `config docs`.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfigType::Boolean => "boolean",
            ConfigType::Integer => "integer",
            ConfigType::Number => "number",
            ConfigType::String => "string",
            ConfigType::Array => "array",
            ConfigType::Object => "object",
            ConfigType::Any => "any",
        }
    }
}

/// One public parameter of a component (`config docs` prints these).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigField {
    /// Parameter name as written in configs and `--*-params`.
    pub name: String,
    /// Expected JSON type.
    #[serde(rename = "type")]
    pub kind: ConfigType,
    /// Default value (`null` when the parameter has no default).
    #[serde(default)]
    pub default: serde_json::Value,
    /// What the parameter does.
    #[serde(default)]
    pub description: String,
    /// Whether the parameter must be given.
    #[serde(default)]
    pub required: bool,
}

impl ConfigField {
    /// A new optional field with the given default.
    pub fn new(
        name: impl Into<String>,
        kind: ConfigType,
        default: serde_json::Value,
        description: impl Into<String>,
    ) -> Self {
        ConfigField {
            name: name.into(),
            kind,
            default,
            description: description.into(),
            required: false,
        }
    }

    /// Marks the field as required.
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }
}

/// The declared parameters of one component.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConfigSchema {
    /// Fields in declaration order.
    #[serde(default)]
    pub fields: Vec<ConfigField>,
}

impl ConfigSchema {
    /// An empty schema (the component takes no parameters).
    pub fn empty() -> Self {
        ConfigSchema::default()
    }

    /// Adds a field (builder style).
    pub fn field(mut self, field: ConfigField) -> Self {
        self.fields.push(field);
        self
    }

    /// Looks a field up by name.
    pub fn get(&self, name: &str) -> Option<&ConfigField> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Checks `params` against the schema: unknown keys, wrong types and missing required fields
    /// are reported (one message per problem, naming the key).
    pub fn validate(&self, params: &serde_json::Map<String, serde_json::Value>) -> Vec<String> {
        let mut problems = Vec::new();
        for (key, value) in params {
            match self.get(key) {
                None => {
                    let known: Vec<&str> = self.fields.iter().map(|f| f.name.as_str()).collect();
                    problems.push(format!(
                        "unknown parameter `{key}` (known: {})",
                        if known.is_empty() {
                            "none".to_string()
                        } else {
                            known.join(", ")
                        }
                    ));
                }
                Some(field) if !field.kind.accepts(value) => problems.push(format!(
                    "parameter `{key}` expects {}, found {}",
                    field.kind.as_str(),
                    json_type_name(value)
                )),
                Some(_) => {}
            }
        }
        for field in self.fields.iter().filter(|f| f.required) {
            if params.get(&field.name).is_none_or(|v| v.is_null()) {
                problems.push(format!("missing required parameter `{}`", field.name));
            }
        }
        problems
    }

    /// `params` with every absent field filled from its default.
    pub fn with_defaults(
        &self,
        params: &serde_json::Map<String, serde_json::Value>,
    ) -> serde_json::Map<String, serde_json::Value> {
        let mut out = params.clone();
        for field in &self.fields {
            if !field.default.is_null() && out.get(&field.name).is_none_or(|v| v.is_null()) {
                out.insert(field.name.clone(), field.default.clone());
            }
        }
        out
    }
}

/// A short name for the JSON type of `value`, for error messages.
pub fn json_type_name(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// What a component says about itself: the registry, `list` and `config docs` read this.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComponentInfo {
    /// Component kind.
    pub kind: ComponentKind,
    /// Registry id (unique per kind within a run).
    pub id: String,
    /// One-line description.
    #[serde(default)]
    pub description: String,
    /// Public parameters.
    #[serde(default)]
    pub config_schema: ConfigSchema,
    /// Benchmark only: `true` for a harness-free benchmark (selected with harness id `none`).
    #[serde(default)]
    pub harness_free: bool,
    /// Benchmark only: whether the benchmark supports submission-artifact collection.
    #[serde(default = "default_true")]
    pub collect_artifacts: bool,
    /// Benchmark/harness: whether semantic attempts of one task may run in parallel.
    #[serde(default)]
    pub parallel_attempts_safe: bool,
    /// Extra, kind-specific facts (for example an environment provider's capabilities).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub extra: serde_json::Value,
    /// Analyzer only: its category, family, priority and defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analyzer: Option<super::AnalyzerInfo>,
    /// Harness only: whether it calls the run's model. A run of a harness that requires one
    /// with no model endpoint configured is refused before the first task, and its endpoint
    /// is checked then; a model-free harness is never asked for one.
    #[serde(default, skip_serializing_if = "ModelUse::is_undeclared")]
    pub model_use: ModelUse,
    /// Harness only: whether it is a reference harness (`oracle`), handed the task's
    /// [`super::ReferenceSolution`] when the benchmark offers one. Every other harness gets
    /// the prepared task without it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reads_reference_solution: bool,
    /// Whether the component's parameters are a typed struct whose validator the host runs
    /// at resolution (`sdk::PluginBuilder::with_params`; plugin API 0.1.2).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub validates_params: bool,
    /// Harness only: what it hands the agent besides the instruction — MCP servers, their
    /// headers, skills. A run that gives a harness inputs it cannot take (a task's
    /// `mcp_servers`, a `--skill`) is refused before the first task.
    #[serde(default, skip_serializing_if = "super::AgentInputSupport::is_none")]
    pub agent_inputs: super::AgentInputSupport,
}

/// Whether a harness calls the run's model ([`ComponentInfo::model_use`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelUse {
    /// Not said (plugins built before the field existed): the host checks nothing up front
    /// and the model gateway still refuses to guess a public endpoint.
    #[default]
    Undeclared,
    /// The harness never calls the model (a reference solution, a scripted agent).
    None,
    /// The harness calls the model for every task (directly or from inside the environment).
    Required,
}

impl ModelUse {
    /// `true` for [`ModelUse::Undeclared`].
    pub fn is_undeclared(&self) -> bool {
        *self == ModelUse::Undeclared
    }
}

fn default_true() -> bool {
    true
}

impl ComponentInfo {
    /// A component's id and description, for a plugin's registration: `PluginBuilder`'s
    /// `benchmark`, `harness`, ... set the kind, so it is not repeated here.
    pub fn named(id: impl Into<String>, description: impl Into<String>) -> Self {
        // Placeholder kind: every `PluginBuilder` registration overwrites it.
        ComponentInfo::new(ComponentKind::Benchmark, id, description)
    }

    /// A new description with an empty schema.
    pub fn new(kind: ComponentKind, id: impl Into<String>, description: impl Into<String>) -> Self {
        ComponentInfo {
            kind,
            id: id.into(),
            description: description.into(),
            config_schema: ConfigSchema::empty(),
            harness_free: false,
            collect_artifacts: true,
            parallel_attempts_safe: false,
            extra: serde_json::Value::Null,
            analyzer: None,
            model_use: ModelUse::Undeclared,
            reads_reference_solution: false,
            validates_params: false,
            agent_inputs: super::AgentInputSupport::default(),
        }
    }

    /// Declares the harness a reference harness: it is handed the task's reference solution
    /// ([`super::PreparedTask::reference_solution`]) (builder style).
    pub fn reading_reference_solution(mut self) -> Self {
        self.reads_reference_solution = true;
        self
    }

    /// Declares what the harness hands its agent besides the instruction (builder style).
    pub fn with_agent_inputs(mut self, support: super::AgentInputSupport) -> Self {
        self.agent_inputs = support;
        self
    }

    /// Declares whether the harness calls the run's model (builder style).
    pub fn with_model_use(mut self, model_use: ModelUse) -> Self {
        self.model_use = model_use;
        self
    }

    /// Declares the component an analyzer with these traits (builder style).
    pub fn with_analyzer(mut self, analyzer: super::AnalyzerInfo) -> Self {
        self.analyzer = Some(analyzer);
        self
    }

    /// Sets the schema (builder style).
    pub fn with_schema(mut self, schema: ConfigSchema) -> Self {
        self.config_schema = schema;
        self
    }
}
