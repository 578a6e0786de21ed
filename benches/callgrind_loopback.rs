//! Instructions per request over loopback (gungraun binary benchmarks, callgrind): the whole
//! `framebench serve <fw> --threads 1 --max-requests N` process, every thread, the full HTTP
//! stack of each framework.
//!
//! The benchmark's setup runs in parallel with the server: it connects (retrying while the
//! server starts under valgrind), sends `N` hello requests on one keep-alive connection, checks
//! the first two answers against the oracle and reads exactly `N` responses; the server exits
//! by itself after `N`. Each framework runs twice, with `N1` and `N2` requests: the report's
//! per-request figure is `(count(N2) − count(N1)) / (N2 − N1)`, which cancels startup and
//! shutdown.
//!
//! Over TLS (`--tls`) two more cells per framework that serves it:
//! - `hello__tls`: the same keep-alive hello requests over one TLS connection, so that the
//!   difference removes the handshake with startup: instructions per request once the
//!   connection is up;
//! - `hello__tls_connect`: `K` connections of one request each, a full handshake every time
//!   (the client resumes nothing): instructions per new TLS connection, handshake, request and
//!   close together. Less `hello__tls`, it is what a handshake costs.
//!
//! Under `--protocol ws`, `echo__ws`: N echoed messages on one upgraded connection (the server
//! counts its echoes, not its responses: `serve --protocol ws --max-requests N`), so that the
//! upgrade cancels with startup: instructions per echoed message, for every framework whose
//! echo counts (`COUNTS_MESSAGES`).
//!
//! Both sides derive the certificate from one fixed seed ([`TLS_SEED`],
//! `framebench::transport::SEED_ENV`): an Ed25519 key, which signs deterministically, so that
//! the counts repeat. The loads' certificate is ECDSA P-256; docs/methodology/tls.md says so.
//!
//! The server port is fixed ([`PORT`]) because gungraun's setup functions take no arguments;
//! the benches run one after another, so one port suffices.

use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use gungraun::{
    binary_benchmark_group, main, Bench, BinaryBenchmark, BinaryBenchmarkConfig,
    BinaryBenchmarkGroup, Command,
};

use framebench::bench::client::{echo_messages, one_request, KeepAlive};
use framebench::fixtures::Fixtures;
use framebench::frameworks::REGISTRY;
use framebench::options::{Options, Protocol, Transport};
use framebench::oracle;
use framebench::tools::Tool;
use framebench::transport::Peer;

/// Loopback port of the server under callgrind: below Linux's default ephemeral range
/// (32768–60999). It was 47913, inside it, and one run failed with "cannot bind: address in use":
/// while the server starts, the client's connect retries to a port nobody listens on can be
/// given that same port as their source port, and Linux then connects the socket to itself.
const PORT: u16 = 29_213;
/// Requests of the short run.
const N1: u64 = 20;
/// Requests of the long run.
const N2: u64 = 220;
/// Connections of the short TLS connect run.
const K1: u64 = 4;
/// Connections of the long TLS connect run.
const K2: u64 = 12;
/// The seed both sides derive the TLS certificate from.
const TLS_SEED: u64 = 0x6672_616d_6562_6e63;
/// Bound on the client's connect retries and on each read (valgrind is ~50× slower).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(60);

fn addr() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], PORT))
}

/// Waits until the server under valgrind listens on [`PORT`]; panics after [`CLIENT_TIMEOUT`].
fn wait_for_server() {
    let start = Instant::now();
    // Wait until the server under valgrind listens.
    loop {
        match TcpStream::connect_timeout(&addr(), Duration::from_secs(1)) {
            // A socket connected to itself (see `PORT`) is not the server.
            Ok(probe)
                if probe.local_addr().ok() == Some(addr()) && start.elapsed() < CLIENT_TIMEOUT =>
            {
                drop(probe);
                std::thread::sleep(Duration::from_millis(50));
            }
            Ok(probe) => {
                drop(probe);
                break;
            }
            Err(_) if start.elapsed() < CLIENT_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("server on {} never listened: {e}", addr()),
        }
    }
}

/// The server's address on `transport`; over TLS, this process trusts the seeded certificate.
fn peer(transport: Transport) -> Peer {
    if transport == Transport::Tls {
        framebench::transport::use_seed(TLS_SEED).expect("the seeded TLS certificate");
    }
    Peer::new(addr(), transport)
}

/// Sends `n` hello requests on one keep-alive connection; panics (failing the benchmark) if the
/// server does not answer them as the oracle says.
fn client(transport: Transport, n: u64) {
    let fixtures = Fixtures::load_default().expect("fixtures");
    let scenario = oracle::scenario("hello").expect("hello");
    let peer = peer(transport);
    // The probe connection carries no request: it is not counted. The two checked warm-up
    // requests of `connect_to` are.
    wait_for_server();
    let mut conn =
        KeepAlive::connect_to(peer, scenario, &fixtures, CLIENT_TIMEOUT).expect("checked warm-up");
    for _ in 2..n {
        conn.round_trip().expect("round trip");
    }
}

/// Sends one hello request on each of `k` new TLS connections, each a full handshake, each
/// answer checked against the oracle.
fn connecting_client(k: u64) {
    let fixtures = Fixtures::load_default().expect("fixtures");
    let scenario = oracle::scenario("hello").expect("hello");
    let peer = peer(Transport::Tls);
    wait_for_server();
    for i in 0..k {
        one_request(peer, scenario, &fixtures, CLIENT_TIMEOUT)
            .unwrap_or_else(|e| panic!("TLS connection {i}: {e:#}"));
    }
}

