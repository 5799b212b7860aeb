//! Reading the verifier's reward files at Harbor's fixed paths (the SDK's
//! [`agentcompass_plugin_api::sdk::verifier::reward`] does the parsing, Harbor's
//! `verifier/verifier.py` semantics).

use std::collections::BTreeMap;

use agentcompass_plugin_api::contracts::MetricValue;
use agentcompass_plugin_api::sdk::verifier::reward as sdk;
pub use agentcompass_plugin_api::sdk::verifier::reward::{RewardError, Rewards, REWARD_KEY};

/// The multi-metric reward file.
pub const REWARD_JSON: &str = "/logs/verifier/reward.json";
/// The single-number reward file.
pub const REWARD_TXT: &str = "/logs/verifier/reward.txt";

/// The metrics of `rewards`: the declared ones only, `reward` (the primary reward) and
/// `correct` (`reward >= 1`). Every named reward of `reward.json` stays in
/// `meta.benchmark.harbor.rewards`: upstream's readers refuse an attempt metric the contract
/// does not declare.
pub fn metrics(rewards: &Rewards) -> BTreeMap<String, MetricValue> {
    rewards.metrics()
}

/// Parses `reward.txt`: one finite number (surrounding whitespace allowed).
#[cfg(test)]
pub fn parse_txt(text: &str) -> Result<f64, RewardError> {
    sdk::parse_txt(text, REWARD_TXT)
}

/// The rewards from the files' contents (`None`: the file does not exist).
pub fn from_files(json: Option<&str>, txt: Option<&str>) -> Result<Rewards, RewardError> {
    sdk::from_files(json, txt, REWARD_JSON, REWARD_TXT)
}
