//! Harbor's `harbor run` flags as the words of one native `agentcompass-host run`: the
//! task source and its filters, the agent and its model endpoint, attempts, concurrency,
//! retries, timeouts, resources, agent inputs and where results go. Every flag either has
//! its equivalent here or is refused by name (see `refusals`); nothing is dropped.

use serde_json::{Map, Value};

use super::agents::{self, Api};
use crate::cli::HarborRun;

/// The environment Harbor runs tasks in when `-e` is not given (here: when the tasks
/// define their environment).
pub const DEFAULT_ENV: &str = "docker";

/// The model id of a run whose agent calls no model (`oracle`).
const NO_MODEL: &str = "reference";

/// Harbor's environment types that exist here (the others are refused with this list).
const ENVIRONMENTS: &[&str] = &["docker", "podman", "sandbox", "host_process"];

/// Harbor's agent names with no harness here (refused with the list of those that have one).
const OTHER_HARBOR_AGENTS: &[&str] = &[
    "nop",
    "gemini-cli",
    "opencode",
    "aider",
    "goose",
    "openhands",
    "openhands-sdk",
    "cursor-cli",
    "copilot-cli",
    "kimi-cli",
    "kimi-code",
    "cline-cli",
    "swe-agent",
    "trae-agent",
    "code-puppy",
    "vibe",
    "nemo-agent",
    "pi",
    "openclaw",
    "mcode",
    "junie",
    "computer-1",
    "dspy-rlm",
    "grok-build",
    "devin",
    "hermes",
    "mimo",
    "muse-code",
    "antigravity-cli",
    "cortex-code",
    "rovodev-cli",
    "deerflow",
    "langgraph",
    "strands",
];

/// Harbor's trials at once when `-n` is not given (`n_concurrent_trials`).
const HARBOR_CONCURRENCY: u32 = 4;

/// Harbor's resource enforcement modes (`--cpus`, `--memory`).
const RESOURCE_MODES: &[&str] = &["auto", "limit", "request", "guarantee", "ignore"];

/// What a `harbor run` becomes.
#[derive(Debug, Clone, PartialEq)]
pub struct Native {
    /// The words after `agentcompass-host run`.
    pub words: Vec<String>,
    /// Harbor behaviour the user may not expect, said on stderr (never a dropped flag).
    pub notes: Vec<String>,
}

/// One line naming the Harbor flag and what was expected.
pub type Refusal = String;

/// The native `run` of `harbor`.
pub fn translate(harbor: &HarborRun) -> Result<Native, Refusal> {
    let mut native = Native {
        words: Vec::new(),
        notes: Vec::new(),
    };
    let (benchmark_params, single_task) = source(harbor)?;
    let (harness, api) = agent(harbor)?;
    let model = model(harbor, &harness, api)?;
    native
        .words
        .extend(["harbor".into(), harness.clone(), model.id]);
    push(
        &mut native.words,
        "--benchmark-params",
        Value::Object(benchmark_params).to_string(),
    );
    let env = match &harbor.env {
        Some(env) => env.clone(),
        None => default_env(harbor, &mut native.notes),
    };
    if !ENVIRONMENTS.contains(&env.as_str()) {
        return Err(format!(
            "harbor run: -e {env}: no such environment here; expected one of {}",
            ENVIRONMENTS.join(", ")
        ));
    }
    push(&mut native.words, "--env", env);
    native.words.extend(model.flags);
    selection(harbor, single_task, &mut native)?;
    counts(harbor, &mut native.words)?;
    timeouts(harbor, &mut native.words);
    resources(harbor, &mut native.words)?;
    agent_inputs(harbor, &harness, &mut native.words)?;
    outputs(harbor, &mut native.words);
    Ok(native)
}

