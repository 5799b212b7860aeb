//! For the test binaries that run without libtest's harness (`harness = false`, the egress
//! tests, whose `main` must also be the forwarder a sandbox or container starts): answering
//! the test runner's listing, so nextest sees and runs their tests.

/// Answers a listing request in `args` (the binary's arguments after its name): for `--list`
/// (nextest asks `--list --format terse`, then again with `--ignored`) prints `NAME: test`
/// for each of `names` — none for `--ignored`, as none is ignored — and returns `true`: the
/// binary then exits. Returns `false` when not asked.
pub fn answer_listing(args: &[String], names: &[&str]) -> bool {
    if !args.iter().any(|a| a == "--list") {
        return false;
    }
    if !args.iter().any(|a| a == "--ignored") {
        for name in names {
            println!("{name}: test");
        }
    }
    true
}
