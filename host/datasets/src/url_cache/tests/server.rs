//! A small HTTP/1.1 server on `127.0.0.1:0` for the tests: fixed answers by path, a count
//! of requests, the `Authorization` headers seen, a stop that closes the port.

use std::collections::HashMap;
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// What the server answers at a path.
#[derive(Clone)]
pub(super) enum Route {
    /// 200 with these bytes.
    Body(Vec<u8>),
    /// 200 announcing these bytes, sending half of them, then silence for 3 s.
    Stall(Vec<u8>),
}

/// An HTTP/1.1 server on `127.0.0.1:0` (a connection a request, `Connection: close`);
/// unknown paths get a 404.
pub(super) struct Server {
    addr: SocketAddr,
    requests: Arc<AtomicUsize>,
    pub(super) authorization: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    pub(super) fn start(routes: &[(&str, Route)]) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let routes: Arc<HashMap<String, Route>> = Arc::new(
            routes
                .iter()
                .map(|(path, route)| (path.to_string(), route.clone()))
                .collect(),
        );
        let requests = Arc::new(AtomicUsize::new(0));
        let authorization = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (requests, authorization, stop) =
                (requests.clone(), authorization.clone(), stop.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let (routes, requests, authorization) =
                        (routes.clone(), requests.clone(), authorization.clone());
                    std::thread::spawn(move || {
                        serve(stream, &routes, &requests, &authorization);
                    });
                }
            })
        };
        Server {
            addr,
            requests,
            authorization,
            stop,
            thread: Some(thread),
        }
    }

    pub(super) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub(super) fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    /// Stops accepting and closes the port (connections are refused from now on).
    pub(super) fn stop(&mut self) {
        if let Some(thread) = self.thread.take() {
            self.stop.store(true, Ordering::SeqCst);
            let _ = TcpStream::connect(self.addr);
            thread.join().unwrap();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn serve(
    mut stream: TcpStream,
    routes: &HashMap<String, Route>,
    requests: &AtomicUsize,
    authorization: &Mutex<Vec<String>>,
) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    requests.fetch_add(1, Ordering::SeqCst);
    for line in head.lines() {
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("authorization") {
                authorization.lock().unwrap().push(value.trim().to_string());
            }
        }
    }
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    let answer = |status: &str, length: usize| {
        format!("HTTP/1.1 {status}\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n")
    };
    let _ = match routes.get(&path) {
        Some(Route::Body(body)) => stream
            .write_all(answer("200 OK", body.len()).as_bytes())
            .and_then(|()| stream.write_all(body)),
        Some(Route::Stall(body)) => stream
            .write_all(answer("200 OK", body.len()).as_bytes())
            .and_then(|()| stream.write_all(&body[..body.len() / 2]))
            .and_then(|()| stream.flush())
            .map(|()| std::thread::sleep(Duration::from_secs(3))),
        None => stream
            .write_all(answer("404 Not Found", 9).as_bytes())
            .and_then(|()| stream.write_all(b"not found")),
    };
}
