//! The `framebench` binary: its errors (one line, exit 2 for usage, 1 for environment), and
//! `serve`'s contract (first line, logging to stdout, clean stop on SIGINT and SIGTERM).

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use framebench::frameworks::REGISTRY;
use framebench::oracle::SCENARIOS;
use framebench::protocol::http1::raw_get;

use crate::common::{assert_one_line_error, run, BIN};

#[test]
fn list_shows_every_framework_with_version_and_every_scenario() {
    let out = run(&["list"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for e in REGISTRY {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(e.name))
            .unwrap_or_else(|| panic!("{} missing from list", e.name));
        assert!(line.contains(e.version()), "{line}");
        // The Go peers' version is the toolchain's, which a machine without `go` lacks.
        if e.available().is_ok() {
            assert_ne!(e.version(), "?", "{} has no locked version", e.name);
        }
    }
    for s in SCENARIOS {
        assert!(text.contains(s.name) && text.contains(s.path), "{}", s.name);
    }
}

#[test]
fn unknown_framework_exits_2() {
    assert_one_line_error(&run(&["serve", "nosuch"]), 2, "unknown framework 'nosuch'");
    assert_one_line_error(&run(&["check", "nosuch"]), 2, "unknown framework 'nosuch'");
}

#[test]
fn bad_flags_exit_2() {
    assert_one_line_error(&run(&["serve", "raw", "--bogus"]), 2, "--bogus");
    assert_one_line_error(&run(&["serve", "raw", "--threads", "0"]), 2, "--threads");
    assert_one_line_error(&run(&["serve", "raw", "--logging", "loud"]), 2, "loud");
    assert_one_line_error(&run(&["serve", "raw", "--io", "tape"]), 2, "tape");
    assert_one_line_error(&run(&["serve", "raw", "--addr", "nonsense"]), 2, "nonsense");
    assert_one_line_error(&run(&["nosuchcommand"]), 2, "nosuchcommand");
}

#[test]
fn non_loopback_address_is_refused() {
    assert_one_line_error(
        &run(&["serve", "raw", "--addr", "0.0.0.0:0"]),
        2,
        "loopback",
    );
}

#[test]
fn port_in_use_exits_1() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    for e in REGISTRY
        .iter()
        .filter(|e| e.loopback && e.available().is_ok())
    {
        let out = run(&["serve", e.name, "--addr", &addr]);
        assert_one_line_error(&out, 1, "cannot bind");
    }
}

#[test]
fn missing_fixtures_exit_1() {
    let out = Command::new(BIN)
        .args(["serve", "raw"])
        .env("FRAMEBENCH_FIXTURES", "/nonexistent/fixtures")
        .output()
        .unwrap();
    assert_one_line_error(&out, 1, "fixtures folder not found");
    let out = Command::new(BIN)
        .args(["check", "null"])
        .env("FRAMEBENCH_FIXTURES", "/nonexistent/fixtures")
        .output()
        .unwrap();
    assert_one_line_error(&out, 1, "fixtures folder not found");
}

/// A running `framebench serve`, with its stdout lines arriving on a channel.
struct Served {
    child: Child,
    addr: SocketAddr,
    lines: mpsc::Receiver<String>,
}

fn serve(args: &[&str]) -> Served {
    let mut child = Command::new(BIN)
        .arg("serve")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let first = lines
        .recv_timeout(Duration::from_secs(20))
        .expect("no first line");
    let url = first
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("first line is {first:?}"));
    let addr: SocketAddr = url.parse().unwrap();
    assert!(addr.ip().is_loopback() && addr.port() != 0, "{first}");
    Served { child, addr, lines }
}

impl Served {
    fn signal(&mut self, sig: &str) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
            .success());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("serve did not stop within 10 s of {sig}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn serve_prints_its_address_serves_and_stops_on_signals() {
    for e in REGISTRY
        .iter()
        .filter(|e| e.loopback && e.available().is_ok())
    {
        for sig in ["-TERM", "-INT"] {
            let mut s = serve(&[e.name, "--threads", "2"]);
            let got = raw_get(s.addr, "/").unwrap();
            assert_eq!(
                (got.status, &got.body[..]),
                (200, &b"Hello, World!"[..]),
                "{}",
                e.name
            );
            let status = s.signal(sig);
            assert!(status.success(), "{} exited {status:?} on {sig}", e.name);
        }
    }
}

#[test]
fn logging_stdout_prints_one_line_per_request() {
    // raw is the ceiling and has no logger.
    for e in REGISTRY
        .iter()
        .filter(|e| e.loopback && e.name != "raw" && e.available().is_ok())
    {
        let mut s = serve(&[e.name, "--logging", "stdout"]);
        for _ in 0..3 {
            assert_eq!(raw_get(s.addr, "/paste/mysrc").unwrap().status, 200);
        }
        // A path no route matches is logged too (Gotham's pipelines never saw one).
        let missing = framebench::oracle::scenario("not_found").unwrap().path;
        assert_eq!(raw_get(s.addr, missing).unwrap().status, 404);
        assert!(s.signal("-TERM").success());
        let lines: Vec<String> = s.lines.try_iter().collect();
        let logged: Vec<&String> = lines
            .iter()
            .filter(|l| l.contains("/paste/mysrc"))
            .collect();
        assert_eq!(logged.len(), 3, "{}: {lines:#?}", e.name);
        assert!(
            logged
                .iter()
                .all(|l| l.contains("GET") && l.contains("200")),
            "{}: {logged:#?}",
            e.name
        );
        let not_found: Vec<&String> = lines.iter().filter(|l| l.contains(missing)).collect();
        assert!(
            not_found.len() == 1 && not_found[0].contains("404"),
            "{}: the 404 is not logged once: {lines:#?}",
            e.name
        );
    }
}

