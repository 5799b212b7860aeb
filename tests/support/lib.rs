//! Helpers for the end-to-end tests: locate the built binary and plugin libraries, lay out
//! plugin directories in temp dirs, and run the binary.
//!
//! `cargo test` does not build cdylibs: run `cargo build --workspace` first (the README's test
//! command does). Everything is located from the test binary's own path, so it follows
//! `CARGO_TARGET_DIR`.

pub mod atif;
mod freshness;
mod runs;

pub use agentcompass_test_servers::{loopback, npm_mirror, scripted};
pub use runs::{
    assert_secret_nowhere, example_plan, example_run, ok_questions, pack_run, qa_calculator_args,
    self_check_run, terminus_args, QaSetup, THREE_QUESTIONS,
};

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

/// `target/<profile>`, derived from the running test binary (`target/<profile>/deps/e2e-*`).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent()
        .and_then(Path::parent)
        .expect("test binary lives in target/<profile>/deps")
        .to_path_buf()
}

/// The built host binary (refused when missing or older than its sources).
pub fn host_bin() -> PathBuf {
    let bin = target_dir().join("agentcompass-host");
    assert!(
        bin.is_file(),
        "{} is missing: run `cargo build --workspace` before the tests",
        bin.display()
    );
    freshness::ensure_fresh(&bin, "agentcompass-host");
    bin
}

/// A built plugin library, by crate name (`example-pack` → `libexample_pack.so`; refused when
/// missing or older than its sources).
pub fn built_library(crate_name: &str) -> PathBuf {
    let lib = target_dir().join(format!("lib{}.so", crate_name.replace('-', "_")));
    assert!(
        lib.is_file(),
        "{} is missing: run `cargo build --workspace` before the tests",
        lib.display()
    );
    freshness::ensure_fresh(&lib, crate_name);
    lib
}

/// The output of one run of the binary.
#[derive(Debug)]
pub struct Outcome {
    /// Exit code (-1 when killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Outcome {
    /// The outcome of a finished process (its exit code, output decoded lossily).
    pub fn of(output: std::process::Output) -> Self {
        Outcome {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Asserts that the process exited with `code` (the outcome in the failure message,
    /// reported at the caller) and passes the outcome on, for runs made by other means than
    /// [`Workspace::run_expect`].
    #[track_caller]
    pub fn expect_code(self, code: i32) -> Self {
        assert_eq!(self.code, code, "{self:?}");
        self
    }

    /// Standard-error lines that start with `prefix`.
    pub fn stderr_lines(&self, prefix: &str) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| l.starts_with(prefix))
            .collect()
    }
}

/// Runs the host binary with `args` (bundled plugins disabled unless the args say otherwise).
pub fn run_host<I, S>(args: I) -> Outcome
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    run_host_env(args, &[])
}

/// Runs the host binary with extra environment variables.
pub fn run_host_env<I, S>(args: I, env: &[(&str, &str)]) -> Outcome
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let mut command = Command::new(host_bin());
    command
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .env_remove("AGENTCOMPASS_LOG");
    for (key, value) in env {
        command.env(key, value);
    }
    Outcome::of(command.output().expect("run agentcompass-host"))
}

