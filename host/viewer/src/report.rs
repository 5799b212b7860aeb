//! `agentcompass-host report`: one self-contained HTML file of a run — the viewer's own front
//! end (inline CSS and JS, allowed by their sha256 in the page's CSP, which also forbids every
//! network request) reading an embedded JSON data block instead of the HTTP API.
//!
//! The data block holds the run page (the `/api/run` body), every task's row (compact arrays),
//! and the detail (attempts, results, trajectories, manifests) of a bounded set of tasks: every
//! task when the run has at most [`ReportLimits::max_trajectories`] tasks, else the tasks that
//! were not correct first (wrong, error, fatal, not evaluated), then correct ones, until that
//! many are in; a string longer than [`ReportLimits::max_text_bytes`] keeps its head and tail,
//! and details stop being added once [`ReportLimits::max_detail_bytes`] are in. It is written
//! as it is read (one task detail in memory at a time): memory is O(tasks × a few bytes).

use std::io::{self, Write};
use std::path::Path;

use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::assets::{APP_CSS, APP_JS};
use crate::charts::run_charts;
use crate::error::ViewerError;
use crate::index::IndexBuilder;
use crate::paths::Root;
use crate::runs;
use crate::task;
use crate::tasks::{list_task_dirs, read_facts, State};

/// The `format` field of the data block.
pub const REPORT_FORMAT: &str = "agentcompass-report";
/// The data block's version.
pub const REPORT_VERSION: u32 = 1;

/// How much of a run a report holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportLimits {
    /// At most this many task details (trajectories), tasks that were not correct first.
    pub max_trajectories: usize,
    /// A longer string in a task detail keeps its first 3/4 and last 1/4 of this many bytes.
    pub max_text_bytes: usize,
    /// Task details stop being added once their JSON reaches this many bytes.
    pub max_detail_bytes: u64,
}

impl Default for ReportLimits {
    fn default() -> ReportLimits {
        ReportLimits {
            max_trajectories: 500,
            max_text_bytes: 64 * 1024,
            max_detail_bytes: 64 * 1024 * 1024,
        }
    }
}

/// What went into a report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReportStats {
    /// Tasks in the task table (every task of the run).
    pub tasks: usize,
    /// Tasks whose detail (attempts, trajectory) is included.
    pub details: usize,
    /// Tasks whose detail is left out by the limits.
    pub omitted: usize,
    /// Strings shortened by [`ReportLimits::max_text_bytes`].
    pub truncated_strings: usize,
    /// Bytes written.
    pub bytes: u64,
}

/// Writes the report of the run at `run_dir` to `out`; `generator` names the program (for the
/// page's footer), `generated_at` is an RFC 3339 time.
pub fn write_report(
    run_dir: &Path,
    limits: &ReportLimits,
    generator: &str,
    generated_at: &str,
    out: impl Write,
) -> Result<ReportStats, ViewerError> {
    let dir = run_dir
        .canonicalize()
        .map_err(|e| ViewerError::NotFound(format!("{}: {e}", run_dir.display())))?;
    if !dir.join("run_info.json").is_file() {
        return Err(ViewerError::NotFound(format!(
            "{} is not a run directory (no run_info.json)",
            run_dir.display()
        )));
    }
    let parent = dir.parent().unwrap_or(&dir);
    let root = Root::new(parent).map_err(|e| ViewerError::Internal(e.to_string()))?;
    let mut counter = Counting {
        inner: out,
        bytes: 0,
    };
    let report = Report {
        root: &root,
        dir: &dir,
        limits,
        generator,
        generated_at,
    };
    let mut stats = report
        .write_document(&mut counter)
        .map_err(|e| ViewerError::Internal(format!("cannot write the report: {e}")))?;
    stats.bytes = counter.bytes;
    Ok(stats)
}

/// What one report is written from.
struct Report<'a> {
    /// The results root the run is in.
    root: &'a Root,
    /// The run directory (canonical).
    dir: &'a Path,
    limits: &'a ReportLimits,
    /// The program, for the page's footer.
    generator: &'a str,
    /// An RFC 3339 time.
    generated_at: &'a str,
}

