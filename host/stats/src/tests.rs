//! Unit tests. Every reference number below was computed ONCE with Python 3.11,
//! numpy 2.4.6 and scipy 1.17.1 and recorded as a literal; the tests never call Python.
//!
//! The snippet that produced them:
//!
//! ```python
//! import math
//! from fractions import Fraction
//! import numpy as np
//! from scipy.stats import binomtest
//!
//! # mcnemar_exact: (b, c, scipy binomtest p). For n <= 100,000 scipy was also checked against
//! # the exact rational 2·Σ_{i<=k} C(n, i) / 2^n (agreement within 1e-12 relative), and for the
//! # n = 1e6 rows against a 50-digit mpmath evaluation (agreement within 2e-13 relative).
//! for b, c in [(0, 0), (1, 0), (3, 7), (10, 10), (0, 25), (12, 30), (250, 300), (5000, 5200),
//!              (40000, 40500), (10, 5), (499000, 501000), (499500, 500500), (1, 999999)]:
//!     n, k = b + c, min(b, c)
//!     p = float(binomtest(k, n, 0.5).pvalue) if n else 1.0
//!     print(f"({b}, {c}, {p!r}),")
//!
//! # (n, c, k, pass@k, pass^k), exact rationals from math.comb rounded once to f64
//! for n, c, k in PASS_TABLE:  # the (n, c, k) of PASS_K below
//!     at = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
//!     hat = Fraction(math.comb(c, k), math.comb(n, k))
//!     print(f"({n}, {c}, {k}, {float(at)!r}, {float(hat)!r}),")
//!
//! def boot(d):  # numpy percentile bootstrap of the mean, 200,000 resamples
//!     rng = np.random.default_rng(0)
//!     idx = rng.integers(0, len(d), size=(200_000, len(d)))
//!     means = d[idx].mean(axis=1)
//!     return [float(x) for x in np.percentile(means, [2.5, 97.5])]
//!
//! pattern = "F+PFP-PPFF++FPP-PPF+-F-P+P+P+P+P-FFPPPF-+FP+PP+FPF"  # BINARY_PATTERN
//! a = np.array([1.0 if ch in "P-" else 0.0 for ch in pattern])
//! b = np.array([1.0 if ch in "P+" else 0.0 for ch in pattern])
//! print(boot(b - a))   # [-0.06, 0.26]
//! i = np.arange(50)
//! ga = ((7 * i) % 11) / 10
//! gb = ((7 * i + 3 * (i % 4)) % 11) / 10
//! print(boot(gb - ga)) # [-0.09399999999999999, 0.134]
//! ```

use super::*;

/// `(fixed, broken, scipy.stats.binomtest(min, fixed + broken, 0.5).pvalue)`.
const MCNEMAR: &[(u64, u64, f64)] = &[
    (0, 0, 1.0),
    (1, 0, 1.0),
    (3, 7, 0.34375),
    (10, 10, 1.0),
    (0, 25, 5.960464477539063e-08),
    (12, 30, 0.007915897334896727),
    (250, 300, 0.036578745549102676),
    (5000, 5200, 0.04878796312682234),
    (40000, 40500, 0.07862036880511007),
    (10, 5, 0.30175781249999994),
    (499000, 501000, 0.0456082998653896),
    (499500, 500500, 0.3177946913633297),
    // True value 2.02e-301024: underflows to 0 in f64.
    (1, 999999, 0.0),
];

