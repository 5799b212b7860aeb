//! `agentcompass-host plugin new NAME --kind KIND [--path DIR] [--api-path PATH]`: writes a
//! new plugin crate that builds, packages and loads as it is.
//!
//! The crate (`DIR/NAME`) holds `Cargo.toml` (a `cdylib` with an empty `[workspace]` table, so
//! it builds on its own even inside another workspace), `src/lib.rs` (one working component of
//! the chosen kind, with unit tests), `README.md` (build, package and run commands) and
//! `.gitignore`. The templates live in `host/templates/plugin-new/`.
//!
//! The plugin API dependency is a path dependency when `--api-path` is given or when this host
//! was built from a source tree that still exists (`<host crate>/../plugin-api`), else the
//! version `0.1`.

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

/// The plugin API crate of the source tree this host was built from (checked at run time).
const SOURCE_TREE_API: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../plugin-api");

/// The version requirement used when no plugin API source tree is available.
pub const API_VERSION_REQ: &str = "0.1.1";

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
const DEPENDENCIES: &[&str] = &["agentcompass_plugin_api", "serde_json", "tokio"];

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
    /// A path dependency on this directory (absolute).
    Path(PathBuf),
    /// A registry dependency on this version requirement.
    Version(String),
}

impl ApiSource {
    /// The dependency's TOML value.
    fn toml(&self) -> String {
        match self {
            ApiSource::Path(path) => format!(
                "{{ path = {} }}",
                toml::Value::String(path.display().to_string())
            ),
            ApiSource::Version(req) => toml::Value::String(req.clone()).to_string(),
        }
    }

    /// A `[dev-dependencies]` table with the plugin API and `feature` enabled.
    fn dev_dependency_with(&self, feature: &str) -> String {
        let source = match self {
            ApiSource::Path(path) => {
                format!("path = {}", toml::Value::String(path.display().to_string()))
            }
            ApiSource::Version(req) => format!("version = {}", toml::Value::String(req.clone())),
        };
        let feature = toml::Value::String(feature.to_string());
        let dependency = format!("{{ {source}, features = [{feature}] }}");
        format!("\n[dev-dependencies]\nagentcompass-plugin-api = {dependency}\n")
    }
}

impl fmt::Display for ApiSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiSource::Path(path) => write!(f, "path {}", path.display()),
            ApiSource::Version(req) => write!(f, "version {req}"),
        }
    }
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

/// The plugin API source: `--api-path` (made absolute), else this host's source tree when it
/// still exists, else the registry version.
pub fn api_source(api_path: Option<&Path>) -> Result<ApiSource, NewPluginError> {
    if let Some(path) = api_path {
        if !path.join("Cargo.toml").is_file() {
            return Err(NewPluginError::ApiPath(path.to_path_buf()));
        }
        let absolute =
            std::fs::canonicalize(path).map_err(|_| NewPluginError::ApiPath(path.to_path_buf()))?;
        return Ok(ApiSource::Path(absolute));
    }
    let source_tree = Path::new(SOURCE_TREE_API);
    if source_tree.join("Cargo.toml").is_file() {
        if let Ok(absolute) = std::fs::canonicalize(source_tree) {
            return Ok(ApiSource::Path(absolute));
        }
    }
    Ok(ApiSource::Version(API_VERSION_REQ.to_string()))
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

/// The README's run command and the note under it.
fn run_example(name: &str, kind: ComponentKind) -> (String, String) {
    let host = "agentcompass-host --plugin-dir ~/.local/lib/agentcompass/plugins";
    match kind {
        ComponentKind::Benchmark => (
            format!("{host} run {name} example_calculator my-model"),
            "`example_calculator` (from the example pack bundled with the host) answers the \
             arithmetic questions without a model. With a real agent, name the model endpoint, \
             for example `run NAME openai_chat gpt-4.1 --model-base-url \
             https://api.openai.com/v1 --model-api-key '${OPENAI_API_KEY}'`. `config docs \
             benchmark NAME` lists the parameters (`--benchmark-params '{\"case_sensitive\": \
             true}'`)."
                .replace("NAME", name),
        ),
        ComponentKind::Harness => (
            format!("{host} run example_exact_match {name} my-model"),
            "The harness needs no model by default: it echoes each prompt in the task \
             environment (so `example_exact_match` scores it 0). With `--harness-params \
             '{\"use_model\": true}'` it asks the run's model through the host's gateway; add \
             `--model-base-url URL --model-api-key '${OPENAI_API_KEY}'`."
                .to_string(),
        ),
        ComponentKind::Environment => (
            format!("{host} run example_self_check none my-model --env {name}"),
            "`example_self_check` (a harness-free benchmark from the example pack) runs each \
             question as a shell command in the environment."
                .to_string(),
        ),
        ComponentKind::Recipe => (
            format!(
                "{host} plan example_exact_match example_calculator my-model --task arith-0000 \
                 --recipe {name}"
            ),
            "The plan lists the recipe under `applied_recipes` and shows the \
             `run_timeout_seconds` it set. Recipe plugins may also live in a `--recipe-dir` \
             (which holds recipe plugins only)."
                .to_string(),
        ),
        ComponentKind::Analyzer => (
            format!(
                "{host} run example_exact_match example_calculator my-model \
                 --analysis-params '{{\"{name}\": {{\"max_chars\": 1}}}}'"
            ),
            "Each attempt's `result.json` then holds `analysis_result[\"NAME\"]` (`is_badcase`, \
             `details`, `score`), and the run's `analysis_summary.json` counts the bad cases. \
             Re-analyze a finished run without running it again: `agentcompass-host analysis \
             --input RUN_DIR --analysis-params '{\"analyzers\": [\"NAME\"]}' --output DIR`."
                .replace("NAME", name),
        ),
    }
}

/// The generated files, relative to the crate directory.
pub fn render(name: &str, kind: ComponentKind, api: &ApiSource) -> Vec<(&'static str, String)> {
    let word = kind_word(kind);
    let (source, extra_deps) = match kind {
        ComponentKind::Benchmark => (BENCHMARK, String::new()),
        ComponentKind::Harness => (HARNESS, String::new()),
        // The tests run the SDK's session contract kit.
        ComponentKind::Environment => (ENVIRONMENT, api.dev_dependency_with("contract-kit")),
        ComponentKind::Recipe => (RECIPE, String::new()),
        ComponentKind::Analyzer => (ANALYZER, String::new()),
    };
    let (run, note) = run_example(name, kind);
    let cargo = CARGO_TOML
        .replace("__API_DEP__", &api.toml())
        .replace("__EXTRA_DEPS__\n", &extra_deps)
        .replace("__KIND__", word)
        .replace("__NAME__", name);
    let readme = README
        .replace("__RUN__", &run)
        .replace("__RUN_NOTE__", &note)
        .replace("__LIST__", word)
        .replace("__KIND__", word)
        .replace("__LIB__", &lib_name(name))
        .replace("__NAME__", name);
    vec![
        ("Cargo.toml", cargo),
        ("README.md", readme),
        (".gitignore", GITIGNORE.to_string()),
        ("src/lib.rs", source.replace("__NAME__", name)),
    ]
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> NewPluginError + '_ {
    move |e| NewPluginError::Io {
        path: path.to_path_buf(),
        message: agentcompass_plugin_api::one_line(&e.to_string()),
    }
}

/// Writes the crate into `parent/name` (which must not exist) and returns its directory.
pub fn create(
    name: &str,
    kind: ComponentKind,
    parent: &Path,
    api: &ApiSource,
) -> Result<PathBuf, NewPluginError> {
    validate_name(name, kind)?;
    let dir = parent.join(name);
    if dir.symlink_metadata().is_ok() {
        return Err(NewPluginError::Exists(dir));
    }
    std::fs::create_dir_all(parent).map_err(io(parent))?;
    // `create_dir` (not `create_dir_all`) fails when another process created it meanwhile.
    std::fs::create_dir(&dir).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => NewPluginError::Exists(dir.clone()),
        _ => io(&dir)(e),
    })?;
    for (relative, content) in render(name, kind, api) {
        let path = dir.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        std::fs::write(&path, content).map_err(io(&path))?;
    }
    Ok(dir)
}

