//! The terminal form of a comparison.

use std::fmt::Write as _;

use agentcompass_plugin_api::contracts::MetricKind;

use super::{Comparison, PassK};

fn value(kind: MetricKind, v: f64) -> String {
    match kind {
        MetricKind::BinarySuccess => format!("{:.2}%", v * 100.0),
        MetricKind::Scalar => format!("{v:.4}"),
    }
}

fn delta(kind: MetricKind, v: f64) -> String {
    match kind {
        MetricKind::BinarySuccess => format!("{:+.2} pp", v * 100.0),
        MetricKind::Scalar => format!("{v:+.4}"),
    }
}

/// Lists up to 20 task ids, then how many more.
fn list(ids: &[String]) -> String {
    const SHOWN: usize = 20;
    let mut out = ids
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > SHOWN {
        let _ = write!(out, ", … ({} more; --json lists all)", ids.len() - SHOWN);
    }
    out
}

fn pass_k(out: &mut String, name: &str, p: &Option<PassK>) {
    if let Some(p) = p {
        let _ = writeln!(
            out,
            "{name}: pass@{k} {:.2}%, pass^{k} {:.2}%, flaky tasks {}{}",
            p.pass_at_k * 100.0,
            p.pass_hat_k * 100.0,
            p.flaky.len(),
            if p.flaky.is_empty() {
                String::new()
            } else {
                format!(" ({})", list(&p.flaky))
            },
            k = p.k,
        );
    }
}

/// Renders `c` for a terminal.
pub fn render_text(c: &Comparison) -> String {
    let mut out = String::new();
    let side = |s: &super::RunSide| {
        format!(
            "{} ({} / {}, k={}, {} tasks)",
            s.run_dir.display(),
            s.model,
            s.harness,
            s.k,
            s.tasks
        )
    };
    let _ = writeln!(out, "compare {}: metric {}", c.benchmark, c.metric);
    let _ = writeln!(out, "A: {}", side(&c.a));
    let _ = writeln!(out, "B: {}", side(&c.b));
    let _ = writeln!(
        out,
        "shared tasks scored in both: {} (only in A: {}, only in B: {}, not scored in one: {})",
        c.shared,
        c.only_a.len(),
        c.only_b.len(),
        c.unscored.len()
    );
    write_difference(&mut out, c);
    if let Some(m) = c.mcnemar {
        let _ = writeln!(
            out,
            "McNemar exact: fixed {}, broken {}, p = {:.4}",
            m.fixed, m.broken, m.p_value
        );
    }
    pass_k(&mut out, "A", &c.pass_k_a);
    pass_k(&mut out, "B", &c.pass_k_b);
    write_categories(&mut out, c);
    for (name, ids) in [
        ("fixed (solved by B only)", &c.fixed),
        ("broken (solved by A only)", &c.broken),
        ("only in A", &c.only_a),
        ("only in B", &c.only_b),
        ("not scored in one run", &c.unscored),
    ] {
        if !ids.is_empty() {
            let _ = writeln!(out, "{name} ({}): {}", ids.len(), list(ids));
        }
    }
    out
}

/// `A …  B …  B−A …` with its confidence interval.
fn write_difference(out: &mut String, c: &Comparison) {
    match (c.mean_a, c.mean_b, c.difference) {
        (Some(a), Some(b), Some(d)) => {
            let _ = write!(
                out,
                "A {}  B {}  B−A {}",
                value(c.kind, a),
                value(c.kind, b),
                delta(c.kind, d)
            );
            if let Some(i) = c.interval {
                let _ = write!(
                    out,
                    "  {:.0}% CI [{}, {}] (paired bootstrap, {} resamples, seed {})",
                    i.confidence * 100.0,
                    delta(c.kind, i.low),
                    delta(c.kind, i.high),
                    i.resamples,
                    i.seed
                );
            }
            out.push('\n');
        }
        _ => out.push_str("no shared task is scored in both runs\n"),
    }
}

/// The per-category table, when there is more than one category.
fn write_categories(out: &mut String, c: &Comparison) {
    if c.categories.len() > 1 {
        out.push_str("\n| category | tasks | A | B | B−A |\n|---|---:|---:|---:|---:|\n");
        for cat in &c.categories {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                cat.category,
                cat.tasks,
                value(c.kind, cat.mean_a),
                value(c.kind, cat.mean_b),
                delta(c.kind, cat.difference)
            );
        }
    }
}
