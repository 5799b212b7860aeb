//! Environment sessions across the boundary, both ways.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RArc, ROption, RResult, RString};
use async_ffi::FfiFuture;
use async_trait::async_trait;

use crate::abi::guard::async_call;
use crate::abi::*;
use crate::contracts::{ExecRequest, ExecResult, NetworkPolicy, SessionInfo};
use crate::sdk::{EnvironmentSession, SessionRef};
use crate::Result;

use super::call::Label;
use super::consume;
use super::host::host_handle;
use crate::abi::json::{from_json, to_json};

/// Wraps a session for the boundary. A session that already is an ABI object is passed on as
/// it is; a native one captures the current tokio runtime (if any) to run its futures on.
pub fn export_session(session: &SessionRef) -> SessionBox {
    if let Some(object) = session.abi_object() {
        return object;
    }
    SessionAbi_TO::from_ptr(
        RArc::new(SessionExport {
            inner: session.clone(),
            handle: host_handle(),
        }),
        TD_Opaque,
    )
}

#[derive(Clone)]
struct SessionExport {
    inner: SessionRef,
    handle: Option<tokio::runtime::Handle>,
}

impl SessionExport {
    fn run<T, F>(&self, body: impl FnOnce(SessionRef) -> F) -> FfiFuture<RResult<T, PluginError>>
    where
        T: Send + 'static,
        F: std::future::Future<Output = Result<T>> + Send + 'static,
    {
        async_call(self.handle.as_ref(), body(self.inner.clone()))
    }
}

impl SessionAbi for SessionExport {
    fn info(&self) -> RString {
        to_json(&self.inner.info()).unwrap_or_default()
    }

    fn exec(&self, request_json: RString) -> JsonFuture {
        self.run(|s| async move {
            let request = consume(request_json, |text| from_json(text, "exec request"))?;
            to_json(&s.exec(request).await?)
        })
    }

    fn upload(&self, src: RString, dst: RString) -> UnitFuture {
        self.run(|s| async move { s.upload(&PathBuf::from(src.as_str()), &dst).await })
    }

    fn download(&self, src: RString, dst: RString) -> UnitFuture {
        self.run(|s| async move { s.download(&src, &PathBuf::from(dst.as_str())).await })
    }

    fn upload_dir(&self, src: RString, dst: RString) -> UnitFuture {
        self.run(|s| async move { s.upload_dir(&PathBuf::from(src.as_str()), &dst).await })
    }

    fn download_dir(&self, src: RString, dst: RString) -> UnitFuture {
        self.run(|s| async move { s.download_dir(&src, &PathBuf::from(dst.as_str())).await })
    }

    fn read_text(&self, path: RString) -> JsonFuture {
        self.run(|s| async move { s.read_text(&path).await.map(RString::from) })
    }

    fn write_text(&self, path: RString, content: RString) -> UnitFuture {
        self.run(|s| async move { s.write_text(&path, &content).await })
    }

    fn is_file(&self, path: RString) -> BoolFuture {
        self.run(|s| async move { s.is_file(&path).await })
    }

    fn is_dir(&self, path: RString) -> BoolFuture {
        self.run(|s| async move { s.is_dir(&path).await })
    }

    fn endpoint(&self) -> JsonFuture {
        self.run(|s| async move { to_json(&s.endpoint().await?) })
    }

    fn set_network_policy(&self, policy_json: RString) -> UnitFuture {
        self.run(|s| async move {
            let policy = consume(policy_json, |text| from_json(text, "network policy"))?;
            s.set_network_policy(&policy).await
        })
    }

    fn close(&self) -> UnitFuture {
        self.run(|s| async move { s.close().await })
    }
}

pub(super) fn optional_session(env: ROption<SessionBox>) -> Option<SessionRef> {
    env.into_option().map(import_session)
}

/// A session received over the ABI.
pub fn import_session(object: SessionBox) -> SessionRef {
    let info: SessionInfo = from_json(&object.info(), "session info").unwrap_or_default();
    let label = Label::new(format!("environment {} session {}", info.provider, info.id));
    Arc::new(ImportedSession {
        object,
        info,
        label,
    })
}

struct ImportedSession {
    object: SessionBox,
    info: SessionInfo,
    label: Label,
}

fn path_string(path: &Path) -> RString {
    path.to_string_lossy().into_owned().into()
}

#[async_trait]
impl EnvironmentSession for ImportedSession {
    fn info(&self) -> SessionInfo {
        self.info.clone()
    }

    async fn exec(&self, request: ExecRequest) -> Result<ExecResult> {
        let json = to_json(&request)?;
        // Not held while the command runs (an agent's whole run).
        drop(request);
        abi_call!(await self.exec(json))
    }

    async fn upload(&self, src: &Path, dst: &str) -> Result<()> {
        abi_call!(raw await self.upload(path_string(src), dst.into()))
    }

    async fn download(&self, src: &str, dst: &Path) -> Result<()> {
        abi_call!(raw await self.download(src.into(), path_string(dst)))
    }

    async fn upload_dir(&self, src: &Path, dst: &str) -> Result<()> {
        abi_call!(raw await self.upload_dir(path_string(src), dst.into()))
    }

    async fn download_dir(&self, src: &str, dst: &Path) -> Result<()> {
        abi_call!(raw await self.download_dir(src.into(), path_string(dst)))
    }

    async fn read_text(&self, path: &str) -> Result<String> {
        abi_call!(raw await self.read_text(path.into())).map(RString::into_string)
    }

    async fn write_text(&self, path: &str, content: &str) -> Result<()> {
        abi_call!(raw await self.write_text(path.into(), content.into()))
    }

    async fn is_file(&self, path: &str) -> Result<bool> {
        abi_call!(raw await self.is_file(path.into()))
    }

    async fn is_dir(&self, path: &str) -> Result<bool> {
        abi_call!(raw await self.is_dir(path.into()))
    }

    async fn endpoint(&self) -> Result<Option<String>> {
        abi_call!(await self.endpoint())
    }

    async fn set_network_policy(&self, policy: &NetworkPolicy) -> Result<()> {
        abi_call!(raw await self.set_network_policy(to_json(policy)?))
    }

    async fn close(&self) -> Result<()> {
        abi_call!(raw await self.close())
    }

    fn abi_object(&self) -> Option<SessionBox> {
        Some(self.object.clone())
    }
}

pub(super) fn optional_env(env: Option<&SessionRef>) -> ROption<SessionBox> {
    env.map(export_session).into()
}
