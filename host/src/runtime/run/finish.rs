//! Finishing a request's run: metrics, `summary.md`, the final `run_info.json`, the last
//! progress events, and one filesystem sync for everything the run wrote.

use std::time::SystemTime;

use agentcompass_results::status::RunStatus;
use agentcompass_results::store::RunInfo;
use agentcompass_results::time::rfc3339;
use serde_json::{json, Value};

use super::RequestOutcome;
use agentcompass_plugin_api::contracts::MetricReport;

use crate::metrics::{
    headline_line_of, not_scored_line, render_summary, skipped_line, SummaryTitle,
};
use crate::progress::ProgressEvent;
use crate::runtime::context::RequestContext;

/// Writes the run's report and final state. A run that would be `completed` but has tasks
/// with final FATAL issues is `failed`.
pub(super) async fn finish(
    rc: &RequestContext,
    info: &mut RunInfo,
    mut outcome: RequestOutcome,
    status: RunStatus,
    error: Option<String>,
) -> RequestOutcome {
    rc.emit(ProgressEvent::SummaryStarted);
    let mut report = {
        let metrics = match rc.metrics.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        metrics.report()
    };
    add_dataset_metrics(rc, &mut report).await;
    add_rate_limits(rc, &mut report);
    let pricing = add_pricing(rc, &mut report);
    let mut status = status;
    if status == RunStatus::Completed && report.evaluation_failed {
        status = RunStatus::Failed;
        outcome.error = Some(format!(
            "final FATAL issues; results: {}",
            rc.store.run_dir().display()
        ));
    }
    write_report(rc, &report);
    write_analysis_summary(rc).await;
    info.status = status;
    if let Some(provenance) = info.provenance.as_mut() {
        provenance["datasets"] = rc.datasets.to_json();
        if let (Some(pricing), Some(model)) = (&pricing, provenance.get_mut("model")) {
            model["pricing"] = serde_json::to_value(pricing).unwrap_or_default();
        }
        let actions = rc.live.actions();
        if !actions.is_empty() {
            provenance["control"] = Value::Array(actions);
        }
    }
    info.finished_at = Some(rfc3339(SystemTime::now()));
    info.error = error.or(outcome.error.clone());
    info.metric_artifacts = Some(
        json!({"generated_at": info.finished_at, "source": "evaluation", "report": {"k": report.k, "strategy": report.strategy, "aggregation": report.aggregation}}),
    );
    if let Err(e) = rc.store.finalize_run_info(info) {
        tracing::error!("cannot write run_info.json: {e}");
    }
    if let Some(otel) = &rc.otel {
        otel.finish(info).await;
    }
    rc.emit(ProgressEvent::RunFinished {
        status,
        error: info.error.as_deref(),
    });
    rc.progress.finish();
    sync_results(rc).await;
    outcome.status = status;
    outcome.error = info.error.clone();
    outcome.headline = headline_line_of(&report, outcome.selected as u64);
    outcome.not_scored = not_scored_line(&report);
    outcome.not_scored_reasons = not_scored_reasons(&report);
    outcome.skipped = skipped_line(&report);
    outcome.harbor_metrics = crate::metrics::harbor_metric_lines(&report);
    outcome.issues = rc.issues.summary();
    outcome
}

/// The tasks not scored by class and reason, from the report's `extra.not_scored`.
fn not_scored_reasons(report: &MetricReport) -> Vec<(String, String, u64)> {
    let Some(not_scored) = agentcompass_schema::metrics::HostExtras::of(report).not_scored else {
        return Vec::new();
    };
    let mut reasons = Vec::new();
    for (class, counts) in not_scored.classes {
        for (reason, tasks) in counts.reasons {
            reasons.push((class.clone(), reason, tasks));
        }
    }
    reasons
}

/// The analyzers' summary of the run, from the published tasks' analysis results (read back
/// one task at a time); a failure is logged.
async fn write_analysis_summary(rc: &RequestContext) {
    let Some(analysis) = &rc.analysis else {
        return;
    };
    let run_dir = rc.store.run_dir().to_path_buf();
    let analysis = analysis.clone();
    let model = rc.request.model.id.clone();
    let written =
        tokio::task::spawn_blocking(move || analysis.write_summary(&run_dir, &model)).await;
    match written {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => tracing::error!("cannot write the analysis summary: {e}"),
        Err(e) => tracing::error!("cannot write the analysis summary: {e}"),
    }
}

