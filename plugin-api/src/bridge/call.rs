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

/// One call of an imported object's ABI method, the glue every adapter method repeats:
/// `abi_call!(self.method(args))` calls `self.object.method(args)`, turns its `RResult` into a
/// `Result` whose error is prefixed with the object's label and the method's name (written
/// once, by `stringify!`), and decodes the JSON answer; `abi_call!(await self.method(args))`
/// does the same for an async method (a foreign future, polled through `CatchUnwind`);
/// `raw` in front of either skips the decoding (answers that are not JSON: `bool`, `()`, an
/// ABI object).
macro_rules! abi_call {
    (raw await $self:ident . $method:ident ( $($arg:expr),* $(,)? )) => {
        $crate::bridge::call::await_foreign($self.object.$method($($arg),*))
            .await
            .map_err($self.label.err(stringify!($method)))
    };
    (raw $self:ident . $method:ident ( $($arg:expr),* $(,)? )) => {
        $crate::bridge::call::sync_result($self.object.$method($($arg),*))
            .map_err($self.label.err(stringify!($method)))
    };
    (await $self:ident . $method:ident ( $($arg:expr),* $(,)? )) => {{
        let json = abi_call!(raw await $self.$method($($arg),*))?;
        $self.label.decode(stringify!($method), &json)
    }};
    ($self:ident . $method:ident ( $($arg:expr),* $(,)? )) => {{
        let json = abi_call!(raw $self.$method($($arg),*))?;
        $self.label.decode(stringify!($method), &json)
    }};
}

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