/// Harbor's `docker` for tasks that define their environment (an `environment/` directory;
/// a registry dataset's tasks all do); the `sandbox` for a `-p` whose tasks define none,
/// which Harbor could not run without an image but which run here as they are.
fn default_env(harbor: &HarborRun, notes: &mut Vec<String>) -> String {
    let Some(path) = &harbor.path else {
        return DEFAULT_ENV.into();
    };
    let defines = |task: &std::path::Path| task.join("environment").is_dir();
    let any = defines(path)
        || std::fs::read_dir(path)
            .into_iter()
            .flatten()
            .flatten()
            .any(|entry| defines(&entry.path()));
    if any {
        return DEFAULT_ENV.into();
    }
    notes.push(format!(
        "no task under {} has an environment/ directory: they run in the sandbox (-e to choose)",
        path.display()
    ));
    "sandbox".into()
}

/// `--name value`.
fn push(words: &mut Vec<String>, name: &str, value: impl ToString) {
    words.push(name.to_string());
    words.push(value.to_string());
}

/// The benchmark parameters of `-p` or `-d`, and whether `-p` names one task directory.
fn source(harbor: &HarborRun) -> Result<(Map<String, Value>, bool), Refusal> {
    let mut params = Map::new();
    match (&harbor.path, &harbor.dataset) {
        (Some(_), Some(_)) => {
            return Err("harbor run: -p and -d: expected one task source, found both".into())
        }
        (None, None) => {
            return Err(
                "harbor run: expected the tasks: -p PATH (a task directory or a directory of \
                 them) or -d NAME@VERSION (a registry dataset), found neither"
                    .into(),
            )
        }
        (Some(path), None) => {
            if harbor.registry_path.is_some() || harbor.registry_url.is_some() {
                return Err(
                    "harbor run: --registry-path/--registry-url: expected with -d, \
                            found with -p"
                        .into(),
                );
            }
            params.insert("path".into(), path.display().to_string().into());
        }
        (None, Some(dataset)) => {
            params.insert("dataset".into(), dataset.clone().into());
            if let Some(registry) = &harbor.registry_path {
                params.insert(
                    "registry_path".into(),
                    registry.display().to_string().into(),
                );
            }
            if let Some(url) = &harbor.registry_url {
                params.insert("registry_url".into(), url.clone().into());
            }
        }
    }
    let single = harbor
        .path
        .as_ref()
        .is_some_and(|path| path.join("task.toml").is_file());
    Ok((params, single))
}

/// The harness of `-a` (Harbor's default: `oracle`).
fn agent(harbor: &HarborRun) -> Result<(String, Api), Refusal> {
    let name = harbor.agent.as_deref().unwrap_or("oracle");
    if name.contains(':') {
        return Err(format!(
            "harbor run: -a {name}: Python agent classes do not load here; write a harness \
             plugin (`agentcompass-host plugin new`) or use one of {}",
            agents::harbor_names()
        ));
    }
    if OTHER_HARBOR_AGENTS.contains(&name) {
        return Err(format!(
            "harbor run: -a {name}: no harness here runs this agent; Harbor agents here: {} \
             (and every harness of `agentcompass-host list harness`)",
            agents::harbor_names()
        ));
    }
    // A name Harbor does not know is one of this host's harness ids (resolution refuses an
    // unknown one with the list).
    Ok(agents::harness(name, &[name.to_string()]).unwrap_or((name.to_string(), Api::OpenAiChat)))
}

/// The model id and the native flags of its endpoint.
struct Model {
    id: String,
    flags: Vec<String>,
}

