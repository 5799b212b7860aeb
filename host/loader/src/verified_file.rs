//! TOCTOU-safe hashing: open the library once, check and hash it through that file descriptor,
//! and let the loader `dlopen("/proc/self/fd/N")` so the bytes hashed are the bytes loaded.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::digest_cache::{DigestCache, FileStamp};
use crate::manifest::collapse_whitespace;
use crate::regular::{open_regular, OpenError};
use crate::trust::{check_owner_and_mode, current_euid, TrustError};

/// The ELF magic number.
const ELF_MAGIC: &[u8; 4] = b"\x7fELF";
/// Size of an ELF64 header; anything shorter cannot be a loadable shared object.
const ELF64_HEADER_LEN: usize = 64;
/// `e_type` of a shared object (`ET_DYN`).
const ET_DYN: u16 = 3;
/// Hashing buffer size.
const CHUNK: usize = 64 * 1024;

/// Why a plugin library failed the checks done on its open file. One line each, naming the path.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The library could not be opened.
    #[error("cannot open plugin library {}: {message}", .path.display())]
    Open {
        /// The library.
        path: PathBuf,
        /// The OS error, one line.
        message: String,
    },
    /// The path is a symlink (it should have been resolved by the directory listing).
    #[error(
        "plugin library {} is a symlink, expected the resolved file; load the path returned by list_plugin_files",
        .path.display()
    )]
    Symlink {
        /// The library.
        path: PathBuf,
    },
    /// Reading or seeking the open file failed.
    #[error("cannot read plugin library {}: {message}", .path.display())]
    Read {
        /// The library.
        path: PathBuf,
        /// The OS error, one line.
        message: String,
    },
    /// The library is not a regular file (it is not opened then).
    #[error(
        "plugin library {} is a {found}, expected a regular file; replace it with the built .so",
        .path.display()
    )]
    NotRegularFile {
        /// The library.
        path: PathBuf,
        /// What was found.
        found: &'static str,
    },
    /// The file opened is not the one checked just before (the path was replaced).
    #[error(
        "plugin library {} was replaced while it was being opened, expected the file checked; retry once nothing writes the plugin directory",
        .path.display()
    )]
    Replaced {
        /// The library.
        path: PathBuf,
    },
    /// The opened file's owner or mode is not trusted.
    #[error(transparent)]
    Untrusted(#[from] TrustError),
    /// The file does not start with the ELF magic.
    #[error(
        "{} is not an ELF shared object (starts with \"{found}\", expected \"\\x7fELF\"); rebuild the plugin as a cdylib for this platform",
        .path.display()
    )]
    NotElf {
        /// The library.
        path: PathBuf,
        /// The first bytes, escaped.
        found: String,
    },
    /// The file is shorter than an ELF header.
    #[error(
        "{} is truncated ({len} bytes), expected at least an ELF header ({ELF64_HEADER_LEN} bytes); rebuild or re-copy the plugin",
        .path.display()
    )]
    Truncated {
        /// The library.
        path: PathBuf,
        /// The file length read.
        len: usize,
    },
    /// The file is ELF but not a shared object (e.g. an executable or object file).
    #[error(
        "{} is an ELF file but not a shared object (ELF type {e_type}, expected {ET_DYN}); build the plugin with crate-type = [\"cdylib\"]",
        .path.display()
    )]
    NotSharedObject {
        /// The library.
        path: PathBuf,
        /// The `e_type` found.
        e_type: u16,
    },
    /// The ELF structure cannot be loaded safely (truncated, another platform).
    #[error("{} cannot be loaded: {reason}", .path.display())]
    BadLayout {
        /// The library.
        path: PathBuf,
        /// Why (one line, with the fix).
        reason: String,
    },
    /// The library's hash differs from the one in its manifest.
    #[error(
        "plugin library {} has sha256 {actual} but its manifest {} says {expected}; repackage it with `agentcompass-host plugin package` or reinstall the plugin",
        .path.display(), .manifest.display()
    )]
    HashMismatch {
        /// The library.
        path: PathBuf,
        /// The manifest.
        manifest: PathBuf,
        /// The sha256 the manifest declares.
        expected: String,
        /// The sha256 of the opened file.
        actual: String,
    },
}

