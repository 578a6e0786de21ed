//! `framebench scale` on whatever machine runs the tests (2 CPUs here): the default thread list
//! cut to what fits with its one line, the refusals (exit 2, one line), the rounds and the
//! rotation of their order, the JSON read back by `framebench diff`, and the chart. And a copy of
//! the binary, alone with prebuilt Go peers where the source tree is hidden.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::{assert_one_line_error, run, BIN};

/// A folder of its own under the system's temporary folder, emptied first.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("framebench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The CPUs this process may use.
fn allowed_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn a_t_that_cannot_fit_and_every_refused_flag_exit_2_with_one_line() {
    assert_one_line_error(
        &run(&["scale", "--threads", "1,1024"]),
        2,
        "--threads 1024 does not fit",
    );
    for (flag, value) in [
        ("--server-cpus", "0"),
        ("--client-cpus", "1"),
        ("--client-threads", "2"),
        ("--rate", "1000"),
        ("--shard", "1/2"),
        ("--start-at", "1"),
    ] {
        assert_one_line_error(
            &run(&["scale", flag, value]),
            2,
            &format!("framebench scale does not take {flag}"),
        );
    }
    assert_one_line_error(&run(&["scale", "--rounds", "2"]), 2, "--rounds");
    assert_one_line_error(&run(&["scale", "--frameworks", "nosuch"]), 2, "nosuch");
    assert_one_line_error(
        &run(&["scale", "--runtime", "per-core", "--frameworks", "actix"]),
        2,
        "actix cannot take it",
    );
}

