//! The file cache against a small HTTP/1.1 server on loopback, made here.

mod archives;
mod server;

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use super::*;
use archives::{raw_tar_gz, tar_gz_bytes, zip_bytes};
use server::{Route, Server};

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn plain(url: String, bytes: &[u8]) -> UrlSource {
    UrlSource {
        url,
        sha256: sha256(bytes),
        archive: None,
        member: None,
    }
}

fn archive(url: String, bytes: &[u8], kind: ArchiveKind, member: Option<&str>) -> UrlSource {
    UrlSource {
        url,
        sha256: sha256(bytes),
        archive: Some(kind),
        member: member.map(str::to_string),
    }
}

fn quiet(_: DownloadProgress) {}

/// Every path under `root`, relative, sorted.
fn listing(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            out.push(
                path.strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
            );
            if path.is_dir() {
                pending.push(path);
            }
        }
    }
    out.sort();
    out
}

fn one_line(error: &UrlError) -> String {
    let text = error.to_string();
    assert!(!text.contains('\n'), "more than one line: {text}");
    text
}

#[tokio::test]
async fn a_plain_file_is_downloaded_once_then_served_with_the_server_gone() {
    let work = tempfile::tempdir().unwrap();
    let body = b"hello, dataset\n".repeat(10_000);
    let mut server = Server::start(&[("/data/hello%20world.csv", Route::Body(body.clone()))]);
    let cache = UrlCache::new(work.path().join("datasets"));
    let mut source = plain(server.url("/data/hello%20world.csv"), &body);
    // Either case, with or without `sha256:`.
    source.sha256 = format!("SHA256:{}", source.sha256.to_uppercase());
    let seen = Mutex::new(Vec::new());
    let progress = |p: DownloadProgress| seen.lock().unwrap().push(p);
    let file = cache.fetch(&source, &progress).await.unwrap();
    assert!(!file.from_cache);
    assert_eq!(fs::read(&file.path).unwrap(), body);
    let entry = work.path().join("datasets/files").join(sha256(&body));
    assert_eq!(file.path, entry.join("hello_20world.csv"));
    assert_eq!(
        (file.sha256.as_str(), file.bytes, file.url.as_str()),
        (
            sha256(&body).as_str(),
            body.len() as u64,
            source.url.as_str()
        )
    );
    let seen = seen.into_inner().unwrap();
    assert_eq!(
        seen.last(),
        Some(&DownloadProgress {
            bytes: body.len() as u64,
            total: Some(body.len() as u64)
        })
    );
    assert!(seen.windows(2).all(|w| w[0].bytes < w[1].bytes));
    let record: Record =
        serde_json::from_slice(&fs::read(entry.join("entry.json")).unwrap()).unwrap();
    assert_eq!(
        record,
        Record {
            url: source.url.clone(),
            sha256: sha256(&body),
            bytes: body.len() as u64,
            archive: None,
            file: "hello_20world.csv".into(),
            tree: None,
        }
    );

    server.stop();
    let again = cache.fetch(&source, &quiet).await.unwrap();
    assert!(again.from_cache);
    assert_eq!(again.path, file.path);
    assert_eq!(server.requests(), 1);
    assert!(listing(&work.path().join("datasets/staging")).is_empty());
}

#[tokio::test]
async fn a_wrong_digest_is_one_line_and_keeps_nothing() {
    let work = tempfile::tempdir().unwrap();
    let server = Server::start(&[("/f.bin", Route::Body(b"served bytes".to_vec()))]);
    let cache = UrlCache::new(work.path());
    let source = plain(server.url("/f.bin"), b"the bytes the benchmark means");
    let error = cache.fetch(&source, &quiet).await.unwrap_err();
    let text = one_line(&error);
    assert!(matches!(error, UrlError::Digest { .. }), "{text}");
    assert!(text.contains(&source.url), "{text}");
    assert!(text.contains(&source.sha256), "{text}");
    assert!(text.contains(&sha256(b"served bytes")), "{text}");
    assert_eq!(listing(work.path()), ["staging"]);
}

#[tokio::test]
async fn a_tampered_file_is_downloaded_again_while_the_server_is_up() {
    let work = tempfile::tempdir().unwrap();
    let server = Server::start(&[("/f.txt", Route::Body(b"original\n".to_vec()))]);
    let cache = UrlCache::new(work.path());
    let source = plain(server.url("/f.txt"), b"original\n");
    let file = cache.fetch(&source, &quiet).await.unwrap();
    fs::write(&file.path, "tampered\n").unwrap();
    let again = cache.fetch(&source, &quiet).await.unwrap();
    assert!(!again.from_cache);
    assert_eq!(fs::read(&again.path).unwrap(), b"original\n");
    assert_eq!(server.requests(), 2);
    assert!(listing(&work.path().join("staging")).is_empty());
    assert!(cache.fetch(&source, &quiet).await.unwrap().from_cache);
}

