//! Identity, endpoint, network policy, concurrency and closing.

use serde_json::Value;

use super::support::{ensure, failed, join_all, ok, run, same, sh, CheckFuture, Checked, Kit};
use crate::contracts::ExecRequest;
use crate::sdk::{Ctx, SessionRef};

/// `info()` names the provider and an absolute default working directory.
pub(super) fn info<'a>(kit: &'a Kit<'a>, s: &'a SessionRef) -> CheckFuture<'a> {
    Box::pin(async move {
        let info = s.info();
        same(
            "info().provider",
            info.provider.as_str(),
            kit.request.environment.id.as_str(),
        )?;
        ensure!(!info.id.is_empty(), "info().id is empty");
        let workdir = info.default_workdir.ok_or("info(): no default_workdir")?;
        ensure!(
            workdir.starts_with('/'),
            "info().default_workdir {workdir:?} is not absolute"
        );
        sh(s, "true").await?;
        same("info().id after a command", s.info().id, info.id)
    })
}

/// The session's own directories: the workspace is the default working directory, the
/// others are absolute and take files that commands see.
pub(super) fn session_dirs<'a>(_kit: &'a Kit<'a>, s: &'a SessionRef) -> CheckFuture<'a> {
    Box::pin(async move {
        sh(s, "true").await?;
        let info = s.info();
        let dirs = &info.dirs;
        same(
            "info().dirs.workspace",
            Some(dirs.workspace.as_str()),
            info.default_workdir.as_deref(),
        )?;
        for (name, dir) in [
            ("tests", &dirs.tests),
            ("solution", &dirs.solution),
            ("logs", &dirs.logs),
            ("tmp", &dirs.tmp),
        ] {
            ensure!(
                dir.starts_with('/'),
                "info().dirs.{name} {dir:?} is not absolute"
            );
            let path = format!("{}/contract-kit/{name}.txt", dir.trim_end_matches('/'));
            ok(
                &format!("write_text {path}"),
                s.write_text(&path, name).await,
            )?;
            same(
                &format!("cat {path}"),
                sh(s, &format!("cat '{path}'")).await?,
                name.into(),
            )?;
        }
        Ok(())
    })
}

/// No endpoint.
pub(super) fn endpoint<'a>(_kit: &'a Kit<'a>, s: &'a SessionRef) -> CheckFuture<'a> {
    Box::pin(async move { same("endpoint()", ok("endpoint", s.endpoint().await)?, None) })
}

/// The policy the session has is accepted.
pub(super) fn network_policy<'a>(kit: &'a Kit<'a>, s: &'a SessionRef) -> CheckFuture<'a> {
    Box::pin(async move {
        let policy = &kit.request.baseline_network_policy;
        ok(
            "set_network_policy(the baseline policy)",
            s.set_network_policy(policy).await,
        )
    })
}

/// Sixteen operations at once on a fresh session.
pub(super) fn concurrent_operations<'a>(_kit: &'a Kit<'a>, s: &'a SessionRef) -> CheckFuture<'a> {
    Box::pin(async move {
        let operations: Vec<std::pin::Pin<Box<dyn std::future::Future<Output = Checked> + '_>>> =
            (0..16)
                .map(
                    |i| -> std::pin::Pin<Box<dyn std::future::Future<Output = Checked> + '_>> {
                        match i % 4 {
                            0 => Box::pin(async move {
                                let path = format!("f{i}.txt");
                                ok(
                                    &format!("write_text {path}"),
                                    s.write_text(&path, "x").await,
                                )
                            }),
                            1 => Box::pin(async move {
                                let r = run(s, ExecRequest::argv(["true"])).await?;
                                ensure!(r.success(), "argv true: {r:?}");
                                Ok(())
                            }),
                            2 => Box::pin(async move {
                                ensure!(ok("is_dir", s.is_dir("").await)?, "is_dir(\"\") is false");
                                Ok(())
                            }),
                            _ => Box::pin(async move {
                                ensure!(
                                    !ok("is_file", s.is_file("missing").await)?,
                                    "missing is a file"
                                );
                                Ok(())
                            }),
                        }
                    },
                )
                .collect();
        for outcome in join_all(operations).await {
            outcome?;
        }
        for i in (0..16).step_by(4) {
            let path = format!("f{i}.txt");
            ensure!(
                ok("is_file", s.is_file(&path).await)?,
                "{path} was not written"
            );
        }
        Ok(())
    })
}

/// Close twice; nothing runs afterwards.
pub(super) fn close<'a>(_kit: &'a Kit<'a>, s: &'a SessionRef) -> CheckFuture<'a> {
    Box::pin(async move {
        sh(s, "echo used > used.txt").await?;
        ok("close", s.close().await)?;
        ok("close again", s.close().await)?;
        failed("exec after close", s.exec(ExecRequest::shell("true")).await)?;
        let _ = s.info();
        Ok(())
    })
}

/// The provider's crash cleanup from persisted `close_params`.
pub(super) fn crash_cleanup<'a>(kit: &'a Kit<'a>, _s: &'a SessionRef) -> CheckFuture<'a> {
    Box::pin(async move {
        let dropped = kit.open().await?;
        ok(
            "write_text crash.txt",
            dropped.write_text("crash.txt", "x").await,
        )?;
        let params = dropped.info().close_params;
        drop(dropped);
        let ctx = Ctx::detached();
        ok(
            "close(close_params)",
            kit.provider.close(&ctx, &params).await,
        )?;
        ok(
            "close(close_params) again",
            kit.provider.close(&ctx, &params).await,
        )?;
        ok("close(null)", kit.provider.close(&ctx, &Value::Null).await)
    })
}
