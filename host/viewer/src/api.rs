//! Routing, query parsing and the JSON responses of the viewer's API. Every handler only reads;
//! file-system work runs on blocking threads.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::assets::asset;
use crate::charts;
use crate::compare;
use crate::error::ViewerError;
use crate::index::IndexCache;
use crate::paired::paired;
use crate::paths::Root;
use crate::query::{self, Filter, Listing, TaskQuery};
use crate::runs;
use crate::task;
use crate::tasks::{list_task_dirs, read_facts, row_json};

/// Largest page size of `/api/tasks` and `/api/compare`.
pub const MAX_PAGE_SIZE: usize = 1000;

/// A response body: bytes in memory, or an open file streamed in chunks (an artifact can be
/// gigabytes; the server's memory must not grow with it).
#[derive(Debug)]
pub enum Body {
    /// The whole body.
    Bytes(Vec<u8>),
    /// A regular file opened by the handler, and its length.
    File(std::fs::File, u64),
}

impl Body {
    /// The in-memory bytes (empty for a file).
    pub fn bytes(&self) -> &[u8] {
        match self {
            Body::Bytes(bytes) => bytes,
            Body::File(..) => &[],
        }
    }
}

/// A response: status, content type, body and extra headers.
#[derive(Debug)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The `content-type`.
    pub content_type: &'static str,
    /// The body.
    pub body: Body,
    /// Extra headers (name, value).
    pub headers: Vec<(&'static str, String)>,
}

impl Reply {
    fn json(value: &Value) -> Reply {
        Reply {
            status: 200,
            content_type: "application/json",
            body: Body::Bytes(serde_json::to_vec(value).unwrap_or_default()),
            headers: Vec::new(),
        }
    }

    /// The `{"error": "..."}` reply of `err`.
    pub fn error(err: &ViewerError) -> Reply {
        Reply {
            status: err.status(),
            ..Reply::json(&json!({"error": err.to_string()}))
        }
    }
}

/// The state shared by every request: the root and the cached run indexes.
pub struct App {
    root: Root,
    cache: Arc<IndexCache>,
    paired: Option<crate::paired::PairedStats>,
    /// The secret control requests carry (`None`: a read-only viewer, no controls).
    control_token: Option<String>,
}

impl App {
    /// The viewer over `root`.
    pub fn new(root: Root) -> App {
        App {
            root,
            cache: Arc::new(IndexCache::default()),
            paired: None,
            control_token: None,
        }
    }

    /// Offers the controls of live runs to requests carrying `token`.
    pub fn with_control_token(mut self, token: String) -> App {
        self.control_token = Some(token);
        self
    }

    /// The compare page's paired statistics from `paired` (the CLI's), not the viewer's own.
    pub fn with_paired(mut self, paired: crate::paired::PairedStats) -> App {
        self.paired = Some(paired);
        self
    }
}

/// Decodes `%XX` escapes and `+` of a query component.
pub fn percent_decode(text: &str) -> Result<String, ViewerError> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| ViewerError::BadRequest(format!("bad escape in {text:?}")))?;
                out.push(hex);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| ViewerError::BadRequest(format!("{text:?} is not UTF-8")))
}

/// The query string's parameters (the last value of a repeated name wins).
pub fn parse_query(query: &str) -> Result<HashMap<String, String>, ViewerError> {
    let mut params = HashMap::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        params.insert(percent_decode(key)?, percent_decode(value)?);
    }
    Ok(params)
}

struct Params(HashMap<String, String>);

impl Params {
    fn required(&self, name: &str) -> Result<&str, ViewerError> {
        self.0
            .get(name)
            .map(String::as_str)
            .ok_or_else(|| ViewerError::BadRequest(format!("missing parameter {name:?}")))
    }

    fn optional(&self, name: &str) -> Option<String> {
        self.0.get(name).filter(|v| !v.is_empty()).cloned()
    }

    fn number(&self, name: &str, default: usize, max: usize) -> Result<usize, ViewerError> {
        let Some(text) = self.0.get(name) else {
            return Ok(default);
        };
        let n: usize = text.parse().map_err(|_| {
            ViewerError::BadRequest(format!("{name} must be a number, not {text:?}"))
        })?;
        if n > max {
            return Err(ViewerError::BadRequest(format!(
                "{name} must be at most {max}"
            )));
        }
        Ok(n)
    }

