//! The value coercions Harbor's parser applies (pydantic 2 in lax mode, and the Python
//! builtins Harbor calls), so a `task.toml` Harbor accepts is accepted here with the same
//! values: `"300"` and `300.0` for an integer field, `"yes"` and `1` for a boolean, ...
//!
//! Each function takes the text (or value) as written and returns `None` when Harbor refuses
//! it. The rules follow pydantic-core's `str_as_int` / `str_as_float` / `str_as_bool` and
//! Python's `float()`.

/// Python's underscore rule for numeric text (PEP 515): every `_` sits between two ASCII
/// digits. Returns the text without its underscores, or `None` when an underscore is
/// misplaced.
fn without_digit_underscores(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'_' {
            let before = i.checked_sub(1).and_then(|j| bytes.get(j));
            let after = bytes.get(i + 1);
            if !matches!((before, after), (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit())
            {
                return None;
            }
        }
    }
    Some(text.replace('_', ""))
}

/// Python's `int(text)` for base 10: optional whitespace, an optional sign, ASCII digits with
/// single underscores between them (leading zeros allowed).
fn python_int(text: &str) -> Option<i64> {
    let trimmed = text.trim();
    let digits = trimmed
        .strip_prefix('+')
        .or_else(|| trimmed.strip_prefix('-'))
        .unwrap_or(trimmed);
    if digits.is_empty() || !digits.as_bytes()[0].is_ascii_digit() {
        return None;
    }
    let plain = without_digit_underscores(trimmed)?;
    if !plain
        .trim_start_matches(['+', '-'])
        .bytes()
        .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    plain.parse().ok()
}

/// pydantic's integer from text: trimmed, then Python's `int()`; failing that, the same
/// without a fractional part of zeros (`"300.00"`, not `"300."`).
pub(crate) fn int_from_str(text: &str) -> Option<i64> {
    let trimmed = text.trim();
    if let Some(value) = python_int(trimmed) {
        return Some(value);
    }
    let (whole, fraction) = trimmed.split_once('.')?;
    (!fraction.is_empty() && fraction.bytes().all(|b| b == b'0'))
        .then(|| python_int(whole))
        .flatten()
}

/// pydantic's float from text: the trimmed text as a float (`inf`, `nan`, `1e3` included),
/// else the untrimmed text without its underscores (none leading, trailing or doubled).
pub(crate) fn float_from_str(text: &str) -> Option<f64> {
    if let Ok(value) = text.trim().parse::<f64>() {
        return Some(value);
    }
    if text.starts_with('_') || text.ends_with('_') || text.contains("__") {
        return None;
    }
    text.replace('_', "").parse().ok()
}

/// Python's `float(text)`: surrounding whitespace ignored, underscores only between digits.
pub(crate) fn python_float(text: &str) -> Option<f64> {
    without_digit_underscores(text.trim())?.parse().ok()
}

/// pydantic's boolean from text (case-insensitive, not trimmed).
pub(crate) fn bool_from_str(text: &str) -> Option<bool> {
    match text.to_ascii_lowercase().as_str() {
        "0" | "off" | "f" | "false" | "n" | "no" => Some(false),
        "1" | "on" | "t" | "true" | "y" | "yes" => Some(true),
        _ => None,
    }
}

/// A float that is a whole number within `i64`, as pydantic converts it to an integer.
pub(crate) fn int_from_float(value: f64) -> Option<i64> {
    // 2^63 is exactly representable; every finite whole float below it fits.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    (value.is_finite() && value.fract() == 0.0 && (-LIMIT..LIMIT).contains(&value))
        .then_some(value as i64)
}

/// Harbor's legacy size string (`EnvironmentConfig._parse_size_to_mb`): trimmed and
/// upper-cased, a number (Python's `float()`) followed by `G`, `M` or `K`, truncated to whole
/// MiB. `"2GB"`, `"10Gi"`, `"1T"` and bare numbers are refused.
pub(crate) fn size_to_mb(text: &str) -> Option<i64> {
    let upper = text.trim().to_uppercase();
    let (number, factor) = if let Some(n) = upper.strip_suffix('G') {
        (n, 1024.0)
    } else if let Some(n) = upper.strip_suffix('M') {
        (n, 1.0)
    } else if let Some(n) = upper.strip_suffix('K') {
        (n, 1.0 / 1024.0)
    } else {
        return None;
    };
    let value = python_float(number)? * factor;
    int_from_float(value.trunc())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_from_text() {
        for (text, expected) in [
            ("300", Some(300)),
            (" 300 ", Some(300)),
            ("\t5\n", Some(5)),
            ("+5", Some(5)),
            ("-0", Some(0)),
            ("0300", Some(300)),
            ("1_000", Some(1000)),
            ("1_0_0", Some(100)),
            ("300.0", Some(300)),
            ("300.00", Some(300)),
            ("1_000.0", Some(1000)),
            ("300.", None),
            ("300.5", None),
            ("_1", None),
            ("1__0", None),
            ("+_1", None),
            ("1e3", None),
            ("0x10", None),
            ("", None),
            ("٣", None),
        ] {
            assert_eq!(int_from_str(text), expected, "{text:?}");
        }
    }

    #[test]
    fn floats_from_text() {
        for (text, expected) in [
            ("300", Some(300.0)),
            (" 300 ", Some(300.0)),
            ("1e3", Some(1000.0)),
            (".5", Some(0.5)),
            ("5.", Some(5.0)),
            ("1_000", Some(1000.0)),
            ("1_0.5", Some(10.5)),
            ("1e1_0", Some(1e10)),
            ("+5", Some(5.0)),
            ("1e", None),
            ("_1", None),
            ("1__0", None),
            ("1_0 ", None),
            ("0x10", None),
            ("", None),
        ] {
            assert_eq!(float_from_str(text), expected, "{text:?}");
        }
        assert_eq!(float_from_str("infinity"), Some(f64::INFINITY));
        assert!(float_from_str("NaN").is_some_and(f64::is_nan));
    }

    #[test]
    fn booleans_and_sizes() {
        for (text, expected) in [
            ("YES", Some(true)),
            ("t", Some(true)),
            ("Off", Some(false)),
            (" true ", None),
            ("", None),
            ("2", None),
        ] {
            assert_eq!(bool_from_str(text), expected, "{text:?}");
        }
        for (text, expected) in [
            ("2G", Some(2048)),
            (" 2g ", Some(2048)),
            ("1.5G", Some(1536)),
            ("512M", Some(512)),
            ("2048K", Some(2)),
            ("0.5K", Some(0)),
            ("-1G", Some(-1024)),
            ("1_0M", Some(10)),
            ("2 G", Some(2048)),
            ("2GB", None),
            ("10Gi", None),
            ("1T", None),
            ("2048", None),
            ("G", None),
            ("infG", None),
            ("nanM", None),
        ] {
            assert_eq!(size_to_mb(text), expected, "{text:?}");
        }
    }
}