/// Lowercase hex sha256 of a file.
pub fn sha256_hex(path: &Path) -> String {
    let bytes = fs::read(path).expect("read file to hash");
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A temporary plugin directory (mode 0755, under a private 0700 temp root).
pub struct PluginDirs {
    root: tempfile::TempDir,
}

impl Default for PluginDirs {
    fn default() -> Self {
        Self::new()
    }
}

impl PluginDirs {
    /// A new private temp root.
    pub fn new() -> Self {
        PluginDirs {
            root: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// The temp root.
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// Creates (if needed) and returns the sub-directory `name` (mode 0755).
    pub fn dir(&self, name: &str) -> PathBuf {
        let dir = self.root.path().join(name);
        fs::create_dir_all(&dir).expect("create plugin dir");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).expect("chmod");
        dir
    }

    /// Packages a built plugin into `dir` with the real `plugin package` command.
    pub fn package(&self, dir: &str, crate_name: &str) -> PathBuf {
        let out = self.dir(dir);
        let done = run_host([
            "plugin".as_ref(),
            "package".as_ref(),
            built_library(crate_name).as_os_str(),
            "--out".as_ref(),
            out.as_os_str(),
        ]);
        assert_eq!(done.code, 0, "plugin package failed: {done:?}");
        out
    }

    /// Copies a built library into `dir` as `NAME.so` and writes a manifest by hand (for
    /// libraries `plugin package` cannot load, such as the old-API fixture).
    pub fn place_with_manifest(
        &self,
        dir: &str,
        name: &str,
        bytes: &[u8],
        host_api: &str,
        components: &[(&str, &str)],
    ) -> PathBuf {
        let dir = self.dir(dir);
        let library = dir.join(format!("{name}.so"));
        fs::write(&library, bytes).expect("write library");
        fs::set_permissions(&library, fs::Permissions::from_mode(0o755)).expect("chmod");
        let mut manifest = format!(
            "name = \"{name}\"\nversion = \"0.1.0\"\nhost_api = \"{host_api}\"\nsha256 = \"{}\"\n",
            sha256_hex(&library)
        );
        for (kind, id) in components {
            manifest.push_str(&format!(
                "\n[[components]]\nkind = \"{kind}\"\nid = \"{id}\"\ndescription = \"\"\n"
            ));
        }
        fs::write(dir.join(format!("{name}.plugin.toml")), manifest).expect("write manifest");
        library
    }

    /// Replaces every occurrence of the temp root and the target dir in `text` with stable
    /// placeholders (for snapshots).
    pub fn redact(&self, text: &str) -> String {
        let root = fs::canonicalize(self.root()).unwrap_or_else(|_| self.root().to_path_buf());
        text.replace(&root.display().to_string(), "[TMP]")
            .replace(&self.root().display().to_string(), "[TMP]")
            .replace(&target_dir().display().to_string(), "[TARGET]")
    }
}

/// First-party packs packaged into one plugin directory `p` under a temp root of their own,
/// for a test to pass with `--plugin-dir` beside its [`Workspace`]'s example pack. Derefs to
/// the directory's path.
pub struct Packs {
    _dirs: PluginDirs,
    dir: PathBuf,
}

impl Packs {
    /// Packages each of the built plugins `crates` (with the real `plugin package` command).
    pub fn new(crates: &[&str]) -> Self {
        let dirs = PluginDirs::new();
        let dir = dirs.dir("p");
        for crate_name in crates {
            dirs.package("p", crate_name);
        }
        Packs { _dirs: dirs, dir }
    }

    /// The Harbor benchmark and the agent harnesses (`harbor-pack`, `agents-pack`).
    pub fn harbor() -> Self {
        Self::new(&["harbor-pack", "agents-pack"])
    }

    /// The `qa` benchmark and the agent harnesses (`qa-pack`, `agents-pack`).
    pub fn qa() -> Self {
        Self::new(&["qa-pack", "agents-pack"])
    }
}

impl std::ops::Deref for Packs {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.dir
    }
}

/// `--plugin-dir DIR` arguments for each directory, bundled plugins disabled.
pub fn plugin_dir_args(dirs: &[&Path]) -> Vec<std::ffi::OsString> {
    let mut args = vec!["--no-bundled-plugins".into()];
    for dir in dirs {
        args.push("--plugin-dir".into());
        args.push(dir.as_os_str().to_owned());
    }
    args
}

/// An isolated invocation environment for configuration tests: a temp `HOME` (so no user
/// config leaks in), no `XDG_CONFIG_HOME`, a working directory inside the temp root, and the
/// example pack packaged into a plugin directory.
pub struct Workspace {
    dirs: PluginDirs,
    /// The packaged example pack and example recipe.
    pub plugins: PathBuf,
    /// Working directory of every invocation (a project config may be placed here).
    pub cwd: PathBuf,
    /// The fake home directory.
    pub home: PathBuf,
}

impl Default for Workspace {
    fn default() -> Self {
        Self::new()
    }
}

impl Workspace {
    /// A new workspace with the example pack and the example recipe packaged.
    pub fn new() -> Self {
        let dirs = PluginDirs::new();
        let plugins = dirs.package("plugins", "example-pack");
        dirs.package("plugins", "example-recipe");
        let cwd = dirs.dir("project/work");
        let home = dirs.dir("home");
        Workspace {
            dirs,
            plugins,
            cwd,
            home,
        }
    }

    /// The temp root.
    pub fn root(&self) -> &Path {
        self.dirs.root()
    }

    /// Writes a file relative to the temp root (parents created) and returns its path.
    pub fn write(&self, relative: &str, content: &str) -> PathBuf {
        let path = self.dirs.root().join(relative);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(&path, content).expect("write");
        path
    }

    /// The host command [`Workspace::run`] runs, before its arguments: in `cwd`, with only
    /// `PATH` and the isolated `HOME` in its environment, bundled plugins off and the
    /// workspace's plugin dir. For tests that spawn the host themselves (to signal or kill it).
    pub fn command(&self) -> Command {
        let mut command = Command::new(host_bin());
        command
            .current_dir(&self.cwd)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .arg("--no-bundled-plugins")
            .arg("--plugin-dir")
            .arg(&self.plugins);
        command
    }

    /// Runs the host in `cwd` with `HOME` isolated, bundled plugins off and the workspace's
    /// plugin dir, plus `args`; `env` adds variables.
    pub fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Outcome {
        let mut command = self.command();
        command.args(args);
        for (key, value) in env {
            command.env(key, value);
        }
        Outcome::of(command.output().expect("run agentcompass-host"))
    }

    /// Runs as [`Workspace::run`] does and asserts that the host exited with `code` (the
    /// outcome in the failure message, reported at the caller); returns the outcome for the
    /// test's further checks.
    #[track_caller]
    pub fn run_expect(&self, code: i32, args: &[&str], env: &[(&str, &str)]) -> Outcome {
        self.run(args, env).expect_code(code)
    }

    /// [`Workspace::run_expect`] with exit code 0: a run that must succeed.
    #[track_caller]
    pub fn run_ok(&self, args: &[&str], env: &[(&str, &str)]) -> Outcome {
        self.run_expect(0, args, env)
    }

    /// Runs and parses stdout as JSON (asserting exit 0).
    #[track_caller]
    pub fn run_json(&self, args: &[&str], env: &[(&str, &str)]) -> serde_json::Value {
        let out = self.run_ok(args, env);
        serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {out:?}"))
    }

    /// Replaces the temp root in `text` with `[TMP]` (for snapshots).
    pub fn redact(&self, text: &str) -> String {
        self.dirs.redact(text)
    }
}

/// Reads and parses a JSON file, panicking with its path.
pub fn read_json(path: &Path) -> serde_json::Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The run directory a `run` printed on stdout (its last line).
pub fn run_dir(out: &Outcome) -> PathBuf {
    PathBuf::from(
        out.stdout
            .lines()
            .last()
            .unwrap_or_else(|| panic!("no run dir printed: {out:?}")),
    )
}

/// The progress events of a run (`progress.jsonl`, one JSON object a line), in order.
pub fn progress_events(run: &Path) -> Vec<serde_json::Value> {
    let path = run.join("progress.jsonl");
    fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        })
        .collect()
}

