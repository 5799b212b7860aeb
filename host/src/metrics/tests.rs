use super::*;
use agentcompass_plugin_api::contracts::{ExecutionIssue, IssuePhase};

fn ok(metrics: &[(&str, MetricValue)]) -> AttemptOutcome {
    AttemptOutcome {
        metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        ..AttemptOutcome::default()
    }
}

fn correct(v: bool) -> AttemptOutcome {
    ok(&[("correct", MetricValue::Bool(v))])
}

fn errored() -> AttemptOutcome {
    AttemptOutcome {
        error: true,
        ..AttemptOutcome::default()
    }
}

fn fatal() -> AttemptOutcome {
    AttemptOutcome {
        fatal: true,
        ..AttemptOutcome::default()
    }
}

fn series<'a>(report: &'a MetricReport, id: &str) -> &'a MetricSeries {
    report
        .series
        .iter()
        .find(|s| s.series_id == id)
        .unwrap_or_else(|| panic!("no series {id} in {:?}", report.series))
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

fn contract_with_aux() -> MetricContract {
    let mut contract = MetricContract::correct();
    contract
        .metrics
        .push(MetricSpec::new("steps", MetricKind::Scalar));
    contract
        .metrics
        .push(MetricSpec::new("tool_ok", MetricKind::BinarySuccess));
    contract
}

#[test]
fn k1_native() {
    let mut agg = MetricAggregator::new(MetricContract::correct(), 1, AttemptStrategy::Avg);
    for v in [true, true, true, false] {
        agg.add_task("", &[correct(v)]);
    }
    agg.add_task("", &[errored()]);
    let report = agg.report();
    assert_eq!(report.k, 1);
    assert_eq!(report.aggregation, "micro_weighted");
    assert!(!report.evaluation_failed);
    assert_eq!(report.series.len(), 1);
    let s = &report.series[0];
    assert_eq!(s.series_id, "correct.native@1");
    assert_eq!(
        (s.reducer.as_str(), s.role.as_str()),
        ("native", "headline")
    );
    assert!(close(s.value, 0.75));
    assert_eq!(s.reference_value, None);
    assert_eq!(
        s.counts,
        SeriesCounts {
            total: 5,
            evaluated: 4,
            error: 1,
            unavailable: 0,
            invalidated: 0
        }
    );
    assert_eq!(s.categories.len(), 1);
    assert!(close(s.categories["default"].value, 0.75));
    assert_eq!(
        headline_line(&report).as_deref(),
        Some("correct (native@1): 75.00% (4/5 evaluated)")
    );
}

#[test]
fn k3_avg_and_pass_with_missing_attempt() {
    let mut agg = MetricAggregator::new(MetricContract::correct(), 3, AttemptStrategy::Avg);
    // all valid: avg 2/3, pass 1
    agg.add_task("a", &[correct(true), correct(false), correct(true)]);
    // all valid, none true: avg 0, pass 0
    agg.add_task("a", &[correct(false), correct(false), correct(false)]);
    // one missing attempt, one true: avg None (error), pass 1
    agg.add_task("a", &[correct(false), correct(true)]);
    // one missing attempt, none true: avg None, pass None (both error)
    agg.add_task("a", &[correct(false), correct(false)]);
    // all present, one without the metric: avg None (unavailable), pass None (unavailable)
    agg.add_task("a", &[correct(false), ok(&[]), correct(false)]);
    // extra attempts beyond k are ignored
    agg.add_task(
        "a",
        &[correct(true), correct(true), correct(true), correct(false)],
    );
    let report = agg.report();
    assert_eq!(
        report
            .series
            .iter()
            .map(|s| (s.series_id.as_str(), s.role.as_str()))
            .collect::<Vec<_>>(),
        // As upstream: every series of the primary metric is a headline.
        [
            ("correct.avg@3", "headline"),
            ("correct.pass@3", "headline")
        ]
    );
    let avg = series(&report, "correct.avg@3");
    assert!(close(avg.value, (2.0 / 3.0 + 0.0 + 1.0) / 3.0));
    assert_eq!(
        avg.counts,
        SeriesCounts {
            total: 6,
            evaluated: 3,
            error: 2,
            unavailable: 1,
            invalidated: 0
        }
    );
    let pass = series(&report, "correct.pass@3");
    assert!(close(pass.value, 3.0 / 4.0));
    assert_eq!(
        pass.counts,
        SeriesCounts {
            total: 6,
            evaluated: 4,
            error: 1,
            unavailable: 1,
            invalidated: 0
        }
    );
}

