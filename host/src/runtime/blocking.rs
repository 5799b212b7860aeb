//! Long blocking file work on a runtime worker.

/// Runs long blocking file I/O (artifact copies and checks, of any size) without stalling
/// the other tasks of this worker thread.
///
/// The result store's small writes (a JSON file, a directory, a rename: tens of microseconds
/// into the page cache, no fsync) run inline instead: handing each to another thread cost
/// more than the write, and a thread per concurrent write grew the process by a stack and a
/// malloc arena each (bench/PROFILE.md).
pub(crate) fn blocking<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}
