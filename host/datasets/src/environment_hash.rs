//! A Harbor task environment's content digest, as Harbor 0.25 computes it
//! (`environments/definition.py:environment_content_hash`): the SHA-256 over the regular,
//! non-link files under the environment directory (any path with a component `.DS_Store`,
//! `.git` or `__pycache__` left out), sorted by relative POSIX path; per file the path's
//! length (4 bytes, big-endian), the path, the size (4 bytes big-endian, or 8 for every file
//! when one is 4 GiB or more, a single `0x01` byte then hashed first) and the content. The hex
//! digest is cut to 32 digits (an empty directory's is its name's). Identical environments in different tasks share it: the host's
//! build phase builds each once.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Path components Harbor leaves out.
const SKIPPED: [&str; 3] = [".DS_Store", ".git", "__pycache__"];

/// The regular files under `dir` (relative `/`-separated path, absolute path, size), sorted.
fn files(dir: &Path) -> io::Result<Vec<(String, PathBuf, u64)>> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in fs::read_dir(&current)? {
            let entry = entry?;
            let name = entry.file_name();
            if SKIPPED.iter().any(|s| name == *s) {
                continue;
            }
            let kind = entry.file_type()?;
            let path = entry.path();
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file() {
                let relative = path
                    .strip_prefix(dir)
                    .map(|r| r.to_string_lossy().replace('\\', "/"))
                    .unwrap_or_default();
                found.push((relative, path, entry.metadata()?.len()));
            }
        }
    }
    found.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    Ok(found)
}

/// The content digest of the environment directory `dir` (32 hex digits); an empty one's is
/// its name's (Harbor's, without a `docker_image`).
pub fn environment_hash(dir: &Path) -> io::Result<String> {
    let files = files(dir)?;
    let mut hasher = Sha256::new();
    if files.is_empty() {
        let name = dir.file_name().unwrap_or_default().to_string_lossy();
        hasher.update(name.as_bytes());
        return Ok(hex::encode(hasher.finalize())[..32].to_string());
    }
    let wide = files.iter().any(|(_, _, size)| *size >= 1 << 32);
    if wide {
        hasher.update([1u8]);
    }
    let mut buffer = vec![0u8; 64 * 1024];
    for (relative, path, size) in files {
        let bytes = relative.as_bytes();
        hasher.update((bytes.len() as u32).to_be_bytes());
        hasher.update(bytes);
        if wide {
            hasher.update(size.to_be_bytes());
        } else {
            hasher.update((size as u32).to_be_bytes());
        }
        let mut file = fs::File::open(&path)?;
        loop {
            let read = file.read(&mut buffer)?;
            if read == 0 {
                break;
            }
            hasher.update(&buffer[..read]);
        }
    }
    let digest = hex::encode(hasher.finalize());
    Ok(digest[..32].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_environments_share_a_digest_and_any_change_moves_it() {
        let work = tempfile::tempdir().unwrap();
        let make = |name: &str, marker: &str| {
            let dir = work.path().join(name);
            fs::create_dir_all(dir.join("tools/__pycache__")).unwrap();
            fs::write(dir.join("Dockerfile"), "FROM ubuntu:24.04\n").unwrap();
            fs::write(dir.join("tools/run.sh"), marker).unwrap();
            fs::write(dir.join("tools/__pycache__/x.pyc"), name).unwrap();
            dir
        };
        let a = environment_hash(&make("a", "one")).unwrap();
        assert_eq!(a.len(), 32);
        assert_eq!(a, environment_hash(&make("b", "one")).unwrap());
        assert_ne!(a, environment_hash(&make("c", "two")).unwrap());
    }
}
