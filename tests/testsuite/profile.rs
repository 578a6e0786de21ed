//! `framebench profile --flamegraph` (an SVG whose frames name the framework's code, in-process
//! and over loopback) and `framebench profile --callgrind` (skipped with one install line
//! without valgrind; with it, a callgrind.out file and a positive count per request), and their
//! one-line usage errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use framebench::frameworks;
use framebench::tools::{Tool, REQUIRE_ENV};

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
fn callgrind_without_valgrind_says_how_to_install_it_and_exits_0() {
    // A PATH with no valgrind on it, and no override.
    let empty = temp_dir("no-valgrind");
    let out = Command::new(BIN)
        .args(["profile", "null", "hello", "--callgrind"])
        .env("PATH", &empty)
        .env_remove(Tool::Valgrind.env_var())
        .env_remove(REQUIRE_ENV)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&empty);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let install = stderr
        .lines()
        .filter(|l| l.contains("apt-get install valgrind"))
        .count();
    assert_eq!(install, 1, "{stderr}");
    assert!(
        stderr.contains("skipping") && stderr.contains("valgrind not found"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
}

/// The figure of a headline `… N instructions per request (…`.
fn per_request(line: &str) -> f64 {
    let before = line.split(" instructions per request").next().unwrap();
    let figure = before.rsplit(' ').next().unwrap();
    figure
        .replace(',', "")
        .parse()
        .unwrap_or_else(|e| panic!("{line}: {e}"))
}

#[test]
fn callgrind_counts_a_cell_and_its_difference() {
    let Ok(_) = Tool::Valgrind.path() else {
        Tool::Valgrind.skip();
        return;
    };
    // Few dispatches: valgrind starts the process slowly, the dispatches themselves are quick.
    let out = run(&["profile", "null", "hello", "--callgrind", "--requests", "3"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    let headline = stdout.lines().next().unwrap();
    assert!(
        headline.starts_with("null hello log=off,io=memory: "),
        "{stdout}"
    );
    let count = per_request(headline);
    assert!(count > 0.0, "{headline}");
    let file = stdout
        .lines()
        .find_map(|l| l.strip_prefix("wrote "))
        .and_then(|l| l.split(" (").next())
        .unwrap_or_else(|| panic!("no file named: {stdout}"));
    let name = Path::new(file).file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with("callgrind.out."), "{file}");
    let written = std::fs::read_to_string(file).unwrap();
    assert!(written.starts_with("# callgrind format\n"), "{file}");
    assert!(written.lines().any(|l| l == "events: Ir"), "{file}");
    // The counted function heads the table with every counted instruction.
    let first_row = stdout.lines().nth(3).unwrap();
    assert!(
        first_row.ends_with("framebench::bench::callgrind::count"),
        "{stdout}"
    );

    // Against itself: every function's difference is about zero, and the total is the
    // difference of the two headlines.
    let out = run(&[
        "profile",
        "null",
        "hello",
        "--callgrind",
        "--requests",
        "3",
        "--against",
        "null",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    let total = stdout
        .lines()
        .find(|l| l.contains("total: null "))
        .unwrap_or_else(|| panic!("no total line: {stdout}"));
    let figure: f64 = total
        .split_whitespace()
        .next()
        .unwrap()
        .replace(['+', ','], "")
        .replace('−', "-")
        .parse()
        .unwrap();
    assert!(figure.abs() <= count * 0.01, "{stdout}");
}

#[test]
fn callgrind_and_flamegraph_reject_bad_input() {
    // Checked before valgrind is looked for, so these hold on any machine. `profile` and the
    // cell come first, then what is asked of it.
    let cases: &[(&str, &str, &[&str], &str)] = &[
        ("nosuch", "hello", &["--callgrind"], "unknown framework"),
        ("null", "nosuch", &["--callgrind"], "unknown scenario"),
        ("raw", "hello", &["--callgrind"], "loopback only"),
        (
            "null",
            "hello",
            &["--callgrind", "--against", "nosuch"],
            "unknown framework",
        ),
        (
            "null",
            "hello",
            &["--callgrind", "--against", "raw"],
            "loopback only",
        ),
        ("null", "hello", &["--against", "null"], "--callgrind"),
        (
            "raw",
            "hello",
            &["--flamegraph", "/tmp/x.svg"],
            "loopback only",
        ),
    ];
    for (framework, scenario, extra, needle) in cases {
        let args = [&["profile", framework, scenario][..], extra].concat();
        assert_usage_error(&run(&args), needle);
    }
    if let Some(e) = frameworks::REGISTRY
        .iter()
        .find(|e| e.in_process && e.loopback)
    {
        let args = [
            "profile",
            e.name,
            "hello",
            "--callgrind",
            "--mode",
            "loopback",
        ];
        assert_usage_error(&run(&args), "--callgrind counts in-process dispatches");
    }
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
