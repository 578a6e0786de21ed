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
//! The server port is fixed ([`PORT`]) because gungraun's setup functions take no arguments;
//! the benches run one after another, so one port suffices.

use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use gungraun::{
    binary_benchmark_group, main, Bench, BinaryBenchmark, BinaryBenchmarkConfig,
    BinaryBenchmarkGroup, Command,
};

use framebench::bench::client::KeepAlive;
use framebench::fixtures::Fixtures;
use framebench::frameworks::REGISTRY;
use framebench::oracle;
use framebench::tools::Tool;

/// Loopback port of the server under callgrind: below Linux's default ephemeral range
/// (32768–60999). It was 47913, inside it, and one run failed with "cannot bind: address in use":
/// while the server starts, the client's connect retries to a port nobody listens on can be
/// given that same port as their source port, and Linux then connects the socket to itself.
const PORT: u16 = 29_213;
/// Requests of the short run.
const N1: u64 = 20;
/// Requests of the long run.
const N2: u64 = 220;
/// Bound on the client's connect retries and on each read (valgrind is ~50× slower).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(60);

fn addr() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], PORT))
}

/// Sends `n` hello requests on one keep-alive connection; panics (failing the benchmark) if the
/// server does not answer them as the oracle says.
fn client(n: u64) {
    let fixtures = Fixtures::load_default().expect("fixtures");
    let scenario = oracle::scenario("hello").expect("hello");
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
    // The probe connection above carries no request: it is not counted. The two checked
    // warm-up requests of `connect` are.
    let mut conn = KeepAlive::connect_with_timeout(addr(), scenario, &fixtures, CLIENT_TIMEOUT)
        .expect("checked warm-up");
    for _ in 2..n {
        conn.round_trip().expect("round trip");
    }
}

fn client_n1() {
    client(N1);
}

fn client_n2() {
    client(N2);
}

fn frameworks() -> Vec<&'static str> {
    REGISTRY
        .iter()
        .filter(|e| e.loopback && e.counts_requests)
        .map(|e| e.name)
        .collect()
}

/// The server under callgrind, with the same frozen clock and fixed random seed as the
/// in-process counts when libfaketime is installed (`config` said once when it is not).
fn command(framework: &str, n: u64) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_framebench"));
    cmd.args(["serve", framework, "--threads", "1"])
        .args(["--addr", &addr().to_string()])
        .args(["--max-requests", &n.to_string()])
        // raw sleeps in epoll_wait at once rather than polling for 20 µs: under the frozen
        // clock its spin never ends, and the count would be its idle polling, not its work.
        .env("FRAMEBENCH_RAW_NO_SPIN", "1")
        .setup_parallel(true);
    if let Ok(faketime) = Tool::Faketime.path() {
        cmd.envs(framebench::bench::faketime_env(faketime));
    }
    cmd.build()
}

fn setup_group(group: &mut BinaryBenchmarkGroup) {
    let mut hello = BinaryBenchmark::new("hello");
    for fw in frameworks() {
        let id = fw.replace('-', "_");
        hello.bench(
            Bench::new(format!("{id}_n{N1}"))
                .command(command(fw, N1))
                .setup(client_n1),
        );
        hello.bench(
            Bench::new(format!("{id}_n{N2}"))
                .command(command(fw, N2))
                .setup(client_n2),
        );
    }
    group.binary_benchmark(hello);
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
