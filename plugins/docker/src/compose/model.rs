//! The typed project the provider starts: the file read by `docker-compose-types` (after the
//! key check and interpolation) and turned into what each container needs — its image (named
//! or built), command, environment, mounts, health check and dependencies — with Compose's
//! rules checked (named volumes declared, dependencies known and acyclic, bind sources inside
//! the task directory).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agentcompass_plugin_api::sdk::health::HealthPolicy;
use docker_compose_types as dc;

use super::units::{bytes, duration, split};

/// The service that is the task's own container.
pub(crate) const MAIN: &str = "main";

/// What a service's image is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Image {
    /// Pulled (or found) by name.
    Named(String),
    /// Built from a context.
    Build(Build),
}

/// A build: context directory, Dockerfile (relative to it) and build arguments.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Build {
    pub(crate) context: PathBuf,
    pub(crate) dockerfile: String,
    pub(crate) args: BTreeMap<String, String>,
}

/// One mount of a service.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Mount {
    /// A named volume of the project.
    Volume {
        name: String,
        target: String,
        read_only: bool,
    },
    /// An anonymous volume (removed with the container).
    Anonymous { target: String },
    /// A host path inside the task directory.
    Bind {
        source: PathBuf,
        target: String,
        read_only: bool,
    },
}

/// How a dependency must be before its dependent starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Condition {
    Started,
    Healthy,
    CompletedSuccessfully,
}

/// One `depends_on` entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Dependency {
    pub(crate) service: String,
    pub(crate) condition: Condition,
}

/// What a health probe runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum HealthTest {
    /// `["CMD", argv...]`.
    Argv(Vec<String>),
    /// `["CMD-SHELL", cmd]` or a string: `/bin/sh -c cmd`.
    Shell(String),
}

/// A service's health check.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Health {
    pub(crate) test: HealthTest,
    pub(crate) timeout: Option<Duration>,
    pub(crate) policy: HealthPolicy,
}

/// Where a service's health check comes from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum HealthSource {
    /// The file's `healthcheck`.
    Declared(Health),
    /// `disable: true` or `test: [NONE]`.
    Disabled,
    /// None in the file: the image's `HEALTHCHECK`, if it has one.
    Image,
}

/// One service as the provider starts it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Service {
    pub(crate) name: String,
    /// `None` for `main` (its image is the environment's).
    pub(crate) image: Option<Image>,
    pub(crate) command: Option<Vec<String>>,
    pub(crate) entrypoint: Option<Vec<String>>,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) mounts: Vec<Mount>,
    pub(crate) health: HealthSource,
    pub(crate) depends_on: Vec<Dependency>,
    pub(crate) working_dir: Option<String>,
    pub(crate) user: Option<String>,
    pub(crate) init: bool,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) restart: Option<String>,
    pub(crate) hostname: Option<String>,
    pub(crate) tty: bool,
    pub(crate) stdin_open: bool,
    pub(crate) shm_size: Option<i64>,
    /// Whether a named image is pulled when missing (`pull_policy` other than `never`).
    pub(crate) pull: Option<bool>,
    /// Whether it names a model key (module `model_vars`): it gets the run's model endpoint
    /// on its loopback.
    pub(crate) needs_model: bool,
}

/// The project: the sidecars in start order, what the file adds to `main`, the named volumes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Project {
    pub(crate) sidecars: Vec<Service>,
    pub(crate) main: Service,
    pub(crate) volumes: Vec<String>,
}

/// Turns the parsed file into the project. `dir` is the file's directory (relative paths
/// resolve against it), `root` the directory bind sources must stay inside, `main_context`
/// the environment's own build context (a `build` of `main` must name it).
pub(crate) fn project(
    file: dc::Compose,
    dir: &Path,
    root: &Path,
    main_context: Option<&Path>,
) -> Result<Project, String> {
    let volumes: Vec<String> = file.volumes.0.keys().cloned().collect();
    let mut services = Vec::new();
    let mut main = None;
    for (name, body) in file.services.0 {
        let body = body.unwrap_or_default();
        let service = service(&name, body, dir, root, &volumes)?;
        if name == MAIN {
            main = Some(service);
        } else {
            services.push(service);
        }
    }
    let main = match main {
        Some(main) => {
            check_main_build(&main, main_context)?;
            main
        }
        None => Service::bare(MAIN),
    };
    let sidecars = start_order(services, &main)?;
    Ok(Project {
        sidecars,
        main,
        volumes,
    })
}

