//! Host services across the boundary, both ways: a [`Ctx`] exported as a `HostBox`, and a
//! `HostBox` received as a [`Ctx`].

use std::sync::Arc;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RArc, RStr, RString};
use async_ffi::{FfiFuture, FutureExt as _};

use crate::abi::guard::{async_call, CatchUnwind};
use crate::abi::*;
use crate::contracts::LogLevel;
use crate::sdk::{BoxFuture, Ctx, HostApi};
use crate::Result;

use super::call::await_foreign;
use super::consume;
use crate::abi::json::{from_json, to_json};

pub(super) fn host_handle() -> Option<tokio::runtime::Handle> {
    tokio::runtime::Handle::try_current().ok()
}

/// Wraps a call context for the boundary.
pub fn export_ctx(ctx: &Ctx) -> HostBox {
    HostServicesAbi_TO::from_ptr(
        RArc::new(HostExport {
            ctx: ctx.clone(),
            handle: host_handle(),
        }),
        TD_Opaque,
    )
}

#[derive(Clone)]
struct HostExport {
    ctx: Ctx,
    handle: Option<tokio::runtime::Handle>,
}

impl HostServicesAbi for HostExport {
    fn log(&self, level: u8, target: RStr<'_>, message: RStr<'_>) {
        let level = LogLevel::from_u8(level).unwrap_or(LogLevel::Info);
        self.ctx
            .host()
            .log(level, target.as_str(), message.as_str());
    }

    fn emit_progress(&self, payload_json: RStr<'_>) {
        if let Ok(payload) = serde_json::from_str::<serde_json::Value>(payload_json.as_str()) {
            self.ctx.host().emit_progress(&payload);
        }
    }

    fn is_cancelled(&self) -> bool {
        self.ctx.is_cancelled()
    }

    fn cancelled(&self) -> FfiFuture<()> {
        let cancelled = self.ctx.cancelled();
        match &self.handle {
            None => cancelled.into_ffi(),
            Some(handle) => {
                let fut = async_call(Some(handle), async move {
                    cancelled.await;
                    Ok(())
                });
                async move {
                    let _ = fut.await;
                }
                .into_ffi()
            }
        }
    }

    fn call(&self, service: RStr<'_>, request_json: RString) -> JsonFuture {
        let ctx = self.ctx.clone();
        let service = service.as_str().to_string();
        async_call(self.handle.as_ref(), async move {
            let request = consume(request_json, |text| from_json(text, "service request"))?;
            to_json(&ctx.call(&service, request).await?)
        })
    }
}

/// Host services received over the ABI, as a [`Ctx`].
pub fn import_ctx(host: HostBox) -> Ctx {
    Ctx::new(Arc::new(ImportedHost(host)))
}

struct ImportedHost(HostBox);

impl HostApi for ImportedHost {
    fn log(&self, level: LogLevel, target: &str, message: &str) {
        self.0
            .log(level as u8, RStr::from(target), RStr::from(message));
    }

    fn emit_progress(&self, payload: &serde_json::Value) {
        if let Ok(json) = serde_json::to_string(payload) {
            self.0.emit_progress(RStr::from(json.as_str()));
        }
    }

    fn is_cancelled(&self) -> bool {
        self.0.is_cancelled()
    }

    fn cancelled(&self) -> BoxFuture<()> {
        let future = self.0.cancelled();
        Box::pin(async move {
            // A panic while waiting is treated as cancellation.
            let _ = CatchUnwind::new(future).await;
        })
    }

    fn call(
        &self,
        service: &str,
        request: serde_json::Value,
    ) -> BoxFuture<Result<serde_json::Value>> {
        let host = self.0.clone();
        let service = service.to_string();
        Box::pin(async move {
            let request = to_json(&request)?;
            let reply = await_foreign(host.call(RStr::from(service.as_str()), request)).await?;
            from_json(&reply, "service reply")
        })
    }
}
