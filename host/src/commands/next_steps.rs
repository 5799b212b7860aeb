//! What to run next after a run stopped early or left tasks unscored: this invocation's own
//! command line with `--reuse` (and `--rerun CLASS_OR_CODE`) in place of the flags that would
//! start a new run, shell-quoted and scrubbed of secrets — and, for tasks a rerun cannot help,
//! what to change instead.
//!
//! The rule ([`remedy`]): a rerun is suggested only for failures of the moment, which the
//! same command can get past — the model endpoint's (rate limits, server errors, timeouts:
//! class `model`), the infrastructure's (an environment that did not open or timed out, a
//! transfer, an install, a lost cluster job: class `environment`), a verifier's timeout, a
//! cancellation. A failure that follows from the input fails the same way every time, so it
//! gets its fix in words instead: an environment that cannot run the task (`unsupported`,
//! and on `host_process` a benchmark that cannot prepare it: "run it with `--env
//! sandbox`"), a task the benchmark cannot prepare, unset bindings, a verifier's error, and
//! every `host` failure (a plugin refused the task: its issue says what to fix). When a class
//! holds both kinds, `--rerun` names the transient codes rather than the class.

/// Flags of the invocation that the suggested command replaces; `true` when the flag takes
/// values (every following argument up to the next flag).
const REPLACED: [(&str, bool); 6] = [
    ("--reuse", true),
    ("--run-id", true),
    ("--rerun", true),
    ("--rerun-invalid", false),
    ("--dry-run", false),
    ("--no-checkpoint-resume", false),
];

/// `args` (argv, the binary first) with `--reuse RUN_ID` (or bare `--reuse` for a launch,
/// whose requests each reuse their latest run) and `--rerun CLASSES` when `rerun` is not
/// empty.
pub fn reuse_command(args: &[String], reuse: Option<&str>, rerun: &[String]) -> String {
    let mut kept: Vec<&str> = Vec::with_capacity(args.len() + 4);
    let mut skipping_values = false;
    for arg in args {
        if skipping_values && !arg.starts_with('-') {
            continue;
        }
        skipping_values = false;
        let name = arg.split('=').next().unwrap_or(arg);
        match REPLACED.iter().find(|(flag, _)| *flag == name) {
            Some((_, takes_values)) => skipping_values = *takes_values && !arg.contains('='),
            None => kept.push(arg),
        }
    }
    let mut words: Vec<String> = kept.iter().map(|arg| quote(arg)).collect();
    words.push("--reuse".to_string());
    if let Some(run_id) = reuse {
        words.push(quote(run_id));
    }
    if !rerun.is_empty() {
        words.push("--rerun".to_string());
        words.push(quote(&rerun.join(",")));
    }
    agentcompass_redact::scrub_text(&words.join(" "))
}

/// What the tasks not scored for one reason need before they can score.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remedy {
    /// Running them again can succeed: the failure was the moment's.
    Rerun,
    /// They fail the same way until this changes (a sentence; `{them}` stands for "it" or
    /// "them").
    Fix(&'static str),
    /// Nothing to say here: budget-skipped tasks have their own line.
    Nothing,
}

const ON_HOST_PROCESS: &str = "run {them} with `--env sandbox` (or `docker`): `host_process` \
     runs commands on this machine, without isolation, network policies or a task's own paths";
const UNSUPPORTED: &str = "run {them} in an environment that provides what the issue above \
     names (`agentcompass-host config docs env ID` lists what each one provides)";
const NOT_PREPARED: &str =
    "the benchmark could not prepare {them} in the environment; the issue above says why";
const BINDINGS: &str = "set the variables the issue above names";
const VERIFIER: &str = "the verifier failed on {them}; the issue above says why";
const REFUSED: &str = "a plugin or the host refused {them}; the issue above says what to fix";

/// What tasks not scored for `reason` (an issue code, or a model failure's detail) of
/// `class` need, in `environment` (the module's rule).
pub fn remedy(class: &str, reason: &str, environment: &str) -> Remedy {
    match (class, reason) {
        ("budget", _) => Remedy::Nothing,
        ("environment", "unsupported" | "prepare_failed") if environment == "host_process" => {
            Remedy::Fix(ON_HOST_PROCESS)
        }
        ("environment", "unsupported") => Remedy::Fix(UNSUPPORTED),
        ("environment", "prepare_failed") => Remedy::Fix(NOT_PREPARED),
        ("environment", "env_bindings_failed") => Remedy::Fix(BINDINGS),
        ("evaluation", "evaluate_timeout" | "verifier_timeout") => Remedy::Rerun,
        ("evaluation", _) => Remedy::Fix(VERIFIER),
        ("host", _) => Remedy::Fix(REFUSED),
        _ => Remedy::Rerun,
    }
}

/// The footer's advice on a run's tasks not scored.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Advice {
    /// What `--rerun` names: a class whose every reason is transient, else its transient
    /// codes.
    pub rerun: Vec<String>,
    /// One line per fix: `2 tasks not scored would fail the same way if run again
    /// (prepare_failed, unsupported): run them with ...`.
    pub fixes: Vec<String>,
}