/// `check --conformance` is a report: a row per server named, `ok` or `FAIL` per rule, a note
/// per failure, and exit 0 even when a server fails a rule (raw sends no `Server`).
#[test]
fn conformance_is_a_report_that_exits_0() {
    let out = run(&["check", "--conformance", "raw", "null"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let header = text.lines().next().unwrap_or_default();
    assert!(
        header.starts_with("framework") && header.contains("date moves"),
        "{text}"
    );
    let raw = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("raw"))
        .unwrap_or_else(|| panic!("no raw row: {text}"));
    // Columns: server, date, framing, close, head, http/1.0, pipelined, split, date moves.
    let cells: Vec<&str> = raw.split_whitespace().skip(1).collect();
    assert_eq!(cells.len(), 9, "{raw}");
    assert_eq!(cells[0], "FAIL", "raw sends no Server header: {raw}");
    assert!(
        cells[1..].iter().all(|c| *c == "ok"),
        "raw passes the rest: {raw}"
    );
    assert!(
        text.contains("FAIL raw server: hello: no `server` header"),
        "{text}"
    );
    // null has no server: no row.
    assert!(!text.lines().any(|l| l.starts_with("null ")), "{text}");
}

/// go-fiber's version is the one peers/go/go.mod requires, read at compile time, so `list`
/// names it on a machine without Go. (The unit tests' build leaves the Go peers out:
/// src/frameworks/mod.rs.)
#[test]
fn list_names_fiber_from_go_mod_without_go() {
    if !REGISTRY.iter().any(|e| e.name == "go-fiber") {
        return;
    }
    let go_mod = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/peers/go/go.mod"))
        .expect("peers/go/go.mod");
    let want = go_mod
        .lines()
        .find_map(|l| l.trim().strip_prefix("github.com/gofiber/fiber/v2 v"))
        .expect("go.mod requires fiber v2");
    let out = Command::new(BIN)
        .arg("list")
        .env("FRAMEBENCH_GO", "/nonexistent/framebench-hidden-tool")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("go-fiber"))
        .unwrap_or_else(|| panic!("go-fiber missing from list: {text}"));
    assert!(line.contains(want.trim()), "{line} lacks {want}");
}

/// `quick-cell` (scripts/harness-agreement.sh's probe of the quick table's timer) prints one
/// positive time in ns per request, taken in the table's rounds; a bad name is one line, exit 2.
#[test]
fn quick_cell_prints_one_time_and_refuses_bad_names() {
    let out = run(&["quick-cell", "null", "hello"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let ns: f64 = text
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("not a time: {text}"));
    assert!(ns > 0.0 && ns < 1e7, "{ns}");
    assert_one_line_error(&run(&["quick-cell", "null", "nope"]), 2, "unknown scenario");
    assert_one_line_error(&run(&["quick-cell", "nope", "hello"]), 2, "nope");
}

/// The waiting scenario is loopback only: every command that times or counts one request at a
/// time refuses it by name in one line, exit 2, and `list` marks it.
#[test]
fn in_process_commands_refuse_delay_in_one_line() {
    let why = "delay is a loopback scenario only: a sleep per iteration means nothing in-process";
    for args in [
        &["time", "--scenarios", "delay"][..],
        &["time", "--loopback", "--scenarios", "delay"],
        &["allocs", "--scenarios", "delay"],
        &["profile", "null", "delay"],
        &["quick-cell", "null", "delay"],
        &["deltas", "--scenarios", "delay"],
    ] {
        assert_one_line_error(&run(args), 2, why);
    }
    let out = run(&["list"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("delay"))
        .unwrap_or_else(|| panic!("delay missing from list: {text}"));
    assert!(
        line.contains("GET /delay?ms=10") && line.contains("loopback only"),
        "{line}"
    );
}

/// `ab --patch` refuses what it cannot build before building anything: one line, exit 2, for a
/// path without a manifest, a crate its workspace does not hold, a crate of no framework, a
/// malformed `--patch` and the flags that need it. tests/ab_patch.rs builds the real thing.
#[test]
fn ab_patch_refuses_bad_input_in_one_line_before_building() {
    let dir = tempfile_dir("ab-patch-cli");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/lib.rs"), "").unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"not-a-framework\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    let at = |krate: &str, path: &std::path::Path| format!("{krate}={}", path.display());
    let cases = [
        (at("axum", &dir.join("src")), "no Cargo.toml there"),
        (
            at("axum", &dir),
            "is not the crate axum: its workspace holds not-a-framework",
        ),
        (
            at("not-a-framework", &dir),
            "is not the crate of a framework",
        ),
        ("axum".to_owned(), "expected CRATE=PATH"),
    ];
    for (patch, needle) in cases {
        let out = run(&["ab", "--patch", &patch]);
        assert_one_line_error(&out, 2, needle);
    }
    let out = run(&["ab", "--base", "HEAD"]);
    assert_one_line_error(&out, 2, "--patch");
    let out = run(&["ab", "old", "new", "--fail-if", "allocs>+0"]);
    assert_one_line_error(&out, 2, "--patch");
    let out = run(&["ab", "old", "new", "--patch", &at("axum", &dir)]);
    assert_one_line_error(&out, 2, "no OLD and NEW");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A folder of its own under the test target folder, empty.
fn tempfile_dir(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
