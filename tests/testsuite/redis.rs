//! The redis scenario against a real `redis-server` started by each test: every framework
//! answers `/get?key=foo` as the oracle says, in-process and over loopback; a missing key is
//! 404; and when Redis is killed mid-run, `/get` answers 502 or 503 within a bound while the
//! other routes keep working. Skipped with a message when `redis-server` is not installed
//! (`.ci/run` installs it).

use std::time::{Duration, Instant};

use framebench::check::{bind_local, in_process};
use framebench::fixtures::Fixtures;
use framebench::framework::{App, Config, Entry};
use framebench::frameworks::REGISTRY;
use framebench::oracle::{self, Observed, REDIS_SCENARIO};
use framebench::protocol::http1::raw_get;
use framebench::redis::{self as fbredis, RedisServer, MISSING_KEY};
use framebench::tools::Tool;

/// How long a request may take once Redis is gone: the clients' bounds (connect 0.5 s, command
/// 1 s, pool wait 1 s) plus slack for a loaded machine.
const GONE_BOUND: Duration = Duration::from_secs(4);

fn redis() -> Option<RedisServer> {
    match fbredis::available() {
        Ok(()) => Some(RedisServer::start().expect("redis-server starts")),
        Err(_) => {
            Tool::Redis.skip();
            None
        }
    }
}

/// The fixtures, with `server` as the apps' Redis (or none: `/get` answers 503).
fn config_with(server: Option<&RedisServer>) -> Config {
    let url = server.map(RedisServer::url);
    Config::new(Fixtures::load_default().unwrap(), url.as_deref())
}

fn runnable() -> impl Iterator<Item = &'static Entry> {
    // `available` says once why a framework is skipped (the Go peers without `go`).
    REGISTRY.iter().filter(|e| e.available().is_ok())
}

fn build(entry: &Entry, config: &Config) -> Box<dyn App> {
    entry
        .build(config)
        .unwrap_or_else(|e| panic!("{}: build: {e:#}", entry.name))
}

/// Every way of asking `entry`'s app for a path: in-process and over loopback.
fn each_mode(entry: &Entry, app: &dyn App, mut check: impl FnMut(&str, &dyn Fn(&str) -> Observed)) {
    if entry.in_process {
        check("in-process", &|p| {
            in_process(app, p).unwrap_or_else(|e| panic!("{} {p}: {e:#}", entry.name))
        });
    }
    if entry.loopback {
        let server = app.serve(bind_local().unwrap()).unwrap();
        let addr = server.addr();
        check("loopback", &|p| {
            raw_get(addr, p).unwrap_or_else(|e| panic!("{} {p}: {e:#}", entry.name))
        });
        server.shutdown().unwrap();
    }
}

