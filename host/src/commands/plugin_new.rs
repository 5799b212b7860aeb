//! `agentcompass-host plugin new NAME --kind KIND [--id ID] [--template T] [--path DIR]
//! [--api-path PATH]`: writes a new plugin crate that builds, packages and loads as it is.
//!
//! The crate (`DIR/NAME`) holds `Cargo.toml` (a `cdylib` with an empty `[workspace]` table, so
//! it builds on its own even inside another workspace), `src/lib.rs` (one working component of
//! the chosen kind, with unit tests, registered as `ID`, by default `NAME`), `README.md`
//! (build, package and run commands) and `.gitignore`; the `verifier` benchmark template adds
//! two sample tasks under `tasks/`. The templates live in `host/templates/plugin-new/`.
//!
//! The plugin API dependency is a path dependency on `--api-path` when given; else the crate
//! gets the exact plugin API source this host was built with (embedded in the binary by
//! `build.rs`), written to `vendor/agentcompass-plugin-api/` and depended on by path, with its
//! sha256 in `[package.metadata.agentcompass]`: the crate builds from the released binary
//! alone, with no checkout and no registry release of the plugin API.

use std::fmt;
use std::path::{Path, PathBuf};

use agentcompass_plugin_api::contracts::ComponentKind;

const CARGO_TOML: &str = include_str!("../../templates/plugin-new/Cargo.toml.in");
const README: &str = include_str!("../../templates/plugin-new/README.md.in");
const GITIGNORE: &str = include_str!("../../templates/plugin-new/gitignore.in");
const BENCHMARK: &str = include_str!("../../templates/plugin-new/benchmark.rs");
const HARNESS: &str = include_str!("../../templates/plugin-new/harness.rs");
const ENVIRONMENT: &str = include_str!("../../templates/plugin-new/env.rs");
const RECIPE: &str = include_str!("../../templates/plugin-new/recipe.rs");
const ANALYZER: &str = include_str!("../../templates/plugin-new/analyzer.rs");
const VERIFIER: &str = include_str!("../../templates/plugin-new/verifier.rs");

/// The sample tasks of the `verifier` template: (path in the crate, text, executable).
const VERIFIER_TASKS: &[(&str, &str, bool)] = &[
    (
        "tasks/count/instruction.md",
        include_str!("../../templates/plugin-new/verifier/count/instruction.md"),
        false,
    ),
    (
        "tasks/count/tests/test.sh",
        include_str!("../../templates/plugin-new/verifier/count/tests/test.sh"),
        true,
    ),
    (
        "tasks/count/solution/solve.sh",
        include_str!("../../templates/plugin-new/verifier/count/solution/solve.sh"),
        true,
    ),
    (
        "tasks/greeting/instruction.md",
        include_str!("../../templates/plugin-new/verifier/greeting/instruction.md"),
        false,
    ),
    (
        "tasks/greeting/tests/test.sh",
        include_str!("../../templates/plugin-new/verifier/greeting/tests/test.sh"),
        true,
    ),
    (
        "tasks/greeting/solution/solve.sh",
        include_str!("../../templates/plugin-new/verifier/greeting/solution/solve.sh"),
        true,
    ),
];

include!(concat!(env!("OUT_DIR"), "/plugin_api_source.rs"));

/// The lock file of the workspace this host was built from: written into a new crate with a
/// vendored plugin API, so it builds with the exact dependency versions the host was tested
/// with (abi_stable's layout checks then agree by construction); cargo drops the entries the
/// crate does not use.
const WORKSPACE_LOCK: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.lock"));

/// Where a new crate's vendored plugin API goes, relative to the crate.
pub const VENDORED_API_DIR: &str = "vendor/agentcompass-plugin-api";

/// Longest accepted plugin name.
const MAX_NAME_LEN: usize = 64;

/// Names that cannot be crate names (Rust keywords and the standard crates).
const RESERVED: &[&str] = &[
    "abstract",
    "alloc",
    "as",
    "async",
    "await",
    "become",
    "box",
    "break",
    "const",
    "continue",
    "core",
    "crate",
    "do",
    "dyn",
    "else",
    "enum",
    "extern",
    "false",
    "final",
    "fn",
    "for",
    "gen",
    "if",
    "impl",
    "in",
    "let",
    "loop",
    "macro",
    "match",
    "mod",
    "move",
    "mut",
    "override",
    "priv",
    "proc_macro",
    "pub",
    "ref",
    "return",
    "self",
    "static",
    "std",
    "struct",
    "super",
    "test",
    "trait",
    "true",
    "try",
    "type",
    "typeof",
    "union",
    "unsafe",
    "unsized",
    "use",
    "virtual",
    "where",
    "while",
    "yield",
];

