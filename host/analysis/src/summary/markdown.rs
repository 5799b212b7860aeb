//! `analysis_summary.md`: the title, the overall table, one table per category, then the
//! distributions (numeric statistics in one table per scope, value counts one table per
//! field), line for line as upstream renders them.

use super::distribution::{FieldAgg, Scope};
use super::{AnalysisSummary, NO_CATEGORY, OVERALL};
use crate::py::float_repr;

/// Renders the summary.
pub(super) fn render(summary: &AnalysisSummary) -> String {
    let mut md: Vec<String> = vec![
        format!("# {} Analysis Summary\n", summary.benchmark.to_uppercase()),
        format!("**Model:** `{}`\n", summary.model),
    ];
    let mut names: Vec<&str> = summary.analyzers.iter().map(String::as_str).collect();
    names.push(OVERALL);
    metric_table(&mut md, summary, "Overall", OVERALL, &names, false);
    for category in &summary.categories {
        let label = if category.is_empty() {
            NO_CATEGORY
        } else {
            category
        };
        metric_table(
            &mut md,
            summary,
            &format!("Category: {label}"),
            category,
            &names,
            true,
        );
    }
    if !summary.distributions.is_empty() {
        md.push("\n---\n\n## Distributions\n".to_string());
        for (analyzer, scopes) in &summary.distributions {
            md.push(format!("\n### {analyzer}\n"));
            for (scope, fields) in scopes {
                let label = match scope {
                    Scope::Overall => OVERALL,
                    Scope::Category(c) if c.is_empty() => NO_CATEGORY,
                    Scope::Category(c) => c,
                };
                md.push(format!("\n**{label}**\n"));
                distribution_tables(&mut md, fields);
            }
        }
    }
    let mut out = md.join("\n");
    out.push('\n');
    out
}

/// One metric table (`Analyzer | Total | Badcase | Error | Badcase Ratio | Avg Score`);
/// in a category table, bad-case analyzers without a bad case or error there are left out.
fn metric_table(
    md: &mut Vec<String>,
    summary: &AnalysisSummary,
    title: &str,
    category: &str,
    analyzers: &[&str],
    per_category_filter: bool,
) {
    md.push(format!("\n## {title}\n"));
    md.push("| Analyzer | Total | Badcase | Error | Badcase Ratio | Avg Score |".to_string());
    md.push("|----------|-------|---------|-------|---------------|-----------|".to_string());
    let mut has_rows = false;
    for analyzer in analyzers {
        let stat = summary.cell(category, analyzer);
        if per_category_filter && *analyzer != OVERALL && !stat.shown() {
            continue;
        }
        let ratio = if stat.total > 0 {
            format!("{:.4}", stat.ratio())
        } else {
            "0.0000".to_string()
        };
        // The overall row's score (upstream's: the highest analyzer score of each task) mixes
        // a ratio with a latency or a token count; the JSON keeps it, the table does not.
        let score = stat
            .avg_score()
            .filter(|_| *analyzer != OVERALL)
            .map_or_else(|| "-".to_string(), |s| format!("{s:.4}"));
        let bold = |text: String| {
            if *analyzer == OVERALL {
                format!("**{text}**")
            } else {
                text
            }
        };
        md.push(format!(
            "| {} | {} | {} | {} | {ratio} | {score} |",
            bold(analyzer.to_string()),
            bold(stat.total.to_string()),
            bold(stat.badcase.to_string()),
            bold(stat.error.to_string()),
        ));
        has_rows = true;
    }
    if !has_rows {
        md.truncate(md.len().saturating_sub(3));
    }
}

/// The distribution tables of one scope.
fn distribution_tables(md: &mut Vec<String>, fields: &[(String, FieldAgg)]) {
    let numeric: Vec<_> = fields
        .iter()
        .filter_map(|(field, agg)| match agg {
            FieldAgg::Numeric(stats) => Some((field, stats)),
            FieldAgg::Counts { .. } => None,
        })
        .collect();
    if !numeric.is_empty() {
        md.push("| Metric | count | min | mean | p50 | p90 | p95 | max |".to_string());
        md.push("|--------|-------|-----|------|-----|-----|-----|-----|".to_string());
        for (field, stats) in numeric {
            md.push(format!(
                "| {field} | {} | {} | {} | {} | {} | {} | {} |",
                stats.count,
                float_repr(stats.min),
                float_repr(stats.mean),
                float_repr(stats.p50),
                float_repr(stats.p90),
                float_repr(stats.p95),
                float_repr(stats.max),
            ));
        }
        md.push(String::new());
    }
    for (field, agg) in fields {
        let FieldAgg::Counts { total, top } = agg else {
            continue;
        };
        md.push(format!("\n**{field}** (total: {total})\n"));
        md.push("| Value | Count | Ratio |".to_string());
        md.push("|-------|-------|-------|".to_string());
        for (value, count) in top {
            let ratio = if *total > 0 {
                format!("{:.4}", *count as f64 / *total as f64)
            } else {
                "0".to_string()
            };
            md.push(format!("| {value} | {count} | {ratio} |"));
        }
    }
}
