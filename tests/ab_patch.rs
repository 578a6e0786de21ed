//! `framebench ab --patch` from end to end, with a real framework: a binary of its own because
//! it builds framebench three times in a scratch folder (minutes of both cores), which would
//! disturb any test that measures beside it. For the same reason `cargo test --release` leaves
//! it out (`#[ignore]`, so a new user's first test run is not minutes longer); CI runs it once,
//! `cargo test --release --test ab_patch -- --ignored`, with every tool installed.
//!
//! The checkout is axum's pinned source, copied from the cargo registry into a git repository
//! the test makes, its version set to one the pin does not accept. The first commit is that
//! copy; the second plants one heap allocation in `Router::call_with_state`, which every
//! in-process request takes. The runs share one scratch folder, as an author's runs do:
//! - the copy as it is against the pinned release: exit 0, every count unchanged;
//! - the planted allocation against the release: exit 1, +1 allocation per request on hello;
//! - `--base HEAD~1`, the two commits against each other, through the GitHub Action's script
//!   (scripts/ab-patch-action.sh): exit 1, +1 allocation, the Markdown in the job summary;
//! - bad input, one line and exit 2 each, the repository left as it was.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

const FRAMEBENCH: &str = env!("CARGO_BIN_EXE_framebench");
/// The crate patched, at framebench's pin.
const PINNED: &str = "axum-0.8.9";
/// The version the copy declares: not `=0.8.9`, so a plain `[patch]` would be ignored.
const VERSION: &str = "0.8.99";
/// The line of axum's router that every request runs, and the allocation planted after it.
const HOOK: &str =
    "pub(crate) fn call_with_state(&self, req: Request, state: S) -> RouteFuture<Infallible> {";
const PLANT: &str = "        std::hint::black_box(Box::new(0u64));";

/// The pinned source in cargo's registry (every build of framebench downloads it).
fn registry_copy() -> PathBuf {
    let home = std::env::var_os("CARGO_HOME").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cargo"),
        PathBuf::from,
    );
    let src = home.join("registry/src");
    std::fs::read_dir(&src)
        .unwrap_or_else(|e| panic!("{}: {e}", src.display()))
        .filter_map(Result::ok)
        .map(|d| d.path().join(PINNED))
        .find(|p| p.is_dir())
        .unwrap_or_else(|| panic!("{PINNED} is not in {}", src.display()))
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// The checkout: the copy with its version changed (commit 1), then the planted allocation
/// (commit 2, the working tree as the test leaves it).
fn checkout(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    copy_dir(&registry_copy(), dir);
    let manifest = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let text = text.replacen(
        "version = \"0.8.9\"",
        &format!("version = \"{VERSION}\""),
        1,
    );
    std::fs::write(&manifest, text).unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "axum 0.8.9, renumbered"]);
}

fn plant(dir: &Path, line: &str) {
    let file = dir.join("src/routing/mod.rs");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains(HOOK),
        "axum's router changed: {HOOK} not found"
    );
    std::fs::write(&file, text.replacen(HOOK, &format!("{HOOK}\n{line}"), 1)).unwrap();
}

fn ab(scratch: &Path, args: &[&str]) -> Output {
    let started = Instant::now();
    let out = Command::new(FRAMEBENCH)
        .arg("ab")
        .args(args)
        .arg("--scratch")
        .arg(scratch)
        .output()
        .unwrap();
    show(&format!("ab {}", args.join(" ")), &out, started);
    out
}

