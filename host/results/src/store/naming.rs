//! Names and timestamps of the results tree: task directory names, run ids, RFC 3339 times.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

/// Longest readable prefix of a task directory name (before `--<sha256>`).
const TASK_NAME_PREFIX_CHARS: usize = 80;

/// The directory name of a task: the task id with every run of characters outside
/// `[A-Za-z0-9._=-]` replaced by `_`, stripped of leading/trailing `.`, `_`, `-`, cut to 80
/// characters (or `task` when nothing is left), then `--` and the lowercase sha256 hex of the
/// full task id. Distinct task ids always get distinct names.
pub fn task_dir_name(task_id: &str) -> String {
    let sanitized = crate::request::sanitize_component(task_id);
    let trimmed = sanitized.trim_matches(|c| matches!(c, '.' | '_' | '-'));
    // Sanitised text is ASCII, but cut on a char boundary regardless.
    let readable: String = trimmed.chars().take(TASK_NAME_PREFIX_CHARS).collect();
    let readable = if readable.is_empty() {
        "task".to_string()
    } else {
        readable
    };
    format!("{readable}--{}", sha256_hex(task_id.as_bytes()))
}

/// A 64-bit hash of a task id (SipHash with fixed keys), for sets of ids that must not keep
/// the ids themselves: a collision needs about 10^9 ids for a one-in-a-billion chance.
pub(crate) fn task_id_hash(task_id: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    task_id.hash(&mut hasher);
    hasher.finish()
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A run id for a run started at `now`: `YYYYMMDD_HHMMSS` in UTC.
pub fn new_run_id(now: SystemTime) -> String {
    let (y, mo, d, h, mi, s) = civil_utc(unix_seconds(now));
    format!("{y:04}{mo:02}{d:02}_{h:02}{mi:02}{s:02}")
}

/// `now` as an RFC 3339 UTC timestamp with seconds precision, e.g. `2026-11-30T01:02:03Z`.
pub fn rfc3339(now: SystemTime) -> String {
    let (y, mo, d, h, mi, s) = civil_utc(unix_seconds(now));
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// Seconds since the Unix epoch, rounded down (negative before 1970).
pub(crate) fn unix_seconds(time: SystemTime) -> i64 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
        Err(before) => {
            let before: Duration = before.duration();
            let secs = i64::try_from(before.as_secs()).unwrap_or(i64::MAX);
            if before.subsec_nanos() > 0 {
                -secs - 1
            } else {
                -secs
            }
        }
    }
}

/// (year, month, day, hour, minute, second) of a Unix time in UTC.
fn civil_utc(secs: i64) -> (i64, u32, u32, u32, u32, u32) {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    // `rem` is in 0..86_400, so the casts below cannot truncate.
    let rem = rem as u32;
    (y, m, d, rem / 3600, rem / 60 % 60, rem % 60)
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11]
    let d = doy - (153 * mp + 2) / 5 + 1; // [1, 31]
    let m = if mp < 10 { mp + 3 } else { mp - 9 }; // [1, 12]
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m as u32, d as u32)
}

/// Day count since 1970-01-01 of a proleptic Gregorian date (inverse of `civil_from_days`).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400); // [0, 399]
    let m = i64::from(m);
    let mp = if m > 2 { m - 3 } else { m + 9 }; // [0, 11]
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1; // [0, 365]
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // [0, 146096]
    era * 146_097 + doe - 719_468
}

/// Parses an ISO 8601 / RFC 3339 timestamp (`YYYY-MM-DDTHH:MM:SS[.frac][Z|±HH:MM|±HHMM]`, `T`
/// or a space between date and time; no zone = UTC) into Unix seconds. Used to rank runs by
/// `started_at`, which upstream writes with a local offset.
pub(crate) fn parse_timestamp(text: &str) -> Option<i64> {
    let b = text.trim().as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    if !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<u32> {
        let digits = b.get(range)?;
        if !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(digits).ok()?.parse().ok()
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut rest = &b[19..];
    if let Some(after_dot) = rest.strip_prefix(b".") {
        let digits = after_dot.iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        rest = &after_dot[digits..];
    }
    let offset: i64 = match rest {
        [] | [b'Z'] | [b'z'] => 0,
        [sign @ (b'+' | b'-'), zone @ ..] => {
            let (oh, om) = match zone {
                [h1, h2, b':', m1, m2] | [h1, h2, m1, m2] => {
                    let two = |a: u8, b: u8| -> Option<i64> {
                        (a.is_ascii_digit() && b.is_ascii_digit())
                            .then(|| i64::from(a - b'0') * 10 + i64::from(b - b'0'))
                    };
                    (two(*h1, *h2)?, two(*m1, *m2)?)
                }
                _ => return None,
            };
            let secs = oh * 3600 + om * 60;
            if *sign == b'+' {
                secs
            } else {
                -secs
            }
        }
        _ => return None,
    };
    let days = days_from_civil(i64::from(y), mo, d);
    Some(days * 86_400 + i64::from(h) * 3600 + i64::from(mi) * 60 + i64::from(s) - offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn task_dir_names() {
        let sha = |s: &str| sha256_hex(s.as_bytes());
        assert_eq!(task_dir_name("a/b c"), format!("a_b_c--{}", sha("a/b c")));
        assert_eq!(task_dir_name(""), format!("task--{}", sha("")));
        assert_eq!(task_dir_name("///"), format!("task--{}", sha("///")));
        assert_eq!(
            task_dir_name("..-_x.y=z_-.."),
            format!("x.y=z--{}", sha("..-_x.y=z_-.."))
        );
        assert_eq!(
            task_dir_name("héllo wörld"),
            format!("h_llo_w_rld--{}", sha("héllo wörld"))
        );
        let long = "x".repeat(200);
        let name = task_dir_name(&long);
        assert_eq!(name, format!("{}--{}", "x".repeat(80), sha(&long)));
        // The hash keeps ids that sanitise alike apart.
        assert_ne!(task_dir_name("a b"), task_dir_name("a/b"));
        assert_eq!(
            sha(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
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
    fn civil_round_trip() {
        for days in (-800_000..800_000).step_by(37) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
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
}