    fn page(&self, default_size: usize) -> Result<(usize, usize), ViewerError> {
        let page = self.number("page", 0, usize::MAX / (MAX_PAGE_SIZE + 1))?;
        let size = self.number("size", default_size, MAX_PAGE_SIZE)?;
        if size == 0 {
            return Err(ViewerError::BadRequest(
                "size must be at least 1".to_string(),
            ));
        }
        Ok((page, size))
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ViewerError> + Send + 'static,
) -> Result<T, ViewerError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ViewerError::Internal(format!("request failed: {e}")))?
}

/// Answers one request (`method`, `path`, the raw query string and the control secret it
/// presented, if any).
pub async fn handle(
    app: Arc<App>,
    method: &str,
    path: &str,
    query: &str,
    token: Option<&str>,
) -> Reply {
    if method == "POST" && path == "/api/control" {
        let result = match parse_query(query) {
            Ok(params) => control(app, Params(params), token).await,
            Err(e) => Err(e),
        };
        return result.unwrap_or_else(|e| Reply::error(&e));
    }
    if method != "GET" && method != "HEAD" {
        return Reply {
            status: 405,
            ..Reply::json(&json!({"error": format!("method {method} not allowed (GET only)")}))
        };
    }
    if let Some((content_type, body)) = asset(path) {
        return Reply {
            status: 200,
            content_type,
            body: Body::Bytes(body.as_bytes().to_vec()),
            headers: Vec::new(),
        };
    }
    let result = match parse_query(query) {
        Ok(params) => route(app, path, Params(params)).await,
        Err(e) => Err(e),
    };
    result.unwrap_or_else(|e| Reply::error(&e))
}

async fn route(app: Arc<App>, path: &str, params: Params) -> Result<Reply, ViewerError> {
    match path {
        "/api/runs" => run_list(app).await,
        "/api/run" => run(app, &params).await,
        "/api/tasks" => task_rows(app, &params).await,
        "/api/task" => {
            let run_dir = run_dir(&app, params.required("run")?)?;
            let task_ref = params.required("task")?.to_string();
            let body = blocking(move || {
                let dir = task::resolve_task(&run_dir, &task_ref)?;
                Ok(task::detail(&dir))
            })
            .await?;
            Ok(Reply::json(&body))
        }
        "/api/artifact" => artifact(&app, &params).await,
        "/api/compare" => compare_runs(app, &params).await,
        _ => Err(ViewerError::NotFound(format!("no endpoint {path}"))),
    }
}

/// `/api/runs`: every run's summary; a run still running has its score so far (`so_far`,
/// from its latest index).
async fn run_list(app: Arc<App>) -> Result<Reply, ViewerError> {
    let root = app.root.clone();
    let listed = blocking(move || {
        Ok(runs::list_dirs(&root)
            .into_iter()
            .map(|(dir, summary)| (runs::is_terminal(&dir), dir, summary))
            .collect::<Vec<_>>())
    })
    .await?;
    let mut summaries = Vec::with_capacity(listed.len());
    for (terminal, dir, mut summary) in listed {
        if !terminal {
            // The latest index: a poll shows the one before while a fresh one is built; only
            // a run's first index is waited for.
            let index = match app.cache.latest_or_start(&dir, false) {
                Some(index) => index,
                None => app.cache.get(&dir, false).await,
            };
            summary["so_far"] = charts::so_far(&index);
        }
        summaries.push(summary);
    }
    Ok(Reply::json(
        &json!({"root": app.root.given(), "runs": summaries}),
    ))
}

/// The canonical run directory of `rel` (it must hold `run_info.json`).
fn run_dir(app: &App, rel: &str) -> Result<PathBuf, ViewerError> {
    let dir = app.root.resolve(rel)?;
    if !dir.join("run_info.json").is_file() {
        return Err(ViewerError::NotFound(format!(
            "{rel:?} is not a run directory"
        )));
    }
    Ok(dir)
}

async fn run(app: Arc<App>, params: &Params) -> Result<Reply, ViewerError> {
    let dir = run_dir(&app, params.required("run")?)?;
    let root = app.root.clone();
    let blocking_dir = dir.clone();
    let (mut body, terminal) = blocking(move || {
        let dir = blocking_dir;
        Ok((runs::run_body(&root, &dir), runs::is_terminal(&dir)))
    })
    .await?;
    let index = app.cache.get(&dir, terminal).await;
    body["issues"] = runs::issue_counts_json(&index);
    body["charts"] = charts::run_charts(&index);
    if !terminal {
        body["run"]["so_far"] = charts::so_far(&index);
    }
    body["controls"] = json!(app.control_token.is_some());
    Ok(Reply::json(&body))
}

