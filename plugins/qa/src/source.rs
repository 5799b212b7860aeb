//! Where the dataset comes from: a local file (the `path` param), or a file the host downloads
//! once by URL and verifies by SHA-256 on every use (the `dataset` param, through the host's
//! `dataset.url` service), possibly a member of a `zip` or `tar.gz` archive. Exactly one of
//! the two is given; either way the file is read by [`open_dataset`].

use std::path::Path;

use agentcompass_plugin_api::contracts::{
    json_type_name, RunRequest, TaskSpec, UrlDataset, UrlDatasetRequest,
};
use agentcompass_plugin_api::sdk::{Ctx, TaskStream};
use agentcompass_plugin_api::{Error, Result};
use serde_json::{Map, Value};

use crate::dataset::open_dataset;
use crate::shared::fail;

/// The shape of the `dataset` param, as messages show it.
const DATASET_SHAPE: &str = r#"{"url", "sha256", "archive"?, "member"?}"#;

/// The keys of the `dataset` param.
const DATASET_KEYS: [&str; 4] = ["url", "sha256", "archive", "member"];

/// The task metadata key naming the URL a downloaded dataset came from (credentials removed).
pub(crate) const DATASET_URL_KEY: &str = "dataset_url";

/// The task metadata key naming the archive member a downloaded dataset was read from.
pub(crate) const DATASET_MEMBER_KEY: &str = "dataset_member";

/// The dataset a run names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DatasetSource {
    /// `path`: a local `.jsonl` or `.json` file.
    Path(String),
    /// `dataset`: a file (or archive member) the host fetches by URL and digest.
    Url(UrlDatasetRequest),
}

/// A param that is present and not `null`.
fn given<'a>(params: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    params.get(key).filter(|value| !value.is_null())
}

/// Exactly one of the `path` and `dataset` params.
pub(crate) fn dataset_source(params: &Map<String, Value>) -> Result<DatasetSource> {
    match (given(params, "path"), given(params, "dataset")) {
        (Some(_), Some(_)) => Err(Error::invalid_input(format!(
            "give one of params \"path\" (a local .jsonl or .json file) and \"dataset\" \
             ({DATASET_SHAPE} of a file to download), found both"
        ))),
        (None, None) => Err(Error::invalid_input(format!(
            "missing required param \"path\" (a local .jsonl or .json file) or \
             \"dataset\" ({DATASET_SHAPE} of a file to download)"
        ))),
        (Some(path), None) => path_param(path).map(DatasetSource::Path),
        (None, Some(dataset)) => url_request(dataset).map(DatasetSource::Url),
    }
}

/// The `path` param: a non-empty string.
fn path_param(value: &Value) -> Result<String> {
    match value {
        Value::String(path) if !path.trim().is_empty() => Ok(path.clone()),
        Value::String(_) => Err(Error::invalid_input("param \"path\" must not be empty")),
        other => Err(Error::invalid_input(format!(
            "param \"path\" must be a string (a .jsonl or .json file), found {}",
            json_type_name(other)
        ))),
    }
}