/// Library names of the generated crate's dependencies (a plugin may not share one).
const DEPENDENCIES: &[&str] = &[
    "agentcompass_plugin_api",
    "serde_json",
    "serde",
    "schemars",
    "tokio",
];

/// Why `plugin new` refused or failed. One line each.
#[derive(Debug, thiserror::Error)]
pub enum NewPluginError {
    /// The name has characters a plugin name may not have.
    #[error(
        "invalid plugin name `{0}`: use lowercase letters, digits, `-` and `_`, starting with a letter (at most 64 characters)"
    )]
    InvalidName(String),
    /// The name is a Rust keyword, a standard crate or a dependency of the plugin.
    #[error("invalid plugin name `{0}`: it is reserved (a Rust keyword, a standard crate or a dependency of the plugin); choose another name")]
    ReservedName(String),
    /// `none` is the harness id reserved for harness-free benchmarks.
    #[error("invalid plugin name `none`: harness id `none` is reserved for harness-free benchmarks; choose another name")]
    ReservedHarness,
    /// The target directory exists already.
    #[error("{} already exists; choose another name or --path", .0.display())]
    Exists(PathBuf),
    /// `--id` is not a valid component id.
    #[error(
        "invalid component id `{0}` (--id): use lowercase letters, digits, `-` and `_`, starting with a letter (at most 64 characters)"
    )]
    InvalidId(String),
    /// `--template` given for a kind other than benchmark.
    #[error("--template applies to benchmarks only, found --kind {0}")]
    TemplateKind(&'static str),
    /// `--api-path` does not name a plugin API crate.
    #[error("--api-path {}: no Cargo.toml there; give the agentcompass-plugin-api crate directory", .0.display())]
    ApiPath(PathBuf),
    /// A file or directory could not be written.
    #[error("cannot write {}: {message}", .path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        message: String,
    },
}

/// Where the generated crate gets `agentcompass-plugin-api` from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiSource {
    /// A path dependency on this directory (absolute): `--api-path`.
    Path(PathBuf),
    /// The source this host was built with, written into the crate (`vendor/...`).
    Vendored {
        /// The plugin API's version.
        version: String,
        /// sha256 over every vendored file (path, NUL, text, NUL; in path order), hex.
        sha256: String,
    },
}

impl ApiSource {
    /// The embedded plugin API source.
    pub fn vendored() -> Self {
        ApiSource::Vendored {
            version: agentcompass_plugin_api::abi::API_VERSION.to_string(),
            sha256: vendored_sha256(),
        }
    }

    /// The dependency's path, as written in the manifest.
    fn path(&self) -> String {
        match self {
            ApiSource::Path(path) => path.display().to_string(),
            ApiSource::Vendored { .. } => VENDORED_API_DIR.to_string(),
        }
    }

    /// The dependency's TOML value.
    fn toml(&self) -> String {
        format!("{{ path = {} }}", toml::Value::String(self.path()))
    }

    /// A `[dev-dependencies]` table with the plugin API and `feature` enabled.
    fn dev_dependency_with(&self, feature: &str) -> String {
        let path = toml::Value::String(self.path());
        let feature = toml::Value::String(feature.to_string());
        let dependency = format!("{{ path = {path}, features = [{feature}] }}");
        format!("\n[dev-dependencies]\nagentcompass-plugin-api = {dependency}\n")
    }

    /// The `[package.metadata.agentcompass]` table recording the vendored source.
    fn metadata(&self) -> String {
        match self {
            ApiSource::Path(_) => String::new(),
            ApiSource::Vendored { version, sha256 } => format!(
                "\n# The vendored plugin API (`{VENDORED_API_DIR}`): its version and sha256.\n\
                 [package.metadata.agentcompass]\nplugin-api = \"{version}\"\n\
                 plugin-api-sha256 = \"{sha256}\"\n"
            ),
        }
    }
}

