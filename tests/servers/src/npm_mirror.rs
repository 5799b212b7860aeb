//! A read-only npm registry mirror on loopback, served from an npm download cache
//! (`_cacache`, as npm itself wrote it when it last fetched from registry.npmjs.org): each
//! `GET /PATH` answers with the body npm cached for `https://registry.npmjs.org/PATH`, so
//! the real npm client installs real packages with no network. npm rewrites the public
//! registry's tarball addresses to the configured registry (`replace-registry-host`), so
//! the packuments it caches need no change.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use sha2::{Digest, Sha256};

/// The public registry whose cached responses the mirror replays.
const UPSTREAM: &str = "https://registry.npmjs.org";

/// A running mirror; it lives as long as the test process.
pub struct NpmCacheMirror {
    port: u16,
    requests: Arc<Mutex<Vec<(String, u16)>>>,
}

impl NpmCacheMirror {
    /// Serves `cacache` (a directory holding `index-v5/` and `content-v2/`) on 127.0.0.1.
    pub fn start(cacache: &Path) -> NpmCacheMirror {
        assert!(
            cacache.join("index-v5").is_dir(),
            "{}: not an npm cache (no index-v5)",
            cacache.display()
        );
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&requests);
        let root = cacache.to_path_buf();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { break };
                let root = root.clone();
                let log = Arc::clone(&log);
                std::thread::spawn(move || serve(stream, &root, &log));
            }
        });
        NpmCacheMirror { port, requests }
    }

    /// The registry address to give npm (`--registry`).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    /// Every request so far: its path and the status it got.
    pub fn requests(&self) -> Vec<(String, u16)> {
        self.requests.lock().unwrap().clone()
    }
}

/// Answers the requests of one connection until the client closes it.
fn serve(stream: TcpStream, root: &Path, log: &Mutex<Vec<(String, u16)>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or("").to_string();
        let path = parts.next().unwrap_or("/").to_string();
        let mut body_len = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    body_len = value.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut discard = vec![0u8; body_len];
        let _ = reader.read_exact(&mut discard);
        let found = (method == "GET")
            .then(|| {
                content_of(
                    root,
                    &format!("make-fetch-happen:request-cache:{UPSTREAM}{path}"),
                )
            })
            .flatten();
        let status = if found.is_some() { 200 } else { 404 };
        log.lock().unwrap().push((path.clone(), status));
        let ok = match found {
            Some(file) => {
                let kind = if path.ends_with(".tgz") {
                    "application/octet-stream"
                } else {
                    "application/json"
                };
                let len = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {len}\r\n\r\n"
                );
                writer.write_all(head.as_bytes()).is_ok()
                    && std::fs::File::open(&file)
                        .and_then(|mut f| std::io::copy(&mut f, &mut writer))
                        .is_ok()
            }
            None => {
                let body = r#"{"error":"Not found"}"#;
                let head = format!(
                    "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
                writer.write_all(head.as_bytes()).is_ok()
            }
        };
        if !ok {
            return;
        }
    }
}

/// The content file of the newest live index entry for `key` (cacache's layout: the bucket
/// is the key's SHA-256, each line `sha1\tJSON`, the last one wins, a null integrity deletes;
/// content is addressed by the entry's SHA-512 integrity).
fn content_of(root: &Path, key: &str) -> Option<PathBuf> {
    let hashed = format!("{:x}", Sha256::digest(key.as_bytes()));
    let bucket = root
        .join("index-v5")
        .join(&hashed[..2])
        .join(&hashed[2..4])
        .join(&hashed[4..]);
    let text = std::fs::read_to_string(bucket).ok()?;
    let integrity = text
        .lines()
        .rev()
        .filter_map(|line| line.split_once('\t'))
        .filter_map(|(_, entry)| serde_json::from_str::<serde_json::Value>(entry).ok())
        .find(|entry| entry["key"] == key)?
        .get("integrity")?
        .as_str()?
        .to_string();
    let digest = integrity
        .split_whitespace()
        .find_map(|i| i.strip_prefix("sha512-"))?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(digest)
        .ok()?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let file = root
        .join("content-v2/sha512")
        .join(&hex[..2])
        .join(&hex[2..4])
        .join(&hex[4..]);
    file.is_file().then_some(file)
}
