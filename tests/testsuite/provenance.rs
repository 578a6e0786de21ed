//! Which builds measured a report's sources: `framebench report` refuses sources of two builds
//! in one line unless `--allow-mixed`, and names every build in its output and in results.md.

use std::path::Path;

use crate::common::plant::{plant_criterion_cell, plant_summary, report};

/// The file a bench target writes when it starts measuring (`framebench::bench::record_run`):
/// `commit` measured `bench` of `tool`, from an hour ago, on a machine named `Planted CPU`.
fn plant_run(dir: &Path, tool: &str, bench: &str, commit: &str) {
    let start = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - 3600;
    let build = serde_json::json!({"commit": commit, "dirty": false});
    let run = serde_json::json!({
        "schema": "framebench-run/1",
        "provenance": {"measured": [build], "reported": build,
                       "window": {"start": start, "end": start + 60}},
        "environment": {"rustc": "rustc 1.95.0", "profile": "release", "cpu": "Planted CPU",
                        "cores": 2, "kernel": "6.1", "git_revision": commit},
    });
    let path = dir.join(format!("{tool}/framebench-run-{bench}.json"));
    std::fs::write(path, run.to_string()).unwrap();
}

/// A report of sources measured by two builds (each bench target's run file names its own) is
/// refused in one line, exit 2, naming both; with `--allow-mixed` it is written, and its output
/// and its environment section name each build with its sources. Sources without a run file
/// are of an unknown build: named, never refused.
#[test]
fn report_refuses_sources_of_two_builds_unless_allowed() {
    let dir = std::env::temp_dir().join(format!("framebench-mixed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    plant_criterion_cell(&dir);
    plant_summary(&dir);
    let md = dir.join("results.md");
    let lines = |md: &Path| -> Vec<String> {
        let text = std::fs::read_to_string(md).unwrap();
        text.lines()
            .filter(|l| l.starts_with("- Measured at: ") || l.starts_with("- Reported at: "))
            .map(str::to_owned)
            .collect()
    };
    // No run files: one unknown build, the report is written.
    let out = report(&dir, &md, &["--no-charts"]);
    assert!(out.status.success(), "{out:?}");
    let header = lines(&md);
    assert_eq!(header[0], "- Measured at: unknown", "{header:?}");
    let reported = header[1].strip_prefix("- Reported at: ").unwrap();
    let sha = reported.trim_end_matches("-dirty");
    assert!(
        sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit()),
        "{reported}"
    );
    // The in-process timings of one build, the callgrind counts of another.
    let (a, b) = ("a".repeat(40), "b".repeat(40));
    plant_run(&dir, "criterion", "in_process", &a);
    plant_run(&dir, "gungraun", "callgrind", &b);
    let (timings, counts) = (
        format!("{}/criterion/in_process", dir.display()),
        format!("{}/gungraun/callgrind", dir.display()),
    );
    let out = report(&dir, &md, &["--no-charts"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        (out.status.code(), err.lines().count()),
        (Some(2), 1),
        "{err}"
    );
    let both = format!("measured by 2 builds: {a} ({timings}); {b} ({counts})");
    assert!(
        err.contains(&both) && err.contains("--allow-mixed"),
        "{err}"
    );
    let out = report(&dir, &md, &["--no-charts", "--allow-mixed"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("  {a}: {timings}\n  {b}: {counts}\n")),
        "{stdout}"
    );
    assert_eq!(
        lines(&md)[..3],
        [
            format!("- Measured at: {a} ({timings})"),
            format!("- Measured at: {b} ({counts})"),
            format!("- Reported at: {reported}"),
        ]
    );
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(
        text.contains("- CPU: Planted CPU (2 cores available)"),
        "{text}"
    );
    let window = text.lines().find(|l| l.starts_with("- Window: "));
    assert!(window.is_some_and(|l| l.ends_with(" UTC")), "{text}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(json["provenance"]["measured"][1]["commit"], b.as_str());
    assert_eq!(
        json["provenance"]["measured"][1]["sources"][0],
        counts.as_str()
    );
    // One build for both: no flag needed, and no source named.
    plant_run(&dir, "gungraun", "callgrind", &a);
    let out = report(&dir, &md, &["--no-charts"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(lines(&md)[0], format!("- Measured at: {a}"));
    let _ = std::fs::remove_dir_all(&dir);
}
