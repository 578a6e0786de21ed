//! The waiting scenario, `delay`: every framework that serves it answers over loopback after
//! its own timer has waited what the request asked (never sooner), answers 400 to a wait it
//! must not take, and, unless each of its threads holds one connection at a time (iron and
//! nickel on hyper 0.10's pool), holds many waiting requests at once on two threads. A server
//! that answers at once fails `load`'s check before it loads.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use framebench::check::bind_local;
use framebench::fixtures::Fixtures;
use framebench::framework::{Config, Entry};
use framebench::frameworks::REGISTRY;
use framebench::oracle::{loopback_scenario, Observed, BODY_SIZE};
use framebench::protocol::http1::raw_get;

/// `GET target` on a connection of its own, and how long its whole answer took.
fn timed_get(addr: SocketAddr, target: &str) -> (Observed, Duration) {
    let sent = Instant::now();
    let got = raw_get(addr, target).unwrap_or_else(|e| panic!("{target}: {e:#}"));
    (got, sent.elapsed())
}

/// Checks one framework's server at `addr`; the panic names the framework.
fn check_delays(entry: &Entry, addr: SocketAddr, fixtures: &Fixtures) {
    let name = entry.name;
    let delay = loopback_scenario("delay").unwrap();
    // The oracle's own request, checked as `check` and `load` check it.
    let instance = delay.instance(0, BODY_SIZE);
    let (got, took) = timed_get(addr, &instance.target);
    let expected = delay.expected(fixtures).unwrap();
    expected
        .check_instance(&instance, &got)
        .unwrap_or_else(|e| panic!("{name}: {e:#}"));
    instance
        .check_not_early(took)
        .unwrap_or_else(|e| panic!("{name}: {e:#}"));
    // Another wait, no wait named (the default, 10 ms) and none at all: each answered with its
    // milliseconds, after them.
    for (target, ms) in [("/delay?ms=25", 25), ("/delay", 10), ("/delay?ms=0", 0)] {
        let (got, took) = timed_get(addr, target);
        assert_eq!(
            (got.status, &got.body[..]),
            (200, ms.to_string().as_bytes()),
            "{name} {target}"
        );
        assert!(
            took >= Duration::from_millis(ms),
            "{name} {target}: answered after {took:?}"
        );
    }
    // A wait past the bound is 400 at once; an `ms` that is not a u64 is the framework's own
    // refusal.
    let (got, took) = timed_get(addr, "/delay?ms=10001");
    assert_eq!(got.status, 400, "{name} ms=10001");
    assert!(took < Duration::from_secs(5), "{name} ms=10001 waited");
    let (got, _) = timed_get(addr, "/delay?ms=ten");
    assert!(
        (400..500).contains(&got.status),
        "{name} ms=ten: {}",
        got.status
    );
}

/// Sends `n` requests that each wait `ms` at once, one connection each, and returns the time
/// until the last answer.
fn waits_at_once(addr: SocketAddr, n: usize, ms: u64) -> Duration {
    let target = format!("/delay?ms={ms}");
    let started = Instant::now();
    std::thread::scope(|s| {
        let answers: Vec<_> = (0..n).map(|_| s.spawn(|| raw_get(addr, &target))).collect();
        for answer in answers {
            let got = answer.join().unwrap().unwrap();
            assert_eq!(got.status, 200);
        }
    });
    started.elapsed()
}

#[test]
fn every_framework_that_serves_delay_waits_on_its_own_timer() {
    let fixtures = Fixtures::load_default().unwrap();
    let config = Config::new(fixtures.clone(), None);
    let mut checked = Vec::new();
    for entry in REGISTRY {
        // The floors have no server; raw and the floors say why not in `CANNOT`; the Go peers
        // without `go` are skipped with a message.
        if !entry.loopback || entry.cannot("delay").is_some() || entry.available().is_err() {
            continue;
        }
        let app = entry.build(&config).unwrap();
        let server = app.serve(bind_local().unwrap()).unwrap();
        check_delays(entry, server.addr(), &fixtures);
        if !entry.thread_per_connection {
            // 16 waits of 200 ms on two threads: a handler that blocked its thread would take
            // 1.6 s at least; the framework's timer holds them all at once.
            let took = waits_at_once(server.addr(), 16, 200);
            assert!(
                took < Duration::from_millis(1200),
                "{}: 16 waits of 200 ms took {took:?}: the wait blocks its thread",
                entry.name
            );
        }
        server.shutdown().unwrap();
        checked.push(entry.name);
    }
    // Every server but raw's serves it.
    assert!(!checked.is_empty());
    for entry in REGISTRY.iter().filter(|e| e.loopback && !e.baseline) {
        assert!(
            entry.cannot("delay").is_none(),
            "{} cannot serve delay",
            entry.name
        );
    }
}

/// A server on 127.0.0.1:0 answering every request it reads at once with `10`, the body of a
/// 10 ms wait.
fn impatient_server() -> SocketAddr {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while matches!(s.read(&mut buf), Ok(1..)) {
                    let answer = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 2\r\n\r\n10";
                    if s.write_all(answer).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

#[test]
fn a_server_that_does_not_wait_fails_the_check_before_load() {
    let (ok, text) = crate::common::load_url(impatient_server(), "delay");
    assert!(!ok, "{text}");
    // The check before load times one answer, which a busy machine can hold past the wait; the
    // cell's own latencies then fail it.
    assert!(
        (text.contains("oracle check before load") && text.contains("before the 10 ms"))
            || text.contains("sooner than the 10 ms"),
        "{text}"
    );
}
