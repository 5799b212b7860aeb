//! Calls into foreign objects: awaiting their futures with panics contained, and the labels
//! every error of an imported object is prefixed with.

use std::sync::Arc;

use abi_stable::std_types::RResult;
use async_ffi::FfiFuture;
use serde::de::DeserializeOwned;

use crate::abi::guard::CatchUnwind;
use crate::abi::*;
use crate::{Error, Result};

use crate::abi::json::from_json;

/// Awaits a foreign future, containing a panic re-raised by async-ffi.
pub(super) async fn await_foreign<T>(future: FfiFuture<RResult<T, PluginError>>) -> Result<T> {
    match CatchUnwind::new(future).await {
        Ok(RResult::ROk(value)) => Ok(value),
        Ok(RResult::RErr(err)) => Err(err.into()),
        Err(panic) => Err(panic),
    }
}

pub(super) fn sync_result<T>(result: RResult<T, PluginError>) -> Result<T> {
    result.into_result().map_err(Error::from)
}

/// Where an imported object came from, used as the prefix of every error it returns.
#[derive(Clone, Debug)]
pub struct Label(Arc<str>);

impl Label {
    /// A label such as `plugin example-pack@0.1.0 benchmark example_exact_match`.
    pub fn new(text: impl Into<String>) -> Self {
        Label(Arc::from(text.into()))
    }

    pub(super) fn err(&self, method: &str) -> impl Fn(Error) -> Error + '_ {
        let method = method.to_string();
        move |err| err.context(format_args!("{}: {method}", self.0))
    }

    pub(super) fn decode<T: DeserializeOwned>(&self, method: &str, json: &str) -> Result<T> {
        from_json(json, "return value").map_err(self.err(method))
    }

    /// The label text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}