/// `-m`, `--base-url`, `--api-key-name`, `--api-format` as the native model flags.
fn model(harbor: &HarborRun, harness: &str, api: Api) -> Result<Model, Refusal> {
    let given = match harbor.models.as_slice() {
        [] if api == Api::None => {
            return Ok(Model {
                id: NO_MODEL.into(),
                flags: Vec::new(),
            })
        }
        [] => {
            return Err(format!(
                "harbor run: -m: agent {harness} calls a model: expected -m PROVIDER/MODEL, \
                 found none"
            ))
        }
        [one] => one.clone(),
        many => {
            return Err(format!(
                "harbor run: -m: expected one model, found {} (one request per model: run \
                 once per model, or `agentcompass-host launch` a file of requests)",
                many.len()
            ))
        }
    };
    let known = agents::provider(&given);
    let (id, base, key) = match (known, &harbor.base_url) {
        (Some((name, url, key)), base) => (
            name.to_string(),
            base.clone().unwrap_or_else(|| url.to_string()),
            Some(key),
        ),
        (None, Some(base)) => (given.clone(), base.clone(), None),
        (None, None) => {
            return Err(format!(
                "harbor run: -m {given}: expected a known provider prefix (anthropic/, \
                 openai/, openrouter/, deepseek/, dashscope/) or --base-url URL, found neither"
            ))
        }
    };
    let api = match &harbor.api_format {
        Some(format) => agents::api_format(format).ok_or_else(|| {
            format!(
                "harbor run: --api-format {format}: expected openai_chat_completions, \
                 openai_responses or anthropic_messages"
            )
        })?,
        None if given.starts_with("anthropic/") => Api::Anthropic,
        None => api,
    };
    let mut flags = Vec::new();
    push(&mut flags, "--model-base-url", base);
    let key = harbor.api_key_name.as_deref().or(key);
    if let Some(key) = key {
        push(&mut flags, "--model-api-key", format!("${{{key}}}"));
    }
    if let Some(protocol) = api.protocol() {
        push(&mut flags, "--model-api-protocol", protocol);
    }
    Ok(Model { id, flags })
}

/// `-i`, `-x`, `-l` (not for one task directory, as in Harbor).
fn selection(harbor: &HarborRun, single_task: bool, native: &mut Native) -> Result<(), Refusal> {
    let filters =
        !harbor.include.is_empty() || !harbor.exclude.is_empty() || harbor.n_tasks.is_some();
    if single_task && filters {
        native.notes.push(
            "-i/-x/-l select among a dataset's tasks; -p names one task directory, which \
             runs (as in Harbor)"
                .into(),
        );
        return Ok(());
    }
    for glob in &harbor.include {
        push(&mut native.words, "--include-task", glob);
    }
    for glob in &harbor.exclude {
        push(&mut native.words, "--exclude-task", glob);
    }
    if let Some(n) = harbor.n_tasks {
        if n == 0 {
            return Err("harbor run: -l: expected at least 1, found 0".into());
        }
        push(&mut native.words, "--n-tasks", n);
    }
    Ok(())
}

/// `-k`, `-n`, `-r` and the retry filters.
fn counts(harbor: &HarborRun, words: &mut Vec<String>) -> Result<(), Refusal> {
    for (flag, value, native) in [
        ("-k", harbor.n_attempts, "-k"),
        (
            "-n",
            Some(harbor.n_concurrent.unwrap_or(HARBOR_CONCURRENCY)),
            "--task-concurrency",
        ),
    ] {
        match value {
            Some(0) => return Err(format!("harbor run: {flag}: expected at least 1, found 0")),
            Some(n) => push(words, native, n),
            None => {}
        }
    }
    if let Some(retries) = harbor.max_retries {
        push(words, "--max-retries", retries);
    }
    if let Some(flag) = [
        ("--retry-include", &harbor.retry_include),
        ("--retry-exclude", &harbor.retry_exclude),
    ]
    .into_iter()
    .find_map(|(flag, list)| (!list.is_empty()).then_some(flag))
    {
        return Err(format!(
            "harbor run: {flag} has no equivalent here: a failure's class decides its retry \
             (environment and host failures are retried up to -r times; agent timeouts, \
             verifier failures and model refusals never, as Harbor's default exclusions); \
             `agentcompass-host run --retry-pattern-list JSON` makes errors whose message \
             matches retryable"
        ));
    }
    Ok(())
}

/// The four multipliers; Harbor's common one also scales setup and build (upstream's, here,
/// only the run and evaluation phases, so it is given for them explicitly).
fn timeouts(harbor: &HarborRun, words: &mut Vec<String>) {
    let common = harbor.timeout_multiplier.filter(|x| *x != 1.0);
    for (native, value) in [
        ("--timeout-multiplier", common),
        (
            "--agent-timeout-multiplier",
            harbor.agent_timeout_multiplier,
        ),
        (
            "--verifier-timeout-multiplier",
            harbor.verifier_timeout_multiplier,
        ),
        (
            "--agent-setup-timeout-multiplier",
            harbor.agent_setup_timeout_multiplier.or(common),
        ),
        (
            "--environment-build-timeout-multiplier",
            harbor.environment_build_timeout_multiplier.or(common),
        ),
    ] {
        if let Some(value) = value {
            push(words, native, value);
        }
    }
}