/// The advice on tasks not scored, given as (class, reason, tasks), in `environment`.
pub fn advice(reasons: &[(String, String, u64)], environment: &str) -> Advice {
    let mut out = Advice::default();
    let mut fixes: Vec<(&'static str, u64, Vec<&str>)> = Vec::new();
    for (class, reason, tasks) in reasons {
        match remedy(class, reason, environment) {
            Remedy::Rerun => {
                let whole = reasons
                    .iter()
                    .filter(|(c, ..)| c == class)
                    .all(|(c, r, _)| remedy(c, r, environment) == Remedy::Rerun);
                let entry = if whole { class } else { reason };
                if !out.rerun.contains(entry) {
                    out.rerun.push(entry.clone());
                }
            }
            Remedy::Fix(fix) => match fixes.iter_mut().find(|(f, ..)| *f == fix) {
                Some((_, count, codes)) => {
                    *count += tasks;
                    codes.push(reason);
                }
                None => fixes.push((fix, *tasks, vec![reason])),
            },
            Remedy::Nothing => {}
        }
    }
    for (fix, count, mut codes) in fixes {
        codes.sort_unstable();
        codes.dedup();
        let (noun, them) = if count == 1 {
            ("task", "it")
        } else {
            ("tasks", "them")
        };
        out.fixes.push(format!(
            "{count} {noun} not scored would fail the same way if run again ({}): {}",
            codes.join(", "),
            fix.replace("{them}", them)
        ));
    }
    out
}

/// `word` as a POSIX shell reads it back: bare when it holds only safe characters, else in
/// single quotes.
pub(super) fn quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &[&str]) -> Vec<String> {
        text.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn the_command_reuses_the_run_in_place_of_a_new_one() {
        let invocation = args(&[
            "agentcompass-host",
            "run",
            "qa",
            "openai_chat",
            "m",
            "--benchmark-params",
            r#"{"path": "qa.jsonl"}"#,
            "--run-id",
            "first",
            "--rerun",
            "model",
            "environment",
            "--dry-run",
            "--model-api-key",
            "${KEY}",
        ]);
        assert_eq!(
            reuse_command(&invocation, Some("first"), &[]),
            "agentcompass-host run qa openai_chat m --benchmark-params '{\"path\": \"qa.jsonl\"}' \
             --model-api-key '${KEY}' --reuse first"
        );
        assert_eq!(
            reuse_command(&invocation, Some("first"), &args(&["model", "host"])),
            "agentcompass-host run qa openai_chat m --benchmark-params '{\"path\": \"qa.jsonl\"}' \
             --model-api-key '${KEY}' --reuse first --rerun model,host"
        );
        let launch = args(&[
            "agentcompass-host",
            "launch",
            "o.toml",
            "--reuse",
            "--rerun=model",
        ]);
        assert_eq!(
            reuse_command(&launch, None, &args(&["model"])),
            "agentcompass-host launch o.toml --reuse --rerun model"
        );
        assert_eq!(quote("it's"), r"'it'\''s'");
    }

    fn reasons(items: &[(&str, &str, u64)]) -> Vec<(String, String, u64)> {
        items
            .iter()
            .map(|(c, r, n)| (c.to_string(), r.to_string(), *n))
            .collect()
    }

    /// A rerun is suggested only where it can succeed (issue 58); the rest get their fix.
    #[test]
    fn a_rerun_is_suggested_only_for_failures_of_the_moment() {
        let mixed = reasons(&[
            ("environment", "environment_failed", 2),
            ("environment", "unsupported", 1),
            ("model", "rate limited", 3),
            ("host", "harness_failed", 3),
            ("budget", "budget_exhausted", 4),
        ]);
        let advice = advice(&mixed, "sandbox");
        assert_eq!(advice.rerun, ["environment_failed", "model"]);
        assert_eq!(
            advice.fixes,
            [
                "1 task not scored would fail the same way if run again (unsupported): run it in \
                 an environment that provides what the issue above names (`agentcompass-host \
                 config docs env ID` lists what each one provides)",
                "3 tasks not scored would fail the same way if run again (harness_failed): a \
                 plugin or the host refused them; the issue above says what to fix",
            ]
        );
        let host_process = reasons(&[
            ("environment", "prepare_failed", 1),
            ("environment", "unsupported", 1),
        ]);
        let advice = super::advice(&host_process, "host_process");
        assert!(advice.rerun.is_empty(), "{advice:?}");
        assert_eq!(advice.fixes.len(), 1);
        assert!(
            advice.fixes[0].starts_with(
                "2 tasks not scored would fail the same way if run again (prepare_failed, \
                 unsupported): run them with `--env sandbox`"
            ),
            "{}",
            advice.fixes[0]
        );
        let transient = reasons(&[
            ("environment", "environment_timeout", 1),
            ("evaluation", "evaluate_timeout", 1),
            ("cancelled", "cancelled", 1),
        ]);
        let advice = super::advice(&transient, "docker");
        assert_eq!(advice.rerun, ["environment", "evaluation", "cancelled"]);
        assert!(advice.fixes.is_empty());
    }
}
