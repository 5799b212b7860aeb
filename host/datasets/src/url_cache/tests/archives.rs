//! Archives built for the tests, good and malicious.

use std::io::{self, Write as _};

/// A zip with `dir/`, `dir/data.txt` and the executable `dir/run.sh`.
pub(super) fn zip_bytes() -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.add_directory("dir/", options).unwrap();
    zip.start_file("dir/data.txt", options.unix_permissions(0o644))
        .unwrap();
    zip.write_all(b"some data\n").unwrap();
    zip.start_file("dir/run.sh", options.unix_permissions(0o755))
        .unwrap();
    zip.write_all(b"#!/bin/sh\necho hi\n").unwrap();
    zip.finish().unwrap().into_inner()
}

/// A tar.gz of `(path, mode, bytes)`, `None` bytes for a directory.
pub(super) fn tar_gz_bytes(members: &[(&str, u32, Option<&[u8]>)]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    for (path, mode, bytes) in members {
        let mut header = tar::Header::new_gnu();
        header.set_mode(*mode);
        match bytes {
            Some(bytes) => {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_size(bytes.len() as u64);
                tar.append_data(&mut header, path, *bytes).unwrap();
            }
            None => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_size(0);
                tar.append_data(&mut header, path, io::empty()).unwrap();
            }
        }
    }
    tar.into_inner().unwrap().finish().unwrap()
}

/// A tar.gz whose one member's raw name is `name` (the builder refuses `..`), a file or
/// a symbolic link to `link`.
pub(super) fn raw_tar_gz(name: &[u8], link: Option<&str>) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    let mut header = tar::Header::new_old();
    header.as_old_mut().name[..name.len()].copy_from_slice(name);
    header.set_mode(0o644);
    match link {
        Some(target) => {
            header.set_entry_type(tar::EntryType::Symlink);
            header.set_link_name(target).unwrap();
            header.set_size(0);
            header.set_cksum();
            tar.append(&header, io::empty()).unwrap();
        }
        None => {
            header.set_entry_type(tar::EntryType::Regular);
            header.set_size(4);
            header.set_cksum();
            tar.append(&header, &b"evil"[..]).unwrap();
        }
    }
    tar.into_inner().unwrap().finish().unwrap()
}
