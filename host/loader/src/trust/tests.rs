//! Tests of the trust checks.

use super::*;
use std::os::unix::fs::{symlink, PermissionsExt};

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A canonical temp dir with mode 0755.
fn trusted_tempdir() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap();
    chmod(&dir, 0o755);
    (tmp, dir)
}

fn touch(path: &Path) {
    std::fs::write(path, b"x").unwrap();
    chmod(path, 0o644);
}

fn is_root() -> bool {
    current_euid().unwrap() == 0
}

#[test]
fn canonical_dir_rejects_relative() {
    let err = canonical_plugin_dir(Path::new("plugins")).unwrap_err();
    assert!(matches!(err, TrustError::RelativeDir { .. }));
    assert!(err.to_string().contains("absolute path is needed"), "{err}");
}

#[test]
fn canonical_dir_rejects_missing_and_file() {
    let (_tmp, dir) = trusted_tempdir();
    let missing = dir.join("nope");
    let err = canonical_plugin_dir(&missing).unwrap_err();
    assert_eq!(err, TrustError::DirMissing { dir: missing });
    let file = dir.join("f");
    touch(&file);
    let err = canonical_plugin_dir(&file).unwrap_err();
    assert!(matches!(
        err,
        TrustError::NotADirectory {
            found: "regular file",
            ..
        }
    ));
    assert!(err.to_string().contains("is not a directory"), "{err}");
}

#[test]
fn canonical_dir_resolves_symlinks() {
    let (_tmp, dir) = trusted_tempdir();
    let real = dir.join("real");
    std::fs::create_dir(&real).unwrap();
    let link = dir.join("link");
    symlink(&real, &link).unwrap();
    assert_eq!(canonical_plugin_dir(&link).unwrap(), real);
}

#[test]
fn trusted_path_accepts_private_dir_under_sticky_tmp() {
    let (_tmp, dir) = trusted_tempdir();
    let file = dir.join("a.so");
    touch(&file);
    check_path_trusted(&dir).unwrap();
    check_path_trusted(&file).unwrap();
}

#[test]
fn trusted_path_rejects_world_writable_dir() {
    let (_tmp, dir) = trusted_tempdir();
    let plugins = dir.join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    chmod(&plugins, 0o777);
    let err = check_path_trusted(&plugins).unwrap_err();
    let msg = err.to_string();
    assert_eq!(
        msg,
        format!(
            "directory {p} is group/world-writable (mode 0777); fix with chmod go-w {p}",
            p = plugins.display()
        )
    );
}

