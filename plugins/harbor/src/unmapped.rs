//! Official Harbor fields this host does not act on: each is validated exactly as Harbor
//! validates it (an invalid value is refused, as Harbor refuses it) and then, when present,
//! becomes a `load_warnings` entry (`gpu_types`, which changes no score here) or refuses the
//! task (`tpu`: no environment here has one).

use agentcompass_plugin_api::Result;
use toml::Value;

use crate::fields::{Section, Warnings};

/// `gpu_types` and `tpu` of an environment table.
pub(crate) fn environment_fields(section: &Section, warnings: &mut Warnings) -> Result<()> {
    section.string_list("gpu_types")?;
    warnings.unsupported(section, "gpu_types", "GPU models are not selected");
    if let Some(tpu) = section.table("tpu")? {
        tpu_spec(&tpu)?;
    }
    warnings.refuse(section, "tpu", "no environment here has TPUs");
    Ok(())
}

/// `multi_step_reward_strategy`: `"mean"` or `"final"`.
pub(crate) fn reward_strategy(root: &Section) -> Result<Option<String>> {
    root.choice("multi_step_reward_strategy", &["mean", "final"])
}

/// A required field: an error naming the table when it is absent.
fn required<'a>(section: &Section<'a>, key: &str, what: &str) -> Result<&'a Value> {
    section.get(key).ok_or_else(|| {
        section.file_error(format!(
            "field `{}`: expected {what}, found none",
            section.key(key)
        ))
    })
}

/// A required string field.
fn required_string(section: &Section, key: &str) -> Result<String> {
    required(section, key, "a string")?;
    section.string(key).map(|s| s.unwrap_or_default())
}

/// `TpuSpec`: a non-empty `type` and a `topology` such as `2x4` or `2x2x1` (trimmed).
fn tpu_spec(tpu: &Section) -> Result<()> {
    let kind = required_string(tpu, "type")?;
    if kind.is_empty() {
        return Err(tpu.error("type", "expected a non-empty string, found an empty string"));
    }
    let topology = required_string(tpu, "topology")?;
    let valid = {
        let dims: Vec<&str> = topology.trim().split('x').collect();
        dims.len() >= 2
            && dims.iter().all(|d| {
                !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()) && !d.starts_with('0')
            })
    };
    if !valid {
        return Err(tpu.error(
            "topology",
            format!(
                "expected positive dimensions separated by `x` (such as \"2x4\" or \"2x2x1\"), found {topology:?}"
            ),
        ));
    }
    Ok(())
}
