//! `summary.md` rendering and the one-line headline overview.

use std::fmt::Write as _;

use agentcompass_plugin_api::contracts::{MetricKind, MetricReport, MetricSeries};
use agentcompass_schema::metrics::HostExtras;

/// What the summary header names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SummaryTitle {
    /// Benchmark id (shown upper-case).
    pub benchmark: String,
    /// Model id.
    pub model: String,
    /// Harness id (`none` when empty).
    pub harness: String,
    /// Run id.
    pub run_id: String,
}

/// A value as shown to people: a percentage with 2 decimals for binary metrics, 4 decimals for
/// scalars, `n/a` when absent.
pub(crate) fn format_value(kind: MetricKind, value: Option<f64>) -> String {
    match (kind, value) {
        (_, None) => "n/a".to_string(),
        (MetricKind::BinarySuccess, Some(v)) => format!("{:.2}%", v * 100.0),
        (MetricKind::Scalar, Some(v)) => format!("{v:.4}"),
    }
}

/// The value to display: the value, or the reference value when evaluation failed.
fn shown_value(series: &MetricSeries) -> Option<f64> {
    series.value.or(series.reference_value)
}

/// Escapes text for a markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The headline series, else the first one.
fn main_series(report: &MetricReport) -> Option<&MetricSeries> {
    report.headline().or_else(|| report.series.first())
}

/// Renders the human-readable `summary.md` for a metric report.
pub fn render_summary(report: &MetricReport, title: &SummaryTitle) -> String {
    let mut out = String::new();
    write_title(&mut out, report, title);
    let counts = main_series(report).map(|s| s.counts).unwrap_or_default();
    let _ = writeln!(
        out,
        "Total: {} · Evaluated: {} · Invalidated: {} · Error: {}\n",
        counts.total, counts.evaluated, counts.invalidated, counts.error
    );
    if let Some(line) = not_scored_line(report) {
        let _ = writeln!(out, "{line}\n");
    }
    if let Some(line) = skipped_line(report) {
        let _ = writeln!(out, "{line}\n");
    }
    write_series_table(&mut out, report);
    write_dataset_metrics(&mut out, report);
    if let Some(line) = pass_at_k_line(&HostExtras::of(report)) {
        let _ = writeln!(out, "\n{line}");
    }
    write_categories(&mut out, report);
    if report.evaluation_failed {
        let _ = writeln!(
            out,
            "\nEvaluation failed: {} tasks have fatal errors; values are reference values over \
             the remaining tasks.",
            counts.invalidated
        );
    }
    write_usage(&mut out, report);
    out.push_str("\nFull report: `metrics.json`.\n");
    out
}

/// Harbor's metrics of the run for the terminal, one line each: every row of
/// `extra.dataset_metrics` (`adhoc mean: correctness 1.0000 · performance 0.5000`, a script's
/// named by its file) and pass@k.
pub fn harbor_metric_lines(report: &MetricReport) -> Vec<String> {
    let extras = HostExtras::of(report);
    let mut lines: Vec<String> = extras
        .dataset_metrics
        .iter()
        .flatten()
        .map(|row| {
            let kind = match &row.script {
                Some(script) => format!("uv-script {script}"),
                None => row.kind.clone(),
            };
            let values: Vec<String> = row
                .value
                .iter()
                .map(|(key, value)| format!("{key} {}", number(value)))
                .collect();
            format!("{} {kind}: {}", row.dataset, values.join(" · "))
        })
        .collect();
    lines.extend(pass_at_k_line(&extras));
    lines
}

/// A metric value: 4 decimals for a number, else its JSON.
fn number(value: &serde_json::Value) -> String {
    value
        .as_f64()
        .map_or_else(|| value.to_string(), |v| format!("{v:.4}"))
}

