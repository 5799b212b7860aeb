//! Tests of manifest parsing and validation.

use super::*;

const HASH: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn host() -> semver::Version {
    semver::Version::new(0, 1, 0)
}

fn sample() -> PluginManifest {
    PluginManifest {
        name: "example-pack".into(),
        version: semver::Version::new(0, 1, 0),
        host_api: semver::VersionReq::parse("^0.1").unwrap(),
        sha256: HASH.into(),
        description: String::new(),
        components: vec![ManifestComponent {
            kind: ComponentKind::Benchmark,
            id: "example_exact_match".into(),
            description: "Exact match".into(),
        }],
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn reads_documented_example() {
    let tmp = tempfile::tempdir().unwrap();
    let text = format!(
        "name = \"example-pack\"\nversion = \"0.1.0\"\nhost_api = \"^0.1\"\nsha256 = \"{HASH}\"\n\
         [[components]]\nkind = \"benchmark\"\nid = \"example_exact_match\"\ndescription = \"Exact match\"\n"
    );
    let path = write(tmp.path(), "example-pack.plugin.toml", &text);
    let manifest = PluginManifest::read(&path).unwrap();
    assert_eq!(manifest, sample());
    manifest.validate("example-pack", &host()).unwrap();
    manifest
        .validate_at(&path, "example-pack", &host())
        .unwrap();
}

#[test]
fn round_trips_through_toml() {
    let mut manifest = sample();
    manifest.description = "quote \" backslash \\ newline \n tab \t bell \u{7} é".into();
    manifest.host_api = semver::VersionReq::parse(">=0.1, <0.3").unwrap();
    manifest.version = semver::Version::parse("1.2.3-rc.1+build.5").unwrap();
    manifest.components.push(ManifestComponent {
        kind: ComponentKind::Environment,
        id: "docker".into(),
        description: String::new(),
    });
    let text = manifest.to_toml_string();
    assert!(text.starts_with("name = \"example-pack\"\n"), "{text}");
    let back = PluginManifest::parse(&text, Path::new("x.plugin.toml")).unwrap();
    assert_eq!(back, manifest);
}

#[test]
fn missing_manifest_names_library() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("foo.plugin.toml");
    let err = PluginManifest::read(&path).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "missing manifest {d}/foo.plugin.toml for {d}/foo.so; create it with `agentcompass-host plugin package`",
            d = tmp.path().display()
        )
    );
}

#[test]
fn unreadable_manifest_is_io_error() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("foo.plugin.toml");
    std::fs::write(&path, b"name = \"\xff\"\n").unwrap();
    let err = PluginManifest::read(&path).unwrap_err();
    assert!(matches!(err, ManifestError::Io { .. }), "{err}");
}

#[test]
fn only_a_regular_file_is_opened() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("dir.plugin.toml");
    std::fs::create_dir(&dir).unwrap();
    let err = PluginManifest::read(&dir).unwrap_err();
    assert!(
        matches!(
            err,
            ManifestError::NotRegularFile {
                found: "directory",
                ..
            }
        ),
        "{err}"
    );
    // A FIFO would block a read forever: it is refused without being opened.
    let fifo = tmp.path().join("fifo.plugin.toml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let err = PluginManifest::read(&fifo).unwrap_err();
    assert!(
        matches!(err, ManifestError::NotRegularFile { found: "fifo", .. }),
        "{err}"
    );
    assert!(err.to_string().contains("expected a regular file"), "{err}");
    let link = tmp.path().join("link.plugin.toml");
    std::os::unix::fs::symlink(&dir, &link).unwrap();
    let err = PluginManifest::read(&link).unwrap_err();
    assert!(
        matches!(
            err,
            ManifestError::NotRegularFile {
                found: "symlink",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn toml_errors_are_one_line_with_location() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        ("syntax", "name = \n"),
        ("unknown", "name = \"a\"\nversion = \"0.1.0\"\nhost_api = \"^0.1\"\nsha256 = \"x\"\nbogus = 1\n"),
        ("badversion", "name = \"a\"\nversion = \"one\"\nhost_api = \"^0.1\"\nsha256 = \"x\"\n"),
        ("badreq", "name = \"a\"\nversion = \"0.1.0\"\nhost_api = \"~~1\"\nsha256 = \"x\"\n"),
        ("badkind", "name = \"a\"\nversion = \"0.1.0\"\nhost_api = \"^0.1\"\nsha256 = \"x\"\n[[components]]\nkind = \"widget\"\nid = \"a\"\n"),
        ("missingfield", "name = \"a\"\n"),
    ];
    for (name, text) in cases {
        let path = write(tmp.path(), &format!("{name}.plugin.toml"), text);
        let err = PluginManifest::read(&path).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, ManifestError::Parse { .. }), "{name}: {msg}");
        assert!(!msg.contains('\n'), "{name}: {msg}");
        assert!(msg.contains(&path.display().to_string()), "{name}: {msg}");
    }
    let err = PluginManifest::read(&tmp.path().join("unknown.plugin.toml")).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("line 5") && msg.contains("bogus"), "{msg}");
}