#[test]
fn strategy_pass_reports_only_primary_pass() {
    let mut agg = MetricAggregator::new(contract_with_aux(), 2, AttemptStrategy::Pass);
    agg.add_task("", &[correct(false), correct(true)]);
    agg.add_task("", &[correct(false), correct(false)]);
    let report = agg.report();
    assert_eq!(report.strategy, AttemptStrategy::Pass);
    assert_eq!(report.series.len(), 1);
    let s = &report.series[0];
    assert_eq!(
        (s.series_id.as_str(), s.role.as_str()),
        ("correct.pass@2", "headline")
    );
    assert!(close(s.value, 0.5));

    // k = 1: the primary's native series only.
    let agg = MetricAggregator::new(contract_with_aux(), 1, AttemptStrategy::Pass);
    let ids: Vec<_> = agg
        .report()
        .series
        .into_iter()
        .map(|s| s.series_id)
        .collect();
    assert_eq!(ids, ["correct.native@1"]);

    // A scalar primary cannot be reduced with pass: falls back to avg.
    let contract = MetricContract {
        metrics: vec![MetricSpec {
            primary: true,
            ..MetricSpec::new("score", MetricKind::Scalar)
        }],
    };
    let agg = MetricAggregator::new(contract, 2, AttemptStrategy::Pass);
    let ids: Vec<_> = agg
        .report()
        .series
        .into_iter()
        .map(|s| s.series_id)
        .collect();
    assert_eq!(ids, ["score.avg@2"]);
}

#[test]
fn invalidated_task_fails_evaluation_with_reference_values() {
    let mut agg = MetricAggregator::new(MetricContract::correct(), 2, AttemptStrategy::Avg);
    agg.add_task("x", &[correct(true), correct(true)]);
    agg.add_task("x", &[correct(true), correct(false)]);
    agg.add_task("y", &[correct(true), fatal()]);
    let report = agg.report();
    assert!(report.evaluation_failed);
    for s in &report.series {
        assert_eq!(s.value, None, "{}", s.series_id);
        assert_eq!(s.counts.invalidated, 1);
        assert_eq!(s.counts.total, 3);
        assert_eq!(s.counts.evaluated, 2);
        assert_eq!(s.categories["y"].any_value(), None);
        assert_eq!(s.categories["y"].counts.invalidated, 1);
    }
    assert!(close(
        series(&report, "correct.avg@2").reference_value,
        0.75
    ));
    assert!(close(
        series(&report, "correct.pass@2").reference_value,
        1.0
    ));
    let line = headline_line(&report).unwrap_or_default();
    assert!(line.starts_with("correct (avg@2): n/a — 1 of "), "{line}");
    assert!(line.contains("invalidated; 75.00% over the "), "{line}");
}

#[test]
fn categories_use_the_same_rule() {
    let mut agg = MetricAggregator::new(MetricContract::correct(), 1, AttemptStrategy::Avg);
    agg.add_task("math", &[correct(true)]);
    agg.add_task("math", &[correct(false)]);
    agg.add_task("code", &[correct(true)]);
    agg.add_task("code", &[errored()]);
    agg.add_task("", &[errored()]);
    let report = agg.report();
    let s = &report.series[0];
    assert_eq!(s.categories.len(), 3);
    assert!(close(s.categories["math"].value, 0.5));
    assert!(close(s.categories["code"].value, 1.0));
    assert_eq!(s.categories["default"].value, None);
    // micro-weighted: mean over evaluated tasks, not the mean of category means
    assert!(close(s.value, 2.0 / 3.0));
}

#[test]
fn bool_and_float_metrics() {
    let mut agg = MetricAggregator::new(contract_with_aux(), 1, AttemptStrategy::Avg);
    agg.add_task(
        "",
        &[ok(&[
            ("correct", true.into()),
            ("steps", 4i64.into()),
            ("tool_ok", true.into()),
        ])],
    );
    agg.add_task(
        "",
        &[ok(&[
            ("correct", false.into()),
            ("steps", 1.5.into()),
            // not a strict bool: invalid for a binary metric
            ("tool_ok", 1.0.into()),
        ])],
    );
    agg.add_task(
        "",
        &[ok(&[
            // not a strict bool: invalid for a binary metric
            ("correct", MetricValue::Int(1)),
            // a bool observed for a scalar metric counts as 1.0
            ("steps", true.into()),
            ("tool_ok", false.into()),
        ])],
    );
    agg.add_task("", &[ok(&[("steps", f64::NAN.into())])]);
    let report = agg.report();
    let ids: Vec<_> = report.series.iter().map(|s| s.series_id.as_str()).collect();
    assert_eq!(
        ids,
        ["correct.native@1", "steps.native@1", "tool_ok.native@1"]
    );
    let c = series(&report, "correct.native@1");
    assert!(close(c.value, 0.5));
    assert_eq!((c.counts.evaluated, c.counts.unavailable), (2, 2));
    let steps = series(&report, "steps.native@1");
    assert!(close(steps.value, (4.0 + 1.5 + 1.0) / 3.0));
    assert_eq!((steps.counts.evaluated, steps.counts.unavailable), (3, 1));
    assert_eq!(steps.role, "auxiliary");
    let tool = series(&report, "tool_ok.native@1");
    assert!(close(tool.value, 0.5));
    assert_eq!(tool.counts.evaluated, 2);

    // k > 1: scalar metrics get avg only, binary ones avg and pass.
    let agg = MetricAggregator::new(contract_with_aux(), 2, AttemptStrategy::Avg);
    let ids: Vec<_> = agg
        .report()
        .series
        .into_iter()
        .map(|s| s.series_id)
        .collect();
    assert_eq!(
        ids,
        [
            "correct.avg@2",
            "correct.pass@2",
            "steps.avg@2",
            "tool_ok.avg@2",
            "tool_ok.pass@2"
        ]
    );
}

