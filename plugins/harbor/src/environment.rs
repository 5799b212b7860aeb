//! One environment table of a `task.toml` (`[environment]` or `[verifier.environment]`):
//! its setup, resources (with the legacy size strings), baseline network policy and bindings,
//! and the `network_mode` / `allowed_hosts` pair every phase table may declare, with Harbor's
//! rules and coercions.

use std::collections::BTreeMap;

use agentcompass_plugin_api::contracts::{
    EnvironmentSetup, McpServer, NetworkMode, NetworkPolicy, ResourceRequirements,
};
use agentcompass_plugin_api::Result;
use toml::Value;

use crate::fields::{describe, Section, Warnings};
use crate::healthcheck::Healthcheck;
use crate::hosts::{harbor_host, HostEntry};
use crate::lax::size_to_mb;
use crate::unmapped;

/// What one environment table (`[environment]` or `[verifier.environment]`) declares.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct EnvironmentDecl {
    /// Image, build timeout, working directory and OS.
    pub(crate) setup: EnvironmentSetup,
    /// `cpus`, `memory_mb`, `storage_mb`, `gpus` (and the legacy size strings).
    pub(crate) resources: Option<ResourceRequirements>,
    /// The policy at environment creation.
    pub(crate) baseline: Option<NetworkPolicy>,
    /// The `env` bindings.
    pub(crate) env: Option<BTreeMap<String, String>>,
    /// `healthcheck` (run for the agent's environment only, as in Harbor).
    pub(crate) healthcheck: Option<Healthcheck>,
    /// `mcp_servers` (the agent's environment only, as in Harbor).
    pub(crate) mcp_servers: Vec<McpServer>,
    /// `skills_dir` (the agent's environment only, as in Harbor).
    pub(crate) skills_dir: Option<String>,
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
    let setup = EnvironmentSetup {
        // Harbor treats an empty image as none (it builds environment/ instead).
        image: section.string("docker_image")?.filter(|i| !i.is_empty()),
        build_timeout_seconds: section.positive_seconds("build_timeout_sec")?,
        workdir,
        os: os(section)?,
        // Set from the task directory (module `image`).
        build_context: None,
        compose: None,
    };
    let resources = resources(section, warnings)?;
    let baseline = baseline_policy(section, warnings)?;
    let env = section.string_map("env")?;
    let healthcheck = section
        .table("healthcheck")?
        .map(|table| crate::healthcheck::parse(&table))
        .transpose()?;
    unmapped::environment_fields(section, warnings)?;
    let mcp_servers = crate::agent_inputs::mcp_servers(section)?;
    let skills_dir = crate::agent_inputs::skills_dir(section)?;
    warnings.unknown(section);
    Ok(EnvironmentDecl {
        setup,
        resources,
        baseline,
        env,
        healthcheck,
        mcp_servers,
        skills_dir,
    })
}

/// `os`: `"linux"` or `"windows"` in any case (Harbor lower-cases it), mapped lower-cased.
fn os(section: &Section) -> Result<Option<String>> {
    match section.get("os") {
        None => Ok(None),
        Some(Value::String(s)) if matches!(s.to_lowercase().as_str(), "linux" | "windows") => {
            Ok(Some(s.to_lowercase()))
        }
        Some(other) => Err(section.expected("os", "\"linux\" or \"windows\" (any case)", other)),
    }
}

/// The network modes, as Harbor spells them (exactly).
const MODES: [&str; 3] = ["public", "no-network", "allowlist"];

/// `network_mode` (exactly one of [`MODES`]).
fn network_mode(section: &Section) -> Result<Option<NetworkMode>> {
    section
        .choice("network_mode", &MODES)?
        .map(|mode| {
            mode.parse::<NetworkMode>()
                .map_err(|e| section.error("network_mode", e))
        })
        .transpose()
}

