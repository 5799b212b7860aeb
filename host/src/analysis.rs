//! Analysis of finished attempts (issue 19): the run's analyzers chosen from the registry by
//! `execution.analysis_params` (`agentcompass_analysis` does the selection and the built-ins),
//! each attempt's `analysis_result` added to its `result.json` payload before it is written,
//! and the run-level `analysis_summary.json` / `.md` streamed from the published tasks.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentcompass_analysis::{parse_params, Analysis, SummaryBuilder};
use agentcompass_plugin_api::contracts::{AnalysisInput, ComponentInfo, ComponentKind, JsonMap};
use agentcompass_plugin_api::sdk::Analyzer;
use agentcompass_results::store::{published_tasks, PublishedTask};
use agentcompass_schema::attempt::RESULT_FILE;
use agentcompass_schema::task::TaskRecord;
use serde_json::Value;

use crate::registry::{Registry, RegistryError};

/// `analysis_summary.json`.
pub const SUMMARY_JSON: &str = "analysis_summary.json";
/// `analysis_summary.md`.
pub const SUMMARY_MD: &str = "analysis_summary.md";

/// The analyzers of one run, selected and configured.
pub struct RunAnalysis {
    analysis: Analysis,
    infos: Vec<ComponentInfo>,
    benchmark: String,
}

impl std::fmt::Debug for RunAnalysis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunAnalysis")
            .field("benchmark", &self.benchmark)
            .field("analyzers", &self.analysis.candidate_ids())
            .finish()
    }
}

/// An analyzer with what it says about itself.
type Registered = (ComponentInfo, Arc<dyn Analyzer>);

/// Why the analyzers of a run cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum AnalysisSetupError {
    /// An analyzer could not be instantiated.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The analysis params are refused (`field`: where they came from).
    #[error("{field}: {error}")]
    Params {
        /// `execution.analysis_params` or `--analysis-params`.
        field: &'static str,
        /// What is wrong with them.
        error: agentcompass_analysis::ParamsError,
    },
}

/// Every registered analyzer (built-ins first, then plugins), instantiated.
fn registered(registry: &Registry) -> Result<Vec<Registered>, RegistryError> {
    registry
        .list(ComponentKind::Analyzer)
        .map(|entry| {
            registry
                .analyzer(&entry.info.id)
                .map(|a| (entry.info.clone(), a))
        })
        .collect()
}

impl RunAnalysis {
    /// The analyzers `params` (upstream's `analysis_params`: `analyzers`, `exclude_analyzers`,
    /// per-analyzer options, given as `field`) select for a run of `benchmark`; a bad key or
    /// option is one line naming it.
    pub fn new(
        registry: &Registry,
        params: &JsonMap,
        field: &'static str,
        benchmark: &str,
    ) -> Result<Self, AnalysisSetupError> {
        let analyzers = registered(registry)?;
        let ids: Vec<&str> = analyzers.iter().map(|(i, _)| i.id.as_str()).collect();
        let refused = |error| AnalysisSetupError::Params { field, error };
        let parsed = parse_params(&Value::Object(params.clone()), &ids).map_err(refused)?;
        let infos = analyzers.iter().map(|(i, _)| i.clone()).collect();
        let analysis = Analysis::new(analyzers, &parsed).map_err(refused)?;
        Ok(RunAnalysis {
            analysis,
            infos,
            benchmark: benchmark.to_string(),
        })
    }

    /// The selected analyzer ids.
    pub fn analyzers(&self) -> Vec<&str> {
        self.analysis.candidate_ids()
    }

    /// Sets `payload["analysis_result"]` (an attempt's `result.json` payload) from every
    /// selected analyzer; an analyzer's failure is recorded in its entry, never raised.
    pub fn annotate(
        &self,
        task_id: &str,
        category: Option<&str>,
        ground_truth: &Value,
        attempt: u32,
        payload: &mut Value,
    ) {
        // The payload moves into the input and back: no copy of the trajectory.
        let input = AnalysisInput {
            benchmark: self.benchmark.clone(),
            task_id: task_id.to_string(),
            category: category.filter(|c| !c.is_empty()).map(str::to_string),
            ground_truth: ground_truth.clone(),
            attempt,
            result: std::mem::take(payload),
            options: JsonMap::new(),
        };
        let found = self.analysis.analyze_attempt(&input);
        *payload = input.result;
        payload["analysis_result"] = Value::Object(found);
    }