#[test]
fn validate_rejects_each_problem() {
    let v = host();
    let mut m = sample();
    m.name = String::new();
    assert!(matches!(
        m.validate("example-pack", &v),
        Err(ManifestError::EmptyName { .. })
    ));

    let m = sample();
    let err = m.validate("other", &v).unwrap_err();
    assert!(matches!(err, ManifestError::NameMismatch { .. }), "{err}");
    assert!(err.to_string().contains("other.plugin.toml"), "{err}");

    for bad in [
        "",
        "abc",
        &HASH.to_uppercase(),
        &format!("{HASH}0"),
        &HASH.replace('a', "g"),
    ] {
        let mut m = sample();
        m.sha256 = bad.to_string();
        assert!(
            matches!(
                m.validate("example-pack", &v),
                Err(ManifestError::BadSha256 { .. })
            ),
            "{bad}"
        );
    }

    let mut m = sample();
    m.components.clear();
    assert!(matches!(
        m.validate("example-pack", &v),
        Err(ManifestError::NoComponents { .. })
    ));

    for bad in ["", "a b", "x/y", "é"] {
        let mut m = sample();
        m.components[0].id = bad.to_string();
        assert!(
            matches!(
                m.validate("example-pack", &v),
                Err(ManifestError::BadComponentId { .. })
            ),
            "{bad:?}"
        );
    }
    let mut m = sample();
    m.components[0].id = "Ok_id.v-2".into();
    m.validate("example-pack", &v).unwrap();

    let mut m = sample();
    let mut dup = m.components[0].clone();
    m.components.push(dup.clone());
    let err = m.validate("example-pack", &v).unwrap_err();
    assert!(
        matches!(err, ManifestError::DuplicateComponent { .. }),
        "{err}"
    );
    // Same id under another kind is fine.
    m.components.pop();
    dup.kind = ComponentKind::Harness;
    m.components.push(dup);
    m.validate("example-pack", &v).unwrap();
}

#[test]
fn validate_checks_host_api() {
    let mut m = sample();
    m.host_api = semver::VersionReq::parse("^0.2").unwrap();
    let err = m
        .validate_at(
            Path::new("/d/example-pack.plugin.toml"),
            "example-pack",
            &host(),
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "plugin example-pack (/d/example-pack.plugin.toml) requires host API ^0.2 but this host provides 0.1.0; \
         install a matching plugin build or host"
    );
    sample()
        .validate("example-pack", &semver::Version::new(0, 1, 7))
        .unwrap();
    assert!(sample()
        .validate("example-pack", &semver::Version::new(0, 2, 0))
        .is_err());
}

#[test]
fn path_helpers() {
    assert_eq!(
        library_path_for_manifest(Path::new("/d/x.plugin.toml")),
        PathBuf::from("/d/x.so")
    );
    assert_eq!(
        manifest_path_for_library(Path::new("/d/x.so")),
        PathBuf::from("/d/x.plugin.toml")
    );
}