/// sha256 of the embedded plugin API source (see [`ApiSource::Vendored`]).
pub fn vendored_sha256() -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    let mut files: Vec<&(&str, &str)> = PLUGIN_API_SOURCE.iter().collect();
    files.sort_by_key(|(path, _)| *path);
    for (path, text) in files {
        hasher.update(path.as_bytes());
        hasher.update([0]);
        hasher.update(text.as_bytes());
        hasher.update([0]);
    }
    hex::encode(hasher.finalize())
}

impl fmt::Display for ApiSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiSource::Path(path) => write!(f, "path {}", path.display()),
            ApiSource::Vendored { version, sha256 } => write!(
                f,
                "{version}, vendored in {VENDORED_API_DIR} (sha256 {})",
                &sha256[..12]
            ),
        }
    }
}

/// The shape of a generated benchmark (`--template`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Template {
    /// Questions with reference answers, scored by exact match on the host (the default).
    Qa,
    /// Task directories scored in the environment by hidden tests with a fractional reward,
    /// with reference solutions for `oracle`.
    Verifier,
}

/// Checks a plugin name: lowercase ASCII letters, digits, `-` and `_`, starting with a letter,
/// at most 64 characters, not reserved. The name is the crate name, the plugin name and the
/// component id.
pub fn validate_name(name: &str, kind: ComponentKind) -> Result<(), NewPluginError> {
    let well_formed = name.len() <= MAX_NAME_LEN
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_'));
    if !well_formed {
        return Err(NewPluginError::InvalidName(name.to_string()));
    }
    let lib = lib_name(name);
    if RESERVED.contains(&lib.as_str()) || DEPENDENCIES.contains(&lib.as_str()) {
        return Err(NewPluginError::ReservedName(name.to_string()));
    }
    if kind == ComponentKind::Harness && name == "none" {
        return Err(NewPluginError::ReservedHarness);
    }
    Ok(())
}

/// The crate's library name (`my-pack` → `my_pack`, built as `libmy_pack.so`).
pub fn lib_name(name: &str) -> String {
    name.replace('-', "_")
}

/// The plugin API source: `--api-path` (made absolute), else the vendored copy.
pub fn api_source(api_path: Option<&Path>) -> Result<ApiSource, NewPluginError> {
    let Some(path) = api_path else {
        return Ok(ApiSource::vendored());
    };
    if !path.join("Cargo.toml").is_file() {
        return Err(NewPluginError::ApiPath(path.to_path_buf()));
    }
    let absolute =
        std::fs::canonicalize(path).map_err(|_| NewPluginError::ApiPath(path.to_path_buf()))?;
    Ok(ApiSource::Path(absolute))
}

/// The word for `kind` on the command line (`env` for environments).
fn kind_word(kind: ComponentKind) -> &'static str {
    match kind {
        ComponentKind::Benchmark => "benchmark",
        ComponentKind::Harness => "harness",
        ComponentKind::Environment => "env",
        ComponentKind::Recipe => "recipe",
        ComponentKind::Analyzer => "analyzer",
    }
}

/// What `plugin new` generates.
#[derive(Debug, Clone, Copy)]
pub struct NewPlugin<'a> {
    /// Crate and plugin name.
    pub name: &'a str,
    /// The component's registry id (`--id`, by default the name).
    pub id: &'a str,
    /// The component's kind.
    pub kind: ComponentKind,
    /// The benchmark template (benchmarks only).
    pub template: Template,
}

/// One generated file: its path in the crate, its text and whether it is executable.
pub struct GeneratedFile {
    /// Path relative to the crate directory.
    pub path: String,
    /// Content.
    pub text: String,
    /// Mode 0755 (scripts) rather than 0644.
    pub executable: bool,
}