/// `pass@2 0.5500 · pass@4 0.9000` from `extra.pass_at_k` (Harbor's), when the run has it.
fn pass_at_k_line(extras: &HostExtras) -> Option<String> {
    let mut pairs: Vec<(u64, f64)> = extras
        .pass_at_k
        .iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.parse().ok()?, *v)))
        .collect();
    pairs.sort_by_key(|(k, _)| *k);
    let parts: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("pass@{k} {v:.4}"))
        .collect();
    (!parts.is_empty()).then(|| parts.join(" · "))
}

/// The declared metrics of a registry dataset (`extra.dataset_metrics`), as Harbor computes
/// them: one row per metric and reward key.
fn write_dataset_metrics(out: &mut String, report: &MetricReport) {
    let rows = HostExtras::of(report).dataset_metrics.unwrap_or_default();
    if rows.is_empty() {
        return;
    }
    out.push_str("\n| Dataset | Dataset metric | Key | Value |\n|---|---|---|---:|\n");
    for row in rows {
        for (key, value) in &row.value {
            let _ = writeln!(
                out,
                "| {} | {} | {key} | {} |",
                row.dataset,
                row.kind,
                number(value)
            );
        }
    }
}

/// `12 tasks not scored: 9 model (rate limited), 3 environment (environment_failed)` from
/// `extra.not_scored`, classes most frequent first (`None`: every task was scored).
pub fn not_scored_line(report: &MetricReport) -> Option<String> {
    let not_scored = HostExtras::of(report).not_scored?;
    let total = Some(not_scored.tasks).filter(|n| *n > 0)?;
    let mut classes: Vec<(&String, u64, String)> = not_scored
        .classes
        .iter()
        .map(|(class, entry)| {
            let mut reasons: Vec<(&String, u64)> =
                entry.reasons.iter().map(|(r, n)| (r, *n)).collect();
            reasons.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            let reasons: Vec<&str> = reasons.iter().map(|(r, _)| r.as_str()).collect();
            (class, entry.tasks, reasons.join(", "))
        })
        .collect();
    classes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let parts: Vec<String> = classes
        .iter()
        .map(|(class, n, reasons)| format!("{n} {class} ({reasons})"))
        .collect();
    let noun = if total == 1 { "task" } else { "tasks" };
    Some(format!("{total} {noun} not scored: {}", parts.join(", ")))
}

/// `150 tasks skipped: 150 budget_exhausted` from `extra.skipped` (`None`: none skipped).
pub fn skipped_line(report: &MetricReport) -> Option<String> {
    let skipped = HostExtras::of(report).skipped?;
    let total = Some(skipped.tasks).filter(|n| *n > 0)?;
    let reasons: Vec<String> = skipped
        .reasons
        .iter()
        .map(|(reason, n)| format!("{n} {reason}"))
        .collect();
    let noun = if total == 1 { "task" } else { "tasks" };
    Some(format!(
        "{total} {noun} skipped (not run, not scored): {}",
        reasons.join(", ")
    ))
}

/// `# BENCHMARK — model`, then the harness, run id and attempt plan.
fn write_title(out: &mut String, report: &MetricReport, title: &SummaryTitle) {
    let harness = if title.harness.is_empty() {
        "none"
    } else {
        title.harness.as_str()
    };
    let _ = writeln!(
        out,
        "# {} — {}\n",
        title.benchmark.to_uppercase(),
        title.model
    );
    let _ = write!(out, "Harness: {harness} · Run ID: {}", title.run_id);
    if report.k > 1 {
        let _ = write!(
            out,
            " · Attempts: k={} (strategy {})",
            report.k,
            report.strategy.as_str()
        );
    }
    out.push_str("\n\n");
}

/// One row per metric series.
fn write_series_table(out: &mut String, report: &MetricReport) {
    out.push_str("| Metric | Reducer | Value | Evaluated | Error | Unavailable | Total |\n");
    out.push_str("|---|---|---:|---:|---:|---:|---:|\n");
    for series in &report.series {
        let _ = writeln!(
            out,
            "| {} | {}@{} | {} | {} | {} | {} | {} |",
            cell(&series.metric_id),
            cell(&series.reducer),
            report.k,
            format_value(series.kind, shown_value(series)),
            series.counts.evaluated,
            series.counts.error,
            series.counts.unavailable,
            series.counts.total,
        );
    }
}

