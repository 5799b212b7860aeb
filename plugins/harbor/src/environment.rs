//! One environment table of a `task.toml` (`[environment]` or `[verifier.environment]`):
//! its setup, resources (with the legacy size strings), baseline network policy and bindings,
//! and the `network_mode` / `allowed_hosts` pair every phase table may declare.

use std::collections::BTreeMap;

use agentcompass_plugin_api::contracts::{
    EnvironmentSetup, NetworkMode, NetworkPolicy, ResourceRequirements,
};
use agentcompass_plugin_api::Result;
use toml::Value;

use crate::fields::{Section, Warnings};

/// What one environment table (`[environment]` or `[verifier.environment]`) declares.
#[derive(Debug, Default)]
pub(crate) struct EnvironmentDecl {
    /// Image, build timeout, working directory and OS.
    pub(crate) setup: EnvironmentSetup,
    /// `cpus`, `memory_mb`, `storage_mb`, `gpus` (and the legacy size strings).
    pub(crate) resources: Option<ResourceRequirements>,
    /// The policy at environment creation.
    pub(crate) baseline: Option<NetworkPolicy>,
    /// The `env` bindings.
    pub(crate) env: Option<BTreeMap<String, String>>,
}

/// One environment table: setup, resources, baseline policy and bindings.
pub(crate) fn environment_decl(
    section: &Section,
    warnings: &mut Warnings,
) -> Result<EnvironmentDecl> {
    let workdir = section.non_empty_string("workdir")?;
    if let Some(workdir) = &workdir {
        if !workdir.starts_with('/') {
            return Err(section.error(
                "workdir",
                format!("expected an absolute POSIX path, found {workdir:?}"),
            ));
        }
    }
    let os = section.string("os")?;
    if let Some(os) = &os {
        if os != "linux" && os != "windows" {
            return Err(section.expected(
                "os",
                "\"linux\" or \"windows\"",
                &Value::String(os.clone()),
            ));
        }
    }
    let setup = EnvironmentSetup {
        image: section.non_empty_string("docker_image")?,
        build_timeout_seconds: section.positive_seconds("build_timeout_sec")?,
        workdir,
        os,
    };
    let resources = resources(section, warnings)?;
    let baseline = network_policy(section, true)?;
    let env = section.string_map("env")?;
    warnings.unsupported(section, "gpu_types", "GPU models are not selected");
    warnings.unsupported(section, "tpu", "TPUs are not supported");
    warnings.unsupported(section, "skills_dir", "skills are not installed");
    warnings.unsupported(section, "healthcheck", "health checks are not run");
    warnings.unsupported(section, "mcp_servers", "MCP servers are not started");
    warnings.unknown(section);
    Ok(EnvironmentDecl {
        setup,
        resources,
        baseline,
        env,
    })
}

/// `network_mode` / `allowed_hosts` (and, for environments, legacy `allow_internet`).
pub(crate) fn network_policy(
    section: &Section,
    allow_legacy: bool,
) -> Result<Option<NetworkPolicy>> {
    let modes = "\"public\", \"no-network\" or \"allowlist\"";
    let mode = match section.get("network_mode") {
        None => None,
        Some(Value::String(s)) => Some(
            s.parse::<NetworkMode>()
                .map_err(|_| section.expected("network_mode", modes, &Value::String(s.clone())))?,
        ),
        Some(other) => return Err(section.expected("network_mode", modes, other)),
    };
    let legacy = if allow_legacy {
        section.boolean("allow_internet")?.map(|allowed| {
            if allowed {
                NetworkMode::Public
            } else {
                NetworkMode::NoNetwork
            }
        })
    } else {
        None
    };
    let mode = match (mode, legacy) {
        (Some(mode), Some(legacy)) if mode != legacy => {
            return Err(section.error(
                "allow_internet",
                format!(
                    "expected a value consistent with network_mode = \"{mode}\", found {} (it means \"{legacy}\")",
                    legacy == NetworkMode::Public
                ),
            ))
        }
        (mode, legacy) => mode.or(legacy),
    };
    let hosts = section.string_list("allowed_hosts")?;
    let Some(mode) = mode else {
        return match hosts {
            Some(_) => Err(section.error(
                "allowed_hosts",
                "expected network_mode = \"allowlist\" alongside it, found no network_mode",
            )),
            None => Ok(None),
        };
    };
    if mode != NetworkMode::Allowlist && hosts.is_some() {
        return Err(section.error(
            "allowed_hosts",
            format!(
                "expected only with network_mode = \"allowlist\", found network_mode = \"{mode}\""
            ),
        ));
    }
    let policy = NetworkPolicy {
        network_mode: mode,
        allowed_hosts: hosts.unwrap_or_default(),
    };
    policy.normalized().map(Some).map_err(|e| {
        let key = if mode == NetworkMode::Allowlist {
            "allowed_hosts"
        } else {
            "network_mode"
        };
        section.error(key, e)
    })
}

