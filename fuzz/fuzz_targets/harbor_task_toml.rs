//! The Harbor `task.toml` loader: the input is written as `task.toml` into a task directory
//! that also holds `instruction.md` and `tests/test.sh`, then `load_task` maps it onto a
//! `TaskSpec` (with and without `solution_env_for_agent`). Also the legacy size strings.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use harbor_pack::fuzzing::{load_task, parse_size_mb, LoadOptions};
use libfuzzer_sys::fuzz_target;

/// `<tmp>/fuzz-task`, made once per process.
fn task_dir() -> &'static PathBuf {
    static DIR: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &DIR.get_or_init(|| {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dir = tmp.path().join("fuzz-task");
        std::fs::create_dir_all(dir.join("tests")).expect("task dir");
        std::fs::create_dir_all(dir.join("solution")).expect("solution dir");
        std::fs::write(dir.join("instruction.md"), "Write hello to /app/out.txt\n")
            .expect("instruction");
        std::fs::write(
            dir.join("tests/test.sh"),
            "#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n",
        )
        .expect("test script");
        std::fs::write(
            dir.join("solution/solve.sh"),
            "#!/bin/sh\necho hello > /app/out.txt\n",
        )
        .expect("solution");
        (tmp, dir)
    })
    .1
}

fuzz_target!(|data: &[u8]| {
    // The loader reads task.toml as UTF-8 (anything else is a read error, checked once by the
    // seeds); the size strings are parsed from the same text.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if text.len() < 64 {
        let _ = parse_size_mb(text);
    }
    let dir = task_dir();
    std::fs::write(dir.join("task.toml"), data).expect("write task.toml");
    for solution_env_for_agent in [false, true] {
        let _ = load_task(
            dir,
            LoadOptions {
                solution_env_for_agent,
            },
        );
    }
});