/// Prints what a run printed, under one line: what ran, its exit code and how long it took.
fn show(what: &str, out: &Output, started: Instant) {
    eprintln!(
        "{what} → {:?} in {:.0} s\n{}{}",
        out.status.code(),
        started.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The report's row of `metric` for hello: its change column.
fn change(out: &Output, metric: &str) -> String {
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text
        .lines()
        .find(|l| l.contains(" hello log=off ") && l.split_whitespace().any(|w| w == metric))
        .unwrap_or_else(|| panic!("no hello {metric} row in:\n{text}"));
    row.rsplit("  ").next().unwrap().trim().to_owned()
}

fn one_line_error(out: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let last = err.lines().last().unwrap_or("");
    assert!(
        last.starts_with("error: ") && last.contains(needle),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
#[ignore = "builds framebench three times, minutes of both cores: CI runs it once, with --ignored"]
fn an_authors_planted_allocation_is_found_against_the_release_and_against_its_base() {
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let scratch = target.join("ab-patch");
    let repo = target.join("ab-patch-axum");
    checkout(&repo);
    let patch = format!("axum={}", repo.display());
    let common = ["--scenarios", "hello", "--restarts", "6", "--rounds", "2"];
    let started = Instant::now();

    // The copy as it is: the same source as the release, so every count is unchanged.
    let mut args = vec!["--patch", &patch, "--fail-if", "allocs>+0,bytes>+0"];
    args.extend(common);
    args.extend(["--loopback-rounds", "0"]);
    let json = target.join("ab-patch.json");
    let json_arg = json.to_string_lossy().into_owned();
    args.extend(["--json", &json_arg]);
    let same = ab(&scratch, &args);
    assert_eq!(same.status.code(), Some(0));
    assert_eq!(change(&same, "allocs"), "0");
    assert_eq!(change(&same, "bytes"), "0");
    let text = String::from_utf8_lossy(&same.stdout);
    assert!(
        text.contains("measuring axum: the checkout's axum is 0.8.99"),
        "{text}"
    );
    assert!(text.contains("no gate crossed"), "{text}");
    assert!(text.contains("lock: nothing else moved"), "{text}");
    // Its results file is one diff reads, both sides in one file.
    let diff = Command::new(FRAMEBENCH)
        .arg("diff")
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        diff.status.success(),
        "{}",
        String::from_utf8_lossy(&diff.stderr)
    );

    // One allocation planted and committed.
    plant(&repo, PLANT);
    git(
        &repo,
        &["commit", "-q", "-am", "one allocation more per request"],
    );
    let mut args = vec!["--patch", &patch, "--fail-if", "allocs>+0"];
    args.extend(common);
    args.extend(["--loopback-rounds", "6"]);
    let more = ab(&scratch, &args);
    assert_eq!(more.status.code(), Some(1));
    assert!(
        change(&more, "allocs").starts_with("+1 ("),
        "{}",
        change(&more, "allocs")
    );
    let text = String::from_utf8_lossy(&more.stdout);
    assert!(
        text.contains("crossed a gate") && text.contains("axum hello log=off allocs: +1"),
        "{text}"
    );
    assert!(text.contains(" rps "), "no loopback rate: {text}");

    // Where the instructions went: `profile --callgrind --patch`, on the same two builds.
    match framebench::tools::Tool::Valgrind.path() {
        Ok(_) => {
            let out = Command::new(FRAMEBENCH)
                .args(["profile", "axum", "hello", "--callgrind", "--patch", &patch])
                .arg("--scratch")
                .arg(&scratch)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let row = text
                .lines()
                .find(|l| l.contains("Router<S>::call_with_state"))
                .unwrap_or_else(|| panic!("the router's function is not listed: {text}"));
            assert!(row.trim_start().starts_with('+'), "{row}");
            assert!(text.lines().any(|l| l.contains("malloc")), "{text}");
        }
        Err(why) => eprintln!("skipping profile --callgrind --patch: {why}"),
    }

    // The pull-request case, through the GitHub Action's script: the commit before against the
    // checkout, the Markdown appended to the job summary.
    let summary = target.join("ab-patch-summary.md");
    let _ = std::fs::remove_file(&summary);
    let started_base = Instant::now();
    let base = Command::new("bash")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/ab-patch-action.sh"
        ))
        .env("CRATE", "axum")
        .env("CHECKOUT", &repo)
        .env("BASE", "HEAD~1")
        .env("SCENARIOS", "hello")
        .env("FRAMEBENCH_BIN", FRAMEBENCH)
        .env("SCRATCH", &scratch)
        .env("SUMMARY", &summary)
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    show("scripts/ab-patch-action.sh", &base, started_base);
    assert_eq!(base.status.code(), Some(1));
    assert!(change(&base, "allocs").starts_with("+1 ("));
    let text = String::from_utf8_lossy(&base.stdout);
    assert!(text.contains("base: axum 0.8.99 at HEAD~1"), "{text}");
    let markdown = std::fs::read_to_string(&summary).unwrap();
    assert!(
        markdown.starts_with("### framebench ab --patch axum=")
            && markdown.contains("--base HEAD~1"),
        "{markdown}"
    );
    assert!(
        markdown.contains("| allocs") && markdown.contains("crossed a gate"),
        "{markdown}"
    );
    eprintln!(
        "the three runs took {:.0} s",
        started.elapsed().as_secs_f64()
    );

    // Bad input: one line, exit 2, and the user's repository as it was.
    let status = git(&repo, &["status", "--porcelain"]);
    one_line_error(
        &ab(
            &scratch,
            &["--patch", &format!("axum={}/src", repo.display())],
        ),
        "no Cargo.toml there",
    );
    one_line_error(
        &ab(&scratch, &["--patch", &format!("tokio={}", repo.display())]),
        "is not the crate tokio",
    );
    one_line_error(
        &ab(&scratch, &["--patch", &patch, "--base", "no-such-rev"]),
        "not a revision",
    );
    // A crate of no framework.
    let other = target.join("ab-patch-other");
    let _ = std::fs::remove_dir_all(&other);
    std::fs::create_dir_all(other.join("src")).unwrap();
    std::fs::write(other.join("src/lib.rs"), "").unwrap();
    std::fs::write(
        other.join("Cargo.toml"),
        "[package]\nname = \"no-framework\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    one_line_error(
        &ab(
            &scratch,
            &["--patch", &format!("no-framework={}", other.display())],
        ),
        "is not the crate of a framework",
    );
    // A checkout that does not compile.
    plant(&repo, "        this does not compile;");
    one_line_error(
        &ab(&scratch, &["--patch", &patch, "--scenarios", "hello"]),
        "the new build does not compile",
    );
    git(&repo, &["checkout", "-q", "--", "."]);
    assert_eq!(git(&repo, &["status", "--porcelain"]), status);
    assert_eq!(
        git(&repo, &["worktree", "list"]).lines().count(),
        1,
        "a worktree was left"
    );
}
