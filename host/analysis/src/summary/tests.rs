//! The summary against upstream's own output for the same persisted attempts (the fixture
//! `testdata/upstream_summary.*` was written by AgentCompass 1.0.1's
//! `RunStore.save_analysis_summary` from `testdata/scenario.json`: four tasks in two
//! categories, two attempts each, one task without analysis data).

use agentcompass_plugin_api::contracts::{ComponentInfo, JsonMap};
use serde_json::{json, Value};

use super::*;

/// Feeds the scenario's tasks to a builder knowing the built-in analyzers.
fn scenario_summary() -> AnalysisSummary {
    let scenario: Value = serde_json::from_str(include_str!("testdata/scenario.json")).unwrap();
    let infos: Vec<ComponentInfo> = crate::builtins()
        .into_iter()
        .map(|(info, _)| info)
        .collect();
    let mut builder = SummaryBuilder::new("demo", "gpt-x", &infos);
    for task in scenario.as_array().unwrap() {
        let attempts: Vec<&JsonMap> = task["attempts"]
            .as_object()
            .unwrap()
            .values()
            .map(|a| a["analysis_result"].as_object().unwrap())
            .collect();
        builder.add_task(
            task["_source_file"].as_str().unwrap(),
            task["category"].as_str(),
            &attempts,
        );
    }
    builder.finish()
}

#[test]
fn json_matches_upstream() {
    let summary = scenario_summary();
    assert_eq!(summary.task_count(), 3);
    assert!(!summary.is_empty());
    let expected: Value =
        serde_json::from_str(include_str!("testdata/upstream_summary.json")).unwrap();
    assert_eq!(summary.to_json(), expected);
}

#[test]
fn markdown_matches_upstream() {
    let summary = scenario_summary();
    // Upstream's, but for the `__overall__` rows' score (the highest score of each task over
    // analyzers of unrelated units), which the table leaves out.
    let mut expected = include_str!("testdata/upstream_summary.md").to_string();
    for (upstream, ours) in [
        ("0.6667 | 143.3333 |", "0.6667 | - |"),
        (
            "| 1.0000 | 300.0000 |\n\n## Category: math",
            "| 1.0000 | - |\n\n## Category: math",
        ),
        ("**1** | 0.5000 | 65.0000 |", "**1** | 0.5000 | - |"),
    ] {
        assert!(expected.contains(upstream), "{upstream}");
        expected = expected.replacen(upstream, ours, 1);
    }
    assert_eq!(summary.to_markdown(), expected);
}

#[test]
fn small_summary_literal() {
    let a = json!({
        "TruncationAnalyzer": {"is_badcase": false, "details": {}, "score": 0.0},
        "X": {"is_badcase": null, "details": {"n": 3}, "score": true},
    });
    let b = json!({
        "TruncationAnalyzer": {"is_badcase": false, "details": {}, "score": 0.0},
        "X": "not an object",
    });
    let mut builder = SummaryBuilder::new("demo", "m", std::iter::empty());
    builder.add_task(
        "details/a.json",
        None,
        &[a.as_object().unwrap(), b.as_object().unwrap()],
    );
    builder.add_task("details/none.json", None, &[]);
    let summary = builder.finish();
    // TruncationAnalyzer found nothing: left out. X is statistics-only: kept.
    assert_eq!(summary.analyzers(), ["X".to_string()]);
    assert_eq!(
        summary.to_json(),
        json!({
            "per_category_per_analyzer": [
                {"category": "(no category)", "analyzer": "X", "total": 1, "badcase_count": 0,
                 "error_count": 0, "badcase_ratio": 0.0, "avg_score": 1.0}],
            "per_category_overall": [
                {"category": "(no category)", "analyzer": "__overall__", "total": 1,
                 "badcase_count": 0, "error_count": 0, "badcase_ratio": 0.0, "avg_score": 1.0}],
            "overall_per_analyzer": [
                {"category": "__overall__", "analyzer": "X", "total": 1, "badcase_count": 0,
                 "error_count": 0, "badcase_ratio": 0.0, "avg_score": 1.0, "items": []}],
            "overall": [
                {"category": "__overall__", "analyzer": "__overall__", "total": 1,
                 "badcase_count": 0, "error_count": 0, "badcase_ratio": 0.0, "avg_score": 1.0}],
            "distributions": {},
        })
    );
    assert!(summary
        .to_markdown()
        .contains("## Category: (no category)\n"));
}

#[test]
fn mixed_categories_and_plugin_distributions() {
    let info = ComponentInfo::new(
        agentcompass_plugin_api::contracts::ComponentKind::Analyzer,
        "P",
        "plugin",
    );
    let mut info = info;
    info.extra =
        json!({"distribution_fields": {"tag": "value_counts", "n": "numeric_stats", "x": "bogus"}});
    let mut builder = SummaryBuilder::new("b", "m", [&info]);
    let one = json!({"P": {"is_badcase": true, "details": {"tag": ["a", "b", null], "n": 2}}});
    let two = json!({"P": {"is_badcase": false, "details": {"tag": "a", "n": "x"}}});
    builder.add_task("t1", Some("c"), &[one.as_object().unwrap()]);
    builder.add_task("t2", None, &[two.as_object().unwrap()]);
    let j = builder.finish().to_json();
    assert_eq!(j["per_category_overall"][0]["category"], "(no category)");
    assert_eq!(j["per_category_overall"][1]["category"], "c");
    assert_eq!(
        j["distributions"]["P"]["__overall__"],
        json!({"tag": {"total": 3, "distribution": {"a": 2, "b": 1}},
               "n": {"count": 1, "min": 2.0, "mean": 2.0, "p50": 2.0, "p90": 2.0, "p95": 2.0, "max": 2.0}})
    );
    assert_eq!(
        j["distributions"]["P"][""],
        json!({"tag": {"total": 1, "distribution": {"a": 1}}})
    );
    assert_eq!(j["overall_per_analyzer"][0]["items"], json!(["t1"]));
}

#[test]
fn empty_builder_is_empty() {
    let summary = SummaryBuilder::new("b", "m", std::iter::empty()).finish();
    assert!(summary.is_empty());
    let _ = summary.to_json();
    let _ = summary.to_markdown();
}
