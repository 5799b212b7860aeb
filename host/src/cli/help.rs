//! The text after `run --help` and `launch --help` (examples, exit codes) and the man page's
//! extra sections, all from [`EXIT_CODES`].

use agentcompass_host::exit_code::EXIT_CODES;

/// `run --help`'s epilogue: two examples, then the exit codes.
pub fn run_after_help() -> String {
    after_help(&[
        (
            "The bundled Harbor tasks' reference solutions in a sandbox (no model)",
            "agentcompass-host run harbor oracle reference \\\n      \
             --benchmark-params '{\"path\": \"examples/harbor\"}' --env sandbox",
        ),
        (
            "A QA file against an OpenAI-compatible endpoint, 8 tasks at a time",
            "agentcompass-host run qa openai_chat my-model \\\n      \
             --benchmark-params '{\"path\": \"qa.jsonl\"}' \\\n      \
             --model-base-url http://127.0.0.1:8000/v1 --model-api-key '${OPENAI_API_KEY}' \\\n      \
             --task-concurrency 8",
        ),
    ])
}

/// `launch --help`'s epilogue: two examples, then the exit codes.
pub fn launch_after_help() -> String {
    after_help(&[
        (
            "Every request of an orchestration file",
            "agentcompass-host launch orchestration.toml",
        ),
        (
            "The same again, rerunning only the tasks the model endpoint failed",
            "agentcompass-host launch orchestration.toml --reuse --rerun model",
        ),
    ])
}

fn after_help(examples: &[(&str, &str)]) -> String {
    let mut out = String::from("Examples:\n");
    for (what, command) in examples {
        out.push_str(&format!("  # {what}\n  {command}\n"));
    }
    out.push_str("\nExit codes:\n");
    let options = textwrap::Options::new(80)
        .initial_indent("       ")
        .subsequent_indent("       ");
    for (code, meaning) in EXIT_CODES {
        let wrapped = textwrap::fill(meaning, &options);
        out.push_str(&format!("  {code:>3}  {}\n", wrapped.trim_start()));
    }
    out
}

/// The man page's EXIT STATUS section, in roff.
pub fn exit_status_roff() -> String {
    let mut out = String::from(".SH \"EXIT STATUS\"\n");
    for (code, meaning) in EXIT_CODES {
        out.push_str(&format!(".TP\n\\fB{code}\\fR\n{}\n", roff_text(meaning)));
    }
    out
}

/// `text` safe as a roff text line (backslashes doubled, no leading control character).
fn roff_text(text: &str) -> String {
    let escaped = text.replace('\\', "\\\\").replace('-', "\\-");
    if escaped.starts_with(['.', '\'']) {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epilogues_end_with_every_exit_code() {
        for text in [run_after_help(), launch_after_help()] {
            assert!(text.starts_with("Examples:\n  # "), "{text}");
            for (code, _) in EXIT_CODES {
                assert!(text.contains(&format!("\n  {code:>3}  ")), "{code}: {text}");
            }
        }
        let roff = exit_status_roff();
        assert!(
            roff.starts_with(".SH \"EXIT STATUS\"\n.TP\n\\fB0\\fR\n"),
            "{roff}"
        );
        assert!(
            roff.contains("\\fB130\\fR\ncancelled by the user"),
            "{roff}"
        );
        assert!(roff.contains("\\-\\-fail\\-under"), "{roff}");
    }
}
