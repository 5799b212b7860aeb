//! Values across the boundary: JSON text, with errors that name what was decoded.

use abi_stable::std_types::RString;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::{Error, Result};

/// Serialises a value for the boundary.
pub fn to_json<T: Serialize>(value: &T) -> Result<RString> {
    serde_json::to_string(value)
        .map(RString::from)
        .map_err(|e| Error::invalid_input(format!("cannot encode value: {e}")))
}

/// Decodes a value received over the boundary; `what` names it in the error.
pub fn from_json<T: DeserializeOwned>(json: &str, what: &str) -> Result<T> {
    serde_json::from_str(json).map_err(|e| Error::invalid_input(format!("invalid {what}: {e}")))
}
