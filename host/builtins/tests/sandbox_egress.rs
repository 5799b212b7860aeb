//! `sandbox` with an `allowlist` or `denylist` policy: every command reaches the network only
//! through the session's egress proxy. Loopback servers on 127.0.0.2:P and 127.0.0.3:P (one
//! allowed, the other not: an allowlist names the first, a denylist the second), also reached
//! by names of the provider's `egress_hosts`, and a second pair on another port for entries
//! with a port; needs bwrap and curl in the host root.
//!
//! `harness = false`: this binary is the sandbox's forwarder when a sandbox re-executes it
//! (as the host binary is in a real run), so its `main` dispatches first. Without the test
//! harness the code is not `cfg(test)`, hence the explicit allowance of `expect`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agentcompass_test_servers::loopback;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use agentcompass_builtins::sandbox::{run_egress_forwarder, SandboxProvider, ID};
use agentcompass_plugin_api::contract_kit::egress::{
    ALLOWLIST_CASES, DENYLIST_CASES, EGRESS_HOSTS,
};
use agentcompass_plugin_api::contract_kit::{
    run_session_contract, ContractOptions, ProcessProbe, CHECKS,
};
use agentcompass_plugin_api::contracts::{
    EnvironmentSpec, ExecRequest, ExecResult, NetworkPolicy, OpenEnvironmentRequest,
};
use agentcompass_plugin_api::sdk::{Ctx, EnvironmentProvider, SessionRef};

/// The one test this binary is, as the test runner lists it.
const TEST_NAME: &str = "policies_switches_contract_and_figures";

fn main() -> ExitCode {
    if let Some(code) = run_egress_forwarder() {
        return code;
    }
    // Sandbox commands enter their prepared namespace through this binary.
    agentcompass_builtins::sandbox::enter_if_requested();
    // The whole binary is one test for the runner.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if agentcompass_test_servers::listing::answer_listing(&args, &[TEST_NAME]) {
        return ExitCode::SUCCESS;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let servers = Servers::start();
        let other_port = Servers::start();
        for case in ALLOWLIST_CASES {
            println!("test allowlist {} ({}) ...", case.name, case.entry);
            let policy = NetworkPolicy::allowlist([case.entry]);
            reaches_only_the_allowed_server(&servers, policy, (case.allowed, case.refused)).await;
            println!("test allowlist {} ... ok", case.name);
        }
        // The reverse: the entry names 127.0.0.3, the other server is reached.
        for case in DENYLIST_CASES {
            println!("test denylist {} ({}) ...", case.name, case.entry);
            let policy = NetworkPolicy::denylist([case.entry]);
            reaches_only_the_allowed_server(&servers, policy, (case.allowed, case.refused)).await;
            println!("test denylist {} ... ok", case.name);
        }
        println!("test entries with a port ...");
        port_entries_match_their_port_only(&servers, &other_port).await;
        println!("test entries with a port ... ok");
        println!("test switches per phase ...");
        switches_per_phase(&servers).await;
        println!("test switches per phase ... ok");
        println!("test keeps the session contract ...");
        keeps_the_session_contract().await;
        println!("test keeps the session contract ... ok");
        println!("test figures ...");
        figures(&servers).await;
        println!("test figures ... ok");
    });
    ExitCode::SUCCESS
}

/// Two HTTP servers on one port: 127.0.0.2 answers `two`, 127.0.0.3 `three`.
struct Servers {
    port: u16,
}

impl Servers {
    fn start() -> Servers {
        Servers {
            port: loopback::twin_servers("two", "three"),
        }
    }
}

/// The forwarder in front of every command changes nothing the contract kit checks (exit
/// codes, output, timeouts, detached commands, processes ending with their command).
async fn keeps_the_session_contract() {
    let mut req = OpenEnvironmentRequest::new("run", "egress/contract", EnvironmentSpec::new(ID));
    req.baseline_network_policy = NetworkPolicy::allowlist(["127.0.0.2"]);
    let options = ContractOptions::default().processes(ProcessProbe::Host);
    let report = run_session_contract(&SandboxProvider::default(), &req, &options)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.passed(), CHECKS.len());
}

