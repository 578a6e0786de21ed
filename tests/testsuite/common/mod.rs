//! What the tests of the `framebench` binary share: running it, and checking that a refusal is
//! one line with the right exit code; and [`plant`], the report's planted sources.

pub(crate) mod plant;

use std::process::{Command, Output};

/// The `framebench` binary cargo built for the tests.
pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_framebench");

/// Runs `framebench` with `args` to the end.
pub(crate) fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

/// Asserts a failed run printed exactly one line on stderr, no panic, and exited with `code`.
pub(crate) fn assert_one_line_error(out: &Output, code: i32, needle: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "stderr: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "want one line, got: {stderr:?}");
    assert!(stderr.contains(needle), "{stderr:?} lacks {needle:?}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
