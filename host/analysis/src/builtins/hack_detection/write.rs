//! One write the rules found: a path, what wrote it and how.

/// How a write changes its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Created or changed.
    Modify,
    /// Deleted or moved away.
    Delete,
    /// Permissions or ownership changed.
    Permission,
}

/// One write to a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Write {
    /// The path (resolved against a known `cd`).
    pub path: String,
    /// What did it: `redirect`, `rm`, `sed -i`, `open()`, ...
    pub op: String,
    /// How.
    pub kind: Kind,
}

impl Write {
    /// A write of `path` by `op`.
    pub(crate) fn new(path: &str, op: impl Into<String>, kind: Kind) -> Write {
        Write {
            path: path.to_string(),
            op: op.into(),
            kind,
        }
    }
}
