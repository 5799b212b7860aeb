//! Transfers between this machine and the session, text I/O and probes.

use std::fs;
use std::path::Path;

use super::support::{
    ensure, failed, host_file, host_mode, host_read, ok, same, sh, workdir, CheckFuture, Checked,
    Kit,
};
use crate::sdk::SessionRef;
use crate::ErrorKind;

/// 70,000 bytes of every byte value.
fn binary() -> Vec<u8> {
    (0..=255u8).cycle().take(70_000).collect()
}

/// One file each way: bytes and mode kept, parents made, existing directories, symlinks.
pub(super) fn file_transfer<'a>(kit: &'a Kit<'a>, s: &'a SessionRef) -> CheckFuture<'a> {
    Box::pin(async move {
        let host = kit.scratch("file_transfer")?;
        let workdir = workdir(s).await?;
        let (blob, bytes) = (host.join("blob.bin"), binary());
        host_file(&blob, &bytes, 0o750)?;
        ok(
            "upload to bin/blob.bin",
            s.upload(&blob, "bin/blob.bin").await,
        )?;
        let inside = sh(s, "stat -c '%s %a' bin/blob.bin").await?;
        same(
            "size and mode in the session",
            inside.as_str(),
            "70000 750\n",
        )?;
        let back = host.join("out/deep/blob.bin");
        let absolute = format!("{workdir}/bin/blob.bin");
        ok(
            "download to a new host path",
            s.download(&absolute, &back).await,
        )?;
        ensure!(host_read(&back)? == bytes, "downloaded bytes differ");
        same("downloaded mode", host_mode(&back)?, 0o750)?;

        sh(s, "mkdir -p into && ln -s bin/blob.bin link.bin").await?;
        ok("upload into a directory", s.upload(&blob, "into").await)?;
        same(
            "into/blob.bin",
            sh(s, "stat -c %s into/blob.bin").await?.as_str(),
            "70000\n",
        )?;
        let into = host.join("into");
        fs::create_dir(&into).map_err(|e| format!("scratch: {e}"))?;
        ok(
            "download into a host directory",
            s.download("bin/blob.bin", &into).await,
        )?;
        ensure!(
            host_read(&into.join("blob.bin"))? == bytes,
            "bytes downloaded into a directory differ"
        );
        let via = host.join("via-link");
        ok(
            "download through a symlink",
            s.download("link.bin", &via).await,
        )?;
        ensure!(
            host_read(&via)? == bytes,
            "bytes downloaded through a symlink differ"
        );
        file_errors(s, &host).await
    })
}

async fn file_errors(s: &SessionRef, host: &Path) -> Checked {
    let e = failed(
        "download of a missing file",
        s.download("missing.txt", &host.join("m")).await,
    )?;
    same(
        "download of a missing file: kind",
        e.kind,
        ErrorKind::Environment,
    )?;
    ensure!(
        e.message.contains("missing.txt"),
        "the error does not name missing.txt: {e}"
    );
    let e = failed(
        "download of a directory",
        s.download("bin", &host.join("d")).await,
    )?;
    ensure!(
        e.message.contains("directory"),
        "download of a directory: {e}"
    );
    failed("upload of a directory", s.upload(host, "x").await)?;
    failed(
        "upload of a missing file",
        s.upload(&host.join("nope"), "y").await,
    )?;
    Ok(())
}

/// A tree each way, merged over what is there, with modes and symlinks.
pub(super) fn tree_transfer<'a>(kit: &'a Kit<'a>, s: &'a SessionRef) -> CheckFuture<'a> {
    Box::pin(async move {
        let host = kit.scratch("tree_transfer")?;
        let workdir = workdir(s).await?;
        let tree = host.join("tree");
        host_file(&tree.join("a/b/run.sh"), b"#!/bin/sh\necho ran\n", 0o750)?;
        host_file(&tree.join("top.txt"), b"top", 0o644)?;
        let made = std::os::unix::fs::symlink("a/b/run.sh", tree.join("link")).and_then(|()| {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(tree.join("a"), fs::Permissions::from_mode(0o711))
        });
        made.map_err(|e| format!("scratch: {e}"))?;
        ok(
            "write_text dest/existing.txt",
            s.write_text("dest/existing.txt", "keep").await,
        )?;
        ok("upload_dir", s.upload_dir(&tree, "dest").await)?;
        let seen = sh(
            s,
            "cat dest/existing.txt; echo; ./dest/link; test -L dest/link && echo symlink; \
             stat -c %a dest/a dest/a/b/run.sh",
        )
        .await?;
        same(
            "the uploaded tree",
            seen.as_str(),
            "keep\nran\nsymlink\n711\n750\n",
        )?;
        ok(
            "upload_dir again (merging)",
            s.upload_dir(&tree, "dest").await,
        )?;

        tree_back(s, &host, &tree, &workdir).await
    })
}

