//! How an environment is built and started: its image (named, or built from the task's own
//! definition), working directory, OS, build timeout, and the services that run beside it.

use serde::{Deserialize, Serialize};

/// How an environment is built and started.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EnvironmentSetup {
    /// Registry image.
    pub image: Option<String>,
    /// Deadline for open + initialisation, in seconds.
    pub build_timeout_seconds: Option<f64>,
    /// Absolute default working directory inside the environment.
    pub workdir: Option<String>,
    /// Operating system (`linux` or `windows`).
    pub os: Option<String>,
    /// The environment's own definition: an absolute host directory holding a `Dockerfile`
    /// (a Harbor task's `environment/`), built into the image when no `image` is given.
    /// Providers that build images build it; providers that cannot refuse the plan (or run
    /// on another root only when the user asks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_context: Option<String>,
    /// Services started beside the environment (a Harbor task's
    /// `environment/docker-compose.yaml`). Only providers that declare
    /// [`super::ProviderCapabilities::compose`] run them; the others refuse the plan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compose: Option<ComposeSetup>,
}

/// A Compose file whose services run beside the environment: the environment itself is its
/// service `main` (the file may add to it), every other service a sidecar reached by its name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ComposeSetup {
    /// The Compose file: an absolute host path.
    pub file: String,
    /// The absolute host directory that the file's bind-mount sources must stay inside (a
    /// Harbor task's directory).
    pub root: String,
}

impl EnvironmentSetup {
    /// Field-wise overlay: `over`'s `Some` values win. An `image` in `over` replaces a
    /// build context of `self` (the user's image wins over the task's own definition).
    pub fn merge(&self, over: &Self) -> Self {
        let build_context = match (&over.build_context, &over.image) {
            (Some(context), _) => Some(context.clone()),
            (None, Some(_)) => None,
            (None, None) => self.build_context.clone(),
        };
        EnvironmentSetup {
            image: over.image.clone().or_else(|| self.image.clone()),
            build_timeout_seconds: over.build_timeout_seconds.or(self.build_timeout_seconds),
            workdir: over.workdir.clone().or_else(|| self.workdir.clone()),
            os: over.os.clone().or_else(|| self.os.clone()),
            build_context,
            compose: over.compose.clone().or_else(|| self.compose.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges() {
        let setup = EnvironmentSetup {
            image: Some("a".into()),
            workdir: Some("/w".into()),
            ..Default::default()
        };
        let merged = setup.merge(&EnvironmentSetup {
            image: Some("b".into()),
            ..Default::default()
        });
        assert_eq!(merged.image.as_deref(), Some("b"));
        assert_eq!(merged.workdir.as_deref(), Some("/w"));
        // The task's own definition is built unless the user names an image.
        let task = EnvironmentSetup {
            build_context: Some("/t/environment".into()),
            ..Default::default()
        };
        let kept = task.merge(&EnvironmentSetup::default());
        assert_eq!(kept.build_context.as_deref(), Some("/t/environment"));
        let replaced = task.merge(&EnvironmentSetup {
            image: Some("mine:1".into()),
            ..Default::default()
        });
        assert_eq!(replaced.image.as_deref(), Some("mine:1"));
        assert_eq!(replaced.build_context, None);
        // Absent, the field is not written (records stay as they were).
        let json = serde_json::to_string(&EnvironmentSetup::default()).unwrap();
        assert!(!json.contains("build_context"), "{json}");
        assert!(!json.contains("compose"), "{json}");
        // A task's services stay beside a user's image.
        let compose = ComposeSetup {
            file: "/t/environment/docker-compose.yaml".into(),
            root: "/t".into(),
        };
        let task = EnvironmentSetup {
            compose: Some(compose.clone()),
            ..task
        };
        let merged = task.merge(&EnvironmentSetup {
            image: Some("mine:1".into()),
            ..Default::default()
        });
        assert_eq!(merged.compose, Some(compose));
    }
}