impl Report<'_> {
    /// The whole page: the viewer's app around the data block.
    fn write_document(&self, out: &mut impl Write) -> io::Result<ReportStats> {
        let csp = format!(
            "default-src 'none'; script-src '{}'; style-src '{}'; img-src data:; \
             object-src 'none'; base-uri 'none'; form-action 'none'",
            csp_hash(APP_JS),
            csp_hash(APP_CSS)
        );
        write!(
            out,
            "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <meta name=\"color-scheme\" content=\"light dark\">\n\
             <meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n\
             <title>agentcompass report</title>\n<link rel=\"icon\" href=\"data:,\">\n\
             <style>{APP_CSS}</style>\n</head>\n<body>\n\
             <header id=\"topbar\">\n  <a class=\"brand\" href=\"#/\">agentcompass</a>\n  \
             <nav id=\"crumbs\"></nav>\n  <span id=\"live\" class=\"live\" hidden>live</span>\n\
             </header>\n<div id=\"report-banner\" class=\"banner\"></div>\n\
             <main id=\"app\"><p class=\"muted\">Loading…</p></main>\n\
             <noscript>This report needs JavaScript.</noscript>\n\
             <script type=\"application/json\" id=\"report-data\">"
        )?;
        let mut data = HtmlSafe(&mut *out);
        let stats = self.write_data(&mut data)?;
        write!(
            out,
            "</script>\n<script>{APP_JS}</script>\n</body>\n</html>\n"
        )?;
        Ok(stats)
    }

    /// The data block (JSON; the caller escapes it for the HTML around it).
    fn write_data(&self, out: &mut impl Write) -> io::Result<ReportStats> {
        let (dir, limits) = (self.dir, self.limits);
        self.write_head(out)?;
        let listing = list_task_dirs(dir);
        let attention = write_rows(dir, &listing, out)?;
        let stats = write_details(dir, limits, &listing, &attention, out)?;
        write!(
            out,
            ",\"limits\":{},\"omitted_details\":{},\"truncated_strings\":{}}}",
            json!({
                "max_trajectories": limits.max_trajectories,
                "max_text_bytes": limits.max_text_bytes,
                "max_detail_bytes": limits.max_detail_bytes,
            }),
            stats.omitted,
            stats.truncated_strings
        )?;
        Ok(stats)
    }

    /// The data block's opening: format, version, generator and the run body (its issue counts
    /// left out: they come after the rows, which they need every task's facts for).
    fn write_head(&self, out: &mut impl Write) -> io::Result<()> {
        let run_path = self.root.relative(self.dir);
        let mut body = runs::run_body(self.root, self.dir);
        write!(
            out,
            "{{\"format\":{},\"version\":{REPORT_VERSION},\"generator\":{},\"generated_at\":{},\
             \"run_path\":{},\"run\":",
            json!(REPORT_FORMAT),
            json!(self.generator),
            json!(self.generated_at),
            json!(run_path)
        )?;
        // The run body's issue counts come after the rows (they need every task's facts).
        if let Some(map) = body.as_object_mut() {
            map.remove("issues");
        }
        serde_json::to_writer(&mut *out, &body)?;
        Ok(())
    }
}

/// Every task's row, in the viewer's listing order, then the run's issue counts, categories,
/// issue codes and chart data. Returns, per row, whether the task needs attention (not correct).
fn write_rows(
    dir: &Path,
    listing: &[(State, String)],
    out: &mut impl Write,
) -> io::Result<Vec<bool>> {
    let mut index = IndexBuilder::for_run(dir);
    let mut attention = Vec::with_capacity(listing.len());
    out.write_all(b",\"rows\":[")?;
    for (at, (state, name)) in listing.iter().enumerate() {
        let task_dir = dir.join("details").join(state.as_str()).join(name);
        let facts = read_facts(&task_dir, *state, name);
        if at > 0 {
            out.write_all(b",")?;
        }
        let mut codes: Vec<&str> = facts.issues.iter().map(|(c, _)| c.as_str()).collect();
        codes.dedup();
        serde_json::to_writer(
            &mut *out,
            &json!([
                facts.task_id,
                format!("{}/{name}", state.as_str()),
                facts.status,
                facts.category,
                facts.correct,
                facts.reward,
                codes,
                facts.attempts,
                facts.duration_seconds,
            ]),
        )?;
        attention.push(facts.correct != Some(true));
        index.add(*state, name, &facts);
    }
    out.write_all(b"]")?;
    let index = index.finish();
    write!(
        out,
        ",\"issues\":{},\"categories\":{},\"issue_codes\":{},\"charts\":{}",
        runs::issue_counts_json(&index),
        json!(index.categories()),
        json!(index.code_names()),
        run_charts(&index),
    )?;
    Ok(attention)
}

