//! WebSocket at `/ws`, byte for byte: every WebSocket server echoes text and binary messages
//! (whole and fragmented, a ping answered between fragments), closes the handshake with the
//! client's code, and meets hostile input with a Close of the right code or a 400, never a
//! crash, a hang or unbounded growth, and still echoes afterwards. The frames here are written
//! and read by this file's own few lines, not by the crate's framing, so that they judge it.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use sha1::{Digest as _, Sha1};

use framebench::child::ServerProcess;
use framebench::options::{Options, Protocol};

/// The servers whose `/ws` this file judges: every one in the build that serves WebSocket
/// (`framebench list` marks them `ws`), the Go peers where Go is installed.
fn ws_servers() -> Vec<&'static str> {
    let servers: Vec<&str> = framebench::frameworks::REGISTRY
        .iter()
        .filter(|e| e.loopback && e.support(Protocol::Ws).why_not().is_none())
        .filter(|e| match e.available() {
            Ok(()) => true,
            Err(why) => {
                eprintln!("{}: {why}", e.name);
                false
            }
        })
        .map(|e| e.name)
        .collect();
    assert!(servers.contains(&"raw"), "raw's reference is always built");
    servers
}

const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
const MASK: [u8; 4] = [0xA1, 0xB2, 0xC3, 0xD4];

