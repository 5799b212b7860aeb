//! Harbor's "latest version" rule (`resolve_version`): `head` when a dataset has it, else
//! the highest version that parses as PEP 440 (the first listed among equal ones), else the
//! greatest string.

use std::str::FromStr;

use pep440_rs::Version;

/// The version Harbor runs for a dataset named without one; `None` without versions.
pub fn latest_version<'a>(versions: &[&'a str]) -> Option<&'a str> {
    if versions.contains(&"head") {
        return Some("head");
    }
    let mut best: Option<(Version, &'a str)> = None;
    for &text in versions {
        let Ok(parsed) = Version::from_str(text) else {
            continue;
        };
        if best.as_ref().is_none_or(|(top, _)| parsed > *top) {
            best = Some((parsed, text));
        }
    }
    match best {
        Some((_, text)) => Some(text),
        None => versions.iter().copied().max(),
    }
}
