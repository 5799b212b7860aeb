//! Plain loopback HTTP servers on their own threads: each request's head is read, the
//! handler's reply is written and the connection closed. What the egress tests reach through a
//! proxy (a server on 127.0.0.2 and one on 127.0.0.3 sharing a port) and what a test needs of
//! a registry that answers a few fixed paths.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;

/// One reply: a status line's code and reason (`200 OK`), a content type and a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// `200 OK`, `404 Not Found`, ...
    pub status: &'static str,
    /// The `content-type`, if any.
    pub content_type: Option<&'static str>,
    /// The body.
    pub body: String,
}

impl Reply {
    /// `200 OK` with a plain body.
    pub fn ok(body: impl Into<String>) -> Reply {
        Reply {
            status: "200 OK",
            content_type: None,
            body: body.into(),
        }
    }
}

/// Serves `listener` until the process ends: every connection on its own thread, `respond`
/// given the request's head (request line and headers, as text).
pub fn serve(listener: TcpListener, respond: impl Fn(&str) -> Reply + Send + Sync + 'static) {
    let respond = Arc::new(respond);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let respond = respond.clone();
            std::thread::spawn(move || answer(stream, &*respond));
        }
    });
}

fn answer(mut stream: TcpStream, respond: &dyn Fn(&str) -> Reply) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
    let reply = respond(&String::from_utf8_lossy(&seen));
    let content_type = reply
        .content_type
        .map_or(String::new(), |t| format!("content-type: {t}\r\n"));
    let _ = write!(
        stream,
        "HTTP/1.1 {}\r\n{content_type}content-length: {}\r\nconnection: close\r\n\r\n{}",
        reply.status,
        reply.body.len(),
        reply.body
    );
}

/// Two servers on one port, 127.0.0.2 answering `two` and 127.0.0.3 answering `three` to
/// anything; returns the port.
pub fn twin_servers(two: &'static str, three: &'static str) -> u16 {
    for _ in 0..50 {
        let Ok(first) = TcpListener::bind("127.0.0.2:0") else {
            continue;
        };
        let Ok(port) = first.local_addr().map(|a| a.port()) else {
            continue;
        };
        let Ok(second) = TcpListener::bind(("127.0.0.3", port)) else {
            continue;
        };
        serve(first, move |_| Reply::ok(two));
        serve(second, move |_| Reply::ok(three));
        return port;
    }
    panic!("no port free on both 127.0.0.2 and 127.0.0.3");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(addr: &str, path: &str) -> String {
        let mut stream = TcpStream::connect(addr).unwrap();
        write!(stream, "GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").unwrap();
        let mut out = String::new();
        stream.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn twins_answer_on_their_own_address() {
        let port = twin_servers("two", "three");
        let two = get(&format!("127.0.0.2:{port}"), "/");
        assert!(two.starts_with("HTTP/1.1 200 OK\r\n"), "{two}");
        assert!(
            two.ends_with("content-length: 3\r\nconnection: close\r\n\r\ntwo"),
            "{two}"
        );
        assert!(get(&format!("127.0.0.3:{port}"), "/x").ends_with("\r\n\r\nthree"));
    }

    #[test]
    fn the_handler_sees_the_head_and_sets_status_and_type() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        serve(listener, |head| match head.starts_with("GET /known ") {
            true => Reply {
                status: "200 OK",
                content_type: Some("application/json"),
                body: "{}".into(),
            },
            false => Reply {
                status: "404 Not Found",
                content_type: None,
                body: String::new(),
            },
        });
        let known = get(&format!("127.0.0.1:{port}"), "/known");
        assert!(
            known.contains("content-type: application/json\r\n"),
            "{known}"
        );
        assert!(get(&format!("127.0.0.1:{port}"), "/other").starts_with("HTTP/1.1 404 Not Found"));
    }
}
