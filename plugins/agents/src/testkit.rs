//! Test doubles: a host whose `model.generate` answers from a script, and an environment
//! session that records every call and answers `exec` from a closure.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agentcompass_plugin_api::contracts::{
    ExecCommand, ExecRequest, ExecResult, LogLevel, ModelEndpoint, ModelRequest, ModelResponse,
    SessionInfo, TokenUsage, ToolCall, MODEL_ENDPOINT_SERVICE, MODEL_GENERATE_SERVICE,
};
use agentcompass_plugin_api::sdk::{BoxFuture, Ctx, EnvironmentSession, HostApi, SessionRef};
use agentcompass_plugin_api::{Error, Result};
use serde_json::{json, Value};

/// The SDK's executor for tests, here with the other test doubles.
pub(crate) use agentcompass_plugin_api::sdk::testing::block_on;

/// A scripted host.
#[derive(Default)]
pub(crate) struct FakeHost {
    /// Answers of `model.generate`, in order (an exhausted script answers an error).
    pub answers: Mutex<VecDeque<Result<ModelResponse>>>,
    /// Every request `model.generate` received.
    pub requests: Mutex<Vec<ModelRequest>>,
    /// What `model.endpoint` answers.
    pub endpoint: Mutex<Option<ModelEndpoint>>,
    /// Everything logged.
    pub logs: Mutex<Vec<String>>,
    /// Cancel once this many generate calls were made (`None`: never).
    pub cancel_after: Mutex<Option<usize>>,
    cancelled: AtomicBool,
}

impl FakeHost {
    /// A host answering `model.generate` with `answers`.
    pub(crate) fn new(answers: Vec<Result<ModelResponse>>) -> Arc<Self> {
        Arc::new(FakeHost {
            answers: Mutex::new(answers.into()),
            ..FakeHost::default()
        })
    }

    /// A context over this host.
    pub(crate) fn ctx(self: &Arc<Self>) -> Ctx {
        Ctx::new(self.clone())
    }

    /// The recorded requests.
    pub(crate) fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().unwrap().clone()
    }
}

impl HostApi for FakeHost {
    fn log(&self, level: LogLevel, _target: &str, message: &str) {
        self.logs
            .lock()
            .unwrap()
            .push(format!("{level:?}: {message}"));
    }

    fn emit_progress(&self, _payload: &Value) {}

    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    fn cancelled(&self) -> BoxFuture<()> {
        Box::pin(std::future::pending())
    }

    fn call(&self, service: &str, request: Value) -> BoxFuture<Result<Value>> {
        let answer = match service {
            MODEL_GENERATE_SERVICE => {
                let parsed: ModelRequest = serde_json::from_value(request).unwrap();
                let mut requests = self.requests.lock().unwrap();
                requests.push(parsed);
                if let Some(limit) = *self.cancel_after.lock().unwrap() {
                    if requests.len() >= limit {
                        self.cancelled.store(true, Ordering::SeqCst);
                    }
                }
                match self.answers.lock().unwrap().pop_front() {
                    Some(Ok(response)) => Ok(serde_json::to_value(response).unwrap()),
                    Some(Err(err)) => Err(err),
                    None => Err(Error::msg("the model script is exhausted")),
                }
            }
            MODEL_ENDPOINT_SERVICE => match self.endpoint.lock().unwrap().clone() {
                Some(endpoint) => Ok(serde_json::to_value(endpoint).unwrap()),
                None => Err(Error::unsupported("no endpoint")),
            },
            other => Err(Error::unsupported(format!("no service {other}"))),
        };
        Box::pin(async move { answer })
    }
}

/// A model answer with text only.
pub(crate) fn text_answer(content: &str) -> Result<ModelResponse> {
    Ok(ModelResponse {
        content: content.into(),
        stop_reason: "stop".into(),
        usage: TokenUsage {
            prompt_tokens: 10,
            completion_tokens: 2,
            requests: 1,
            ..TokenUsage::default()
        },
        latency_ms: 5,
        ..ModelResponse::default()
    })
}

/// A model answer calling one tool.
pub(crate) fn tool_answer(id: &str, name: &str, arguments: Value) -> Result<ModelResponse> {
    let mut response = text_answer("")?;
    response.stop_reason = "tool_calls".into();
    response.tool_calls = vec![ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
    }];
    Ok(response)
}

