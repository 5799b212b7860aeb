//! Structural checks of an ELF shared object, run before dlopen.
//!
//! glibc maps every loadable segment straight from the file; a segment that extends past the
//! end of a truncated file is mapped anyway and the first touch kills the process with
//! SIGBUS. So the file's class, byte order and machine must be this host's, and the program
//! header table, every segment's file range and the section header table must lie inside
//! the file.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// `EM_*` machine number of the platform the host was built for.
pub(crate) const HOST_MACHINE: u16 = if cfg!(target_arch = "x86_64") {
    62
} else if cfg!(target_arch = "aarch64") {
    183
} else if cfg!(target_arch = "riscv64") {
    243
} else {
    0
};
const ELFCLASS64: u8 = 2;
const ELFDATA2LSB: u8 = 1;
const PHDR_LEN: u64 = 56;

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut raw = [0u8; 8];
    raw.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(raw)
}

fn within(offset: u64, size: u64, len: u64) -> bool {
    offset.checked_add(size).is_some_and(|end| end <= len)
}

/// Checks the layout of the 64-bit little-endian shared object behind `file` (`len` bytes);
/// returns why it cannot be loaded safely.
pub fn check_layout(file: &File, len: u64) -> Result<(), String> {
    let mut header = [0u8; 64];
    file.read_exact_at(&mut header, 0)
        .map_err(|e| format!("cannot read the ELF header: {e}"))?;
    if header[4] != ELFCLASS64 || header[5] != ELFDATA2LSB {
        return Err("it is not a 64-bit little-endian ELF file; build it for this platform".into());
    }
    let machine = u16_at(&header, 18);
    if machine != HOST_MACHINE {
        return Err(format!(
            "it is built for ELF machine {machine}, this host is {HOST_MACHINE} ({}); build it \
             for this platform",
            std::env::consts::ARCH
        ));
    }
    let (phoff, phentsize, phnum) = (
        u64_at(&header, 32),
        u64::from(u16_at(&header, 54)),
        u64::from(u16_at(&header, 56)),
    );
    if phentsize != PHDR_LEN || !within(phoff, phnum * PHDR_LEN, len) {
        return Err(truncated(len));
    }
    let (shoff, shentsize, shnum) = (
        u64_at(&header, 40),
        u64::from(u16_at(&header, 58)),
        u64::from(u16_at(&header, 60)),
    );
    if shoff != 0 && !within(shoff, shentsize * shnum, len) {
        return Err(truncated(len));
    }
    let mut table = vec![0u8; (phnum * PHDR_LEN) as usize];
    file.read_exact_at(&mut table, phoff)
        .map_err(|e| format!("cannot read the program headers: {e}"))?;
    for entry in table.chunks_exact(PHDR_LEN as usize) {
        let (offset, filesz) = (u64_at(entry, 8), u64_at(entry, 32));
        if !within(offset, filesz, len) {
            return Err(truncated(len));
        }
    }
    Ok(())
}

fn truncated(len: u64) -> String {
    format!(
        "it is truncated or corrupt: its headers reach past the end of the file ({len} bytes); \
         rebuild or re-copy the plugin"
    )
}

/// The path of the libc mapped into this process (from `/proc/self/maps`); every
/// dynamically linked test process has one, so tests never skip for want of a library.
#[cfg(test)]
pub(crate) fn loaded_libc() -> std::path::PathBuf {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .find(|path| {
            std::path::Path::new(path)
                .file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with("libc.so"))
        })
        .map(std::path::PathBuf::from)
        .expect("this test process maps a libc")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn own_library() -> Vec<u8> {
        // Any shared object of this platform will do: take the libc this process runs on.
        std::fs::read(loaded_libc()).unwrap()
    }

    fn check(bytes: &[u8]) -> Result<(), String> {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        check_layout(&file, bytes.len() as u64)
    }

    #[test]
    fn accepts_a_real_shared_object_and_refuses_truncations() {
        let bytes = own_library();
        assert_eq!(check(&bytes), Ok(()));
        for cut in [64, 4096, bytes.len() / 2, bytes.len() - 1] {
            let err = check(&bytes[..cut]).unwrap_err();
            assert!(
                err.contains("truncated") || err.contains("cannot read"),
                "{cut}: {err}"
            );
        }
    }

    #[test]
    fn refuses_another_machine() {
        let mut bytes = own_library();
        bytes[18] = 0x28; // EM_ARM
        bytes[19] = 0;
        assert!(check(&bytes).unwrap_err().contains("ELF machine 40"));
    }
}