/// The tree [`tree_transfer`] uploaded, downloaded again; the errors of tree transfers.
async fn tree_back(s: &SessionRef, host: &Path, tree: &Path, workdir: &str) -> Checked {
    let out = host.join("out");
    ok(
        "download_dir",
        s.download_dir(&format!("{workdir}/dest"), &out).await,
    )?;
    same("top.txt", host_read(&out.join("top.txt"))?, b"top".to_vec())?;
    same(
        "existing.txt",
        host_read(&out.join("existing.txt"))?,
        b"keep".to_vec(),
    )?;
    let script = host_read(&out.join("a/b/run.sh"))?;
    same("a/b/run.sh", script, b"#!/bin/sh\necho ran\n".to_vec())?;
    same(
        "mode of a/b/run.sh",
        host_mode(&out.join("a/b/run.sh"))?,
        0o750,
    )?;
    same("mode of a", host_mode(&out.join("a"))?, 0o711)?;
    let link = fs::read_link(out.join("link")).map_err(|e| format!("link: {e}"))?;
    same(
        "the symlink's target",
        link.as_path(),
        Path::new("a/b/run.sh"),
    )?;

    failed(
        "download_dir of a missing directory",
        s.download_dir("nope", &out).await,
    )?;
    let e = failed(
        "download_dir of a file",
        s.download_dir("dest/top.txt", &out).await,
    )?;
    ensure!(
        e.message.contains("not a directory"),
        "download_dir of a file: {e}"
    );
    failed(
        "upload_dir of a file",
        s.upload_dir(&tree.join("top.txt"), "y").await,
    )?;
    Ok(())
}

/// Text I/O on every kind of path, and the probes.
pub(super) fn text_and_probes<'a>(_kit: &'a Kit<'a>, s: &'a SessionRef) -> CheckFuture<'a> {
    Box::pin(async move {
        let workdir = workdir(s).await?;
        ok(
            "write_text x/y/z.txt",
            s.write_text("x/y/z.txt", "héllo\n").await,
        )?;
        same(
            "read_text",
            ok("read_text", s.read_text("x/y/z.txt").await)?.as_str(),
            "héllo\n",
        )?;
        let absolute = format!("{workdir}/x/y/z.txt");
        same(
            "read_text absolute",
            ok("read_text", s.read_text(&absolute).await)?.as_str(),
            "héllo\n",
        )?;
        same(
            "cat in the session",
            sh(s, "cat x/y/z.txt").await?.as_str(),
            "héllo\n",
        )?;
        ok(
            "write_text over a file",
            s.write_text("x/y/z.txt", "over").await,
        )?;
        let unnormalised = ok("read_text", s.read_text("./x/../x/y/z.txt").await)?;
        same("read_text ./x/../x/y/z.txt", unnormalised.as_str(), "over")?;
        probes(s).await?;
        failed(
            "write_text over a directory",
            s.write_text("x/y", "no").await,
        )?;
        ensure!(
            ok("is_file", s.is_file("x/y/z.txt").await)?,
            "writing over x/y removed it"
        );
        sh(s, "printf '\\377\\376' > bin.dat").await?;
        let e = failed("read_text of invalid UTF-8", s.read_text("bin.dat").await)?;
        ensure!(
            e.message.contains("UTF-8"),
            "read_text of invalid UTF-8: {e}"
        );
        let e = failed("read_text of a missing file", s.read_text("missing").await)?;
        ensure!(
            e.message.contains("missing"),
            "the error does not name `missing`: {e}"
        );
        Ok(())
    })
}

async fn probes(s: &SessionRef) -> Checked {
    let expected = [
        ("is_file", "x/y/z.txt", true),
        ("is_dir", "x/y/z.txt", false),
        ("is_dir", "x/y", true),
        ("is_dir", "", true),
        ("is_dir", "/", true),
        ("is_file", "x/y", false),
        ("is_file", "missing", false),
        ("is_dir", "missing/deeper", false),
        ("is_dir", "x/y/z.txt/under-a-file", false),
        ("is_file", "with space/f", false),
    ];
    for (probe, path, want) in expected {
        let got = match probe {
            "is_file" => s.is_file(path).await,
            _ => s.is_dir(path).await,
        };
        same(&format!("{probe}({path:?})"), ok(probe, got)?, want)?;
    }
    Ok(())
}
