//! What the model is told: the system prompt and the nudge after a reply without a tool call.

use super::settings::Settings;

/// The user turn sent after a reply that called no tool.
pub(crate) const NUDGE: &str = "Your last reply called no tool. Use the `bash` tool to work on \
the task, or call `done` when the task is complete.";

/// The system prompt: how to work, the tools, the limits, then the task's own system prompt.
pub(super) fn system_prompt(
    settings: &Settings,
    workdir: Option<&str>,
    task_system: &[String],
) -> String {
    let place = workdir.map_or_else(
        || "the environment's default working directory".to_string(),
        |dir| format!("`{dir}`"),
    );
    let mut prompt = format!(
        "You are an autonomous agent solving a task inside a Linux environment. You act only \
         through tools:\n\
         - `bash`: runs one command with `bash -c` in {place} and returns its exit code and \
         output (stdout, then stderr; at most {chars} characters, long output keeps its head \
         and tail). Every call starts a fresh shell: `cd` and variables do not persist, so \
         chain commands with `&&` or use absolute paths. A command is stopped after {timeout} \
         seconds; never start interactive programs (editors, pagers, REPLs) - use \
         non-interactive flags instead.\n\
         - `done`: call it once the task is complete, with an optional `summary` of what you \
         did (put the answer there when the task asks for one).\n\
         Work step by step: inspect, act, then verify the result before calling `done`. Nobody \
         will answer questions; decide yourself. You have at most {turns} replies.",
        chars = settings.max_output_chars,
        timeout = settings.command_timeout_seconds,
        turns = settings.max_turns,
    );
    for extra in task_system.iter().filter(|s| !s.trim().is_empty()) {
        prompt.push_str("\n\nTask instructions:\n");
        prompt.push_str(extra);
    }
    prompt
}
