//! The platform of an install: the environment it was made in and fits (provider, its
//! params, the image and the OS), named readably and keyed by a digest.

use agentcompass_plugin_api::contracts::EnvironmentSpec;
use agentcompass_results::naming::sanitize_component;
use serde_json::json;
use sha2::{Digest, Sha256};

/// Where an install runs and fits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Platform {
    dir_name: String,
}

impl Platform {
    /// The platform of `spec`'s task environment: its provider id, the provider params that
    /// change what is installed (`platform_params`: the provider's
    /// `ProviderCapabilities::platform_params`; `None`: all), image (or build context) and OS
    /// — not its resources, network, variables or workdir, which do not change what an
    /// installer makes.
    pub fn of(spec: &EnvironmentSpec, platform_params: Option<&[String]>) -> Platform {
        let params: serde_json::Map<String, serde_json::Value> = spec
            .params
            .iter()
            .filter(|(key, _)| platform_params.is_none_or(|keep| keep.contains(key)))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        let mut identity = json!({
            "provider": spec.id,
            "params": params,
            "image": spec.setup.image,
            "os": spec.setup.os,
        });
        // An image built from a task's own definition (only when there is one and no named
        // image replaces it, so the keys of named images stay as they were).
        let built = spec
            .setup
            .build_context
            .as_ref()
            .filter(|_| spec.setup.image.is_none());
        if let (Some(context), Some(identity)) = (built, identity.as_object_mut()) {
            identity.insert("build_context".to_string(), json!(context));
        }
        let digest = Sha256::digest(identity.to_string().as_bytes());
        let hex = hex::encode(&digest[..6]);
        let image = spec
            .setup
            .image
            .as_deref()
            .map(|image| format!("-{}", sanitize_component(image)))
            .unwrap_or_default();
        Platform {
            dir_name: format!("{}{image}-{hex}", sanitize_component(&spec.id)),
        }
    }

    /// The platform's directory under the cache root (`docker-agentcompass_agents-debian_12-1a2b3c4d5e6f`).
    pub fn dir_name(&self) -> &str {
        &self.dir_name
    }
}