/// `(n, c, k, pass@k, pass^k)`, exact rationals (Python `math.comb`) rounded to f64.
#[allow(clippy::type_complexity)]
const PASS_K: &[(u64, u64, u64, f64, f64)] = &[
    (1, 0, 1, 0.0, 0.0),
    (1, 1, 1, 1.0, 1.0),
    (5, 2, 1, 0.4, 0.4),
    (5, 2, 2, 0.7, 0.1),
    (5, 2, 3, 0.9, 0.0),
    (5, 2, 4, 1.0, 0.0),
    (10, 3, 1, 0.3, 0.3),
    (10, 3, 2, 0.5333333333333333, 0.06666666666666667),
    (10, 3, 5, 0.9166666666666666, 0.0),
    (10, 7, 3, 0.9916666666666667, 0.2916666666666667),
    (10, 10, 10, 1.0, 1.0),
    (20, 0, 5, 0.0, 0.0),
    (20, 1, 1, 0.05, 0.05),
    (20, 5, 10, 0.9837461300309598, 0.0),
    (20, 15, 4, 0.9989680082559339, 0.28173374613003094),
    (100, 1, 1, 0.01, 0.01),
    (100, 37, 10, 0.992616797214249, 2.0122698376741604e-05),
    (100, 90, 20, 1.0, 0.09511627243078842),
    (200, 13, 100, 0.9999194971988055, 0.0),
    (200, 187, 100, 1.0, 8.050280119455824e-05),
    (1000, 1, 1, 0.001, 0.001),
    (1000, 999, 500, 1.0, 0.5),
    (50, 50, 1, 1.0, 1.0),
    (8, 4, 8, 1.0, 0.0),
    (1_000_000, 3, 2, 5.999993999994e-06, 6.000006000006e-12),
];

/// 50 paired binary tasks: `P` both pass, `F` both fail, `+` fixed (A fails, B passes),
/// `-` broken (A passes, B fails). 20 P, 13 F, 11 fixed, 6 broken: mean difference 0.1.
const BINARY_PATTERN: &str = "F+PFP-PPFF++FPP-PPF+-F-P+P+P+P+P-FFPPPF-+FP+PP+FPF";

fn binary_runs() -> (Vec<f64>, Vec<f64>) {
    let a = BINARY_PATTERN
        .chars()
        .map(|ch| if matches!(ch, 'P' | '-') { 1.0 } else { 0.0 })
        .collect();
    let b = BINARY_PATTERN
        .chars()
        .map(|ch| if matches!(ch, 'P' | '+') { 1.0 } else { 0.0 })
        .collect();
    (a, b)
}

fn graded_runs() -> (Vec<f64>, Vec<f64>) {
    let a = (0..50_u32)
        .map(|i| f64::from((7 * i) % 11) / 10.0)
        .collect();
    let b = (0..50_u32)
        .map(|i| f64::from((7 * i + 3 * (i % 4)) % 11) / 10.0)
        .collect();
    (a, b)
}

fn diffs((a, b): (Vec<f64>, Vec<f64>)) -> Vec<f64> {
    a.iter().zip(&b).map(|(x, y)| y - x).collect()
}

fn assert_close(got: f64, want: f64, rel: f64, abs: f64, what: &str) {
    let err = (got - want).abs();
    assert!(
        err <= abs || err <= rel * want.abs(),
        "{what}: got {got:e}, want {want:e} (error {err:e})"
    );
}

#[test]
fn mcnemar_exact_matches_scipy() {
    for &(fixed, broken, want) in MCNEMAR {
        let what = format!("mcnemar_exact({fixed}, {broken})");
        assert_close(mcnemar_exact(fixed, broken), want, 1e-9, 1e-12, &what);
        // The test is symmetric in its two counts.
        assert_eq!(mcnemar_exact(fixed, broken), mcnemar_exact(broken, fixed));
    }
}

#[test]
fn mcnemar_exact_small_cases_are_exact() {
    // 2·(1 + 15 + 105 + 455 + 1365 + 3003)/2^15, exactly representable.
    assert_close(mcnemar_exact(10, 5), 0.3017578125, 1e-13, 0.0, "(10, 5)");
    // 2/2^n for k = 0.
    assert_close(
        mcnemar_exact(0, 25),
        2.0_f64.powi(-24),
        1e-13,
        0.0,
        "(0, 25)",
    );
    assert_close(mcnemar_exact(0, 2), 0.5, 1e-13, 0.0, "(0, 2)");
    assert_eq!(mcnemar_exact(0, 1), 1.0);
    // n odd, k = (n - 1)/2: exactly one half of the mass on each side.
    assert_eq!(mcnemar_exact(7, 8), 1.0);
    // Huge counts do not overflow or panic.
    assert_eq!(mcnemar_exact(u64::MAX, u64::MAX), 1.0);
    assert_eq!(mcnemar_exact(0, u64::MAX), 0.0);
}

#[test]
fn mcnemar_exact_is_monotone_in_the_imbalance() {
    // Fixing the total, moving the split away from the middle lowers p.
    let mut last = 1.0;
    for k in (0..=500_u64).rev() {
        let p = mcnemar_exact(k, 1000 - k);
        assert!(p <= last, "k = {k}: {p} > {last}");
        last = p;
    }
}