#[tokio::test]
async fn a_tampered_file_is_refused_with_the_server_gone() {
    let work = tempfile::tempdir().unwrap();
    let mut server = Server::start(&[("/f.txt", Route::Body(b"original\n".to_vec()))]);
    let cache = UrlCache::new(work.path());
    let source = plain(server.url("/f.txt"), b"original\n");
    let file = cache.fetch(&source, &quiet).await.unwrap();
    server.stop();
    fs::write(&file.path, "tampered\n").unwrap();
    let error = cache.fetch(&source, &quiet).await.unwrap_err();
    let text = one_line(&error);
    assert!(matches!(error, UrlError::Altered { .. }), "{text}");
    assert!(text.contains(&source.url), "{text}");
    assert!(text.contains(&file.path.display().to_string()), "{text}");
    // An unreadable record is altered too.
    fs::write(file.path.with_file_name("entry.json"), "{").unwrap();
    let error = cache.fetch(&source, &quiet).await.unwrap_err();
    assert!(
        one_line(&error).contains("entry.json"),
        "{}",
        one_line(&error)
    );
}

#[tokio::test]
async fn a_zip_is_unpacked_with_its_member_and_executable_bit_and_verified() {
    let work = tempfile::tempdir().unwrap();
    let bytes = zip_bytes();
    let mut server = Server::start(&[("/a.zip", Route::Body(bytes.clone()))]);
    let cache = UrlCache::new(work.path());
    let source = archive(
        server.url("/a.zip"),
        &bytes,
        ArchiveKind::Zip,
        Some("./dir/run.sh"),
    );
    let run = cache.fetch(&source, &quiet).await.unwrap();
    let entry = work.path().join(format!("files/{}.zip", sha256(&bytes)));
    assert_eq!(run.path, entry.join("extracted/dir/run.sh"));
    assert_eq!(fs::read(&run.path).unwrap(), b"#!/bin/sh\necho hi\n");
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&run.path), 0o755);
    assert_eq!(mode(&entry.join("extracted/dir/data.txt")), 0o644);
    assert_eq!(fs::read(entry.join("a.zip")).unwrap(), bytes);

    // The same archive without a member: the unpacked root, from the cache.
    server.stop();
    let whole = archive(server.url("/a.zip"), &bytes, ArchiveKind::Zip, None);
    let root = cache.fetch(&whole, &quiet).await.unwrap();
    assert!(root.from_cache);
    assert_eq!(root.path, entry.join("extracted"));
    let missing = archive(
        server.url("/a.zip"),
        &bytes,
        ArchiveKind::Zip,
        Some("dir/nope"),
    );
    let text = one_line(&cache.fetch(&missing, &quiet).await.unwrap_err());
    assert!(
        text.contains("dir/nope") && text.contains(&missing.url),
        "{text}"
    );

    // A changed mode, then a changed file, in the unpacked tree: altered, the server gone.
    fs::set_permissions(&run.path, fs::Permissions::from_mode(0o644)).unwrap();
    let error = cache.fetch(&source, &quiet).await.unwrap_err();
    assert!(matches!(error, UrlError::Altered { .. }), "{error}");
    fs::set_permissions(&run.path, fs::Permissions::from_mode(0o755)).unwrap();
    assert!(cache.fetch(&source, &quiet).await.unwrap().from_cache);
    fs::write(entry.join("extracted/dir/data.txt"), "other\n").unwrap();
    let text = one_line(&cache.fetch(&source, &quiet).await.unwrap_err());
    assert!(
        text.contains(&entry.join("extracted").display().to_string()),
        "{text}"
    );
}