async fn open(policy: NetworkPolicy) -> (SessionRef, PathBuf) {
    let mut spec = EnvironmentSpec::new(ID);
    let hosts: serde_json::Map<String, serde_json::Value> = EGRESS_HOSTS
        .iter()
        .map(|(name, address)| (name.to_string(), (*address).into()))
        .collect();
    spec.params.insert("egress_hosts".into(), hosts.into());
    let mut req = OpenEnvironmentRequest::new("run", "egress/1", spec);
    req.baseline_network_policy = policy;
    let session = SandboxProvider::default()
        .open(&Ctx::detached(), &req)
        .await
        .unwrap_or_else(|e| panic!("cannot open a sandbox: {e}"));
    let dir = PathBuf::from(
        session.info().close_params["dir"]
            .as_str()
            .expect("close_params.dir"),
    );
    (session, dir)
}

async fn sh(session: &SessionRef, line: &str) -> ExecResult {
    session
        .exec(ExecRequest::shell(line).timeout(30.0))
        .await
        .unwrap_or_else(|e| panic!("{line}: {e}"))
}

/// `policy` permits the server named `allowed` (127.0.0.2) and not `refused` (127.0.0.3).
async fn reaches_only_the_allowed_server(
    servers: &Servers,
    policy: NetworkPolicy,
    (allowed, refused): (&str, &str),
) {
    assert!(
        Path::new("/usr/bin/curl").exists() && Path::new("/bin/bash").exists(),
        "these tests need curl and bash in the host root"
    );
    let port = servers.port;
    let (session, dir) = open(policy.clone()).await;

    // The proxy variables, upper and lower case, through the namespace's own loopback.
    let r = sh(&session, "env | grep -i _proxy= | sort").await;
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 8, "{r:?}");
    for var in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
        for name in [var.to_string(), var.to_ascii_lowercase()] {
            let value = lines
                .iter()
                .find_map(|l| l.strip_prefix(&format!("{name}=")))
                .unwrap_or_else(|| panic!("{name} unset: {r:?}"));
            assert!(
                value.starts_with("http://agent:") && value.ends_with("@127.0.0.1:3128"),
                "{name}={value}"
            );
        }
    }
    assert!(lines.contains(&"NO_PROXY=localhost,127.0.0.1,::1"), "{r:?}");
    assert!(lines.contains(&"no_proxy=localhost,127.0.0.1,::1"), "{r:?}");

    // Absolute-URI HTTP through the proxy: the allowed server answers, the other is 403.
    let get =
        |host: &str| format!("curl -sS --max-time 10 -w ' %{{http_code}}' http://{host}:{port}/");
    let r = sh(&session, &get(allowed)).await;
    assert_eq!((r.returncode, r.stdout.as_str()), (0, "two 200"), "{r:?}");
    let r = sh(&session, &get(refused)).await;
    assert_eq!(r.returncode, 0, "{r:?}");
    assert!(r.stdout.ends_with(" 403"), "{r:?}");
    assert!(!r.stdout.contains("three"), "{r:?}");

    // CONNECT tunnels the same way.
    let tunnel = |host: &str| {
        format!(
            "curl -sS --max-time 10 --proxytunnel -w ' %{{http_connect}}' http://{host}:{port}/"
        )
    };
    let r = sh(&session, &tunnel(allowed)).await;
    assert_eq!((r.returncode, r.stdout.as_str()), (0, "two 200"), "{r:?}");
    let r = sh(&session, &tunnel(refused)).await;
    assert_ne!(r.returncode, 0, "{r:?}");
    assert!(
        r.stdout.ends_with(" 403") && !r.stdout.contains("three"),
        "{r:?}"
    );

    // A wrong token is 407, nothing forwarded.
    let r = sh(
        &session,
        &format!(
            "curl -sS --max-time 10 -x http://agent:wrong-token-0123456789@127.0.0.1:3128 \
             -w ' %{{http_code}}' -o /dev/null http://{allowed}:{port}/"
        ),
    )
    .await;
    assert_eq!((r.returncode, r.stdout.as_str()), (0, " 407"), "{r:?}");

    // Ignoring the proxy variables reaches nothing, not the allowed server either.
    for host in ["127.0.0.2", "127.0.0.3"] {
        let r = sh(
            &session,
            &format!("curl -sS --noproxy '*' --max-time 5 http://{host}:{port}/"),
        )
        .await;
        assert!(r.returncode != 0 && r.stdout.is_empty(), "{host}: {r:?}");
        let r = session
            .exec(
                ExecRequest::argv([
                    "bash",
                    "-c",
                    &format!("exec 3<>/dev/tcp/{host}/{port} && echo connected"),
                ])
                .timeout(10.0),
            )
            .await
            .expect("exec");
        assert!(
            r.returncode != 0 && r.stdout.is_empty() && !r.timed_out,
            "{host}: {r:?}"
        );
    }
    let r = sh(
        &session,
        "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '",
    )
    .await;
    assert_eq!(r.stdout, "lo\n", "{r:?}");

    // The command is the command: exit codes, a missing program, background children.
    let r = sh(&session, "echo out; echo err >&2; exit 7").await;
    assert_eq!(
        (r.returncode, r.stdout.as_str(), r.stderr.as_str()),
        (7, "out\n", "err\n"),
        "{r:?}"
    );
    let err = session
        .exec(ExecRequest::argv(["definitely-not-a-program-egress"]))
        .await
        .expect_err("a missing program is an error");
    assert!(
        err.message
            .contains("cannot start `definitely-not-a-program-egress`"),
        "{}",
        err.message
    );

    // Setting the baseline again keeps its proxy (the same socket below).
    session
        .set_network_policy(&policy)
        .await
        .expect("same policy");

    // After close the proxy is gone.
    let socket = dir.join("egress").join("s");
    UnixStream::connect(&socket).expect("the proxy listens while the session is open");
    session.close().await.expect("close");
    assert!(UnixStream::connect(&socket).is_err());
    assert!(!dir.exists());
}

