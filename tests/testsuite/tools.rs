//! The optional tools (`src/tools.rs`): without one, whatever needs it is skipped with one line
//! naming the tool and its install command, and the command still exits 0; a Go build runs
//! before any server starts, under its own bound, and leaves nothing half-written; and
//! `FRAMEBENCH_REQUIRE` turns a missing tool into a failure.
//!
//! Each test hides a tool from one child `framebench` with its `FRAMEBENCH_<TOOL>` variable (a
//! path that does not exist), so it runs the same way on a machine that has every tool (CI) and
//! on one that has none.

// The script and folder helpers serve the Go build tests only; without the `go` feature they
// are unused.
#![cfg_attr(not(feature = "go"), allow(dead_code, unused_imports))]

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use framebench::frameworks::REGISTRY;
use framebench::tools::{Tool, REQUIRE_ENV};

const BIN: &str = env!("CARGO_BIN_EXE_framebench");
const HIDDEN: &str = "/nonexistent/framebench-hidden-tool";

/// `framebench args` with `env` set, no `FRAMEBENCH_REQUIRE` unless `env` sets it.
fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args).env_remove(REQUIRE_ENV);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// A short `framebench load` (or `compare`) of one connection: `args` then the bounds.
fn short_load(args: &[&str], env: &[(&str, &str)]) -> Output {
    let bounds = ["-c", "1", "-d", "300ms", "--warmup", "0s", "--quiet"];
    run(&[args, &bounds[..]].concat(), env)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// How many lines of `text` contain `needle`.
fn lines_with(text: &str, needle: &str) -> usize {
    text.lines().filter(|l| l.contains(needle)).count()
}

/// A fresh folder under the system temp dir.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fb-tools-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes an executable shell script.
fn script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Files left in `dir` other than the lock and the finished binaries.
fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != ".lock" && n != "nethttp" && n != "fiber")
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn required_tools_are_present() {
    framebench::tools::check_required().unwrap_or_else(|e| panic!("{e}"));
    let mut skipped = Vec::new();
    for tool in Tool::ALL {
        match tool.path() {
            Ok(_) => {}
            Err(why) => skipped.push(why),
        }
    }
    // The list a run without every tool skips, in the test output (cargo test --nocapture).
    for why in &skipped {
        eprintln!("this machine skips: {why}");
    }
    if Tool::Go.required() {
        // Each Go peer builds its own program when asked whether it is available.
        for entry in REGISTRY.iter().filter(|e| e.tool == Some(Tool::Go)) {
            entry
                .available()
                .unwrap_or_else(|e| panic!("{}: {e}", entry.name));
        }
    }
    if Tool::Redis.required() {
        framebench::redis::RedisServer::start().unwrap_or_else(|e| panic!("{e:#}"));
    }
}

#[test]
fn require_names_a_missing_tool_and_fails() {
    let out = run(
        &["check", "null"],
        &[("FRAMEBENCH_REDIS_SERVER", HIDDEN), (REQUIRE_ENV, "redis")],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("FRAMEBENCH_REQUIRE") && err.contains("apt-get install redis-server"));
    let out = run(&["check", "null"], &[(REQUIRE_ENV, "redis,bogus")]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("unknown tool \"bogus\""),
        "{}",
        stderr(&out)
    );
}

#[test]
fn missing_redis_skips_the_scenario_once_and_passes() {
    let env = [("FRAMEBENCH_REDIS_SERVER", HIDDEN)];
    // The baselines and one framework that asks Redis, whichever features are built.
    let mut names = vec!["null", "raw"];
    names.extend(
        framebench::frameworks::REGISTRY
            .iter()
            .find(|e| e.in_process && e.tool.is_none() && !e.baseline)
            .map(|e| e.name),
    );
    let out = run(&[&["check"], names.as_slice()].concat(), &env);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(lines_with(&err, "redis"), 1, "{err}");
    assert!(
        err.contains("skipping the redis scenario: redis-server not found")
            && err.contains("`apt-get install redis-server`"),
        "{err}"
    );
    let out = short_load(
        &["load", "--target", "raw", "--scenario", "redis,hello"],
        &env,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(lines_with(&err, "redis"), 1, "{err}");
}

#[test]
fn serve_says_nothing_about_redis() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = run(
        &["serve", "raw", "--addr", &addr],
        &[("FRAMEBENCH_REDIS_SERVER", HIDDEN)],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("cannot bind") && !err.contains("redis"),
        "{err}"
    );
}