/// `allowed_hosts`, each entry validated and normalised as Harbor does; entries no DNS name
/// can match are dropped with a warning (the network contract cannot hold them).
fn allowed_hosts(section: &Section, warnings: &mut Warnings) -> Result<Option<Vec<String>>> {
    let Some(entries) = section.string_list("allowed_hosts")? else {
        return Ok(None);
    };
    let mut hosts = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        match harbor_host(entry) {
            Ok(HostEntry::Kept(host)) => hosts.push(host),
            Ok(HostEntry::Unmatchable(host)) => warnings.note(format!(
                "entry {host:?} of `{}` is dropped: no DNS name can match it (Harbor keeps it \
                 as a hostname)",
                section.key("allowed_hosts")
            )),
            Err(expected) => {
                return Err(section.error(
                    &format!("allowed_hosts[{i}]"),
                    format!("expected {expected}, found {entry:?}"),
                ))
            }
        }
    }
    Ok(Some(hosts))
}

/// The policy of `mode` with `hosts`: an allowlist without hosts allows nothing (Harbor
/// accepts it and opens no destination), i.e. no network.
fn policy(section: &Section, mode: NetworkMode, hosts: Vec<String>) -> Result<NetworkPolicy> {
    let policy = match (mode, hosts.is_empty()) {
        (NetworkMode::Allowlist, true) => NetworkPolicy::no_network(),
        (NetworkMode::Allowlist, false) => NetworkPolicy::allowlist(hosts),
        (mode, _) => NetworkPolicy::from(mode),
    };
    policy
        .normalized()
        .map_err(|e| section.error("allowed_hosts", e))
}

/// Refuses hosts next to a mode that is not `allowlist` (an empty list is accepted).
fn check_hosts(
    section: &Section,
    mode: NetworkMode,
    hosts: &Option<Vec<String>>,
    default: &str,
) -> Result<()> {
    match hosts {
        Some(hosts) if !hosts.is_empty() && mode != NetworkMode::Allowlist => Err(section.error(
            "allowed_hosts",
            format!("expected only with network_mode = \"allowlist\", found network_mode = \"{mode}\"{default}"),
        )),
        _ => Ok(()),
    }
}

/// A phase override (`[agent]`, `[verifier]`): `network_mode` / `allowed_hosts`, or `None`.
pub(crate) fn phase_policy(
    section: &Section,
    warnings: &mut Warnings,
) -> Result<Option<NetworkPolicy>> {
    let mode = network_mode(section)?;
    let hosts = allowed_hosts(section, warnings)?;
    let Some(mode) = mode else {
        return match hosts {
            Some(_) => Err(section.error(
                "allowed_hosts",
                "expected network_mode = \"allowlist\" alongside it, found no network_mode",
            )),
            None => Ok(None),
        };
    };
    check_hosts(section, mode, &hosts, "")?;
    policy(section, mode, hosts.unwrap_or_default()).map(Some)
}

/// An environment's baseline: `network_mode` (default public) / `allowed_hosts`, or legacy
/// `allow_internet`, which applies only when neither is given (else it is ignored with a
/// warning, as Harbor ignores it). `None` when none of the three is declared.
fn baseline_policy(section: &Section, warnings: &mut Warnings) -> Result<Option<NetworkPolicy>> {
    let declared_mode = network_mode(section)?;
    let hosts = allowed_hosts(section, warnings)?;
    let mode = declared_mode.unwrap_or_default();
    let default = if declared_mode.is_none() {
        " (the default)"
    } else {
        ""
    };
    check_hosts(section, mode, &hosts, default)?;
    let legacy = section.boolean("allow_internet")?;
    if let Some(allowed) = legacy {
        if declared_mode.is_none() && hosts.is_none() {
            let mode = if allowed {
                NetworkMode::Public
            } else {
                NetworkMode::NoNetwork
            };
            return Ok(Some(NetworkPolicy::from(mode)));
        }
        let winner = if declared_mode.is_some() {
            "network_mode"
        } else {
            "allowed_hosts"
        };
        warnings.note(format!(
            "legacy field `{}` is ignored (`{}` is given and wins, as in Harbor)",
            section.key("allow_internet"),
            section.key(winner)
        ));
    }
    if declared_mode.is_none() && hosts.is_none() {
        return Ok(None);
    }
    policy(section, mode, hosts.unwrap_or_default()).map(Some)
}

