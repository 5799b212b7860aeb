//! Shared by the targets: the first input byte picks the file format.

use std::path::Path;

/// Splits `data` into a file path whose extension names the format (first byte modulo 3:
/// `0` TOML, `1` YAML, `2` JSON; the seeds start with the ASCII digit) and the file text.
/// `None` when there is no byte or the rest is not UTF-8 (the loaders read files as UTF-8).
pub fn format_and_text(data: &[u8]) -> Option<(&'static Path, u8, &str)> {
    let (&selector, rest) = data.split_first()?;
    let text = std::str::from_utf8(rest).ok()?;
    let path = match selector % 3 {
        0 => "fuzz.toml",
        1 => "fuzz.yaml",
        _ => "fuzz.json",
    };
    Some((Path::new(path), selector, text))
}