/// The README's run command and the note under it.
fn run_example(new: &NewPlugin<'_>) -> (String, String) {
    let host = "agentcompass-host --plugin-dir ~/.local/lib/agentcompass/plugins";
    let id = new.id;
    match (new.kind, new.template) {
        (ComponentKind::Benchmark, Template::Verifier) => (
            format!("{host} run {id} oracle reference --env sandbox"),
            "`oracle` (from the agents pack bundled with the host) runs each task's \
             reference solution: every task scores reward 1. An agent that writes wrong files \
             earns part of the reward. The sample tasks live in `tasks/`; `--benchmark-params \
             '{\"tasks_dir\": \"DIR\"}'` points at yours. `--env docker` (with an image that \
             has `sh`) and `--env host_process` run the same tasks."
                .to_string(),
        ),
        (ComponentKind::Benchmark, Template::Qa) => (
            format!("{host} run {id} example_calculator my-model"),
            "`example_calculator` (from the example pack bundled with the host) answers the \
             arithmetic questions without a model. With a real agent, name the model endpoint, \
             for example `run NAME openai_chat gpt-4.1 --model-base-url \
             https://api.openai.com/v1 --model-api-key '${OPENAI_API_KEY}'`. `config docs \
             benchmark NAME` lists the parameters (`--benchmark-params '{\"case_sensitive\": \
             true}'`)."
                .replace("NAME", id),
        ),
        (ComponentKind::Harness, _) => (
            format!("{host} run example_exact_match {id} my-model"),
            "The harness needs no model by default: it echoes each prompt in the task \
             environment (so `example_exact_match` scores it 0). With `--harness-params \
             '{\"use_model\": true}'` it asks the run's model through the host's gateway; add \
             `--model-base-url URL --model-api-key '${OPENAI_API_KEY}'`."
                .to_string(),
        ),
        (ComponentKind::Environment, _) => (
            format!("{host} run example_self_check none my-model --env {id}"),
            "`example_self_check` (a harness-free benchmark from the example pack) runs each \
             question as a shell command in the environment."
                .to_string(),
        ),
        (ComponentKind::Recipe, _) => (
            format!(
                "{host} plan example_exact_match example_calculator my-model --task arith-0000 \
                 --recipe {id}"
            ),
            "The plan lists the recipe under `applied_recipes` and shows the \
             `run_timeout_seconds` it set. Recipe plugins may also live in a `--recipe-dir` \
             (which holds recipe plugins only)."
                .to_string(),
        ),
        (ComponentKind::Analyzer, _) => (
            format!(
                "{host} run example_exact_match example_calculator my-model \
                 --analysis-params '{{\"{id}\": {{\"max_chars\": 1}}}}'"
            ),
            "Each attempt's `result.json` then holds `analysis_result[\"NAME\"]` (`is_badcase`, \
             `details`, `score`), and the run's `analysis_summary.json` counts the bad cases. \
             Re-analyze a finished run without running it again: `agentcompass-host analysis \
             --input RUN_DIR --analysis-params '{\"analyzers\": [\"NAME\"]}' --output DIR`."
                .replace("NAME", id),
        ),
    }
}

/// The generated files, relative to the crate directory (the vendored plugin API excluded:
/// [`create`] writes it).
pub fn render(new: &NewPlugin<'_>, api: &ApiSource) -> Vec<GeneratedFile> {
    let (name, id, kind) = (new.name, new.id, new.kind);
    let word = kind_word(kind);
    let typed_params = "serde = { version = \"1\", features = [\"derive\"] }\n\
                        schemars = { version = \"1\", default-features = false, features = \
                        [\"derive\", \"std\"] }\n";
    let (source, deps) = match (kind, new.template) {
        (ComponentKind::Benchmark, Template::Qa) => (BENCHMARK, String::new()),
        (ComponentKind::Benchmark, Template::Verifier) => (VERIFIER, typed_params.to_string()),
        (ComponentKind::Harness, _) => (HARNESS, String::new()),
        // The tests run the SDK's session contract kit.
        (ComponentKind::Environment, _) => (ENVIRONMENT, api.dev_dependency_with("contract-kit")),
        (ComponentKind::Recipe, _) => (RECIPE, String::new()),
        (ComponentKind::Analyzer, _) => (ANALYZER, String::new()),
    };
    let template_flag = match new.template {
        Template::Verifier => " --template verifier",
        Template::Qa => "",
    };
    let (run, note) = run_example(new);
    let cargo = CARGO_TOML
        .replace("__API_DEP__", &api.toml())
        .replace("__EXTRA_DEPS__\n", &deps)
        .replace("__METADATA__\n", &api.metadata())
        .replace("__KIND__", word)
        .replace("__NAME__", name);
    let readme = README
        .replace("__RUN__", &run)
        .replace("__RUN_NOTE__", &note)
        .replace("__LIST__", word)
        .replace("__KIND__", word)
        .replace("__TEMPLATE__", template_flag)
        .replace("__LIB__", &lib_name(name))
        .replace("__ID__", id)
        .replace("__NAME__", name);
    let file = |path: &str, text: String, executable: bool| GeneratedFile {
        path: path.to_string(),
        text,
        executable,
    };
    let lib = source.replace("__ID__", id).replace("__NAME__", name);
    let mut files = vec![
        file("Cargo.toml", cargo, false),
        file("README.md", readme, false),
        file(".gitignore", GITIGNORE.to_string(), false),
        file("src/lib.rs", lib, false),
    ];
    if (kind, new.template) == (ComponentKind::Benchmark, Template::Verifier) {
        for (path, text, executable) in VERIFIER_TASKS {
            files.push(file(path, text.to_string(), *executable));
        }
    }
    files
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> NewPluginError + '_ {
    move |e| NewPluginError::Io {
        path: path.to_path_buf(),
        message: agentcompass_plugin_api::one_line(&e.to_string()),
    }
}