#[test]
fn every_framework_reads_redis_and_404s_a_missing_key() {
    let Some(server) = redis() else { return };
    let config = config_with(Some(&server));
    let expected = oracle::scenario(REDIS_SCENARIO)
        .unwrap()
        .expected(&config.fixtures)
        .unwrap();
    let mut failures = Vec::new();
    for entry in runnable() {
        let app = build(entry, &config);
        each_mode(entry, &*app, |mode, get| {
            let got = get(expected.scenario.path);
            if let Err(e) = expected.check(&got) {
                failures.push(format!("{} {mode} foo: {e}", entry.name));
            }
            // The baselines answer the redis scenario from a canned value
            // (docs/methodology/fairness.md): only the oracle's own request is theirs to answer.
            if entry.baseline {
                return;
            }
            let got = get(&format!("/get?key={MISSING_KEY}"));
            if got.status != 404 {
                failures.push(format!("{} {mode} missing key: {}", entry.name, got.status));
            }
            let got = get("/get?key=greeting");
            if got.status != 200 || got.body != "Hello, Redis!" {
                failures.push(format!("{} {mode} greeting: {got:?}", entry.name));
            }
        });
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn without_a_redis_url_get_answers_503() {
    let config = config_with(None);
    let mut failures = Vec::new();
    for entry in runnable().filter(|e| !e.baseline) {
        let app = build(entry, &config);
        each_mode(entry, &*app, |mode, get| {
            let got = get("/get?key=foo");
            if got.status != 503 {
                failures.push(format!("{} {mode}: {}", entry.name, got.status));
            }
        });
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn when_redis_goes_away_get_answers_502_or_503_and_the_rest_keeps_working() {
    if fbredis::available().is_err() {
        Tool::Redis.skip();
        return;
    }
    let mut failures = Vec::new();
    for entry in runnable().filter(|e| !e.baseline) {
        // A Redis of its own: this test kills it.
        let mut server = RedisServer::start().unwrap();
        let config = config_with(Some(&server));
        let app = build(entry, &config);
        let loopback = entry
            .loopback
            .then(|| app.serve(bind_local().unwrap()).unwrap());
        let get = |mode: &str, p: &str| -> Observed {
            match (mode, &loopback) {
                ("loopback", Some(s)) => raw_get(s.addr(), p),
                _ => in_process(&*app, p),
            }
            .unwrap_or_else(|e| panic!("{} {mode} {p}: {e:#}", entry.name))
        };
        let modes: Vec<&str> = [
            ("in-process", entry.in_process),
            ("loopback", entry.loopback),
        ]
        .into_iter()
        .filter_map(|(m, on)| on.then_some(m))
        .collect();
        // Warm the pools: connections are open when Redis goes away.
        for &mode in &modes {
            let got = get(mode, "/get?key=foo");
            assert_eq!(got.status, 200, "{} {mode} before the kill", entry.name);
        }
        server.kill();
        for &mode in &modes {
            for attempt in 0..3 {
                let started = Instant::now();
                let got = get(mode, "/get?key=foo");
                let took = started.elapsed();
                if !matches!(got.status, 502 | 503) {
                    failures.push(format!(
                        "{} {mode} attempt {attempt}: {} after the kill",
                        entry.name, got.status
                    ));
                }
                if took > GONE_BOUND {
                    failures.push(format!(
                        "{} {mode} attempt {attempt}: took {took:?}",
                        entry.name
                    ));
                }
            }
            let hello = get(mode, "/");
            if hello.status != 200 || hello.body != "Hello, World!" {
                failures.push(format!(
                    "{} {mode}: / after the kill: {hello:?}",
                    entry.name
                ));
            }
        }
        if let Some(s) = loopback {
            if let Err(e) = s.shutdown() {
                failures.push(format!("{} shutdown: {e:#}", entry.name));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

fn framebench(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_framebench"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_bad_redis_url_is_a_one_line_usage_error() {
    for url in ["redis://10.0.0.1:6379", "http://127.0.0.1:6379", "nonsense"] {
        let out = framebench(&["check", "null", "--redis", url]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{url}: {err}");
        assert_eq!(err.lines().count(), 1, "{url}: {err}");
        assert!(
            err.starts_with(&format!(
                "error: invalid value '{url}' for '--redis <URL>': {url}"
            )),
            "{url}: {err}"
        );
    }
}

#[test]
fn check_uses_the_redis_it_is_given() {
    let Some(server) = redis() else { return };
    // A framework that asks Redis (not a baseline, not an optional tool's), whichever features
    // are built.
    let Some(fw) = REGISTRY
        .iter()
        .find(|e| e.in_process && e.tool.is_none() && !e.baseline)
    else {
        return;
    };
    let out = framebench(&["check", fw.name, "--redis", &server.url()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let header = text.lines().next().unwrap();
    let col = header.split_whitespace().position(|h| h == REDIS_SCENARIO);
    assert!(col.is_some(), "{header}");
    for line in text.lines().filter(|l| l.starts_with(fw.name)) {
        // framework, mode, variant, then one column per header entry after "variant".
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cells[col.unwrap()], "ok", "{line}");
    }
}
