//! `docker` with non-public policies: an `allowlist` container reaches the network only
//! through the session's egress proxy, `no-network` reaches nothing, policies switch per
//! phase inside one isolated container, and host endpoints (host Unix sockets) are reachable
//! at `127.0.0.1:PORT` under every policy. Loopback servers on 127.0.0.2:P (allowed) and
//! 127.0.0.3:P (not), also reached by names of the provider's `egress_hosts`. Needs the
//! Docker daemon at `AGENTCOMPASS_TEST_DOCKER_HOST` holding `agentcompass-test/busybox:1`
//! (busybox `wget` and `nc` are the clients).
//!
//! `harness = false`: this binary is the forwarder the provider starts in each isolated
//! container (its `current_exe`, as the host binary is in a real run), so its `main`
//! dispatches first. Without the test harness the code is not `cfg(test)`, hence the
//! explicit allowance of `unwrap`/`expect`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;

use agentcompass_test_servers::{listing, loopback};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use agentcompass_plugin_api::contract_kit::egress::{
    PolicyCase, ALLOWLIST_CASES, DENYLIST_CASES, EGRESS_HOSTS,
};
use agentcompass_plugin_api::contract_kit::{
    run_session_contract, ClosedOnDrop, ContractOptions, ProcessProbe, CHECKS,
};
use agentcompass_plugin_api::contracts::{
    EnvironmentSpec, EvaluationEnvironmentMode, ExecRequest, ExecResult, ExecutionPlan,
    HostEndpoint, NetworkPolicy, OpenEnvironmentRequest,
};
use agentcompass_plugin_api::sdk::{Ctx, EnvironmentProvider, SessionRef};
use agentcompass_plugin_api::ErrorKind;
use docker_provider::{ContainerProvider, Engine};

const IMAGE: &str = "agentcompass-test/busybox:1";

/// One named test over the shared servers.
type Test = fn(&Servers);

/// The tests, by name.
const TESTS: [(&str, Test); 11] = [
    ("allowlist_by_address_cidr_name_and_wildcard", allowlists),
    ("denylist_by_address_cidr_name_and_wildcard", denylists),
    ("ports_and_runtime_egress_hosts", ports_and_runtime_hosts),
    ("no_network_reaches_nothing", no_network_reaches_nothing),
    ("switches_per_phase_in_one_container", switches_per_phase),
    ("public_and_isolated_phases_do_not_mix", phases_do_not_mix),
    ("host_endpoints_under_every_policy", host_endpoints),
    (
        "a_forwarder_that_cannot_listen_fails_the_open",
        forwarder_failure,
    ),
    ("close_and_crash_cleanup", cleanup),
    ("keeps_the_session_contract", contract),
    ("figures", figures),
];

fn main() -> ExitCode {
    if let Some(code) = agentcompass_egress::forward::run_if_requested() {
        return code;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Each test listed on its own: nextest runs each in its own process.
    if listing::answer_listing(&args, &TESTS.map(|(name, _)| name)) {
        return ExitCode::SUCCESS;
    }
    let exact = args.iter().any(|a| a == "--exact");
    let filter = args.iter().find(|a| !a.starts_with('-'));
    let servers = Servers::start();
    for (name, test) in TESTS {
        let chosen = match filter {
            None => true,
            Some(f) if exact => name == f.as_str(),
            Some(f) => name.contains(f.as_str()),
        };
        if !chosen {
            continue;
        }
        println!("test {name} ...");
        test(&servers);
        println!("test {name} ... ok");
    }
    ExitCode::SUCCESS
}

/// The engine under test: `AGENTCOMPASS_TEST_ENGINE` (`docker`, the default, or `podman`).
fn test_engine() -> Engine {
    match std::env::var("AGENTCOMPASS_TEST_ENGINE").as_deref() {
        Ok("podman") => Engine::Podman,
        Ok("docker") | Err(_) => Engine::Docker,
        Ok(other) => panic!("AGENTCOMPASS_TEST_ENGINE `{other}`: expected docker or podman"),
    }
}

/// The provider of the engine under test.
fn provider() -> ContainerProvider {
    ContainerProvider::new(test_engine())
}

fn docker_host() -> String {
    std::env::var("AGENTCOMPASS_TEST_DOCKER_HOST").expect(
        "AGENTCOMPASS_TEST_DOCKER_HOST is not set: the docker egress tests need a Docker daemon \
         holding agentcompass-test/busybox:1 (./dev.sh test starts one)",
    )
}

/// Drives an SDK future from a plain thread (the provider spawns onto its own runtime).
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(future)
}