#[test]
fn outcome_from_result() {
    let mut r = RunResult::new("t");
    r.metrics.insert("correct".into(), true.into());
    assert_eq!(AttemptOutcome::from_result(&r), correct(true));
    r.push_issue(ExecutionIssue::error(IssuePhase::Run, "agent_failed", "m"));
    let o = AttemptOutcome::from_result(&r);
    assert!(
        !o.error && !o.fatal && o.failed,
        "the agent's failure is scored"
    );
    r.push_issue(ExecutionIssue::error(IssuePhase::Evaluate, "e", "m"));
    let o = AttemptOutcome::from_result(&r);
    assert!(o.error && !o.failed, "a verifier's error is not scored");
    r.metrics.clear();
    assert!(AttemptOutcome::from_result(&r).error);
    r.push_issue(ExecutionIssue::fatal(
        IssuePhase::Run,
        "environment_failed",
        "m",
    ));
    assert!(AttemptOutcome::from_result(&r).fatal);
    let mut w = RunResult::new("t");
    w.push_issue(ExecutionIssue::warning(IssuePhase::Run, "w", "m"));
    let o = AttemptOutcome::from_result(&w);
    assert!(!o.error && !o.fatal);
}

#[test]
fn empty_report() {
    let agg = MetricAggregator::new(MetricContract::correct(), 0, AttemptStrategy::Avg);
    assert_eq!(agg.k(), 1);
    let report = agg.report();
    assert_eq!(report.series[0].value, None);
    assert_eq!(report.series[0].counts, SeriesCounts::default());
    assert_eq!(
        headline_line(&report).as_deref(),
        Some("correct (native@1): n/a (0/0 evaluated)")
    );
    assert_eq!(headline_line(&MetricReport::default()), None);
}

fn title() -> SummaryTitle {
    SummaryTitle {
        benchmark: "example_exact_match".into(),
        model: "gpt-4o".into(),
        harness: "example_calculator".into(),
        run_id: "20260101_120000".into(),
    }
}

#[test]
fn render_k1_summary() {
    let mut agg = MetricAggregator::new(contract_with_aux(), 1, AttemptStrategy::Avg);
    for (cat, c, steps) in [
        ("a", true, 3i64),
        ("a", true, 5),
        ("b", false, 2),
        ("b", true, 2),
    ] {
        agg.add_task(
            cat,
            &[ok(&[("correct", c.into()), ("steps", steps.into())])],
        );
    }
    agg.add_task("b", &[errored()]);
    let report = agg.report();
    // k = 1: no attempts line, no failure note; the categories of the primary metric.
    insta::assert_snapshot!(render_summary(&report, &title()));
}

#[test]
fn render_single_category_and_failure() {
    let mut agg = MetricAggregator::new(MetricContract::correct(), 2, AttemptStrategy::Avg);
    agg.add_task("only", &[correct(true), correct(false)]);
    agg.add_task("only", &[fatal(), correct(true)]);
    agg.add_task("only", &[correct(true), fatal()]);
    let report = agg.report();
    // One category: no categories table; fatal tasks: the failure note.
    insta::assert_snapshot!(render_summary(
        &report,
        &SummaryTitle {
            harness: String::new(),
            ..title()
        },
    ));
}

#[test]
fn memory_is_per_category_not_per_task() {
    let mut agg = MetricAggregator::new(MetricContract::correct(), 1, AttemptStrategy::Avg);
    let attempts = [correct(true)];
    for i in 0..10_000 {
        agg.add_task(if i % 2 == 0 { "even" } else { "odd" }, &attempts);
    }
    assert!(agg.series.iter().all(|s| s.categories.len() == 2));
    assert_eq!(agg.report().series[0].counts.total, 10_000);
}