#[cfg(feature = "go")]
#[test]
fn missing_go_skips_the_peers_and_passes() {
    let bin_dir = temp_dir("nogo");
    let bin_dir_str = bin_dir.to_str().unwrap();
    let env = [
        ("FRAMEBENCH_GO", HIDDEN),
        ("FRAMEBENCH_GO_PEERS_DIR", bin_dir_str),
    ];
    let out = short_load(
        &[
            "compare",
            "--frameworks",
            "go-nethttp,go-fiber,raw",
            "--scenarios",
            "hello",
        ],
        &env,
    );
    let err = stderr(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{err}\n{text}");
    assert_eq!(lines_with(&err, "go"), 1, "one line for both peers: {err}");
    assert!(err.contains("skipping the Go peers") && err.contains("go not found"));
    assert!(!text.contains("ERROR"), "{text}");
    assert!(lines_with(&text, "skip") >= 2, "{text}");
    let out = run(&["check", "go-nethttp"], &env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&bin_dir);
}

#[cfg(feature = "go")]
#[test]
fn failing_go_build_skips_the_peers_and_leaves_nothing() {
    let dir = temp_dir("badgo");
    let fake = dir.join("go");
    // A `go` that reports a version and fails every build, after writing a partial output.
    script(
        &fake,
        r#"case "$1" in
  env) echo go1.99-fake ;;
  build) echo half > "$3"; echo "fake compiler error: no room" >&2; exit 1 ;;
  *) exit 2 ;;
esac"#,
    );
    let bin_dir = dir.join("peers");
    let env = [
        ("FRAMEBENCH_GO", fake.to_str().unwrap()),
        ("FRAMEBENCH_GO_PEERS_DIR", bin_dir.to_str().unwrap()),
    ];
    let out = short_load(&["load", "--target", "go-fiber"], &env);
    let err = stderr(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{err}\n{text}");
    assert_eq!(lines_with(&err, "go build failed"), 1, "{err}");
    assert!(err.contains("fake compiler error") && err.contains("the Go peers are skipped"));
    assert!(text.contains("skip") && !text.contains("ERROR"), "{text}");
    assert_eq!(leftovers(&bin_dir), Vec::<String>::new());
    // Required, the same failure is an error.
    let mut env = env.to_vec();
    env.push((REQUIRE_ENV, "go"));
    let out = run(&["check", "go-fiber"], &env);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("FRAMEBENCH_REQUIRE requires go: go build failed"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A first build slower than the driver's server start-up timeout (20 s): the build runs before
/// any server starts, so the cell is measured, not an `ERROR`.
#[cfg(feature = "go")]
#[test]
fn slow_go_build_is_not_killed_by_a_startup_timeout() {
    let Ok(real_go) = Tool::Go.path() else {
        Tool::Go.skip();
        return;
    };
    let dir = temp_dir("slowgo");
    let fake = dir.join("go");
    let mark = dir.join("slept");
    script(
        &fake,
        &format!(
            r#"if [ "$1" = build ] && [ ! -e '{mark}' ]; then touch '{mark}'; sleep 21; fi
exec '{go}' "$@""#,
            mark = mark.display(),
            go = real_go.display()
        ),
    );
    let bin_dir = dir.join("peers");
    let out = short_load(
        &["load", "--target", "go-nethttp"],
        &[
            ("FRAMEBENCH_GO", fake.to_str().unwrap()),
            ("FRAMEBENCH_GO_PEERS_DIR", bin_dir.to_str().unwrap()),
        ],
    );
    let err = stderr(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{err}\n{text}");
    assert!(mark.exists(), "the fake go never built");
    assert_eq!(
        lines_with(&err, "building the Go peer ./cmd/nethttp"),
        1,
        "{err}"
    );
    assert!(!text.contains("ERROR") && !text.contains("skip"), "{text}");
    assert!(bin_dir.join("nethttp").exists());
    assert_eq!(leftovers(&bin_dir), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(&dir);
}
