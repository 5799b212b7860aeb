//! Python-compatible renderings and rules, so that what we persist and print reads exactly
//! like upstream's (`round`, `repr(float)`, `str(value)`, `json.dumps(sort_keys=True)`,
//! truthiness and its linear-interpolation percentile).

use serde_json::Value;

/// Python truthiness of a JSON value (`null`, `false`, `0`, `""`, `[]`, `{}` are false).
pub(crate) fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Python's `round(x, digits)`: correctly rounded from the exact binary value, ties to even
/// (Rust's fixed-precision formatting rounds the same way).
pub(crate) fn round(x: f64, digits: usize) -> f64 {
    if !x.is_finite() {
        return x;
    }
    format!("{x:.digits$}").parse().unwrap_or(x)
}

/// Python's `repr(float)`: the shortest round-tripping digits, `.0` on integral values and
/// scientific notation (`1e-05`, `1e+16`) outside `[1e-4, 1e16)`.
pub(crate) fn float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.to_string();
    }
    let sci = format!("{x:e}");
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..16).contains(&exponent) {
        let plain = format!("{x}");
        if plain.contains('.') {
            plain
        } else {
            format!("{plain}.0")
        }
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs())
    }
}

/// A JSON number as Python prints it (`int` digits, or `repr(float)`).
fn number_repr(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        n.to_string()
    } else {
        float_repr(n.as_f64().unwrap_or(0.0))
    }
}

/// Python's `str(value)` for a value loaded with `json.loads`.
pub(crate) fn py_str(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => py_repr(other),
    }
}

/// Python's `repr(value)` for a value loaded with `json.loads`.
pub(crate) fn py_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".to_string(),
        Value::Bool(true) => "True".to_string(),
        Value::Bool(false) => "False".to_string(),
        Value::Number(n) => number_repr(n),
        Value::String(s) => str_repr(s),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(py_repr).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Object(map) => {
            let parts: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", str_repr(k), py_repr(v)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
    }
}

/// Python's `repr(str)` (single quotes unless the text holds one and no double quote).
fn str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// `json.dumps(value, sort_keys=True, ensure_ascii=False)` (separators `", "` and `": "`).
pub(crate) fn json_dumps(value: &Value) -> String {
    let mut out = String::new();
    dump_into(value, &mut out);
    out
}

fn dump_into(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number_repr(n)),
        Value::String(s) => out.push_str(&json_string(s)),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                dump_into(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // serde_json's map is ordered by key, which is Python's `sort_keys` order.
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&json_string(k));
                out.push_str(": ");
                dump_into(v, out);
            }
            out.push('}');
        }
    }
}

/// A JSON string literal (the escapes `json.dumps` uses).
fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// Upstream's percentile of sorted values: linear interpolation at `(n - 1) * p / 100`.
pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    let Some(last) = sorted.len().checked_sub(1) else {
        return 0.0;
    };
    let k = last as f64 * p / 100.0;
    let lo = (k.floor() as usize).min(last);
    let hi = (lo + 1).min(last);
    let frac = k - lo as f64;
    sorted[lo] + frac * (sorted[hi] - sorted[lo])
}

/// The first `n` characters of `s` (Python's `s[:n]`).
pub(crate) fn prefix(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// A finite `f64` as a JSON number (`null` for NaN and infinities, which JSON cannot hold).
pub(crate) fn num(x: f64) -> Value {
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_matches_python() {
        assert_eq!(round(0.125, 2), 0.12);
        assert_eq!(round(2.675, 2), 2.67);
        assert_eq!(round(1.0 / 3.0, 4), 0.3333);
        assert!(round(f64::NAN, 2).is_nan());
    }

    #[test]
    fn float_repr_matches_python() {
        assert_eq!(float_repr(3.0), "3.0");
        assert_eq!(float_repr(0.1), "0.1");
        assert_eq!(float_repr(1e-5), "1e-05");
        assert_eq!(float_repr(1.5e-7), "1.5e-07");
        assert_eq!(float_repr(1e16), "1e+16");
        assert_eq!(float_repr(1e15), "1000000000000000.0");
        assert_eq!(float_repr(-2.5), "-2.5");
        assert_eq!(float_repr(0.0001), "0.0001");
    }

    #[test]
    fn str_and_dumps_match_python() {
        assert_eq!(py_str(&json!("x")), "x");
        assert_eq!(py_str(&json!(true)), "True");
        assert_eq!(py_str(&json!(null)), "None");
        assert_eq!(py_str(&json!(2.0)), "2.0");
        assert_eq!(
            py_str(&json!(["a", 1, {"k": "it's"}])),
            "['a', 1, {'k': \"it's\"}]"
        );
        assert_eq!(
            json_dumps(&json!({"b": [1, 2.5], "a": "é\n"})),
            "{\"a\": \"é\\n\", \"b\": [1, 2.5]}"
        );
        assert_eq!(json_dumps(&json!({})), "{}");
    }

    #[test]
    fn percentile_interpolates() {
        assert_eq!(percentile(&[], 50.0), 0.0);
        assert_eq!(percentile(&[5.0], 90.0), 5.0);
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 50.0), 2.5);
        assert!((percentile(&[1.0, 2.0, 3.0, 4.0, 5.0], 90.0) - 4.6).abs() < 1e-9);
        assert_eq!(percentile(&[1.0, 2.0], 100.0), 2.0);
    }

    #[test]
    fn truthiness() {
        assert!(!truthy(&json!(0)));
        assert!(!truthy(&json!("")));
        assert!(truthy(&json!([0])));
        assert!(truthy(&json!(0.5)));
        assert_eq!(prefix("héllo", 2), "hé");
    }
}
