//! The model endpoint inside the environment: a relay the host serves for one attempt, through
//! which an agent running inside the environment (a CLI such as Claude Code or Codex) calls
//! the run's model without ever holding the real key.
//!
//! The relay listens on a Unix socket in a private directory (0700) of the host — which a
//! provider binds into an isolated environment and forwards from `127.0.0.1:PORT` there
//! (`HostEndpoint`) — and on `127.0.0.1:PORT` of the host itself, for environments that share
//! the host's network. Each request must carry the attempt's placeholder token
//! (`Authorization: Bearer TOKEN`, `x-api-key: TOKEN` or `api-key: TOKEN`); anything else is
//! `401` and is never forwarded. A model call takes a slot of the endpoint's adaptive limit,
//! which `model.generate` shares (rate-limit answers, 429 and 529, are waited out there as
//! they are for `model.generate`). An accepted request is passed through unchanged — path under
//! the API root, query, body and headers, minus hop-by-hop and credential headers — to the
//! gateway's endpoint with the real key added in the style of the API called (`x-api-key`
//! for Anthropic's `/messages`, `Authorization: Bearer` otherwise). Connection failures and
//! retryable statuses (408, 429, 5xx, 529) are retried with the gateway's backoff before
//! anything reaches the client; the response then streams back byte for byte (SSE included),
//! while its usage is read as it passes (`usage_tap`) and added, priced, to the attempt's
//! meter — the same `model_usage` telemetry as a call through `model.generate`. Dropping the
//! relay closes both listeners and every connection.

mod listen;
mod serve;
pub mod tools;
mod upstream;

pub(crate) use upstream::api_root;
mod usage_tap;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentcompass_egress::EgressToken;
use agentcompass_plugin_api::contracts::{HostEndpoint, ModelEndpoint};

use super::{ModelGateway, UsageMeter};

/// The name of the model endpoint among an environment's host endpoints.
pub const MODEL_ENDPOINT_NAME: &str = "model";

/// The socket's file name (short: a socket path has at most 107 bytes).
const SOCKET_NAME: &str = "s";

/// Why the relay could not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot serve the model endpoint for the environment: {what}: {source}")]
pub struct RelayError {
    what: &'static str,
    #[source]
    source: std::io::Error,
}

fn failed(what: &'static str) -> impl FnOnce(std::io::Error) -> RelayError {
    move |source| RelayError { what, source }
}

/// How the last model call through a relay failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayFailure {
    /// One line: the method, path and why (never the key).
    pub message: String,
    /// Whether the endpoint kept rate-limiting the call past the host's wait.
    pub rate_limited: bool,
}

/// One attempt's model endpoint; serving until dropped.
pub struct ModelRelay {
    /// The socket's private directory (removed on drop).
    dir: tempfile::TempDir,
    port: u16,
    token: EgressToken,
    model: String,
    protocol: &'static str,
    state: Arc<serve::RelayState>,
    server: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for ModelRelay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelRelay")
            .field("socket", &self.socket())
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl ModelRelay {
    /// Starts a relay to `gateway`'s endpoint, metering into `usage`, logging as `label` (the
    /// task). Must run inside a tokio runtime.
    pub async fn start(
        gateway: Arc<ModelGateway>,
        usage: Arc<UsageMeter>,
        label: &str,
    ) -> Result<ModelRelay, RelayError> {
        let listen::Listeners {
            dir,
            unix,
            tcp,
            port,
        } = listen::bind("agentcompass-model-").await?;
        let token = EgressToken::random().map_err(failed("cannot make its token"))?;
        // The placeholder is not the real key, but it spends on it while the attempt runs:
        // scrubbed like a secret from everything the host prints or persists.
        agentcompass_redact::register_secret(token.expose());
        let (model, protocol) = (gateway.model.clone(), gateway.protocol.name());
        let state = Arc::new(serve::RelayState::new(gateway, usage, token.clone(), label));
        let server = tokio::spawn(listen::serve(state.clone(), unix, tcp, serve::handle));
        Ok(ModelRelay {
            dir,
            port,
            token,
            model,
            protocol,
            state,
            server,
        })
    }

    /// How the last model call through the relay ended when it failed after the gateway's
    /// retries (`None` when it succeeded, or no call was made): an agent that stopped on a
    /// failing model stopped on this.
    pub fn last_failure(&self) -> Option<RelayFailure> {
        self.state.last_failure()
    }

    /// The Unix socket on the host.
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join(SOCKET_NAME)
    }

    /// The socket's directory on the host (what a provider binds into the environment).
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// What a provider must make reachable inside the environment.
    pub fn host_endpoint(&self) -> HostEndpoint {
        HostEndpoint {
            name: MODEL_ENDPOINT_NAME.to_string(),
            socket: self.socket().display().to_string(),
            port: self.port,
        }
    }

    /// What the agent inside the environment is given: the relay's address on the
    /// environment's loopback and the placeholder token (never the real key).
    pub fn endpoint(&self) -> ModelEndpoint {
        ModelEndpoint {
            model: self.model.clone(),
            base_url: format!("http://127.0.0.1:{}/v1", self.port),
            api_key: self.token.expose().to_string(),
            protocol: self.protocol.to_string(),
        }
    }
}

impl Drop for ModelRelay {
    fn drop(&mut self) {
        // Aborting the accept loop drops its set of connections, which aborts each of them.
        self.server.abort();
    }
}

#[cfg(test)]
mod tests;