/// A masked client frame.
fn frame(b0: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![b0];
    match payload.len() {
        n @ 0..=125 => out.push(0x80 | n as u8),
        n @ 126..=0xFFFF => {
            out.push(0x80 | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(0x80 | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(&MASK);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ MASK[i % 4]));
    out
}

/// Reads one server frame: (first byte, payload); `None` when the server closed the
/// connection first.
fn read_frame(s: &mut TcpStream) -> Option<(u8, Vec<u8>)> {
    let mut head = [0u8; 2];
    s.read_exact(&mut head).ok()?;
    assert_eq!(head[1] & 0x80, 0, "a masked frame from the server");
    let len = match head[1] & 0x7F {
        126 => {
            let mut b = [0u8; 2];
            s.read_exact(&mut b).ok()?;
            u64::from(u16::from_be_bytes(b))
        }
        127 => {
            let mut b = [0u8; 8];
            s.read_exact(&mut b).ok()?;
            u64::from_be_bytes(b)
        }
        n => u64::from(n),
    };
    let mut payload = vec![0u8; usize::try_from(len).unwrap()];
    s.read_exact(&mut payload).ok()?;
    Some((head[0], payload))
}

/// The HTTP head the server answered a request with, read byte by byte up to its blank line.
fn read_head(s: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

fn upgrade_request(key_line: &str) -> String {
    format!(
        "GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         {key_line}Sec-WebSocket-Version: 13\r\n\r\n"
    )
}

/// A connection to `addr` upgraded at `/ws`, its `101` checked.
fn upgraded(addr: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(upgrade_request(&format!("Sec-WebSocket-Key: {KEY}\r\n")).as_bytes())
        .unwrap();
    let head = read_head(&mut s);
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    let mut sha = Sha1::new();
    sha.update(format!("{KEY}258EAFA5-E914-47DA-95CA-C5AB0DC85B11").as_bytes());
    let accept = base64::engine::general_purpose::STANDARD.encode(sha.finalize());
    assert!(
        head.to_ascii_lowercase().contains(&format!(
            "sec-websocket-accept: {}",
            accept.to_ascii_lowercase()
        )),
        "{head}"
    );
    s
}

/// The code of the Close the server sends next (skipping nothing else), or `None` when it
/// closed the connection without one or sent a Close without a code.
fn close_code(s: &mut TcpStream) -> Option<u16> {
    let (b0, payload) = read_frame(s)?;
    assert_eq!(b0, 0x88, "a Close, not {b0:#x} {payload:?}");
    // A Close without a body carries no code (RFC 6455 §7.1.5: 1005), as a bare close does not.
    (payload.len() >= 2).then(|| u16::from_be_bytes([payload[0], payload[1]]))
}

/// Sends `text` and reads its echo.
fn echoes(s: &mut TcpStream, text: &str) {
    s.write_all(&frame(0x81, text.as_bytes())).unwrap();
    assert_eq!(read_frame(s), Some((0x81, text.as_bytes().to_vec())));
}

fn start(name: &str) -> ServerProcess {
    let ws = Options {
        protocol: Protocol::Ws,
        ..Options::default()
    };
    ServerProcess::start(Path::new(crate::common::BIN), name, ws, &[])
        .unwrap_or_else(|e| panic!("{name} starts: {e:#}"))
}

/// One case against one server's address: `Err` with what went wrong.
type Case = (&'static str, fn(SocketAddr));

/// The echo cases: text and binary messages whole, one fragmented with a ping between its
/// fragments (the pong at once, the message whole, in one frame or as fragments), and the close
/// handshake (the client's code back, then the end of the stream).
const ECHO_CASES: [Case; 4] = [
    ("text", |addr| {
        echoes(&mut upgraded(addr), "Hello, World! 32 bytes of text..")
    }),
    ("binary", |addr| {
        let mut s = upgraded(addr);
        let binary: Vec<u8> = (0..=255).collect();
        s.write_all(&frame(0x82, &binary)).unwrap();
        assert_eq!(read_frame(&mut s), Some((0x82, binary)));
    }),
    ("fragmented, a ping between", |addr| {
        let mut s = upgraded(addr);
        let mut burst = frame(0x01, "κόσ".as_bytes());
        burst.extend(frame(0x89, b"ping"));
        burst.extend(frame(0x00, "με ".as_bytes()));
        burst.extend(frame(0x80, b"world"));
        s.write_all(&burst).unwrap();
        let mut text = Vec::new();
        let mut pong = false;
        while let Some((b0, payload)) = read_frame(&mut s) {
            match b0 & 0x0F {
                0xA => {
                    assert_eq!(payload, b"ping");
                    pong = true;
                }
                0x1 | 0x0 => {
                    text.extend(payload);
                    if b0 & 0x80 != 0 {
                        break;
                    }
                }
                other => panic!("opcode {other:#x} {payload:?}"),
            }
        }
        assert!(pong, "no pong");
        assert_eq!(String::from_utf8(text).unwrap(), "κόσμε world");
    }),
    ("close", |addr| {
        let mut s = upgraded(addr);
        s.write_all(&frame(0x88, &1000u16.to_be_bytes())).unwrap();
        assert_eq!(close_code(&mut s), Some(1000));
        assert!(read_frame(&mut s).is_none(), "open after the close");
    }),
];

/// A hostile frame: a Close with one of `codes`, or a bare close of the connection, never a
/// hang (the read timeout is 5 s) and never an echo; the server echoes on a new connection
/// afterwards.
fn meets(addr: SocketAddr, bytes: &[u8], codes: &[u16]) {
    let mut s = upgraded(addr);
    s.write_all(bytes).unwrap();
    if let Some(code) = close_code(&mut s) {
        assert!(codes.contains(&code), "close {code}, not one of {codes:?}");
    }
    echoes(&mut upgraded(addr), "still here");
}

/// The hostile cases: frames RFC 6455 forbids, an upgrade without its key (a 4xx and no 101),
/// and 1,000 pings before reading a pong (every pong comes, then the echo).
const HOSTILE_CASES: [Case; 6] = [
    ("an unmasked frame", |addr| {
        meets(addr, &[0x81, 0x02, b'h', b'i'], &[1002])
    }),
    ("a frame claiming 2^63 bytes", |addr| {
        let mut huge = vec![0x82, 0xFF];
        huge.extend_from_slice(&(1u64 << 63).to_be_bytes());
        huge.extend_from_slice(&MASK);
        meets(addr, &huge, &[1002, 1009]);
    }),
    ("a fragmented ping", |addr| {
        meets(addr, &frame(0x09, b"p"), &[1002])
    }),
    ("a text message of invalid UTF-8", |addr| {
        meets(addr, &frame(0x81, &[0xCE, 0x41, 0xFF]), &[1007]);
    }),
    ("an upgrade without its key", |addr| {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(upgrade_request("").as_bytes()).unwrap();
        let head = read_head(&mut s);
        assert!(head.starts_with("HTTP/1.1 4"), "{head}");
    }),
    ("1,000 pings", |addr| {
        let mut s = upgraded(addr);
        let pings: Vec<u8> = (0..1000).flat_map(|_| frame(0x89, b"p")).collect();
        s.write_all(&pings).unwrap();
        for i in 0..1000 {
            assert_eq!(read_frame(&mut s), Some((0x8A, b"p".to_vec())), "pong {i}");
        }
        echoes(&mut s, "after the pings");
    }),
];

/// Where a server does not do what RFC 6455 asks, by its framework's own code, with why: the
/// test checks that each of these still fails, so that a fix upstream (or here) shows.
const KNOWN: [(&str, &str, &str); 9] = [
    (
        "xitca",
        "a fragmented ping",
        "http-ws 0.4.0 takes a ping without FIN and answers it (RFC 6455 §5.5: a control frame \
         is never fragmented)",
    ),
    (
        "xitca",
        "an upgrade without its key",
        "xitca-web 0.8.1 answers a handshake error other than a missing Connection, Upgrade or \
         version header with 500 (src/handler/types/websocket.rs:148)",
    ),
    (
        "ntex",
        "a fragmented ping",
        "ntex's WebSocket codec takes a ping without FIN and answers it (RFC 6455 §5.5)",
    ),
    (
        "ohkami",
        "fragmented, a ping between",
        "mews 0.5.2 reads a fragmented message's frames as continuations only and fails on the \
         ping between (src/message.rs: \"Expected continue frame\"), then closes with 1000",
    ),
    (
        "ohkami",
        "an unmasked frame",
        "mews 0.5.2 reports every protocol error as an io::Error, and ohkami closes with 1000 \
         when the handler returns, not 1002",
    ),
    (
        "ohkami",
        "a frame claiming 2^63 bytes",
        "as for an unmasked frame: a close with 1000, not 1002 or 1009",
    ),
    (
        "ohkami",
        "a text message of invalid UTF-8",
        "as for an unmasked frame: a close with 1000, not 1007",
    ),
    (
        "ohkami",
        "a fragmented ping",
        "mews 0.5.2 writes a Pong with the Ping opcode (src/message.rs, `into_frame`), and takes \
         a ping without FIN",
    ),
    (
        "ohkami",
        "1,000 pings",
        "mews 0.5.2 answers each ping with a frame of the Ping opcode (src/message.rs, \
         `into_frame`)",
    ),
];

/// Runs `cases` against every WebSocket server and compares the failures with [`KNOWN`].
fn judge(cases: &[Case]) {
    let mut unexpected = Vec::new();
    for name in ws_servers() {
        let server = start(name);
        for (case, run) in cases {
            let addr = server.addr();
            let failed = std::panic::catch_unwind(move || run(addr)).err().map(|e| {
                e.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default()
            });
            let known = KNOWN.iter().any(|(n, c, _)| *n == name && c == case);
            match failed {
                Some(why) if !known => unexpected.push(format!("{name}, {case}: failed: {why}")),
                None if known => {
                    unexpected.push(format!("{name}, {case}: passed, but KNOWN says it fails"));
                }
                _ => {}
            }
        }
    }
    assert!(unexpected.is_empty(), "{}", unexpected.join("\n"));
}

#[test]
fn every_websocket_server_echoes_messages_whole_and_fragmented_and_closes_with_the_clients_code() {
    judge(&ECHO_CASES);
}

#[test]
fn every_websocket_server_meets_hostile_frames_with_a_close_and_still_echoes() {
    judge(&HOSTILE_CASES);
}

/// Autobahn|Testsuite's quick cases (all but 9.*, 12.* and 13.*) against raw and axum: the
/// reference passes every one, and both get a row. Skipped with one line without `wstest`
/// (`scripts/autobahn.sh`), unless `FRAMEBENCH_REQUIRE` names it.
#[test]
fn autobahn_judges_the_reference_and_axum() {
    use framebench::tools::Tool;
    if let Err(why) = Tool::Wstest.path() {
        assert!(!Tool::Wstest.required(), "{why}");
        eprintln!("skipping the Autobahn test: {why}");
        return;
    }
    let out = crate::common::run(&["check", "--conformance", "--protocol", "ws", "raw", "axum"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}");
    let row = |name: &str| -> Vec<String> {
        text.lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} row: {text}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    // framework, ok, non-strict, informational, unimplemented, failed, cases
    let raw = row("raw");
    assert_eq!(raw[5], "0", "raw failed cases: {text}");
    assert!(raw[6].parse::<usize>().unwrap() > 200, "{text}");
    assert_eq!(row("axum").len(), 7, "{text}");
}

/// `check --protocol ws`: the echo of every WebSocket server checked byte for byte, loopback
/// rows only, and a server without WebSocket named with its reason.
#[test]
fn check_over_websocket_passes_for_raw_and_axum_and_names_the_reason_of_iron() {
    let out = crate::common::run(&["check", "--protocol", "ws", "raw", "axum", "actix", "iron"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for fw in ["raw", "axum", "actix"] {
        let rows: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with(&format!("{fw} ")))
            .collect();
        assert!(!rows.is_empty(), "{fw}: {text}");
        assert!(
            rows.iter().all(|r| r.contains("loopback")
                && !r.contains("in-process")
                && !r.contains("FAIL")),
            "{text}"
        );
    }
    assert!(text.contains("iron ws: hyper 0.10's server"), "{text}");
}

/// The three shapes on axum: steady, 16 in flight, and 10 messages per connection (whose
/// upgrades the cell counts), each a cell that ran ok, in JSON that `diff` reads.
#[test]
fn load_over_websocket_runs_steady_pipelined_and_churning_and_diff_reads_it() {
    let _measuring = crate::common::measuring();
    let dir = framebench::results::target_dir().join("tmp/ws-load");
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = Vec::new();
    for (name, flags) in [
        ("steady", &[][..]),
        ("pipelined", &["--pipeline", "16"][..]),
        ("churn", &["--requests-per-connection", "10"][..]),
    ] {
        let json = dir.join(format!("{name}.json"));
        let (text, file) = ws_load("axum", "4", flags, &json);
        let cell = &file["detail"]["cells"][0];
        assert_eq!(cell["status"]["kind"], "ok", "{name}: {cell}");
        assert_eq!(cell["scenario"], "echo", "{name}: {cell}");
        assert!(cell["rps"].as_f64().unwrap() > 0.0, "{name}: {cell}");
        let upgrades = cell["upgrades"].as_u64().unwrap();
        if name == "churn" {
            assert!(upgrades > 0, "{name}: {cell}");
            assert!(text.contains("upgrades/s"), "{text}");
        } else {
            // Keep-alive connections upgraded before the window.
            assert_eq!(upgrades, 0, "{name}: {cell}");
        }
        files.push(json.to_str().unwrap().to_owned());
    }
    let out = crate::common::run(&["diff", &files[0], &files[1]]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The driver's steady load reaches every WebSocket server: each cell ends ok, with answers.
/// ntex 3.12.3 answers the upgrade with `Transfer-Encoding: chunked` on its `101`, which the
/// driver once read as a body to wait for: its cells read 0 req/s, `ok`, in three publications.
#[test]
fn the_driver_loads_every_websocket_server() {
    let _measuring = crate::common::measuring();
    let dir = framebench::results::target_dir().join("tmp/ws-load-each");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ws_servers() {
        let json = dir.join(format!("{name}.json"));
        let (_, file) = ws_load(name, "2", &[], &json);
        let cell = &file["detail"]["cells"][0];
        assert_eq!(cell["status"]["kind"], "ok", "{name}: {cell}");
        assert!(cell["requests"].as_u64().unwrap() > 0, "{name}: {cell}");
    }
}

/// `load --protocol ws` of `target` at `conns` connections for 300 ms, with `flags`, its JSON
/// written to `json`: asserts it ended 0, and returns its stdout and the file.
fn ws_load(target: &str, conns: &str, flags: &[&str], json: &Path) -> (String, serde_json::Value) {
    let path = json.to_str().unwrap();
    let mut args = vec![
        "load",
        "--target",
        target,
        "--protocol",
        "ws",
        "-c",
        conns,
        "-d",
        "300ms",
        "--warmup",
        "100ms",
        "--quiet",
        "--json",
        path,
    ];
    args.extend(flags);
    let out = crate::common::run(&args);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{target} {flags:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    (text, file)
}

/// A server started apart, loaded by URL (as scripts/vs-wsload.sh does): the load speaks
/// WebSocket to it. It once loaded the URL as HTTP/1.1, which carries no `echo`, ran no cell
/// and exited 0.
#[test]
fn a_url_target_is_loaded_over_websocket() {
    let _measuring = crate::common::measuring();
    let server = start("raw");
    let url = format!("http://{}", server.addr());
    let json = framebench::results::target_dir().join("tmp/ws-url.json");
    std::fs::create_dir_all(json.parent().unwrap()).unwrap();
    let (_, file) = ws_load(&url, "2", &[], &json);
    let cells = file["detail"]["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 1, "{file}");
    assert_eq!(cells[0]["scenario"], "echo", "{}", cells[0]);
    assert_eq!(cells[0]["status"]["kind"], "ok", "{}", cells[0]);
    assert!(cells[0]["rps"].as_f64().unwrap() > 0.0, "{}", cells[0]);
}

#[test]
fn websocket_flags_are_refused_where_they_do_not_apply() {
    use crate::common::{assert_one_line_error, run};
    assert_one_line_error(
        &run(&[
            "load",
            "--target",
            "raw",
            "--protocol",
            "ws",
            "--scenario",
            "hello",
        ]),
        2,
        "`echo` is WebSocket's",
    );
    assert_one_line_error(
        &run(&["load", "--target", "raw", "--scenario", "echo"]),
        2,
        "`echo` is WebSocket's",
    );
    assert_one_line_error(
        &run(&["load", "--target", "raw", "--protocol", "ws", "--tls"]),
        2,
        "wss",
    );
    assert_one_line_error(
        &run(&["load", "--target", "raw", "--protocol", "ws", "-m", "10"]),
        2,
        "--streams is HTTP/2's",
    );
}

/// A server's worker thread that panics prints one line, and once per place in the code, never
/// a backtrace, even under `RUST_BACKTRACE=1` (`framebench::error::one_line_thread_panics`):
/// xitca-web 0.8.1 unwraps a text message's UTF-8, and under Autobahn the default hook printed
/// 72 backtraces into `check --conformance`'s output. The server still echoes afterwards.
#[cfg(feature = "xitca")]
#[test]
fn a_servers_panicking_worker_prints_one_line_once() {
    use std::io::BufRead as _;
    use std::process::{Command, Stdio};
    let mut child = Command::new(crate::common::BIN)
        .args(["serve", "xitca", "--protocol", "ws"])
        .env("RUST_BACKTRACE", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr: SocketAddr = line
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("{line}"))
        .parse()
        .unwrap();
    for _ in 0..3 {
        let mut s = upgraded(addr);
        s.write_all(&frame(0x81, &[0xCE, 0xBA, 0xFF])).unwrap();
        // A Close or the end of the stream: nothing else is read.
        let _ = read_frame(&mut s);
    }
    echoes(&mut upgraded(addr), "still here");
    // SAFETY: a plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let panics: Vec<&str> = stderr.lines().filter(|l| l.contains("panicked")).collect();
    assert_eq!(panics.len(), 1, "{stderr}");
    assert!(
        panics[0].contains("xitca-web-0.8.1/src/handler/types/websocket.rs"),
        "{stderr}"
    );
    assert!(!stderr.contains("stack backtrace"), "{stderr}");
}

/// `--autobahn all` runs 9.* as a `wstest` run of its own: when that run fails (here a stand-in
/// `wstest` that fails it and reports one case for the other), the row still counts the other
/// run's cases, and a note names the cases it did not count. No real Autobahn is needed.
#[test]
fn a_failed_run_of_9_leaves_the_other_cases_counted_and_named() {
    let dir = framebench::results::target_dir().join("tmp/autobahn-parts");
    std::fs::create_dir_all(&dir).unwrap();
    let fake = dir.join("wstest");
    // Called as `wstest -m fuzzingclient -s DIR/SERVER/PART/fuzzingclient.json`.
    std::fs::write(
        &fake,
        r#"#!/bin/sh
part=$(dirname "$4")
[ "$(basename "$part")" = 9 ] && exit 1
agent=$(basename "$(dirname "$part")")
printf '{"%s": {"1.1.1": {"behavior": "OK", "behaviorClose": "OK"}}}' "$agent" >"$part/index.json"
"#,
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_framebench"))
        .args([
            "check",
            "--conformance",
            "--protocol",
            "ws",
            "--autobahn",
            "all",
            "raw",
        ])
        .env("FRAMEBENCH_WSTEST", &fake)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let row: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("raw "))
        .unwrap_or_else(|| panic!("no raw row: {text}"))
        .split_whitespace()
        .collect();
    // framework, ok, non-strict, informational, unimplemented, failed, cases
    assert_eq!(row, ["raw", "1", "0", "0", "0", "0", "1"], "{text}");
    assert!(
        text.contains("raw: cases 9.* not counted: wstest failed"),
        "{text}"
    );
}
