//! Distribution fields: which `details` fields of an analyzer the summary aggregates, and
//! how (upstream's `BaseAnalyzer.distribution_fields`). An analyzer declares them in its
//! `ComponentInfo.extra.distribution_fields`, as a list of `["<field>", "value_counts" |
//! "numeric_stats"]` pairs (which keeps their order for the Markdown tables) or as an object
//! `{"<field>": "<method>"}`; they apply to its family's key in `analysis_result`.

use agentcompass_plugin_api::contracts::ComponentInfo;
use serde_json::Value;

/// How a distribution field is aggregated over the tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DistributionMethod {
    /// A string or list of strings: how often each value occurs (the 50 most common).
    ValueCounts,
    /// A number: count, min, mean, p50, p90, p95, max.
    NumericStats,
}

impl DistributionMethod {
    /// Reads `"value_counts"` / `"numeric_stats"`.
    pub fn parse(name: &str) -> Option<DistributionMethod> {
        match name {
            "value_counts" => Some(DistributionMethod::ValueCounts),
            "numeric_stats" => Some(DistributionMethod::NumericStats),
            _ => None,
        }
    }
}

/// The distribution fields an analyzer declares, in declaration order (unknown methods are
/// ignored).
pub fn distribution_fields(info: &ComponentInfo) -> Vec<(String, DistributionMethod)> {
    match info.extra.get("distribution_fields") {
        Some(Value::Object(fields)) => fields
            .iter()
            .filter_map(|(field, method)| {
                let method = DistributionMethod::parse(method.as_str()?)?;
                Some((field.clone(), method))
            })
            .collect(),
        Some(Value::Array(pairs)) => pairs
            .iter()
            .filter_map(|pair| {
                let field = pair.get(0)?.as_str()?;
                let method = DistributionMethod::parse(pair.get(1)?.as_str()?)?;
                Some((field.to_string(), method))
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The key an analyzer's results are stored under in `analysis_result`: its family, else
/// its id.
pub fn family_of(info: &ComponentInfo) -> String {
    info.analyzer
        .as_ref()
        .and_then(|a| a.family.clone())
        .unwrap_or_else(|| info.id.clone())
}
