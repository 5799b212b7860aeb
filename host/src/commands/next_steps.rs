//! What to run next after a run stopped early or left tasks unscored: this invocation's own
//! command line with `--reuse` (and `--rerun CLASS`) in place of the flags that would start a
//! new run, shell-quoted and scrubbed of secrets.

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

/// `word` as a POSIX shell reads it back: bare when it holds only safe characters, else in
/// single quotes.
fn quote(word: &str) -> String {
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
}
