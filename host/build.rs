//! Records the commit the host is built from (`AGENTCOMPASS_BUILD_COMMIT`, shown in each run's
//! provenance); a build outside a git checkout records none.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_string();
    (output.status.success() && !text.is_empty()).then_some(text)
}

fn main() {
    if let Some(commit) = git(&["rev-parse", "HEAD"]) {
        println!("cargo:rustc-env=AGENTCOMPASS_BUILD_COMMIT={commit}");
    }
    // Rebuilt when HEAD moves (a checkout, a commit): the files git updates then.
    for path in [
        git(&["rev-parse", "--path-format=absolute", "--git-path", "HEAD"]),
        git(&[
            "rev-parse",
            "--path-format=absolute",
            "--git-path",
            "refs/heads",
        ]),
        git(&[
            "rev-parse",
            "--path-format=absolute",
            "--git-path",
            "packed-refs",
        ]),
    ]
    .into_iter()
    .flatten()
    .filter(|p| std::path::Path::new(p).exists())
    {
        println!("cargo:rerun-if-changed={path}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
