use super::*;
use serde_json::json;

#[test]
fn overlays_replace_fields_and_update_maps() {
    let mut options = ResolvedRuntimeOptions::default();
    let config = RuntimeOptions::from_map(
        "c.toml",
        "runtime",
        json!({"results_dir": "r1", "provider_limits": {"docker": 4}, "reuse": true, "log_level": "warn"})
            .as_object()
            .unwrap(),
    )
    .unwrap();
    options.apply("c.toml", &config).unwrap();
    let cli = RuntimeOptions {
        results_dir: Some("r2".into()),
        provider_limits: Some([("modal".to_string(), 2)].into()),
        ..RuntimeOptions::default()
    };
    options.apply("command line", &cli).unwrap();
    assert_eq!(options.results_dir, "r2");
    assert_eq!(options.log_level, "WARNING");
    assert_eq!(options.provider_limits["docker"], 4);
    assert_eq!(options.provider_limits["modal"], 2);
    assert_eq!(options.provider_limits["host_process"], 128);
}

#[test]
fn bad_values_name_the_key() {
    let err = RuntimeOptions::from_map(
        "c.toml",
        "runtime",
        json!({"timeout_seconds": "x"}).as_object().unwrap(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("c.toml: runtime.timeout_seconds: invalid type"),
        "{err}"
    );
    let mut options = ResolvedRuntimeOptions::default();
    let over = RuntimeOptions {
        log_level: Some("LOUD".into()),
        ..RuntimeOptions::default()
    };
    let err = options.apply("--log-level", &over).unwrap_err().to_string();
    assert!(
        err.starts_with("--log-level: runtime.log_level: expected one of"),
        "{err}"
    );
}

#[test]
fn egress_hosts_are_checked_and_updated_by_name() {
    let overlay = |source: &str, hosts: Value| {
        RuntimeOptions::from_map(
            source,
            "runtime",
            json!({"egress": {"hosts": hosts}}).as_object().unwrap(),
        )
    };
    let mut options = ResolvedRuntimeOptions::default();
    let first = overlay(
        "user.toml",
        json!({"models.internal": "127.0.0.2", "other.internal": "127.0.0.3"}),
    )
    .unwrap();
    options.apply("user.toml", &first).unwrap();
    let second = overlay("project.toml", json!({"other.internal": "::1"})).unwrap();
    options.apply("project.toml", &second).unwrap();
    assert_eq!(
        options.egress.hosts,
        BTreeMap::from([
            ("models.internal".to_string(), "127.0.0.2".to_string()),
            ("other.internal".to_string(), "::1".to_string()),
        ])
    );
    let printed = serde_json::to_value(&options).unwrap();
    assert_eq!(printed["egress"]["hosts"]["other.internal"], "::1");
    assert!(serde_json::to_value(ResolvedRuntimeOptions::default())
        .unwrap()
        .get("egress")
        .is_none());

    let bad = overlay("c.toml", json!({"models.internal": "not-an-ip"})).unwrap();
    let err = options.apply("c.toml", &bad).unwrap_err().to_string();
    assert_eq!(
        err,
        "c.toml: runtime.egress.hosts.models.internal: invalid host map address \
         `not-an-ip` for `models.internal`: not an IP address"
    );
    let bad = overlay("c.toml", json!({"bad_name!": "127.0.0.2"})).unwrap();
    let err = options.apply("c.toml", &bad).unwrap_err().to_string();
    assert!(
        err.starts_with("c.toml: runtime.egress.hosts.bad_name!: invalid host map name"),
        "{err}"
    );
    let err = overlay("c.toml", json!({"a.internal": 1}))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("c.toml: runtime.egress.hosts.a.internal: invalid type"),
        "{err}"
    );
    let err = RuntimeOptions::from_map(
        "c.toml",
        "runtime",
        json!({"egress": {"host": {}}}).as_object().unwrap(),
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        err,
        "c.toml: runtime.egress.host: unknown field `host`, expected `hosts`"
    );
}
