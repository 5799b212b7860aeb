//! Task-id globs (`execution.include_tasks` / `exclude_tasks`, Harbor's `-i` / `-x`): shell
//! patterns with Python's `fnmatch` semantics, so a pattern selects here what it selects in
//! Harbor: `*` matches any run of characters (`/` included), `?` one character, `[seq]` and
//! `[!seq]` a character in or not in `seq`, an unclosed `[` itself; case-sensitive; no
//! braces and no backslash escapes.

use regex::RegexSet;

/// A pattern the regex engine refused (only possible for odd character classes).
#[derive(Debug, thiserror::Error)]
#[error("invalid task glob {pattern:?}: {message}")]
pub struct TaskGlobError {
    /// The pattern as given.
    pub pattern: String,
    /// Why it was refused.
    pub message: String,
}

/// A list of globs, any of which may match.
#[derive(Debug, Clone)]
pub struct TaskGlobs {
    set: RegexSet,
    patterns: Vec<String>,
}

impl TaskGlobs {
    /// Compiles `patterns` (an empty list matches nothing; see [`TaskGlobs::is_empty`]).
    pub fn new(patterns: &[String]) -> Result<Self, TaskGlobError> {
        for pattern in patterns {
            regex::Regex::new(&translate(pattern)).map_err(|e| TaskGlobError {
                pattern: pattern.clone(),
                message: e.to_string(),
            })?;
        }
        let set =
            RegexSet::new(patterns.iter().map(|p| translate(p))).map_err(|e| TaskGlobError {
                pattern: patterns.join(" "),
                message: e.to_string(),
            })?;
        Ok(TaskGlobs {
            set,
            patterns: patterns.to_vec(),
        })
    }

    /// No pattern given.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Whether any pattern matches the whole of `task_id`.
    pub fn matches(&self, task_id: &str) -> bool {
        self.set.is_match(task_id)
    }

    /// The patterns as given.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }
}

/// The regex of one pattern, as Python's `fnmatch.translate` builds it.
fn translate(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::from("(?s)^");
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '*' => {
                while chars.get(i) == Some(&'*') {
                    i += 1;
                }
                out.push_str(".*");
            }
            '?' => out.push('.'),
            '[' => match class_end(&chars, i) {
                Some(end) => {
                    out.push_str(&class(&chars[i..end]));
                    i = end + 1;
                }
                None => out.push_str("\\["),
            },
            c => out.push_str(&regex::escape(&c.to_string())),
        }
    }
    out.push('$');
    out
}

/// The index of the `]` closing a class that starts at `start` (after its `[`), if any: a `]`
/// right after `[` or `[!` belongs to the class.
fn class_end(chars: &[char], start: usize) -> Option<usize> {
    let mut j = start;
    if chars.get(j) == Some(&'!') {
        j += 1;
    }
    if chars.get(j) == Some(&']') {
        j += 1;
    }
    while j < chars.len() && chars[j] != ']' {
        j += 1;
    }
    (j < chars.len()).then_some(j)
}

/// A character class of the regex engine from the inside of a glob class.
fn class(inside: &[char]) -> String {
    let (negated, members) = match inside.split_first() {
        Some(('!', rest)) => (true, rest),
        _ => (false, inside),
    };
    if members.is_empty() {
        // `[!]` is one character that is not `!`... as Python: `.`; `[]` cannot occur.
        return if negated { ".".into() } else { "(?!)".into() };
    }
    let mut out = String::from(if negated { "[^" } else { "[" });
    for (index, c) in members.iter().enumerate() {
        match c {
            // Literal in a glob class; special (escapes, nesting, set operations) in a regex
            // class. A leading `^` would negate.
            '\\' | '[' | ']' | '&' | '~' => {
                out.push('\\');
                out.push(*c);
            }
            '^' if index == 0 => out.push_str("\\^"),
            c => out.push(*c),
        }
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn globs(patterns: &[&str]) -> TaskGlobs {
        TaskGlobs::new(&patterns.iter().map(|p| p.to_string()).collect::<Vec<_>>()).unwrap()
    }

    /// Cases checked against Python 3.12's `fnmatch.fnmatchcase`.
    #[test]
    fn globs_match_as_python_fnmatch_does() {
        let cases: &[(&str, &str, bool)] = &[
            ("hello-*", "hello-file", true),
            ("hello-*", "Hello-file", false),
            ("*", "org/name", true),
            ("org/*", "org/a/b", true),
            ("?rimes", "primes", true),
            ("?rimes", "pprimes", false),
            ("[fp]*", "fizzbuzz", true),
            ("[!fp]*", "fizzbuzz", false),
            ("[!fp]*", "hello-file", true),
            ("[]]x", "]x", true),
            ("[!]]x", "ax", true),
            ("[a", "[a", true),
            ("a.b", "axb", false),
            ("a+b(c)", "a+b(c)", true),
            ("{a,b}", "{a,b}", true),
            ("{a,b}", "a", false),
            ("a\\b", "a\\b", true),
            ("[a-c]", "b", true),
            ("[a-c]", "d", false),
            ("[&~]", "~", true),
            ("[^a]", "^", true),
            ("[^a]", "b", false),
            ("x*", "x\ny", true),
        ];
        for (pattern, id, expected) in cases {
            assert_eq!(
                globs(&[pattern]).matches(id),
                *expected,
                "{pattern} vs {id}"
            );
        }
    }

    #[test]
    fn any_pattern_of_the_list_matches() {
        let list = globs(&["a*", "b*"]);
        assert!(list.matches("bee") && list.matches("ant") && !list.matches("cat"));
        assert!(globs(&[]).is_empty() && !globs(&[]).matches("x"));
    }
}