/// Parses a legacy Harbor size string (`"2G"`, `"512M"`, `"1.5GB"`, `"10Gi"`) into MiB.
pub fn parse_size_mb(text: &str) -> Option<u64> {
    let upper = text.trim().to_ascii_uppercase();
    let body = upper
        .strip_suffix("IB")
        .or_else(|| upper.strip_suffix('I'))
        .or_else(|| upper.strip_suffix('B'))
        .unwrap_or(&upper);
    let (number, factor) = match body.chars().last()? {
        'T' => (&body[..body.len() - 1], 1024.0 * 1024.0),
        'G' => (&body[..body.len() - 1], 1024.0),
        'M' => (&body[..body.len() - 1], 1.0),
        'K' => (&body[..body.len() - 1], 1.0 / 1024.0),
        _ => return None,
    };
    let value: f64 = number.trim().parse().ok()?;
    let mb = (value * factor).floor();
    (value.is_finite() && mb >= 1.0 && mb < u64::MAX as f64).then_some(mb as u64)
}

/// A new `*_mb` field and its legacy size-string alias; conflicting values are an error.
fn size_field(
    section: &Section,
    warnings: &mut Warnings,
    new_key: &str,
    legacy_key: &str,
) -> Result<Option<u64>> {
    let current = section.positive_integer(new_key)?;
    let legacy = match section.get(legacy_key) {
        None => None,
        Some(Value::String(s)) => Some(parse_size_mb(s).ok_or_else(|| {
            section.expected(
                legacy_key,
                "a size string such as \"2G\" or \"512M\"",
                &Value::String(s.clone()),
            )
        })?),
        Some(other) => {
            return Err(section.expected(
                legacy_key,
                "a size string such as \"2G\" or \"512M\"",
                other,
            ))
        }
    };
    match (current, legacy) {
        (Some(current), Some(legacy)) if current != legacy => Err(section.error(
            legacy_key,
            format!(
                "expected the same size as {} = {current}, found {legacy} MiB (conflicting values)",
                section.key(new_key)
            ),
        )),
        (Some(current), Some(_)) => {
            warnings.note(format!(
                "legacy field `{}` is ignored (`{}` is given)",
                section.key(legacy_key),
                section.key(new_key)
            ));
            Ok(Some(current))
        }
        (current, legacy) => Ok(current.or(legacy)),
    }
}

/// `cpus`, `memory_mb`, `storage_mb`, `gpus` and the legacy size strings, in MiB.
fn resources(section: &Section, warnings: &mut Warnings) -> Result<Option<ResourceRequirements>> {
    let resources =
        ResourceRequirements {
            cpu: section.positive_number("cpus")?,
            memory_mb: size_field(section, warnings, "memory_mb", "memory")?,
            storage_mb: size_field(section, warnings, "storage_mb", "storage")?,
            // Zero GPUs is Harbor's default: no requirement.
            gpu: match section.non_negative_integer("gpus")? {
                None | Some(0) => None,
                Some(n) => Some(u32::try_from(n).map_err(|_| {
                    section.expected("gpus", "a GPU count", &Value::Integer(n as i64))
                })?),
            },
            ..ResourceRequirements::default()
        };
    Ok((resources != ResourceRequirements::default()).then_some(resources))
}
