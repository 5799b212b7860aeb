//! MCP HTTP headers: Harbor's rules for what a header may hold (credentials only as `${VAR}`
//! references) and the resolution of its `${NAME}` / `${NAME:-default}` references.

/// Why a header is refused (never quoting its value: it may hold a credential).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderProblem {
    /// The name is not an HTTP token.
    #[error("expected an HTTP header name (token characters), found {0:?}")]
    Name(String),
    /// The value holds a line break.
    #[error("expected a value without line breaks, found a line break")]
    LineBreak,
    /// A `${` that does not start a well-formed reference.
    #[error("expected well-formed ${{VAR}} references, found a malformed one")]
    Malformed,
    /// A credential written as a literal (or as a reference with a default).
    #[error(
        "expected credentials only as ${{VAR}} references without a default (such as \"Bearer ${{TOKEN}}\"), found a literal"
    )]
    Literal,
    /// A referenced variable is not set and has no default.
    #[error("expected the variable `{0}` to be set, found it unset")]
    Unset(String),
}

/// Checks one header as Harbor does: a token name, a value without line breaks, well-formed
/// `${VAR}` references, and credentials only as references without defaults.
pub(super) fn check_header(name: &str, value: &str) -> Result<(), HeaderProblem> {
    let token_char = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+.^_`|~-".contains(c);
    if name.is_empty() || !name.chars().all(token_char) {
        return Err(HeaderProblem::Name(name.to_string()));
    }
    if value.contains('\r') || value.contains('\n') {
        return Err(HeaderProblem::LineBreak);
    }
    let templates = header_references(value).ok_or(HeaderProblem::Malformed)?;
    let sensitive_header = sensitive_name(name)
        || name.eq_ignore_ascii_case("cookie")
        || name.eq_ignore_ascii_case("set-cookie");
    let literal_default = templates.iter().any(|(variable, default)| {
        default.as_ref().is_some_and(|d| !d.is_empty())
            && (sensitive_header || sensitive_name(variable))
    });
    if literal_default
        || (sensitive_header && !value.trim().is_empty() && !templated_credential(value))
    {
        return Err(HeaderProblem::Literal);
    }
    Ok(())
}

/// Harbor's `_SENSITIVE_KEY_RE`: `KEY`, `SECRET`, `TOKEN` (not `TOKENS`), `PASSWORD`,
/// `CREDENTIAL` or `AUTH`, in any case.
pub fn sensitive_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH"]
        .iter()
        .any(|w| upper.contains(w))
        || upper
            .match_indices("TOKEN")
            .any(|(i, _)| upper.as_bytes().get(i + 5) != Some(&b'S'))
}

/// The `${NAME}` / `${NAME:-default}` references of `value` (`None` when a `${` is left that
/// is not a well-formed reference, or a default holds `${`).
pub fn header_references(value: &str) -> Option<Vec<(String, Option<String>)>> {
    let mut found = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let (name, default, consumed) = reference(after)?;
        if default.as_deref().is_some_and(|d| d.contains("${")) {
            return None;
        }
        found.push((name, default));
        rest = &after[consumed..];
    }
    Some(found)
}

/// `value` with every `${NAME}` / `${NAME:-default}` replaced by `lookup(NAME)`, or the
/// default when it is unset (Harbor's `resolve_embedded_env_vars`).
pub fn resolve_template(
    value: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, HeaderProblem> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let (name, default, consumed) = reference(after).ok_or(HeaderProblem::Malformed)?;
        match (lookup(&name), default) {
            (Some(found), _) => out.push_str(&found),
            (None, Some(default)) => out.push_str(&default),
            (None, None) => return Err(HeaderProblem::Unset(name)),
        }
        rest = &after[consumed..];
    }
    out.push_str(rest);
    Ok(out)
}

/// One reference after its `${`: the name, the default and the characters consumed
/// (through the closing brace).
fn reference(text: &str) -> Option<(String, Option<String>, usize)> {
    let name_len = text
        .char_indices()
        .take_while(|(i, c)| c.is_ascii_alphabetic() || *c == '_' || (*i > 0 && c.is_ascii_digit()))
        .count();
    if name_len == 0 {
        return None;
    }
    let name = text[..name_len].to_string();
    let tail = &text[name_len..];
    if tail.starts_with('}') {
        return Some((name, None, name_len + 1));
    }
    let default_text = tail.strip_prefix(":-")?;
    let end = default_text.find('}')?;
    Some((
        name,
        Some(default_text[..end].to_string()),
        name_len + 2 + end + 1,
    ))
}

/// Harbor's `_TEMPLATED_CREDENTIAL_RE`: an optional auth scheme, then `${VAR}` references
/// (an empty `:-` allowed) joined only by whitespace, `:` and `-`.
fn templated_credential(value: &str) -> bool {
    let text = value.trim();
    let text = match text.split_once(|c: char| c.is_whitespace()) {
        Some((scheme, rest))
            if !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphabetic()) =>
        {
            rest.trim_start()
        }
        _ => text,
    };
    let mut rest = text;
    loop {
        let Some(after) = rest.strip_prefix("${") else {
            return false;
        };
        let Some((_, default, consumed)) = reference(after) else {
            return false;
        };
        if default.is_some_and(|d| !d.is_empty()) {
            return false;
        }
        let tail = &after[consumed..];
        rest = tail.trim_start_matches(|c: char| c.is_whitespace() || c == ':' || c == '-');
        if rest.is_empty() {
            // Only whitespace may follow the last reference.
            return tail.chars().all(char::is_whitespace);
        }
    }
}