/// A plugin library opened once, checked and hashed through that one file descriptor.
///
/// Keep it alive until the library is loaded: the loader `dlopen`s [`VerifiedLibrary::proc_fd_path`]
/// so it loads exactly the bytes that were hashed, even if the path is replaced in between.
#[derive(Debug)]
pub struct VerifiedLibrary {
    file: File,
    sha256: String,
    path: PathBuf,
}

impl VerifiedLibrary {
    /// Opens `path` (already symlink-resolved) read-only if it is a regular file, never
    /// anything else (`crate::regular`: `lstat`, then `O_NOFOLLOW | O_NONBLOCK`, then the
    /// same inode), and, on the open descriptor: checks it is owned by root or the current user and not
    /// group/world-writable, checks the ELF header (magic, length, shared-object type), and
    /// hashes the whole file with SHA-256.
    pub fn open(path: &Path) -> Result<Self, VerifyError> {
        Self::open_for(path, None, None)
    }

    /// [`VerifiedLibrary::open`], taking the digest from `cache` when the open descriptor's
    /// stamp (device, inode, size, times) is recorded there, and recording it otherwise
    /// (`crate::digest_cache`). Every other check runs as without a cache.
    pub fn open_cached(path: &Path, cache: Option<&DigestCache>) -> Result<Self, VerifyError> {
        Self::open_for(path, None, cache)
    }

    /// [`VerifiedLibrary::open_cached`] with the current uid passed in (testable).
    fn open_for(
        path: &Path,
        current_uid: Option<u32>,
        cache: Option<&DigestCache>,
    ) -> Result<Self, VerifyError> {
        let (mut file, meta) = open_regular(path).map_err(|err| match err {
            OpenError::Io(err) => VerifyError::Open {
                path: path.to_path_buf(),
                message: collapse_whitespace(&err.to_string()),
            },
            OpenError::Symlink => VerifyError::Symlink {
                path: path.to_path_buf(),
            },
            OpenError::NotRegular(found) => VerifyError::NotRegularFile {
                path: path.to_path_buf(),
                found,
            },
            OpenError::Replaced => VerifyError::Replaced {
                path: path.to_path_buf(),
            },
        })?;
        let read_err = |err: std::io::Error| VerifyError::Read {
            path: path.to_path_buf(),
            message: collapse_whitespace(&err.to_string()),
        };
        let current_uid = match current_uid {
            Some(uid) => uid,
            None => current_euid()?,
        };
        check_owner_and_mode(&meta, path, path, false, current_uid)?;
        check_elf_header(&mut file, path)?;
        super::elf::check_layout(&file, meta.len()).map_err(|reason| VerifyError::BadLayout {
            path: path.to_path_buf(),
            reason,
        })?;
        let stamp = FileStamp::of(&meta);
        let sha256 = match cache.and_then(|c| c.lookup(&stamp)) {
            Some(sha256) => sha256,
            None => {
                file.seek(SeekFrom::Start(0)).map_err(read_err)?;
                let sha256 = hash_reader(&mut file).map_err(read_err)?;
                if let Some(cache) = cache {
                    let after = file.metadata().map_err(read_err)?;
                    cache.record(stamp, FileStamp::of(&after), &sha256);
                }
                sha256
            }
        };
        Ok(VerifiedLibrary {
            file,
            sha256,
            path: path.to_path_buf(),
        })
    }