/// Writes `text` to `dir/relative` (parents created), mode 0755 when `executable`.
fn write_file(
    dir: &Path,
    relative: &str,
    text: &str,
    executable: bool,
) -> Result<(), NewPluginError> {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    std::fs::write(&path, text).map_err(io(&path))?;
    if executable {
        let mode = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(&path, mode).map_err(io(&path))?;
    }
    Ok(())
}

/// Writes the crate into `parent/name` (which must not exist) and returns its directory.
pub fn create(
    new: &NewPlugin<'_>,
    parent: &Path,
    api: &ApiSource,
) -> Result<PathBuf, NewPluginError> {
    validate_name(new.name, new.kind)?;
    validate_id(new.id, new.kind)?;
    let dir = parent.join(new.name);
    if dir.symlink_metadata().is_ok() {
        return Err(NewPluginError::Exists(dir));
    }
    std::fs::create_dir_all(parent).map_err(io(parent))?;
    // `create_dir` (not `create_dir_all`) fails when another process created it meanwhile.
    std::fs::create_dir(&dir).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => NewPluginError::Exists(dir.clone()),
        _ => io(&dir)(e),
    })?;
    for file in render(new, api) {
        write_file(&dir, &file.path, &file.text, file.executable)?;
    }
    if let ApiSource::Vendored { .. } = api {
        for (relative, text) in PLUGIN_API_SOURCE {
            write_file(&dir.join(VENDORED_API_DIR), relative, text, false)?;
        }
        write_file(&dir, "Cargo.lock", WORKSPACE_LOCK, false)?;
    }
    Ok(dir)
}

/// Checks a component id given with `--id`: the name rules, without the crate-name
/// reservations.
pub fn validate_id(id: &str, kind: ComponentKind) -> Result<(), NewPluginError> {
    let well_formed = id.len() <= MAX_NAME_LEN
        && id.starts_with(|c: char| c.is_ascii_lowercase())
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_'));
    if !well_formed {
        return Err(NewPluginError::InvalidId(id.to_string()));
    }
    if kind == ComponentKind::Harness && id == "none" {
        return Err(NewPluginError::ReservedHarness);
    }
    Ok(())
}

