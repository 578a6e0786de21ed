//! `--tls` end to end: `check --tls` on every Rust TLS server and the Go peers, with the reason
//! of a framework without TLS, full and resumed handshakes counted by the driver, the flags
//! refused where TLS does not apply, every TLS server surviving plaintext, a garbage ClientHello
//! and a client that stalls mid-handshake, `memory --tls` and `scale --tls`; HTTP/2 over TLS
//! (`--protocol h2`) checked and loaded on every server that serves it. Every run is a second or
//! a few.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use framebench::child::ServerProcess;
use framebench::options::{Options, Transport};

use crate::common::{assert_one_line_error, run};

/// The Rust servers that serve TLS, one per TLS integration: tokio-rustls under hyper (hyper,
/// axum, warp, gotham's wrap), under poem's `Acceptor`, rustls on raw's own loop, and each
/// framework's own (actix-tls, ntex-tls, salvo's, trillium-rustls, Rocket's, xitca-tls).
const RUST_TLS: [&str; 12] = [
    "raw", "hyper", "axum", "warp", "gotham", "poem", "actix", "ntex", "salvo", "trillium",
    "rocket", "xitca",
];

/// The Rust servers that serve HTTP/2 over TLS (`--protocol h2`).
const RUST_H2: [&str; 8] = [
    "hyper", "axum", "warp", "poem", "salvo", "actix", "ntex", "rocket",
];

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn check_over_tls_passes_for_every_rust_tls_server_and_names_the_reason_of_one_without_it() {
    let mut args = vec!["check"];
    args.extend(RUST_TLS);
    args.extend(["iron", "--tls"]);
    let out = run(&args);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    for fw in RUST_TLS {
        let rows: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with(&format!("{fw} ")))
            .collect();
        assert_eq!(
            rows.len(),
            4,
            "four loopback variants, no in-process row: {text}"
        );
        assert!(
            rows.iter()
                .all(|r| r.contains("loopback") && r.contains(",tls") && !r.contains("FAIL")),
            "{text}"
        );
    }
    assert!(
        text.contains("– iron tls: hyper 0.10's server takes TLS through its `SslServer`"),
        "iron's reason: {text}"
    );
}

#[test]
fn the_go_peers_serve_tls_through_crypto_tls() {
    let out = run(&["check", "go-nethttp", "go-fiber", "--tls"]);
    let (text, err) = (stdout(&out), String::from_utf8_lossy(&out.stderr));
    if err.contains("skipping the Go peers") {
        eprintln!("go is not installed: the Go peers' TLS is not checked");
        return;
    }
    assert!(out.status.success(), "{text}{err}");
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("go-nethttp ") || l.starts_with("go-fiber "))
        .collect();
    assert_eq!(rows.len(), 8, "{text}");
    assert!(
        rows.iter()
            .all(|r| r.contains(",tls") && r.split_whitespace().skip(3).all(|c| c == "ok")),
        "{text}"
    );
    // HTTP/2 over TLS: net/http's, and Fiber's reason.
    let out = run(&[
        "check",
        "go-nethttp",
        "go-fiber",
        "--tls",
        "--protocol",
        "h2",
    ]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("go-nethttp "))
        .collect();
    assert_eq!(rows.len(), 4, "{text}");
    assert!(
        rows.iter()
            .all(|r| r.contains("protocol=h2,tls")
                && r.split_whitespace().skip(4).all(|c| c == "ok")),
        "{text}"
    );
    assert!(
        text.contains("– go-fiber h2: fasthttp, under Fiber, has no HTTP/2"),
        "{text}"
    );
}

