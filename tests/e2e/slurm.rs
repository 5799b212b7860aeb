//! The Slurm executor against the real three-node cluster `./dev.sh test` starts
//! (`ci/slurm.sh`: slurmctld + `slurmd -N n1..n3`, config in `AGENTCOMPASS_TEST_SLURM_CONF`):
//! a cluster run equals the local run, a lost node and a duplicated unit publish every task
//! exactly once, Ctrl-C cancels every job, a killed coordinator's jobs are found and cancelled
//! by `--reuse`. The tests share the cluster, so they take turns: nextest's `slurm` test group
//! (`.config/nextest.toml`) runs one at a time.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agentcompass_e2e::scripted::ScriptedServer;
use agentcompass_e2e::{
    example_run, files_containing, files_under, json_files_parse, progress_events,
    published_results, read_json, run_dir, self_check_run, terminus_args, Outcome, Packs,
    Workspace,
};
use serde_json::{json, Value};

pub(crate) fn slurm_conf() -> PathBuf {
    PathBuf::from(std::env::var_os("AGENTCOMPASS_TEST_SLURM_CONF").expect(
        "AGENTCOMPASS_TEST_SLURM_CONF is not set: run the tests with ./dev.sh test, which starts \
         the Slurm cluster",
    ))
}

/// A Slurm command against the tests' cluster.
fn slurm(program: &str) -> Command {
    let mut command = Command::new(program);
    command.env("SLURM_CONF", slurm_conf());
    command
}

