//! Seconds as configured (`f64`) → the `Duration` of a wait the host makes (a watchdog, a
//! deadline, a retry delay, a grace period).
//!
//! A configured limit may be huge (`timeout_sec = 1e300` loads: it is finite and positive);
//! converting it with `Duration::from_secs_f64` panics. Huge values mean "no practical limit"
//! and become [`LONGEST_WAIT`], a hundred years, which every clock the runtime uses can add
//! to `now` without overflowing.

use std::time::Duration;

/// The longest wait the host makes: longer limits are clamped to it.
pub const LONGEST_WAIT: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// `seconds` as a wait: clamped to [`LONGEST_WAIT`] (infinity included); NaN, zero and
/// negative values are no wait at all.
pub fn duration_from_seconds(seconds: f64) -> Duration {
    if seconds.is_nan() || seconds <= 0.0 {
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(seconds).map_or(LONGEST_WAIT, |d| d.min(LONGEST_WAIT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_values_mean_no_practical_limit() {
        assert_eq!(duration_from_seconds(1.5), Duration::from_millis(1500));
        for huge in [1e300, f64::INFINITY, f64::MAX, 4e9] {
            assert_eq!(duration_from_seconds(huge), LONGEST_WAIT, "{huge}");
        }
        for none in [0.0, -3.0, f64::NAN, f64::NEG_INFINITY] {
            assert_eq!(duration_from_seconds(none), Duration::ZERO, "{none}");
        }
        // The clamp can be added to the runtime's clocks.
        assert!(std::time::Instant::now()
            .checked_add(LONGEST_WAIT)
            .is_some());
        assert!(tokio::time::Instant::now()
            .checked_add(LONGEST_WAIT)
            .is_some());
    }
}