impl Project {
    /// Every service's name, `main` first.
    pub(crate) fn service_names(&self) -> Vec<String> {
        std::iter::once(&self.main)
            .chain(&self.sidecars)
            .map(|s| s.name.clone())
            .collect()
    }
}

impl Service {
    /// A service with nothing set.
    fn bare(name: &str) -> Service {
        Service {
            needs_model: false,
            name: name.to_string(),
            image: None,
            command: None,
            entrypoint: None,
            env: Vec::new(),
            mounts: Vec::new(),
            health: HealthSource::Image,
            depends_on: Vec::new(),
            working_dir: None,
            user: None,
            init: false,
            labels: BTreeMap::new(),
            restart: None,
            hostname: None,
            tty: false,
            stdin_open: false,
            shm_size: None,
            pull: None,
        }
    }
}

/// One service of the file.
fn service(
    name: &str,
    body: dc::Service,
    dir: &Path,
    root: &Path,
    volumes: &[String],
) -> Result<Service, String> {
    let at = format!("services.{name}");
    let build = body
        .build_
        .map(|b| build(b, dir).map_err(|e| format!("`{at}.build`: {e}")))
        .transpose()?;
    let image = match (build, body.image) {
        (Some(build), _) => Some(Image::Build(build)),
        (None, Some(image)) => Some(Image::Named(image)),
        (None, None) if name == MAIN => None,
        (None, None) => {
            return Err(format!(
                "`{at}`: expected `image` or `build`, found neither"
            ))
        }
    };
    let mounts = body
        .volumes
        .into_iter()
        .enumerate()
        .map(|(i, v)| mount(v, dir, root, volumes).map_err(|e| format!("`{at}.volumes[{i}]`: {e}")))
        .collect::<Result<_, _>>()?;
    let health = match body.healthcheck {
        None => HealthSource::Image,
        Some(check) => health(check).map_err(|e| format!("`{at}.healthcheck`: {e}"))?,
    };
    let shm_size = body
        .shm_size
        .map(|s| {
            bytes(&s).ok_or_else(|| {
                format!("`{at}.shm_size`: expected a size such as `2gb`, found `{s}`")
            })
        })
        .transpose()?;
    Ok(Service {
        needs_model: false,
        name: name.to_string(),
        image,
        command: body.command.map(|c| match c {
            dc::Command::Simple(s) => split(&s),
            dc::Command::Args(args) => args,
        }),
        entrypoint: body.entrypoint.map(|e| match e {
            dc::Entrypoint::Simple(s) => split(&s),
            dc::Entrypoint::List(args) => args,
        }),
        env: environment(body.environment),
        mounts,
        health,
        depends_on: depends_on(body.depends_on, &at)?,
        working_dir: body.working_dir,
        user: body.user,
        init: body.init,
        labels: match body.labels {
            dc::Labels::List(list) => list
                .into_iter()
                .map(|l| match l.split_once('=') {
                    Some((k, v)) => (k.to_string(), v.to_string()),
                    None => (l, String::new()),
                })
                .collect(),
            dc::Labels::Map(map) => map.into_iter().collect(),
        },
        restart: body.restart,
        hostname: body.hostname,
        tty: body.tty,
        stdin_open: body.stdin_open,
        shm_size,
        pull: body
            .pull_policy
            .map(|p| !matches!(p, dc::PullPolicy::Never)),
    })
}

/// A `build` entry.
fn build(step: dc::BuildStep, dir: &Path) -> Result<Build, String> {
    let (context, dockerfile, args) = match step {
        dc::BuildStep::Simple(context) => (context, None, None),
        dc::BuildStep::Advanced(b) => (b.context, b.dockerfile, b.args),
    };
    let context = dir.join(&context);
    let context = context
        .canonicalize()
        .map_err(|_| format!("the context `{}` is not a directory", context.display()))?;
    let dockerfile = dockerfile.unwrap_or_else(|| "Dockerfile".to_string());
    if !context.join(&dockerfile).is_file() {
        return Err(format!(
            "`{dockerfile}` is not a file in the context `{}`",
            context.display()
        ));
    }
    let args = match args {
        None => BTreeMap::new(),
        Some(dc::BuildArgs::Simple(one)) => kv([one]),
        Some(dc::BuildArgs::List(list)) => kv(list),
        Some(dc::BuildArgs::KvPair(map)) => map.into_iter().collect(),
    };
    Ok(Build {
        context,
        dockerfile,
        args,
    })
}

