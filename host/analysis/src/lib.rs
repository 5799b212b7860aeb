//! Built-in analyzers over persisted attempt results and the run-level analysis summary
//! (upstream AgentCompass's `analyzers/` and the analysis half of its results store).
//!
//! - [`builtins`]: the built-in analyzers ([`Analyzer`] trait objects with their
//!   [`ComponentInfo`]), each reading the attempt's `result.json` (its ACTF trajectory,
//!   issues, metrics) and never panicking on odd JSON.
//! - [`parse_params`]: `execution.analysis_params` → [`AnalysisParams`].
//! - [`Analysis`]: selection (allow-list, exclusions, datasets, families and priorities) and
//!   running over one attempt → its `analysis_result` object.
//! - [`SummaryBuilder`]: `analysis_summary.json` / `analysis_summary.md` from the
//!   `analysis_result` of every attempt, one task at a time.
//!
//! An analyzer declares the `details` fields the summary aggregates in
//! `ComponentInfo.extra.distribution_fields` (see [`distribution_fields`]).
//!
//! [`Analyzer`]: agentcompass_plugin_api::sdk::Analyzer
//! [`ComponentInfo`]: agentcompass_plugin_api::contracts::ComponentInfo

mod builtins;
mod options;
mod params;
mod py;
mod select;
mod summary;
mod trajectory;
mod view;

pub use builtins::{
    builtins, category, BasicMetricAnalyzer, CompletionLengthAnalyzer,
    ConsecutiveToolRepetitionAnalyzer, CrossStepToolRepetitionAnalyzer, EmptyContentAnalyzer,
    ExceptionAnalyzer, HackDetectionAnalyzer, LlmInferLatencyAnalyzer, StepToolRepetitionAnalyzer,
    ToolErrorAnalyzer, ToolExecutionLatencyAnalyzer, TrajectoryTimeCostAnalyzer,
    TruncationAnalyzer,
};
pub use params::{parse_params, AnalysisParams, ParamsError, UPSTREAM_ONLY_IDS};
pub use select::Analysis;
pub use summary::{
    distribution_fields, family_of, AnalysisSummary, DistributionMethod, SummaryBuilder, OVERALL,
};
