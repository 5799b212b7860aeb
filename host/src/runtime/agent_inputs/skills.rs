//! The run's skills (`--skill`): each source resolved to host directories holding `SKILL.md`
//! (Harbor's `resolve_skills`), git sources fetched into the dataset cache pinned to a
//! commit, and each skill's digest (Harbor's `compute_skill_digest`) for provenance.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentcompass_datasets::{TaskCache, TaskSource};
use serde::Serialize;
use sha2::{Digest, Sha256};

/// Why a `--skill` source gives no skills.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    /// A path is neither a skill directory nor a root of them.
    #[error(
        "expected a skill directory (holding SKILL.md) or a root of skill directories, found {0}"
    )]
    NotSkills(String),
    /// A file or directory could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// What was read.
        path: String,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// A git source without a cache to fetch it into.
    #[error("a git source needs the dataset cache")]
    NoCache,
    /// The git source could not be fetched.
    #[error("{0}")]
    Fetch(String),
}

/// A `--skill` source and why it failed.
#[derive(Debug, thiserror::Error)]
#[error("--skill {source_text}: {error}")]
pub struct SourceError {
    /// The source as given.
    pub source_text: String,
    /// Why.
    pub error: SkillError,
}

fn read_error(path: &Path) -> impl FnOnce(std::io::Error) -> SkillError + '_ {
    move |source| SkillError::Read {
        path: path.display().to_string(),
        source,
    }
}

/// One skill of the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skill {
    /// Its name (the directory's name).
    pub name: String,
    /// The directory on the host.
    #[serde(skip)]
    pub dir: PathBuf,
    /// The source as given.
    pub source: String,
    /// `sha256:` over its files (relative path and content digest, sorted).
    pub digest: String,
    /// The repository (credentials removed) and commit of a git source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub git_url: Option<String>,
    /// The commit of a git source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub git_commit: Option<String>,
}

/// A git source: the repository, the ref and the directory in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GitSkills {
    pub(crate) url: String,
    pub(crate) reference: Option<String>,
    pub(crate) subdir: String,
}

/// Reads a git source as Harbor does: `org/name[@ref]` (GitHub), `URL[@ref]`, or
/// `URL/tree/REF/DIR`; the directory defaults to `skills`.
pub(crate) fn git_source(source: &str) -> GitSkills {
    if let Some((repo, rest)) = source.split_once("/tree/") {
        let (reference, subdir) = rest.split_once('/').unwrap_or((rest, "skills"));
        return GitSkills {
            url: repo.to_string(),
            reference: Some(reference.to_string()),
            subdir: subdir.trim_matches('/').to_string(),
        };
    }
    // A `@` after the last `/` is a ref (`user@host` of an URL comes before it).
    let (repo, reference) = match source.rsplit_once('@') {
        Some((repo, reference)) if !reference.contains('/') && !reference.is_empty() => {
            (repo, Some(reference.to_string()))
        }
        _ => (source, None),
    };
    let url = if repo.contains("://") {
        repo.to_string()
    } else {
        format!("https://github.com/{repo}")
    };
    GitSkills {
        url,
        reference,
        subdir: "skills".into(),
    }
}

/// Resolves every source in order (a later skill of the same name replaces an earlier one),
/// sorted by name.
pub fn resolve(sources: &[String], cache: Option<&TaskCache>) -> Result<Vec<Skill>, SourceError> {
    let mut by_name: BTreeMap<String, Skill> = BTreeMap::new();
    for source in sources {
        let failed = |error: SkillError| SourceError {
            source_text: source.clone(),
            error,
        };
        let path = Path::new(source);
        let (dir, git) = if path.is_absolute() && path.exists() {
            (path.to_path_buf(), None)
        } else {
            let cache = cache.ok_or_else(|| failed(SkillError::NoCache))?;
            let git = git_source(source);
            let fetched = cache
                .get(&TaskSource {
                    name: format!("skills {source}"),
                    git_url: git.url.clone(),
                    commit: git.reference.clone(),
                    path: git.subdir.clone(),
                })
                .map_err(|e| failed(SkillError::Fetch(e.to_string())))?;
            (fetched.dir.clone(), Some((fetched.git_url, fetched.commit)))
        };
        for skill_dir in skill_dirs(&dir).map_err(failed)? {
            let name = skill_dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let digest = digest(&skill_dir).map_err(failed)?;
            let skill = Skill {
                name: name.clone(),
                dir: skill_dir,
                source: source.clone(),
                digest,
                git_url: git.as_ref().map(|(url, _)| url.clone()),
                git_commit: git.as_ref().map(|(_, commit)| commit.clone()),
            };
            by_name.insert(name, skill);
        }
    }
    Ok(by_name.into_values().collect())
}