    /// SHA-256 of the opened file, 64 lowercase hex digits.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// `/proc/self/fd/<fd>`: the path to `dlopen` so the hashed file is the loaded file.
    pub fn proc_fd_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.file.as_raw_fd()))
    }

    /// Keeps the descriptor open for the rest of the process and returns the path to
    /// `dlopen`. glibc identifies already-loaded libraries by the name they were opened with,
    /// so a `/proc/self/fd/N` name must never be reused for another file: the descriptor of
    /// every library handed to `dlopen` stays open (libraries are never unloaded either).
    pub fn into_dlopen_path(self) -> PathBuf {
        let path = self.proc_fd_path();
        let _fd = std::os::fd::IntoRawFd::into_raw_fd(self.file);
        path
    }

    /// The path the library was opened from (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open file.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Checks the hash against the one declared in the manifest at `manifest`.
    pub fn check_sha256(&self, expected: &str, manifest: &Path) -> Result<(), VerifyError> {
        if self.sha256 == expected {
            Ok(())
        } else {
            Err(VerifyError::HashMismatch {
                path: self.path.clone(),
                manifest: manifest.to_path_buf(),
                expected: expected.to_string(),
                actual: self.sha256.clone(),
            })
        }
    }
}

/// Reads the start of the file and checks ELF magic, header length and `e_type == ET_DYN`.
fn check_elf_header(file: &mut File, path: &Path) -> Result<(), VerifyError> {
    let mut header = [0u8; ELF64_HEADER_LEN];
    let mut len = 0;
    while len < header.len() {
        match file.read(&mut header[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => {
                return Err(VerifyError::Read {
                    path: path.to_path_buf(),
                    message: collapse_whitespace(&err.to_string()),
                })
            }
        }
    }
    let magic_len = len.min(ELF_MAGIC.len());
    if header[..magic_len] != ELF_MAGIC[..magic_len] {
        return Err(VerifyError::NotElf {
            path: path.to_path_buf(),
            found: header[..magic_len].escape_ascii().to_string(),
        });
    }
    if len < ELF64_HEADER_LEN {
        return Err(VerifyError::Truncated {
            path: path.to_path_buf(),
            len,
        });
    }
    // EI_DATA (byte 5): 1 = little endian, 2 = big endian; e_type is the u16 at offset 16.
    let e_type_bytes = [header[16], header[17]];
    let e_type = if header[5] == 2 {
        u16::from_be_bytes(e_type_bytes)
    } else {
        u16::from_le_bytes(e_type_bytes)
    };
    if e_type != ET_DYN {
        return Err(VerifyError::NotSharedObject {
            path: path.to_path_buf(),
            e_type,
        });
    }
    Ok(())
}

/// Streams `reader` through SHA-256 in 64 KiB chunks; returns lowercase hex.
fn hash_reader(reader: &mut impl Read) -> Result<String, std::io::Error> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(format!("{:x}", hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    /// A minimal little-endian ELF64 header with the given `e_type`, padded to `len` bytes.
    fn elf(e_type: u16, len: usize) -> Vec<u8> {
        let mut bytes = vec![0u8; len.max(ELF64_HEADER_LEN)];
        bytes[..4].copy_from_slice(ELF_MAGIC);
        bytes[4] = 2; // ELFCLASS64
        bytes[5] = 1; // little endian
        bytes[6] = 1; // EV_CURRENT
        bytes[16..18].copy_from_slice(&e_type.to_le_bytes());
        bytes[18..20].copy_from_slice(&super::super::elf::HOST_MACHINE.to_le_bytes());
        bytes[54..56].copy_from_slice(&56u16.to_le_bytes()); // e_phentsize, no program headers
        for (i, b) in bytes.iter_mut().enumerate().skip(ELF64_HEADER_LEN) {
            *b = (i % 251) as u8;
        }
        bytes
    }

    fn write(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    fn sha256_file(path: &Path) -> Result<String, std::io::Error> {
        hash_reader(&mut File::open(path)?)
    }

    #[test]
    fn hashes_from_the_open_fd() {
        let tmp = tempfile::tempdir().unwrap();
        // Larger than one chunk so streaming is exercised.
        let bytes = elf(ET_DYN, 3 * CHUNK + 17);
        let path = write(tmp.path(), "a.so", &bytes, 0o644);
        let lib = VerifiedLibrary::open(&path).unwrap();
        let expected = format!("{:x}", Sha256::digest(&bytes));
        assert_eq!(lib.sha256(), expected);
        assert_eq!(sha256_file(&path).unwrap(), expected);
        assert_eq!(lib.path(), path);
        lib.check_sha256(&expected, Path::new("/d/a.plugin.toml"))
            .unwrap();

        // The fd path refers to the same inode even after the path is replaced.
        let fd_path = lib.proc_fd_path();
        assert!(fd_path.starts_with("/proc/self/fd/"));
        std::fs::remove_file(&path).unwrap();
        write(tmp.path(), "a.so", &elf(ET_DYN, 100), 0o644);
        assert_eq!(sha256_file(&fd_path).unwrap(), expected);
        assert_eq!(
            std::fs::metadata(&fd_path).unwrap().ino(),
            lib.file().metadata().unwrap().ino()
        );
    }

    #[test]
    fn a_cached_digest_stands_for_the_hash_until_the_file_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let path = write(tmp.path(), "a.so", &elf(ET_DYN, 2 * CHUNK), 0o644);
        let real = VerifiedLibrary::open(&path).unwrap().sha256().to_string();
        // A cache naming another digest for exactly this file's stamp: a hit is not hashed.
        let cache_path = tmp.path().join("digests");
        let stamp = FileStamp::of(&std::fs::metadata(&path).unwrap());
        let line = stamp.to_line(&"e".repeat(64));
        std::fs::write(
            &cache_path,
            format!("agentcompass plugin digests v1\n{line}\n"),
        )
        .unwrap();
        std::fs::set_permissions(&cache_path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let cache = DigestCache::open(cache_path.clone());
        let lib = VerifiedLibrary::open_cached(&path, Some(&cache)).unwrap();
        assert_eq!(lib.sha256(), "e".repeat(64));
        drop(lib);
        // Any write gives the file a new stamp (status-change time, size): hashed again.
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[100] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let lib = VerifiedLibrary::open_cached(&path, Some(&cache)).unwrap();
        assert_eq!(lib.sha256(), format!("{:x}", Sha256::digest(&bytes)));
        assert_ne!(lib.sha256(), real);
        // So is a chmod (the mode is not in the key, but the status-change time is).
        let before = FileStamp::of(&std::fs::metadata(&path).unwrap());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_ne!(before, FileStamp::of(&std::fs::metadata(&path).unwrap()));
        // The checks other than the hash still run on a hit.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let err = VerifiedLibrary::open_cached(&path, Some(&cache)).unwrap_err();
        assert!(matches!(err, VerifyError::Untrusted(_)), "{err}");
    }

    #[test]
    fn known_hash_of_empty_input() {
        let tmp = tempfile::tempdir().unwrap();
        let path = write(tmp.path(), "empty", b"", 0o644);
        assert_eq!(
            sha256_file(&path).unwrap(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert!(sha256_file(&tmp.path().join("missing")).is_err());
    }

    #[test]
    fn hash_mismatch_names_both_files() {
        let tmp = tempfile::tempdir().unwrap();
        let path = write(tmp.path(), "a.so", &elf(ET_DYN, 64), 0o644);
        let lib = VerifiedLibrary::open(&path).unwrap();
        let err = lib
            .check_sha256(&"0".repeat(64), Path::new("/d/a.plugin.toml"))
            .unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, VerifyError::HashMismatch { .. }), "{msg}");
        assert!(
            msg.contains(lib.sha256()) && msg.contains("/d/a.plugin.toml"),
            "{msg}"
        );
    }

    #[test]
    fn refuses_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        let real = write(tmp.path(), "real.so", &elf(ET_DYN, 64), 0o644);
        let link = tmp.path().join("link.so");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let err = VerifiedLibrary::open(&link).unwrap_err();
        assert!(matches!(err, VerifyError::Symlink { .. }), "{err}");
    }

    #[test]
    fn refuses_missing_and_non_regular() {
        let tmp = tempfile::tempdir().unwrap();
        let err = VerifiedLibrary::open(&tmp.path().join("missing.so")).unwrap_err();
        assert!(matches!(err, VerifyError::Open { .. }), "{err}");
        let err = VerifiedLibrary::open(tmp.path()).unwrap_err();
        assert!(
            matches!(
                err,
                VerifyError::NotRegularFile {
                    found: "directory",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn refuses_untrusted_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = write(tmp.path(), "a.so", &elf(ET_DYN, 64), 0o664);
        let err = VerifiedLibrary::open(&path).unwrap_err();
        assert!(
            matches!(
                err,
                VerifyError::Untrusted(TrustError::Writable { mode: 0o664, .. })
            ),
            "{err}"
        );
        assert!(err.to_string().contains("chmod go-w"), "{err}");

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let mut owner = std::fs::metadata(&path).unwrap().uid();
        if owner == 0 {
            // Running as root (always an allowed owner): hand the file to another uid.
            std::os::unix::fs::chown(&path, Some(1001), None).unwrap();
            owner = 1001;
        }
        let err = VerifiedLibrary::open_for(&path, Some(owner + 1), None).unwrap_err();
        assert!(
            matches!(&err, VerifyError::Untrusted(TrustError::BadOwner { uid, .. }) if *uid == owner),
            "{err}"
        );
        VerifiedLibrary::open_for(&path, Some(owner), None).unwrap();
    }

    #[test]
    fn refuses_non_elf() {
        let tmp = tempfile::tempdir().unwrap();
        let path = write(tmp.path(), "a.so", b"#!/bin/sh\necho hi\n", 0o644);
        let err = VerifiedLibrary::open(&path).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{} is not an ELF shared object (starts with \"#!/b\", expected \"\\x7fELF\"); rebuild the plugin as a cdylib for this platform",
                path.display()
            )
        );
        let path = write(tmp.path(), "b.so", b"Z", 0o644);
        assert!(matches!(
            VerifiedLibrary::open(&path),
            Err(VerifyError::NotElf { .. })
        ));
    }

    #[test]
    fn refuses_truncated() {
        let tmp = tempfile::tempdir().unwrap();
        for (name, bytes) in [
            ("empty.so", Vec::new()),
            ("magic.so", ELF_MAGIC.to_vec()),
            ("partial.so", b"\x7fE".to_vec()),
            ("short.so", elf(ET_DYN, 64)[..40].to_vec()),
        ] {
            let path = write(tmp.path(), name, &bytes, 0o644);
            let err = VerifiedLibrary::open(&path).unwrap_err();
            assert!(
                matches!(err, VerifyError::Truncated { len, .. } if len == bytes.len()),
                "{name}: {err}"
            );
            assert!(err
                .to_string()
                .contains(&format!("is truncated ({} bytes)", bytes.len())));
        }
    }

    #[test]
    fn refuses_elf_executable() {
        let tmp = tempfile::tempdir().unwrap();
        let path = write(tmp.path(), "a.so", &elf(2, 128), 0o644);
        let err = VerifiedLibrary::open(&path).unwrap_err();
        assert!(
            matches!(err, VerifyError::NotSharedObject { e_type: 2, .. }),
            "{err}"
        );
    }

    #[test]
    fn accepts_a_real_shared_object() {
        // The libc this test process runs on: always there, wherever it is installed.
        let path = std::fs::canonicalize(crate::elf::loaded_libc()).unwrap();
        let lib = VerifiedLibrary::open(&path).unwrap();
        assert_eq!(lib.sha256(), sha256_file(&path).unwrap());
    }
}
