//! An instruction file (`instruction.md` of a task or of a step) as Harbor reads it.

use std::path::Path;

use agentcompass_plugin_api::{Error, Result};

use crate::names::ID;

/// An agent instruction (`instruction.md` of the task or of a step, possibly empty, as in
/// Harbor), without the leading canary lines Harbor strips (`<!-- ... canary ... -->` or
/// `# ... canary ...`) and the blank lines after them (leading blank lines go too, as in
/// Harbor).
pub(crate) fn read_instruction(instruction_path: &Path, whose: &str) -> Result<String> {
    let instruction = std::fs::read_to_string(instruction_path).map_err(|e| {
        Error::invalid_input(format!(
            "{ID}: {}: cannot read the {whose} instruction: {e}",
            instruction_path.display()
        ))
    })?;
    Ok(strip_canary(&instruction))
}

/// Harbor's `strip_canary`.
fn strip_canary(text: &str) -> String {
    let canary = |line: &str| {
        let line = line.trim();
        let lower = line.to_lowercase();
        lower.contains("canary")
            && ((line.starts_with("<!--") && line.ends_with("-->")) || line.starts_with('#'))
    };
    let lines: Vec<&str> = text.split('\n').collect();
    let mut start = lines.iter().take_while(|l| canary(l)).count();
    start += lines[start..]
        .iter()
        .take_while(|l| l.trim().is_empty())
        .count();
    if start == 0 {
        return text.to_string();
    }
    lines[start..].join("\n")
}