/// `--cpus`, `--memory`, `--override-*` and `--ek`.
fn resources(harbor: &HarborRun, words: &mut Vec<String>) -> Result<(), Refusal> {
    for (flag, mode, native) in [
        ("--cpus", &harbor.cpus, "--cpus-mode"),
        ("--memory", &harbor.memory, "--memory-mode"),
    ] {
        if let Some(mode) = mode {
            if !RESOURCE_MODES.contains(&mode.as_str()) {
                return Err(format!(
                    "harbor run: {flag} {mode}: expected one of {}",
                    RESOURCE_MODES.join(", ")
                ));
            }
            push(words, native, mode);
        }
    }
    if let Some(cpus) = harbor.override_cpus {
        push(words, "--override-cpus", cpus);
    }
    for (native, value) in [
        ("--override-memory-mb", harbor.override_memory_mb),
        ("--override-storage-mb", harbor.override_storage_mb),
        ("--override-gpus", harbor.override_gpus),
    ] {
        if let Some(value) = value {
            push(words, native, value);
        }
    }
    if !harbor.environment_kwargs.is_empty() {
        let mut params = Map::new();
        for pair in &harbor.environment_kwargs {
            let (key, value) = pair.split_once('=').ok_or_else(|| {
                format!("harbor run: --ek {pair}: expected KEY=VALUE, found no `=`")
            })?;
            let value = serde_json::from_str(value).unwrap_or_else(|_| Value::from(value));
            params.insert(key.to_string(), value);
        }
        push(words, "--env-params", Value::Object(params));
    }
    Ok(())
}

/// `--effort LEVEL` as the agent CLI's own flag, as Harbor passes it (`extra_args`).
fn effort_kwarg(harness: &str, effort: &str) -> Result<String, Refusal> {
    let args = match harness {
        "claude_code" => vec!["--effort".to_string(), effort.to_string()],
        "codex" => vec!["-c".to_string(), format!("model_reasoning_effort={effort}")],
        other => {
            return Err(format!(
                "harbor run: --effort: agent {other} takes no reasoning effort here (claude-code \
                 and codex do); give the agent's own option with --ak"
            ))
        }
    };
    Ok(format!("extra_args={}", serde_json::json!(args)))
}

/// `--ak`, `--effort`, `--ae`, `--mcp-config`, `--skill`, `--extra-instruction-path`.
fn agent_inputs(harbor: &HarborRun, harness: &str, words: &mut Vec<String>) -> Result<(), Refusal> {
    for kwarg in &harbor.agent_kwargs {
        push(words, "--agent-kwarg", kwarg);
    }
    if let Some(effort) = &harbor.effort {
        push(words, "--agent-kwarg", effort_kwarg(harness, effort)?);
    }
    for variable in &harbor.agent_env {
        push(words, "--agent-env", variable);
    }
    for file in &harbor.mcp_configs {
        push(words, "--mcp-config", file.display());
    }
    for skill in &harbor.skills {
        push(words, "--skill", skill);
    }
    for file in &harbor.extra_instruction_path {
        push(words, "--extra-instruction-path", file.display());
    }
    Ok(())
}

/// `-o`, `--job-name`, `--no-delete`, `-q`, `--debug`.
fn outputs(harbor: &HarborRun, words: &mut Vec<String>) {
    if let Some(dir) = &harbor.jobs_dir {
        push(words, "--results-dir", dir.display());
    }
    if let Some(name) = &harbor.job_name {
        push(words, "--run-id", name);
    }
    if harbor.no_delete && !harbor.delete {
        words.push("--keep-environment".into());
    }
    if harbor.quiet {
        push(words, "--progress", "none");
    }
    if harbor.debug {
        push(words, "--log-level", "DEBUG");
    }
}
