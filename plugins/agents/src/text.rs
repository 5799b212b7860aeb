//! Text helpers: output truncation (head and tail kept) and secret scrubbing.

use agentcompass_plugin_api::contracts::ExecResult;
use agentcompass_plugin_api::sdk::Ctx;

/// The placeholder that replaces a secret.
pub(crate) const REDACTED: &str = agentcompass_plugin_api::contracts::REDACTED;

/// Secrets shorter than this are not scrubbed (replacing a two-letter "key" everywhere would
/// mangle output; such a value is no real secret).
const MIN_SECRET_LEN: usize = 6;

/// `text` cut to at most about `max_chars` characters, keeping the head and the tail with a
/// marker saying how much was left out in between.
pub(crate) fn truncate_middle(text: &str, max_chars: usize) -> String {
    let total = text.chars().count();
    if total <= max_chars {
        return text.to_string();
    }
    let head = max_chars / 2;
    let tail = max_chars - head;
    let omitted = total - head - tail;
    let head_end = byte_offset(text, head);
    let tail_start = byte_offset(text, total - tail);
    format!(
        "{}\n[... {omitted} characters truncated ...]\n{}",
        &text[..head_end],
        &text[tail_start..]
    )
}

/// The last `max_chars` characters of `text`.
pub(crate) fn tail(text: &str, max_chars: usize) -> &str {
    let total = text.chars().count();
    if total <= max_chars {
        return text;
    }
    &text[byte_offset(text, total - max_chars)..]
}

/// The byte offset of the `n`th character (or the end).
fn byte_offset(text: &str, n: usize) -> usize {
    text.char_indices().nth(n).map_or(text.len(), |(i, _)| i)
}

/// `text` with every occurrence of `secret` replaced by [`REDACTED`].
pub(crate) fn scrub(text: &str, secret: &str) -> String {
    if secret.len() < MIN_SECRET_LEN || !text.contains(secret) {
        text.to_string()
    } else {
        text.replace(secret, REDACTED)
    }
}

/// `outcome` with the host's known secrets scrubbed from both streams ([`Ctx::scrub`]), then
/// `secret` (the model key this harness holds). Every command's output passes through here
/// before anything cuts it short: a secret cut in half is no longer recognisable.
pub(crate) async fn scrubbed_outcome(ctx: &Ctx, outcome: ExecResult, secret: &str) -> ExecResult {
    let stdout = scrub(&ctx.scrub(&outcome.stdout).await, secret);
    let stderr = scrub(&ctx.scrub(&outcome.stderr).await, secret);
    ExecResult {
        stdout,
        stderr,
        ..outcome
    }
}

/// `text` folded onto one line and cut to its last `max_chars` characters (for issue messages).
pub(crate) fn one_line_tail(text: &str, max_chars: usize) -> String {
    let folded = text.split_whitespace().collect::<Vec<_>>().join(" ");
    tail(&folded, max_chars).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_head_and_tail() {
        assert_eq!(truncate_middle("short", 10), "short");
        let text: String = (0..100)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let cut = truncate_middle(&text, 10);
        assert!(cut.starts_with("abcde\n"), "{cut}");
        assert!(cut.ends_with(&text[95..]), "{cut}");
        assert!(cut.contains("[... 90 characters truncated ...]"), "{cut}");
        // Multi-byte characters are never split.
        let wide = "é".repeat(50);
        let cut = truncate_middle(&wide, 7);
        assert!(cut.starts_with("ééé\n") && cut.ends_with("éééé"), "{cut}");
        assert_eq!(tail("héllo", 3), "llo");
        assert_eq!(tail("hi", 3), "hi");
    }

    #[test]
    fn scrubbing_and_one_line() {
        assert_eq!(scrub("key=sk-abcdef!", "sk-abcdef"), "key=********!");
        assert_eq!(scrub("a b a", "a"), "a b a");
        assert_eq!(one_line_tail("a\n b\tc  ", 10), "a b c");
        assert_eq!(one_line_tail("0123456789abc", 3), "abc");
    }
}