    /// Writes `analysis_summary.json` and `.md` of `run_dir` from its published tasks'
    /// `analysis_result`s (one task in memory at a time); returns how many tasks it read.
    pub fn write_summary(&self, run_dir: &Path, model: &str) -> std::io::Result<WrittenSummary> {
        write_summary(run_dir, &self.benchmark, model, &self.infos)
    }

    /// Writes the summary of `run_dir`'s tasks into `out_dir`, reading each attempt's
    /// analysis from the tree of [`ANALYSIS_RESULT_FILE`]s written there (the run's task
    /// directories mirrored).
    pub fn write_summary_beside(
        &self,
        run_dir: &Path,
        out_dir: &Path,
        model: &str,
    ) -> std::io::Result<WrittenSummary> {
        let read = |task: &PublishedTask| {
            let mirror = out_dir.join(task.dir.strip_prefix(run_dir).unwrap_or(&task.dir));
            task.record
                .valid_attempts()
                .into_iter()
                .filter_map(|(_, d)| {
                    let bytes = std::fs::read(mirror.join(d).join(ANALYSIS_RESULT_FILE)).ok()?;
                    serde_json::from_slice::<JsonMap>(&bytes).ok()
                })
                .collect()
        };
        summarize(run_dir, out_dir, &self.benchmark, model, &self.infos, &read)
    }
}

/// The one field of an attempt's `result.json` the summary reads; the rest of the record is
/// skipped while parsing, never built (a non-object `analysis_result` fails the parse, and the
/// attempt is left out as before).
#[derive(serde::Deserialize)]
struct AnalysisOnly {
    #[serde(default)]
    analysis_result: Option<JsonMap>,
}

/// The `analysis_result` objects of a published task's attempts, in attempt order.
fn attempt_results(dir: &Path, task: &TaskRecord) -> Vec<JsonMap> {
    task.valid_attempts()
        .into_iter()
        .filter_map(|(_, d)| {
            let bytes = std::fs::read(dir.join(d).join(RESULT_FILE)).ok()?;
            serde_json::from_slice::<AnalysisOnly>(&bytes)
                .ok()?
                .analysis_result
        })
        .collect()
}

/// What a written analysis summary holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WrittenSummary {
    /// The tasks counted.
    pub tasks: u64,
    /// The analyzers its tables list (statistics-only ones, and those that found a bad case
    /// or an error).
    pub analyzers_listed: usize,
}

/// Where `analysis` without `--output` or `--override` keeps one attempt's analysis: the
/// run's `details/<state>/<task>/attempt-N/` mirrored beside the run.
pub const ANALYSIS_RESULT_FILE: &str = "analysis_result.json";

/// Writes the analysis summary of `run_dir` (both files atomically).
pub fn write_summary(
    run_dir: &Path,
    benchmark: &str,
    model: &str,
    infos: &[ComponentInfo],
) -> std::io::Result<WrittenSummary> {
    let read = |task: &PublishedTask| attempt_results(&task.dir, &task.record);
    summarize(run_dir, run_dir, benchmark, model, infos, &read)
}

/// The summary of `run_dir`'s published tasks, their attempts' analyses read by `read`,
/// written into `out_dir`.
fn summarize(
    run_dir: &Path,
    out_dir: &Path,
    benchmark: &str,
    model: &str,
    infos: &[ComponentInfo],
    read: &dyn Fn(&PublishedTask) -> Vec<JsonMap>,
) -> std::io::Result<WrittenSummary> {
    let mut builder = SummaryBuilder::new(benchmark, model, infos.iter());
    let mut tasks = 0;
    for task in published_tasks(run_dir) {
        let results = read(&task);
        let refs: Vec<&JsonMap> = results.iter().collect();
        let file: PathBuf = task
            .dir
            .strip_prefix(run_dir)
            .unwrap_or(&task.dir)
            .join("task.json");
        builder.add_task(&file.to_string_lossy(), Some(&task.record.category), &refs);
        tasks += 1;
    }
    let summary = builder.finish();
    let json = serde_json::to_vec_pretty(&summary.to_json()).map_err(std::io::Error::other)?;
    agentcompass_results::fsutil::write_atomic(&out_dir.join(SUMMARY_JSON), &json, 0o644)?;
    agentcompass_results::fsutil::write_atomic(
        &out_dir.join(SUMMARY_MD),
        summary.to_markdown().as_bytes(),
        0o644,
    )?;
    Ok(WrittenSummary {
        tasks,
        analyzers_listed: summary.analyzers().len(),
    })
}
