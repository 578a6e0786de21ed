//! `framebench profile --flamegraph`: an SVG whose frames name the framework's code, in-process
//! and over loopback, and one-line errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use framebench::frameworks;
use framebench::tools::REQUIRE_ENV;

const BIN: &str = env!("CARGO_BIN_EXE_framebench");

/// `framebench args`, without `FRAMEBENCH_REQUIRE`.
fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env_remove(REQUIRE_ENV)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn assert_usage_error(out: &Output, needle: &str) {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "want one line: {stderr:?}");
    assert!(stderr.contains(needle), "{stderr:?} lacks {needle:?}");
}

/// A fresh folder under the system temp dir.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fb-profile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The `<title>` texts of an SVG file, which must parse as XML with `<svg>` at its root.
fn svg_titles(path: &Path) -> Vec<String> {
    let svg = std::fs::read_to_string(path).unwrap();
    // inferno's SVG declares the SVG 1.1 DTD, which roxmltree refuses unless allowed.
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(&svg, options)
        .unwrap_or_else(|e| panic!("{}: not XML: {e}", path.display()));
    assert_eq!(
        doc.root_element().tag_name().name(),
        "svg",
        "{}",
        path.display()
    );
    doc.descendants()
        .filter(|n| n.has_tag_name("title"))
        .filter_map(|n| n.text())
        .map(str::to_owned)
        .collect()
}

/// Runs `profile FRAMEWORK hello --flamegraph` with `extra` arguments and returns the titles of
/// the graph's frames.
fn flamegraph(framework: &str, extra: &[&str]) -> Vec<String> {
    let dir = temp_dir(&format!("flame-{framework}"));
    let svg = dir.join("f.svg");
    let svg_arg = svg.to_str().unwrap();
    let out = run(&[
        &["profile", framework, "hello", "--flamegraph", svg_arg][..],
        extra,
    ]
    .concat());
    assert!(out.status.success(), "{out:?}");
    let stdout = text(&out.stdout);
    assert!(stdout.contains(&format!("wrote {svg_arg} (")), "{stdout}");
    let titles = svg_titles(&svg);
    let _ = std::fs::remove_dir_all(&dir);
    titles
}

#[test]
fn flamegraph_names_the_frameworks_frames() {
    // In-process: the framework's own functions, demangled. `null` is framebench's code.
    let (framework, path) = if frameworks::find("axum").is_some() {
        ("axum", "axum::")
    } else {
        ("null", "framebench::frameworks::null::")
    };
    let titles = flamegraph(framework, &["--seconds", "1"]);
    assert!(
        titles.iter().any(|t| t.contains(path)),
        "no frame of {path} in {} frames: {:?}",
        titles.len(),
        &titles[..titles.len().min(20)]
    );
    // Over loopback the server's threads are sampled too: hyper's HTTP/1 codec, which serves
    // axum and hyper.
    if let Some(framework) = ["axum", "hyper"]
        .into_iter()
        .find(|f| frameworks::find(f).is_some())
    {
        let titles = flamegraph(framework, &["--mode", "loopback", "--seconds", "2"]);
        assert!(
            titles.iter().any(|t| t.contains("hyper::proto::h1")),
            "no frame of hyper::proto::h1 in {} frames",
            titles.len()
        );
    }
}

#[test]
fn flamegraph_rejects_bad_input() {
    assert_usage_error(
        &run(&["profile", "raw", "hello", "--flamegraph", "/tmp/x.svg"]),
        "loopback only",
    );
    // A folder that cannot be made: one line, exit 1, no panic.
    let out = run(&[
        "profile",
        "null",
        "hello",
        "--seconds",
        "1",
        "--flamegraph",
        "/proc/framebench/f.svg",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: creating /proc/framebench"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