/// Harbor's own metrics of the run (`extra.dataset_metrics`, `extra.pass_at_k`: module
/// `metrics::harbor`), read back from the published tasks; a failed metric script is one
/// warning naming it.
async fn add_dataset_metrics(rc: &RequestContext, report: &mut MetricReport) {
    // Only Harbor's benchmark records Harbor rewards: other runs are not read again.
    let harbor = rc.resolved.benchmark.id == "harbor";
    if !harbor && rc.dataset_metrics.is_empty() && rc.resolved.execution.metric_scripts.is_empty() {
        return;
    }
    let run_dir = rc.store.run_dir().to_path_buf();
    let declared = rc.dataset_metrics.clone();
    let scripts = rc.resolved.execution.metric_scripts.clone();
    let k = rc.resolved.execution.attempts.k;
    let install_root = rc.install_cache.root().to_path_buf();
    let computed = tokio::task::spawn_blocking(move || {
        crate::metrics::harbor::compute(&crate::metrics::harbor::MetricInputs {
            run_dir: &run_dir,
            declared: &declared,
            scripts: &scripts,
            k,
            install_root: &install_root,
        })
    })
    .await;
    match computed {
        Ok(computed) => {
            for warning in &computed.warnings {
                tracing::warn!("{warning}");
            }
            computed.extra.write_into(&mut report.extra);
        }
        Err(e) => tracing::error!("cannot compute the dataset metrics: {e}"),
    }
}

/// How the model endpoint rate-limited the run (`extra.rate_limits`), when it did.
fn add_rate_limits(rc: &RequestContext, report: &mut MetricReport) {
    if !rc.model.is_configured() {
        return;
    }
    let limit = rc.model.limit();
    if limit.rate_limited == 0 && limit.waited_seconds == 0.0 {
        return;
    }
    let extras = agentcompass_schema::metrics::HostExtras {
        rate_limits: Some(agentcompass_schema::metrics::RateLimits {
            endpoint: rc.model.url().to_string(),
            answers: limit.rate_limited,
            waited_seconds: limit.waited_seconds,
            limit: limit.limit,
            max: limit.max,
        }),
        ..Default::default()
    };
    extras.write_into(&mut report.extra);
}

/// The prices the run's cost was computed with (`extra.pricing`: `model.params.pricing` or
/// the price table's entry), when the model had a price and was called.
fn add_pricing(
    rc: &RequestContext,
    report: &mut MetricReport,
) -> Option<agentcompass_schema::metrics::PriceRecord> {
    use agentcompass_schema::metrics::{HostExtras, PriceRecord};
    // Checked first: an unpriced run, or one without calls, never parses the table.
    HostExtras::of(report).model_usage?.cost_usd?;
    let price = rc.model.price()?;
    let record = PriceRecord {
        source: price.source.clone(),
        entry: price.entry.clone(),
        input: price.pricing.input,
        output: price.pricing.output,
        cached_input: price.pricing.cached_input,
    };
    let extras = HostExtras {
        pricing: Some(record.clone()),
        ..Default::default()
    };
    extras.write_into(&mut report.extra);
    Some(record)
}

/// `metrics.json` and `summary.md`.
fn write_report(rc: &RequestContext, report: &MetricReport) {
    let title = SummaryTitle {
        benchmark: rc.request.benchmark.id.clone(),
        model: rc.request.model.id.clone(),
        harness: rc.request.harness.id.clone(),
        run_id: rc.store.run_id().to_string(),
    };
    let report_json = serde_json::to_value(report).unwrap_or(Value::Null);
    if let Err(e) = rc.store.write_metrics(&report_json) {
        tracing::error!("cannot write metrics.json: {e}");
    }
    if let Err(e) = rc.store.write_summary(&render_summary(report, &title)) {
        tracing::error!("cannot write summary.md: {e}");
    }
}

/// Batched durability: everything this run wrote reaches the disk here (see fsutil).
async fn sync_results(rc: &RequestContext) {
    let run_dir = rc.store.run_dir().to_path_buf();
    let synced = tokio::task::spawn_blocking(move || {
        agentcompass_results::fsutil::sync_filesystem(&run_dir)
    })
    .await;
    if let Ok(Err(e)) = synced {
        tracing::warn!("cannot sync the results filesystem: {e}");
    }
}
