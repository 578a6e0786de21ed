//! Loopback criterion benches: every framework's server as a child process
//! (`framebench serve <fw> --threads 1`) on 127.0.0.1:0, with the `raw` ceiling. One group per
//! scenario (`loopback/<scenario>`). The client keeps one keep-alive connection, sends requests
//! encoded once (a ring of distinct ones for a query or body scenario) and reads exactly the
//! response length learned from the checked warm-up responses,
//! with a read timeout. A second id per framework, `<fw>/reqwest`, uses reqwest's blocking
//! client to show what a typical client adds.
//!
//! With two or more cores, the server runs on the first and this process on the second.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput};

use framebench::bench::client::KeepAlive;
use framebench::bench::LOOPBACK_THREADS;
use framebench::child::ServerProcess;
use framebench::fixtures::Fixtures;
use framebench::framework::{Config, Entry};
use framebench::frameworks::REGISTRY;
use framebench::options::Options;
use framebench::oracle::{Instance, Scenario, SCENARIOS};
use framebench::pinning::{format_cpus, pin_current_thread, Pinning};

fn loopback(c: &mut Criterion) {
    if let Err(e) = framebench::tools::check_required() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
    let fixtures = Fixtures::load_default().expect("fixtures");
    // A real redis-server for the redis scenario (the served children inherit its URL); without
    // one that scenario is skipped with one line saying how to install it.
    let redis = framebench::redis::provide(None).expect("redis-server starts");
    let config = Config::new(Arc::clone(&fixtures), redis.url());
    let bin = Path::new(env!("CARGO_BIN_EXE_framebench"));
    let pinning = pin_this_client();
    let options = Options {
        threads: LOOPBACK_THREADS,
        ..Options::default()
    };
    let mut failed = Vec::new();
    // One server per framework, shared by every scenario: start them all first.
    let mut servers = Vec::new();
    // `available` builds the Go peers here, before any server starts, and says once why a
    // framework is skipped (the Go peers without `go`).
    for entry in REGISTRY
        .iter()
        .filter(|e| e.loopback && e.available().is_ok())
    {
        match ServerProcess::start(bin, entry.name, options, &pinning.server_cpus) {
            Ok(s) => servers.push((entry, s)),
            Err(e) => {
                eprintln!("FAIL loopback/{}: {e:#} (skipped)", entry.name);
                failed.push(entry.name.to_owned());
            }
        }
    }
    announce_settled(&servers);
    // Fairness: iron's and nickel's pools serve one connection per thread until it closes, so
    // each cell opens its own connection (or reqwest client) and closes it before the next.
    for scenario in SCENARIOS {
        // Says why once per run (the redis scenario without redis-server).
        if scenario.skip_reason(&config).is_some() {
            continue;
        }
        let mut group = c.benchmark_group(format!("loopback/{}", scenario.name));
        for (entry, server) in &servers {
            let name = &entry.name;
            // Not a failure: the framework cannot serve this scenario through its own API.
            if let Err(e) = framebench::cell::supported(entry, scenario, false) {
                eprintln!(
                    "{}",
                    e.note(format_args!("loopback/{}/{name}", scenario.name))
                );
                continue;
            }
            let addr = server.addr();
            match KeepAlive::connect(addr, scenario, &fixtures) {
                Ok(mut conn) => {
                    group.throughput(Throughput::Bytes(conn.body_len() as u64));
                    group.bench_function(BenchmarkId::new(*name, "raw-client"), |b| {
                        b.iter(|| conn.round_trip().expect("round trip"))
                    });
                }
                Err(e) => {
                    eprintln!("FAIL loopback/{}/{name}: {e:#} (skipped)", scenario.name);
                    failed.push(format!("{}/{name}", scenario.name));
                }
            }
            // reqwest chooses its own framing, so it has no chunked cell.
            if scenario.wire_only() {
                continue;
            }
            let client = framebench::protocol::http1::client().expect("reqwest client");
            let instances = scenario.instances(framebench::cell::RING);
            let mut next = instances.iter().cycle();
            match reqwest_ready(&client, addr, scenario, &instances, &fixtures) {
                Ok(len) => {
                    group.throughput(Throughput::Bytes(len as u64));
                    group.bench_function(BenchmarkId::new(*name, "reqwest"), |b| {
                        b.iter(|| {
                            let instance = next.next().expect("a ring");
                            framebench::protocol::http1::reqwest_send(&client, addr, instance)
                                .expect("reqwest")
                        })
                    });
                }
                Err(e) => {
                    eprintln!(
                        "FAIL loopback/{}/{name}/reqwest: {e:#} (skipped)",
                        scenario.name
                    );
                    failed.push(format!("{}/{name}/reqwest", scenario.name));
                }
            }
        }
        group.finish();
    }
    drop(servers);
    if !failed.is_empty() {
        eprintln!(
            "{} cell(s) failed and were skipped: {failed:?}",
            failed.len()
        );
    }
}

/// Waits (at most 30 s) until the servers just started are idle, so no server's startup work
/// lands in the first cells ([`framebench::child::settle`]); says how long it took.
fn announce_settled(servers: &[(&Entry, ServerProcess)]) {
    let all: Vec<&ServerProcess> = servers.iter().map(|(_, s)| s).collect();
    let settled = framebench::child::settle(&all, Duration::from_secs(30));
    let share = framebench::child::QUIET_SHARE * 100.0;
    if settled.quiet {
        eprintln!(
            "loopback: {} servers idle (under {share} % of a core) after {:.1} s",
            all.len(),
            settled.waited.as_secs_f64()
        );
    } else {
        eprintln!(
            "loopback: {} servers still above {share} % of a core after {:.0} s; measuring anyway",
            all.len(),
            settled.waited.as_secs_f64()
        );
    }
}

/// One core for the servers and one for this bench, which pins itself (its main thread, and
/// so every thread it starts) to the client's core now; says which.
fn pin_this_client() -> Pinning {
    let pinning = Pinning::one_core_each();
    if pinning.client_cpus.is_empty() {
        eprintln!("loopback: not pinned (needs 2 cores)");
    } else if pin_current_thread(&pinning.client_cpus) {
        eprintln!(
            "loopback: server pinned to core {}, client (this bench) to core {}",
            format_cpus(&pinning.server_cpus),
            format_cpus(&pinning.client_cpus)
        );
    } else {
        eprintln!("loopback: client not pinned (sched_setaffinity failed)");
    }
    pinning
}

/// Checks the reqwest answer to the first request against the oracle; returns the body length.
fn reqwest_ready(
    client: &reqwest::blocking::Client,
    addr: SocketAddr,
    scenario: &'static Scenario,
    instances: &[Instance],
    fixtures: &Fixtures,
) -> anyhow::Result<usize> {
    let observed = framebench::protocol::http1::reqwest_send(client, addr, &instances[0])?;
    framebench::cell::check(fixtures, scenario, &instances[0], &observed)?;
    Ok(observed.body.len())
}

fn main() {
    // Which build measured: `framebench report` names it (target/criterion/framebench-run-*.json).
    let run = framebench::bench::record_run("criterion", "loopback");
    // Budget: about 1.5 s per cell keeps the whole `cargo bench` within 15 minutes on 2 cores.
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(1000))
        .sample_size(20)
        // 20,000 bootstrap resamples instead of 100,000: the analysis of each cell stays short.
        .nresamples(20_000)
        .configure_from_args();
    loopback(&mut c);
    c.final_summary();
    run.finish();
}