/// A model answer running one bash command.
pub(crate) fn bash_answer(id: &str, command: &str) -> Result<ModelResponse> {
    tool_answer(id, "bash", json!({ "command": command }))
}

/// One call an environment session received.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Call {
    /// `exec`.
    Exec(ExecRequest),
    /// `upload_dir(src, dst)`.
    UploadDir(String, String),
    /// `write_text(path, content)`.
    Write(String, String),
    /// `read_text(path)`.
    Read(String),
}

type ExecFn = dyn Fn(&ExecRequest) -> Result<ExecResult> + Send + Sync;

/// A recording environment session.
pub(crate) struct FakeSession {
    /// Calls, in order.
    pub calls: Mutex<Vec<Call>>,
    /// Files `read_text` can read.
    pub files: Mutex<std::collections::BTreeMap<String, String>>,
    exec: Box<ExecFn>,
}

impl FakeSession {
    /// A session answering `exec` with `exec`.
    pub(crate) fn new(
        exec: impl Fn(&ExecRequest) -> Result<ExecResult> + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(FakeSession {
            calls: Mutex::new(Vec::new()),
            files: Mutex::new(Default::default()),
            exec: Box::new(exec),
        })
    }

    /// The session as a `SessionRef`.
    pub(crate) fn session_ref(self: &Arc<Self>) -> SessionRef {
        self.clone()
    }

    /// The recorded calls.
    pub(crate) fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    /// The `bash -c` scripts of the recorded exec calls.
    pub(crate) fn scripts(&self) -> Vec<String> {
        self.calls()
            .into_iter()
            .filter_map(|call| match call {
                Call::Exec(req) => Some(script_of(&req)),
                _ => None,
            })
            .collect()
    }
}

/// The script of a `bash -c SCRIPT` request (or the shell string).
pub(crate) fn script_of(req: &ExecRequest) -> String {
    match &req.command {
        ExecCommand::Argv(argv) => argv.last().cloned().unwrap_or_default(),
        ExecCommand::Shell(line) => line.clone(),
    }
}

#[agentcompass_plugin_api::sdk::async_trait]
impl EnvironmentSession for FakeSession {
    fn info(&self) -> SessionInfo {
        SessionInfo {
            id: "fake".into(),
            provider: "fake".into(),
            default_workdir: Some("/app".into()),
            close_params: Value::Null,
            ..SessionInfo::default()
        }
    }

    async fn exec(&self, request: ExecRequest) -> Result<ExecResult> {
        self.calls.lock().unwrap().push(Call::Exec(request.clone()));
        (self.exec)(&request)
    }

    async fn upload(&self, _src: &Path, _dst: &str) -> Result<()> {
        Err(Error::unsupported("upload"))
    }

    async fn download(&self, _src: &str, _dst: &Path) -> Result<()> {
        Err(Error::unsupported("download"))
    }

    async fn upload_dir(&self, src: &Path, dst: &str) -> Result<()> {
        self.calls
            .lock()
            .unwrap()
            .push(Call::UploadDir(src.display().to_string(), dst.into()));
        Ok(())
    }

    async fn download_dir(&self, _src: &str, _dst: &Path) -> Result<()> {
        Err(Error::unsupported("download_dir"))
    }

    async fn read_text(&self, path: &str) -> Result<String> {
        self.calls.lock().unwrap().push(Call::Read(path.into()));
        self.files
            .lock()
            .unwrap()
            .get(path)
            .cloned()
            .ok_or_else(|| Error::environment(format!("{path}: no such file")))
    }

    async fn write_text(&self, path: &str, content: &str) -> Result<()> {
        self.calls
            .lock()
            .unwrap()
            .push(Call::Write(path.into(), content.into()));
        self.files
            .lock()
            .unwrap()
            .insert(path.into(), content.into());
        Ok(())
    }

    async fn is_file(&self, path: &str) -> Result<bool> {
        Ok(self.files.lock().unwrap().contains_key(path))
    }

    async fn is_dir(&self, _path: &str) -> Result<bool> {
        Ok(false)
    }

    async fn close(&self) -> Result<()> {
        Ok(())
    }
}
