//! `--protocol h2c` end to end: the oracle over HTTP/2 for the reference and hyper, a planted h2c
//! server whose body is wrong failing both the check before load and the sampled answers, an
//! exact request count, the open loop's rate and its latency from the intended send time, a
//! framework without h2c getting `–` cells with its reason, and the flags that belong to one
//! protocol refused under the other. Every run is a second or two.

use std::net::SocketAddr;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_framebench");

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

/// `framebench load --target TARGET --protocol h2c` with `flags`, split at whitespace.
fn h2c_load(target: &str, flags: &str) -> Output {
    let mut args = vec!["load", "--target", target, "--protocol", "h2c", "--quiet"];
    args.extend(flags.split_whitespace());
    run(&args)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// An h2c server on 127.0.0.1 that answers every stream 200 with `body`, in the oracle's content
/// type: a planted server, not a framework.
fn h2c_server(body: &'static [u8]) -> SocketAddr {
    planted(body, usize::MAX, std::time::Duration::ZERO)
}

/// [`h2c_server`] that answers each stream `delay` after it arrives, and only the first
/// `answered` streams of each connection: every later one is held open, unanswered.
fn planted(body: &'static [u8], answered: usize, delay: std::time::Duration) -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let Ok(mut conn) = h2::server::handshake(stream).await else {
                        return;
                    };
                    let (mut seen, mut held) = (0, Vec::new());
                    while let Some(Ok((_req, mut respond))) = conn.accept().await {
                        seen += 1;
                        if seen > answered {
                            held.push(respond);
                            continue;
                        }
                        tokio::spawn(async move {
                            if !delay.is_zero() {
                                tokio::time::sleep(delay).await;
                            }
                            let res = http::Response::builder()
                                .header("content-type", "text/plain; charset=utf-8")
                                .body(())
                                .unwrap();
                            if let Ok(mut send) = respond.send_response(res, false) {
                                let _ = send.send_data(bytes::Bytes::from_static(body), true);
                            }
                        });
                    }
                });
            }
        });
    });
    addr
}

#[test]
fn a_planted_h2c_server_with_a_wrong_body_fails() {
    let addr = h2c_server(b"Hello, Wrold!");
    let out = h2c_load(&format!("http://{addr}"), "-c 2 -m 10 -d 500ms --warmup 0s");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("FAIL") && text.contains("oracle check before load") && text.contains("body"),
        "{text}"
    );
    // The same planted server with the right body passes: the failure above is the body's.
    let addr = h2c_server(b"Hello, World!");
    let out = h2c_load(&format!("http://{addr}"), "-c 2 -m 10 --requests 300");
    assert!(out.status.success(), "{}", stdout(&out));
}