#[test]
fn check_over_h2_passes_for_every_rust_server_that_serves_it_and_names_the_reason_of_one_that_does_not(
) {
    let mut args = vec!["check"];
    args.extend(RUST_H2);
    args.extend(["raw", "--tls", "--protocol", "h2"]);
    let out = run(&args);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    for fw in RUST_H2 {
        let rows: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with(&format!("{fw} ")))
            .collect();
        assert_eq!(rows.len(), 4, "four loopback variants: {text}");
        assert!(
            rows.iter().all(|r| r.contains("loopback h2")
                && r.contains("protocol=h2,tls")
                && !r.contains("FAIL")
                && r.split_whitespace().skip(4).any(|c| c == "ok")),
            "{text}"
        );
    }
    assert!(
        text.contains("– raw h2: raw's TLS reference loop speaks HTTP/1.1 only"),
        "raw's reason: {text}"
    );
}

#[test]
fn a_load_over_h2_writes_json_that_diff_reads_beside_h2c() {
    let dir = tempfile::tempdir().unwrap();
    let json = |p: &str| dir.path().join(format!("{p}.json"));
    for (protocol, tls) in [("h2c", None), ("h2", Some("--tls"))] {
        let path = json(protocol);
        let mut args = vec![
            "load",
            "--target",
            "hyper",
            "--protocol",
            protocol,
            "-c",
            "2",
            "-m",
            "4",
            "--duration",
            "0.5",
            "--warmup",
            "0.1",
            "--quiet",
            "--json",
        ];
        args.push(path.to_str().unwrap());
        args.extend(tls);
        let out = run(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let diff = run(&[
        "diff",
        json("h2").to_str().unwrap(),
        json("h2").to_str().unwrap(),
    ]);
    let text = stdout(&diff);
    assert!(diff.status.success(), "{text}");
    assert!(text.contains("protocol=h2,tls,streams=4"), "{text}");
}

/// `load --tls` with a connection per request against hyper, resumption `on` or `off`: the
/// cell's handshakes from its JSON.
fn handshakes(resumption: &str) -> (u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("tls.json");
    let out = run(&[
        "load",
        "--target",
        "hyper",
        "--tls",
        "--requests-per-connection",
        "1",
        "--tls-resumption",
        resumption,
        "-c",
        "2",
        "-d",
        "500ms",
        "--warmup",
        "200ms",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(stdout(&out).contains("handshakes/s"), "{}", stdout(&out));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let tls = &v["detail"]["cells"][0]["tls"];
    (
        tls["done"].as_u64().unwrap(),
        tls["resumed"].as_u64().unwrap(),
    )
}

#[test]
fn the_driver_counts_full_and_resumed_handshakes() {
    let (done, resumed) = handshakes("off");
    assert!(done > 20, "{done} handshakes");
    assert_eq!(resumed, 0, "resumption off: every handshake full");
    let (done, resumed) = handshakes("on");
    assert!(done > 20, "{done} handshakes");
    // The first connections have no session to resume; nearly all later ones do.
    assert!(resumed * 2 > done, "{resumed} of {done} resumed");
}

#[test]
fn compare_runs_tcp_and_tls_cells_side_by_side_and_diff_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("compare.json");
    let out = run(&[
        "compare",
        "--frameworks",
        "hyper",
        "--scenarios",
        "hello",
        "--transport",
        "tcp,tls",
        "-c",
        "2",
        "-d",
        "300ms",
        "--warmup",
        "100ms",
        "--rounds",
        "2",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stdout(&out));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let cells = v["detail"]["cells"].as_array().unwrap();
    let variants: Vec<&str> = cells
        .iter()
        .map(|c| c["variant"].as_str().unwrap())
        .collect();
    assert_eq!(variants, ["log=off,io=memory", "log=off,io=memory,tls"]);
    // Only the TLS cell carries handshakes; its connections were opened before the window.
    assert!(cells[0].get("tls").is_none());
    assert_eq!(cells[1]["tls"]["resumed"], 0);
    let diff = run(&["diff", json.to_str().unwrap(), json.to_str().unwrap()]);
    let text = stdout(&diff);
    assert!(diff.status.success(), "{text}");
    assert!(text.contains("hello log=off,io=memory,tls,c2,p1"), "{text}");
}

#[test]
fn tls_flags_are_refused_where_they_do_not_apply() {
    for args in [
        &["load", "--target", "hyper", "--tls", "--protocol", "h2c"][..],
        &["check", "hyper", "--tls", "--protocol", "h2c"],
    ] {
        assert_one_line_error(&run(args), 2, "h2c is HTTP/2 in cleartext");
    }
    for args in [
        &["load", "--target", "hyper", "--protocol", "h2"][..],
        &["check", "hyper", "--protocol", "h2"],
        &["serve", "hyper", "--protocol", "h2"],
    ] {
        assert_one_line_error(&run(args), 2, "--protocol h2 is HTTP/2 over TLS");
    }
    assert_one_line_error(
        &run(&["check", "--conformance", "--tls", "--protocol", "h2"]),
        2,
        "the HTTP/2 rules write frames on plain TCP",
    );
    assert_one_line_error(
        &run(&["load", "--target", "hyper", "--tls-resumption", "on"]),
        2,
        "--tls-resumption is TLS's: add --tls",
    );
    assert_one_line_error(
        &run(&["serve", "iron", "--tls"]),
        2,
        "iron does not serve tls",
    );
    assert_one_line_error(
        &run(&["load", "--target", "http://127.0.0.1:9", "--tls"]),
        2,
        "an http:// target is loaded over TCP",
    );
    assert_one_line_error(
        &run(&["load", "--target", "https://127.0.0.1:9"]),
        2,
        "an https:// target needs --tls",
    );
    // Without the server's certificate in the environment the client could trust nothing.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_framebench"))
        .args(["load", "--target", "https://127.0.0.1:9", "--tls"])
        .env_remove("FRAMEBENCH_TLS_CERT_PEM")
        .env_remove("FRAMEBENCH_TLS_KEY_PEM")
        .output()
        .unwrap();
    assert_one_line_error(&out, 2, "an https:// target needs the server's certificate");
}

/// Reads until the server closes the connection (or sends an alert and closes), within 5 s:
/// whether it did.
fn closed_within(mut s: TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn every_rust_tls_server_survives_plaintext_garbage_and_a_stalled_handshake() {
    for framework in RUST_TLS {
        survives_hostile_tls(framework);
    }
}

fn survives_hostile_tls(framework: &str) {
    let options = Options {
        transport: Transport::Tls,
        ..Options::default()
    };
    let server = ServerProcess::start(Path::new(crate::common::BIN), framework, options, &[])
        .unwrap_or_else(|e| panic!("{framework} --tls starts: {e:#}"));
    let addr = server.addr();
    // A client that connects and never finishes its handshake: it holds one task, not the
    // accept loop.
    let stalled = TcpStream::connect(addr).unwrap();
    let mut partial = TcpStream::connect(addr).unwrap();
    partial
        .write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
        .unwrap();
    let started = Instant::now();
    let (status, version) = framebench::protocol::http1::tls_get_status(addr, "/").unwrap();
    assert_eq!((status, version.as_str()), (200, "TLSv1_3"));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{framework}: starved"
    );
    // Plaintext HTTP on the TLS port: an alert or a close, never a hang.
    let mut plain = TcpStream::connect(addr).unwrap();
    plain
        .write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    assert!(
        closed_within(plain),
        "{framework}: plaintext request left hanging"
    );
    // A ClientHello of garbage: closed.
    let mut garbage = TcpStream::connect(addr).unwrap();
    let mut hello = vec![0x16, 0x03, 0x01, 0x00, 0x40];
    hello.extend(std::iter::repeat_n(0xAB, 0x40));
    garbage.write_all(&hello).unwrap();
    assert!(
        closed_within(garbage),
        "{framework}: garbage ClientHello left hanging"
    );
    // And the server still serves.
    assert_eq!(
        framebench::protocol::http1::tls_get_status(addr, "/")
            .unwrap()
            .0,
        200
    );
    drop((stalled, partial));
}

/// The heap per idle connection of `framework` that `memory` measures at 200 connections, over
/// TLS or not (one run, so the figure of the detail, not an exact one).
fn heap_per_idle_connection(framework: &str, tls: bool) -> f64 {
    let dir = framebench::results::target_dir().join("tmp/tls-memory");
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join(format!("{framework}-{tls}.json"));
    let json = json.to_str().unwrap();
    let mut args = vec![
        "memory",
        "--frameworks",
        framework,
        "--connections",
        "200",
        "--bodies",
        "none",
        "--runs",
        "1",
        "--json",
        json,
    ];
    if tls {
        args.push("--tls");
    }
    let out = run(&args);
    assert!(
        out.status.success(),
        "{}{}",
        stdout(&out),
        String::from_utf8_lossy(&out.stderr)
    );
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    file["detail"][0]["summary"]["heap_per_conn"]
        .as_f64()
        .unwrap_or_else(|| panic!("no heap figure: {file}"))
}

#[test]
fn memory_over_tls_counts_each_connections_session_and_refuses_a_server_without_tls() {
    let _measuring = crate::common::measuring();
    // A rustls server connection keeps its session and record buffers beside hyper's own.
    let (tcp, tls) = (
        heap_per_idle_connection("hyper", false),
        heap_per_idle_connection("hyper", true),
    );
    assert!(tcp > 0.0 && tls > tcp + 1024.0, "TCP {tcp} B, TLS {tls} B");
    assert_one_line_error(
        &run(&["memory", "--frameworks", "iron", "--tls"]),
        2,
        "iron does not serve tls",
    );
}

#[test]
fn a_sweep_runs_over_tls_and_refuses_a_named_server_without_it() {
    let _measuring = crate::common::measuring();
    let dir = framebench::results::target_dir().join("tmp/tls-scale");
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("sweep.json");
    let out = run(&[
        "scale",
        "--frameworks",
        "raw,hyper",
        "--scenarios",
        "hello",
        "-d",
        "100ms",
        "--warmup",
        "50ms",
        "-c",
        "4",
        "--quiet",
        "--tls",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}{}",
        stdout(&out),
        String::from_utf8_lossy(&out.stderr)
    );
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let figures = file["figures"].as_array().unwrap();
    for fw in ["raw", "hyper"] {
        let mine: Vec<&serde_json::Value> =
            figures.iter().filter(|f| f["framework"] == fw).collect();
        assert!(!mine.is_empty(), "{fw}: {file}");
        for f in mine {
            assert!(f["variant"].as_str().unwrap().contains(",tls,"), "{f}");
            assert!(f["value"].as_f64().unwrap() > 0.0, "{f}");
        }
    }
    assert_one_line_error(
        &run(&["scale", "--frameworks", "iron", "--tls"]),
        2,
        "iron does not serve tls",
    );
}

/// Each row of `name` in a conformance report (the rules' and the hostile bodies'), as words.
fn report_rows(text: &str, name: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name} ")))
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect()
}

#[test]
fn conformance_over_tls_judges_as_over_tcp_and_names_a_server_without_tls() {
    let tcp = run(&["check", "--conformance", "hyper", "raw", "iron"]);
    let tls = run(&["check", "--conformance", "hyper", "raw", "iron", "--tls"]);
    let (tcp, tls) = (stdout(&tcp), stdout(&tls));
    // HTTP/1.1's rules and the hostile bodies are the same bytes inside TLS records: the same
    // verdicts, rule for rule.
    for fw in ["hyper", "raw"] {
        let rows = report_rows(&tls, fw);
        assert_eq!(rows.len(), 2, "a rules row and a bodies row: {tls}");
        assert_eq!(rows, report_rows(&tcp, fw), "{fw}:\n{tcp}\n{tls}");
    }
    assert!(
        tls.contains("iron") && tls.contains("no tls: hyper 0.10's server"),
        "{tls}"
    );
    assert_one_line_error(
        &run(&["check", "--conformance", "--tls", "--protocol", "h2c"]),
        2,
        "h2c is HTTP/2 in cleartext",
    );
}
