//! pass@k as Harbor 0.25 computes it (`utils/pass_at_k.py`): over the trials (attempts) of
//! each task, successes counted from single-key binary rewards (a trial without a reward
//! counts 0); any trial with another reward shape (several keys, a value other than 0 or 1)
//! and there is no pass@k at all. The k values are 2, 4, 8, … and 5, 10, 15, … up to the
//! fewest trials of a task — never 1 —, each the mean over tasks of the unbiased estimator
//! `1 − Π_{i<k} (n−c−i)/(n−i)` (1 when `n − c < k`).
//!
//! Kept per task as two counts (memory flat in the attempts).

use std::collections::BTreeMap;

/// The successes of the run's tasks, folded task by task.
#[derive(Debug, Clone)]
pub struct PassAtK {
    /// `(trials, successes)` per task.
    tasks: Vec<(u32, u32)>,
    /// Every reward so far was a single-key 0 or 1 (or none).
    binary: bool,
}

impl Default for PassAtK {
    fn default() -> Self {
        PassAtK {
            tasks: Vec::new(),
            binary: true,
        }
    }
}

impl PassAtK {
    /// Adds one task: each trial's reward dict (`None`: no verifier result).
    pub fn add_task<'a>(
        &mut self,
        trials: impl IntoIterator<Item = Option<&'a BTreeMap<String, f64>>>,
    ) {
        let (mut n, mut c) = (0u32, 0u32);
        for rewards in trials {
            n += 1;
            let Some(rewards) = rewards else { continue };
            let mut values = rewards.values();
            match (values.next(), values.next()) {
                (Some(v), None) if *v == 1.0 => c += 1,
                (Some(v), None) if *v == 0.0 => {}
                _ => self.binary = false,
            }
        }
        if n > 0 {
            self.tasks.push((n, c));
        }
    }

    /// pass@k by k (`None`: not binary, no task, or fewer than 2 trials per task).
    pub fn value(&self) -> Option<BTreeMap<u32, f64>> {
        if !self.binary || self.tasks.is_empty() {
            return None;
        }
        let fewest = self.tasks.iter().map(|(n, _)| *n).min()?;
        let out: BTreeMap<u32, f64> = eligible_k(fewest)
            .into_iter()
            .map(|k| {
                let sum: f64 = self.tasks.iter().map(|(n, c)| for_task(*n, *c, k)).sum();
                (k, sum / self.tasks.len() as f64)
            })
            .collect();
        (!out.is_empty()).then_some(out)
    }
}

/// Harbor's `_eligible_k_values`: powers of two from 2 and multiples of 5, up to `max_k`.
fn eligible_k(max_k: u32) -> Vec<u32> {
    let mut ks = std::collections::BTreeSet::new();
    let mut k = 2;
    while k <= max_k {
        ks.insert(k);
        k *= 2;
    }
    let mut k = 5;
    while k <= max_k {
        ks.insert(k);
        k += 5;
    }
    ks.into_iter().collect()
}

/// Harbor's `_pass_at_k_for_task`.
fn for_task(n: u32, c: u32, k: u32) -> f64 {
    if n - c < k {
        return 1.0;
    }
    let mut product = 1.0;
    for i in 0..k {
        product *= f64::from(n - c - i) / f64::from(n - i);
    }
    1.0 - product
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reward(v: f64) -> BTreeMap<String, f64> {
        BTreeMap::from([("reward".to_string(), v)])
    }

    /// Harbor 0.25's `_compute_pass_at_k_for_trials` on
    /// `{"a": [1,0,0,1,0], "b": [0,0,null,0,1]}` answers `{2: 0.55, 4: 0.9, 5: 1.0}`.
    #[test]
    fn harbors_reference_table() {
        let (one, zero) = (reward(1.0), reward(0.0));
        let mut pass = PassAtK::default();
        pass.add_task([
            Some(&one),
            Some(&zero),
            Some(&zero),
            Some(&one),
            Some(&zero),
        ]);
        pass.add_task([Some(&zero), Some(&zero), None, Some(&zero), Some(&one)]);
        let value = pass.value().unwrap();
        assert_eq!(value.keys().copied().collect::<Vec<_>>(), [2, 4, 5]);
        assert!((value[&2] - 0.55).abs() < 1e-12, "{value:?}");
        assert!((value[&4] - 0.9).abs() < 1e-12);
        assert_eq!(value[&5], 1.0);
    }

    #[test]
    fn other_reward_shapes_or_single_trials_give_none() {
        let mut pass = PassAtK::default();
        pass.add_task([Some(&reward(1.0))]);
        assert_eq!(pass.value(), None, "k = 1 is never reported");
        let half = reward(0.5);
        let mut pass = PassAtK::default();
        pass.add_task([Some(&half), Some(&half)]);
        assert_eq!(pass.value(), None);
        let two = BTreeMap::from([("a".to_string(), 1.0), ("b".to_string(), 0.0)]);
        let mut pass = PassAtK::default();
        pass.add_task([Some(&two), Some(&two)]);
        assert_eq!(pass.value(), None);
    }
}
