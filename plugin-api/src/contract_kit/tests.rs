//! The kit against a provider that breaks every rule: it reports, never panics.

use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::contracts::{
    EnvironmentSpec, ExecRequest, ExecResult, ProviderCapabilities, SessionInfo,
};
use crate::sdk::{async_trait, Ctx, EnvironmentSession, SessionRef};
use crate::{Error, Result};

struct Broken {
    opens: bool,
}

struct BrokenSession;

#[async_trait]
impl EnvironmentProvider for Broken {
    fn capabilities(&self) -> Result<ProviderCapabilities> {
        Ok(ProviderCapabilities::public_only())
    }

    async fn open(&self, _ctx: &Ctx, _request: &OpenEnvironmentRequest) -> Result<SessionRef> {
        if self.opens {
            Ok(Arc::new(BrokenSession))
        } else {
            Err(Error::environment("no backend"))
        }
    }

    async fn close(&self, _ctx: &Ctx, _close_params: &serde_json::Value) -> Result<()> {
        Err(Error::environment("cannot close"))
    }
}

#[async_trait]
impl EnvironmentSession for BrokenSession {
    fn info(&self) -> SessionInfo {
        SessionInfo {
            id: String::new(),
            provider: "broken".into(),
            default_workdir: Some("relative".into()),
            close_params: serde_json::Value::Null,
            ..SessionInfo::default()
        }
    }

    async fn exec(&self, _request: ExecRequest) -> Result<ExecResult> {
        Ok(ExecResult::new(0, "wrong", ""))
    }

    async fn upload(&self, _src: &Path, _dst: &str) -> Result<()> {
        Ok(())
    }

    async fn download(&self, _src: &str, _dst: &Path) -> Result<()> {
        Ok(())
    }

    async fn upload_dir(&self, _src: &Path, _dst: &str) -> Result<()> {
        Ok(())
    }

    async fn download_dir(&self, _src: &str, _dst: &Path) -> Result<()> {
        Ok(())
    }

    async fn read_text(&self, _path: &str) -> Result<String> {
        Err(Error::environment("nothing"))
    }

    async fn write_text(&self, _path: &str, _content: &str) -> Result<()> {
        Ok(())
    }

    async fn is_file(&self, _path: &str) -> Result<bool> {
        Ok(true)
    }

    async fn is_dir(&self, _path: &str) -> Result<bool> {
        Ok(false)
    }

    async fn close(&self) -> Result<()> {
        Ok(())
    }
}

fn request() -> OpenEnvironmentRequest {
    OpenEnvironmentRequest::new("run", "task", EnvironmentSpec::new("broken"))
}

#[tokio::test]
async fn every_check_of_a_broken_provider_fails_with_what_it_saw() {
    let options = ContractOptions::default()
        .processes(ProcessProbe::Off)
        .check_timeout(Duration::from_secs(20))
        .skip("endpoint");
    let failure = run_session_contract(&Broken { opens: true }, &request(), &options)
        .await
        .unwrap_err();
    let report = &failure.0;
    assert_eq!(report.provider, "broken");
    assert_eq!(report.checks.len(), CHECKS.len());
    assert_eq!(report.skipped(), 1);
    // The default endpoint and network policy of the trait are right even here.
    assert_eq!(report.passed(), 1, "{failure}");
    let failed: Vec<&str> = report.failures().map(|(name, _)| name).collect();
    assert_eq!(failed.len(), CHECKS.len() - 2, "{failure}");
    let text = failure.to_string();
    assert!(
        text.starts_with("environment `broken`: 16 of 18 contract checks failed:"),
        "{text}"
    );
    assert!(text.contains("FAIL  info: info().id is empty"), "{text}");
    assert!(
        text.contains("FAIL  exec_argv_and_shell: argv sh -c: got"),
        "{text}"
    );
    assert!(
        text.contains("FAIL  crash_cleanup: close(close_params): cannot close"),
        "{text}"
    );
    assert_eq!(format!("{failure:?}"), text);
}

#[tokio::test]
async fn a_provider_that_cannot_open_and_an_unknown_skip() {
    let options = ContractOptions::default().skip("no-such-check");
    let failure = run_session_contract(&Broken { opens: false }, &request(), &options)
        .await
        .unwrap_err();
    let report = &failure.0;
    assert_eq!(report.checks[0].check, "options");
    assert_eq!(report.checks.len(), CHECKS.len() + 1);
    assert!(report
        .failures()
        .skip(1)
        .all(|(_, why)| why == "open: no backend"));
}

/// `block_on` polls with no runtime current, as the host does: the SDK's `blocking` then uses
/// the plugin-owned runtime's pool.
#[test]
fn block_on_has_no_runtime_and_blocking_work_still_runs() {
    use crate::sdk::provider::blocking;
    assert!(block_on(async {
        tokio::runtime::Handle::try_current().is_err()
    }));
    let inside = block_on(blocking("x", || {
        tokio::runtime::Handle::try_current().is_ok()
    }));
    assert!(inside.unwrap(), "not on a runtime's blocking pool");
    let err = block_on(blocking("prov", || -> u8 { panic!("boom") })).unwrap_err();
    assert!(
        err.message.contains("environment `prov`: file task failed"),
        "{}",
        err.message
    );
}