/// The command: validates, writes the crate and prints what to do next. Returns exit code 0.
pub fn run(
    name: &str,
    kind: ComponentKind,
    path: Option<&Path>,
    api_path: Option<&Path>,
) -> Result<i32, NewPluginError> {
    validate_name(name, kind)?;
    let api = api_source(api_path)?;
    let dir = create(name, kind, path.unwrap_or(Path::new(".")), &api)?;
    let lib = lib_name(name);
    crate::outln!(
        "created {} plugin `{name}` in {} (agentcompass-plugin-api: {api})",
        kind_word(kind),
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
        kind_word(kind)
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
            for (file, text) in render("my-pack", kind, &api) {
                assert!(!text.contains("__"), "{kind} {file}: placeholder left");
            }
            let files = render("my-pack", kind, &api);
            let cargo = &files[0].1;
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
            let lib = &files[3].1;
            assert!(lib.contains("pub const ID: &str = \"my-pack\";"), "{lib}");
            assert!(files[1].1.contains("libmy_pack.so"));
        }
        let files = render(
            "p",
            ComponentKind::Recipe,
            &ApiSource::Version(API_VERSION_REQ.into()),
        );
        let parsed: toml::Value = toml::from_str(&files[0].1).unwrap();
        assert_eq!(
            parsed["dependencies"]["agentcompass-plugin-api"].as_str(),
            Some("0.1.1")
        );
    }

    #[test]
    fn the_guide_shows_the_generated_benchmark() {
        // docs/plugins.md quotes the benchmark template (without its tests) as its complete
        // example; keep them identical.
        let guide =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/plugins.md"))
                .unwrap();
        let files = render(
            "my-bench",
            ComponentKind::Benchmark,
            &ApiSource::Version("0.1".into()),
        );
        let lib = &files[3].1;
        let code = &lib[..lib.find("#[cfg(test)]").unwrap()];
        assert!(
            guide.contains(code.trim_end()),
            "docs/plugins.md's benchmark example differs from templates/plugin-new/benchmark.rs"
        );
    }

    #[test]
    fn the_source_tree_api_is_found_and_api_path_is_checked() {
        // Tests run from the source tree, so the baked-in path exists.
        assert!(matches!(api_source(None), Ok(ApiSource::Path(_))));
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
        let api = ApiSource::Version("0.1".into());
        let made = create("my-env", ComponentKind::Environment, dir.path(), &api).unwrap();
        assert_eq!(made, dir.path().join("my-env"));
        for file in ["Cargo.toml", "README.md", ".gitignore", "src/lib.rs"] {
            assert!(made.join(file).is_file(), "{file}");
        }
        let err = create("my-env", ComponentKind::Recipe, dir.path(), &api).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{} already exists; choose another name or --path",
                made.display()
            )
        );
        let err = create("Bad", ComponentKind::Recipe, dir.path(), &api).unwrap_err();
        assert!(matches!(err, NewPluginError::InvalidName(_)));
        assert!(!dir.path().join("Bad").exists());
    }
}
