//! `mcp-tool-server`: a real MCP server (the official Rust SDK, `rmcp`) with one tool, for the
//! tests of agents' MCP tools.
//!
//! ```text
//! mcp-tool-server [--listen ADDR] [--log FILE] [--require-header NAME=VALUE] [--stdio]
//! mcp-tool-server --probe URL
//! ```
//!
//! Serves streamable HTTP at `http://ADDR/mcp` (default `0.0.0.0:8000`, any `Host`) and
//! `GET /health`, or, with `--stdio`, MCP on its stdin and stdout. The tool `lookup(key)`
//! answers `value-of-<key>` for the keys of its table and `no value for <key>` otherwise;
//! `ask_user(question)` is a simulated user, played by a model the way Harbor's cookbook
//! user server plays it (one Anthropic Messages call to `$ANTHROPIC_BASE_URL` with
//! `$ANTHROPIC_API_KEY`).
//! Every call is appended to `--log` as one JSON line `{"tool", "arguments", "result"}`.
//! With `--require-header` an HTTP request without exactly that header is `401` (its value
//! is never logged).
//! `--probe URL` exits 0 when `GET URL` answers 200 (the container's health check).

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rmcp::handler::server::wrapper::Parameters;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{tool, tool_handler, tool_router, ServerHandler, ServiceExt};
use serde_json::json;

/// The answers `lookup` knows.
const TABLE: [(&str, &str); 2] = [
    ("alpha", "value-of-alpha-7f3a"),
    ("beta", "value-of-beta-91c2"),
];

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct LookupArgs {
    /// The key to look up.
    key: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AskArgs {
    /// The question for the user.
    question: String,
}

/// The server: where it logs its calls.
#[derive(Clone)]
struct Tools {
    log: Option<Arc<Mutex<std::fs::File>>>,
}

#[tool_router]
impl Tools {
    #[tool(description = "Look up the value stored under a key")]
    async fn lookup(&self, Parameters(LookupArgs { key }): Parameters<LookupArgs>) -> String {
        let result = TABLE
            .iter()
            .find(|(k, _)| *k == key)
            .map_or_else(|| format!("no value for {key}"), |(_, v)| v.to_string());
        if let Some(log) = &self.log {
            let line = json!({"tool": "lookup", "arguments": {"key": key}, "result": result});
            if let Ok(mut file) = log.lock() {
                let _ = writeln!(file, "{line}");
            }
        }
        result
    }

    #[tool(description = "Ask the user a question (a simulated user, played by a model)")]
    async fn ask_user(&self, Parameters(AskArgs { question }): Parameters<AskArgs>) -> String {
        let answer = match simulated_user(&question).await {
            Ok(answer) => answer,
            Err(e) => format!("the simulated user is unavailable: {e}"),
        };
        if let Some(log) = &self.log {
            let line = json!({"tool": "ask_user", "arguments": {"question": question},
                              "result": answer});
            if let Ok(mut file) = log.lock() {
                let _ = writeln!(file, "{line}");
            }
        }
        answer
    }
}

/// The simulated user's answer: one Anthropic Messages call, as the cookbook's user server
/// makes it with the Anthropic SDK — to `$ANTHROPIC_BASE_URL/v1/messages` with
/// `x-api-key: $ANTHROPIC_API_KEY`, model `$SIM_USER_MODEL` (default `claude-sonnet-4-6`).
async fn simulated_user(question: &str) -> Result<String, String> {
    use http_body_util::BodyExt as _;
    let base = std::env::var("ANTHROPIC_BASE_URL").map_err(|_| "ANTHROPIC_BASE_URL is unset")?;
    let key = std::env::var("ANTHROPIC_API_KEY").map_err(|_| "ANTHROPIC_API_KEY is unset")?;
    let model = std::env::var("SIM_USER_MODEL")
        .ok()
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| "claude-sonnet-4-6".into());
    let authority = base
        .strip_prefix("http://")
        .ok_or("ANTHROPIC_BASE_URL is not http://")?
        .trim_end_matches('/');
    let stream = tokio::net::TcpStream::connect(authority)
        .await
        .map_err(|e| e.to_string())?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
    tokio::spawn(connection);
    let body = json!({"model": model, "max_tokens": 256,
                      "messages": [{"role": "user", "content": question}]});
    let request = hyper::Request::post("/v1/messages")
        .header("host", authority)
        .header("content-type", "application/json")
        .header("x-api-key", key)
        .header("anthropic-version", "2023-06-01")
        .body(http_body_util::Full::new(bytes_of(body.to_string())))
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status();
    let bytes = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    let answer: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| format!("{status}: {e}"))?;
    let text: Vec<&str> = answer["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|block| block["text"].as_str())
        .collect();
    if text.is_empty() {
        return Err(format!("{status}: no text in the answer"));
    }
    Ok(text.join(""))
}

fn bytes_of(text: String) -> hyper::body::Bytes {
    hyper::body::Bytes::from(text)
}

#[tool_handler]
impl ServerHandler for Tools {}

struct Args {
    listen: String,
    log: Option<PathBuf>,
    require_header: Option<(String, String)>,
    stdio: bool,
    probe: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        listen: "0.0.0.0:8000".into(),
        log: None,
        require_header: None,
        stdio: false,
        probe: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--listen" => args.listen = value()?,
            "--log" => args.log = Some(value()?.into()),
            "--require-header" => {
                let text = value()?;
                let (name, v) = text.split_once('=').ok_or("--require-header NAME=VALUE")?;
                args.require_header = Some((name.to_ascii_lowercase(), v.to_string()));
            }
            "--stdio" => args.stdio = true,
            "--probe" => args.probe = Some(value()?),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

/// `GET url` answers 200 (plain HTTP/1.1 over TCP).
fn probe(url: &str) -> bool {
    use std::io::Read as _;
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let Ok(mut stream) = std::net::TcpStream::connect(host) else {
        return false;
    };
    let request = format!("GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    let mut answer = String::new();
    stream.write_all(request.as_bytes()).is_ok()
        && stream.read_to_string(&mut answer).is_ok()
        && answer.starts_with("HTTP/1.1 200")
}

fn main() -> std::process::ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("mcp-tool-server: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    if let Some(url) = &args.probe {
        return if probe(url) { 0.into() } else { 1.into() };
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match runtime.block_on(serve(args)) {
        Ok(()) => 0.into(),
        Err(e) => {
            eprintln!("mcp-tool-server: {e}");
            1.into()
        }
    }
}

async fn serve(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let log = match &args.log {
        Some(path) => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?;
            Some(Arc::new(Mutex::new(file)))
        }
        None => None,
    };
    let tools = Tools { log };
    if args.stdio {
        tools
            .serve(rmcp::transport::stdio())
            .await?
            .waiting()
            .await?;
        return Ok(());
    }
    let service_tools = tools.clone();
    let service = StreamableHttpService::new(
        move || Ok(service_tools.clone()),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default().disable_allowed_hosts(),
    );
    let required = args.require_header.clone();
    let app = axum::Router::new()
        .route("/health", axum::routing::get(|| async { "ok" }))
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                let required = required.clone();
                async move {
                    if let Some((name, value)) = &required {
                        let given = request.headers().get(name.as_str());
                        if given.and_then(|v| v.to_str().ok()) != Some(value.as_str()) {
                            return axum::http::StatusCode::UNAUTHORIZED.into_response();
                        }
                    }
                    next.run(request).await
                }
            },
        ));
    let listener = tokio::net::TcpListener::bind(&args.listen).await?;
    println!("listening on {}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}

use axum::response::IntoResponse as _;
