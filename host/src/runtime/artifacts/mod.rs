//! Capturing submission artifacts (seed 004, "Submission artifacts and replay"): after the
//! declared paths of an attempt are downloaded into `attempt-N/artifacts/`, each entry's local
//! copy is pruned of its `exclude` matches ([`exclude`]), walked and hashed into an
//! [`ArtifactManifest`] ([`measure`]), written atomically next to the `artifacts/` directory
//! and kept in `RunResult.artifacts["declared_artifacts"]`; [`transfer`] moves the bytes to and
//! from the session. The manifest's shape and its verification live in
//! [`agentcompass_results::artifacts`].
//!
//! # Exclusion patterns
//!
//! A subset of GNU tar's exclusion globs (`--exclude`, with tar's defaults for exclusions:
//! unanchored, wildcards match `/`):
//!
//! - `*` matches any sequence of characters (including `/`), `?` any one character,
//!   `[...]` one character of a set (`a-z` ranges, `!` or `^` negates, a leading `]` is
//!   literal), `\c` the character `c`;
//! - a pattern is matched against every trailing run of path components of the member name
//!   `<source basename>/<relative path>`: `*.tmp` excludes `x.tmp` at any depth, `cache`
//!   excludes every entry named `cache`, `build/out` excludes `build/out` at any depth;
//! - a pattern starting with `/` is anchored at the entry root (`/build` excludes only the
//!   top-level `build`); a leading `./` and trailing `/` are ignored;
//! - an excluded directory is removed with everything below it.
//!
//! Exclusions are applied after download by deleting the matching paths from the local copy.
//! The source itself is only matched by name for a file entry (status `excluded`).

mod exclude;
mod measure;
mod transfer;

#[cfg(test)]
mod tests;

pub(crate) use transfer::{download_all, reset_destination, restore_all, StageError};