/// The phases task `task_id` went through, in order: the `phase` of each of its
/// `phase_changed` events among `events` (as [`progress_events`] reads them).
pub fn task_phases(events: &[serde_json::Value], task_id: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["task_id"] == task_id && e["event"] == "phase_changed")
        .map(|e| e["phase"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The published task directories of `run` in `state` (`normal`, `error`, `fatal`), sorted.
pub fn task_dirs(run: &Path, state: &str) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(run.join("details").join(state))
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    dirs.sort();
    dirs
}

/// Every published task of `run` by task id: its last attempt's directory and `result.json`.
pub fn published_results(
    run: &Path,
) -> std::collections::HashMap<String, (PathBuf, serde_json::Value)> {
    let mut out = std::collections::HashMap::new();
    for state in ["normal", "error", "fatal"] {
        for dir in task_dirs(run, state) {
            let task = read_json(&dir.join("task.json"));
            let attempts = task["attempts"].as_object().expect("task.json attempts");
            let last = attempts
                .keys()
                .max_by_key(|k| k.parse::<u32>().expect("numbered attempts"))
                .expect("at least one attempt");
            let attempt_dir = dir.join(attempts[last].as_str().expect("attempt dir name"));
            let result = read_json(&attempt_dir.join("result.json"));
            let id = task["task_id"].as_str().expect("task id").to_string();
            out.insert(id, (attempt_dir, result));
        }
    }
    out
}

/// Every file below `root`, in its subdirectories too (directories that cannot be read, or
/// a missing `root`, add none).
pub fn files_under(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

/// Every `.json` file under `root` parses (panics naming the first that does not); returns
/// how many there are.
pub fn json_files_parse(root: &Path) -> usize {
    assert!(root.is_dir(), "{} is no directory", root.display());
    let mut checked = 0;
    for path in files_under(root) {
        if path.extension().is_some_and(|e| e == "json") {
            let text = fs::read_to_string(&path).expect("read json file");
            serde_json::from_str::<serde_json::Value>(&text)
                .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()));
            checked += 1;
        }
    }
    checked
}