#[test]
fn trusted_path_rejects_sticky_target_itself() {
    let (_tmp, dir) = trusted_tempdir();
    chmod(&dir, 0o1777);
    let err = check_path_trusted(&dir).unwrap_err();
    assert!(
        matches!(err, TrustError::Writable { mode: 0o1777, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("mode 1777"), "{err}");
}

#[test]
fn trusted_path_rejects_group_writable_ancestor() {
    let (_tmp, dir) = trusted_tempdir();
    let parent = dir.join("parent");
    let plugins = parent.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    chmod(&plugins, 0o755);
    chmod(&parent, 0o775);
    let err = check_path_trusted(&plugins).unwrap_err();
    assert_eq!(
        err,
        TrustError::Writable {
            target: plugins.clone(),
            kind: "directory",
            path: parent.clone(),
            mode: 0o775
        }
    );
    // A sticky ancestor not owned by root is still refused (only possible to set up as root).
    if is_root() {
        chmod(&parent, 0o1777);
        std::os::unix::fs::chown(&parent, Some(1001), None).unwrap();
        let err = check_path_trusted(&plugins).unwrap_err();
        assert!(
            matches!(err, TrustError::BadOwner { uid: 1001, .. }),
            "{err}"
        );
        std::os::unix::fs::chown(&parent, Some(0), None).unwrap();
        check_path_trusted(&plugins).unwrap();
    }
}

#[test]
fn trusted_path_rejects_world_writable_file() {
    let (_tmp, dir) = trusted_tempdir();
    let file = dir.join("a.so");
    touch(&file);
    chmod(&file, 0o646);
    let err = check_path_trusted(&file).unwrap_err();
    assert!(
        matches!(
            err,
            TrustError::Writable {
                kind: "file",
                mode: 0o646,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn owner_check_rejects_other_user() {
    let (_tmp, dir) = trusted_tempdir();
    let file = dir.join("a.so");
    touch(&file);
    let mut owner = std::fs::metadata(&file).unwrap().uid();
    if owner == 0 {
        // Running as root: hand the file to another uid.
        std::os::unix::fs::chown(&file, Some(1001), None).unwrap();
        owner = 1001;
    }
    let meta = std::fs::metadata(&file).unwrap();
    let err = check_owner_and_mode(&meta, &file, &file, false, owner + 1).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "file {p} is owned by uid {owner}, expected root or uid {c} (the current user); \
             fix with chown {c} {p} or move the plugins to a directory you own",
            p = file.display(),
            c = owner + 1
        )
    );
    check_owner_and_mode(&meta, &file, &file, false, owner).unwrap();
}

#[test]
fn owner_check_through_ancestors() {
    if !is_root() {
        return;
    }
    let (_tmp, dir) = trusted_tempdir();
    let plugins = dir.join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    std::os::unix::fs::chown(&dir, Some(1001), None).unwrap();
    let err = check_path_trusted(&plugins).unwrap_err();
    assert!(
        matches!(&err, TrustError::BadOwner { path, uid: 1001, kind: "directory", .. } if *path == dir),
        "{err}"
    );
    // The same tree is fine for uid 1001 itself.
    check_path_trusted_for(&plugins, 1001).unwrap();
}

#[test]
fn trusted_path_rejects_relative_dotdot_and_symlink() {
    let err = check_path_trusted(Path::new("rel/x.so")).unwrap_err();
    assert!(
        matches!(
            err,
            TrustError::NotCanonical {
                problem: "relative",
                ..
            }
        ),
        "{err}"
    );
    let (_tmp, dir) = trusted_tempdir();
    let sub = dir.join("sub");
    std::fs::create_dir(&sub).unwrap();
    let err = check_path_trusted(&sub.join("..").join("sub")).unwrap_err();
    assert!(matches!(err, TrustError::NotCanonical { .. }), "{err}");
    let link = dir.join("link");
    symlink(&sub, &link).unwrap();
    let err = check_path_trusted(&link).unwrap_err();
    assert_eq!(
        err,
        TrustError::NotCanonical {
            target: link.clone(),
            component: link.clone(),
            problem: "a symlink"
        }
    );
}

#[test]
fn trusted_path_reports_missing_path() {
    let (_tmp, dir) = trusted_tempdir();
    let err = check_path_trusted(&dir.join("gone.so")).unwrap_err();
    assert!(
        matches!(err, TrustError::Io { action: "stat", .. }),
        "{err}"
    );
    assert!(!err.to_string().contains('\n'));
}

#[test]
fn lists_sorted_candidates_and_skips_hidden() {
    let (_tmp, dir) = trusted_tempdir();
    for name in [
        "b.so",
        "a.so",
        "B.so",
        ".hidden.so",
        "a.plugin.toml",
        "notes.txt",
    ] {
        touch(&dir.join(name));
    }
    let items = list_plugin_files(&dir).unwrap();
    let stems: Vec<String> = items
        .iter()
        .map(|i| i.as_ref().unwrap().stem.clone())
        .collect();
    assert_eq!(stems, ["B", "a", "b"]);
    let a = items[1].as_ref().unwrap();
    assert_eq!(a.library, dir.join("a.so"));
    assert_eq!(a.manifest, dir.join("a.plugin.toml"));
    // b has no manifest yet: still a candidate, reading the manifest reports it.
    assert_eq!(
        items[2].as_ref().unwrap().manifest,
        dir.join("b.plugin.toml")
    );
}

/// One file given by itself gets exactly what the listing of its directory gives it.
#[test]
fn a_file_alone_is_checked_as_its_directory_listing_checks_it() {
    let (_tmp, dir) = trusted_tempdir();
    let (_other_tmp, other) = trusted_tempdir();
    touch(&dir.join("a.so"));
    touch(&dir.join("a.plugin.toml"));
    touch(&other.join("x.so"));
    symlink(other.join("x.so"), dir.join("x.so")).unwrap();
    touch(&dir.join("w.so"));
    touch(&dir.join("w.plugin.toml"));
    chmod(&dir.join("w.plugin.toml"), 0o666);
    let listed = list_plugin_files(&dir).unwrap();
    for (name, item) in ["a.so", "w.so", "x.so"].iter().zip(&listed) {
        assert_eq!(&plugin_file_candidate(&dir.join(name)), item, "{name}");
    }
    assert!(matches!(listed[1], Err(TrustError::Writable { .. })));
    assert!(matches!(listed[2], Err(TrustError::SymlinkOutside { .. })));
    // The directory's own checks come first: a shared sticky directory is refused.
    chmod(&dir, 0o1777);
    let err = plugin_file_candidate(&dir.join("a.so")).unwrap_err();
    assert_eq!(err, list_plugin_dir_error(&dir));
    assert!(
        matches!(&err, TrustError::Writable { mode: 0o1777, path, .. } if *path == dir),
        "{err}"
    );
    chmod(&dir, 0o755);
    // Names the listing never lists.
    for (name, problem) in [
        (".a.so", "is hidden (its name starts with '.')"),
        ("a.plugin.toml", "does not end in .so"),
        (".so", "is hidden (its name starts with '.')"),
    ] {
        let err = plugin_file_candidate(&dir.join(name)).unwrap_err();
        assert_eq!(
            err,
            TrustError::NotAPluginFileName {
                path: dir.join(name),
                problem
            }
        );
        assert!(err.to_string().contains("expected a NAME.so name"), "{err}");
    }
    let err = plugin_file_candidate(&dir.join("missing.so")).unwrap_err();
    assert!(
        matches!(err, TrustError::Io { action: "stat", .. }),
        "{err}"
    );
}

fn list_plugin_dir_error(dir: &Path) -> TrustError {
    trusted_plugin_dir(dir)
        .and_then(|d| list_plugin_files(&d))
        .unwrap_err()
}

#[test]
fn symlink_inside_is_resolved_outside_is_a_per_file_error() {
    let (_tmp, dir) = trusted_tempdir();
    let (_other_tmp, other) = trusted_tempdir();
    touch(&dir.join("real.so"));
    symlink(dir.join("real.so"), dir.join("alias.so")).unwrap();
    touch(&other.join("x.so"));
    symlink(other.join("x.so"), dir.join("x.so")).unwrap();
    touch(&dir.join("z.so"));
    let items = list_plugin_files(&dir).unwrap();
    assert_eq!(items.len(), 4);
    let alias = items[0].as_ref().unwrap();
    assert_eq!(alias.stem, "alias");
    assert_eq!(alias.library, dir.join("real.so"));
    assert_eq!(alias.manifest, dir.join("alias.plugin.toml"));
    assert_eq!(items[1].as_ref().unwrap().stem, "real");
    let err = items[2].as_ref().unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "symlink {d}/x.so points outside the trusted directory {d} (to {o}/x.so); copy the file into the directory instead",
            d = dir.display(),
            o = other.display()
        )
    );
    assert_eq!(items[3].as_ref().unwrap().stem, "z");
}

#[test]
fn symlinked_manifest_outside_is_an_error() {
    let (_tmp, dir) = trusted_tempdir();
    let (_other_tmp, other) = trusted_tempdir();
    touch(&dir.join("a.so"));
    touch(&other.join("a.plugin.toml"));
    symlink(other.join("a.plugin.toml"), dir.join("a.plugin.toml")).unwrap();
    let items = list_plugin_files(&dir).unwrap();
    assert!(
        matches!(items[0], Err(TrustError::SymlinkOutside { .. })),
        "{items:?}"
    );
}

#[test]
fn dangling_symlink_directory_and_untrusted_file_are_per_file_errors() {
    let (_tmp, dir) = trusted_tempdir();
    symlink(dir.join("missing"), dir.join("a.so")).unwrap();
    std::fs::create_dir(dir.join("b.so")).unwrap();
    touch(&dir.join("c.so"));
    chmod(&dir.join("c.so"), 0o666);
    touch(&dir.join("d.so"));
    let items = list_plugin_files(&dir).unwrap();
    assert!(
        matches!(
            items[0],
            Err(TrustError::Io {
                action: "resolve symlink",
                ..
            })
        ),
        "{items:?}"
    );
    assert!(
        matches!(
            items[1],
            Err(TrustError::NotRegularFile {
                found: "directory",
                ..
            })
        ),
        "{items:?}"
    );
    assert!(
        matches!(items[2], Err(TrustError::Writable { mode: 0o666, .. })),
        "{items:?}"
    );
    assert_eq!(items[3].as_ref().unwrap().stem, "d");
}

#[test]
fn symlink_into_writable_subdir_is_refused() {
    let (_tmp, dir) = trusted_tempdir();
    let sub = dir.join("sub");
    std::fs::create_dir(&sub).unwrap();
    touch(&sub.join("a.so"));
    chmod(&sub, 0o777);
    symlink(sub.join("a.so"), dir.join("a.so")).unwrap();
    let items = list_plugin_files(&dir).unwrap();
    assert!(
        matches!(&items[0], Err(TrustError::Writable { path, .. }) if *path == sub),
        "{items:?}"
    );
}

#[test]
fn manifest_without_library_is_reported_in_order() {
    let (_tmp, dir) = trusted_tempdir();
    touch(&dir.join("a.so"));
    touch(&dir.join("a.plugin.toml"));
    touch(&dir.join("b.plugin.toml"));
    touch(&dir.join("c.so"));
    let items = list_plugin_files(&dir).unwrap();
    assert_eq!(items.len(), 3);
    let err = items[1].as_ref().unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "manifest without library: {d}/b.plugin.toml has no {d}/b.so beside it; add the library or remove the manifest",
            d = dir.display()
        )
    );
    assert_eq!(items[2].as_ref().unwrap().stem, "c");
}

#[test]
fn unreadable_dir_is_a_whole_dir_error() {
    let (_tmp, dir) = trusted_tempdir();
    let err = list_plugin_files(&dir.join("missing")).unwrap_err();
    assert!(
        matches!(
            err,
            TrustError::Io {
                action: "read directory",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn non_utf8_name_is_a_per_file_error() {
    let (_tmp, dir) = trusted_tempdir();
    let name = std::ffi::OsStr::from_bytes(b"\xffbad.so");
    touch(&dir.join(name));
    let items = list_plugin_files(&dir).unwrap();
    assert!(
        matches!(items[0], Err(TrustError::NonUtf8Name { .. })),
        "{items:?}"
    );
}
