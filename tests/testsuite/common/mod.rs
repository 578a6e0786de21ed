//! What the tests of the `framebench` binary share: running it, and checking that a refusal is
//! one line with the right exit code; and [`plant`], the report's planted sources.

pub(crate) mod plant;

use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

/// The `framebench` binary cargo built for the tests.
pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_framebench");

/// Runs `framebench` with `args` to the end.
pub(crate) fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

/// One short load (one connection, 200 ms, no warm-up) of `scenario` against a server of the
/// test's own at `addr`: whether it succeeded, and all it printed.
pub(crate) fn load_url(addr: std::net::SocketAddr, scenario: &str) -> (bool, String) {
    let out = run(&[
        "load",
        "--target",
        &format!("http://{addr}"),
        "--scenario",
        scenario,
        "-c",
        "1",
        "-d",
        "200ms",
        "--warmup",
        "0s",
        "--quiet",
    ]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Asserts a failed run printed exactly one line on stderr, no panic, and exited with `code`.
pub(crate) fn assert_one_line_error(out: &Output, code: i32, needle: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "stderr: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "want one line, got: {stderr:?}");
    assert!(stderr.contains(needle), "{stderr:?} lacks {needle:?}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Held by each test whose assertions read a measured rate or interval (a rate held within a
/// few percent, shards' rates that add up, an interval around its median), so that no other
/// such test loads the machine's cores meanwhile: the suite is one binary, whose tests run in
/// parallel threads, where the 21 binaries before it ran one after another. The others run
/// beside them as before.
pub(crate) fn measuring() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    // A test that failed while holding it leaves it poisoned; the next one still measures.
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
