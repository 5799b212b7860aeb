//! What the benchmark runs in the environment itself: the directories and files Harbor's
//! scripts use, its checked commands (as `root` when the task names users), optional reads and
//! output tails. A leaf of the benchmark and its verifier.

use agentcompass_plugin_api::contracts::ExecRequest;
use agentcompass_plugin_api::sdk::{Ctx, SessionRef};
use agentcompass_plugin_api::{Error, Result};

use crate::names::ID;

/// Where the verifier's stdout is saved in the environment.
pub(crate) const TEST_STDOUT: &str = "/logs/verifier/test-stdout.txt";
/// Where the verifier's stderr is saved in the environment.
pub(crate) const TEST_STDERR: &str = "/logs/verifier/test-stderr.txt";

/// The in-environment directories Harbor tasks rely on.
pub(crate) const LOG_DIRS: &str = "/logs/verifier /logs/agent /logs/artifacts";

/// Characters of verifier output kept in the result.
pub(crate) const OUTPUT_TAIL_CHARS: usize = 4000;

/// `command`, then the `/logs` directories opened to every user when the task names users
/// (`internal_user` is set: the agent's and the verifier's users write there; Harbor makes
/// them mode 777).
pub(crate) fn open_logs(command: String, internal_user: Option<&str>) -> String {
    match internal_user {
        Some(_) => format!("{command} && chmod 777 {LOG_DIRS}"),
        None => command,
    }
}

/// The last `max` characters of `text` (scrub it with `Ctx::scrub` first: a secret the cut
/// falls into is then already masked whole).
pub(crate) fn tail(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        text.to_string()
    } else {
        text.chars().skip(count - max).collect()
    }
}

/// Runs `command` and fails (as an environment error) unless it succeeds.
pub(crate) async fn run_checked(
    ctx: &Ctx,
    env: &SessionRef,
    command: &str,
    what: &str,
    user: Option<&str>,
) -> Result<()> {
    let mut request = ExecRequest::shell(command).timeout(120.0);
    request.user = user.map(str::to_string);
    let out = env.exec(request).await?;
    if out.success() {
        Ok(())
    } else {
        Err(Error::environment(format!(
            "{ID}: {what} failed (exit {}): {}",
            out.returncode,
            tail(ctx.scrub(out.stderr.trim()).await.as_str(), 500)
        )))
    }
}

/// Reads a file if it exists (`None` when it does not).
pub(crate) async fn read_optional(env: &SessionRef, path: &str) -> Result<Option<String>> {
    if env.is_file(path).await? {
        env.read_text(path).await.map(Some)
    } else {
        Ok(None)
    }
}
