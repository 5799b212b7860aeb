//! A Harbor job's `stats` from its trials, as Harbor's `JobStats` computes them: per eval
//! (`<agent>__<model>__<dataset>`) the trials with rewards, the errors, the mean of each reward
//! key over the trials with rewards (a key a trial lacks counts 0, as Harbor's `Mean`
//! aggregates reward dicts), which trials got which value, and which failed how; the token
//! and cost sums over the job.

use std::collections::BTreeMap;

use agentcompass_schema::harbor_job::{AgentDatasetStats, JobStats, TrialResult};
use serde_json::{Map, Value};

use super::python_float;

/// The eval key Harbor files trials under.
pub(super) fn eval_key(agent: &str, model: Option<&str>, dataset: &str) -> String {
    match model.filter(|m| !m.is_empty()) {
        // Harbor keys by the model's name with its provider stripped.
        Some(model) => format!(
            "{agent}__{}__{dataset}",
            model.rsplit('/').next().unwrap_or(model)
        ),
        None => format!("{agent}__{dataset}"),
    }
}

/// The job's stats over `trials`, filed under `key`.
pub(super) fn job_stats(key: &str, trials: &[TrialResult]) -> JobStats {
    let mut eval = AgentDatasetStats::default();
    let mut sums: BTreeMap<String, f64> = BTreeMap::new();
    for trial in trials {
        if let Some(exception) = &trial.exception_info {
            eval.n_errors += 1;
            eval.exception_stats
                .entry(exception.exception_type.clone())
                .or_default()
                .push(trial.trial_name.clone());
        }
        let Some(rewards) = trial
            .verifier_result
            .as_ref()
            .and_then(|v| v.rewards.as_ref())
        else {
            continue;
        };
        eval.n_trials += 1;
        for (name, value) in rewards {
            *sums.entry(name.clone()).or_default() += value;
            eval.reward_stats
                .entry(name.clone())
                .or_default()
                .entry(python_float(*value))
                .or_default()
                .push(trial.trial_name.clone());
        }
    }
    if eval.n_trials > 0 {
        let means: Map<String, Value> = sums
            .into_iter()
            .map(|(name, sum)| (name, Value::from(sum / eval.n_trials as f64)))
            .collect();
        eval.metrics.push(means);
    }
    let sum = |get: fn(&TrialResult) -> Option<u64>| {
        let values: Vec<u64> = trials.iter().filter_map(get).collect();
        (!values.is_empty()).then(|| values.iter().sum())
    };
    let costs: Vec<f64> = trials
        .iter()
        .filter_map(|t| t.agent_result.as_ref()?.cost_usd)
        .collect();
    JobStats {
        n_completed_trials: trials.len() as u64,
        n_errored_trials: eval.n_errors,
        evals: BTreeMap::from([(key.to_string(), eval)]),
        n_input_tokens: sum(|t| t.agent_result.as_ref()?.n_input_tokens),
        n_cache_tokens: sum(|t| t.agent_result.as_ref()?.n_cache_tokens),
        n_output_tokens: sum(|t| t.agent_result.as_ref()?.n_output_tokens),
        cost_usd: (!costs.is_empty()).then(|| costs.iter().sum()),
        ..JobStats::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentcompass_schema::harbor_job::VerifierResult;

    fn trial(name: &str, rewards: &[(&str, f64)]) -> TrialResult {
        TrialResult {
            trial_name: name.into(),
            verifier_result: Some(VerifierResult {
                rewards: Some(rewards.iter().map(|(k, v)| (k.to_string(), *v)).collect()),
            }),
            ..TrialResult::default()
        }
    }

    #[test]
    fn means_count_a_missing_key_as_zero_as_harbor_does() {
        // Harbor's own job of the bundled tasks: coverage only on `primes`.
        let trials = [
            trial("fizzbuzz__a", &[("reward", 1.0)]),
            trial("hello__b", &[("reward", 1.0)]),
            trial("primes__c", &[("reward", 1.0), ("coverage", 1.0)]),
        ];
        let stats = job_stats("oracle__tasks", &trials);
        let eval = &stats.evals["oracle__tasks"];
        assert_eq!(eval.n_trials, 3);
        assert_eq!(eval.metrics[0]["reward"], Value::from(1.0));
        assert_eq!(eval.metrics[0]["coverage"], Value::from(1.0 / 3.0));
        assert_eq!(eval.reward_stats["coverage"]["1.0"], ["primes__c"]);
        assert_eq!(stats.n_input_tokens, None);
        assert_eq!(
            eval_key("terminus-2", Some("openai/gpt-4o"), "x"),
            "terminus-2__gpt-4o__x"
        );
        assert_eq!(eval_key("oracle", None, "tasks"), "oracle__tasks");
        assert_eq!(python_float(0.25), "0.25");
    }
}