/// The `dataset` param: `{"url", "sha256", "archive"?, "member"?}`, a member (a `.jsonl` or
/// `.json` file) given exactly when an archive is.
fn url_request(value: &Value) -> Result<UrlDatasetRequest> {
    let bad = |message: String| Error::invalid_input(format!("param \"dataset\" {message}"));
    let Value::Object(object) = value else {
        return Err(bad(format!(
            "must be an object {DATASET_SHAPE}, found {}",
            json_type_name(value)
        )));
    };
    if let Some(key) = object.keys().find(|k| !DATASET_KEYS.contains(&k.as_str())) {
        return Err(bad(format!(
            "has no key \"{}\" (expected {DATASET_SHAPE})",
            key.escape_debug()
        )));
    }
    let text = |key: &str| -> Result<Option<String>> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => {
                Err(bad(format!("key \"{key}\" must not be empty")))
            }
            Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
            Some(other) => Err(bad(format!(
                "key \"{key}\" must be a string, found {}",
                json_type_name(other)
            ))),
        }
    };
    let url = text("url")?.ok_or_else(|| {
        bad("is missing key \"url\" (an http://, https:// or file:// URL)".to_string())
    })?;
    let sha256 = text("sha256")?.ok_or_else(|| {
        bad("is missing key \"sha256\" (the SHA-256 of the file at the URL)".to_string())
    })?;
    let archive = match text("archive")?.as_deref() {
        None => None,
        Some("zip") => Some("zip".to_string()),
        Some("tar.gz" | "tgz") => Some("tar.gz".to_string()),
        Some(other) => {
            return Err(bad(format!(
                "key \"archive\" must be \"zip\" or \"tar.gz\", found \"{}\"",
                other.escape_debug()
            )))
        }
    };
    let member = text("member")?;
    match (&archive, &member) {
        (Some(_), None) => {
            return Err(bad(
                "gives an \"archive\" without a \"member\" (the .jsonl or .json file inside it)"
                    .to_string(),
            ))
        }
        (None, Some(_)) => {
            return Err(bad(
                "gives a \"member\" without an \"archive\" (\"zip\" or \"tar.gz\")".to_string(),
            ))
        }
        (Some(_), Some(member)) if format_of(member).is_none() => {
            return Err(bad(format!(
                "key \"member\" must name a .jsonl or .json file, found \"{}\"",
                member.escape_debug()
            )))
        }
        _ => {}
    }
    Ok(UrlDatasetRequest {
        url,
        sha256,
        archive,
        member,
    })
}

/// `jsonl` or `json` by the name's extension (either case), else `None`.
fn format_of(name: &str) -> Option<&'static str> {
    let extension = Path::new(name).extension()?.to_str()?.to_ascii_lowercase();
    match extension.as_str() {
        "jsonl" => Some("jsonl"),
        "json" => Some("json"),
        _ => None,
    }
}

/// The run's selected tasks (`wanted` ids only, when given): the local file of `path`, or the
/// file of `dataset` fetched (or found cached and verified) by the host first. The tasks of a
/// downloaded file carry its URL (and archive member) in their metadata beside the
/// `dataset_sha256` and `dataset_path` (the cached copy) every task has.
pub(crate) async fn open_source(
    ctx: &Ctx,
    req: &RunRequest,
    wanted: Option<Vec<String>>,
) -> Result<Box<dyn TaskStream>> {
    match dataset_source(&req.benchmark.params)? {
        DatasetSource::Path(path) => open_dataset(&path, wanted),
        DatasetSource::Url(request) => {
            let fetched = ctx.url_dataset(&request).await?;
            check_format(&fetched)?;
            let tasks = open_dataset(&fetched.path, wanted)?;
            Ok(Box::new(Downloaded {
                tasks,
                url: fetched.url,
                member: request.member,
            }))
        }
    }
}

/// Refuses a downloaded plain file whose name (the URL's last path segment, as the host's
/// cache keeps it) tells no format.
fn check_format(fetched: &UrlDataset) -> Result<()> {
    if format_of(&fetched.path).is_some() {
        return Ok(());
    }
    let name = Path::new(&fetched.path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Err(fail(format!(
        "dataset {}: the download is stored as \"{}\" (the URL's last path segment), which does \
         not end in .jsonl or .json; use a URL whose last segment does, or an \"archive\" with \
         a \"member\" that does",
        fetched.url,
        name.escape_debug()
    )))
}

/// The tasks of a downloaded dataset, each carrying where it was downloaded from.
struct Downloaded {
    tasks: Box<dyn TaskStream>,
    /// The URL (credentials removed).
    url: String,
    /// The archive member read, if any.
    member: Option<String>,
}

impl TaskStream for Downloaded {
    fn total(&self) -> usize {
        self.tasks.total()
    }

    fn next_page(&mut self, max: usize) -> Result<Vec<TaskSpec>> {
        let mut page = self.tasks.next_page(max)?;
        for task in &mut page {
            task.metadata
                .insert(DATASET_URL_KEY.into(), self.url.clone().into());
            if let Some(member) = &self.member {
                task.metadata
                    .insert(DATASET_MEMBER_KEY.into(), member.clone().into());
            }
        }
        Ok(page)
    }
}