/// `K=V` entries as pairs (`K` alone: empty).
fn kv(list: impl IntoIterator<Item = String>) -> BTreeMap<String, String> {
    list.into_iter()
        .map(|e| match e.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (e, String::new()),
        })
        .collect()
}

/// `main`'s `build` must be the environment's own definition (the host builds it).
fn check_main_build(main: &Service, context: Option<&Path>) -> Result<(), String> {
    let Some(Image::Build(build)) = &main.image else {
        return Ok(());
    };
    let same = context
        .and_then(|c| c.canonicalize().ok())
        .is_some_and(|c| c == build.context);
    if same && build.dockerfile == "Dockerfile" && build.args.is_empty() {
        Ok(())
    } else {
        Err(
            "`services.main.build` is not supported unless it is the task's own \
             `environment/Dockerfile` (the host builds `main` from it)"
                .to_string(),
        )
    }
}

/// `environment`, in order; a name without a value is left out (it would pass the host's
/// variable through: write `NAME: ${NAME}` to mean that).
fn environment(env: dc::Environment) -> Vec<(String, String)> {
    match env {
        dc::Environment::List(list) => list
            .into_iter()
            .filter_map(|e| {
                e.split_once('=')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
            })
            .collect(),
        dc::Environment::KvPair(map) => map
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v.to_string())))
            .collect(),
    }
}

/// One `volumes` entry of a service.
fn mount(
    volume: dc::Volumes,
    dir: &Path,
    root: &Path,
    declared: &[String],
) -> Result<Mount, String> {
    let (kind, source, target, read_only) = match volume {
        dc::Volumes::Simple(text) => {
            let parts: Vec<&str> = text.split(':').collect();
            match parts.as_slice() {
                [target] => ("volume", None, target.to_string(), false),
                [source, target] | [source, target, _] => {
                    let mode = parts.get(2).copied().unwrap_or("rw");
                    let read_only = mode.split(',').any(|m| m == "ro");
                    let kind = if source.starts_with(['.', '/', '~']) {
                        "bind"
                    } else {
                        "volume"
                    };
                    (
                        kind,
                        Some(source.to_string()),
                        target.to_string(),
                        read_only,
                    )
                }
                _ => return Err(format!("expected `SOURCE:TARGET[:MODE]`, found `{text}`")),
            }
        }
        dc::Volumes::Advanced(v) => {
            let kind = match v._type.as_str() {
                "volume" => "volume",
                "bind" => "bind",
                other => return Err(format!("type `{other}` is not supported (volume or bind)")),
            };
            (kind, v.source, v.target, v.read_only)
        }
    };
    if !target.starts_with('/') {
        return Err(format!("the target `{target}` is not an absolute path"));
    }
    match (kind, source) {
        ("volume", None) => Ok(Mount::Anonymous { target }),
        ("volume", Some(name)) if declared.contains(&name) => Ok(Mount::Volume {
            name,
            target,
            read_only,
        }),
        ("volume", Some(name)) => Err(format!(
            "the volume `{name}` is not declared under the file's top-level `volumes`"
        )),
        (_, Some(source)) => {
            let path = dir.join(&source);
            let path = path
                .canonicalize()
                .map_err(|_| format!("the bind source `{source}` does not exist"))?;
            let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
            if !path.starts_with(&root) {
                return Err(format!(
                    "the bind source `{source}` is outside the task directory `{}`",
                    root.display()
                ));
            }
            Ok(Mount::Bind {
                source: path,
                target,
                read_only,
            })
        }
        (_, None) => Err("a bind mount needs a `source`".to_string()),
    }
}