#[test]
fn mcnemar_counts_discordant_pairs() {
    let a = [true, true, false, false, true, false, false];
    let b = [true, false, true, false, true, true, true];
    let m = mcnemar(&a, &b).unwrap();
    assert_eq!((m.fixed, m.broken), (3, 1));
    assert_eq!(m.p_value, mcnemar_exact(3, 1));
    assert_close(m.p_value, 0.625, 1e-13, 0.0, "(3, 1)");
    assert_eq!(mcnemar(&[true], &[true, false]), None);
    assert_eq!(mcnemar(&[], &[]), None);
    let same = mcnemar(&[true, false], &[true, false]).unwrap();
    assert_eq!((same.fixed, same.broken, same.p_value), (0, 0, 1.0));
}

#[test]
fn pass_at_k_and_pass_hat_k_match_exact_rationals() {
    for &(n, c, k, at, hat) in PASS_K {
        let what = format!("({n}, {c}, {k})");
        assert_close(pass_at_k(n, c, k).unwrap(), at, 1e-12, 0.0, &what);
        assert_close(pass_hat_k(n, c, k).unwrap(), hat, 1e-12, 0.0, &what);
    }
}

#[test]
fn pass_at_k_degenerate_inputs() {
    assert_eq!(pass_at_k(10, 3, 0), None);
    assert_eq!(pass_at_k(10, 3, 11), None);
    assert_eq!(pass_at_k(10, 11, 1), None);
    assert_eq!(pass_at_k(0, 0, 0), None);
    assert_eq!(pass_hat_k(10, 3, 0), None);
    assert_eq!(pass_hat_k(10, 3, 11), None);
    assert_eq!(pass_hat_k(10, 11, 1), None);
    assert_eq!(pass_hat_k(0, 0, 1), None);
    // k = 1 is the plain pass rate for both.
    assert_eq!(pass_at_k(7, 0, 1), Some(0.0));
    assert!(pass_at_k(7, 0, 1).unwrap().is_sign_positive());
    assert_close(pass_at_k(7, 3, 1).unwrap(), 3.0 / 7.0, 1e-15, 0.0, "pass@1");
    assert_close(
        pass_hat_k(7, 3, 1).unwrap(),
        3.0 / 7.0,
        1e-15,
        0.0,
        "pass^1",
    );
}

#[test]
fn mean_of_values() {
    assert_eq!(mean(&[]), None);
    assert_eq!(mean(&[1.0, 2.0, 6.0]), Some(3.0));
}

#[test]
fn bootstrap_matches_numpy_reference() {
    // Reference: numpy percentile bootstrap with 200,000 resamples (Monte Carlo error of its
    // 2.5 % / 97.5 % quantiles ≈ 0.0004). Ours uses 10,000 resamples: the quantile's standard
    // error is sqrt(q(1−q)/m)/f(x_q) ≈ 0.0016/f ≈ 0.002 here, so 0.01 is a ≥ 4σ margin.
    // The binary sample's resample means live on the grid k/50 (spacing 0.02); it was chosen
    // so that its exact bootstrap CDF (a trinomial computed separately) stays ≥ 0.007 away from
    // 0.025 and 0.975 at every grid point, hence both estimates land on the same grid point
    // instead of straddling a jump.
    let cases = [
        ("binary", diffs(binary_runs()), -0.06, 0.26),
        ("graded", diffs(graded_runs()), -0.09399999999999999, 0.134),
    ];
    for (name, d, low, high) in cases {
        let got =
            paired_bootstrap(&d, DEFAULT_RESAMPLES, DEFAULT_CONFIDENCE, DEFAULT_SEED).unwrap();
        assert!(
            (got.low - low).abs() <= 0.01 && (got.high - high).abs() <= 0.01,
            "{name}: got {got:?}, numpy [{low}, {high}]"
        );
    }
}

#[test]
fn bootstrap_is_deterministic_per_seed() {
    let d = diffs(graded_runs());
    let one = paired_bootstrap(&d, 2_000, 0.9, 42).unwrap();
    let two = paired_bootstrap(&d, 2_000, 0.9, 42).unwrap();
    assert_eq!(one, two);
    assert!(one.low <= one.high);
    let other = paired_bootstrap(&d, 2_000, 0.9, 43).unwrap();
    assert_ne!(one, other);
}

