//! A provider's parameters checked against its schema, and tables of strings read from them.

use std::collections::BTreeMap;

use crate::contracts::{ConfigSchema, JsonMap};
use crate::{Error, Result};

/// The table of strings `params[key]` (`{"models.internal": "127.0.0.2"}`), empty when the
/// key is absent; a value that is not a string is one error naming `key.name`.
pub fn string_table(
    params: &JsonMap,
    key: &str,
    provider: &str,
) -> Result<BTreeMap<String, String>> {
    let mut table = BTreeMap::new();
    if let Some(entries) = params.get(key).and_then(serde_json::Value::as_object) {
        for (name, value) in entries {
            let value = value.as_str().ok_or_else(|| {
                Error::invalid_input(format!(
                    "environment `{provider}`: parameter `{key}.{name}` must be an address string"
                ))
            })?;
            table.insert(name.clone(), value.to_string());
        }
    }
    Ok(table)
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn string_tables_name_a_bad_value() {
        let params: JsonMap = serde_json::from_value(json!({"hosts": {"a": "1.2.3.4"}})).unwrap();
        let table = string_table(&params, "hosts", "p").unwrap();
        assert_eq!(table.get("a").map(String::as_str), Some("1.2.3.4"));
        assert!(string_table(&params, "other", "p").unwrap().is_empty());
        let bad: JsonMap = serde_json::from_value(json!({"hosts": {"a": 1}})).unwrap();
        let err = string_table(&bad, "hosts", "p").unwrap_err();
        assert!(
            err.message.contains("`hosts.a` must be an address string"),
            "{err}"
        );
    }
}