#[tokio::test]
async fn a_tar_gz_is_unpacked_with_its_member_and_an_added_file_is_fetched_away() {
    let work = tempfile::tempdir().unwrap();
    let bytes = tar_gz_bytes(&[
        ("./", 0o755, None),
        ("data/", 0o755, None),
        ("data/train.jsonl", 0o644, Some(b"{\"x\": 1}\n")),
        ("data/sub/prep.sh", 0o700, Some(b"#!/bin/sh\n")),
        ("README", 0o600, Some(b"readme\n")),
    ]);
    let server = Server::start(&[("/d.tar.gz", Route::Body(bytes.clone()))]);
    let cache = UrlCache::new(work.path());
    let source = archive(
        server.url("/d.tar.gz"),
        &bytes,
        ArchiveKind::TarGz,
        Some("data"),
    );
    let data = cache.fetch(&source, &quiet).await.unwrap();
    let entry = work.path().join(format!("files/{}.tar.gz", sha256(&bytes)));
    assert_eq!(data.path, entry.join("extracted/data"));
    assert_eq!(
        fs::read(data.path.join("train.jsonl")).unwrap(),
        b"{\"x\": 1}\n"
    );
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&data.path.join("sub/prep.sh")), 0o755);
    assert_eq!(mode(&entry.join("extracted/README")), 0o644);

    fs::write(data.path.join("added.txt"), "extra").unwrap();
    let again = cache.fetch(&source, &quiet).await.unwrap();
    assert!(!again.from_cache);
    assert!(!again.path.join("added.txt").exists());
    assert_eq!(server.requests(), 2);
    assert!(cache.fetch(&source, &quiet).await.unwrap().from_cache);
}