/// `POST /api/control?run=RUN&op=...`: a control action on a live run, with the secret.
async fn control(app: Arc<App>, params: Params, token: Option<&str>) -> Result<Reply, ViewerError> {
    let Some(secret) = &app.control_token else {
        return Err(ViewerError::Forbidden(
            "this viewer is read-only (--read-only): it has no controls".to_string(),
        ));
    };
    if !crate::control::token_matches(secret, token) {
        return Err(ViewerError::Forbidden(format!(
            "a control request needs the viewer's secret in `{}` (the page opened from the URL `view` printed has it)",
            crate::control::TOKEN_HEADER
        )));
    }
    let dir = run_dir(&app, params.required("run")?)?;
    let action = crate::control::action(
        params.required("op")?,
        params.0.get("n").map(String::as_str),
        params.0.get("tasks").map(String::as_str),
    )?;
    let detail = blocking(move || crate::control::send(&dir, action)).await?;
    Ok(Reply::json(&detail))
}

async fn task_rows(app: Arc<App>, params: &Params) -> Result<Reply, ViewerError> {
    let dir = run_dir(&app, params.required("run")?)?;
    let (page, size) = params.page(50)?;
    let query = TaskQuery {
        page,
        size,
        filter: Filter::parse(params.optional("filter").as_deref().unwrap_or("all"))?,
        category: params.0.get("category").cloned(),
        issue: params.optional("issue"),
        q: params.optional("q"),
    };
    let terminal_dir = dir.clone();
    let terminal = blocking(move || Ok(runs::is_terminal(&terminal_dir))).await?;
    let index = if query.needs_index() {
        Some(app.cache.get(&dir, terminal).await)
    } else {
        app.cache.ready_or_start(&dir, terminal)
    };
    let index_ready = index.is_some();
    let body = blocking(move || {
        // A terminal run's task set no longer changes: its index is the listing.
        let listing = match &index {
            Some(index) if terminal => Listing::Indexed(index.clone()),
            _ => Listing::Dirs(list_task_dirs(&dir)),
        };
        let (total, picked) = query::select(&listing, index.as_deref(), &query);
        let rows: Vec<Value> = picked
            .iter()
            .filter_map(|at| listing.get(*at))
            .map(|(state, name)| {
                let task_dir = dir.join("details").join(state.as_str()).join(name);
                row_json(state, name, &read_facts(&task_dir, state, name))
            })
            .collect();
        let (categories, codes): (Vec<&str>, Vec<&str>) = match index.as_deref() {
            Some(i) => (i.categories(), i.code_names()),
            None => (Vec::new(), Vec::new()),
        };
        Ok(json!({
            "total": total,
            "page": query.page,
            "size": query.size,
            "categories": categories,
            "issue_codes": codes,
            "index_ready": index_ready,
            "tasks": rows,
        }))
    })
    .await?;
    Ok(Reply::json(&body))
}

async fn artifact(app: &App, params: &Params) -> Result<Reply, ViewerError> {
    let run = run_dir(app, params.required("run")?)?;
    let task_ref = params.required("task")?.to_string();
    let attempt = params.required("attempt")?.to_string();
    let rel = params.required("path")?.to_string();
    let (name, file, len) = blocking(move || {
        let dir = task::resolve_task(&run, &task_ref)?;
        let path = task::resolve_artifact(&dir, &attempt, &rel)?;
        let cannot = |e: std::io::Error| ViewerError::Internal(format!("cannot read {rel:?}: {e}"));
        let file = std::fs::File::open(&path).map_err(cannot)?;
        let meta = file.metadata().map_err(cannot)?;
        if !meta.is_file() {
            return Err(ViewerError::NotFound(format!("{rel:?} is not a file")));
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok((name, file, meta.len()))
    })
    .await?;
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' {
                c
            } else {
                '_'
            }
        })
        .collect();
    Ok(Reply {
        status: 200,
        content_type: "application/octet-stream",
        body: Body::File(file, len),
        headers: vec![(
            "content-disposition",
            format!("attachment; filename=\"{safe}\""),
        )],
    })
}

