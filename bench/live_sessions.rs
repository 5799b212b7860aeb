//! Many long-lived sessions at once, agent-like (issue 20): S sessions of an environment
//! provider open together, each alive D seconds running one short command every P seconds
//! (starts staggered over the first period), through the host's providers in this process.
//! Reports the process's peak RSS and open file descriptors (sampled every 200 ms from
//! `/proc/self`), descriptors per session, and the command latency distribution.
//! Run with `bench/live_sessions.sh` (release build).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentcompass_host::setup::{build_registry, PluginSettings};
use agentcompass_plugin_api::contracts::{
    EnvironmentSpec, ExecRequest, NetworkPolicy, OpenEnvironmentRequest,
};
use agentcompass_plugin_api::sdk::Ctx;

const USAGE: &str = "usage: live_sessions PROVIDER SESSIONS SECONDS PERIOD_SECONDS [PLUGIN_DIR]";

/// (VmRSS KiB, open descriptors) of this process now.
fn sample() -> (u64, usize) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    let fds = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count());
    (rss, fds)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn main() {
    // Sandbox commands enter their prepared namespace through this binary (as the host's).
    agentcompass_builtins::sandbox::enter_if_requested();
    let args: Vec<String> = std::env::args().collect();
    let provider = args.get(1).expect(USAGE).clone();
    let sessions: usize = args.get(2).and_then(|s| s.parse().ok()).expect(USAGE);
    let seconds: f64 = args.get(3).and_then(|s| s.parse().ok()).expect(USAGE);
    let period: f64 = args.get(4).and_then(|s| s.parse().ok()).expect(USAGE);
    let plugin_dirs: Vec<PathBuf> = args.get(5).map(PathBuf::from).into_iter().collect();
    let setup = build_registry(&PluginSettings {
        plugin_dirs,
        ..PluginSettings::default()
    })
    .expect("registry");
    assert!(setup.problems.is_empty(), "{:?}", setup.problems);
    let env = setup.registry.environment(&provider).expect("provider");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (rss_before, fds_before) = sample();
    let peak = Arc::new(std::sync::Mutex::new((rss_before, fds_before)));
    let done = Arc::new(AtomicUsize::new(0));
    let sampler = {
        let peak = Arc::clone(&peak);
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            while done.load(Ordering::Relaxed) == 0 {
                let (rss, fds) = sample();
                let mut p = peak.lock().unwrap();
                p.0 = p.0.max(rss);
                p.1 = p.1.max(fds);
                drop(p);
                std::thread::sleep(Duration::from_millis(200));
            }
        })
    };
    let started = Instant::now();
    let (latencies, failures, open_seconds) = runtime.block_on(async {
        // Open every session first (the host opens a task's session before its agent runs).
        let mut open = Vec::with_capacity(sessions);
        for i in 0..sessions {
            let mut request = OpenEnvironmentRequest::new(
                "bench",
                format!("s{i}"),
                EnvironmentSpec::new(&provider),
            );
            request.baseline_network_policy = NetworkPolicy::no_network();
            open.push(env.open(&Ctx::detached(), &request).await.expect("open"));
        }
        let open_seconds = started.elapsed().as_secs_f64();
        let mut handles = Vec::with_capacity(sessions);
        for (i, session) in open.into_iter().enumerate() {
            let offset = Duration::from_secs_f64(period * i as f64 / sessions as f64);
            handles.push(tokio::spawn(async move {
                tokio::time::sleep(offset).await;
                let begin = Instant::now();
                let mut latencies = Vec::new();
                let mut failures = 0usize;
                let mut tick = tokio::time::interval(Duration::from_secs_f64(period));
                while begin.elapsed().as_secs_f64() < seconds {
                    tick.tick().await;
                    let t = Instant::now();
                    match session
                        .exec(ExecRequest::shell("echo tick >> /tmp/ticks"))
                        .await
                    {
                        Ok(out) if out.returncode == 0 => {
                            latencies.push(t.elapsed().as_secs_f64() * 1000.0)
                        }
                        _ => failures += 1,
                    }
                }
                session.close().await.expect("close");
                (latencies, failures)
            }));
        }
        let mut all = Vec::new();
        let mut failures = 0;
        for handle in handles {
            let (l, f) = handle.await.expect("session task");
            all.extend(l);
            failures += f;
        }
        (all, failures, open_seconds)
    });
    done.store(1, Ordering::Relaxed);
    sampler.join().unwrap();
    let (peak_rss, peak_fds) = *peak.lock().unwrap();
    let mut sorted = latencies.clone();
    sorted.sort_by(|a, b| a.total_cmp(b));
    println!(
        "{provider}: {sessions} sessions open at once, {seconds:.0} s each, a command every {period:.1} s"
    );
    println!(
        "  opening all: {open_seconds:.1} s; whole run {:.1} s",
        started.elapsed().as_secs_f64()
    );
    println!(
        "  commands: {} ok, {failures} failed; latency ms p50 {:.1}  p90 {:.1}  p99 {:.1}  max {:.1}",
        sorted.len(),
        percentile(&sorted, 50.0),
        percentile(&sorted, 90.0),
        percentile(&sorted, 99.0),
        sorted.last().copied().unwrap_or(f64::NAN)
    );
    println!(
        "  host RSS {:.1} MiB before, {:.1} MiB peak; fds {fds_before} before, {peak_fds} peak = {:.2} a session",
        rss_before as f64 / 1024.0,
        peak_rss as f64 / 1024.0,
        (peak_fds.saturating_sub(fds_before)) as f64 / sessions as f64
    );
}