/// Task details: not correct first, then correct, within the limits. Returns what went in
/// (`bytes` left at zero).
fn write_details(
    dir: &Path,
    limits: &ReportLimits,
    listing: &[(State, String)],
    attention: &[bool],
    out: &mut impl Write,
) -> io::Result<ReportStats> {
    let order = attention
        .iter()
        .enumerate()
        .filter(|(_, a)| **a)
        .chain(attention.iter().enumerate().filter(|(_, a)| !**a))
        .map(|(at, _)| at);
    let mut stats = ReportStats {
        tasks: listing.len(),
        ..ReportStats::default()
    };
    let mut detail_bytes = 0u64;
    let mut buffer = Vec::new();
    out.write_all(b",\"details\":{")?;
    for at in order {
        if stats.details >= limits.max_trajectories {
            break;
        }
        let Some((state, name)) = listing.get(at) else {
            continue;
        };
        let mut detail = task::detail(&dir.join("details").join(state.as_str()).join(name));
        let truncated = truncate_strings(&mut detail, limits.max_text_bytes);
        buffer.clear();
        serde_json::to_writer(&mut buffer, &detail)?;
        let size = buffer.len() as u64;
        if detail_bytes + size > limits.max_detail_bytes {
            continue;
        }
        if stats.details > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, &format!("{}/{name}", state.as_str()))?;
        out.write_all(b":")?;
        out.write_all(&buffer)?;
        detail_bytes += size;
        stats.details += 1;
        stats.truncated_strings += truncated;
    }
    out.write_all(b"}")?;
    stats.omitted = stats.tasks - stats.details;
    Ok(stats)
}

/// `sha256-<base64>` of an inline script or style, for the page's CSP.
fn csp_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// Shortens every string in `value` longer than `max` bytes to its first 3/4 and last 1/4
/// (on character boundaries) around a marker; returns how many it shortened.
pub fn truncate_strings(value: &mut Value, max: usize) -> usize {
    match value {
        Value::String(text) if text.len() > max => {
            let head = floor_char_boundary(text, max / 4 * 3);
            let tail = ceil_char_boundary(text, text.len() - max / 4);
            let omitted = tail - head;
            *text = format!(
                "{}\n… [{omitted} bytes left out of this report] …\n{}",
                &text[..head],
                &text[tail..]
            );
            1
        }
        Value::Array(items) => items.iter_mut().map(|v| truncate_strings(v, max)).sum(),
        Value::Object(map) => map.values_mut().map(|v| truncate_strings(v, max)).sum(),
        _ => 0,
    }
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while at > 0 && !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_char_boundary(text: &str, mut at: usize) -> usize {
    while at < text.len() && !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// Escapes JSON for a `<script type="application/json">` element: `<`, `>` and `&` (which
/// JSON holds only inside strings) become `\u003c`, `\u003e`, `\u0026`, so no `</script>` or
/// `<!--` in task text can end or change the element.
struct HtmlSafe<W>(W);

impl<W: Write> Write for HtmlSafe<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut start = 0;
        for (at, byte) in buf.iter().enumerate() {
            let escaped: &[u8] = match byte {
                b'<' => b"\\u003c",
                b'>' => b"\\u003e",
                b'&' => b"\\u0026",
                _ => continue,
            };
            self.0.write_all(&buf[start..at])?;
            self.0.write_all(escaped)?;
            start = at + 1;
        }
        self.0.write_all(&buf[start..])?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// Counts the bytes written through it.
struct Counting<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_in_a_script_element_cannot_close_it() {
        let mut out = Vec::new();
        let value = json!({"q": "</script><script>alert(1)</script> <!-- & >"});
        serde_json::to_writer(HtmlSafe(&mut out), &value).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains('<') && !text.contains('>') && !text.contains('&'));
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn long_strings_keep_head_and_tail() {
        let mut value = json!({"a": ["x".repeat(100) + &"é".repeat(100)], "b": "short"});
        assert_eq!(truncate_strings(&mut value, 64), 1);
        let text = value["a"][0].as_str().unwrap();
        assert!(text.starts_with(&"x".repeat(48)), "{text}");
        assert!(text.ends_with("éééééééé"), "{text}");
        assert!(text.contains("bytes left out of this report"));
        assert_eq!(value["b"], "short");
    }

    #[test]
    fn the_inline_assets_cannot_end_their_elements() {
        assert!(!APP_JS.contains("</script"));
        assert!(!APP_CSS.contains("</style"));
    }

    #[test]
    fn hashes_are_base64_sha256() {
        assert_eq!(
            csp_hash("alert(1)"),
            "sha256-bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI="
        );
    }
}
