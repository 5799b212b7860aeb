//! README.md's quick start runs as written (issue 58): every shell block marked `bash runnable`
//! in the README, then in the user guide's chapters (`docs/src/`), is run with
//! `bash -euo pipefail`, in order, in one temporary directory holding a copy of `examples/`,
//! with the built binaries (`target/debug`: `agentcompass-host`, `scripted-llm`, the bundled
//! `plugins/`) first on `PATH` and `HOME`, the XDG directories and `TMPDIR` inside the
//! temporary directory, so nothing outside it is written. Each block must exit 0; a block that
//! runs a Harbor evaluation of the bundled tasks must score all three. Each block runs in a
//! process group of its own, killed when the block ends (passed, failed or timed out), so a
//! server it started in the background never outlives it. Every other shell block of the
//! README must say what it needs instead (`docs/check.py` checks the guide's too).
use std::fs::{self, File};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentcompass_e2e::{built_library, host_bin, sha256_hex, target_dir};

/// What a shell block may say it needs, when it is not `runnable` (as `docs/check.py`).
const MARKERS: &[&str] = &[
    "runnable",
    "needs-key",
    "needs-docker",
    "needs-podman",
    "needs-network",
    "needs-slurm",
    "template",
];

/// The longest a block may take (the quick start takes about two seconds).
const BLOCK_TIMEOUT: Duration = Duration::from_secs(300);

/// A fenced block of the README: its fence's line number, info string and body.
struct Block {
    line: usize,
    info: String,
    body: String,
}

fn blocks(markdown: &str) -> Vec<Block> {
    let mut found = Vec::new();
    let mut open: Option<Block> = None;
    for (n, line) in markdown.lines().enumerate() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => {
                open = Some(Block {
                    line: n + 1,
                    info: info.trim().to_string(),
                    body: String::new(),
                })
            }
            (Some(_), Some(rest)) if rest.trim().is_empty() => found.extend(open.take()),
            (Some(block), _) => {
                block.body.push_str(line);
                block.body.push('\n');
            }
            (None, None) => {}
        }
    }
    found
}

fn is_shell(info: &str) -> bool {
    matches!(
        info.split([' ', ',']).next(),
        Some("bash" | "sh" | "shell" | "console")
    )
}

/// The repository's README.
fn readme() -> String {
    read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The runnable blocks of the README, then of the user guide's chapters (by file name), each
/// with the file it is in.
fn runnable_blocks() -> Vec<(String, Block)> {
    let guide = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src");
    let mut chapters: Vec<PathBuf> = fs::read_dir(&guide)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    chapters.sort();
    let mut files = vec![("README.md".to_string(), readme())];
    for chapter in chapters {
        let name = format!(
            "docs/src/{}",
            chapter.file_name().unwrap().to_string_lossy()
        );
        files.push((name, read(&chapter)));
    }
    let mut runnable = Vec::new();
    for (name, text) in files {
        for block in blocks(&text) {
            if is_shell(&block.info) && block.info.split([' ', ',']).any(|w| w == "runnable") {
                runnable.push((name.clone(), block));
            }
        }
    }
    runnable
}

/// Refuses binaries older than their sources, and bundled plugins that are not the built ones.
fn check_build() {
    host_bin();
    for (crate_name, bundled) in [
        ("harbor-pack", "harbor-pack"),
        ("agents-pack", "agents-pack"),
    ] {
        let built = built_library(crate_name);
        let bundled = target_dir().join("plugins").join(format!("{bundled}.so"));
        assert!(
            bundled.is_file() && sha256_hex(&bundled) == sha256_hex(&built),
            "{} is missing or is not {}: run `./dev.sh demo` (it bundles the plugins)",
            bundled.display(),
            built.display()
        );
    }
    let server = target_dir().join("scripted-llm");
    let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("servers/src");
    let built = fs::metadata(&server)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| panic!("{}: {e}: run `./dev.sh demo`", server.display()));
    for file in agentcompass_e2e::files_under(&sources) {
        let modified = fs::metadata(&file).and_then(|m| m.modified()).unwrap();
        assert!(
            modified <= built,
            "{} is older than {}: run `./dev.sh demo`",
            server.display(),
            file.display()
        );
    }
}

/// The block's outcome: exit code, stdout, stderr.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Kills a block's process group (the block and whatever it left in the background).
struct Group(u32);

