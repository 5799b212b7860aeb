//! A provider's parameters checked against its schema.

use crate::contracts::{ConfigSchema, JsonMap};
use crate::{Error, Result};

/// Refuses `params` that do not fit `schema` (unknown keys, wrong types), all problems in
/// one line: `environment `{provider}`: problem; problem`.
pub fn check_params(schema: &ConfigSchema, params: &JsonMap, provider: &str) -> Result<()> {
    let problems = schema.validate(params);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::invalid_input(format!(
            "environment `{provider}`: {}",
            problems.join("; ")
        )))
    }
}
