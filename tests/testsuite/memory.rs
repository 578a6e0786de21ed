//! `framebench memory`: the heap bytes per idle connection repeat to the byte over two runs of
//! one build, a planted 4 KiB per connection shows up as +4,096 B and crosses `diff`'s gate, a
//! Go peer gets the kernel's figures only, and bad flags are refused in one line.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{assert_one_line_error, run, BIN};

fn scratch(name: &str) -> PathBuf {
    let dir = framebench::results::target_dir()
        .join("tmp/memory")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `framebench memory ARGS --json FILE`, with `env` set; the output, and the file read.
fn memory(args: &[&str], env: &[(&str, &str)], json: &Path) -> (Output, serde_json::Value) {
    let out = Command::new(BIN)
        .arg("memory")
        .args(args)
        .arg("--json")
        .arg(json)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let text = std::fs::read_to_string(json).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out, serde_json::from_str(&text).unwrap())
}

/// The figure of `framework` with `metric` and `variant`, if written.
fn figure(file: &serde_json::Value, framework: &str, metric: &str, variant: &str) -> Option<f64> {
    file["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["framework"] == framework && f["metric"] == metric && f["variant"] == variant)
        .map(|f| f["value"].as_f64().unwrap())
}

#[test]
fn heap_per_connection_repeats_and_a_planted_4_kib_shows_as_4096_bytes() {
    let dir = scratch("planted");
    let args = [
        "--frameworks",
        "raw,axum",
        "--connections",
        "200,400",
        "--bodies",
        "none",
        "--runs",
        "2",
    ];
    let (out, base) = memory(&args, &[], &dir.join("base.json"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Both runs agreed to the byte, or no exact figure would be written.
    for fw in ["raw", "axum"] {
        for variant in ["c200", "c400", "idle"] {
            let heap = figure(&base, fw, "heap_bytes_per_conn", variant);
            assert!(heap.is_some_and(|h| h > 0.0), "{fw} {variant}: {stdout}");
            assert!(figure(&base, fw, "rss_bytes_per_conn", variant).is_some());
        }
    }
    assert!(stdout.contains("(exact)"), "{stdout}");
    let (out, planted) = memory(
        &args,
        &[("FRAMEBENCH_RAW_PLANT", "4096")],
        &dir.join("planted.json"),
    );
    assert!(out.status.success());
    for variant in ["c200", "c400", "idle"] {
        let was = figure(&base, "raw", "heap_bytes_per_conn", variant).unwrap();
        let is = figure(&planted, "raw", "heap_bytes_per_conn", variant).unwrap();
        assert_eq!(is - was, 4096.0, "raw {variant}: {was} → {is}");
    }
    // diff gates on it: exact, so +4,096 B crosses `>+0` and nothing else moved in axum.
    let gate = run(&[
        "diff",
        dir.join("base.json").to_str().unwrap(),
        dir.join("planted.json").to_str().unwrap(),
        "--fail-if",
        "heap_bytes_per_conn>+0",
    ]);
    let text = String::from_utf8_lossy(&gate.stdout);
    assert_eq!(gate.status.code(), Some(1), "{text}");
    assert!(text.contains("+4,096"), "{text}");
}

#[test]
fn a_go_peer_gets_the_kernels_figures_only_and_a_refused_body_is_not_a_failure() {
    let dir = scratch("go");
    let (out, file) = memory(
        &[
            "--frameworks",
            "go-nethttp,actix",
            "--connections",
            "100",
            "--bodies",
            "1MiB",
            "--body-connections",
            "10",
            "--runs",
            "1",
        ],
        &[],
        &dir.join("go.json"),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    // actix's default payload limit is 256 KiB: the 1 MiB body is refused, shown as `–`.
    assert!(
        stdout.contains("– actix c10 body=1MiB: refuses a 1MiB body"),
        "{stdout}"
    );
    if stdout.contains("skip go-nethttp") || stderr.contains("skip") && stderr.contains("go") {
        eprintln!("go is not installed: the Go peer's half is skipped");
        return;
    }
    assert_eq!(
        figure(&file, "go-nethttp", "heap_bytes_per_conn", "c100"),
        None
    );
    assert!(figure(&file, "go-nethttp", "rss_bytes_per_conn", "c100").is_some_and(|r| r > 0.0));
}

#[test]
fn bad_memory_flags_and_an_rss_gate_are_refused_in_one_line() {
    for (args, needle) in [
        (
            &["memory", "--bodies", "1MB"][..],
            "a size is bytes, KiB or MiB",
        ),
        (&["memory", "--connections", "0"][..], "--connections"),
        (
            &["memory", "--frameworks", "nope"][..],
            "unknown framework 'nope'",
        ),
        (&["memory", "--frameworks", "null"][..], "has no server"),
        (
            &[
                "diff",
                "a.json",
                "b.json",
                "--fail-if",
                "rss_bytes_per_conn>+0",
            ][..],
            "gate on heap_bytes_per_conn",
        ),
    ] {
        assert_one_line_error(&run(args), 2, needle);
    }
}
