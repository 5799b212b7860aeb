//! What the verifier leaves in `/logs/verifier` — its output (`test-stdout.txt`,
//! `test-stderr.txt`) and its reward (`reward.json`, `reward.txt`) — read with one download
//! of the directory, as Harbor downloads it after the test script, rather than a probe and a
//! read per file (seven engine calls in a container); one file at a time where the download
//! fails.

use std::path::Path;

use agentcompass_plugin_api::sdk::provider::random_suffix;
use agentcompass_plugin_api::sdk::SessionRef;
use agentcompass_plugin_api::Result;

use crate::commands::{read_optional, TEST_STDERR, TEST_STDOUT};
use crate::reward::{REWARD_JSON, REWARD_TXT};

/// The verifier's directory in the environment.
const VERIFIER_DIR: &str = "/logs/verifier";

/// The files the verifier left (`None`: not there, or not UTF-8 text).
#[derive(Debug, Default)]
pub(crate) struct VerifierFiles {
    pub(crate) stdout: Option<String>,
    pub(crate) stderr: Option<String>,
    pub(crate) reward_json: Option<String>,
    pub(crate) reward_txt: Option<String>,
}

impl VerifierFiles {
    /// Reads them from `env`: `Err` only when the environment failed.
    pub(crate) async fn read(env: &SessionRef) -> Result<VerifierFiles> {
        let dir =
            std::env::temp_dir().join(format!("agentcompass-harbor-verifier-{}", random_suffix()));
        let files = match env.download_dir(VERIFIER_DIR, &dir).await {
            Ok(()) => Ok(VerifierFiles::from_dir(&dir)),
            Err(_) => VerifierFiles::one_by_one(env).await,
        };
        if let Err(e) = std::fs::remove_dir_all(&dir) {
            if e.kind() != std::io::ErrorKind::NotFound {
                agentcompass_plugin_api::tracing::warn!("cannot remove {}: {e}", dir.display());
            }
        }
        files
    }

    /// From a download of the directory into `dir`.
    fn from_dir(dir: &Path) -> VerifierFiles {
        let read = |path: &str| {
            let name = Path::new(path).file_name()?;
            let file = dir.join(name);
            file.is_file()
                .then(|| std::fs::read_to_string(file).ok())
                .flatten()
        };
        VerifierFiles {
            stdout: read(TEST_STDOUT),
            stderr: read(TEST_STDERR),
            reward_json: read(REWARD_JSON),
            reward_txt: read(REWARD_TXT),
        }
    }

    /// One file at a time (output that cannot be read counts as none).
    async fn one_by_one(env: &SessionRef) -> Result<VerifierFiles> {
        Ok(VerifierFiles {
            stdout: read_optional(env, TEST_STDOUT).await.ok().flatten(),
            stderr: read_optional(env, TEST_STDERR).await.ok().flatten(),
            reward_json: read_optional(env, REWARD_JSON).await?,
            reward_txt: read_optional(env, REWARD_TXT).await?,
        })
    }
}
