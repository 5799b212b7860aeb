//! Name parts for the resources a provider creates (directories, containers).

/// How many characters of a task id [`sanitise`] keeps.
const MAX_TASK_CHARS: usize = 48;

/// A task id reduced to a short, file- and container-name-safe string: ASCII letters, digits,
/// `-`, `_` and `.` are kept, anything else becomes `_`, at most 48 characters; `task` when
/// nothing is left.
pub fn sanitise(task_id: &str) -> String {
    let cleaned: String = task_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(MAX_TASK_CHARS)
        .collect();
    if cleaned.is_empty() {
        "task".to_string()
    } else {
        cleaned
    }
}

/// A random, name-safe suffix: 16 hex digits from `fastrand` (seeded per thread from the
/// process's random state). Unpredictability is not what keeps a resource safe: create it so
/// that an existing name is never reused (`mkdir`, not `mkdir -p`; a container name the daemon
/// refuses twice).
pub fn random_suffix() -> String {
    format!("{:016x}", fastrand::u64(..))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitised_task_ids_are_short_and_safe() {
        assert_eq!(sanitise("a/b c..x"), "a_b_c..x");
        assert_eq!(sanitise("task/1 é"), "task_1__");
        assert_eq!(sanitise(""), "task");
        assert_eq!(sanitise(&"x".repeat(100)).len(), 48);
    }

    #[test]
    fn random_suffixes_are_16_hex_digits_and_differ() {
        let (a, b) = (random_suffix(), random_suffix());
        assert_eq!(a.len(), 16);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
