//! Past one machine: `serve` and `load` refuse non-loopback addresses unless told
//! (`--allow-remote`), `load --shard --hdr-log` results merge exactly (`framebench merge`) and a
//! merge of two different runs is refused in one line, and the network-namespace test
//! (`scripts/hosts-netns.sh`: a server host and two client hosts on one machine).

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_framebench");

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `framebench serve hyper ARGS`, and its first line (`listening on URL`).
fn serve(args: &[&str]) -> (std::process::Child, String) {
    let mut child = Command::new(BIN)
        .args(["serve", "hyper"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, line)
}

#[test]
fn serve_and_load_refuse_other_hosts_without_allow_remote() {
    let out = run(&["serve", "hyper", "--addr", "0.0.0.0:0"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--allow-remote"), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    let out = run(&["load", "--target", "http://10.0.0.1:80", "--quiet"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("loopback"), "{}", stderr(&out));
}

#[test]
fn serve_with_allow_remote_warns_and_binds_every_address() {
    let (mut child, line) = serve(&["--addr", "0.0.0.0:0", "--allow-remote"]);
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    assert!(line.starts_with("listening on http://0.0.0.0:"), "{line}");
    assert!(
        stderr(&out).contains("warning: serving on 0.0.0.0"),
        "{}",
        stderr(&out)
    );
}

/// Two shards of one load on loopback, against one server with `--stats`: the merge's count is
/// the server's, its p99 comes from the added histograms, and a third file of another run is
/// refused.
#[test]
fn shards_merge_into_the_servers_count_and_foreign_files_are_refused() {
    let _measuring = crate::common::measuring();
    let dir = std::env::temp_dir().join(format!("framebench-hosts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).display().to_string();
    let stats = path("server.json");
    let (mut server, line) = serve(&["--stats", &stats]);
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_owned();
    let start_at = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 2)
    .to_string();
    let shard = |k: u32| {
        let (hdr, json) = (path(&format!("{k}.hdr")), path(&format!("{k}.json")));
        let shard = format!("{k}/2");
        let args = [
            "load",
            "--target",
            &url,
            "--shard",
            &shard,
            "-c",
            "4",
            "--requests",
            "6001",
            "--start-at",
            &start_at,
            "--hdr-log",
            &hdr,
            "--hdr-interval",
            "100ms",
            "--json",
            &json,
            "--quiet",
        ];
        Command::new(BIN).args(args).spawn().unwrap()
    };
    let (mut a, mut b) = (shard(1), shard(2));
    assert!(a.wait().unwrap().success());
    assert!(b.wait().unwrap().success());
    // SIGTERM: `serve` writes its statistics as it stops.
    let _ = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status();
    assert!(server.wait().unwrap().success());
    let merged = path("merged.json");
    let (one, two) = (path("1.json"), path("2.json"));
    let (svg, md) = (path("merged.svg"), path("merged.md"));
    let out = run(&[
        "merge",
        &one,
        &two,
        "--json",
        &merged,
        "--server-stats",
        &stats,
        "--plot",
        &svg,
        "--markdown",
        &md,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The plot and the tables of `load` draw it unchanged.
    assert!(std::fs::read_to_string(&svg)
        .unwrap()
        .contains("requests per second"));
    assert!(std::fs::read_to_string(&md)
        .unwrap()
        .contains("| 4 conns |"));
    let read = |p: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let cell = &read(&merged)["detail"]["cells"][0];
    let server_count = read(&stats)["requests"].as_u64().unwrap();
    let count = |k: &str| cell[k].as_u64().unwrap();
    // 6001 split 3001 + 3000; the server also answered each shard's oracle check.
    assert_eq!(count("requests"), 6001, "{cell}");
    assert_eq!(
        server_count,
        count("requests") + count("unrecorded") + count("prechecked"),
        "{cell}"
    );
    assert_eq!(count("connections"), 4);
    // The merged rate is over the window both shards recorded (the latest start to the
    // earliest end), not the sum of their own rates: on two cores one shard often finishes
    // well before the other, and then each one's own window differs from the common one. So
    // here: the common window is within each shard's, and the requests in it are at most all
    // of them. The sum over the common window is checked against an independent reader of the
    // logs (Python's hdrh) by `scripts/hosts-netns.sh`, within 1 %.
    let (rps, seconds) = (
        cell["rps"].as_f64().unwrap(),
        cell["seconds"].as_f64().unwrap(),
    );
    for p in [&one, &two] {
        let own = read(p)["detail"]["cells"][0]["seconds"].as_f64().unwrap();
        assert!(
            seconds > 0.0 && seconds <= own + 1e-6,
            "{seconds} s vs {own} s"
        );
    }
    assert!(
        rps > 0.0 && rps * seconds <= 6001.0 * 1.001,
        "{rps} req/s over {seconds} s"
    );
    assert!(cell["latency"]["p99_us"].as_f64().unwrap() > 0.0);
    // The merged result goes through `diff` as any load result does.
    let out = run(&["diff", &one, &merged]);
    assert!(out.status.success(), "{}", stderr(&out));
    // A shard twice, and a result of another run, are refused in one line.
    let out = run(&["merge", &one, &one]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("twice"), "{}", stderr(&out));
    let other = path("other.json");
    let hdr = path("other.hdr");
    let out = run(&[
        "load",
        "--target",
        &url,
        "-c",
        "2",
        "--requests",
        "10",
        "--hdr-log",
        &hdr,
        "--json",
        &other,
        "--quiet",
    ]);
    // The server is gone: this run fails its cell, and its file is still a result.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let out = run(&["merge", &one, &other]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("not one run"), "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `scripts/hosts-netns.sh`: a server namespace and two client namespaces joined by veth
/// pairs. Skipped with one line where namespaces cannot be made (not root); required where
/// `FRAMEBENCH_REQUIRE` names `netns` or `all` (CI runs as root and requires it).
#[test]
fn two_client_hosts_merge_exactly_in_network_namespaces() {
    let _measuring = crate::common::measuring();
    let out = Command::new("bash")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/hosts-netns.sh"
        ))
        .env("FRAMEBENCH", BIN)
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    let required = std::env::var("FRAMEBENCH_REQUIRE")
        .is_ok_and(|r| r.split(',').any(|t| t == "netns" || t == "all"));
    match out.status.code() {
        Some(0) => assert!(text.contains("merged exactly"), "{text}"),
        Some(77) if !required => eprintln!("{}", text.trim()),
        _ => panic!("the namespace test failed:\n{text}"),
    }
}