#[test]
fn bootstrap_of_constant_diffs_collapses() {
    for c in [0.0, 1.0, -1.0, 0.1, 1.0 / 3.0] {
        let d = vec![c; 37];
        let got = paired_bootstrap(&d, 500, 0.95, 1).unwrap();
        assert_eq!(got, Interval { low: c, high: c });
    }
}

#[test]
fn bootstrap_of_symmetric_sample_contains_mean() {
    let d: Vec<f64> = (-20..=20).map(f64::from).collect();
    let got = paired_bootstrap(&d, DEFAULT_RESAMPLES, DEFAULT_CONFIDENCE, DEFAULT_SEED).unwrap();
    assert!(got.low < 0.0 && 0.0 < got.high, "{got:?}");
    // Roughly symmetric around the mean 0.
    assert!((got.low + got.high).abs() < 0.5, "{got:?}");
    // A narrower confidence gives a nested interval.
    let narrow = paired_bootstrap(&d, DEFAULT_RESAMPLES, 0.5, DEFAULT_SEED).unwrap();
    assert!(got.low <= narrow.low && narrow.high <= got.high);
}

#[test]
fn bootstrap_degenerate_inputs() {
    let d = [1.0, 0.0, -1.0];
    assert_eq!(paired_bootstrap(&[], 100, 0.95, 1), None);
    assert_eq!(paired_bootstrap(&d, 0, 0.95, 1), None);
    for confidence in [0.0, 1.0, -0.5, 1.5, f64::NAN] {
        assert_eq!(paired_bootstrap(&d, 100, confidence, 1), None);
    }
    assert_eq!(paired_bootstrap(&[1.0, f64::NAN], 100, 0.95, 1), None);
    assert_eq!(paired_bootstrap(&[1.0, f64::INFINITY], 100, 0.95, 1), None);
    // One resample and one task still work.
    assert!(paired_bootstrap(&d, 1, 0.95, 1).is_some());
    assert_eq!(
        paired_bootstrap(&[0.5], 10, 0.95, 1),
        Some(Interval {
            low: 0.5,
            high: 0.5
        })
    );
}

#[test]
fn quantile_matches_numpy_linear() {
    // numpy.percentile([1, 2, 4, 8], [0, 10, 50, 90, 100]) == [1.0, 1.3, 3.0, 6.8, 8.0]
    let sorted = [1.0, 2.0, 4.0, 8.0];
    let want = [(0.0, 1.0), (0.1, 1.3), (0.5, 3.0), (0.9, 6.8), (1.0, 8.0)];
    for (q, v) in want {
        assert_close(
            quantile_linear(&sorted, q),
            v,
            1e-15,
            0.0,
            &format!("q = {q}"),
        );
    }
    assert_eq!(quantile_linear(&[2.5], 0.3), 2.5);
}

#[test]
fn paired_difference_summary() {
    let (a, b) = binary_runs();
    let s = paired_difference(&a, &b, DEFAULT_RESAMPLES, DEFAULT_CONFIDENCE, DEFAULT_SEED).unwrap();
    assert_eq!(s.n, 50);
    assert_close(s.mean_a, 26.0 / 50.0, 1e-15, 0.0, "mean_a");
    assert_close(s.mean_b, 31.0 / 50.0, 1e-15, 0.0, "mean_b");
    assert_close(s.difference, 0.1, 1e-12, 0.0, "difference");
    let d = diffs(binary_runs());
    assert_eq!(
        s.interval,
        paired_bootstrap(&d, DEFAULT_RESAMPLES, DEFAULT_CONFIDENCE, DEFAULT_SEED)
    );
    // Degenerate bootstrap parameters keep the means but drop the interval.
    let no_interval = paired_difference(&a, &b, 0, DEFAULT_CONFIDENCE, DEFAULT_SEED).unwrap();
    assert_eq!(no_interval.interval, None);
    assert_eq!(no_interval.difference, s.difference);
    assert_eq!(paired_difference(&[], &[], 100, 0.95, 1), None);
    assert_eq!(paired_difference(&[1.0], &[1.0, 0.0], 100, 0.95, 1), None);
}
