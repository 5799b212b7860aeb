//! `analysis_summary.json`: the table rows (per category × analyzer, per category, per
//! analyzer with its bad-case items, overall) and the distributions, as upstream writes them.

use agentcompass_plugin_api::contracts::JsonMap;
use serde_json::{json, Value};

use super::stat::Stat;
use super::{AnalysisSummary, NO_CATEGORY, OVERALL};
use crate::py::round;

/// A row of the JSON tables.
fn row(category: &str, analyzer: &str, stat: &Stat) -> JsonMap {
    let label = if category.is_empty() {
        NO_CATEGORY
    } else {
        category
    };
    let mut map = JsonMap::new();
    map.insert("category".into(), json!(label));
    map.insert("analyzer".into(), json!(analyzer));
    map.insert("total".into(), json!(stat.total));
    map.insert("badcase_count".into(), json!(stat.badcase));
    map.insert("error_count".into(), json!(stat.error));
    map.insert("badcase_ratio".into(), json!(round(stat.ratio(), 4)));
    map.insert(
        "avg_score".into(),
        stat.avg_score()
            .map_or(Value::Null, |s| crate::py::num(round(s, 4))),
    );
    map
}

/// Renders the summary.
pub(super) fn render(summary: &AnalysisSummary) -> Value {
    let mut per_category_per_analyzer = Vec::new();
    let mut per_category_overall = Vec::new();
    for category in &summary.categories {
        for analyzer in &summary.analyzers {
            let stat = summary.cell(category, analyzer);
            if stat.shown() {
                per_category_per_analyzer.push(Value::Object(row(category, analyzer, &stat)));
            }
        }
        per_category_overall.push(Value::Object(row(
            category,
            OVERALL,
            &summary.cell(category, OVERALL),
        )));
    }
    let overall_per_analyzer: Vec<Value> = summary
        .analyzers
        .iter()
        .map(|analyzer| {
            let mut r = row(OVERALL, analyzer, &summary.cell(OVERALL, analyzer));
            r.insert(
                "items".into(),
                json!(summary.items.get(analyzer).cloned().unwrap_or_default()),
            );
            Value::Object(r)
        })
        .collect();
    json!({
        "per_category_per_analyzer": per_category_per_analyzer,
        "per_category_overall": per_category_overall,
        "overall_per_analyzer": overall_per_analyzer,
        "overall": [row(OVERALL, OVERALL, &summary.overall_overall)],
        "distributions": distributions(summary),
    })
}

/// `{analyzer: {"__overall__" | category: {field: aggregate}}}`.
fn distributions(summary: &AnalysisSummary) -> JsonMap {
    let mut distributions = JsonMap::new();
    for (analyzer, scopes) in &summary.distributions {
        let mut by_scope = JsonMap::new();
        for (scope, fields) in scopes {
            let results: JsonMap = fields
                .iter()
                .map(|(field, agg)| (field.clone(), agg.to_json()))
                .collect();
            by_scope.insert(scope.key().to_string(), Value::Object(results));
        }
        distributions.insert(analyzer.clone(), Value::Object(by_scope));
    }
    distributions
}
