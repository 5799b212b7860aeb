//! Files through the archive endpoint: tar archives put at `/` of the container and fetched
//! from a path (symlinks followed).

use std::path::Path;

use crate::engine::Daemon;
use bollard::query_parameters::{DownloadFromContainerOptions, UploadToContainerOptions};
use futures_util::StreamExt;

use crate::archive::{self, Fetched};
use crate::config::normalize;

/// Symlinks followed while downloading one path before giving up (the kernel's limit).
pub(crate) const MAX_SYMLINKS: usize = 40;

/// Uploads a tar archive, extracted at `/` of the container.
pub(crate) async fn put(
    docker: &Daemon,
    container: &str,
    tar: Vec<u8>,
) -> std::result::Result<(), String> {
    let options = UploadToContainerOptions {
        path: "/".to_string(),
        no_overwrite_dir_non_dir: Some("true".to_string()),
        copy_uidgid: Some("true".to_string()),
    };
    docker
        .upload_to_container(
            container,
            Some(options),
            bollard::body_full(bytes::Bytes::from(tar)),
        )
        .await
        .map_err(|e| describe(container, e))
}

/// The archive of `path` in the container.
pub(crate) async fn fetch(
    docker: &Daemon,
    container: &str,
    path: &str,
) -> std::result::Result<Vec<u8>, String> {
    let options = DownloadFromContainerOptions {
        path: path.to_string(),
    };
    let mut stream = docker.download_from_container(container, Some(options));
    let mut tar = Vec::new();
    while let Some(chunk) = stream.next().await {
        tar.extend_from_slice(&chunk.map_err(|e| describe(container, e))?);
    }
    Ok(tar)
}

/// The contents and mode of the regular file at `path` (symlinks followed).
pub(crate) async fn fetch_file(
    docker: &Daemon,
    container: &str,
    path: &str,
) -> std::result::Result<(Vec<u8>, u32), String> {
    let mut path = path.to_string();
    for _ in 0..MAX_SYMLINKS {
        let tar = fetch(docker, container, &path).await?;
        match archive::single_file(&tar).map_err(|e| e.to_string())? {
            Fetched::File { data, mode } => return Ok((data, mode)),
            Fetched::Dir => {
                return Err("the source is a directory (use the *_dir operation)".to_string())
            }
            Fetched::Symlink(link) => path = follow(&path, &link),
        }
    }
    Err("too many levels of symbolic links".to_string())
}

/// The container path a symlink at `path` pointing to `link` resolves to.
pub(crate) fn follow(path: &str, link: &Path) -> String {
    let parent = Path::new(path).parent().unwrap_or(Path::new("/"));
    normalize(parent, &link.to_string_lossy())
}

/// A Docker error of a transfer, in a few words.
fn describe(container: &str, e: bollard::errors::Error) -> String {
    match e {
        bollard::errors::Error::DockerResponseServerError {
            status_code: 404,
            message,
        } => {
            if message.contains("No such container") {
                format!("container `{container}` does not exist (closed or removed)")
            } else {
                format!("no such file or directory ({message})")
            }
        }
        bollard::errors::Error::DockerResponseServerError {
            status_code,
            message,
        } => format!("the daemon refused ({status_code}): {message}"),
        other => other.to_string(),
    }
}
