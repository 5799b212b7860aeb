//! GNU tar exclusion globs of artifact entries (syntax in the parent module's docs).

use std::path::Path;

/// Whether the glob `pattern` matches all of `text` (see the module docs for the syntax).
pub(crate) fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    // Where to resume after the last `*`: (pattern index after it, text index it covers to).
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        let step = match p.get(pi) {
            Some('*') => {
                star = Some((pi + 1, ti));
                pi += 1;
                continue;
            }
            Some('?') => Some(1),
            Some('[') => match class_match(&p[pi..], t[ti]) {
                Some((true, len)) => Some(len),
                Some((false, _)) => None,
                None => (t[ti] == '[').then_some(1),
            },
            Some('\\') if pi + 1 < p.len() => (p[pi + 1] == t[ti]).then_some(2),
            Some(c) => (*c == t[ti]).then_some(1),
            None => None,
        };
        match step {
            Some(len) => {
                pi += len;
                ti += 1;
            }
            None => match star {
                Some((after, covered)) => {
                    pi = after;
                    ti = covered + 1;
                    star = Some((after, covered + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Matches the bracket expression at the start of `p` against `c`: `Some((matched, length of
/// the expression))`, or `None` when the bracket is not closed (then it is a literal `[`).
fn class_match(p: &[char], c: char) -> Option<(bool, usize)> {
    let mut i = 1;
    let negated = matches!(p.get(i), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    loop {
        let lo = *p.get(i)?;
        if lo == ']' && !first {
            return Some((matched != negated, i + 1));
        }
        first = false;
        let (lo, mut next) = if lo == '\\' {
            (*p.get(i + 1)?, i + 2)
        } else {
            (lo, i + 1)
        };
        if p.get(next) == Some(&'-') && p.get(next + 1).is_some_and(|h| *h != ']') {
            let hi = *p.get(next + 1)?;
            if lo <= c && c <= hi {
                matched = true;
            }
            next += 2;
        } else if lo == c {
            matched = true;
        }
        i = next;
    }
}

/// A normalised exclusion pattern.
#[derive(Debug, Clone)]
pub(super) struct Exclusion {
    pattern: String,
    anchored: bool,
}

pub(super) fn exclusions(patterns: &[String]) -> Vec<Exclusion> {
    patterns
        .iter()
        .filter_map(|raw| {
            let mut pattern = raw.trim();
            while let Some(rest) = pattern.strip_prefix("./") {
                pattern = rest;
            }
            let anchored = pattern.starts_with('/');
            let pattern = pattern.trim_start_matches('/').trim_end_matches('/');
            (!pattern.is_empty()).then(|| Exclusion {
                pattern: pattern.to_string(),
                anchored,
            })
        })
        .collect()
}

/// Whether `relative` (below the entry root, `/`-separated) is excluded; `base` is the
/// source's last path component (the tar member prefix).
pub(super) fn is_excluded(rules: &[Exclusion], base: &str, relative: &str) -> bool {
    let member = if base.is_empty() {
        relative.to_string()
    } else {
        format!("{base}/{relative}")
    };
    rules.iter().any(|rule| {
        if rule.anchored {
            return glob_match(&rule.pattern, relative);
        }
        // Every trailing run of components of the member name.
        let mut rest = member.as_str();
        loop {
            if glob_match(&rule.pattern, rest) {
                return true;
            }
            match rest.find('/') {
                Some(i) => rest = &rest[i + 1..],
                None => return false,
            }
        }
    })
}

/// Whether a file source with last component `name` is excluded by its own patterns.
pub(crate) fn file_excluded(patterns: &[String], name: &str) -> bool {
    is_excluded(&exclusions(patterns), "", name)
}

pub(super) fn base_name(source: &str) -> String {
    Path::new(source.trim_end_matches('/'))
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
