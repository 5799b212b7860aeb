//! The command contract: argv and shell, errors, working directories, bindings, timeouts,
//! cancellation and detached commands.

use std::time::{Duration, Instant};

use super::support::{
    ensure, expect_sleepers, failed, marker, pause, race, run, same, sh, workdir, CheckFuture,
    Either, Kit,
};
use crate::contracts::{ExecRequest, ExecResult};
use crate::sdk::SessionRef;
use crate::ErrorKind;

/// argv without a shell, a string through `/bin/sh`, the result's fields.
pub(super) fn argv_and_shell<'a>(_kit: &'a Kit<'a>, s: &'a SessionRef) -> CheckFuture<'a> {
    Box::pin(async move {
        let r = run(
            s,
            ExecRequest::argv(["sh", "-c", "echo out; echo err >&2; exit 3"]),
        )
        .await?;
        same("argv sh -c", r, ExecResult::new(3, "out\n", "err\n"))?;
        let r = run(s, ExecRequest::argv(["printf", "%s|", "a b", "$HOME"])).await?;
        same(
            "argv is not split or expanded",
            r,
            ExecResult::new(0, "a b|$HOME|", ""),
        )?;
        let r = run(s, ExecRequest::argv(["echo", "a b", "c"])).await?;
        same("argv echo", r, ExecResult::new(0, "a b c\n", ""))?;
        let r = run(s, ExecRequest::shell("echo $((1 + 2)); printf '\\377'")).await?;
        same(
            "a shell line, output as lossy UTF-8",
            (r.returncode, r.stdout.as_str()),
            (0, "3\n\u{fffd}"),
        )?;
        let r = run(s, ExecRequest::shell("kill -9 $$")).await?;
        same(
            "a command killed by SIGKILL",
            (r.returncode, r.timed_out),
            (137, false),
        )?;
        let r = run(s, ExecRequest::argv(["false"])).await?;
        same("argv false", (r.returncode, r.success()), (1, false))
    })
}

/// Requests that cannot run are errors of the right kind, naming what is wrong.
pub(super) fn errors<'a>(_kit: &'a Kit<'a>, s: &'a SessionRef) -> CheckFuture<'a> {
    Box::pin(async move {
        let workdir = workdir(s).await?;
        let e = failed(
            "empty argv",
            s.exec(ExecRequest::argv(Vec::<String>::new())).await,
        )?;
        same("empty argv: kind", e.kind, ErrorKind::InvalidInput)?;
        let e = failed(
            "negative timeout",
            s.exec(ExecRequest::shell("true").timeout(-1.0)).await,
        )?;
        same("negative timeout: kind", e.kind, ErrorKind::InvalidInput)?;
        for program in ["/nonexistent/program", "no-such-program-kit"] {
            let e = failed(program, s.exec(ExecRequest::argv([program])).await)?;
            same(&format!("{program}: kind"), e.kind, ErrorKind::Environment)?;
            ensure!(
                e.message.contains(program),
                "{program}: the error does not name it: {e}"
            );
        }
        let e = failed(
            "missing cwd",
            s.exec(ExecRequest::shell("true").cwd("missing")).await,
        )?;
        same("missing cwd: kind", e.kind, ErrorKind::Environment)?;
        let resolved = format!("{workdir}/missing");
        ensure!(
            e.message.contains(&resolved),
            "missing cwd: the error does not name {resolved}: {e}"
        );
        Ok(())
    })
}

/// The default cwd is the default working directory; relative cwds resolve against it.
pub(super) fn cwd<'a>(_kit: &'a Kit<'a>, s: &'a SessionRef) -> CheckFuture<'a> {
    Box::pin(async move {
        let workdir = workdir(s).await?;
        let physical = run(s, ExecRequest::shell("pwd -P").cwd(workdir.as_str())).await?;
        ensure!(physical.success(), "pwd -P in {workdir}: {physical:?}");
        let physical = physical.stdout.trim_end().to_string();
        same(
            "the default cwd",
            sh(s, "pwd -P").await?.trim_end(),
            physical.as_str(),
        )?;
        sh(s, "mkdir -p sub/deeper").await?;
        ok_write(s, "sub/x.txt", "x").await?;
        let r = run(s, ExecRequest::argv(["cat", "x.txt"]).cwd("sub")).await?;
        same("cat x.txt in cwd sub", r.stdout.as_str(), "x")?;
        let r = run(s, ExecRequest::shell("pwd -P").cwd("sub/deeper")).await?;
        same(
            "cwd sub/deeper",
            r.stdout.trim_end(),
            &format!("{physical}/sub/deeper"),
        )?;
        let r = run(s, ExecRequest::shell("pwd -P").cwd("/")).await?;
        same("cwd /", r.stdout.as_str(), "/\n")
    })
}

async fn ok_write(s: &SessionRef, path: &str, content: &str) -> super::support::Checked {
    super::support::ok(
        &format!("write_text {path}"),
        s.write_text(path, content).await,
    )
}