/// A `healthcheck` entry, with Compose's defaults.
fn health(check: dc::Healthcheck) -> Result<HealthSource, String> {
    if check.disable {
        return Ok(HealthSource::Disabled);
    }
    let test = match check.test {
        None => return Err("expected `test`, found none".to_string()),
        Some(dc::HealthcheckTest::Single(cmd)) => HealthTest::Shell(cmd),
        Some(dc::HealthcheckTest::Multiple(list)) => match list.split_first() {
            Some((first, _)) if first == "NONE" => return Ok(HealthSource::Disabled),
            Some((first, rest)) if first == "CMD" && !rest.is_empty() => {
                HealthTest::Argv(rest.to_vec())
            }
            Some((first, [cmd])) if first == "CMD-SHELL" => HealthTest::Shell(cmd.clone()),
            _ => {
                return Err(
                    "`test` must be a string, [\"CMD\", args...], [\"CMD-SHELL\", command] or \
                     [\"NONE\"]"
                        .to_string(),
                )
            }
        },
    };
    let seconds = |field: &str, value: Option<String>, default: u64| -> Result<Duration, String> {
        match value {
            None => Ok(Duration::from_secs(default)),
            Some(text) => duration(&text).ok_or_else(|| {
                format!("`{field}`: expected a duration such as `1m30s`, found `{text}`")
            }),
        }
    };
    let timeout = seconds("timeout", check.timeout, 30)?;
    Ok(HealthSource::Declared(Health {
        test,
        timeout: (!timeout.is_zero()).then_some(timeout),
        policy: HealthPolicy {
            interval: seconds("interval", check.interval, 30)?,
            start_interval: seconds("start_interval", check.start_interval, 5)?,
            start_period: seconds("start_period", check.start_period, 0)?,
            retries: u32::try_from(if check.retries == 0 {
                3
            } else {
                check.retries.max(1)
            })
            .unwrap_or(u32::MAX),
        },
    }))
}

/// `depends_on` in either form (the short form means `service_started`).
fn depends_on(options: dc::DependsOnOptions, at: &str) -> Result<Vec<Dependency>, String> {
    match options {
        dc::DependsOnOptions::Simple(list) => Ok(list
            .into_iter()
            .map(|service| Dependency {
                service,
                condition: Condition::Started,
            })
            .collect()),
        dc::DependsOnOptions::Conditional(map) => map
            .into_iter()
            .map(|(service, c)| {
                let condition = match c.condition.as_str() {
                    "service_started" => Condition::Started,
                    "service_healthy" => Condition::Healthy,
                    "service_completed_successfully" => Condition::CompletedSuccessfully,
                    other => {
                        return Err(format!(
                            "`{at}.depends_on.{service}.condition`: expected service_started, \
                             service_healthy or service_completed_successfully, found `{other}`"
                        ))
                    }
                };
                Ok(Dependency { service, condition })
            })
            .collect(),
    }
}

/// The sidecars in an order where each starts after its dependencies (the file's order
/// among independent ones); unknown dependencies, cycles and sidecars waiting for `main`
/// refused.
fn start_order(mut pending: Vec<Service>, main: &Service) -> Result<Vec<Service>, String> {
    let names: Vec<String> = pending.iter().map(|s| s.name.clone()).collect();
    for service in pending.iter().chain(std::iter::once(main)) {
        for dependency in &service.depends_on {
            if dependency.service == MAIN {
                return Err(format!(
                    "`services.{}.depends_on`: a service cannot wait for `main` (the task's \
                     container starts last)",
                    service.name
                ));
            }
            if !names.contains(&dependency.service) {
                return Err(format!(
                    "`services.{}.depends_on`: no service `{}` in the file",
                    service.name, dependency.service
                ));
            }
        }
    }
    let mut ordered: Vec<Service> = Vec::with_capacity(pending.len());
    while !pending.is_empty() {
        let ready = pending.iter().position(|s| {
            s.depends_on
                .iter()
                .all(|d| ordered.iter().any(|o| o.name == d.service))
        });
        match ready {
            Some(index) => ordered.push(pending.remove(index)),
            None => {
                let stuck: Vec<&str> = pending.iter().map(|s| s.name.as_str()).collect();
                return Err(format!(
                    "`depends_on` forms a cycle among the services {}",
                    stuck.join(", ")
                ));
            }
        }
    }
    Ok(ordered)
}
