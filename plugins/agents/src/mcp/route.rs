//! How a host-side harness reaches one MCP server, wherever it runs:
//!
//! - an HTTP server on the host's loopback (an internal tool service): from the host, over
//!   TCP (the harness runs there);
//! - any other HTTP server (a sidecar's service name, a name the environment resolves): from
//!   inside the environment, each message one exec of `bash` writing an HTTP/1.0 request to
//!   `/dev/tcp/HOST/PORT` and printing the answer — so the server is reached on the
//!   environment's own network (`no-network` projects included) with nothing installed;
//! - a `stdio` server: started inside the environment for each exchange (`initialize`,
//!   `notifications/initialized`, one request), its stdin and stdout held by a `bash`
//!   coprocess that stops it once the answer is in (a server's state does not outlive an
//!   exchange).
//!
//! Plain `http://` only: `https://` needs TLS, which neither path has.

use std::io::{Read as _, Write as _};
use std::time::Duration;

use agentcompass_plugin_api::contracts::{ExecRequest, McpServer, McpTransport};
use agentcompass_plugin_api::sdk::SessionRef;
use serde_json::Value;

use super::wire;

/// One server's route.
#[derive(Debug, Clone)]
pub(crate) enum Route {
    /// HTTP, reached from the host.
    Host(HttpTarget),
    /// HTTP, reached from inside the environment.
    Inside(HttpTarget),
    /// A process started inside the environment.
    Stdio { command: String, args: Vec<String> },
}

/// Where an HTTP server is and the headers it gets (resolved values).
#[derive(Clone)]
pub(crate) struct HttpTarget {
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
}

impl std::fmt::Debug for HttpTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "http://{}:{}{}", self.host, self.port, self.path)
    }
}

/// The `bash` program of an exchange over HTTP from inside the environment.
const HTTP_SCRIPT: &str = r#"exec 3<>"/dev/tcp/$AC_MCP_HOST/$AC_MCP_PORT" || exit 97
printf '%s' "$AC_MCP_REQUEST" >&3
cat <&3"#;

/// The `bash` program of an exchange with a stdio server (`"$@"`): the first message, its
/// answer, then the rest, until the answer to the last request (id 2).
const STDIO_SCRIPT: &str = r#"coproc S { "$@"; }
printf '%s\n' "$AC_MCP_FIRST" >&"${S[1]}"
sent=
while IFS= read -r -t "$AC_MCP_TIMEOUT" line <&"${S[0]}"; do
  printf '%s\n' "$line"
  case "$line" in
    *'"id":2'*|*'"id": 2'*) break ;;
    *'"id":1'*|*'"id": 1'*)
      if [ -z "$sent" ]; then printf '%s\n' "$AC_MCP_REST" >&"${S[1]}"; sent=1; fi ;;
  esac
done
kill "$S_PID" 2>/dev/null
true"#;

impl Route {
    /// The route of `server`.
    pub(crate) fn of(server: &McpServer) -> Result<Route, String> {
        if server.transport == McpTransport::Stdio {
            return Ok(Route::Stdio {
                command: server.command.clone().unwrap_or_default(),
                args: server.args.clone(),
            });
        }
        let url = server.url.as_deref().unwrap_or_default();
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("`{url}`: only http:// servers are reached by this harness"))?;
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) => (
                host,
                port.parse().map_err(|_| format!("`{url}`: bad port"))?,
            ),
            None => (authority, 80),
        };
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let target = HttpTarget {
            path: format!("/{path}"),
            headers: server.headers.clone().into_iter().collect(),
            host,
            port,
        };
        let loopback =
            matches!(target.host.as_str(), "localhost" | "::1") || target.host.starts_with("127.");
        Ok(if loopback {
            Route::Host(target)
        } else {
            Route::Inside(target)
        })
    }

    /// Sends one HTTP message (with the session, if any) and reads the answer.
    pub(crate) async fn post(
        &self,
        env: &SessionRef,
        message: &Value,
        session: Option<&str>,
        timeout: f64,
    ) -> Result<wire::HttpAnswer, String> {
        let (target, inside) = match self {
            Route::Host(target) => (target, false),
            Route::Inside(target) => (target, true),
            Route::Stdio { .. } => return Err("not an HTTP server".into()),
        };
        let authority = format!("{}:{}", target.host, target.port);
        let request = wire::http_post(&authority, &target.path, message, session, &target.headers);
        let raw = if inside {
            let exec = ExecRequest::argv(["bash", "-c", HTTP_SCRIPT])
                .env("AC_MCP_HOST", &target.host)
                .env("AC_MCP_PORT", target.port.to_string())
                .env("AC_MCP_REQUEST", request)
                .timeout(timeout);
            let done = env.exec(exec).await.map_err(|e| e.message)?;
            if done.returncode == 97 {
                return Err(format!(
                    "cannot connect to {authority} from the environment"
                ));
            }
            done.stdout
        } else {
            host_exchange(authority, request, timeout).await?
        };
        wire::parse_http(&raw)
    }

    /// One exchange with a stdio server: `initialize`, `notifications/initialized` and
    /// `request` (id 2); every message it printed.
    pub(crate) async fn stdio(
        &self,
        env: &SessionRef,
        request: &Value,
        timeout: f64,
    ) -> Result<Vec<Value>, String> {
        let Route::Stdio { command, args } = self else {
            return Err("not a stdio server".into());
        };
        let rest = format!("{}\n{}", wire::initialized(), request);
        let argv = ["bash", "-c", STDIO_SCRIPT, "mcp"]
            .into_iter()
            .map(str::to_string)
            .chain(std::iter::once(command.clone()))
            .chain(args.iter().cloned());
        let exec = ExecRequest::argv(argv)
            .env("AC_MCP_FIRST", wire::initialize().to_string())
            .env("AC_MCP_REST", rest)
            .env(
                "AC_MCP_TIMEOUT",
                format!("{}", timeout.ceil().max(1.0) as u64),
            )
            .timeout(timeout + 5.0);
        let done = env.exec(exec).await.map_err(|e| e.message)?;
        Ok(wire::line_messages(&done.stdout))
    }
}

/// One HTTP exchange from the host (blocking TCP on a blocking thread).
async fn host_exchange(authority: String, request: String, timeout: f64) -> Result<String, String> {
    let work = move || -> Result<String, String> {
        let limit = Duration::from_secs_f64(timeout.max(1.0));
        let addr = std::net::ToSocketAddrs::to_socket_addrs(&authority)
            .map_err(|e| format!("{authority}: {e}"))?
            .next()
            .ok_or_else(|| format!("{authority}: no address"))?;
        let mut stream = std::net::TcpStream::connect_timeout(&addr, limit)
            .map_err(|e| format!("cannot connect to {authority}: {e}"))?;
        let _ = stream.set_read_timeout(Some(limit));
        stream
            .write_all(request.as_bytes())
            .map_err(|e| format!("{authority}: {e}"))?;
        let mut raw = String::new();
        stream
            .read_to_string(&mut raw)
            .map_err(|e| format!("{authority}: {e}"))?;
        Ok(raw)
    };
    agentcompass_plugin_api::sdk::provider::blocking("mcp", work)
        .await
        .map_err(|e| e.message)?
}
