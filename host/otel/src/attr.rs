//! The attribute keys written: OpenInference's and the GenAI semantic conventions' (the ones
//! `harbor-atif2otel` writes for the same ATIF fields), and ours under `agentcompass.`.

/// OpenInference: what a span is (`LLM`, `TOOL`, `AGENT`, `CHAIN`).
pub const SPAN_KIND: &str = "openinference.span.kind";
/// [`SPAN_KIND`] of a model call.
pub const LLM: &str = "LLM";
/// [`SPAN_KIND`] of a tool call.
pub const TOOL: &str = "TOOL";
/// [`SPAN_KIND`] of an agent's run.
pub const AGENT: &str = "AGENT";
/// [`SPAN_KIND`] of the run, a task, an attempt and the other phases.
pub const CHAIN: &str = "CHAIN";

/// OpenInference: the model.
pub const LLM_MODEL: &str = "llm.model_name";
/// OpenInference: prompt tokens (cached ones included).
pub const LLM_PROMPT_TOKENS: &str = "llm.token_count.prompt";
/// OpenInference: completion tokens.
pub const LLM_COMPLETION_TOKENS: &str = "llm.token_count.completion";
/// OpenInference: prompt + completion tokens.
pub const LLM_TOTAL_TOKENS: &str = "llm.token_count.total";
/// OpenInference: cached prompt tokens.
pub const LLM_CACHE_READ: &str = "llm.token_count.prompt_details.cache_read";
/// OpenInference: cost in US dollars.
pub const LLM_COST: &str = "llm.cost.total";
/// OpenInference: the tool.
pub const TOOL_NAME: &str = "tool.name";
/// OpenInference: the tool call's arguments (JSON; contents only).
pub const TOOL_PARAMETERS: &str = "tool.parameters";
/// OpenInference: the input (contents only).
pub const INPUT_VALUE: &str = "input.value";
/// OpenInference: the input's MIME type.
pub const INPUT_MIME: &str = "input.mime_type";
/// OpenInference: the output (contents only).
pub const OUTPUT_VALUE: &str = "output.value";
/// OpenInference: the model's reasoning (contents only).
pub const REASONING: &str = "metadata.reasoning_content";
/// OpenInference: the agent.
pub const AGENT_NAME: &str = "agent.name";
/// `harbor-atif2otel`: the agent's version.
pub const AGENT_VERSION: &str = "agent.version";
/// OpenInference: the session (the ATIF trajectory's `session_id`).
pub const SESSION_ID: &str = "session.id";

/// GenAI: `chat`, `execute_tool`, `invoke_agent`.
pub const GEN_AI_OPERATION: &str = "gen_ai.operation.name";
/// GenAI: the model asked for.
pub const GEN_AI_REQUEST_MODEL: &str = "gen_ai.request.model";
/// GenAI: input tokens.
pub const GEN_AI_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
/// GenAI: output tokens.
pub const GEN_AI_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
/// GenAI: cached input tokens.
pub const GEN_AI_CACHE_READ: &str = "gen_ai.usage.cache_read.input_tokens";
/// GenAI: the tool.
pub const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
/// GenAI: the tool call's id.
pub const GEN_AI_TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
/// GenAI: the agent.
pub const GEN_AI_AGENT_NAME: &str = "gen_ai.agent.name";

/// The run's id.
pub const RUN_ID: &str = "agentcompass.run_id";
/// The benchmark's id.
pub const BENCHMARK: &str = "agentcompass.benchmark";
/// The harness's id.
pub const HARNESS: &str = "agentcompass.harness";
/// The environment's id.
pub const ENVIRONMENT: &str = "agentcompass.environment";
/// A run's or an attempt's status.
pub const STATUS: &str = "agentcompass.status";
/// The task's id.
pub const TASK_ID: &str = "agentcompass.task_id";
/// A task's number of attempts.
pub const ATTEMPTS: &str = "agentcompass.attempts";
/// The attempt's number.
pub const ATTEMPT: &str = "agentcompass.attempt";
/// The attempt's runtime retries.
pub const RETRY_COUNT: &str = "agentcompass.retry_count";
/// The attempt's number of issues.
pub const ISSUES: &str = "agentcompass.issues";
/// The attempt's `reward` metric.
pub const REWARD: &str = "agentcompass.reward";
/// Each metric of the attempt: `agentcompass.metric.<id>`.
pub const METRIC_PREFIX: &str = "agentcompass.metric.";
/// The attempt's model requests.
pub const REQUESTS: &str = "agentcompass.usage.requests";
/// A phase's name as recorded (`open_environment`, `run_harness`, `evaluate`, ...).
pub const PHASE: &str = "agentcompass.phase";
/// A multi-step task's step.
pub const STEP: &str = "agentcompass.step";
/// The ATIF step a model or tool call comes from.
pub const ATIF_STEP: &str = "agentcompass.atif_step";
/// A tool call's exit code.
pub const EXIT_CODE: &str = "agentcompass.tool.exit_code";
/// Whether a tool call timed out.
pub const TIMED_OUT: &str = "agentcompass.tool.timed_out";
