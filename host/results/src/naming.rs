//! Names of the results tree: path components, task directory names, task-id hashes.

use sha2::{Digest, Sha256};

/// Longest readable prefix of a task directory name (before `--<sha256>`).
const TASK_NAME_PREFIX_CHARS: usize = 80;

/// Replaces every run of characters outside `[A-Za-z0-9._=-]` with `_` (result paths).
pub fn sanitize_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_run = false;
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '=' | '-') {
            out.push(c);
            in_run = false;
        } else if !in_run {
            out.push('_');
            in_run = true;
        }
    }
    out
}

/// The directory name of a task: the task id with every run of characters outside
/// `[A-Za-z0-9._=-]` replaced by `_`, stripped of leading/trailing `.`, `_`, `-`, cut to 80
/// characters (or `task` when nothing is left), then `--` and the lowercase sha256 hex of the
/// full task id. Distinct task ids always get distinct names.
pub fn task_dir_name(task_id: &str) -> String {
    let sanitized = sanitize_component(task_id);
    let trimmed = sanitized.trim_matches(|c| matches!(c, '.' | '_' | '-'));
    // Sanitised text is ASCII, but cut on a char boundary regardless.
    let readable: String = trimmed.chars().take(TASK_NAME_PREFIX_CHARS).collect();
    let readable = if readable.is_empty() {
        "task".to_string()
    } else {
        readable
    };
    format!("{readable}--{}", sha256_hex(task_id.as_bytes()))
}

/// A 64-bit hash of a task id (SipHash with fixed keys), for sets of ids that must not keep
/// the ids themselves: a collision needs about 10^9 ids for a one-in-a-billion chance.
pub fn task_id_hash(task_id: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    task_id.hash(&mut hasher);
    hasher.finish()
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_dir_names() {
        let sha = |s: &str| sha256_hex(s.as_bytes());
        assert_eq!(task_dir_name("a/b c"), format!("a_b_c--{}", sha("a/b c")));
        assert_eq!(task_dir_name(""), format!("task--{}", sha("")));
        assert_eq!(task_dir_name("///"), format!("task--{}", sha("///")));
        assert_eq!(
            task_dir_name("..-_x.y=z_-.."),
            format!("x.y=z--{}", sha("..-_x.y=z_-.."))
        );
        assert_eq!(
            task_dir_name("héllo wörld"),
            format!("h_llo_w_rld--{}", sha("héllo wörld"))
        );
        let long = "x".repeat(200);
        let name = task_dir_name(&long);
        assert_eq!(name, format!("{}--{}", "x".repeat(80), sha(&long)));
        // The hash keeps ids that sanitise alike apart.
        assert_ne!(task_dir_name("a b"), task_dir_name("a/b"));
        assert_eq!(
            sha(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