/// The command: validates, writes the crate and prints what to do next. Returns exit code 0.
pub fn run(
    new: &NewPlugin<'_>,
    path: Option<&Path>,
    api_path: Option<&Path>,
) -> Result<i32, NewPluginError> {
    validate_name(new.name, new.kind)?;
    validate_id(new.id, new.kind)?;
    if new.kind != ComponentKind::Benchmark && new.template != Template::Qa {
        return Err(NewPluginError::TemplateKind(kind_word(new.kind)));
    }
    let api = api_source(api_path)?;
    let dir = create(new, path.unwrap_or(Path::new(".")), &api)?;
    let lib = lib_name(new.name);
    crate::outln!(
        "created {} plugin `{}` (component `{}`) in {} (agentcompass-plugin-api: {api})",
        kind_word(new.kind),
        new.name,
        new.id,
        dir.display()
    );
    crate::outln!("next:");
    crate::outln!(
        "  cd {} && cargo test && cargo build --release",
        dir.display()
    );
    crate::outln!("  agentcompass-host plugin package target/release/lib{lib}.so --out PLUGIN_DIR");
    crate::outln!(
        "  agentcompass-host --plugin-dir PLUGIN_DIR list {}",
        kind_word(new.kind)
    );
    crate::outln!("(see README.md in the new crate)");
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_crate_style_names() {
        for name in ["my-bench", "my_bench", "b2", "x", "a-b_c-9"] {
            assert!(
                validate_name(name, ComponentKind::Benchmark).is_ok(),
                "{name}"
            );
        }
        assert!(validate_name(&"a".repeat(64), ComponentKind::Benchmark).is_ok());
    }

    #[test]
    fn rejects_bad_names_with_one_line() {
        for name in [
            "",
            "My-Bench",
            "2fast",
            "-x",
            "_x",
            "a b",
            "a.b",
            "a/b",
            "../x",
            "é",
            &"a".repeat(65),
        ] {
            let err = validate_name(name, ComponentKind::Benchmark).unwrap_err();
            let text = err.to_string();
            assert!(text.starts_with("invalid plugin name"), "{text}");
            assert!(!text.contains('\n'), "{text}");
        }
        for name in [
            "fn",
            "std",
            "test",
            "self",
            "serde_json",
            "serde-json",
            "tokio",
        ] {
            let err = validate_name(name, ComponentKind::Recipe).unwrap_err();
            assert!(
                matches!(err, NewPluginError::ReservedName(_)),
                "{name}: {err}"
            );
        }
        assert!(validate_name("agentcompass-plugin-api", ComponentKind::Benchmark).is_err());
        assert!(matches!(
            validate_name("none", ComponentKind::Harness),
            Err(NewPluginError::ReservedHarness)
        ));
        assert!(validate_name("none", ComponentKind::Benchmark).is_ok());
    }

    fn new(name: &str, id: &str, kind: ComponentKind) -> NewPlugin<'static> {
        let leak = |s: &str| -> &'static str { Box::leak(s.to_string().into_boxed_str()) };
        NewPlugin {
            name: leak(name),
            id: leak(id),
            kind,
            template: Template::Qa,
        }
    }

    #[test]
    fn renders_every_placeholder() {
        let api = ApiSource::Path(PathBuf::from("/src/plugin-api"));
        for kind in [
            ComponentKind::Benchmark,
            ComponentKind::Harness,
            ComponentKind::Environment,
            ComponentKind::Recipe,
            ComponentKind::Analyzer,
        ] {
            let files = render(&new("my-pack", "my_component", kind), &api);
            for file in &files {
                assert!(
                    !file.text.contains("__"),
                    "{kind} {}: placeholder left",
                    file.path
                );
            }
            let cargo = &files[0].text;
            let parsed: toml::Value = toml::from_str(cargo).unwrap();
            assert_eq!(parsed["package"]["name"].as_str(), Some("my-pack"));
            assert_eq!(
                parsed["dependencies"]["agentcompass-plugin-api"]["path"].as_str(),
                Some("/src/plugin-api")
            );
            assert_eq!(
                parsed["lib"]["crate-type"][0].as_str(),
                Some("cdylib"),
                "{cargo}"
            );
            assert!(parsed["workspace"].as_table().is_some());
            let kit = parsed
                .get("dev-dependencies")
                .map(|d| d["agentcompass-plugin-api"]["features"][0].as_str());
            assert_eq!(
                kit,
                (kind == ComponentKind::Environment).then_some(Some("contract-kit"))
            );
            let lib = &files[3].text;
            assert!(
                lib.contains("pub const ID: &str = \"my_component\";"),
                "{lib}"
            );
            assert!(files[1].text.contains("libmy_pack.so"));
        }
        let verifier = NewPlugin {
            template: Template::Verifier,
            ..new("v", "v", ComponentKind::Benchmark)
        };
        let files = render(&verifier, &ApiSource::vendored());
        let parsed: toml::Value = toml::from_str(&files[0].text).unwrap();
        assert_eq!(
            parsed["dependencies"]["agentcompass-plugin-api"]["path"].as_str(),
            Some(VENDORED_API_DIR)
        );
        assert!(parsed["dependencies"]["schemars"].is_table());
        let meta = &parsed["package"]["metadata"]["agentcompass"];
        assert_eq!(
            meta["plugin-api-sha256"].as_str(),
            Some(vendored_sha256().as_str())
        );
        let scripts: Vec<&str> = files
            .iter()
            .filter(|f| f.executable)
            .map(|f| f.path.as_str())
            .collect();
        assert_eq!(scripts.len(), 4, "{scripts:?}");
        assert!(files.iter().all(|f| !f.text.contains("__")));
    }

    #[test]
    fn the_vendored_api_is_standalone_and_complete() {
        let manifest = PLUGIN_API_SOURCE
            .iter()
            .find(|(path, _)| *path == "Cargo.toml")
            .unwrap()
            .1;
        let parsed: toml::Value = toml::from_str(manifest).unwrap();
        assert_eq!(
            parsed["package"]["version"].as_str(),
            Some(agentcompass_plugin_api::abi::API_VERSION)
        );
        assert!(!manifest.contains("workspace"), "{manifest}");
        for (name, dep) in parsed["dependencies"].as_table().unwrap() {
            assert!(dep.get("version").is_some(), "{name}: {dep}");
        }
        assert!(PLUGIN_API_SOURCE.iter().any(|(p, _)| *p == "src/lib.rs"));
        assert!(PLUGIN_API_SOURCE
            .iter()
            .any(|(p, _)| *p == "src/sdk/verifier/mod.rs"));
        assert_eq!(vendored_sha256().len(), 64);
    }

    #[test]
    fn the_guide_shows_the_generated_benchmark() {
        // docs/plugins.md quotes the benchmark template (without its tests) as its complete
        // example; keep them identical.
        let guide =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/plugins.md"))
                .unwrap();
        let files = render(
            &new("my-bench", "my-bench", ComponentKind::Benchmark),
            &ApiSource::vendored(),
        );
        let lib = &files[3].text;
        let code = &lib[..lib.find("#[cfg(test)]").unwrap()];
        assert!(
            guide.contains(code.trim_end()),
            "docs/plugins.md's benchmark example differs from templates/plugin-new/benchmark.rs"
        );
    }

    #[test]
    fn the_api_is_vendored_unless_api_path_is_given_and_checked() {
        assert!(matches!(api_source(None), Ok(ApiSource::Vendored { .. })));
        let dir = tempfile::tempdir().unwrap();
        let err = api_source(Some(dir.path())).unwrap_err();
        assert!(err.to_string().starts_with("--api-path "), "{err}");
        std::fs::write(dir.path().join("Cargo.toml"), "").unwrap();
        assert_eq!(
            api_source(Some(dir.path())).unwrap(),
            ApiSource::Path(std::fs::canonicalize(dir.path()).unwrap())
        );
    }

    #[test]
    fn create_writes_the_crate_and_refuses_an_existing_directory() {
        let dir = tempfile::tempdir().unwrap();
        let api = ApiSource::vendored();
        let env = new("my-env", "my-env", ComponentKind::Environment);
        let made = create(&env, dir.path(), &api).unwrap();
        assert_eq!(made, dir.path().join("my-env"));
        for file in ["Cargo.toml", "README.md", ".gitignore", "src/lib.rs"] {
            assert!(made.join(file).is_file(), "{file}");
        }
        assert!(made.join("Cargo.lock").is_file());
        let vendored = made.join(VENDORED_API_DIR);
        assert!(vendored.join("Cargo.toml").is_file() && vendored.join("src/lib.rs").is_file());
        let recipe = new("my-env", "my-env", ComponentKind::Recipe);
        let err = create(&recipe, dir.path(), &api).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{} already exists; choose another name or --path",
                made.display()
            )
        );
        let err = create(&new("Bad", "bad", ComponentKind::Recipe), dir.path(), &api).unwrap_err();
        assert!(matches!(err, NewPluginError::InvalidName(_)));
        assert!(!dir.path().join("Bad").exists());
        let err = create(
            &new("ok", "Bad Id", ComponentKind::Recipe),
            dir.path(),
            &api,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid component id `Bad Id` (--id): use lowercase letters, digits, `-` and `_`, \
             starting with a letter (at most 64 characters)"
        );
    }
}
