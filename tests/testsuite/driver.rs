//! The load driver end to end: exact request counts against `raw` and a counting server,
//! starvation, rate mode with coordinated-omission correction, a server killed mid-run, a server
//! that mishandles pipelining, Ctrl-C, and bad flags. Every run is a few seconds at most.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_framebench");
const HELLO: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 13\r\n\r\nHello, World!";

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

/// `framebench load --target TARGET` with `flags`, split at whitespace.
fn load(target: &str, flags: &str) -> Output {
    let mut args = vec!["load", "--target", target];
    args.extend(flags.split_whitespace());
    run(&args)
}

/// The driver's report inside the results file `--json` wrote.
fn report(path: &std::path::Path) -> serde_json::Value {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(v["schema"], framebench::results::SCHEMA);
    v["detail"].clone()
}

fn json_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "framebench-driver-{}-{name}.json",
        std::process::id()
    ))
}

/// A tiny HTTP/1.1 server on 127.0.0.1:0 with `pool` threads, each serving one connection at a
/// time until it closes (the model of iron's and nickel's pools). `answer(n)` is called for the
/// n-th request overall and returns the bytes to send; it may sleep. With `one_per_read`, only
/// the first request of each read is answered (a server that mishandles pipelining).
fn tiny_server(
    pool: usize,
    one_per_read: bool,
    answer: impl Fn(u64) -> Vec<u8> + Send + Sync + 'static,
) -> (SocketAddr, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(AtomicU64::new(0));
    let listener = Arc::new(listener);
    let answer = Arc::new(answer);
    for _ in 0..pool {
        let listener = Arc::clone(&listener);
        let count = Arc::clone(&count);
        let answer = Arc::clone(&answer);
        std::thread::spawn(move || {
            while let Ok((mut s, _)) = listener.accept() {
                let _ = s.set_nodelay(true);
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let n = match s.read(&mut chunk) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    buf.extend_from_slice(&chunk[..n]);
                    let mut out = Vec::new();
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        buf.drain(..end + 4);
                        let k = count.fetch_add(1, Ordering::SeqCst);
                        out.extend_from_slice(&answer(k));
                        if one_per_read {
                            buf.clear();
                            break;
                        }
                    }
                    if s.write_all(&out).is_err() {
                        break;
                    }
                }
            }
        });
    }
    (addr, count)
}

