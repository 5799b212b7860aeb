//! Safe resolution of request paths under the results root: a relative path of plain
//! components only (no `..`, `.`, absolute paths or NUL), canonicalized, which must still be
//! under the canonical root (a symlink leaving it is "not found").

use std::path::{Component, Path, PathBuf};

use crate::error::ViewerError;

/// The results directory the viewer serves.
#[derive(Debug, Clone)]
pub struct Root {
    given: String,
    canonical: PathBuf,
}

impl Root {
    /// The root at `dir` (which must exist and be a directory).
    pub fn new(dir: &Path) -> std::io::Result<Root> {
        let canonical = dir.canonicalize()?;
        if !canonical.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                format!("{} is not a directory", dir.display()),
            ));
        }
        Ok(Root {
            given: dir.display().to_string(),
            canonical,
        })
    }

    /// The root as the user gave it.
    pub fn given(&self) -> &str {
        &self.given
    }

    /// The canonical root.
    pub fn canonical(&self) -> &Path {
        &self.canonical
    }

    /// `rel` resolved under the root (see [`resolve_under`]).
    pub fn resolve(&self, rel: &str) -> Result<PathBuf, ViewerError> {
        resolve_under(&self.canonical, rel)
    }

    /// The path of `canonical` relative to the root, `/`-separated.
    pub fn relative(&self, canonical: &Path) -> String {
        canonical
            .strip_prefix(&self.canonical)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// Checks that `rel` is a relative path of plain components (at least one).
pub fn check_relative(rel: &str) -> Result<(), ViewerError> {
    let refused = || ViewerError::NotFound(format!("{rel:?} is not a path under the root"));
    if rel.is_empty() || rel.contains('\0') || rel.contains('\\') {
        return Err(refused());
    }
    let path = Path::new(rel);
    if path.is_absolute() {
        return Err(refused());
    }
    for part in rel.split('/') {
        if part == ".." || part == "." {
            return Err(refused());
        }
    }
    if !path.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(refused());
    }
    Ok(())
}

/// `rel` joined to `base` (a canonical directory) and canonicalized; it must exist and stay
/// under `base`. Anything else is [`ViewerError::NotFound`].
pub fn resolve_under(base: &Path, rel: &str) -> Result<PathBuf, ViewerError> {
    check_relative(rel)?;
    let joined = base.join(rel);
    let canonical = joined
        .canonicalize()
        .map_err(|_| ViewerError::NotFound(format!("{rel:?} does not exist")))?;
    if !canonical.starts_with(base) {
        return Err(ViewerError::NotFound(format!(
            "{rel:?} is not a path under the root"
        )));
    }
    Ok(canonical)
}

/// Whether `name` is one plain path component (a directory entry name).
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn root() -> (tempfile::TempDir, Root) {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("results/ns/run")).unwrap();
        fs::write(dir.path().join("results/ns/run/run_info.json"), "{}").unwrap();
        fs::write(dir.path().join("secret.txt"), "secret").unwrap();
        let root = Root::new(&dir.path().join("results")).unwrap();
        (dir, root)
    }

    #[test]
    fn plain_paths_resolve() {
        let (_dir, root) = root();
        let run = root.resolve("ns/run").unwrap();
        assert!(run.ends_with("ns/run"));
        assert_eq!(root.relative(&run), "ns/run");
        assert!(root.resolve("ns/run/run_info.json").is_ok());
    }

    #[test]
    fn traversal_is_not_found() {
        let (_dir, root) = root();
        for rel in [
            "..",
            "../secret.txt",
            "ns/../../secret.txt",
            "ns/./run",
            "/etc/passwd",
            "ns/run\0",
            "",
            "ns\\..\\..",
            // Percent-decoding happens before resolution: `%2e%2e` arrives as `..`; the
            // undecoded text is a plain (missing) name.
            "%2e%2e/secret.txt",
        ] {
            let err = root.resolve(rel).unwrap_err();
            assert!(matches!(err, ViewerError::NotFound(_)), "{rel:?}: {err}");
        }
    }

    #[test]
    fn symlink_out_of_root_is_not_found() {
        let (dir, root) = root();
        std::os::unix::fs::symlink(
            dir.path().join("secret.txt"),
            dir.path().join("results/ns/out"),
        )
        .unwrap();
        std::os::unix::fs::symlink(dir.path(), dir.path().join("results/up")).unwrap();
        assert!(matches!(
            root.resolve("ns/out"),
            Err(ViewerError::NotFound(_))
        ));
        assert!(matches!(
            root.resolve("up/secret.txt"),
            Err(ViewerError::NotFound(_))
        ));
        // A link that stays inside is followed.
        std::os::unix::fs::symlink(
            dir.path().join("results/ns/run"),
            dir.path().join("results/in"),
        )
        .unwrap();
        assert!(root.resolve("in/run_info.json").is_ok());
    }

    #[test]
    fn plain_names() {
        assert!(is_plain_name("attempt-1"));
        for bad in ["", ".", "..", "a/b", "a\0"] {
            assert!(!is_plain_name(bad), "{bad:?}");
        }
    }
}