/// What a command on the current policy reaches: `(127.0.0.2, 127.0.0.3)`, each the body
/// and status curl got (through the proxy variables when they are set), `None` when curl
/// failed; and whether a direct connection (ignoring the proxy) reached 127.0.0.2.
async fn reach(session: &SessionRef, port: u16) -> (Option<String>, Option<String>, bool) {
    let get = |host: &str| {
        format!("curl -sS --max-time 10 -w ' %{{http_code}}' http://{host}:{port}/ 2>/dev/null")
    };
    let mut got = Vec::new();
    for host in ["127.0.0.2", "127.0.0.3"] {
        let r = sh(session, &get(host)).await;
        got.push((r.returncode == 0).then_some(r.stdout));
    }
    let direct = sh(
        session,
        &format!("curl -sS --noproxy '*' --max-time 5 -o /dev/null http://127.0.0.2:{port}/"),
    )
    .await
    .returncode
        == 0;
    let three = got.pop().flatten();
    let two = got.pop().flatten();
    (two, three, direct)
}

/// One session switched `public` (its baseline) -> `no-network` -> `allowlist` -> another
/// allowlist -> the first again -> the baseline: every command reaches exactly what the
/// policy of the moment it started allows, and a command running across a switch keeps the
/// network it started with.
async fn switches_per_phase(servers: &Servers) {
    let port = servers.port;
    let (session, dir) = open(NetworkPolicy::public()).await;
    let some = |s: &str| Some(s.to_string());
    let timed = |started: Instant, label: &str| {
        println!(
            "  switch to {label}: {:.2} ms",
            started.elapsed().as_secs_f64() * 1e3
        );
    };

    // public: the host network, both servers directly, no proxy variables.
    assert_eq!(
        reach(&session, port).await,
        (some("two 200"), some("three 200"), true)
    );
    let r = sh(&session, "env | grep -ci _proxy=").await;
    assert_eq!(r.stdout, "0\n", "{r:?}");

    // no-network: nothing.
    let started = Instant::now();
    session
        .set_network_policy(&NetworkPolicy::no_network())
        .await
        .expect("to no-network");
    timed(started, "no-network");
    assert_eq!(reach(&session, port).await, (None, None, false));
    let r = sh(
        &session,
        "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '",
    )
    .await;
    assert_eq!(r.stdout, "lo\n", "{r:?}");

    // allowlist (its proxy started now): 127.0.0.2 through the proxy, 127.0.0.3 refused,
    // nothing directly.
    let allow_two = NetworkPolicy::allowlist(["127.0.0.2"]);
    let started = Instant::now();
    session
        .set_network_policy(&allow_two)
        .await
        .expect("to allowlist");
    timed(started, "allowlist (proxy started)");
    let (two, three, direct) = reach(&session, port).await;
    assert_eq!((two, direct), (some("two 200"), false));
    let three = three.expect("curl gets the proxy's answer");
    assert!(
        three.ends_with(" 403") && !three.contains("three"),
        "{three}"
    );
    let first = dir.join("egress").join("s");
    UnixStream::connect(&first).expect("the allowlist's proxy listens");

    // Another allowlist: its own proxy; the first one stays up for commands that use it.
    session
        .set_network_policy(&NetworkPolicy::allowlist(["127.0.0.3"]))
        .await
        .expect("to another allowlist");
    let (two, three, _) = reach(&session, port).await;
    assert_eq!(three, some("three 200"));
    assert!(two.expect("proxy answer").ends_with(" 403"));
    UnixStream::connect(dir.join("egress-1").join("s")).expect("the second proxy listens");
    let started = Instant::now();
    session
        .set_network_policy(&allow_two)
        .await
        .expect("back to the first allowlist");
    timed(started, "allowlist (proxy reused)");
    assert_eq!(reach(&session, port).await.0, some("two 200"));
    assert!(!dir.join("egress-2").exists());

    // A denylist: its own proxy; 127.0.0.2 through it, 127.0.0.3 refused, nothing directly.
    let started = Instant::now();
    session
        .set_network_policy(&NetworkPolicy::denylist(["127.0.0.3"]))
        .await
        .expect("to a denylist");
    timed(started, "denylist (proxy started)");
    let (two, three, direct) = reach(&session, port).await;
    assert_eq!((two, direct), (some("two 200"), false));
    assert!(three.expect("proxy answer").ends_with(" 403"));
    UnixStream::connect(dir.join("egress-2").join("s")).expect("the denylist's proxy listens");
    session
        .set_network_policy(&allow_two)
        .await
        .expect("back to the first allowlist");
    assert!(!dir.join("egress-3").exists());

    // A command keeps the network it started with: one started on the allowlist still gets
    // through after a switch to no-network, one started on no-network still cannot after a
    // switch to public.
    let get_two = format!("sleep 1; curl -sS --max-time 10 http://127.0.0.2:{port}/");
    let running = {
        let (session, line) = (session.clone(), get_two.clone());
        tokio::spawn(async move { sh(&session, &line).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    session
        .set_network_policy(&NetworkPolicy::no_network())
        .await
        .expect("to no-network");
    let r = running.await.expect("join");
    assert_eq!((r.returncode, r.stdout.as_str()), (0, "two"), "{r:?}");
    let running = {
        let (session, line) = (session.clone(), get_two.clone());
        tokio::spawn(async move { sh(&session, &line).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let started = Instant::now();
    session
        .set_network_policy(&NetworkPolicy::public())
        .await
        .expect("back to the baseline");
    timed(started, "public");
    let r = running.await.expect("join");
    assert!(r.returncode != 0 && r.stdout.is_empty(), "{r:?}");

    // The baseline again: the host network, no proxy variables.
    assert_eq!(
        reach(&session, port).await,
        (some("two 200"), some("three 200"), true)
    );
    let r = sh(&session, "env | grep -ci _proxy=").await;
    assert_eq!(r.stdout, "0\n", "{r:?}");

    // Fail closed: an allowlist without entries is refused and changes nothing.
    let mut empty = NetworkPolicy::allowlist(["x"]);
    empty.allowed_hosts.clear();
    assert!(session.set_network_policy(&empty).await.is_err());
    assert!(reach(&session, port).await.2);

    // Close stops every proxy.
    session.close().await.expect("close");
    assert!(UnixStream::connect(&first).is_err());
    assert!(!dir.exists());
    assert!(session.set_network_policy(&allow_two).await.is_err());
}

/// An entry with a port matches that port only: allowlist `127.0.0.2:P` and
/// `models.internal:P` reach port P and not Q (the same address), denylist `127.0.0.3:P`
/// refuses port P and reaches Q; IPv4 and `[v6]` forms are accepted by the provider.
async fn port_entries_match_their_port_only(servers: &Servers, other: &Servers) {
    let (p, q) = (servers.port, other.port);
    let get = |host: &str, port: u16| {
        format!("curl -sS --max-time 10 -w ' %{{http_code}}' http://{host}:{port}/ 2>/dev/null")
    };
    let policies = [
        (
            NetworkPolicy::allowlist([format!("127.0.0.2:{p}"), format!("[::1]:{p}")]),
            "127.0.0.2",
        ),
        (
            NetworkPolicy::allowlist([format!("models.internal:{p}")]),
            "models.internal",
        ),
    ];
    for (policy, host) in policies {
        let (session, _) = open(policy.clone()).await;
        let r = sh(&session, &get(host, p)).await;
        assert_eq!(r.stdout, "two 200", "{policy:?}: {r:?}");
        let r = sh(&session, &get(host, q)).await;
        assert!(
            r.stdout.ends_with(" 403") && !r.stdout.contains("two"),
            "{policy:?}: {r:?}"
        );
        session.close().await.expect("close");
    }
    let (session, _) = open(NetworkPolicy::denylist([format!("127.0.0.3:{p}")])).await;
    let r = sh(&session, &get("127.0.0.3", p)).await;
    assert!(
        r.stdout.ends_with(" 403") && !r.stdout.contains("three"),
        "{r:?}"
    );
    let r = sh(&session, &get("127.0.0.3", q)).await;
    assert_eq!(r.stdout, "three 200", "{r:?}");
    let r = sh(&session, &get("127.0.0.2", p)).await;
    assert_eq!(r.stdout, "two 200", "{r:?}");
    session.close().await.expect("close");
}

/// Rough figures, printed: one curl through the proxy vs a `no-network` sandbox's `true` (and
/// vs the same curl straight to the server from a `public` sandbox).
async fn figures(servers: &Servers) {
    const N: u32 = 20;
    let (allow, _) = open(NetworkPolicy::allowlist(["127.0.0.2"])).await;
    let (none, _) = open(NetworkPolicy::no_network()).await;
    let (public, _) = open(NetworkPolicy::public()).await;
    let direct = format!(
        "curl -sS --max-time 10 -o /dev/null http://127.0.0.2:{}/",
        servers.port
    );
    let curl = format!(
        "curl -sS --max-time 10 -o /dev/null http://127.0.0.2:{}/",
        servers.port
    );
    let mut timings = Vec::new();
    for (label, session, line) in [
        ("no-network `true`", &none, "true"),
        ("allowlist `true`", &allow, "true"),
        ("public curl, direct", &public, direct.as_str()),
        ("allowlist curl via the proxy", &allow, curl.as_str()),
    ] {
        sh(session, line).await;
        let start = Instant::now();
        for _ in 0..N {
            let r = sh(session, line).await;
            assert_eq!(r.returncode, 0, "{r:?}");
        }
        timings.push((label, start.elapsed() / N));
    }
    for (label, mean) in timings {
        println!("  {label}: {:.1} ms per command", mean.as_secs_f64() * 1e3);
    }
    allow.close().await.expect("close");
    none.close().await.expect("close");
    public.close().await.expect("close");
}
