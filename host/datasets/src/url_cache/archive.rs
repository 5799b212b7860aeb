//! Unpacking an archive safely, and the digest of an unpacked tree.
//!
//! Only regular files and directories are unpacked, at relative paths without `..`: an
//! absolute or escaping member and any link (symbolic or hard) or special file is refused,
//! naming the member, and nothing is kept. Since no link is ever made, no member can reach
//! outside the directory through one. A file keeps its executable bit (mode 0755, else
//! 0644); no other mode bit is kept.

use std::fs::{self, File};
use std::io::{self, BufReader, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use super::entry::hash_file;
use super::{io_error, ArchiveKind, UrlError};

/// Unpacks the `kind` archive at `archive` into `dest` (created); `url` is for messages.
pub(super) fn extract(
    kind: ArchiveKind,
    archive: &Path,
    dest: &Path,
    url: &str,
) -> Result<(), UrlError> {
    fs::create_dir_all(dest).map_err(io_error(dest))?;
    let file = File::open(archive).map_err(io_error(archive))?;
    let unpacker = Unpacker { kind, dest, url };
    match kind {
        ArchiveKind::Zip => unpacker.zip(BufReader::new(file)),
        ArchiveKind::TarGz => unpacker.tar_gz(BufReader::new(file)),
    }
}

/// One archive being unpacked.
struct Unpacker<'a> {
    kind: ArchiveKind,
    dest: &'a Path,
    url: &'a str,
}

impl Unpacker<'_> {
    fn zip(&self, input: BufReader<File>) -> Result<(), UrlError> {
        let mut zip = zip::ZipArchive::new(input).map_err(|e| self.unreadable(None, &e))?;
        for index in 0..zip.len() {
            let mut member = zip.by_index(index).map_err(|e| self.unreadable(None, &e))?;
            let name = member.name().to_string();
            if member.is_symlink() {
                return Err(self.refused(name.as_bytes(), "a symbolic link"));
            }
            let Some(rel) = self.relative(name.as_bytes())? else {
                continue;
            };
            if member.is_dir() {
                let dir = self.dest.join(rel);
                fs::create_dir_all(&dir).map_err(io_error(&dir))?;
            } else {
                let executable = member.unix_mode().is_some_and(|m| m & 0o111 != 0);
                self.file(&rel, name.as_bytes(), &mut member, executable)?;
            }
        }
        Ok(())
    }

    fn tar_gz(&self, input: BufReader<File>) -> Result<(), UrlError> {
        let mut tar = tar::Archive::new(flate2::read::MultiGzDecoder::new(input));
        let entries = tar.entries().map_err(|e| self.unreadable(None, &e))?;
        for entry in entries {
            let mut entry = entry.map_err(|e| self.unreadable(None, &e))?;
            let name = entry.path_bytes().into_owned();
            let kind = entry.header().entry_type();
            let executable = entry.header().mode().is_ok_and(|m| m & 0o111 != 0);
            match kind {
                tar::EntryType::Regular | tar::EntryType::Continuous => {
                    let Some(rel) = self.relative(&name)? else {
                        return Err(self.refused(&name, "a file without a name"));
                    };
                    self.file(&rel, &name, &mut entry, executable)?;
                }
                tar::EntryType::Directory => {
                    if let Some(rel) = self.relative(&name)? {
                        let dir = self.dest.join(rel);
                        fs::create_dir_all(&dir).map_err(io_error(&dir))?;
                    }
                }
                // A pax header for the whole archive (git archive writes one): no member.
                tar::EntryType::XGlobalHeader => {}
                tar::EntryType::Symlink => return Err(self.refused(&name, "a symbolic link")),
                tar::EntryType::Link => return Err(self.refused(&name, "a hard link")),
                other => {
                    return Err(self.refused(
                        &name,
                        &format!("a {other:?} entry (only regular files and directories)"),
                    ))
                }
            }
        }
        Ok(())
    }

    /// Writes the member `name` read from `input` at `rel` under the destination.
    fn file(
        &self,
        rel: &Path,
        name: &[u8],
        input: &mut impl Read,
        executable: bool,
    ) -> Result<(), UrlError> {
        let path = self.dest.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(io_error(parent))?;
        }
        let mut out = File::create(&path).map_err(io_error(&path))?;
        let mut buffer = vec![0; 1 << 16];
        loop {
            let n = input
                .read(&mut buffer)
                .map_err(|e| self.unreadable(Some(name), &e))?;
            if n == 0 {
                break;
            }
            out.write_all(&buffer[..n]).map_err(io_error(&path))?;
        }
        let mode = if executable { 0o755 } else { 0o644 };
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).map_err(io_error(&path))
    }

    /// The member's path, relative and normalised (`None`: the root itself, `./`); refused
    /// when absolute or with `..`.
    fn relative(&self, name: &[u8]) -> Result<Option<PathBuf>, UrlError> {
        let mut rel = PathBuf::new();
        for component in Path::new(std::ffi::OsStr::from_bytes(name)).components() {
            match component {
                Component::Normal(part) => rel.push(part),
                Component::CurDir => {}
                Component::RootDir | Component::Prefix(_) => {
                    return Err(self.refused(name, "an absolute path"))
                }
                Component::ParentDir => {
                    return Err(self.refused(name, "a path with `..` (outside the archive)"))
                }
            }
        }
        Ok((!rel.as_os_str().is_empty()).then_some(rel))
    }

    fn refused(&self, name: &[u8], what: &str) -> UrlError {
        UrlError::UnsafeMember {
            url: self.url.to_string(),
            member: escaped(name),
            reason: format!("it is {what}"),
        }
    }

    fn unreadable(&self, member: Option<&[u8]>, error: &dyn std::fmt::Display) -> UrlError {
        let error = error.to_string().escape_debug().to_string();
        UrlError::Archive {
            url: self.url.to_string(),
            kind: self.kind.name(),
            message: match member {
                Some(name) => format!("member `{}`: {error}", escaped(name)),
                None => error,
            },
        }
    }
}

/// A member's name for a one-line message.
fn escaped(name: &[u8]) -> String {
    String::from_utf8_lossy(name).escape_debug().to_string()
}

/// The digest of the tree at `dir`: the SHA-256 (lowercase hex) of one line a member,
/// in the byte order of the relative paths, `PATH\0d\n` for a directory, `PATH\0f\0MODE\0SHA256\n`
/// for a file (`MODE` 755 when executable, else 644) and `PATH\0?\n` for anything else
/// (never unpacked: its presence alters the digest).
pub(super) fn tree_digest(dir: &Path) -> io::Result<String> {
    let mut lines: Vec<(Vec<u8>, String)> = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(rel) = pending.pop() {
        for entry in fs::read_dir(dir.join(&rel))? {
            let entry = entry?;
            let child = rel.join(entry.file_name());
            // Not followed: a link is described, not entered.
            let meta = entry.metadata()?;
            let line = if meta.is_dir() {
                pending.push(child.clone());
                "d".to_string()
            } else if meta.is_file() {
                let (_, sha256) = hash_file(&entry.path())?;
                let mode = if meta.permissions().mode() & 0o111 != 0 {
                    "755"
                } else {
                    "644"
                };
                format!("f\0{mode}\0{sha256}")
            } else {
                "?".to_string()
            };
            lines.push((child.as_os_str().as_bytes().to_vec(), line));
        }
    }
    lines.sort();
    let mut hasher = Sha256::new();
    for (path, line) in &lines {
        hasher.update(path);
        hasher.update(b"\0");
        hasher.update(line.as_bytes());
        hasher.update(b"\n");
    }
    Ok(hex::encode(hasher.finalize()))
}