/// Parses a legacy Harbor size string (`"2G"`, `"512M"`, `"2048K"`; not `"2GB"`, `"10Gi"`
/// or `"1T"`, which Harbor refuses) into MiB; `None` when Harbor refuses it or it is below
/// 1 MiB.
pub fn parse_size_mb(text: &str) -> Option<u64> {
    size_to_mb(text)
        .filter(|mb| *mb >= 1)
        .map(i64::unsigned_abs)
}

/// Whether Python's `declared != migrated` holds for a declared `*_mb` value (Harbor's
/// conflict test compares the raw value: a string never equals a number).
fn differs(declared: &Value, migrated: i64) -> bool {
    match declared {
        Value::Integer(i) => *i != migrated,
        Value::Float(f) => *f != migrated as f64,
        Value::Boolean(b) => i64::from(*b) != migrated,
        _ => true,
    }
}

/// A new `*_mb` field and its legacy alias, migrated as Harbor does: a size string fills the
/// new field (conflicting values are an error; equal ones leave the legacy field ignored with
/// a warning); a legacy value that is not a string is ignored with a warning (seed 004).
fn size_field(
    section: &Section,
    warnings: &mut Warnings,
    new_key: &str,
    legacy_key: &str,
) -> Result<Option<u64>> {
    let expected = "a size string such as \"2G\", \"512M\" or \"2048K\"";
    let legacy = match section.get(legacy_key) {
        None => None,
        Some(Value::String(s)) => Some((
            size_to_mb(s)
                .ok_or_else(|| section.expected(legacy_key, expected, &Value::String(s.clone())))?,
            s.clone(),
        )),
        Some(other) => {
            warnings.note(format!(
                "legacy field `{}` is ignored (Harbor migrates only size strings, found {})",
                section.key(legacy_key),
                describe(other)
            ));
            None
        }
    };
    let declared = section.get(new_key);
    match (declared, legacy) {
        (Some(declared), Some((migrated, text))) => {
            if differs(declared, migrated) {
                return Err(section.error(
                    legacy_key,
                    format!(
                        "expected the same size as {} = {}, found {text:?} ({migrated} MiB; conflicting values)",
                        section.key(new_key),
                        crate::fields::to_json(declared)
                    ),
                ));
            }
            warnings.note(format!(
                "legacy field `{}` is ignored (`{}` is given)",
                section.key(legacy_key),
                section.key(new_key)
            ));
            section.positive_integer(new_key)
        }
        (None, Some((migrated, text))) if migrated < 1 => Err(section.error(
            legacy_key,
            format!(
                "expected a size of at least 1M (a task with less can never run), found {text:?}"
            ),
        )),
        (None, Some((migrated, _))) => Ok(Some(migrated.unsigned_abs())),
        (_, None) => section.positive_integer(new_key),
    }
}

/// `cpus`, `memory_mb`, `storage_mb`, `gpus` and the legacy size strings, in MiB.
fn resources(section: &Section, warnings: &mut Warnings) -> Result<Option<ResourceRequirements>> {
    let resources = ResourceRequirements {
        cpu: section.positive_number("cpus")?,
        memory_mb: size_field(section, warnings, "memory_mb", "memory")?,
        storage_mb: size_field(section, warnings, "storage_mb", "storage")?,
        // Zero GPUs is Harbor's default: no requirement.
        gpu: match section.non_negative_integer("gpus")? {
            None | Some(0) => None,
            Some(n) => Some(u32::try_from(n).map_err(|_| {
                section.error("gpus", format!("expected a GPU count, found integer {n}"))
            })?),
        },
        ..ResourceRequirements::default()
    };
    Ok((resources != ResourceRequirements::default()).then_some(resources))
}
