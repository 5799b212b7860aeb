//! The registry format, the lookups and Harbor's version rule, with the cases Harbor 0.25 was
//! run on (docs/design/harbor-datasets.md).

use super::*;

const REGISTRY: &str = r#"[
  {"name": "demo", "version": "0.9", "description": "", "tasks": []},
  {"name": "demo", "version": "1.0", "description": "three tasks", "unknown": 1,
   "tasks": [
     {"name": "hello", "git_url": "file:///srv/tasks.git", "git_commit_id": "abc", "path": "tasks/hello-file"},
     {"name": "local", "path": "/data/local-task"}
   ],
   "metrics": [{"type": "sum"}, {"kwargs": {"k": 1}}]},
  {"name": "other", "version": "head", "description": "d", "tasks": []},
  {"name": "demo", "version": "0.9", "description": "the later entry", "tasks": []}
]"#;

fn registry() -> Registry {
    Registry::parse("reg.json", REGISTRY.as_bytes()).unwrap()
}

#[test]
fn datasets_tasks_and_metrics_read_as_harbor_reads_them() {
    let reg = registry();
    let demo = reg.dataset("demo", Some("1.0")).unwrap();
    assert_eq!(demo.description, "three tasks");
    assert_eq!(
        demo.tasks[0].git_url.as_deref(),
        Some("file:///srv/tasks.git")
    );
    assert_eq!(demo.tasks[0].git_commit_id.as_deref(), Some("abc"));
    assert_eq!(demo.tasks[1].git_url, None);
    assert_eq!(
        demo.metrics
            .iter()
            .map(|m| m.kind.as_str())
            .collect::<Vec<_>>(),
        ["sum", "mean"]
    );
    // A repeated name and version: the later entry, in the first one's place.
    let listed: Vec<(&str, &str, &str)> = reg
        .datasets()
        .iter()
        .map(|d| (d.name.as_str(), d.version.as_str(), d.description.as_str()))
        .collect();
    assert_eq!(
        listed,
        [
            ("demo", "0.9", "the later entry"),
            ("demo", "1.0", "three tasks"),
            ("other", "head", "d")
        ]
    );
    // Without a version: the latest.
    assert_eq!(reg.dataset("demo", None).unwrap().version, "1.0");
    assert_eq!(reg.dataset("other", None).unwrap().version, "head");
}

#[test]
fn unknown_names_and_versions_say_what_there_is() {
    let reg = registry();
    assert_eq!(
        reg.dataset("nope", None).unwrap_err().to_string(),
        "reg.json: no dataset `nope` (the registry has `demo`, `other`)"
    );
    assert_eq!(
        reg.dataset("demo", Some("9.9")).unwrap_err().to_string(),
        "reg.json: dataset `demo` has no version `9.9` (it has `0.9`, `1.0`)"
    );
}

#[test]
fn a_malformed_registry_names_the_field() {
    for (json, want) in [
        (
            r#"{"name": "x"}"#,
            "r.json: .: invalid type: map, expected a sequence at line 1 column 0",
        ),
        (
            r#"[{"name": "x", "version": 1, "description": "", "tasks": []}]"#,
            "r.json: [0].version: invalid type: integer `1`, expected a string at line 1 column 27",
        ),
        (
            r#"[{"name": "x", "version": "1", "tasks": []}]"#,
            "r.json: [0]: missing field `description` at line 1 column 43",
        ),
        (
            r#"[{"name": "x", "version": "1", "description": "", "tasks": [{"name": "t"}]}]"#,
            "r.json: [0].tasks[0]: missing field `path` at line 1 column 73",
        ),
    ] {
        let err = Registry::parse("r.json", json.as_bytes()).unwrap_err();
        assert_eq!(err.to_string(), want, "{json}");
    }
}

#[test]
fn the_latest_version_is_harbors() {
    for (versions, latest) in [
        (&["1.0", "0.9"][..], "1.0"),
        (&["1.0", "1.10", "1.9"], "1.10"),
        (&["1.0", "head", "2.0"], "head"),
        (&["2.0", "v3"], "v3"),
        (&["2.0.0rc1", "1.9"], "2.0.0rc1"),
        (&["v1.2", "v1.10"], "v1.10"),
        (&["abc", "abd", "2024-01"], "2024-01"),
        (&["parity", "latest"], "parity"),
        (&["1.0", "1.0.0"], "1.0"),
        (&["1.0.0", "1.0"], "1.0.0"),
    ] {
        assert_eq!(latest_version(versions), Some(latest), "{versions:?}");
    }
    assert_eq!(latest_version(&[]), None);
}

#[test]
fn references_name_a_registry_dataset_or_a_hosted_package() {
    assert_eq!(
        DatasetRef::parse("terminal-bench@2.0"),
        Ok(DatasetRef::Registry {
            name: "terminal-bench".into(),
            version: Some("2.0".into())
        })
    );
    assert_eq!(
        DatasetRef::parse("demo"),
        Ok(DatasetRef::Registry {
            name: "demo".into(),
            version: None
        })
    );
    // Split at the first `@`, as Harbor does.
    assert_eq!(
        DatasetRef::parse("a@b@c"),
        Ok(DatasetRef::Registry {
            name: "a".into(),
            version: Some("b@c".into())
        })
    );
    assert_eq!(
        DatasetRef::parse("org/name@sha256:abcd"),
        Ok(DatasetRef::Package {
            name: "org/name".into(),
            reference: "sha256:abcd".into()
        })
    );
    assert_eq!(
        DatasetRef::parse("org/name"),
        Ok(DatasetRef::Package {
            name: "org/name".into(),
            reference: "latest".into()
        })
    );
    for bad in ["", "@1.0", "demo@", "org/x@"] {
        assert_eq!(
            DatasetRef::parse(bad),
            Err(ReferenceError::Malformed(bad.to_string())),
            "{bad}"
        );
    }
    let refused = DatasetRef::parse("laude/terminal-bench@v2")
        .unwrap()
        .into_registry()
        .unwrap_err()
        .to_string();
    assert!(
        refused.starts_with(
            "`laude/terminal-bench@v2` is a package of Harbor's hosted registry, which this \
             host does not read; export it with `harbor download laude/terminal-bench@v2 \
             --export --output-dir DIR`"
        ),
        "{refused}"
    );
}