#[test]
fn exact_request_count_against_raw() {
    let json = json_path("raw");
    let out = load("raw", &format!("-c 4 --requests 500 -d 10s --server-cpus 0 --client-cpus 0 --client-threads 2 --quiet --json {}", json.to_str().unwrap()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = report(&json);
    let cell = &r["cells"][0];
    assert_eq!(cell["status"]["kind"], "ok", "{cell}");
    assert_eq!(cell["requests"], 500);
    assert_eq!(cell["socket_errors"], 0);
    assert_eq!(cell["timeouts"], 0);
    assert_eq!(cell["target"], "raw");
    assert!(cell["server_peak_rss"].as_u64().unwrap() > 0);
    assert!(
        cell["sampled"].as_u64().unwrap() >= 4,
        "first response of each connection checked"
    );
    // The environment travels with the result.
    assert!(r["environment"]["rustc"]
        .as_str()
        .unwrap()
        .starts_with("rustc"));
    assert_eq!(r["params"]["pinning"]["client_threads"], 2);
    assert_eq!(r["params"]["pinning"]["server_cpus"][0], 0);
    assert_eq!(r["params"]["pinning"]["client_cpus"][0], 0);
    let _ = std::fs::remove_file(json);
}

#[test]
fn exact_count_seen_by_the_server_with_pipelining() {
    let (addr, count) = tiny_server(4, false, |_| HELLO.to_vec());
    let json = json_path("count");
    let url = format!("http://{addr}");
    let out = load(
        &url,
        &format!(
            "-c 3 --pipeline 4 --requests 301 --quiet --json {}",
            json.to_str().unwrap()
        ),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(report(&json)["cells"][0]["requests"], 301);
    // 301 under load plus the 4 of the pipelined oracle check.
    assert_eq!(count.load(Ordering::SeqCst), 305);
    let _ = std::fs::remove_file(json);
}

/// One connection cannot keep a server busy: the driver must say the rate is not the server's,
/// and still split the server's CPU time per request into user and system time.
#[cfg(feature = "hyper")]
#[test]
fn an_idle_server_is_marked_unsaturated() {
    let _measuring = crate::common::measuring();
    let json = json_path("unsat");
    let out = load(
        "hyper",
        &format!(
            "--threads 1 -c 1 -d 1s --warmup 200ms --quiet --json {}",
            json.to_str().unwrap()
        ),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let cell = &report(&json)["cells"][0];
    assert_eq!(cell["status"]["kind"], "ok", "{cell}");
    assert_eq!(cell["server_cores"], 1, "{cell}");
    assert!(cell["server_cpu_pct"].as_f64().unwrap() < 90.0, "{cell}");
    assert_eq!(cell["bound"], "unsaturated", "{cell}");
    let user = cell["server_user_us_per_req"].as_f64().unwrap();
    let sys = cell["server_sys_us_per_req"].as_f64().unwrap();
    assert!(user >= 0.0 && sys > 0.0, "{cell}");
    assert!(
        text.contains("unsat"),
        "the terminal table marks it: {text}"
    );
    let _ = std::fs::remove_file(json);
}

#[test]
fn starved_connections_are_counted() {
    // Two threads, six keep-alive connections: four wait in the backlog for the whole run.
    let (addr, _) = tiny_server(2, false, |_| HELLO.to_vec());
    let json = json_path("starve");
    let url = format!("http://{addr}");
    let out = load(
        &url,
        &format!(
            "-c 6 -d 1500ms --warmup 200ms --timeout 500ms --quiet --json {}",
            json.to_str().unwrap()
        ),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let cell = &report(&json)["cells"][0];
    assert_eq!(cell["per_connection"]["starved"], 4, "{text}");
    assert_eq!(cell["per_connection"]["zero"], 4, "{text}");
    assert!(cell["timeouts"].as_u64().unwrap() >= 4, "{text}");
    assert!(cell["requests"].as_u64().unwrap() > 100, "{text}");
    assert!(
        text.contains("4/6"),
        "terminal shows starved/connections: {text}"
    );
    // A URL target has no server to read /proc from.
    assert!(cell["server_user_us_per_req"].is_null(), "{cell}");
    assert!(cell["server_cores"].is_null(), "{cell}");
    assert!(
        ["unknown", "client"].contains(&cell["bound"].as_str().unwrap()),
        "{cell}"
    );
    let _ = std::fs::remove_file(json);
}

#[cfg(feature = "iron")]
#[test]
fn iron_starves_connections_beyond_its_pool() {
    let json = json_path("iron");
    let out = load(
        "iron",
        &format!(
            "--threads 2 -c 5 -d 1500ms --warmup 200ms --timeout 500ms --quiet --json {}",
            json.to_str().unwrap()
        ),
    );
    let cell = &report(&json)["cells"][0];
    let starved = cell["per_connection"]["starved"].as_u64().unwrap();
    assert!(starved >= 3, "{}", String::from_utf8_lossy(&out.stdout));
    let _ = std::fs::remove_file(json);
}

/// A server that stalls 300 ms once, at its 100th request.
fn stalling_server() -> SocketAddr {
    tiny_server(2, false, |n| {
        if n == 100 {
            std::thread::sleep(Duration::from_millis(300));
        }
        HELLO.to_vec()
    })
    .0
}

#[test]
fn rate_mode_holds_the_rate_and_charges_stalls_to_the_server() {
    let _measuring = crate::common::measuring();
    // Open loop: ~60 requests were due during the stall; each is charged from its intended
    // send time, so the stall shows at p90 and above.
    let json = json_path("rate");
    let url = format!("http://{}", stalling_server());
    let out = load(
        &url,
        &format!(
            "-c 1 --rate 200 -d 1500ms --warmup 0s --quiet --json {}",
            json.to_str().unwrap()
        ),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let cell = report(&json)["cells"][0].clone();
    let n = cell["requests"].as_u64().unwrap();
    assert!((240..=310).contains(&n), "about 200/s for 1.5 s, got {n}");
    let p90 = cell["latency"]["p90_us"].as_f64().unwrap();
    assert!(p90 > 50_000.0, "stall not charged: p90 {p90} µs");

    // Closed loop on the same kind of server: the stall is one slow request among thousands.
    let url = format!("http://{}", stalling_server());
    let out = load(
        &url,
        &format!(
            "-c 1 -d 1500ms --warmup 0s --quiet --json {}",
            json.to_str().unwrap()
        ),
    );
    assert!(out.status.success());
    let cell = report(&json)["cells"][0].clone();
    assert!(cell["requests"].as_u64().unwrap() > 1000, "{cell}");
    assert!(
        cell["latency"]["max_us"].as_f64().unwrap() >= 290_000.0,
        "{cell}"
    );
    assert!(
        cell["latency"]["p90_us"].as_f64().unwrap() < 50_000.0,
        "{cell}"
    );
    let _ = std::fs::remove_file(json);
}

#[test]
fn wrong_answers_and_broken_pipelining_fail_the_cell() {
    let (addr, _) = tiny_server(2, false, |_| {
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 13\r\n\r\nHello, Wrold!"
            .to_vec()
    });
    let out = load(&format!("http://{addr}"), "-d 1s --quiet");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("FAIL") && text.contains("body differs"),
        "{text}"
    );

    let (addr, _) = tiny_server(2, true, |_| HELLO.to_vec());
    let url = format!("http://{addr}");
    let out = load(&url, "--pipeline 8 -d 1s --timeout 500ms --quiet");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("FAIL"), "{text}");
    // The same server is fine without pipelining.
    let out = run(&[
        "load", "--target", &url, "-d", "300ms", "--warmup", "0s", "--quiet",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Pids of the children of `pid`'s main thread.
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// The `framebench serve` child of `pid`. Other children come and go first: with
/// `FRAMEBENCH_REQUIRE` set, `load` asks each optional tool for its version.
fn wait_for_child(pid: u32) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(20);
    let is_server = |c: &u32| {
        std::fs::read(format!("/proc/{c}/cmdline"))
            .is_ok_and(|cmd| cmd.split(|&b| b == 0).any(|arg| arg == b"serve"))
    };
    loop {
        if let Some(c) = children(pid).into_iter().find(is_server) {
            return c;
        }
        assert!(Instant::now() < deadline, "no child server appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

#[test]
fn server_killed_mid_run_is_reported_as_crashed() {
    let started = Instant::now();
    let child = Command::new(BIN)
        .args([
            "load", "--target", "raw", "-c", "4", "-d", "8s", "--warmup", "0s", "--quiet",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let server = wait_for_child(child.id());
    std::thread::sleep(Duration::from_millis(800));
    signal(server, "-KILL");
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("CRASH") && text.contains("exited mid-run"),
        "{text}"
    );
    assert!(text.contains("signal: 9"), "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(7),
        "the run should stop at the crash"
    );
}

#[test]
fn ctrl_c_stops_the_run_and_the_server() {
    let child = Command::new(BIN)
        .args(["load", "--target", "raw", "-c", "2", "-d", "30s", "--quiet"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let server = wait_for_child(pid);
    std::thread::sleep(Duration::from_millis(500));
    let t = Instant::now();
    signal(pid, "-INT");
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(t.elapsed() < Duration::from_secs(5));
    assert!(
        !std::path::Path::new(&format!("/proc/{server}")).exists(),
        "child server {server} still running"
    );
}

/// Asserts one stderr line, no panic, exit 2.
fn assert_usage_error(args: &[&str], needle: &str) {
    let out = run(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    assert!(
        stderr.contains(needle),
        "{args:?}: {stderr:?} lacks {needle:?}"
    );
    assert!(!stderr.contains("panicked"));
}

#[test]
fn bad_flags_exit_2() {
    assert_usage_error(&["load", "--target", "http://10.1.2.3:80"], "loopback");
    assert_usage_error(&["load", "--target", "http://example.com:80"], "bad target");
    assert_usage_error(
        &["load", "--target", "nosuch"],
        "unknown framework 'nosuch'",
    );
    assert_usage_error(&["load", "--target", "null"], "no server");
    assert_usage_error(
        &["load", "--target", "raw", "--scenario", "nosuch"],
        "unknown scenario",
    );
    assert_usage_error(&["load", "--target", "raw", "-c", "0"], "0");
    assert_usage_error(&["load", "--target", "raw", "-c", "5,x"], "x");
    assert_usage_error(&["load", "--target", "raw", "-d", "ten"], "ten");
    assert_usage_error(&["load", "--target", "raw", "--rate", "0"], "rate");
    assert_usage_error(
        &["load", "--target", "raw", "--pipeline", "0"],
        "--pipeline",
    );
    assert_usage_error(
        &["load", "--target", "raw", "--server-cpus", "3-1"],
        "CPU list",
    );
    assert_usage_error(
        &["load", "--target", "raw", "--client-cpus", "999"],
        "not available",
    );
    assert_usage_error(&["load"], "required arguments");
    assert_usage_error(
        &["compare", "--frameworks", "raw,nosuch"],
        "unknown framework 'nosuch'",
    );
}

#[test]
fn outputs_markdown_and_plots() {
    let dir = std::env::temp_dir().join(format!("framebench-driver-out-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let md = dir.join("r.md");
    let svg = dir.join("r.svg");
    let png = dir.join("r.png");
    for plot in [&svg, &png] {
        let out = run(&[
            "compare",
            "--frameworks",
            "raw",
            "--scenarios",
            "hello,not_found",
            "-c",
            "1,2",
            "-d",
            "200ms",
            "--warmup",
            "0s",
            "--quiet",
            "--markdown",
            md.to_str().unwrap(),
            "--plot",
            plot.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.contains("Environment: `environment: rustc"), "{text}");
    assert!(
        text.contains("#### `not_found`: requests per second"),
        "{text}"
    );
    assert!(text.contains("| raw | log=off,io=memory |"), "{text}");
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
    assert_eq!(&std::fs::read(&png).unwrap()[1..4], b"PNG");
    let out = load("raw", "-d 100ms --quiet --plot /tmp/x.gif");
    assert_eq!(out.status.code(), Some(1));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_full_backlog_neither_blocks_nor_outlasts_the_bound() {
    // 300 connections to a 2-thread server: most connects never complete (the backlog is full).
    let (addr, _) = tiny_server(2, false, |_| HELLO.to_vec());
    let json = json_path("backlog");
    let url = format!("http://{addr}");
    let t = Instant::now();
    let out = load(
        &url,
        &format!(
            "-c 300 -d 1s --warmup 0s --timeout 500ms --quiet --json {}",
            json.to_str().unwrap()
        ),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        t.elapsed() < Duration::from_secs(6),
        "took {:?}: {text}",
        t.elapsed()
    );
    let cell = &report(&json)["cells"][0];
    assert_eq!(cell["per_connection"]["starved"], 298, "{text}");
    let _ = std::fs::remove_file(json);
}

/// Churn: `--requests-per-connection 1` opens a connection per request against raw, which
/// closes after `Connection: close`, and counts the connects and their time apart from the
/// latency; a server that keeps the connection open after answering it (this tiny server
/// ignores the header) fails the cell with that reason.
#[test]
fn churn_counts_connects_and_catches_a_server_that_ignores_close() {
    let json = json_path("churn");
    let out = load(
        "raw",
        &format!(
            "--requests-per-connection 1 -c 4 -d 1s --warmup 200ms --quiet --json {}",
            json.display()
        ),
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let cell = &report(&json)["cells"][0];
    let requests = cell["requests"].as_u64().unwrap();
    let connects = cell["connects"].as_u64().unwrap();
    assert!(requests > 100, "{cell}");
    // One connection per request; the ones still open when the window ends are not answered.
    assert!(
        connects >= requests && connects <= requests + 8,
        "{connects} connects for {requests} requests: {cell}"
    );
    assert!(cell["connect_us_mean"].as_f64().unwrap() > 0.0, "{cell}");
    assert_eq!(cell["status"]["kind"], "ok", "{cell}");
    let _ = std::fs::remove_file(&json);

    let (addr, _) = tiny_server(4, false, |_| HELLO.to_vec());
    let out = load(
        &format!("http://{addr}"),
        "--requests-per-connection 1 -c 2 -d 1s --warmup 0s --quiet",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("open for 0.5 s each after answering `Connection: close`"),
        "the reason is given: {text}"
    );
    // With pipelining it is refused in one line.
    let out = load("raw", "--requests-per-connection 2 --pipeline 4 --quiet");
    assert_eq!(out.status.code(), Some(2));
}

/// `--rounds 3`: each cell runs three times, and reports its median round whole, with every
/// round's rate and their range as its interval; a round that fails is not hidden by the rounds
/// that pass; and rounds cannot be mixed with one aligned run of several processes.
#[test]
fn rounds_report_the_median_round_and_never_hide_a_failure() {
    let _measuring = crate::common::measuring();
    let json = json_path("rounds");
    let out = load(
        "raw",
        &format!(
            "-d 200ms --warmup 0s --rounds 3 --quiet --json {}",
            json.display()
        ),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("rounds: every cell ran 3 times"), "{text}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_file(&json).ok();
    let cell = &v["detail"]["cells"][0];
    let mut rates: Vec<f64> = cell["round_rps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_f64().unwrap())
        .collect();
    assert_eq!(rates.len(), 3, "{cell}");
    rates.sort_by(f64::total_cmp);
    let figure = &v["figures"][0];
    assert_eq!(figure["value"].as_f64(), Some(rates[1]), "{figure}");
    assert_eq!(cell["rps"].as_f64(), Some(rates[1]), "{cell}");
    assert_eq!(figure["lo"].as_f64(), Some(rates[0]), "{figure}");
    assert_eq!(figure["hi"].as_f64(), Some(rates[2]), "{figure}");
    assert_eq!(figure["rounds"].as_u64(), Some(3), "{figure}");

    // Right for the first round's requests (its precheck and 40), wrong from then on.
    let flaky = || {
        tiny_server(2, false, |n| {
            if n < 50 {
                HELLO.to_vec()
            } else {
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 13\r\n\r\nHello, Wrold!"
                    .to_vec()
            }
        })
        .0
    };
    let flags = "-c 2 --requests 40 --sample-every 1 -d 2s --quiet";
    // One round passes...
    let out = load(&format!("http://{}", flaky()), flags);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    // ... and the second round's failure is the cell reported.
    let out = load(
        &format!("http://{}", flaky()),
        &format!("{flags} --rounds 2"),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("FAIL"), "{text}");

    let out = load("raw", "--rounds 2 --shard 1/2 -c 2 -d 100ms");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--rounds"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}
