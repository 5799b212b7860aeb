//! What an image build printed: the instruction it was at and its last output lines (which a
//! failure quotes), and its whole output, kept in a file per image — the session reports it
//! as its `build_log`, and the host copies it into the attempt's directory.
//!
//! The file is `<cache>/agentcompass-host/build-logs/<engine>-<tag>.log` (`<cache>`:
//! `$XDG_CACHE_HOME`, else `~/.cache`; the tag's `/` and `:` made `_`), written when the build
//! ends, failed or not, and kept for later sessions of the image.

use std::path::PathBuf;

use crate::engine::Engine;

/// How many of a failed build's last output lines its error quotes.
const FAILED_BUILD_LINES: usize = 8;

/// The build log file of the image `tag` on `engine`; `None` without a home.
pub(crate) fn path(engine: Engine, tag: &str) -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let cache = var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    let name: String = tag
        .chars()
        .map(|c| if c == '/' || c == ':' { '_' } else { c })
        .collect();
    let dir = cache.join("agentcompass-host").join("build-logs");
    Some(dir.join(format!("{engine}-{name}.log")))
}

/// What a build printed: the instruction it was at and its last output lines.
#[derive(Default)]
pub(crate) struct BuildLog {
    /// Everything the build printed.
    whole: String,
    /// The last `Step n/m : ...` (Docker) or `STEP n/m: ...` (Podman) line.
    step: Option<String>,
    /// The last non-empty output lines, at most [`FAILED_BUILD_LINES`].
    tail: std::collections::VecDeque<String>,
}

impl BuildLog {
    /// Takes a chunk of the build's output (the builder's own bookkeeping lines and terminal
    /// colours left out).
    pub(crate) fn push(&mut self, chunk: &str) {
        self.whole.push_str(chunk);
        let lines = chunk.lines().map(strip_colours);
        for line in lines.map(|l| l.trim_end().to_string()) {
            let bookkeeping = ["--->", "Removing intermediate container", "Running in "]
                .iter()
                .any(|p| line.trim_start().starts_with(p));
            if line.trim().is_empty() || bookkeeping {
                continue;
            }
            if line.starts_with("Step ") || line.starts_with("STEP ") {
                self.step = Some(line);
                self.tail.clear();
                continue;
            }
            if self.tail.len() == FAILED_BUILD_LINES {
                self.tail.pop_front();
            }
            self.tail.push_back(line);
        }
    }

    /// The failure's description: ` at `<instruction>`: <error>` and the instruction's last
    /// output lines.
    pub(crate) fn failure(&self, error: &str) -> String {
        let error = error
            .lines()
            .map(str::trim)
            .rfind(|l| !l.is_empty())
            .unwrap_or("the build failed");
        let at = self
            .step
            .as_deref()
            .map(|s| format!(" at `{s}`"))
            .unwrap_or_default();
        let tail: Vec<&str> = self
            .tail
            .iter()
            .map(String::as_str)
            .filter(|l| l.trim() != error)
            .collect();
        if tail.is_empty() {
            format!("{at}: {error}")
        } else {
            format!("{at}: {error}; its last output: {}", tail.join(" | "))
        }
    }
}

/// `line` without terminal colour sequences (`ESC [ ... m`; the classic builder colours a
/// step's standard error).
fn strip_colours(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for next in chars.by_ref() {
                if next.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

impl BuildLog {
    /// Writes the whole output (and `error`, if the build failed) to `path`; whether it could.
    pub(crate) fn keep(&self, path: &std::path::Path, error: Option<&str>) -> bool {
        let text = match error {
            Some(error) => format!("{}{error}\n", self.whole),
            None => self.whole.clone(),
        };
        let parent = path.parent().map(std::fs::create_dir_all);
        !matches!(parent, Some(Err(_))) && std::fs::write(path, text).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_whole_output_is_kept_with_the_error() {
        let mut log = BuildLog::default();
        log.push("Step 1/1 : RUN exit 3\n");
        log.push(" ---> Running in 54ceabd208f5\n");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("logs/docker-x.log");
        assert!(log.keep(&file, Some("returned a non-zero code: 3")));
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "Step 1/1 : RUN exit 3\n ---> Running in 54ceabd208f5\nreturned a non-zero code: 3\n"
        );
        let path = path(Engine::Podman, "agentcompass-build/ctx-ab:latest").unwrap();
        assert!(path.ends_with("build-logs/podman-agentcompass-build_ctx-ab_latest.log"));
    }

    #[test]
    fn a_failed_build_quotes_its_instruction_and_last_output() {
        let mut log = BuildLog::default();
        // Docker's classic builder, as it streams (Podman's steps read `STEP 2/2: ...`).
        for chunk in [
            "Step 1/2 : FROM ubuntu:24.04\n ---> 7c4012406af9\n",
            "Step 2/2 : RUN make && exit 3\n ---> Running in 54ceabd208f5\n",
            "\u{1b}[91mmake: toolchain 9.9 is not available\n\u{1b}[0m",
            "building\nRemoving intermediate container 54ceabd208f5\n",
        ] {
            log.push(chunk);
        }
        assert_eq!(
            log.failure("The command '/bin/sh -c make && exit 3' returned a non-zero code: 3"),
            " at `Step 2/2 : RUN make && exit 3`: The command '/bin/sh -c make && exit 3' \
             returned a non-zero code: 3; its last output: make: toolchain 9.9 is not \
             available | building"
        );
        let mut podman = BuildLog::default();
        podman.push("STEP 1/1: RUN false\nError: building at STEP \"RUN false\": exit status 1\n");
        assert_eq!(
            podman.failure("building at STEP \"RUN false\": exit status 1"),
            " at `STEP 1/1: RUN false`: building at STEP \"RUN false\": exit status 1; its last \
             output: Error: building at STEP \"RUN false\": exit status 1"
        );
    }
}