/// The main series per category, when there are several categories.
fn write_categories(out: &mut String, report: &MetricReport) {
    let Some(series) = main_series(report).filter(|s| s.categories.len() > 1) else {
        return;
    };
    let _ = writeln!(
        out,
        "\n## Categories — {} ({}@{})\n",
        cell(&series.metric_id),
        cell(&series.reducer),
        report.k
    );
    out.push_str("| Category | Value |\n|---|---:|\n");
    for (category, value) in &series.categories {
        let _ = writeln!(
            out,
            "| {} | {} |",
            cell(category),
            format_value(series.kind, value.any_value())
        );
    }
}

/// The run's model usage, when it made model calls, with its cost and where the prices came
/// from (`· $0.0097 (litellm@1.110.2)`), or `· no price` when the model had none.
fn write_usage(out: &mut String, report: &MetricReport) {
    let extras = HostExtras::of(report);
    let Some(usage) = extras.model_usage else {
        return;
    };
    let _ = write!(
        out,
        "\nModel usage: {} calls · {} prompt tokens ({} cached) · {} completion tokens",
        usage.requests, usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens
    );
    match (usage.cost_usd, extras.pricing) {
        (Some(cost), Some(pricing)) => {
            let _ = write!(out, " · ${cost:.4} ({})", pricing.source);
        }
        (Some(cost), None) => {
            let _ = write!(out, " · ${cost:.4}");
        }
        (None, _) => out.push_str(" · no price"),
    }
    out.push('\n');
    if let Some(limits) = extras.rate_limits {
        let _ = writeln!(
            out,
            "Rate limits: {} answers · {:.1} s waited · limit {} of {} at the end ({})",
            limits.answers, limits.waited_seconds, limits.limit, limits.max, limits.endpoint
        );
    }
}

/// The one-line overview of the headline series, e.g.
/// `correct (native@1): 80.00% (4/5 evaluated)`; with invalidated tasks (a fatal attempt,
/// upstream's `evaluation_failed`), why they count for nothing and the value over the others:
/// `correct (native@1): n/a — 3 of 200 tasks invalidated (3 model); 84.21% over the 197
/// evaluated`. `None` without a headline series.
pub fn headline_line(report: &MetricReport) -> Option<String> {
    headline_line_of(report, 0)
}

/// [`headline_line`] counting `selected` tasks (the run's selection) when more were selected
/// than the report counts: a run stopped early (cancelled, timed out, a budget) says how many
/// of its selected tasks were evaluated — `(1/6 evaluated)` —, not only of those it finished.
pub fn headline_line_of(report: &MetricReport, selected: u64) -> Option<String> {
    let series = report.headline()?;
    let name = format!("{} ({}@{})", series.metric_id, series.reducer, report.k);
    let mut counts = series.counts;
    counts.total = counts.total.max(selected);
    if !report.evaluation_failed {
        return Some(format!(
            "{name}: {} ({}/{} evaluated)",
            format_value(series.kind, series.value),
            counts.evaluated,
            counts.total
        ));
    }
    let classes = HostExtras::of(report)
        .not_scored
        .map(|not_scored| {
            not_scored
                .classes
                .iter()
                .map(|(class, reasons)| format!("{} {class}", reasons.tasks))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .filter(|classes| !classes.is_empty())
        .map(|classes| format!(" ({classes})"))
        .unwrap_or_default();
    let rest = match (counts.evaluated, series.reference_value) {
        (0, _) | (_, None) => "no task was scored".to_string(),
        (evaluated, reference) => format!(
            "{} over the {evaluated} evaluated",
            format_value(series.kind, reference)
        ),
    };
    Some(format!(
        "{name}: n/a — {} of {} {} invalidated{classes}; {rest}",
        counts.invalidated,
        counts.total,
        if counts.total == 1 { "task" } else { "tasks" },
    ))
}
