//! Loopback servers for the tests and the demo (a dev-only crate, never a dependency of the
//! host): the scripted model endpoint (`scripted`, also the `scripted-llm` binary that
//! `./dev.sh demo` starts) and a read-only npm registry replaying npm's own download cache
//! (`npm_mirror`). Every server binds 127.0.0.1 only.

pub mod npm_mirror;
pub mod scripted;