#[test]
fn streams_left_unanswered_time_out_within_the_bound() {
    // Each connection gets one answer (the check before load passes), then silence: the
    // watchdog must count the streams in flight as timeouts and reopen, and the run must end
    // at its bound, not wait on streams that never end.
    let addr = planted(b"Hello, World!", 1, std::time::Duration::ZERO);
    let json =
        std::env::temp_dir().join(format!("framebench-h2c-stall-{}.json", std::process::id()));
    let started = std::time::Instant::now();
    let out = h2c_load(
        &format!("http://{addr}"),
        &format!(
            "-c 2 -m 5 -d 1s --warmup 0s --timeout 200ms --json {}",
            json.display()
        ),
    );
    let took = started.elapsed();
    assert!(
        took < std::time::Duration::from_secs(6),
        "took {took:?}: {}",
        stdout(&out)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    let cell = &v["detail"]["cells"][0];
    assert!(cell["timeouts"].as_u64().unwrap() >= 8, "{cell}");
    assert!(cell["connects"].as_u64().unwrap() >= 2, "{cell}");
}

#[test]
fn raw_and_hyper_pass_the_oracle_over_h2c() {
    let out = run(&["check", "raw", "hyper", "--protocol", "h2c"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("loopback h2c"), "{text}");
    assert!(text.contains("match the oracle"), "{text}");
}

/// hyperlane's h2c server is its own `Server::run`, on the port bound again: it passes the
/// oracle there, and `--runtime per-core` is refused for it under h2c alone, with one line.
#[test]
fn hyperlane_serves_h2c_from_its_own_bind_and_refuses_per_core_there() {
    let out = run(&["check", "hyperlane", "--protocol", "h2c"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("hyperlane  loopback h2c"), "{text}");
    let out = run(&[
        "serve",
        "hyperlane",
        "--protocol",
        "h2c",
        "--runtime",
        "per-core",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("its own server binds one listener"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn a_count_bounded_h2c_load_sends_exactly_its_count() {
    let json = std::env::temp_dir().join(format!("framebench-h2c-{}.json", std::process::id()));
    let out = h2c_load(
        "raw",
        &format!("-c 3 -m 7 --requests 1000 --json {}", json.display()),
    );
    assert!(out.status.success(), "{}", stdout(&out));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    let cell = &v["detail"]["cells"][0];
    assert_eq!(cell["requests"], 1000, "{cell}");
    assert_eq!(cell["protocol"], "h2c");
    assert_eq!(cell["streams"], 7);
    assert!(cell["variant"]
        .as_str()
        .unwrap()
        .ends_with("protocol=h2c,streams=7"));
    assert_eq!(cell["status"]["kind"], "ok", "{cell}");
}

#[test]
fn one_compare_runs_h2c_beside_http1() {
    let json = std::env::temp_dir().join(format!("framebench-h2c-mix-{}.json", std::process::id()));
    let out = run(&[
        "compare",
        "--frameworks",
        "raw",
        "--scenarios",
        "hello",
        "--protocol",
        "h2c,http1",
        "-c",
        "2",
        "-m",
        "1,10",
        "--requests",
        "200",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stdout(&out));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    let cells = v["detail"]["cells"].as_array().unwrap();
    // Two h2c cells (M = 1 and 10) and one HTTP/1.1 cell: M means nothing to HTTP/1.1.
    let seen: Vec<(String, u64)> = cells
        .iter()
        .map(|c| {
            (
                c["protocol"].as_str().unwrap().to_owned(),
                c["streams"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [("h2c".into(), 1), ("h2c".into(), 10), ("http1".into(), 1)],
        "{cells:?}"
    );
    for c in cells {
        assert_eq!(c["requests"], 200, "{c}");
    }
}

#[test]
fn a_framework_without_h2c_gets_a_dash_with_its_reason() {
    let out = h2c_load("iron", "-d 200ms");
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("–"), "{text}");
    let out = run(&["check", "iron", "--protocol", "h2c"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("hyper 0.10 speaks HTTP/1 only"), "{text}");
    // Named to serve, it is refused with the reason: one line, exit 2.
    let out = run(&["serve", "iron", "--protocol", "h2c"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("does not serve h2c"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn flags_of_the_other_protocol_are_refused() {
    for (args, needle) in [
        (&["--protocol", "h2c", "--pipeline", "4"][..], "--pipeline"),
        (
            &["--protocol", "h2c", "--requests-per-connection", "1"][..],
            "--requests-per-connection",
        ),
        (&["-m", "10"][..], "--streams"),
        (&["--protocol", "h3"][..], "h3"),
    ] {
        let mut all = vec!["load", "--target", "raw"];
        all.extend_from_slice(args);
        let out = run(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {err}");
        assert!(err.contains(needle), "{all:?}: {err}");
        assert!(!err.contains("panicked"), "{all:?}: {err}");
    }
    let out = run(&[
        "load",
        "--target",
        "http://127.0.0.1:9",
        "--protocol",
        "h2c,http1",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("one protocol"), "{err}");
}

/// Reads the one cell of a `--json` file, and removes the file.
fn only_cell(json: &std::path::Path) -> serde_json::Value {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let _ = std::fs::remove_file(json);
    v["detail"]["cells"][0].clone()
}

#[test]
fn an_open_loop_h2c_load_sends_at_its_rate() {
    let _measuring = crate::common::measuring();
    // 2 connections at 400 req/s in all: each sends every 5 ms, staggered by 2.5 ms, so a 1 s
    // window holds 400 intended sends. raw answers tens of thousands a second here closed-loop,
    // so a count near 400 is the schedule's, not the server's.
    let json =
        std::env::temp_dir().join(format!("framebench-h2c-rate-{}.json", std::process::id()));
    let out = h2c_load(
        "raw",
        &format!(
            "-c 2 -m 4 --rate 400 -d 1s --warmup 0s --json {}",
            json.display()
        ),
    );
    assert!(out.status.success(), "{}", stdout(&out));
    let cell = only_cell(&json);
    let requests = cell["requests"].as_u64().unwrap();
    assert!((300..=402).contains(&requests), "{requests}: {cell}");
    assert_eq!(cell["rate"], 400.0, "{cell}");
    assert_eq!(cell["status"]["kind"], "ok", "{cell}");
}

#[test]
fn the_open_loop_charges_a_slow_server_from_the_intended_send_time() {
    let _measuring = crate::common::measuring();
    // One connection, one stream, a send due every 10 ms, and a server that takes 30 ms per
    // answer: the requests fall further behind their schedule, and their latency counts from
    // when each was due, so the median is far above the 30 ms any one answer took (a closed
    // loop would report about 30 ms).
    let addr = planted(
        b"Hello, World!",
        usize::MAX,
        std::time::Duration::from_millis(30),
    );
    let json =
        std::env::temp_dir().join(format!("framebench-h2c-late-{}.json", std::process::id()));
    let out = h2c_load(
        &format!("http://{addr}"),
        &format!(
            "-c 1 -m 1 --rate 100 -d 1s --warmup 0s --json {}",
            json.display()
        ),
    );
    assert!(out.status.success(), "{}", stdout(&out));
    let cell = only_cell(&json);
    let p50_ms = cell["latency"]["p50_us"].as_f64().unwrap() / 1000.0;
    let requests = cell["requests"].as_u64().unwrap();
    assert!(p50_ms > 100.0, "p50 {p50_ms} ms: {cell}");
    // At most one answer per 30 ms went out: the server set the rate, not the schedule.
    assert!(requests <= 40, "{requests}: {cell}");
}
