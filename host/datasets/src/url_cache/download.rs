//! Downloading a source into a staging file while hashing it: over HTTP(S) with `reqwest`
//! (connect timeout 30 s, no limit on the whole download, but 60 s without a byte fails),
//! or read from a local `file://` path.

use std::path::Path;
use std::time::Duration;

use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{io_error, DownloadProgress, Request, UrlError};
use crate::cache::scrub;

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Writes the source's bytes to `dest`, calling `progress` once per chunk received; returns
/// their count and SHA-256 (lowercase hex).
pub(super) async fn to_file(
    request: &Request<'_>,
    dest: &Path,
    read_stall: Duration,
    progress: &(dyn Fn(DownloadProgress) + Send + Sync),
) -> Result<(u64, String), UrlError> {
    let mut out = tokio::fs::File::create(dest)
        .await
        .map_err(io_error(dest))?;
    let mut hasher = Sha256::new();
    let mut bytes = 0u64;
    if request.url.scheme() == "file" {
        let path = request
            .url
            .to_file_path()
            .map_err(|()| failed(request, "not a local path".into()))?;
        let mut input = tokio::fs::File::open(&path)
            .await
            .map_err(|e| failed(request, e.to_string()))?;
        let total = input.metadata().await.ok().map(|m| m.len());
        let mut buffer = vec![0; 1 << 16];
        loop {
            let n = input
                .read(&mut buffer)
                .await
                .map_err(|e| failed(request, e.to_string()))?;
            if n == 0 {
                break;
            }
            hasher.update(&buffer[..n]);
            out.write_all(&buffer[..n]).await.map_err(io_error(dest))?;
            bytes += n as u64;
            progress(DownloadProgress { bytes, total });
        }
    } else {
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(read_stall);
        // The tests' servers are on loopback: a proxy from the environment must not get
        // between them.
        let client = if cfg!(test) {
            client.no_proxy()
        } else {
            client
        };
        let client = client
            .build()
            .map_err(|e| failed(request, describe(&e, read_stall)))?;
        let response = client
            .get(request.url.clone())
            .send()
            .await
            .map_err(|e| failed(request, describe(&e, read_stall)))?;
        let status = response.status();
        if !status.is_success() {
            return Err(UrlError::Http {
                url: request.shown.clone(),
                status: status.to_string(),
            });
        }
        let total = response.content_length();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| {
                failed(
                    request,
                    format!("after {bytes} bytes, {}", describe(&e, read_stall)),
                )
            })?;
            hasher.update(&chunk);
            out.write_all(&chunk).await.map_err(io_error(dest))?;
            bytes += chunk.len() as u64;
            progress(DownloadProgress { bytes, total });
        }
    }
    out.flush().await.map_err(io_error(dest))?;
    Ok((bytes, hex::encode(hasher.finalize())))
}

/// The download of `request` failed with `message` (credentials removed, one line).
fn failed(request: &Request<'_>, message: String) -> UrlError {
    let message = scrub(&scrub(&message, &request.source.url), request.url.as_str());
    UrlError::Download {
        url: request.shown.clone(),
        message: message.lines().collect::<Vec<_>>().join(" "),
    }
}

/// A reqwest error as one line: what failed and its innermost cause (`connection refused`),
/// never the URL (the caller names it, without credentials).
fn describe(error: &reqwest::Error, read_stall: Duration) -> String {
    let mut innermost: &dyn std::error::Error = error;
    while let Some(source) = innermost.source() {
        innermost = source;
    }
    let cause = innermost.to_string();
    if error.is_connect() {
        format!("cannot connect ({cause})")
    } else if error.is_timeout() {
        format!("no data for {} s", read_stall.as_secs_f64())
    } else if std::ptr::addr_eq(innermost, error) {
        // No cause: reqwest's own words, without the URL.
        let mut bare = reqwest::Error::to_string(error);
        if let Some(url) = error.url() {
            bare = bare.replace(&format!(" ({url})"), "");
        }
        bare
    } else {
        cause
    }
}
