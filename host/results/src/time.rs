//! Timestamps of the results tree: run ids, RFC 3339 times, and parsing `started_at`.

use std::time::SystemTime;

use jiff::{civil, tz::TimeZone, Timestamp};

fn timestamp(now: SystemTime) -> Timestamp {
    Timestamp::try_from(now).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// A run id for a run started at `now`: `YYYYMMDD_HHMMSS` in UTC.
pub fn new_run_id(now: SystemTime) -> String {
    timestamp(now).strftime("%Y%m%d_%H%M%S").to_string()
}

/// `now` as an RFC 3339 UTC timestamp with seconds precision, e.g. `2026-11-30T01:02:03Z`.
pub fn rfc3339(now: SystemTime) -> String {
    timestamp(now).strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Seconds since the Unix epoch, rounded down (negative before 1970).
pub fn unix_seconds(time: SystemTime) -> i64 {
    let ts = timestamp(time);
    let secs = ts.as_second();
    if ts.subsec_nanosecond() < 0 {
        secs - 1
    } else {
        secs
    }
}

/// Parses an ISO 8601 / RFC 3339 timestamp (`YYYY-MM-DDTHH:MM:SS[.frac][Z|±HH:MM|±HHMM]`, `T`
/// or a space between date and time; no zone = UTC) into Unix seconds. Used to rank runs by
/// `started_at`, which upstream writes with a local offset.
pub fn parse_timestamp(text: &str) -> Option<i64> {
    let text = text.trim();
    let b = text.as_bytes();
    // A date and a time with seconds are required (jiff also accepts a bare date).
    if b.len() < 19 || !matches!(b[10], b'T' | b't' | b' ') || b[16] != b':' {
        return None;
    }
    if let Ok(ts) = text.parse::<Timestamp>() {
        return Some(ts.as_second());
    }
    let local: civil::DateTime = text.parse().ok()?;
    Some(local.to_zoned(TimeZone::UTC).ok()?.timestamp().as_second())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn run_ids_and_rfc3339() {
        assert_eq!(new_run_id(at(0)), "19700101_000000");
        assert_eq!(new_run_id(at(1_700_000_000)), "20231114_221320");
        assert_eq!(new_run_id(at(951_782_400)), "20000229_000000");
        assert_eq!(new_run_id(at(4_102_444_799)), "20991231_235959");
        assert_eq!(rfc3339(at(0)), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(at(1_700_000_000)), "2023-11-14T22:13:20Z");
        assert_eq!(
            rfc3339(at(1_700_000_000) + Duration::from_millis(999)),
            "2023-11-14T22:13:20Z"
        );
        assert_eq!(
            rfc3339(UNIX_EPOCH - Duration::from_millis(500)),
            "1969-12-31T23:59:59Z"
        );
    }

    #[test]
    fn parses_timestamps() {
        assert_eq!(parse_timestamp("2023-11-14T22:13:20Z"), Some(1_700_000_000));
        assert_eq!(parse_timestamp("2023-11-14T22:13:20"), Some(1_700_000_000));
        assert_eq!(
            parse_timestamp("2023-11-15T06:13:20.123456+08:00"),
            Some(1_700_000_000)
        );
        assert_eq!(
            parse_timestamp("2023-11-14 17:13:20-0500"),
            Some(1_700_000_000)
        );
        for secs in [0, 1_700_000_000, 4_102_444_799] {
            assert_eq!(parse_timestamp(&rfc3339(at(secs))), Some(secs as i64));
        }
        for bad in [
            "",
            "2023-11-14",
            "2023-13-14T00:00:00Z",
            "2023-11-14T22:13:20+8",
        ] {
            assert_eq!(parse_timestamp(bad), None, "{bad}");
        }
    }

    #[test]
    fn unix_seconds_round_down() {
        assert_eq!(unix_seconds(at(5) + Duration::from_millis(999)), 5);
        assert_eq!(unix_seconds(UNIX_EPOCH - Duration::from_millis(500)), -1);
        assert_eq!(unix_seconds(UNIX_EPOCH - Duration::from_secs(2)), -2);
    }
}