/// Two HTTP servers on one port: 127.0.0.2 answers `two`, 127.0.0.3 `three`; and one on
/// the host's 127.0.0.1 (a host loopback service) answering `host`.
struct Servers {
    port: u16,
    host_port: u16,
}

impl Servers {
    fn start() -> Servers {
        let host = TcpListener::bind("127.0.0.1:0").unwrap();
        let host_port = host.local_addr().unwrap().port();
        loopback::serve(host, |_| loopback::Reply::ok("host"));
        let port = loopback::twin_servers("two", "three");
        Servers { port, host_port }
    }
}

fn request(policy: NetworkPolicy) -> OpenEnvironmentRequest {
    let mut spec = EnvironmentSpec::new(test_engine().id());
    spec.params
        .insert(test_engine().address_param().into(), docker_host().into());
    let hosts: serde_json::Map<String, serde_json::Value> = EGRESS_HOSTS
        .iter()
        .map(|(name, address)| (name.to_string(), (*address).into()))
        .collect();
    spec.params.insert("egress_hosts".into(), hosts.into());
    spec.setup.image = Some(IMAGE.into());
    let mut req = OpenEnvironmentRequest::new("egress-test", "egress/1", spec);
    req.baseline_network_policy = policy;
    req
}

fn open(req: &OpenEnvironmentRequest) -> ClosedOnDrop {
    ClosedOnDrop(
        block_on(provider().open(&Ctx::detached(), req))
            .unwrap_or_else(|e| panic!("cannot open a container: {e}")),
    )
}

fn sh(session: &SessionRef, line: &str) -> ExecResult {
    block_on(session.exec(ExecRequest::shell(line).timeout(60.0))).unwrap()
}

/// `fetch [-d] HOST PORT`, a shell HTTP client honouring `http_proxy` (see the file).
const FETCH: &str = include_str!("fetch.sh");

/// What `fetch HOST PORT` got: `200 BODY`, `403 ...` or `unreachable`.
fn fetch(session: &SessionRef, host: &str, port: u16) -> String {
    sh(session, &format!("{FETCH}\nfetch {host} {port}"))
        .stdout
        .trim()
        .to_string()
}

/// The same, ignoring the proxy variables (a direct connection).
fn fetch_direct(session: &SessionRef, host: &str, port: u16) -> String {
    sh(session, &format!("{FETCH}\nfetch -d {host} {port}"))
        .stdout
        .trim()
        .to_string()
}

fn reached(got: &str, body: &str) -> bool {
    got == format!("200 {body}")
}

fn refused(got: &str) -> bool {
    got.starts_with("403 ")
}

fn unreachable(got: &str) -> bool {
    got == "unreachable"
}

fn allowlists(servers: &Servers) {
    for PolicyCase {
        name,
        entry,
        allowed,
        refused: other,
    } in ALLOWLIST_CASES
    {
        let session = open(&request(NetworkPolicy::allowlist([entry])));
        let got = fetch(&session, allowed, servers.port);
        assert!(reached(&got, "two"), "{name}: {allowed}: {got}");
        let got = fetch(&session, other, servers.port);
        assert!(refused(&got), "{name}: {other}: {got}");
        // A direct connection that ignores the proxy variables reaches nothing.
        for host in ["127.0.0.2", "127.0.0.3"] {
            let got = fetch_direct(&session, host, servers.port);
            assert!(unreachable(&got), "{name}: direct {host}: {got}");
        }
        let got = fetch_direct(&session, "127.0.0.1", servers.host_port);
        assert!(unreachable(&got), "{name}: direct host loopback: {got}");
        // The proxy variables, in both cases; the container has only its loopback.
        let r = sh(
            &session,
            "echo $HTTP_PROXY; echo $http_proxy; echo $NO_PROXY",
        );
        let lines: Vec<&str> = r.stdout.lines().collect();
        assert!(lines[0].starts_with("http://agent:") && lines[0].ends_with("@127.0.0.1:3128"));
        assert_eq!(lines[0], lines[1]);
        assert_eq!(lines[2], "localhost,127.0.0.1,::1");
        let r = sh(&session, "cat /proc/net/dev");
        let interfaces: Vec<&str> = r
            .stdout
            .lines()
            .skip(2)
            .filter_map(|l| l.split(':').next().map(str::trim))
            .collect();
        assert_eq!(interfaces, ["lo"], "{r:?}");
        println!("  allowlist {name} ({entry}): {allowed} reached, {other} 403, direct nothing");
    }
}