/// A skill directory (holding `SKILL.md`) as itself, or a root whose every visible child
/// directory holds one.
fn skill_dirs(dir: &Path) -> Result<Vec<PathBuf>, SkillError> {
    if dir.join("SKILL.md").is_file() {
        return Ok(vec![dir.to_path_buf()]);
    }
    let entries = std::fs::read_dir(dir).map_err(read_error(dir))?;
    let mut children = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if path.is_dir() && !hidden {
            if !path.join("SKILL.md").is_file() {
                return Err(SkillError::NotSkills(format!(
                    "{} without SKILL.md",
                    path.display()
                )));
            }
            children.push(path);
        }
    }
    if children.is_empty() {
        return Err(SkillError::NotSkills(format!(
            "neither at {}",
            dir.display()
        )));
    }
    children.sort();
    Ok(children)
}

/// Harbor's `compute_skill_digest`: `sha256:` of, for each file sorted by relative path, the
/// path, a NUL, the hex digest of its bytes, a NUL.
fn digest(dir: &Path) -> Result<String, SkillError> {
    let mut files = Vec::new();
    collect_files(dir, dir, &mut files)?;
    files.sort();
    let mut outer = Sha256::new();
    for relative in files {
        let path = dir.join(&relative);
        let bytes = std::fs::read(&path).map_err(read_error(&path))?;
        outer.update(relative.as_bytes());
        outer.update([0]);
        outer.update(hex::encode(Sha256::digest(&bytes)).as_bytes());
        outer.update([0]);
    }
    Ok(format!("sha256:{}", hex::encode(outer.finalize())))
}

fn collect_files(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), SkillError> {
    let entries = std::fs::read_dir(dir).map_err(read_error(dir))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_files(root, &path, out)?;
        } else if let Ok(relative) = path.strip_prefix(root) {
            out.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(root: &Path, name: &str, body: &str) -> PathBuf {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("SKILL.md"), body).unwrap();
        dir
    }

    #[test]
    fn a_skill_dir_and_a_root_resolve_sorted_with_the_last_winning() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        skill(&root, "zeta", "---\nname: zeta\n---\n");
        skill(&root, "alpha", "a");
        let single = skill(tmp.path(), "alpha", "b");
        let sources = [root.display().to_string(), single.display().to_string()];
        let skills = resolve(&sources, None).unwrap();
        let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["alpha", "zeta"]);
        assert_eq!(skills[0].dir, single, "the later source wins");
        assert!(skills[0].digest.starts_with("sha256:"));
    }

    #[test]
    fn a_root_with_a_child_lacking_skill_md_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        skill(tmp.path(), "ok", "x");
        std::fs::create_dir(tmp.path().join("not-a-skill")).unwrap();
        let err = resolve(&[tmp.path().display().to_string()], None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not-a-skill without SKILL.md"), "{err}");
    }

    #[test]
    fn the_digest_is_harbors() {
        // sha256("SKILL.md\0" + sha256_hex("hi") + "\0"), as Harbor's compute_skill_digest.
        let tmp = tempfile::tempdir().unwrap();
        let dir = skill(tmp.path(), "s", "hi");
        let inner = hex::encode(Sha256::digest(b"hi"));
        let expected = Sha256::digest(format!("SKILL.md\0{inner}\0").as_bytes());
        assert_eq!(
            digest(&dir).unwrap(),
            format!("sha256:{}", hex::encode(expected))
        );
    }

    #[test]
    fn git_sources_read_as_harbor_reads_them() {
        assert_eq!(
            git_source("org/name@v1"),
            GitSkills {
                url: "https://github.com/org/name".into(),
                reference: Some("v1".into()),
                subdir: "skills".into()
            }
        );
        let tree = git_source("https://git.example/org/name/tree/main/agent/skills");
        assert_eq!(tree.url, "https://git.example/org/name");
        assert_eq!(tree.reference.as_deref(), Some("main"));
        assert_eq!(tree.subdir, "agent/skills");
        let file = git_source("file:///srv/repos/skills.git@abc123");
        assert_eq!(file.url, "file:///srv/repos/skills.git");
        assert_eq!(file.reference.as_deref(), Some("abc123"));
    }
}
