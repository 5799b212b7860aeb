//! Parsers of flag values (JSON objects and lists, counts, `PROVIDER=N`), each refusal an
//! [`ArgError`] clap prints after the flag's name.

/// Why a flag's value was refused (clap prints it after the flag's name).
#[derive(Debug, thiserror::Error)]
pub enum ArgError {
    /// The value is not JSON.
    #[error("invalid JSON: {0}")]
    NotJson(serde_json::Error),
    /// The value is JSON of another type.
    #[error("expected a JSON object, found {0}")]
    NotAnObject(&'static str),
    /// The value is not a JSON list of strings.
    #[error("expected a JSON array of strings: {0}")]
    NotAStringList(serde_json::Error),
    /// The value has another shape.
    #[error("expected {expected}, found `{found}`")]
    Expected {
        /// What the flag takes.
        expected: String,
        /// The value given.
        found: String,
    },
}

impl ArgError {
    fn expected(expected: impl Into<String>, found: &str) -> Self {
        ArgError::Expected {
            expected: expected.into(),
            found: found.to_string(),
        }
    }
}

pub(super) fn json_object(
    text: &str,
) -> Result<serde_json::Map<String, serde_json::Value>, ArgError> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(map)) => Ok(map),
        Ok(other) => Err(ArgError::NotAnObject(
            agentcompass_plugin_api::contracts::json_type_name(&other),
        )),
        Err(e) => Err(ArgError::NotJson(e)),
    }
}

pub(super) fn json_string_list(text: &str) -> Result<Vec<String>, ArgError> {
    serde_json::from_str(text).map_err(ArgError::NotAStringList)
}

/// A finite number > 0.
pub(super) fn positive_number(text: &str) -> Result<f64, ArgError> {
    match text.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n > 0.0 => Ok(n),
        _ => Err(ArgError::expected("a number > 0", text)),
    }
}

/// A whole number ≥ 0 (negative values reach this parser, so the error names the flag instead
/// of clap's "unexpected argument" tip).
pub(super) fn count(text: &str) -> Result<u32, ArgError> {
    text.trim()
        .parse()
        .map_err(|_| ArgError::expected("a whole number ≥ 0", text))
}

pub(super) fn provider_count(text: &str) -> Result<(String, u32), ArgError> {
    let (provider, value) = text
        .split_once('=')
        .ok_or_else(|| ArgError::expected("PROVIDER=N", text))?;
    let value = value
        .parse()
        .map_err(|_| ArgError::expected(format!("a whole number after `{provider}=`"), value))?;
    Ok((provider.to_string(), value))
}

pub(super) fn provider_rate(text: &str) -> Result<(String, f64), ArgError> {
    let (provider, value) = text
        .split_once('=')
        .ok_or_else(|| ArgError::expected("PROVIDER=QPS", text))?;
    let rate: f64 = value
        .parse()
        .map_err(|_| ArgError::expected(format!("a number after `{provider}=`"), value))?;
    if !(rate.is_finite() && rate >= 0.0) {
        return Err(ArgError::expected(
            format!("a rate ≥ 0 after `{provider}=`"),
            &rate.to_string(),
        ));
    }
    Ok((provider.to_string(), rate))
}