/// Every file under `dir` (recursively) whose bytes contain `needle`.
pub fn files_containing(dir: &Path, needle: &str) -> Vec<PathBuf> {
    files_under(dir)
        .into_iter()
        .filter(|path| {
            fs::read(path)
                .unwrap_or_default()
                .windows(needle.len())
                .any(|w| w == needle.as_bytes())
        })
        .collect()
}

/// The entries of `dir` (not its subdirectories') whose names start with `prefix`, such as
/// the temporary files a command must not leave behind.
pub fn entries_starting_with(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| e.path())
        .collect()
}

/// The string `field` of each element of the JSON array `array`, in order (panics, showing
/// the array, when it is no array or an element has no such string).
pub fn field_strs<'a>(array: &'a serde_json::Value, field: &str) -> Vec<&'a str> {
    json_array(array)
        .iter()
        .map(|element| {
            element[field]
                .as_str()
                .unwrap_or_else(|| panic!("no string `{field}` in {element}: {array}"))
        })
        .collect()
}

/// The first element of the JSON array `array` whose `field` is the string `value` (panics,
/// showing the array, when there is none).
pub fn find_element<'a>(
    array: &'a serde_json::Value,
    field: &str,
    value: &str,
) -> &'a serde_json::Value {
    json_array(array)
        .iter()
        .find(|element| element[field] == value)
        .unwrap_or_else(|| panic!("no element with `{field}` = {value:?} in {array}"))
}

fn json_array(array: &serde_json::Value) -> &Vec<serde_json::Value> {
    array
        .as_array()
        .unwrap_or_else(|| panic!("not a JSON array: {array}"))
}

/// Two HTTP servers on one port, answering 200 to anything: on 127.0.0.2 and 127.0.0.3.
pub fn two_loopback_servers() -> u16 {
    loopback::twin_servers("ok", "ok")
}

/// Where the JSON data block of an `agentcompass-host report` page lies in `html`: the
/// element's start (its `<script` tag), and the JSON's start and end.
pub fn report_data_block(html: &str) -> Option<(usize, std::ops::Range<usize>)> {
    let open = r#"<script type="application/json" id="report-data">"#;
    let tag = html.find(open)?;
    let start = tag + open.len();
    let end = start + html[start..].find("</script>")?;
    Some((tag, start..end))
}

/// Copies the directory `from` to `to` (files and subdirectories).
pub fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("create directory");
    for entry in fs::read_dir(from).expect("read directory").flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).expect("copy file");
        }
    }
}

/// A loopback port nothing listens on (bound, then released).
pub fn closed_loopback_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local address").port()
}

/// The container engine the container e2e tests drive: `AGENTCOMPASS_TEST_ENGINE` (`docker`,
/// the default, or `podman` in `./dev.sh test`'s podman tier). Its provider id is the
/// engine's name.
pub fn container_engine() -> &'static str {
    match std::env::var("AGENTCOMPASS_TEST_ENGINE").as_deref() {
        Ok("podman") => "podman",
        Ok("docker") | Err(_) => "docker",
        Ok(other) => panic!("AGENTCOMPASS_TEST_ENGINE `{other}`: expected docker or podman"),
    }
}

/// The provider parameter naming the engine's address (`docker_host`, `container_host`).
pub fn container_host_param() -> &'static str {
    match container_engine() {
        "podman" => "container_host",
        _ => "docker_host",
    }
}

/// The address of the tests' engine (`AGENTCOMPASS_TEST_DOCKER_HOST`, which `./dev.sh test`
/// sets to its private Docker daemon, then to its private Podman service).
pub fn container_host() -> String {
    std::env::var("AGENTCOMPASS_TEST_DOCKER_HOST").expect(
        "AGENTCOMPASS_TEST_DOCKER_HOST is not set: run the tests with ./dev.sh test, which \
         starts a private Docker daemon (and, for the podman tier, a private Podman service)",
    )
}

/// `GET target` from a server on loopback `port` (HTTP/1.1, `Connection: close`): its status
/// and body, or `None` when nothing answers.
pub fn http_get(port: u16, target: &str) -> Option<(u16, Vec<u8>)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).ok()?;
    let split = bytes.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&bytes[..split]).into_owned();
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, bytes[split + 4..].to_vec()))
}