#[test]
fn model_usage_of_every_attempt_is_summed_into_the_report() {
    let mut agg = MetricAggregator::new(MetricContract::correct(), 2, AttemptStrategy::Avg);
    let used = |prompt: u64| AttemptOutcome {
        usage: TokenUsage {
            prompt_tokens: prompt,
            completion_tokens: 1,
            requests: 1,
            ..TokenUsage::default()
        },
        ..correct(true)
    };
    agg.add_task("a", &[used(10), used(5)]);
    agg.add_task("a", &[used(1), correct(false)]);
    let usage = &agg.report().extra["model_usage"];
    assert_eq!(usage["prompt_tokens"], 16);
    assert_eq!(usage["completion_tokens"], 3);
    assert_eq!(usage["requests"], 3);
    let empty = MetricAggregator::new(MetricContract::correct(), 1, AttemptStrategy::Avg);
    assert!(empty.report().extra.is_empty());
}

#[test]
fn the_usage_line_shows_the_cost_and_its_source_or_no_price() {
    let usage_line =
        |cost: Option<f64>, pricing: Option<agentcompass_schema::metrics::PriceRecord>| {
            let mut agg = MetricAggregator::new(MetricContract::correct(), 1, AttemptStrategy::Avg);
            let used = AttemptOutcome {
                usage: TokenUsage {
                    prompt_tokens: 1000,
                    cached_tokens: 400,
                    completion_tokens: 200,
                    requests: 2,
                    cost_usd: cost,
                },
                ..correct(true)
            };
            agg.add_task("a", &[used]);
            let mut report = agg.report();
            HostExtras {
                pricing,
                ..HostExtras::default()
            }
            .write_into(&mut report.extra);
            let summary = render_summary(&report, &title());
            let line = summary.lines().find(|l| l.starts_with("Model usage: "));
            line.map(str::to_string).unwrap_or_default()
        };
    let table = agentcompass_schema::metrics::PriceRecord {
        source: "litellm@1.110.2".into(),
        entry: Some("claude-sonnet-4-5".into()),
        input: 3.0,
        output: 15.0,
        cached_input: 0.3,
    };
    assert_eq!(
        usage_line(Some(0.00492), Some(table)),
        "Model usage: 2 calls · 1000 prompt tokens (400 cached) · 200 completion tokens · $0.0049 (litellm@1.110.2)"
    );
    // A cost recomputed by `summary` without the record: the figure alone.
    assert!(usage_line(Some(0.00492), None).ends_with("completion tokens · $0.0049"));
    assert!(usage_line(None, None).ends_with("completion tokens · no price"));
}

#[test]
fn only_agent_and_limit_outcomes_are_scored() {
    let with = |metrics: &[(&str, MetricValue)], code: &str, severity: IssueSeverity| {
        AttemptOutcome::from_parts(
            metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            &[ExecutionIssue::new(
                severity,
                IssuePhase::Run,
                code,
                "answered 429 (gave up)",
            )],
            TokenUsage::default(),
        )
    };
    let mut agg = MetricAggregator::new(MetricContract::correct(), 1, AttemptStrategy::Avg);
    // Solved; an agent timeout without a value (a failure); a limit with the verifier's value.
    agg.add_task("a", &[correct(true)]);
    agg.add_task("a", &[with(&[], "run_timeout", IssueSeverity::Error)]);
    agg.add_task(
        "a",
        &[with(
            &[("correct", MetricValue::Bool(true))],
            "limit_exceeded",
            IssueSeverity::Error,
        )],
    );
    // The model's and the environment's failures are not scored, whatever the verifier said.
    agg.add_task(
        "a",
        &[with(
            &[("correct", MetricValue::Bool(false))],
            "model_failed",
            IssueSeverity::Error,
        )],
    );
    agg.add_task(
        "a",
        &[with(&[], "environment_failed", IssueSeverity::Error)],
    );
    agg.add_skipped("budget_exhausted");
    let report = agg.report();
    let headline = report.headline().unwrap();
    assert!(close(headline.value, 2.0 / 3.0), "{headline:?}");
    assert_eq!(
        (
            headline.counts.total,
            headline.counts.evaluated,
            headline.counts.error
        ),
        (5, 3, 2)
    );
    assert_eq!(
        report.extra["not_scored"],
        serde_json::json!({"tasks": 2, "classes": {
            "model": {"tasks": 1, "reasons": {"rate limited": 1}},
            "environment": {"tasks": 1, "reasons": {"environment_failed": 1}}}})
    );
    assert_eq!(
        report.extra["skipped"],
        serde_json::json!({"tasks": 1, "reasons": {"budget_exhausted": 1}})
    );
    assert_eq!(
        not_scored_line(&report).unwrap(),
        "2 tasks not scored: 1 environment (environment_failed), 1 model (rate limited)"
    );
}