async fn compare_runs(app: Arc<App>, params: &Params) -> Result<Reply, ViewerError> {
    let a = run_dir(&app, params.required("a")?)?;
    let b = run_dir(&app, params.required("b")?)?;
    let (page, size) = params.page(100)?;
    let root = app.root.clone();
    let (da, db) = (a.clone(), b.clone());
    let (sa, sb, ta, tb) = blocking(move || {
        Ok((
            runs::summary(&root, &da).0,
            runs::summary(&root, &db).0,
            runs::is_terminal(&da),
            runs::is_terminal(&db),
        ))
    })
    .await?;
    let ia = app.cache.get(&a, ta).await;
    let ib = app.cache.get(&b, tb).await;
    let given = app.paired.clone();
    let body = blocking(move || {
        let (tasks, categories) = compare::compare(&ia, &ib);
        let correct = |c: Option<Option<bool>>| c.flatten();
        let rows: Vec<Value> = tasks
            .iter()
            .skip(page.saturating_mul(size))
            .take(size)
            .map(|t| {
                json!({
                    "task_id": t.task_id,
                    "a": correct(t.a),
                    "b": correct(t.b),
                    "change": t.change.as_str(),
                })
            })
            .collect();
        // The bootstrap is O(resamples × tasks): only the first page carries it.
        let stats = (page == 0).then(|| {
            given
                .as_ref()
                .and_then(|compare| compare(&a, &b))
                .unwrap_or_else(|| paired(&ia, &ib))
        });
        Ok(json!({
            "a": sa,
            "b": sb,
            "paired": stats,
            "counts": compare::counts(&tasks),
            "categories": categories,
            "total": tasks.len(),
            "page": page,
            "size": size,
            "tasks": rows,
        }))
    })
    .await?;
    Ok(Reply::json(&body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_decode() {
        let q = parse_query("run=a%2Fb&q=x+y&filter=&path=%2e%2e%2fsecret").unwrap();
        assert_eq!(q["run"], "a/b");
        assert_eq!(q["q"], "x y");
        assert_eq!(q["filter"], "");
        assert_eq!(q["path"], "../secret");
        assert!(parse_query("run=%zz").is_err());
        assert!(parse_query("run=%ff").is_err());
    }

    #[tokio::test]
    async fn routes_answer_json_errors() {
        let dir = tempfile::tempdir().unwrap();
        let app = Arc::new(App::new(Root::new(dir.path()).unwrap()));
        let reply = handle(app.clone(), "GET", "/api/nope", "", None).await;
        assert_eq!(reply.status, 404);
        let body: Value = serde_json::from_slice(reply.body.bytes()).unwrap();
        assert!(body["error"].is_string());
        assert_eq!(
            handle(app.clone(), "GET", "/api/run", "", None)
                .await
                .status,
            400
        );
        assert_eq!(
            handle(app.clone(), "GET", "/api/run", "run=..%2f", None)
                .await
                .status,
            404
        );
        assert_eq!(
            handle(app.clone(), "POST", "/api/runs", "", None)
                .await
                .status,
            405
        );
        assert_eq!(handle(app.clone(), "GET", "/", "", None).await.status, 200);
        let runs = handle(app, "GET", "/api/runs", "", None).await;
        let body: Value = serde_json::from_slice(runs.body.bytes()).unwrap();
        assert_eq!(body["runs"], json!([]));
    }

    #[tokio::test]
    async fn control_requests_need_the_secret_and_a_viewer_with_controls() {
        let dir = tempfile::tempdir().unwrap();
        let read_only = Arc::new(App::new(Root::new(dir.path()).unwrap()));
        let reply = handle(
            read_only,
            "POST",
            "/api/control",
            "run=x&op=pause",
            Some("s"),
        )
        .await;
        assert_eq!(reply.status, 403);
        let body: Value = serde_json::from_slice(reply.body.bytes()).unwrap();
        assert!(
            body["error"].as_str().unwrap().contains("read-only"),
            "{body}"
        );
        let app =
            Arc::new(App::new(Root::new(dir.path()).unwrap()).with_control_token("secret".into()));
        for token in [None, Some("wrong")] {
            let reply = handle(app.clone(), "POST", "/api/control", "run=x&op=pause", token).await;
            assert_eq!(reply.status, 403);
        }
        // With the secret: the run must exist (and be running).
        let reply = handle(
            app,
            "POST",
            "/api/control",
            "run=x&op=pause",
            Some("secret"),
        )
        .await;
        assert_eq!(reply.status, 404);
    }
}