fn denylists(servers: &Servers) {
    for PolicyCase {
        name,
        entry,
        allowed,
        refused: denied,
    } in DENYLIST_CASES
    {
        let session = open(&request(NetworkPolicy::denylist([entry])));
        let got = fetch(&session, allowed, servers.port);
        assert!(reached(&got, "two"), "{name}: {allowed}: {got}");
        let got = fetch(&session, denied, servers.port);
        assert!(refused(&got), "{name}: {denied}: {got}");
        for host in ["127.0.0.2", "127.0.0.3"] {
            let got = fetch_direct(&session, host, servers.port);
            assert!(unreachable(&got), "{name}: direct {host}: {got}");
        }
        println!("  denylist {name} ({entry}): {allowed} reached, {denied} 403, direct nothing");
    }
}

fn ports_and_runtime_hosts(servers: &Servers) {
    let p = servers.port;
    // An entry with a port matches that port only.
    let session = open(&request(NetworkPolicy::allowlist([format!(
        "127.0.0.2:{p}"
    )])));
    assert!(reached(&fetch(&session, "127.0.0.2", p), "two"));
    drop(session);
    let other = if p == 1 { 2 } else { p - 1 };
    let session = open(&request(NetworkPolicy::allowlist([format!(
        "127.0.0.2:{other}"
    )])));
    assert!(refused(&fetch(&session, "127.0.0.2", p)));
    drop(session);
    // `runtime.egress.hosts` (the request's egress_hosts): a name only it maps, and its
    // address wins over the parameter's for a name in both.
    let mut req = request(NetworkPolicy::allowlist([
        "runtime.internal",
        "models.internal",
    ]));
    req.egress_hosts = [
        ("runtime.internal".to_string(), "127.0.0.2".to_string()),
        ("models.internal".to_string(), "127.0.0.3".to_string()),
    ]
    .into();
    let session = open(&req);
    assert!(reached(&fetch(&session, "runtime.internal", p), "two"));
    assert!(reached(&fetch(&session, "models.internal", p), "three"));
    drop(session);
    let session = open(&request(NetworkPolicy::allowlist(["runtime.internal"])));
    let got = fetch(&session, "runtime.internal", p);
    assert!(!got.starts_with("200"), "{got}");
}

fn no_network_reaches_nothing(servers: &Servers) {
    let session = open(&request(NetworkPolicy::no_network()));
    for (host, port) in [
        ("127.0.0.2", servers.port),
        ("127.0.0.3", servers.port),
        ("127.0.0.1", servers.host_port),
    ] {
        let got = fetch(&session, host, port);
        assert!(unreachable(&got), "{host}: {got}");
        let r = sh(
            &session,
            &format!("echo x | nc -w 3 {host} {port}; echo rc=$?"),
        );
        assert!(!r.stdout.contains("rc=0"), "{host}: {r:?}");
    }
    // No proxy variables and nothing on the proxy's port.
    let r = sh(
        &session,
        "echo \"[$HTTP_PROXY]\"; echo x | nc -w 3 127.0.0.1 3128; echo rc=$?",
    );
    assert!(
        r.stdout.starts_with("[]\n") && !r.stdout.contains("rc=0"),
        "{r:?}"
    );
}

/// The open CONNECT tunnel of a detached `nc` through the proxy: the PID file it leaves.
const TUNNEL: &str = "tok=${HTTP_PROXY#http://agent:}; tok=${tok%@*}; \
    (printf 'CONNECT 127.0.0.2:%s HTTP/1.1\\r\\nHost: x\\r\\nProxy-Authorization: Bearer %s\\r\\n\\r\\n' \"$PORT\" \"$tok\"; sleep 60) \
    | nc 127.0.0.1 3128 > /tmp/tunnel.out & echo $! > /tmp/tunnel.pid; wait";

