//! The reading of Compose files: keys, interpolation, the typed project.

use std::path::Path;

use agentcompass_plugin_api::contracts::ComposeSetup;

use super::model::{Condition, HealthSource, HealthTest, Image, Mount};
use super::*;
use crate::engine::Engine;

/// A task directory with `environment/docker-compose.yaml` = `yaml` and an `api/` context.
fn task(yaml: &str) -> (tempfile::TempDir, ComposeSetup) {
    let dir = tempfile::tempdir().unwrap();
    let env = dir.path().join("environment");
    std::fs::create_dir_all(env.join("api")).unwrap();
    std::fs::write(env.join("Dockerfile"), "FROM x\n").unwrap();
    std::fs::write(env.join("api/Dockerfile"), "FROM y\n").unwrap();
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::write(env.join("docker-compose.yaml"), yaml).unwrap();
    let setup = ComposeSetup {
        file: env.join("docker-compose.yaml").display().to_string(),
        root: dir.path().display().to_string(),
    };
    (dir, setup)
}

fn host(name: &str) -> Option<String> {
    (name == "API_TOKEN").then(|| "tok-SIDECAR-7731".to_string())
}

fn load_yaml(yaml: &str) -> Result<Loaded, String> {
    let (dir, setup) = task(yaml);
    let context = dir.path().join("environment");
    load(Engine::Docker, &setup, Some(&context), &host, None)
        .map_err(|e| e.message.replace(&setup.file, "FILE"))
}

#[test]
fn reads_a_multi_container_task_as_harbor_merges_it() {
    let loaded = load_yaml(
        "services:\n  main:\n    build:\n      context: .\n    environment:\n      \
         API_URL: http://api:8000\n    depends_on:\n      api:\n        condition: service_healthy\n  \
         api:\n    build:\n      context: ./api\n      args: {V: '1'}\n    expose: [8000]\n    \
         environment:\n      - GREETING=${GREETING:-hello}\n      - TOKEN=${API_TOKEN}\n    \
         command: python3 -m http.server 8000\n    volumes:\n      - ../data:/data:ro\n      \
         - cache:/cache\n    healthcheck:\n      test: [CMD, wget, -q, -O-, http://localhost:8000/]\n      \
         interval: 1s\n      timeout: 2s\n      retries: 5\n      start_period: 1m30s\n  \
         init:\n    image: busybox\n    command: [true]\n    depends_on: [api]\n\
         volumes:\n  cache: {}\n",
    )
    .unwrap();
    assert_eq!(loaded.secrets, ["tok-SIDECAR-7731"]);
    let project = loaded.project;
    assert_eq!(project.volumes, ["cache"]);
    let names: Vec<&str> = project.sidecars.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["api", "init"]);
    let api = &project.sidecars[0];
    let Some(Image::Build(build)) = &api.image else {
        panic!("{api:?}")
    };
    assert!(build.context.ends_with("environment/api"));
    assert_eq!(build.args.get("V").map(String::as_str), Some("1"));
    assert_eq!(
        api.command.as_deref().unwrap(),
        ["python3", "-m", "http.server", "8000"]
    );
    assert_eq!(
        api.env,
        [
            ("GREETING".to_string(), "hello".to_string()),
            ("TOKEN".to_string(), "tok-SIDECAR-7731".to_string())
        ]
    );
    assert!(
        matches!(&api.mounts[0], Mount::Bind { target, read_only: true, .. } if target == "/data")
    );
    assert!(matches!(&api.mounts[1], Mount::Volume { name, .. } if name == "cache"));
    let HealthSource::Declared(health) = &api.health else {
        panic!("{api:?}")
    };
    assert!(matches!(&health.test, HealthTest::Argv(argv) if argv[0] == "wget"));
    assert_eq!(health.policy.retries, 5);
    assert_eq!(health.policy.start_period.as_secs(), 90);
    assert_eq!(health.timeout.unwrap().as_secs(), 2);
    assert_eq!(project.sidecars[1].command.as_deref().unwrap(), ["true"]);
    assert_eq!(project.main.depends_on[0].condition, Condition::Healthy);
    assert_eq!(project.main.env[0].1, "http://api:8000");
    assert!(project.main.image.is_some(), "main's own build is allowed");
}

#[test]
fn refuses_what_the_host_would_not_act_on_naming_file_and_key() {
    let cases = [
        ("services:\n  api:\n    image: x\n    ports: ['80:80']\n", "FILE: `services.api.ports` is not supported"),
        ("services:\n  api:\n    image: x\n    environment:\n      - K=${NOT_SET}\n", "FILE: services.api.environment[0]: variable `NOT_SET` is not set"),
        ("services:\n  api:\n    image: x\n    volumes: [/etc:/host-etc]\n", "FILE: `services.api.volumes[0]`: the bind source `/etc` is outside the task directory"),
        ("services:\n  api:\n    image: x\n    volumes: [nope:/x]\n", "FILE: `services.api.volumes[0]`: the volume `nope` is not declared"),
        ("services:\n  api:\n    image: x\n    depends_on: [db]\n", "FILE: `services.api.depends_on`: no service `db` in the file"),
        ("services:\n  a:\n    image: x\n    depends_on: [b]\n  b:\n    image: x\n    depends_on: [a]\n", "FILE: `depends_on` forms a cycle among the services a, b"),
        ("services:\n  a:\n    image: x\n    depends_on: [main]\n", "FILE: `services.a.depends_on`: a service cannot wait for `main`"),
        ("services:\n  main:\n    build: ./api\n", "FILE: `services.main.build` is not supported unless"),
        ("services:\n  api:\n    command: [x]\n", "FILE: `services.api`: expected `image` or `build`"),
        ("services: [\n", "FILE: is not YAML"),
    ];
    for (yaml, expected) in cases {
        let err = load_yaml(yaml).err().unwrap_or_default();
        assert!(
            err.starts_with(&format!("docker: {expected}")),
            "{yaml}\n{err}"
        );
    }
}

#[test]
fn a_typed_error_never_shows_a_host_value() {
    let err = load_yaml(
        "services:\n  api:\n    image: x\n    healthcheck:\n      retries: ${API_TOKEN}\n",
    )
    .err()
    .unwrap();
    assert!(!err.contains("tok-SIDECAR-7731"), "{err}");
    assert!(
        err.contains("is not a Compose file the host reads"),
        "{err}"
    );
}

#[test]
fn compose_durations() {
    assert_eq!(units::duration("1m30s").unwrap().as_secs(), 90);
    assert_eq!(units::duration("500ms").unwrap().as_millis(), 500);
    assert_eq!(units::duration("1.5s").unwrap().as_millis(), 1500);
    assert!(units::duration("5 s").is_none());
    assert!(units::duration("").is_none());
    let _ = Path::new("/");
}
