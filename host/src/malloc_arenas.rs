//! glibc's malloc keeps up to eight arenas per core, each a heap of its own that threads
//! allocate from: with the runtime's workers and blocking threads, the memory one task frees
//! in one arena is not reused by the next task allocating in another, and the peak RSS grows
//! with the number of arenas touched. Capping them at the number of cores (at least two) cut
//! the peak RSS of 1,000 QA tasks by 2.3 MiB (35.6 → 33.2 MiB on two cores) at the same CPU
//! time; one arena made the run 40 % slower (lock contention). `bench/PROFILE.md`, issue 39.
//!
//! A user's own `MALLOC_ARENA_MAX` or `GLIBC_TUNABLES` wins: the cap is not applied then.

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