fn switches_per_phase(servers: &Servers) {
    // A no-network baseline, switched to an allowlist (the run), a second allowlist, back.
    let session = open(&request(NetworkPolicy::no_network()));
    let p = servers.port;
    assert!(unreachable(&fetch(&session, "127.0.0.2", p)));

    block_on(session.set_network_policy(&NetworkPolicy::allowlist(["127.0.0.2"]))).unwrap();
    assert!(reached(&fetch(&session, "127.0.0.2", p), "two"));
    assert!(refused(&fetch(&session, "127.0.0.3", p)));
    assert!(unreachable(&fetch_direct(&session, "127.0.0.2", p)));

    // A tunnel opened under this allowlist is closed by the next switch.
    block_on(
        session.exec(
            ExecRequest::shell(TUNNEL)
                .env("PORT", p.to_string())
                .detach(),
        ),
    )
    .unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while !sh(&session, "cat /tmp/tunnel.out 2>/dev/null")
        .stdout
        .contains("200")
    {
        assert!(Instant::now() < until, "the tunnel did not open");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The same policy again (the runtime restoring a baseline equal to the run's) changes
    // nothing: the tunnel stays open.
    block_on(session.set_network_policy(&NetworkPolicy::allowlist(["127.0.0.2"]))).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let r = sh(
        &session,
        "kill -0 $(cat /tmp/tunnel.pid) 2>/dev/null && echo open || echo closed",
    );
    assert_eq!(r.stdout.trim(), "open", "{r:?}");
    let switched = Instant::now();
    block_on(session.set_network_policy(&NetworkPolicy::allowlist(["other.internal"]))).unwrap();
    let switch_time = switched.elapsed();
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let r = sh(
            &session,
            "kill -0 $(cat /tmp/tunnel.pid) 2>/dev/null && echo open || echo closed",
        );
        if r.stdout.trim() == "closed" {
            break;
        }
        assert!(Instant::now() < until, "the tunnel survived the switch");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(refused(&fetch(&session, "127.0.0.2", p)));
    assert!(reached(&fetch(&session, "other.internal", p), "three"));

    // A denylist phase, then the evaluation: no-network, the baseline again (no-network).
    block_on(session.set_network_policy(&NetworkPolicy::denylist(["127.0.0.3"]))).unwrap();
    assert!(reached(&fetch(&session, "127.0.0.2", p), "two"));
    assert!(refused(&fetch(&session, "127.0.0.3", p)));
    block_on(session.set_network_policy(&NetworkPolicy::no_network())).unwrap();
    for host in ["127.0.0.2", "127.0.0.3"] {
        assert!(unreachable(&fetch(&session, host, p)));
        assert!(unreachable(&fetch_direct(&session, host, p)));
    }
    let r = sh(&session, "echo \"[$HTTP_PROXY]\"");
    assert_eq!(r.stdout, "[]\n");

    // A public phase in an isolated container fails closed and changes nothing.
    let err = block_on(session.set_network_policy(&NetworkPolicy::public())).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Unsupported);
    assert!(
        err.message.contains(&format!("`{}`", test_engine())) && err.message.contains("`public`"),
        "{}",
        err.message
    );
    assert!(unreachable(&fetch_direct(&session, "127.0.0.2", p)));

    // An allowlist baseline back after a no-network evaluation.
    let session = open(&request(NetworkPolicy::allowlist(["127.0.0.2"])));
    block_on(session.set_network_policy(&NetworkPolicy::no_network())).unwrap();
    assert!(unreachable(&fetch(&session, "127.0.0.2", p)));
    block_on(session.set_network_policy(&NetworkPolicy::allowlist(["127.0.0.2"]))).unwrap();
    assert!(reached(&fetch(&session, "127.0.0.2", p), "two"));
    println!("  allowlist -> allowlist switch with an open tunnel: {switch_time:?}");
}

fn phases_do_not_mix(servers: &Servers) {
    // A public container cannot become isolated.
    let session = open(&request(NetworkPolicy::public()));
    assert!(reached(
        &fetch_direct(&session, "127.0.0.2", servers.port),
        "two"
    ));
    let err =
        block_on(session.set_network_policy(&NetworkPolicy::allowlist(["127.0.0.2"]))).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Unsupported);
    block_on(session.set_network_policy(&NetworkPolicy::public())).unwrap();
    assert!(reached(
        &fetch_direct(&session, "127.0.0.2", servers.port),
        "two"
    ));

    // Plans are refused before anything opens, with one line naming policy and provider.
    let caps = provider().capabilities().unwrap();
    assert!(caps.dynamic_network_policy && caps.host_endpoints);
    let mut plan = ExecutionPlan {
        environment: EnvironmentSpec::new(test_engine().id()),
        ..ExecutionPlan::default()
    };
    plan.environment.setup.image = Some(IMAGE.to_string());
    plan.baseline_network_policy = Some(NetworkPolicy::no_network());
    plan.run_network_policy = Some(NetworkPolicy::allowlist(["127.0.0.2", "*.pypi.org:443"]));
    plan.evaluation_environment_mode = EvaluationEnvironmentMode::Reuse;
    plan.evaluation_network_policy = Some(NetworkPolicy::no_network());
    provider().validate_plan(&plan).unwrap();
    let mut mixed = plan.clone();
    mixed.baseline_network_policy = Some(NetworkPolicy::public());
    let err = provider().validate_plan(&mixed).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Unsupported);
    assert_eq!(
        err.message,
        format!(
            "environment `{}` cannot switch from its baseline network policy (`public`) to the \
             run_network_policy (`allowlist`): a container runs on its own network from its \
             start, so its phases must be all public or all non-public",
            test_engine()
        )
    );
    let mut mixed = plan.clone();
    mixed.evaluation_network_policy = Some(NetworkPolicy::public());
    let err = provider().validate_plan(&mixed).unwrap_err();
    assert!(
        err.message
            .contains("(`no-network`) to the evaluation_network_policy (`public`)"),
        "{}",
        err.message
    );
    // A fresh verifier is its own container: its baseline decides.
    let mut fresh = plan;
    fresh.baseline_network_policy = Some(NetworkPolicy::public());
    fresh.run_network_policy = None;
    fresh.evaluation_environment_mode = EvaluationEnvironmentMode::Fresh;
    fresh.evaluation_baseline_network_policy = Some(NetworkPolicy::no_network());
    provider().validate_plan(&fresh).unwrap();
}