/// Call defaults < session bindings < required_env; conflicts refused without values.
pub(super) fn env_layering<'a>(_kit: &'a Kit<'a>, s: &'a SessionRef) -> CheckFuture<'a> {
    Box::pin(async move {
        let show = "printf '%s|%s|%s|%s' \"$AC_SESSION\" \"$AC_BOTH\" \"$AC_CALL\" \"$AC_REQ\"";
        let layered = ExecRequest::shell(show)
            .env("AC_BOTH", "call-value")
            .env("AC_CALL", "call-value")
            .required_env("AC_REQ", "required-value")
            .required_env("AC_SESSION", "session-value");
        let r = run(s, layered).await?;
        same(
            "AC_SESSION|AC_BOTH|AC_CALL|AC_REQ",
            r.stdout.as_str(),
            "session-value|session-value|call-value|required-value",
        )?;
        let conflict = ExecRequest::shell("true").required_env("AC_BOTH", "secret-other");
        let e = failed(
            "required_env against a session binding",
            s.exec(conflict).await,
        )?;
        same("conflict: kind", e.kind, ErrorKind::InvalidInput)?;
        ensure!(
            e.message.contains("AC_BOTH"),
            "the conflict does not name AC_BOTH: {e}"
        );
        ensure!(
            !e.message.contains("secret-other") && !e.message.contains("session-value"),
            "the conflict shows a value: {e}"
        );
        let conflict = ExecRequest::shell("true")
            .env("AC_X", "a")
            .required_env("AC_X", "b");
        let e = failed(
            "required_env against a call default",
            s.exec(conflict).await,
        )?;
        ensure!(
            e.message.contains("AC_X"),
            "the conflict does not name AC_X: {e}"
        );
        failed(
            "a variable named BAD=NAME",
            s.exec(ExecRequest::shell("true").env("BAD=NAME", "v"))
                .await,
        )?;
        Ok(())
    })
}

/// A timed-out command: 124, `timed_out`, its output so far, nothing left running.
pub(super) fn timeout<'a>(kit: &'a Kit<'a>, s: &'a SessionRef) -> CheckFuture<'a> {
    Box::pin(async move {
        let slack = kit.options.slack;
        let started = Instant::now();
        let r = run(s, ExecRequest::argv(["sleep", "30"]).timeout(0.3)).await?;
        same(
            "argv sleep 30, timeout 0.3",
            (r.returncode, r.timed_out),
            (124, true),
        )?;
        within("timeout 0.3", started, Duration::from_millis(300) + slack)?;
        let marker = marker();
        let line = format!("sleep {marker} & echo partial >&2; echo started; sleep {marker}");
        let started = Instant::now();
        let r = run(s, ExecRequest::shell(line).timeout(0.5)).await?;
        same(
            "a timed-out shell line",
            r,
            ExecResult::timeout("started\n", "partial\n"),
        )?;
        within("timeout 0.5", started, Duration::from_millis(500) + slack)?;
        expect_sleepers(kit, s, &marker, false, "a timed-out command's children").await?;
        let r = run(s, ExecRequest::shell("echo quick").timeout(30.0)).await?;
        same(
            "a command within its timeout",
            r,
            ExecResult::new(0, "quick\n", ""),
        )
    })
}

fn within(what: &str, started: Instant, limit: Duration) -> super::support::Checked {
    let took = started.elapsed();
    ensure!(
        took < limit,
        "{what}: returned after {took:?} (limit {limit:?})"
    );
    Ok(())
}

/// A background child holding the output does not keep the call waiting.
pub(super) fn background_output<'a>(kit: &'a Kit<'a>, s: &'a SessionRef) -> CheckFuture<'a> {
    Box::pin(async move {
        let limit = kit.options.output_grace + kit.options.slack;
        let linger = (limit + Duration::from_secs(3)).as_secs() + 1;
        let started = Instant::now();
        let r = run(s, ExecRequest::shell(format!("sleep {linger} & echo done"))).await?;
        same(
            "a command leaving a child behind",
            r,
            ExecResult::new(0, "done\n", ""),
        )?;
        within("a command leaving a child behind", started, limit)
    })
}

/// Dropping an `exec` future kills the command and its children.
pub(super) fn cancel<'a>(kit: &'a Kit<'a>, s: &'a SessionRef) -> CheckFuture<'a> {
    Box::pin(async move {
        let marker = marker();
        let line = format!("sleep {marker} & echo started > cancel.txt; sleep {marker}");
        let within = Duration::from_secs(10) + kit.options.slack;
        let started = async {
            let deadline = Instant::now() + within;
            while !s.is_file("cancel.txt").await.unwrap_or(false) {
                if Instant::now() >= deadline {
                    return false;
                }
                pause(Duration::from_millis(50)).await;
            }
            true
        };
        match race(s.exec(ExecRequest::shell(line)), started).await {
            Either::Left(r) => return Err(format!("the command ended on its own: {r:?}")),
            Either::Right(false) => {
                return Err(format!("the command did not start within {within:?}"))
            }
            Either::Right(true) => {} // the exec future is dropped here
        }
        expect_sleepers(kit, s, &marker, false, "a cancelled command's children").await
    })
}

/// A detached command returns at once and runs until close.
pub(super) fn detach<'a>(kit: &'a Kit<'a>, s: &'a SessionRef) -> CheckFuture<'a> {
    Box::pin(async move {
        let marker = marker();
        let line = format!("echo done > detached.txt; sleep {marker}");
        let started = Instant::now();
        let r = run(s, ExecRequest::shell(line).detach()).await?;
        same("a detached command", r, ExecResult::new(0, "", ""))?;
        within(
            "a detached command",
            started,
            Duration::from_secs(1) + kit.options.slack,
        )?;
        let within = Duration::from_secs(10) + kit.options.slack;
        let deadline = Instant::now() + within;
        while s.read_text("detached.txt").await.ok().as_deref() != Some("done\n") {
            ensure!(Instant::now() < deadline, "the detached command never ran");
            pause(Duration::from_millis(50)).await;
        }
        sh(s, "true").await?;
        expect_sleepers(
            kit,
            s,
            &marker,
            true,
            "a detached command after another one",
        )
        .await?;
        super::support::ok("close", s.close().await)?;
        if kit.options.processes == super::ProcessProbe::Host {
            expect_sleepers(kit, s, &marker, false, "a detached command after close").await?;
        }
        Ok(())
    })
}
