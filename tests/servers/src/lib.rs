//! Loopback servers for the tests and the demo (a dev-only crate, never a dependency of the
//! host): the scripted model endpoint (`scripted`, also the `scripted-llm` binary that
//! `./dev.sh demo` starts) and a read-only npm registry replaying npm's own download cache
//! (`npm_mirror`), and plain servers answering fixed replies (`loopback`: the egress tests'
//! servers on 127.0.0.2 and 127.0.0.3). Every server binds a loopback address only. Beside them,
//! `listing`: the test-runner listing of the `harness = false` egress test binaries.

pub mod listing;
pub mod loopback;
pub mod npm_mirror;
pub mod scripted;