/// A Unix-socket line server on the host answering `endpoint: LINE` (the model relay's
/// stand-in), in a fresh directory.
fn endpoint_server() -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("docker-egress-ep-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join("model.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut line = String::new();
                let mut reader = BufReader::new(&stream);
                if reader.read_line(&mut line).is_ok() {
                    let _ = write!(&stream, "endpoint: {line}");
                }
            });
        }
    });
    (dir, socket)
}

fn host_endpoints(servers: &Servers) {
    let (dir, socket) = endpoint_server();
    let endpoint = HostEndpoint {
        name: "model".into(),
        socket: socket.display().to_string(),
        port: 4000,
    };
    for policy in [
        NetworkPolicy::no_network(),
        NetworkPolicy::allowlist(["127.0.0.2"]),
    ] {
        let mut req = request(policy.clone());
        req.host_endpoints = vec![endpoint.clone()];
        let session = open(&req);
        let r = sh(&session, "echo hello | nc -w 5 127.0.0.1 4000");
        assert_eq!(r.stdout, "endpoint: hello\n", "{policy:?}: {r:?}");
        // Nothing else: not the host's loopback service, not the servers directly.
        let got = fetch_direct(&session, "127.0.0.1", servers.host_port);
        assert!(unreachable(&got), "{got}");
        assert!(unreachable(&fetch_direct(
            &session,
            "127.0.0.2",
            servers.port
        )));
        // The endpoint stays through a switch to no-network and back.
        block_on(session.set_network_policy(&NetworkPolicy::no_network())).unwrap();
        let r = sh(&session, "echo again | nc -w 5 127.0.0.1 4000");
        assert_eq!(r.stdout, "endpoint: again\n", "{r:?}");
        assert!(unreachable(&fetch(&session, "127.0.0.2", servers.port)));
        block_on(session.set_network_policy(&NetworkPolicy::allowlist(["127.0.0.2"]))).unwrap();
        assert!(reached(&fetch(&session, "127.0.0.2", servers.port), "two"));
        let r = sh(&session, "echo third | nc -w 5 127.0.0.1 4000");
        assert_eq!(r.stdout, "endpoint: third\n", "{r:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

fn forwarder_failure(_: &Servers) {
    // The image's own process holds the endpoint's port: the forwarder cannot listen.
    let (dir, socket) = endpoint_server();
    let mut req = request(NetworkPolicy::no_network());
    req.environment.params.insert(
        "keep_alive_command".into(),
        serde_json::json!(["nc", "-l", "-p", "4000"]),
    );
    req.host_endpoints = vec![HostEndpoint {
        name: "model".into(),
        socket: socket.display().to_string(),
        port: 4000,
    }];
    let err = block_on(provider().open(&Ctx::detached(), &req))
        .err()
        .unwrap();
    assert!(!err.message.contains('\n'), "{}", err.message);
    assert!(
        err.message
            .contains("the egress forwarder did not start in container")
            && err.message.contains("127.0.0.1:4000"),
        "{}",
        err.message
    );
    println!("  {}", err.message);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn cleanup(_: &Servers) {
    let session = block_on(provider().open(
        &Ctx::detached(),
        &request(NetworkPolicy::allowlist(["127.0.0.2"])),
    ))
    .unwrap();
    let params = session.info().close_params;
    let dir = PathBuf::from(params["egress_dir"].as_str().unwrap());
    assert!(dir.join("proxy/s").exists());
    // Dropped without close (a crash): the provider's close removes container and directory.
    drop(session);
    block_on(provider().close(&Ctx::detached(), &params)).unwrap();
    assert!(!dir.exists());
    let session = open(&request(NetworkPolicy::no_network()));
    let dir = PathBuf::from(session.info().close_params["egress_dir"].as_str().unwrap());
    assert!(dir.exists());
    block_on(session.close()).unwrap();
    assert!(!dir.exists());
    let err =
        block_on(provider().close(&Ctx::detached(), &serde_json::json!({"egress_dir": "/etc"})))
            .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidInput);
}

/// The forwarder and the proxy change nothing the contract kit checks.
fn contract(_: &Servers) {
    let options = ContractOptions::default()
        .processes(ProcessProbe::Session)
        .slack(Duration::from_secs(8));
    let req = request(NetworkPolicy::allowlist(["127.0.0.2"]));
    let report = block_on(run_session_contract(&provider(), &req, &options)).unwrap();
    assert_eq!(report.passed(), CHECKS.len());
}

fn figures(servers: &Servers) {
    let time_open = |policy: NetworkPolicy| {
        let mut best = Duration::MAX;
        for _ in 0..3 {
            let started = Instant::now();
            let session = open(&request(policy.clone()));
            best = best.min(started.elapsed());
            drop(session);
        }
        best
    };
    let public = time_open(NetworkPolicy::public());
    let no_network = time_open(NetworkPolicy::no_network());
    let allowlist = time_open(NetworkPolicy::allowlist(["127.0.0.2"]));
    println!(
        "  open (best of 3): public {public:?}, no-network {no_network:?}, allowlist {allowlist:?}"
    );
    let time_fetch = |session: &SessionRef, proxied: bool| {
        let mut best = Duration::MAX;
        for _ in 0..5 {
            let started = Instant::now();
            let got = if proxied {
                fetch(session, "127.0.0.2", servers.port)
            } else {
                fetch_direct(session, "127.0.0.2", servers.port)
            };
            best = best.min(started.elapsed());
            assert!(reached(&got, "two"), "{got}");
        }
        best
    };
    let direct = time_fetch(&open(&request(NetworkPolicy::public())), false);
    let proxied = time_fetch(
        &open(&request(NetworkPolicy::allowlist(["127.0.0.2"]))),
        true,
    );
    println!("  fetch exec (best of 5): direct from a public container {direct:?}, through the proxy {proxied:?}");
}