/// A short sweep of raw and hyper (on both runtimes): three rounds at every T that fits, the
/// targets' order rotated each round, the figures with their rounds' range, the JSON read back
/// by `framebench diff`, the charts parsed.
#[test]
fn a_sweep_runs_in_rotating_rounds_and_writes_what_diff_reads() {
    let _measuring = crate::common::measuring();
    let dir = scratch("scale");
    let (json, md, svg) = (dir.join("s.json"), dir.join("s.md"), dir.join("s.svg"));
    let out = Command::new(BIN)
        .args(["scale", "--frameworks", "raw,hyper", "--scenarios", "hello"])
        .args(["-d", "100ms", "--warmup", "50ms", "-c", "8", "--quiet"])
        .arg("--json")
        .arg(&json)
        .arg("--markdown")
        .arg(&md)
        .arg("--plot")
        .arg(&svg)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // The default list, cut below 64 server threads (half of 128 CPUs), says so in one line.
    let cut: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("threads: "))
        .collect();
    if allowed_cpus() < 128 {
        assert_eq!(cut.len(), 1, "{stderr}");
        assert!(cut[0].contains("cut to half of the"), "{stderr}");
    }
    for line in [
        "raw",
        "hyper (work-stealing)",
        "hyper (per-core)",
        "ranking at T=1",
    ] {
        assert!(stdout.contains(line), "{line:?} missing: {stdout}");
    }

    let results: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(results["schema"], "framebench-results/1");
    assert_eq!(results["command"], "scale");
    let figures = results["figures"].as_array().unwrap();
    let variants: Vec<&str> = figures
        .iter()
        .map(|f| f["variant"].as_str().unwrap())
        .collect();
    for want in [
        "threads=1,runtime=own,log=off,io=memory,c8,p1",
        "threads=1,runtime=work-stealing,log=off,io=memory,c8,p1",
        "threads=1,runtime=per-core,log=off,io=memory,c8,p1",
    ] {
        assert!(variants.contains(&want), "{want} missing: {variants:?}");
    }
    for f in figures {
        assert_eq!(f["rounds"], 3, "{f}");
        let (v, lo, hi) = (
            f["value"].as_f64().unwrap(),
            f["lo"].as_f64().unwrap(),
            f["hi"].as_f64().unwrap(),
        );
        assert!(lo <= v && v <= hi && lo > 0.0, "{f}");
    }
    // Three targets, three rounds, each target at a different place in each round.
    let cells = results["detail"]["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 9);
    for target in ["raw", "hyper (work-stealing)", "hyper (per-core)"] {
        let mut places: Vec<u64> = cells
            .iter()
            .filter(|c| c["target"] == target)
            .map(|c| c["position"].as_u64().unwrap())
            .collect();
        places.sort_unstable();
        assert_eq!(places, vec![1, 2, 3], "{target}");
        // The thread check read the server's threads in every cell.
        assert!(cells
            .iter()
            .filter(|c| c["target"] == target)
            .all(|c| c["cell"]["thread_check"]["threads"] == 1));
    }

    // `framebench diff` reads it: the file against itself has nothing separated.
    let diff = run(&["diff", json.to_str().unwrap(), json.to_str().unwrap()]);
    assert!(
        diff.status.success(),
        "{}",
        String::from_utf8_lossy(&diff.stderr)
    );
    let text = String::from_utf8_lossy(&diff.stdout);
    assert!(text.contains("scale"), "{text}");

    let markdown = std::fs::read_to_string(&md).unwrap();
    let (stamp, markdown) = markdown.split_once('\n').unwrap();
    assert!(
        stamp.starts_with("<!-- generated by `framebench scale "),
        "{stamp}"
    );
    // The build it was measured at, then the report.
    assert!(markdown.starts_with("Measured at: "), "{markdown}");
    assert!(markdown.contains("\n\n# framebench scale\n"), "{markdown}");
    assert!(markdown.contains("| raw | 1 |"), "{markdown}");
    // The rate chart has a panel per thread model; the speed-up chart parses too, but draws
    // no point whose rate the server did not set, which on a busy 2-CPU machine can be every
    // per-core row at T = 1, and with it that panel.
    for chart in [svg.clone(), dir.join("s-speedup.svg")] {
        let text = std::fs::read_to_string(&chart).unwrap();
        let doc = roxmltree::Document::parse(&text).unwrap();
        let panel = doc
            .descendants()
            .filter_map(|n| n.text())
            .any(|t| t.trim() == "per-core runtimes");
        assert!(panel || chart != svg, "{}", chart.display());
    }

    // `--replot` draws the same charts again from the JSON, measuring nothing; a results file of
    // another command is refused in one line.
    let again = dir.join("again.svg");
    let replot = run(&[
        "scale",
        "--replot",
        json.to_str().unwrap(),
        "--plot",
        again.to_str().unwrap(),
    ]);
    assert!(
        replot.status.success(),
        "{}",
        String::from_utf8_lossy(&replot.stderr)
    );
    // The same chart; only the stamp differs, as it names the other command line.
    let chart = |p: &std::path::Path| {
        let text = std::fs::read_to_string(p).unwrap();
        let (stamp, chart) = text.split_once("</metadata>").unwrap();
        assert!(stamp.contains("<metadata>framebench scale "), "{stamp}");
        chart.to_owned()
    };
    assert_eq!(chart(&again), chart(&svg));
    assert!(dir.join("again-speedup.svg").is_file());
    // And the same Markdown, which keeps the build and date that measured.
    let again_md = dir.join("again.md");
    let rewritten = run(&[
        "scale",
        "--replot",
        json.to_str().unwrap(),
        "--markdown",
        again_md.to_str().unwrap(),
    ]);
    assert!(rewritten.status.success(), "{rewritten:?}");
    let body = |p: &std::path::Path| {
        let text = std::fs::read_to_string(p).unwrap();
        text.split_once('\n').unwrap().1.to_owned()
    };
    assert_eq!(body(&again_md), body(&md));
    let foreign = dir.join("foreign.json");
    let mut other = results.clone();
    other["command"] = "compare".into();
    std::fs::write(&foreign, other.to_string()).unwrap();
    let refused = run(&[
        "scale",
        "--replot",
        foreign.to_str().unwrap(),
        "--plot",
        again.to_str().unwrap(),
    ]);
    assert_one_line_error(&refused, 2, "not a sweep's");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A sweep stopped early (here: its third round never ran, and Ctrl-C cut its second short)
/// goes on with `--resume`: the cells it kept come back unchanged, the others run, and the file
/// is the whole sweep. A file of another sweep, or no sweep's, is refused in one line.
#[test]
fn a_stopped_sweep_resumes_and_keeps_the_cells_it_measured() {
    let _measuring = crate::common::measuring();
    let dir = scratch("scale-resume");
    let json = dir.join("s.json");
    let sweep = |extra: &[&str]| {
        Command::new(BIN)
            .args(["scale", "--frameworks", "raw", "--scenarios", "hello"])
            .args([
                "--threads",
                "1",
                "-d",
                "100ms",
                "--warmup",
                "50ms",
                "-c",
                "8",
            ])
            .arg("--quiet")
            .arg("--json")
            .arg(&json)
            .args(extra)
            .output()
            .unwrap()
    };
    let out = sweep(&[]);
    assert!(out.status.success(), "{out:?}");
    let read =
        || -> Value { serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap() };
    let mut stopped = read();
    let cells = stopped["detail"]["cells"].as_array_mut().unwrap();
    assert_eq!(cells.len(), 3);
    cells.retain(|c| c["round"] != 3);
    cells[1]["cell"]["status"] = serde_json::json!({"kind": "interrupted"});
    cells[1]["cell"]["rps"] = serde_json::json!(1.0);
    let kept = cells[0].clone();
    std::fs::write(&json, serde_json::to_string(&stopped).unwrap()).unwrap();

    let resume = ["--resume", json.to_str().unwrap()];
    let out = sweep(&resume);
    assert!(out.status.success(), "{out:?}");
    let whole = read();
    let cells = whole["detail"]["cells"].as_array().unwrap();
    let rounds: Vec<u64> = cells.iter().map(|c| c["round"].as_u64().unwrap()).collect();
    assert_eq!(rounds, [1, 2, 3]);
    assert_eq!(cells[0], kept, "the kept cell changed");
    for c in cells {
        assert_eq!(c["cell"]["status"]["kind"], "ok", "{c}");
        assert!(c["cell"]["rps"].as_f64().unwrap() > 1.0, "{c}");
    }
    assert_eq!(whole["figures"][0]["rounds"], 3);

    let other = ["--resume", json.to_str().unwrap(), "--rounds", "4"];
    assert_one_line_error(&sweep(&other), 2, "is another sweep");
    let pipelined = ["--resume", json.to_str().unwrap(), "--pipeline", "2"];
    assert_one_line_error(&sweep(&pipelined), 2, "pipeline 1: resume with the flags");
    let foreign = dir.join("foreign.json");
    std::fs::write(&foreign, "{\"schema\": \"something-else/1\"}").unwrap();
    assert_one_line_error(
        &sweep(&["--resume", foreign.to_str().unwrap()]),
        2,
        "foreign.json",
    );
}

/// Whether this process can hide a folder behind an empty tmpfs in a mount namespace of its own
/// (root, and util-linux's `unshare`).
fn can_hide() -> bool {
    Command::new("unshare")
        .args(["--mount", "--propagation", "private", "true"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `args` run by `bin` in a mount namespace where `hidden` is an empty tmpfs, from `/`.
fn run_hidden(bin: &Path, hidden: &Path, env: &[(&str, &Path)], args: &[&str]) -> Output {
    let mut cmd = Command::new("unshare");
    cmd.args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(r#"mount -t tmpfs tmpfs "$1" && cd / && shift && exec "$@""#)
        .arg("sh")
        .arg(hidden)
        .arg(bin)
        .args(args)
        // A required tool would fail the run: here `go` is pointed nowhere on purpose.
        .env_remove("FRAMEBENCH_REQUIRE")
        .env_remove("FRAMEBENCH_FIXTURES")
        .env_remove("FRAMEBENCH_BIN")
        .env("FRAMEBENCH_GO", "/nonexistent/go");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// A user copies the binary and the prebuilt Go peers to a machine without Rust, Go or the
/// source tree: `check raw go-nethttp` and a sweep run there, the fixtures coming from the
/// binary itself.
#[test]
fn a_copied_binary_runs_check_and_a_sweep_where_the_source_tree_is_hidden() {
    if !can_hide() {
        eprintln!("skipping: hiding the source tree needs root and `unshare` (util-linux)");
        return;
    }
    let dir = scratch("copied");
    let bin = dir.join("bin/framebench");
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    std::fs::copy(BIN, &bin).unwrap();
    let peers = dir.join("peers");
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    // The peers, built here by framebench itself into their own folder (with `go`).
    let build = Command::new(BIN)
        .args(["check", "go-nethttp"])
        .env("FRAMEBENCH_GO_PEERS_DIR", &peers)
        .output()
        .unwrap();
    let with_go = peers.join("nethttp").is_file();
    if !with_go {
        eprintln!(
            "without go here the Go peers cannot be prebuilt: checking raw alone ({})",
            String::from_utf8_lossy(&build.stderr).trim()
        );
    }
    let frameworks = if with_go { "raw,go-nethttp" } else { "raw" };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let env = [
        ("FRAMEBENCH_GO_PEERS_DIR", peers.as_path()),
        ("TMPDIR", tmp.as_path()),
    ];
    let names: Vec<&str> = frameworks.split(',').collect();
    let check = run_hidden(&bin, repo, &env, &[["check"].as_slice(), &names].concat());
    let (stdout, stderr) = (
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr),
    );
    assert!(check.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("rows match the oracle"), "{stdout}");
    if with_go {
        assert!(stdout.contains("go-nethttp"), "{stdout}");
        assert!(stderr.contains("run as built in"), "{stderr}");
    }
    // The fixtures came out of the binary into its temporary folder.
    assert!(std::fs::read_dir(&tmp).unwrap().flatten().any(|e| e
        .file_name()
        .to_string_lossy()
        .starts_with("framebench-fixtures-")));
    let sweep = run_hidden(
        &bin,
        repo,
        &env,
        &[
            "scale",
            "--frameworks",
            frameworks,
            "--scenarios",
            "hello,static",
            "--io",
            "disk",
            "-d",
            "100ms",
            "--warmup",
            "50ms",
            "-c",
            "4",
            "--quiet",
        ],
    );
    let stdout = String::from_utf8_lossy(&sweep.stdout);
    assert!(
        sweep.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&sweep.stderr)
    );
    for name in names {
        assert!(stdout.contains(name), "{name} missing: {stdout}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