impl Drop for Group {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0)])
            .stderr(Stdio::null())
            .status();
    }
}

/// Runs one block with `bash -euo pipefail` in `dir`, in a process group of its own.
fn run_block(dir: &Path, index: usize, body: &str) -> Ran {
    let out = dir.join(format!(".block-{index}.out"));
    let err = dir.join(format!(".block-{index}.err"));
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![target_dir()];
    paths.extend(std::env::split_paths(&path));
    let home = dir.join(".home");
    let mut command = Command::new("bash");
    command
        .args(["-euo", "pipefail", "-c", body])
        .current_dir(dir)
        .env("PATH", std::env::join_paths(paths).unwrap())
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("TMPDIR", dir.join(".tmp"))
        .stdin(Stdio::null())
        .stdout(File::create(&out).unwrap())
        .stderr(File::create(&err).unwrap())
        .process_group(0);
    // The quick start names its endpoint and key; none of the caller's may stand in.
    for variable in [
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_API_KEY",
    ] {
        command.env_remove(variable);
    }
    let mut child = command.spawn().expect("start bash");
    let group = Group(child.id());
    let deadline = Instant::now() + BLOCK_TIMEOUT;
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait for bash") {
            break status.code();
        }
        if Instant::now() > deadline {
            drop(group);
            let _ = child.wait();
            panic!("README block {index} still running after {BLOCK_TIMEOUT:?}:\n{body}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(group);
    Ran {
        code,
        stdout: fs::read_to_string(out).unwrap_or_default(),
        stderr: fs::read_to_string(err).unwrap_or_default(),
    }
}

/// A block that evaluates the bundled Harbor tasks scored all three, and wrote its run inside
/// the temporary directory.
fn check_scores(dir: &Path, file: &str, block: &Block, ran: &Ran) {
    assert!(
        ran.stderr
            .contains("reward (native@1): 1.0000 (3/3 evaluated)"),
        "{file} line {}: the run did not score 1.0 on the three tasks:\n{}",
        block.line,
        ran.stderr
    );
    let run_dir = PathBuf::from(ran.stdout.lines().last().unwrap_or_default().trim());
    assert!(
        run_dir.starts_with(dir.canonicalize().unwrap()) || run_dir.starts_with(dir),
        "{file} line {}: the run directory {} is outside the temporary directory",
        block.line,
        run_dir.display()
    );
    let metrics = fs::read_to_string(run_dir.join("metrics.json")).unwrap();
    assert!(metrics.contains("\"reward\""), "{metrics}");
}

#[test]
fn every_readme_shell_block_says_what_it_needs() {
    for block in blocks(&readme()) {
        if is_shell(&block.info) {
            let marked = block
                .info
                .split([' ', ','])
                .skip(1)
                .any(|w| MARKERS.contains(&w));
            assert!(
                marked,
                "README line {}: ```{} says nothing of what it needs ({MARKERS:?})",
                block.line, block.info
            );
        }
    }
}

#[test]
fn the_readme_quick_start_runs_as_written() {
    check_build();
    let runnable = runnable_blocks();
    let evaluations = |harness: &str| {
        let needle = format!("run harbor {harness} ");
        let readme = runnable.iter().filter(|(file, _)| file == "README.md");
        readme.filter(|(_, b)| b.body.contains(&needle)).count()
    };
    assert!(
        evaluations("oracle") >= 1 && evaluations("terminus") >= 1,
        "the README's runnable blocks must run the quick start (oracle and terminus)"
    );
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    fs::create_dir_all(dir.join(".tmp")).unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let copied = Command::new("cp")
        .arg("-r")
        .arg(&examples)
        .arg(dir.join("examples"))
        .status()
        .unwrap();
    assert!(copied.success(), "copying {}", examples.display());
    for (index, (file, block)) in runnable.iter().enumerate() {
        let ran = run_block(dir, index, &block.body);
        assert_eq!(
            ran.code,
            Some(0),
            "{file} line {}: the block exited {:?}\n{}\nstdout:\n{}\nstderr:\n{}",
            block.line,
            ran.code,
            block.body,
            ran.stdout,
            ran.stderr
        );
        if block.body.contains("run harbor oracle ") || block.body.contains("run harbor terminus ")
        {
            check_scores(dir, file, block, &ran);
        }
    }
    assert!(dir.join("report.html").is_file() || !readme().contains("--out report.html"));
}