fn stdout_of(command: &mut Command) -> String {
    let out = command.output().expect("run a Slurm command");
    assert!(out.status.success(), "{command:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `(id, state, nodes, name)` of every job `squeue` lists.
fn squeue() -> Vec<(u64, String, String, String)> {
    stdout_of(slurm("squeue").args(["-h", "-t", "all", "-o", "%i|%T|%N|%j"]))
        .lines()
        .filter_map(|line| {
            let mut f = line.split('|');
            Some((
                f.next()?.trim().parse().ok()?,
                f.next()?.to_string(),
                f.next()?.to_string(),
                f.next()?.to_string(),
            ))
        })
        .collect()
}

fn active(state: &str) -> bool {
    matches!(
        state,
        "PENDING" | "RUNNING" | "REQUEUED" | "CONFIGURING" | "COMPLETING" | "SUSPENDED"
    )
}

/// The state `sinfo` shows for `node` (`idle`, `mixed`, `down*`...).
fn node_state(node: &str) -> String {
    stdout_of(slurm("sinfo").args(["-h", "-n", node, "-o", "%T"]))
        .trim()
        .to_string()
}

/// The cluster's private directory (the config file's).
fn cluster_dir() -> PathBuf {
    slurm_conf().parent().unwrap().to_path_buf()
}

/// Stops `node`'s slurmd (its jobs' processes keep running, as on a node cut off the network).
pub(crate) fn kill_slurmd(node: &str) {
    let pid = fs::read_to_string(cluster_dir().join(format!("run/slurmd-{node}.pid"))).unwrap();
    let status = Command::new("kill")
        .args(["-KILL", pid.trim()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Starts `node`'s slurmd again and waits until the node takes jobs.
pub(crate) fn restart_slurmd(node: &str) {
    let status = slurm("slurmd")
        .args(["-N", node, "-f"])
        .arg(slurm_conf())
        .status()
        .unwrap();
    assert!(status.success(), "slurmd -N {node}");
    let started = Instant::now();
    while !matches!(node_state(node).as_str(), "idle" | "mixed" | "allocated") {
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "{node} did not come back: {}",
            node_state(node)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Starts the host as `ws.run` runs it, with the cluster's configuration in the environment
/// (its output piped).
fn spawn(ws: &Workspace, args: &[&str]) -> Child {
    let mut command = ws.command();
    command
        .env("SLURM_CONF", slurm_conf())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command.spawn().unwrap()
}

/// Waits for a host [`spawn`] started.
fn outcome(child: Child) -> Outcome {
    Outcome::of(child.wait_with_output().unwrap())
}

/// Runs the host as [`spawn`] starts it, to its end.
fn run_to_end(ws: &Workspace, args: &[&str]) -> Outcome {
    outcome(spawn(ws, args))
}

/// `--config CONFIG`, the `run` command line `run`, then `--executor EXECUTOR --progress none`.
fn on_executor<'a>(config: &'a str, executor: &'a str, run: Vec<&'a str>) -> Vec<&'a str> {
    let mut args = vec!["--config", config];
    args.extend(run);
    args.extend(["--executor", executor, "--progress", "none"]);
    args
}

/// The `[runtime.slurm]` of the runs that spread slow calculator tasks over the nodes: 25
/// attempts a job, 2 CPUs each, at most 6 jobs at once.
const SLOW_JOBS: &str = "attempts_per_job = 25\ncpus_per_job = 2\nmax_jobs_in_flight = 6";

/// Waits (up to 180 s) until at least three jobs of the workspace's runs are running.
fn wait_for_three_running_jobs(ws: &Workspace) {
    wait_until("running jobs", Duration::from_secs(180), || {
        running_jobs(ws).len() >= 3
    });
}

/// Sends SIGINT (Ctrl-C) to `child`.
fn interrupt(child: &Child) {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// `[runtime.slurm]` as the config file `slurm.toml` in the workspace.
pub(crate) fn slurm_config(ws: &Workspace, table: &str) -> String {
    slurm_config_named(ws, "slurm.toml", table)
}

/// `[runtime.slurm]` as the config file `name` in the workspace.
fn slurm_config_named(ws: &Workspace, name: &str, table: &str) -> String {
    ws.write(name, &format!("[runtime.slurm]\n{table}\n"))
        .display()
        .to_string()
}

/// Every published task of `run`: task id → its `task.json`; panics on a task published twice.
pub(crate) fn published(run: &Path) -> BTreeMap<String, Value> {
    let mut tasks = BTreeMap::new();
    for state in ["normal", "error", "fatal"] {
        let Ok(entries) = fs::read_dir(run.join("details").join(state)) else {
            continue;
        };
        for entry in entries.flatten() {
            let task = read_json(&entry.path().join("task.json"));
            let id = task["task_id"].as_str().unwrap().to_string();
            assert!(
                tasks.insert(id.clone(), task).is_none(),
                "{id} published twice"
            );
        }
    }
    tasks
}

/// The nodes that published the tasks, with how many each.
pub(crate) fn nodes(tasks: &BTreeMap<String, Value>) -> BTreeMap<String, usize> {
    let mut nodes = BTreeMap::new();
    for task in tasks.values() {
        let node = task["executor"]["node"].as_str().unwrap_or("?").to_string();
        *nodes.entry(node).or_default() += 1;
    }
    nodes
}

/// `metrics.json` without what differs between any two runs (none of it is timing).
fn metrics(run: &Path) -> Value {
    read_json(&run.join("metrics.json"))
}

/// The active jobs `cluster jobs` lists under the workspace's results.
fn listed_jobs(ws: &Workspace) -> Vec<Value> {
    if !ws.cwd.join("results").is_dir() {
        return Vec::new();
    }
    let out = run_to_end(ws, &["cluster", "jobs", "results"]).expect_code(0);
    let listed: Value = serde_json::from_str(&out.stdout).unwrap();
    listed["jobs"].as_array().unwrap().clone()
}

pub(crate) fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn a_cluster_run_equals_the_local_run_and_uses_every_node() {
    let ws = Workspace::new();
    let config = slurm_config(
        &ws,
        "attempts_per_job = 50\ncpus_per_job = 4\nmax_jobs_in_flight = 3",
    );
    let timed = |executor: &str| {
        let run = self_check_run(&[
            "--benchmark-params",
            r#"{"size": 1000}"#,
            "--task-concurrency",
            "12",
        ]);
        let args = on_executor(&config, executor, run);
        let started = Instant::now();
        let out = run_to_end(&ws, &args);
        (out, started.elapsed())
    };
    let (local, local_wall) = timed("local");
    assert_eq!(local.code, 0, "{local:?}");
    let (cluster, cluster_wall) = timed("slurm");
    assert_eq!(cluster.code, 0, "{cluster:?}");
    let (local, cluster) = (run_dir(&local), run_dir(&cluster));
    assert_eq!(metrics(&local), metrics(&cluster));
    let (local_tasks, cluster_tasks) = (published(&local), published(&cluster));
    assert_eq!(cluster_tasks.len(), 1000);
    assert_eq!(
        local_tasks.keys().collect::<Vec<_>>(),
        cluster_tasks.keys().collect::<Vec<_>>()
    );
    let by_node = nodes(&cluster_tasks);
    assert_eq!(
        by_node.keys().map(String::as_str).collect::<Vec<_>>(),
        ["n1", "n2", "n3"],
        "{by_node:?}"
    );
    // The coordinator's progress counted every task the nodes reported.
    let progress = read_json(&cluster.join("progress.json"));
    assert_eq!(progress["status"], "completed", "{progress}");
    assert_eq!(progress["finished_tasks"], 1000, "{progress}");
    assert_eq!(progress["running_tasks"], 0, "{progress}");
    // The resolved plans of every task reached run_info.json.
    let info = read_json(&cluster.join("run_info.json"));
    assert_eq!(
        info["resolved_execution_plans"].as_object().unwrap().len(),
        1000
    );
    json_files_parse(&cluster);
    // What the jobs no longer need is gone (their events are in progress.jsonl); their
    // scripts, output and logs stay.
    let cluster_files = |sub: &str| {
        fs::read_dir(cluster.join(".cluster").join(sub))
            .unwrap()
            .count()
    };
    assert_eq!(cluster_files("units"), 0);
    assert_eq!(cluster_files("events"), 0);
    assert_eq!(cluster_files("scripts"), 20);
    // Nothing of the jobs is left in the queue.
    assert!(listed_jobs(&ws).is_empty());
    eprintln!(
        "1000 trivial tasks: local {:.2} s, slurm (20 pilot jobs of 50, 3 at a time × 4 tasks) {:.2} s; tasks by node {by_node:?}",
        local_wall.as_secs_f64(),
        cluster_wall.as_secs_f64()
    );

    // One job per attempt: what a job costs.
    let config = slurm_config_named(
        &ws,
        "one.toml",
        "attempts_per_job = 1\nmax_jobs_in_flight = 12",
    );
    let args = on_executor(
        &config,
        "slurm",
        self_check_run(&["--benchmark-params", r#"{"size": 60}"#]),
    );
    let started = Instant::now();
    let out = run_to_end(&ws, &args);
    let one_per_job = started.elapsed();
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(published(&run_dir(&out)).len(), 60);
    eprintln!(
        "per-attempt wall time: local {:.2} ms, pilot jobs {:.2} ms, one job per attempt {:.1} ms (60 jobs, 12 at a time)",
        local_wall.as_secs_f64() * 1000.0 / 1000.0,
        cluster_wall.as_secs_f64() * 1000.0 / 1000.0,
        one_per_job.as_secs_f64() * 1000.0 / 60.0
    );
}

#[test]
fn harbor_tasks_run_in_the_sandbox_on_the_nodes_with_the_key_only_in_the_jobs_environment() {
    let ws = Workspace::new();
    let plugins = Packs::harbor();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // A path relative to the working directory means the same on the nodes.
    let copied = Command::new("cp")
        .arg("-r")
        .arg(root.join("examples/harbor"))
        .arg(ws.cwd.join("tasks"))
        .status()
        .unwrap();
    assert!(copied.success());
    let params = json!({ "path": "tasks" }).to_string();
    let script: Value = serde_json::from_str(
        &fs::read_to_string(root.join("examples/demo/terminus-script.json")).unwrap(),
    )
    .unwrap();
    // The scripted model refuses any other key: a literal on the command line, which the
    // nodes get only through their jobs' environment.
    let key = script["require_key"].as_str().unwrap().to_string();
    let config = slurm_config(&ws, "cpus_per_job = 4\nmax_jobs_in_flight = 3");
    let run = |executor: &str| {
        let server = ScriptedServer::start(&script, None).unwrap();
        let base_url = server.base_url();
        let run = terminus_args(&plugins, &params, &base_url, &key);
        let out = run_to_end(&ws, &on_executor(&config, executor, run)).expect_code(0);
        run_dir(&out)
    };
    let local = run("local");
    let cluster = run("slurm");
    assert_eq!(metrics(&local), metrics(&cluster));
    let tasks = published(&cluster);
    assert_eq!(
        tasks.keys().map(String::as_str).collect::<Vec<_>>(),
        ["fizzbuzz", "hello-file", "primes"]
    );
    // One task a job, each on a node of the cluster. (A job that ends before the last one is
    // submitted frees its node for it, so how many distinct nodes ran them is timing; the
    // spread over nodes is shown by the coordinator tests.)
    let spread = nodes(&tasks);
    assert_eq!(spread.values().sum::<usize>(), 3, "{spread:?}");
    assert!(
        spread
            .keys()
            .all(|n| ["n1", "n2", "n3"].contains(&n.as_str())),
        "{spread:?}"
    );
    let value = &metrics(&cluster)["series"][0]["value"];
    assert_eq!(value.as_f64(), Some(1.0), "{value}");
    // The agent's model calls went from the nodes to the run's endpoint, with the key...
    for (id, (_, result)) in published_results(&cluster) {
        let usage = &result["meta"]["harness"]["telemetry"]["model_usage"];
        assert!(usage["requests"].as_u64() > Some(0), "{id}: {usage}");
    }
    // ...which is in no file of the run: not the handed-off request, not a unit, a script,
    // an event or a log.
    assert_eq!(
        files_containing(&ws.cwd.join("results"), &key),
        Vec::<PathBuf>::new()
    );
    let handoff = fs::read_to_string(cluster.join(".cluster/request.json")).unwrap();
    assert!(handoff.contains("********"), "{handoff}");
}

/// A slow run of `tasks` calculator tasks (`delay_ms` each) on the cluster.
fn spawn_slow(ws: &Workspace, config: &str, tasks: usize, delay_ms: u64, reuse: bool) -> Child {
    let size = json!({ "size": tasks }).to_string();
    let harness = json!({ "delay_ms": delay_ms, "wrong_every": 3 }).to_string();
    let run = example_run(&[
        "--benchmark-params",
        &size,
        "--harness-params",
        &harness,
        "--task-concurrency",
        "12",
    ]);
    let mut args = on_executor(config, "slurm", run);
    if reuse {
        args.push("--reuse");
    }
    spawn(ws, &args)
}

/// The running jobs of the workspace's runs (by the `ac-` names `squeue` shows).
pub(crate) fn running_jobs(ws: &Workspace) -> Vec<Value> {
    listed_jobs(ws)
        .into_iter()
        .filter(|job| job["state"] == "RUNNING")
        .collect()
}

#[test]
fn a_lost_node_and_a_duplicated_unit_publish_every_task_exactly_once() {
    let ws = Workspace::new();
    // Three long jobs of 2 CPUs: a job lost with its node has work left when Slurm requeues it
    // (its processes keep running meanwhile: two copies of one unit at once).
    let config = slurm_config(
        &ws,
        "attempts_per_job = 334\ncpus_per_job = 2\nmax_jobs_in_flight = 3",
    );
    let child = spawn_slow(&ws, &config, 1000, 250, false);
    wait_until("three running jobs", Duration::from_secs(180), || {
        running_jobs(&ws).len() == 3
    });
    std::thread::sleep(Duration::from_secs(3));
    let jobs = running_jobs(&ws);
    let run = PathBuf::from(jobs[0]["run_dir"].as_str().unwrap());
    // A deliberate duplicate: the batch script of the first unit submitted once more, as
    // another job (its own token).
    let duplicate: u64 = stdout_of(
        slurm("sbatch")
            .args([
                "--parsable",
                "--job-name=duplicate-unit",
                "--cpus-per-task=2",
            ])
            .arg(format!(
                "--output={}",
                run.join(".cluster/logs/duplicate.out").display()
            ))
            .arg(run.join(".cluster/scripts/1.sh"))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &ws.home)
            .env("SLURM_CONF", slurm_conf()),
    )
    .trim()
    .parse()
    .unwrap();
    // The node of another job loses its slurmd.
    let victim = jobs
        .iter()
        .map(|j| j["nodes"].as_str().unwrap().to_string())
        .find(|n| n != "n1")
        .unwrap_or_else(|| jobs[1]["nodes"].as_str().unwrap().to_string());
    kill_slurmd(&victim);
    let killed_at = Instant::now();
    let out = outcome(child);
    let lost_node_run = killed_at.elapsed();
    restart_slurmd(&victim);
    wait_until("the duplicate job ends", Duration::from_secs(120), || {
        !squeue()
            .iter()
            .any(|(id, state, _, _)| *id == duplicate && active(state))
    });
    assert_eq!(out.code, 0, "{out:?}");
    let run = run_dir(&out);
    let tasks = published(&run);
    assert_eq!(tasks.len(), 1000, "exactly 1000 published, none twice");
    let parsed = json_files_parse(&run);
    let requeued: usize = tasks
        .values()
        .filter(|t| t["executor"]["restart"].as_u64() > Some(0))
        .count();
    let metrics = metrics(&run);
    assert_eq!(metrics["series"][0]["counts"]["total"], 1000, "{metrics}");
    // The copies that lost a race said so; none overwrote a published task.
    let logs: String = fs::read_dir(run.join(".cluster/logs"))
        .unwrap()
        .flatten()
        .map(|e| fs::read_to_string(e.path()).unwrap_or_default())
        .collect();
    // Slurm requeued the lost node's job: its second run has a log of its own.
    let reruns = fs::read_dir(run.join(".cluster/logs"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".1.log"))
        .count();
    assert!(reruns >= 1, "no job ran again after the node was lost");
    let discarded = logs.matches("published by another copy").count();
    let skipped = logs.matches("already published; skipped").count();
    eprintln!(
        "lost node {victim}: run ended {:.1} s after the kill; 1000 published ({requeued} by a requeued job; {reruns} jobs requeued), {parsed} JSON files parse; duplicate job {duplicate}: {skipped} tasks skipped as published, {discarded} finished copies discarded",
        lost_node_run.as_secs_f64()
    );
    assert!(
        skipped + discarded > 0,
        "the duplicated unit ran against the original: {logs:.2000}"
    );
}

#[test]
fn ctrl_c_cancels_every_job_and_reuse_finishes_the_run() {
    let ws = Workspace::new();
    let config = slurm_config(&ws, SLOW_JOBS);
    let child = spawn_slow(&ws, &config, 300, 400, false);
    wait_for_three_running_jobs(&ws);
    std::thread::sleep(Duration::from_secs(2));
    let signalled = Instant::now();
    interrupt(&child);
    let out = outcome(child);
    let exited = signalled.elapsed();
    assert_eq!(out.code, 130, "{out:?}");
    // No job of the run is left 10 s after the signal.
    wait_until(
        "the run's jobs leave the queue",
        Duration::from_secs(10).saturating_sub(exited),
        || listed_jobs(&ws).is_empty(),
    );
    let run = run_dir(&out);
    assert_eq!(read_json(&run.join("run_info.json"))["status"], "cancelled");
    let before = published(&run).len();
    assert!(before < 300, "{before}");
    json_files_parse(&run);
    let out = outcome(spawn_slow(&ws, &config, 300, 5, true)).expect_code(0);
    let resumed = run_dir(&out);
    assert_eq!(published(&resumed).len(), 300);
    eprintln!(
        "Ctrl-C: exit 130 after {:.1} s, {before} tasks published before it, the queue empty at once; --reuse finished the other {}",
        exited.as_secs_f64(),
        300 - before
    );
}

#[test]
fn a_killed_coordinators_jobs_are_cancelled_by_reuse_and_the_run_completes_once() {
    let ws = Workspace::new();
    let config = slurm_config(&ws, SLOW_JOBS);
    let mut child = spawn_slow(&ws, &config, 300, 400, false);
    wait_for_three_running_jobs(&ws);
    std::thread::sleep(Duration::from_secs(2));
    child.kill().unwrap();
    child.wait().unwrap();
    // The dead coordinator's jobs go on running; `cluster jobs` finds them.
    let left = listed_jobs(&ws);
    assert!(!left.is_empty(), "the jobs outlive their coordinator");
    let dead_run = PathBuf::from(left[0]["run_dir"].as_str().unwrap());
    let out = outcome(spawn_slow(&ws, &config, 300, 5, true)).expect_code(0);
    assert!(
        out.stderr.contains("Slurm jobs the run"),
        "the reuse says it cancelled the jobs left behind: {out:?}"
    );
    assert!(listed_jobs(&ws).is_empty());
    let run = run_dir(&out);
    let tasks = published(&run);
    assert_eq!(tasks.len(), 300);
    json_files_parse(&run);
    // Nothing was published into the dead run after the reuse imported it.
    let dead = published(&dead_run).len();
    let reused = read_json(&run.join("progress.json"))["reused_tasks"].clone();
    assert_eq!(
        reused.as_u64(),
        Some(dead as u64),
        "{reused} reused, {dead} in the dead run"
    );
    eprintln!(
        "coordinator SIGKILL: {} jobs left running, cancelled by --reuse; {dead} tasks reused, {} run again; 300 published once",
        left.len(),
        300 - dead
    );

    // `cluster cancel` does the same by hand.
    let mut child = spawn_slow(&ws, &config, 300, 400, false);
    wait_for_three_running_jobs(&ws);
    child.kill().unwrap();
    child.wait().unwrap();
    let left = listed_jobs(&ws);
    assert!(!left.is_empty());
    let dead_run = left[0]["run_dir"].as_str().unwrap().to_string();
    let out = run_to_end(&ws, &["cluster", "cancel", &dead_run]).expect_code(0);
    assert_eq!(
        out.stdout.trim(),
        format!("{dead_run}: cancelled {} jobs", left.len())
    );
    assert!(listed_jobs(&ws).is_empty());
}

#[test]
fn the_deadline_cancels_every_job() {
    let ws = Workspace::new();
    let config = slurm_config(&ws, SLOW_JOBS);
    let size = json!({ "size": 300 }).to_string();
    let run = example_run(&[
        "--benchmark-params",
        &size,
        "--harness-params",
        r#"{"delay_ms": 400}"#,
        "--timeout-seconds",
        "6",
    ]);
    let args = on_executor(&config, "slurm", run);
    let started = Instant::now();
    let out = run_to_end(&ws, &args).expect_code(1);
    let run = run_dir(&out);
    assert_eq!(read_json(&run.join("run_info.json"))["status"], "timed_out");
    assert!(listed_jobs(&ws).is_empty(), "no job outlives the deadline");
    let published = published(&run).len();
    assert!(published < 300, "{published}");
    eprintln!(
        "deadline 6 s: the run ended after {:.1} s with {published} tasks published and no job left",
        started.elapsed().as_secs_f64()
    );
}

/// Peak RSS (kB) of process `pid` until it exits.
fn peak_rss_kb(child: &mut Child) -> u64 {
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    while child.try_wait().unwrap().is_none() {
        if let Ok(text) = fs::read_to_string(&status) {
            if let Some(kb) = text
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
            {
                peak = kb;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    peak
}

#[test]
fn the_coordinators_memory_stays_flat_with_the_task_count() {
    let ws = Workspace::new();
    let config = slurm_config(
        &ws,
        "attempts_per_job = 500\ncpus_per_job = 4\nmax_jobs_in_flight = 3",
    );
    let mut peaks = Vec::new();
    for size in [1000, 10_000] {
        let params = json!({ "size": size }).to_string();
        let run = self_check_run(&["--benchmark-params", &params, "--task-concurrency", "12"]);
        let mut child = spawn(&ws, &on_executor(&config, "slurm", run));
        let started = Instant::now();
        let peak = peak_rss_kb(&mut child);
        let out = outcome(child).expect_code(0);
        assert_eq!(published(&run_dir(&out)).len(), size);
        peaks.push((size, peak, started.elapsed()));
    }
    eprintln!("coordinator peak RSS: {peaks:?}");
    let (small, large) = (peaks[0].1, peaks[1].1);
    assert!(
        large < small + 4 * 1024,
        "10x the tasks, {large} kB against {small} kB"
    );
}

#[test]
fn bad_slurm_settings_are_one_line_exit_2_and_write_nothing() {
    let ws = Workspace::new();
    let conf = slurm_conf().display().to_string();
    let cases: [(&str, &str, &str); 5] = [
        (
            "zero.toml",
            "[runtime.slurm]\nattempts_per_job = 0\n",
            conf.as_str(),
        ),
        (
            "type.toml",
            "[runtime.slurm]\npartition = 3\n",
            conf.as_str(),
        ),
        (
            "unknown.toml",
            "[runtime.slurm]\nnodes = 3\n",
            conf.as_str(),
        ),
        (
            "shared.toml",
            "[runtime.slurm]\nshared_dir = \"/nonexistent-shared\"\n",
            conf.as_str(),
        ),
        ("conf.toml", "", "/nonexistent/slurm.conf"),
    ];
    let mut lines = Vec::new();
    for (name, content, slurm_conf) in cases {
        let config = ws.write(name, content).display().to_string();
        let args = on_executor(&config, "slurm", self_check_run(&[]));
        let out = ws.run(&args, &[("SLURM_CONF", slurm_conf)]);
        assert_eq!(out.code, 2, "{name}: {out:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{name}: {out:?}");
        assert!(!ws.cwd.join("results").exists(), "{name}: wrote results");
        lines.push(format!("{name}: {}", ws.redact(out.stderr.trim())));
    }
    let executor = ws.write("executor.toml", "[runtime]\nexecutor = \"pbs\"\n");
    let out = ws.run_expect(
        2,
        &[
            "--config",
            &executor.display().to_string(),
            "run",
            "example_self_check",
            "none",
            "m",
        ],
        &[],
    );
    lines.push(format!("executor.toml: {}", ws.redact(out.stderr.trim())));
    insta::assert_snapshot!("bad_slurm_settings", lines.join("\n"));
}

#[test]
fn an_evaluation_checkpointed_on_a_node_resumes_without_the_agent() {
    let ws = Workspace::new();
    let config = slurm_config(&ws, "cpus_per_job = 2\nmax_jobs_in_flight = 3");
    let run = |reuse: bool| {
        let run = example_run(&[
            "--benchmark-params",
            r#"{"size": 3, "evaluate_delay_ms": 4000}"#,
            "--checkpoint-after-seconds",
            "0",
        ]);
        let mut args = on_executor(&config, "slurm", run);
        if reuse {
            args.push("--reuse");
        }
        spawn(&ws, &args)
    };
    let child = run(false);
    // Every task's evaluation starts after its checkpoint is saved on its node.
    let checkpoints = |root: &Path| {
        files_under(root)
            .iter()
            .filter(|path| path.file_name().is_some_and(|n| n == "checkpoint.json"))
            .count()
    };
    let results = ws.cwd.join("results");
    wait_until("three checkpoints", Duration::from_secs(120), || {
        checkpoints(&results) == 3
    });
    interrupt(&child);
    let out = outcome(child).expect_code(130);
    let interrupted = run_dir(&out);
    assert_eq!(published(&interrupted).len(), 0);
    let out = outcome(run(true)).expect_code(0);
    let resumed = run_dir(&out);
    assert_eq!(published(&resumed).len(), 3);
    let phases: Vec<String> = progress_events(&resumed)
        .iter()
        .filter_map(|e| e["phase"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        phases.iter().filter(|p| *p == "recover_evaluation").count(),
        3,
        "{phases:?}"
    );
    assert!(!phases.iter().any(|p| p == "run_harness"), "{phases:?}");
}