/// Sends `n` WebSocket messages on one upgraded connection, each echo checked.
fn ws_client(n: u64) {
    let fixtures = Fixtures::load_default().expect("fixtures");
    let scenario = oracle::loopback_scenario("echo").expect("echo");
    wait_for_server();
    echo_messages(peer(Transport::Tcp), scenario, &fixtures, n, CLIENT_TIMEOUT)
        .unwrap_or_else(|e| panic!("WebSocket echo: {e:#}"));
}

fn ws_n1() {
    ws_client(N1);
}

fn ws_n2() {
    ws_client(N2);
}

fn client_n1() {
    client(Transport::Tcp, N1);
}

fn client_n2() {
    client(Transport::Tcp, N2);
}

fn tls_n1() {
    client(Transport::Tls, N1);
}

fn tls_n2() {
    client(Transport::Tls, N2);
}

fn tls_k1() {
    connecting_client(K1);
}

fn tls_k2() {
    connecting_client(K2);
}

/// The frameworks counted under `protocol` over `transport`: those that serve it and whose
/// server counts what the cell counts (messages under `ws`, else requests).
fn frameworks(protocol: Protocol, transport: Transport) -> Vec<&'static str> {
    let options = Options {
        protocol,
        transport,
        ..Options::default()
    };
    REGISTRY
        .iter()
        .filter(|e| {
            let counts = if protocol == Protocol::Ws {
                e.counts_messages
            } else {
                e.counts_requests
            };
            e.loopback && counts && e.lacks(&options).is_none()
        })
        .map(|e| e.name)
        .collect()
}

/// The server under callgrind, with the same frozen clock and fixed random seed as the
/// in-process counts when libfaketime is installed (`config` said once when it is not).
fn command(framework: &str, protocol: Protocol, transport: Transport, n: u64) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_framebench"));
    cmd.args(["serve", framework, "--threads", "1"])
        .args(["--addr", &addr().to_string()])
        .args(["--max-requests", &n.to_string()])
        // raw sleeps in epoll_wait at once rather than polling for 20 µs: under the frozen
        // clock its spin never ends, and the count would be its idle polling, not its work.
        .env("FRAMEBENCH_RAW_NO_SPIN", "1")
        .setup_parallel(true);
    if protocol == Protocol::Ws {
        cmd.args(["--protocol", "ws"]);
    }
    if transport == Transport::Tls {
        cmd.arg("--tls")
            .env(framebench::transport::SEED_ENV, TLS_SEED.to_string());
    }
    if let Ok(faketime) = Tool::Faketime.path() {
        cmd.envs(framebench::bench::faketime_env(faketime));
    }
    cmd.build()
}

/// One cell: `framework`'s server under callgrind for `n` requests (messages under `ws`),
/// loaded by `client`.
fn bench(
    framework: &str,
    (protocol, transport): (Protocol, Transport),
    n: u64,
    client: fn(),
) -> Bench {
    let id = framework.replace('-', "_");
    Bench::new(format!("{id}_n{n}"))
        .command(command(framework, protocol, transport, n))
        .setup(client)
        .clone()
}

fn setup_group(group: &mut BinaryBenchmarkGroup) {
    let http = (Protocol::default(), Transport::Tcp);
    let tls = (Protocol::default(), Transport::Tls);
    let ws = (Protocol::Ws, Transport::Tcp);
    // A function `a__b` reads as the column `a/b` in `framebench report`.
    let mut hello = BinaryBenchmark::new("hello");
    for fw in frameworks(http.0, http.1) {
        hello.bench(bench(fw, http, N1, client_n1));
        hello.bench(bench(fw, http, N2, client_n2));
    }
    group.binary_benchmark(hello);
    let mut over_tls = BinaryBenchmark::new("hello__tls");
    let mut connect = BinaryBenchmark::new("hello__tls_connect");
    for fw in frameworks(tls.0, tls.1) {
        over_tls.bench(bench(fw, tls, N1, tls_n1));
        over_tls.bench(bench(fw, tls, N2, tls_n2));
        connect.bench(bench(fw, tls, K1, tls_k1));
        connect.bench(bench(fw, tls, K2, tls_k2));
    }
    group.binary_benchmark(over_tls);
    group.binary_benchmark(connect);
    let mut echo = BinaryBenchmark::new("echo__ws");
    for fw in frameworks(ws.0, ws.1) {
        echo.bench(bench(fw, ws, N1, ws_n1));
        echo.bench(bench(fw, ws, N2, ws_n2));
    }
    group.binary_benchmark(echo);
}

binary_benchmark_group!(
    name = loopback,
    config = BinaryBenchmarkConfig::default().setup_parallel(true),
    benchmarks = |group: &mut BinaryBenchmarkGroup| setup_group(group)
);

/// gungraun evaluates this first, in `cargo bench`'s own process: without valgrind or the
/// matching `gungraun-runner` the target says so in one line and ends with 0.
fn config() -> BinaryBenchmarkConfig {
    framebench::bench::callgrind_preflight("callgrind_loopback");
    // Which build measured, for `framebench report` (its end: the newest summary).
    framebench::bench::record_run("gungraun", "callgrind_loopback");
    if Tool::Faketime.path().is_err() {
        Tool::Faketime.skip();
    }
    BinaryBenchmarkConfig::default()
}

main!(config = config(); binary_benchmark_groups = loopback);
