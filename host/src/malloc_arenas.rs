//! glibc's malloc keeps up to eight arenas per core, each a heap of its own that threads
//! allocate from: with the runtime's workers and blocking threads, the memory one task frees
//! in one arena is not reused by the next task allocating in another, and the peak RSS grows
//! with the number of arenas touched. Capping them at the number of cores (at least two) cut
//! the peak RSS of 1,000 QA tasks by 2.3 MiB (35.6 → 33.2 MiB on two cores) at the same CPU
//! time; one arena made the run 40 % slower (lock contention). `bench/PROFILE.md`, issue 39.
//!
//! A user's own `MALLOC_ARENA_MAX` or `GLIBC_TUNABLES` wins: the cap is not applied then.
//!
//! What the arenas hold once freed is given back to the kernel once a second while a run lasts
//! ([`return_freed_memory`]): glibc returns only the free space at the top of a heap, so
//! the chunks a finished task frees between live ones stay resident, and the RSS of a run
//! grew with its task count although its live heap did not (heaptrack: peak heap 11.2 MB at
//! 10,000 and at 30,000 tasks; `RssAnon` 13.4 → 16.1 MiB from 10,000 to 100,000).

use std::time::Duration;

/// How often freed memory is given back during a run.
const TRIM_PERIOD: Duration = Duration::from_secs(1);

/// Caps glibc's malloc arenas at the number of available cores (at least 2). Call first in
/// `main`, before any thread exists.
pub fn limit() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let user_set = std::env::var_os("MALLOC_ARENA_MAX").is_some()
            || std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("arena_max"));
        if user_set {
            return;
        }
        let cores = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
        let arenas = libc::c_int::try_from(cores.max(2)).unwrap_or(libc::c_int::MAX);
        // SAFETY: `mallopt` takes two integers and changes a malloc setting; it is called
        // before this process starts any thread, so no allocation runs concurrently with it.
        // Its result (0 on an unknown option) only means the cap was not applied.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
    }
}

/// Gives the free pages of every malloc arena back to the kernel (`malloc_trim(0)`: glibc
/// `madvise`s away each whole free page, not only the top of each heap).
pub fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` takes one integer; glibc locks each arena while it walks its free
    // chunks, so it is safe to call while other threads allocate. Its result only says
    // whether memory was released.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Calls [`trim`] once a [`TRIM_PERIOD`] until the task is dropped (the first call after one
/// period: a run shorter than that never trims).
pub async fn return_freed_memory() {
    let start = tokio::time::Instant::now() + TRIM_PERIOD;
    let mut ticker = tokio::time::interval_at(start, TRIM_PERIOD);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        trim();
    }
}