#[tokio::test]
async fn archive_members_outside_the_directory_or_links_are_refused() {
    let work = tempfile::tempdir().unwrap();
    let evil_tar = raw_tar_gz(b"../evil", None);
    let absolute_tar = raw_tar_gz(b"/tmp/evil", None);
    let link_tar = raw_tar_gz(b"link", Some("/etc/passwd"));
    let evil_zip = {
        let mut zip = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
        zip.start_file("../evil", zip::write::SimpleFileOptions::default())
            .unwrap();
        zip.write_all(b"evil").unwrap();
        zip.finish().unwrap().into_inner()
    };
    let link_zip = {
        let mut zip = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
        zip.add_symlink(
            "link",
            "../../outside",
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
        zip.finish().unwrap().into_inner()
    };
    let server = Server::start(&[
        ("/evil.tar.gz", Route::Body(evil_tar.clone())),
        ("/abs.tar.gz", Route::Body(absolute_tar.clone())),
        ("/link.tar.gz", Route::Body(link_tar.clone())),
        ("/evil.zip", Route::Body(evil_zip.clone())),
        ("/link.zip", Route::Body(link_zip.clone())),
    ]);
    let root = work.path().join("datasets");
    let cache = UrlCache::new(&root);
    for (path, bytes, kind, member, why) in [
        (
            "/evil.tar.gz",
            &evil_tar,
            ArchiveKind::TarGz,
            "../evil",
            "..",
        ),
        (
            "/abs.tar.gz",
            &absolute_tar,
            ArchiveKind::TarGz,
            "/tmp/evil",
            "absolute",
        ),
        (
            "/link.tar.gz",
            &link_tar,
            ArchiveKind::TarGz,
            "link",
            "symbolic link",
        ),
        ("/evil.zip", &evil_zip, ArchiveKind::Zip, "../evil", ".."),
        (
            "/link.zip",
            &link_zip,
            ArchiveKind::Zip,
            "link",
            "symbolic link",
        ),
    ] {
        let source = archive(server.url(path), bytes, kind, None);
        let error = cache.fetch(&source, &quiet).await.unwrap_err();
        let text = one_line(&error);
        assert!(matches!(error, UrlError::UnsafeMember { .. }), "{text}");
        assert!(text.contains(&format!("`{member}`")), "{text}");
        assert!(text.contains(why) && text.contains(&source.url), "{text}");
    }
    assert!(!work.path().join("evil").exists());
    assert_eq!(listing(&root), ["staging"]);
}

#[tokio::test]
async fn credentials_never_reach_a_message_or_a_record() {
    let work = tempfile::tempdir().unwrap();
    let mut server = Server::start(&[("/f.txt", Route::Body(b"secret data\n".to_vec()))]);
    let cache = UrlCache::new(work.path());
    let base = server.url("");
    let with_credentials =
        |path: &str| format!("{base}{path}").replacen("http://", "http://user:s3cr3t@", 1);
    let source = plain(with_credentials("/f.txt"), b"secret data\n");
    let file = cache.fetch(&source, &quiet).await.unwrap();
    assert_eq!(file.url, server.url("/f.txt"));
    // Sent as basic authentication: `user:s3cr3t`.
    assert_eq!(
        server.authorization.lock().unwrap().as_slice(),
        ["Basic dXNlcjpzM2NyM3Q="]
    );
    let record = fs::read_to_string(file.path.with_file_name("entry.json")).unwrap();
    assert!(record.contains(&server.url("/f.txt")), "{record}");

    let mut errors = vec![
        cache
            .fetch(&plain(with_credentials("/missing"), b"x"), &quiet)
            .await
            .unwrap_err(),
        cache
            .fetch(&plain(with_credentials("/f.txt"), b"other"), &quiet)
            .await
            .unwrap_err(),
        cache
            .fetch(
                &UrlSource {
                    sha256: "not hex".into(),
                    ..source.clone()
                },
                &quiet,
            )
            .await
            .unwrap_err(),
        cache
            .fetch(
                &plain("ftp://user:s3cr3t@example.com/f".into(), b"x"),
                &quiet,
            )
            .await
            .unwrap_err(),
    ];
    fs::write(&file.path, "tampered").unwrap();
    server.stop();
    errors.push(cache.fetch(&source, &quiet).await.unwrap_err());
    errors.push(
        cache
            .fetch(&plain(with_credentials("/other"), b"y"), &quiet)
            .await
            .unwrap_err(),
    );
    for error in &errors {
        let text = one_line(error);
        assert!(
            !text.contains("s3cr3t") && !text.contains("user:"),
            "{text}"
        );
        assert!(!format!("{error:?}").contains("s3cr3t"), "{error:?}");
    }
    for entry in listing(work.path()) {
        let path = work.path().join(entry);
        if path.is_file() {
            let bytes = fs::read(&path).unwrap();
            assert!(!String::from_utf8_lossy(&bytes).contains("s3cr3t"));
        }
    }
}

#[tokio::test]
async fn a_404_and_a_refused_connection_are_one_line_naming_the_url() {
    let work = tempfile::tempdir().unwrap();
    let mut server = Server::start(&[]);
    let cache = UrlCache::new(work.path());
    let source = plain(server.url("/gone.csv"), b"x");
    let error = cache.fetch(&source, &quiet).await.unwrap_err();
    let text = one_line(&error);
    assert!(matches!(error, UrlError::Http { .. }), "{text}");
    assert_eq!(
        text,
        format!("{}: the server answered HTTP 404 Not Found", source.url)
    );

    server.stop();
    let error = cache.fetch(&source, &quiet).await.unwrap_err();
    let text = one_line(&error);
    assert!(matches!(error, UrlError::Download { .. }), "{text}");
    assert!(text.contains(&source.url), "{text}");
    assert!(text.to_lowercase().contains("connection refused"), "{text}");
    assert_eq!(listing(work.path()), ["staging"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_concurrent_fetches_of_one_source_all_succeed_with_one_entry() {
    let work = tempfile::tempdir().unwrap();
    let body = vec![7u8; 1 << 20];
    let server = Server::start(&[("/big.bin", Route::Body(body.clone()))]);
    let cache = Arc::new(UrlCache::new(work.path()));
    let source = plain(server.url("/big.bin"), &body);
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let (cache, source) = (cache.clone(), source.clone());
            tokio::spawn(async move { cache.fetch(&source, &quiet).await })
        })
        .collect();
    let mut paths = Vec::new();
    for task in tasks {
        let file = task.await.unwrap().unwrap();
        assert_eq!(fs::read(&file.path).unwrap(), body);
        paths.push(file.path);
    }
    paths.dedup();
    assert_eq!(paths.len(), 1);
    assert_eq!(
        listing(&work.path().join("files")),
        [
            sha256(&body),
            format!("{}/big.bin", sha256(&body)),
            format!("{}/entry.json", sha256(&body))
        ]
    );
    assert!(listing(&work.path().join("staging")).is_empty());
    assert!((1..=4).contains(&server.requests()));
}

#[tokio::test]
async fn a_download_killed_midway_leaves_a_staging_dir_that_nothing_reads() {
    let work = tempfile::tempdir().unwrap();
    let body = b"complete file\n".to_vec();
    let server = Server::start(&[("/f.txt", Route::Body(body.clone()))]);
    // What a SIGKILL mid-download leaves: a staging directory with part of the file.
    let stale = work.path().join("staging/url-killed");
    fs::create_dir_all(&stale).unwrap();
    fs::write(stale.join("f.txt"), &body[..5]).unwrap();
    let cache = UrlCache::new(work.path());
    let file = cache
        .fetch(&plain(server.url("/f.txt"), &body), &quiet)
        .await
        .unwrap();
    assert!(!file.from_cache);
    assert_eq!(fs::read(&file.path).unwrap(), body);
    assert_eq!(
        listing(&work.path().join("staging")),
        ["url-killed", "url-killed/f.txt"]
    );
}

#[tokio::test]
async fn a_stalled_download_fails_and_keeps_nothing() {
    let work = tempfile::tempdir().unwrap();
    let body = vec![1u8; 1000];
    let server = Server::start(&[("/slow", Route::Stall(body.clone()))]);
    let cache = UrlCache::new(work.path()).with_read_stall(Duration::from_millis(500));
    let source = plain(server.url("/slow"), &body);
    let error = cache.fetch(&source, &quiet).await.unwrap_err();
    let text = one_line(&error);
    assert!(matches!(error, UrlError::Download { .. }), "{text}");
    assert!(
        text.contains("no data for 0.5 s") && text.contains(&source.url),
        "{text}"
    );
    assert_eq!(listing(work.path()), ["staging"]);
}

#[tokio::test]
async fn bad_sources_are_refused_before_any_request() {
    let work = tempfile::tempdir().unwrap();
    let server = Server::start(&[("/a.zip", Route::Body(zip_bytes()))]);
    let cache = UrlCache::new(work.path());
    let good = archive(server.url("/a.zip"), &zip_bytes(), ArchiveKind::Zip, None);
    let cases = [
        (
            UrlSource {
                sha256: "abc".into(),
                ..good.clone()
            },
            "not 64 hex digits",
        ),
        (
            UrlSource {
                sha256: format!("{}zz", &good.sha256[..62]),
                ..good.clone()
            },
            "not 64 hex",
        ),
        (
            UrlSource {
                url: "ftp://example.com/a.zip".into(),
                ..good.clone()
            },
            "scheme `ftp`",
        ),
        (
            UrlSource {
                url: "not a url".into(),
                ..good.clone()
            },
            "`not a url`",
        ),
        (
            UrlSource {
                member: Some("../x".into()),
                ..good.clone()
            },
            "without `..`",
        ),
        (
            UrlSource {
                member: Some("/etc".into()),
                ..good.clone()
            },
            "must be relative",
        ),
        (
            UrlSource {
                member: Some(".".into()),
                ..good.clone()
            },
            "names nothing",
        ),
        (
            UrlSource {
                archive: None,
                member: Some("x".into()),
                ..good.clone()
            },
            "only taken from an archive",
        ),
    ];
    for (source, expected) in cases {
        let text = one_line(&cache.fetch(&source, &quiet).await.unwrap_err());
        assert!(text.contains(expected), "{text}");
    }
    assert_eq!(server.requests(), 0);
    assert!(listing(work.path()).is_empty());
}

#[tokio::test]
async fn a_file_url_is_copied_and_verified() {
    let work = tempfile::tempdir().unwrap();
    let local = work.path().join("local data.bin");
    fs::write(&local, b"local bytes").unwrap();
    let cache = UrlCache::new(work.path().join("datasets"));
    let url = reqwest::Url::from_file_path(&local).unwrap().to_string();
    let file = cache
        .fetch(&plain(url.clone(), b"local bytes"), &quiet)
        .await
        .unwrap();
    assert_eq!(file.path.file_name().unwrap(), "local_20data.bin");
    assert_eq!(fs::read(&file.path).unwrap(), b"local bytes");
    fs::remove_file(&local).unwrap();
    assert!(
        cache
            .fetch(&plain(url.clone(), b"local bytes"), &quiet)
            .await
            .unwrap()
            .from_cache
    );
    let text = one_line(
        &cache
            .fetch(&plain(url.clone(), b"other"), &quiet)
            .await
            .unwrap_err(),
    );
    assert!(
        text.contains(&url) && text.contains("No such file"),
        "{text}"
    );
}

#[test]
fn a_source_reads_from_json() {
    let source: UrlSource = serde_json::from_str(
        r#"{"url": "https://example.com/d.tgz", "sha256": "sha256:AB", "archive": "tar.gz", "member": "d"}"#,
    )
    .unwrap();
    assert_eq!(source.archive, Some(ArchiveKind::TarGz));
    let plain: UrlSource =
        serde_json::from_str(r#"{"url": "https://example.com/f", "sha256": "ab"}"#).unwrap();
    assert_eq!((plain.archive, plain.member), (None, None));
    assert_eq!(
        serde_json::to_string(&ArchiveKind::Zip).unwrap(),
        r#""zip""#
    );
}
