//! The command-line pieces the benches use: `serve --max-requests` (the server of the callgrind loopback
//! bench exits by itself), `profile` (bounded hot loop, one-line usage errors) and `report`
//! (reads criterion's files; refuses an empty target folder).

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use framebench::bench::client::KeepAlive;
use framebench::child::ServerProcess;
use framebench::fixtures::Fixtures;
use framebench::frameworks::{self, REGISTRY};
use framebench::options::Options;
use framebench::oracle;

const BIN: &str = env!("CARGO_BIN_EXE_framebench");

use crate::common::plant::{plant_criterion_cell, plant_summary, report, SUMMARY};

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn assert_usage_error(out: &Output, needle: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "want one line: {stderr:?}");
    assert!(stderr.contains(needle), "{stderr:?} lacks {needle:?}");
}

/// Every server that counts requests exits by itself, successfully, after exactly N requests
/// on a keep-alive connection, and not before.
///
/// "Not before" can only be seen by waiting: every server is started and sent its first four
/// requests, then one 400 ms wait covers them all (a wait per server was 8 of this test's 12 s).
#[test]
fn serve_max_requests_exits_after_n() {
    let fixtures = Fixtures::load_default().unwrap();
    let hello = oracle::scenario("hello").unwrap();
    let mut started = Vec::new();
    for entry in REGISTRY.iter().filter(|e| e.loopback && e.counts_requests) {
        let mut child = Command::new(BIN)
            .args(["serve", entry.name, "--threads", "1", "--max-requests", "5"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let addr: std::net::SocketAddr = line
            .trim()
            .strip_prefix("listening on http://")
            .unwrap()
            .parse()
            .unwrap();
        started.push((entry.name, child, addr));
    }
    // Connected once all are up, so that no connection idles past a server's keep-alive
    // timeout while the others start.
    let mut servers = Vec::new();
    for (name, child, addr) in started {
        let mut conn = KeepAlive::connect(addr, hello, &fixtures).unwrap();
        conn.round_trip().unwrap();
        conn.round_trip().unwrap();
        servers.push((name, child, conn));
    }
    // Four requests each: every server must still be running.
    std::thread::sleep(Duration::from_millis(400));
    for (name, child, _) in &mut servers {
        assert!(
            child.try_wait().unwrap().is_none(),
            "{name} exited before its fifth request",
        );
    }
    // Every fifth request first, then every exit: a server may take its grace to exit, and
    // the connections after it would idle past their keep-alive timeouts meanwhile.
    for (name, _, conn) in &mut servers {
        if let Err(e) = conn.round_trip() {
            panic!("{name}: the fifth request failed: {e:#}");
        }
    }
    for (name, mut child, conn) in servers {
        drop(conn);
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{name} did not exit after 5 requests",
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "{name}: {status}");
    }
}

#[test]
fn serve_max_requests_rejects_zero_and_non_counting_servers() {
    let out = run(&["serve", "axum", "--max-requests", "0"]);
    assert_eq!(out.status.code(), Some(2));
    if let Some(other) = REGISTRY.iter().find(|e| e.loopback && !e.counts_requests) {
        let out = run(&["serve", other.name, "--max-requests", "3"]);
        assert_usage_error(&out, "does not count requests");
    }
}

#[test]
fn profile_runs_a_bounded_loop_and_rejects_bad_input() {
    let fw = REGISTRY
        .iter()
        .find(|e| e.in_process && e.loopback)
        .map_or("null", |e| e.name);
    let out = run(&["profile", fw, "hello", "--seconds", "1"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("ns per request"));
    if frameworks::find("axum").is_some() {
        let out = run(&[
            "profile",
            "axum",
            "paste",
            "--mode",
            "loopback",
            "--seconds",
            "1",
        ]);
        assert!(out.status.success(), "{out:?}");
    }
    assert_usage_error(&run(&["profile", "nosuch", "hello"]), "unknown framework");
    assert_usage_error(&run(&["profile", "null", "nosuch"]), "unknown scenario");
    assert_usage_error(&run(&["profile", "raw", "hello"]), "loopback only");
    assert_usage_error(
        &run(&["profile", "null", "hello", "--mode", "loopback"]),
        "has no server",
    );
    assert_eq!(
        run(&["profile", "null", "hello", "--seconds", "0"])
            .status
            .code(),
        Some(2)
    );
}

/// A loopback child server answers a checked keep-alive exchange and stops when dropped.
#[test]
fn server_process_serves_and_stops() {
    let fixtures = Fixtures::load_default().unwrap();
    let server = ServerProcess::start(Path::new(BIN), "raw", Options::default(), &[]).unwrap();
    let mut conn = KeepAlive::connect(
        server.addr(),
        oracle::scenario("static").unwrap(),
        &fixtures,
    )
    .unwrap();
    for _ in 0..10 {
        conn.round_trip().unwrap();
    }
    assert_eq!(
        conn.body_len(),
        fixtures.read("static/webupload.html").unwrap().len()
    );
}

/// `settle` sees an idle server as quiet, and a server under load as busy until its bound.
#[test]
fn settle_tells_an_idle_server_from_a_loaded_one() {
    let fixtures = Fixtures::load_default().unwrap();
    let server = ServerProcess::start(Path::new(BIN), "raw", Options::default(), &[]).unwrap();
    let idle = framebench::child::settle(&[&server], Duration::from_secs(20));
    assert!(idle.quiet, "an idle server never went quiet: {idle:?}");

    let mut conn =
        KeepAlive::connect(server.addr(), oracle::scenario("hello").unwrap(), &fixtures).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load = {
        let stop = std::sync::Arc::clone(&stop);
        std::thread::spawn(move || {
            let until = Instant::now() + Duration::from_secs(10);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && Instant::now() < until {
                conn.round_trip().unwrap();
            }
        })
    };
    let busy = framebench::child::settle(&[&server], Duration::from_secs(1));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    load.join().unwrap();
    assert!(
        !busy.quiet,
        "a server under load counted as quiet: {busy:?}"
    );
    assert!(busy.waited >= Duration::from_secs(1), "{busy:?}");
}

#[test]
fn report_reads_criterion_files_and_refuses_an_empty_folder() {
    let dir = std::env::temp_dir().join(format!("framebench-report-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out_file = dir.join("results.md");
    let out = report(&dir, &out_file, &[]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("cargo bench"));

    let cell = plant_criterion_cell(&dir);
    // A summary of another version is refused in one line, exit 2, naming the file.
    let (cg, summary) = (plant_summary(&dir), SUMMARY);
    std::fs::write(cg.join("summary.json"), summary.replace(r#""7""#, r#""6""#)).unwrap();
    let out = report(&dir, &out_file, &[]);
    assert_usage_error(&out, "summary.json: a gungraun summary of version 6, not 7");
    std::fs::write(cg.join("summary.json"), summary).unwrap();
    let out = report(&dir, &out_file, &[]);
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&out_file).unwrap();
    // criterion's interval beside its estimate: 40–44 around 42 is ±2, 5 %.
    assert!(text.contains("| null | 42 ns ±5 % |"), "{text}");
    // No deltas file: the differences are not printed, and the page says how to get them.
    assert!(
        text.contains("Not measured: these are differences"),
        "{text}"
    );
    assert!(text.contains("## Environment"), "{text}");
    assert!(text.contains("| null | 1,234 |"), "{text}");
    // Every written file names the command line and the commit that wrote it
    // (docs/generated/README.md): the report's first line, the results file's `generated_by`.
    let stamp = format!("framebench report --target-dir {}", dir.display());
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with(&format!("<!-- generated by `{stamp}"))
            && first.ends_with("; do not edit -->"),
        "{first}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    let by = json["generated_by"].as_str().unwrap();
    assert!(by.starts_with(&stamp) && by.contains(" at "), "{by}");
    // The charts: drawn beside the report, embedded above its tables, and well-formed SVG
    // that names the floor as one.
    let charts = text.find("## Charts").expect("a charts section");
    assert!(charts < text.find("## In-process: time per request").unwrap());
    for (metric, label) in [("time", "42 ns"), ("instructions", "1,234")] {
        let link = format!("![hello {metric}](results/hello-{metric}.svg)");
        assert!(text.contains(&link), "{link} missing:\n{text}");
        let svg = std::fs::read_to_string(dir.join(format!("results/hello-{metric}.svg"))).unwrap();
        let doc = roxmltree::Document::parse(&svg).expect("the chart parses as XML");
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        assert!(svg.starts_with("<!-- generated by framebench at "), "{svg}");
        let metadata = doc.descendants().find(|n| n.has_tag_name("metadata"));
        assert!(metadata
            .and_then(|n| n.text())
            .is_some_and(|t| t.starts_with(&stamp)));
        let texts: Vec<&str> = doc
            .descendants()
            .filter_map(|n| n.text())
            .map(str::trim)
            .collect();
        assert!(texts.contains(&"null (floor)"), "{texts:?}");
        assert!(texts.contains(&label), "{label} not in {texts:?}");
    }
    // No loopback figures, no loopback chart.
    assert!(!dir.join("results/hello-loopback.svg").exists());
    let out = report(&dir, &dir.join("bare.md"), &["--no-charts"]);
    assert!(out.status.success(), "{out:?}");
    let bare = std::fs::read_to_string(dir.join("bare.md")).unwrap();
    assert!(
        !bare.contains("## Charts") && !dir.join("bare").exists(),
        "{bare}"
    );

    // A second shard of the same run (another runner's target folder) with another
    // framework: one report, a Shards section naming where each came from, and the floor's
    // ratio left out for a framework of another shard.
    let shard = dir.join("shard2");
    let other = shard.join("criterion/in_process_hello/hyper/log=off,io=memory/new");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(
        other.join("benchmark.json"),
        std::fs::read_to_string(cell.join("benchmark.json"))
            .unwrap()
            .replace("null", "hyper"),
    )
    .unwrap();
    std::fs::copy(cell.join("estimates.json"), other.join("estimates.json")).unwrap();
    let both = dir.join("both.md");
    let (first, second) = (dir.to_str().unwrap(), shard.to_str().unwrap());
    let out = run(&[
        "report",
        "--target-dir",
        first,
        "--target-dir",
        second,
        "--out",
        both.to_str().unwrap(),
        "--no-charts",
    ]);
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&both).unwrap();
    assert!(text.contains("## Shards"), "{text}");
    assert!(text.contains(&format!("| `{second}` | hyper |")), "{text}");
    assert!(text.contains("| hyper | 42 ns ±5 % |"), "{text}");
    assert!(
        !text.contains("the fastest framework's hello (hyper)"),
        "{text}"
    );
    // The same framework's cell in two shards is refused in one line (the floor, built into
    // every shard, is not).
    let out = run(&[
        "report",
        "--target-dir",
        second,
        "--target-dir",
        second,
        "--out",
        both.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("in both") && err.lines().count() == 1, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Real files of the pinned criterion (0.8.2) and gungraun (0.20.0, summary version 7), from
/// tests/data, are read; the same files made malformed stop `report` in one line that names
/// the file, exit 2.
#[test]
fn report_refuses_a_malformed_criterion_or_gungraun_file_in_one_line() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let dir = std::env::temp_dir().join(format!("framebench-malformed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cell = dir.join("criterion/in_process_hello/axum/log=off,io=memory/new");
    let cg = dir.join("gungraun/framebench/callgrind/in_process/poem.hello_off");
    for (from, to) in [
        (
            "criterion-0.8.2/benchmark.json",
            cell.join("benchmark.json"),
        ),
        (
            "criterion-0.8.2/estimates.json",
            cell.join("estimates.json"),
        ),
        ("gungraun-0.20.0/summary.json", cg.join("summary.json")),
    ] {
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(data.join(from), to).unwrap();
    }
    let out_file = dir.join("results.md");
    let out = report(&dir, &out_file, &["--no-charts"]);
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&out_file).unwrap();
    assert!(text.contains("| axum | 1 ns ±"), "{text}");
    assert!(text.contains("| poem | 12,539 |"), "{text}");

    let estimates = std::fs::read_to_string(cell.join("estimates.json")).unwrap();
    for bad in [
        &estimates[..estimates.len() / 2],
        &estimates.replace("\"mean\"", "\"average\""),
        "[]",
    ] {
        std::fs::write(cell.join("estimates.json"), bad).unwrap();
        let out = report(&dir, &out_file, &["--no-charts"]);
        assert_usage_error(&out, "new/estimates.json: not a file of criterion 0.8.2");
    }
    std::fs::write(cell.join("estimates.json"), estimates).unwrap();
    let summary = std::fs::read_to_string(cg.join("summary.json")).unwrap();
    for (bad, why) in [
        (&summary[..summary.len() / 2], "not JSON"),
        (
            &summary.replace("\"profiles\"", "\"runs\""),
            "not a gungraun summary of version 7",
        ),
    ] {
        std::fs::write(cg.join("summary.json"), bad).unwrap();
        let out = report(&dir, &out_file, &["--no-charts"]);
        assert_usage_error(&out, &format!("poem.hello_off/summary.json: {why}"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `framebench deltas` measures a real difference in paired rounds and writes what `report`
/// prints; bad input is one line.
#[test]
fn deltas_measures_pairs_that_the_report_prints_and_rejects_bad_input() {
    assert_usage_error(&run(&["deltas", "nosuch"]), "unknown framework 'nosuch'");
    assert_usage_error(&run(&["deltas", "--rounds", "3"]), "--rounds");
    assert_usage_error(&run(&["deltas", "--kinds", "vibes"]), "vibes");
    assert_usage_error(
        &run(&["deltas", "--scenarios", "nope"]),
        "unknown scenario 'nope'",
    );
    let Some(fw) = REGISTRY
        .iter()
        .find(|e| e.in_process && e.loopback && !e.baseline)
    else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("framebench-deltas-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let json = dir.join("deltas/deltas.json");
    let out = run(&[
        "deltas",
        fw.name,
        "--scenarios",
        "hello",
        "--rounds",
        "6",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    for kind in ["logging", "vs-raw"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(kind) && l.contains(fw.name)),
            "{stdout}"
        );
    }
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["schema"], "framebench-deltas/1");
    let cells = doc["cells"].as_array().unwrap();
    // Logging and vs-raw on hello (no disk: hello reads no file).
    assert_eq!(cells.len(), 2, "{doc}");
    for c in cells {
        assert_eq!(c["rounds"], 6, "{c}");
        let d = &c["delta_ns"];
        assert!(
            d["lo"].as_f64().unwrap() <= d["hi"].as_f64().unwrap(),
            "{c}"
        );
    }
    let out_file = dir.join("results.md");
    let out = report(&dir, &out_file, &[]);
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&out_file).unwrap();
    assert!(text.contains("### Cost of logging"), "{text}");
    assert!(
        text.contains("## Consistency: time against the exact counts"),
        "{text}"
    );
    // A file of another schema is bad input, refused with one line naming it.
    std::fs::write(&json, r#"{"schema":"framebench-deltas/0","cells":[]}"#).unwrap();
    let out = report(&dir, &out_file, &[]);
    assert_usage_error(
        &out,
        "has schema framebench-deltas/0, of an older framebench; this framebench reads \
         framebench-deltas/1",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `framebench time` times frameworks in interleaved rounds, in-process and over loopback, and
/// writes results files that `diff` compares and `report` publishes in place of criterion's
/// times; bad input is one line.
#[test]
fn time_interleaves_rounds_that_diff_and_report_read() {
    assert_usage_error(
        &run(&["time", "--frameworks", "nosuch"]),
        "unknown framework 'nosuch'",
    );
    assert_usage_error(&run(&["time", "--rounds", "5"]), "--rounds");
    assert_usage_error(&run(&["time", "--logging", "loud"]), "loud");
    assert_usage_error(
        &run(&["time", "--scenarios", "nope"]),
        "unknown scenario 'nope'",
    );
    let Some(fw) = REGISTRY
        .iter()
        .find(|e| e.in_process && e.loopback && !e.baseline)
    else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("framebench-time-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let time = |loopback: bool, file: &str| {
        let json = dir.join(file);
        let mut args = vec![
            "time",
            "--frameworks",
            fw.name,
            "--scenarios",
            "hello,json",
            "--logging",
            "off",
            "--io",
            "memory",
            "--rounds",
            "6",
            "--batch-ms",
            "2",
            "--json",
            json.to_str().unwrap(),
        ];
        if loopback {
            args.push("--loopback");
        }
        let out = run(&args);
        assert!(out.status.success(), "{out:?}");
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        (String::from_utf8_lossy(&out.stdout).into_owned(), doc)
    };
    let (stdout, doc) = time(false, "time/in_process.json");
    // The floor is added: every ratio is taken to it.
    let floor = frameworks::floor().unwrap().name;
    assert!(stdout.contains(&format!("× {floor}")), "{stdout}");
    let figures = doc["figures"].as_array().unwrap();
    assert_eq!(figures.len(), 4, "{doc}");
    for f in figures {
        assert_eq!(f["bench"], "time/in_process");
        assert_eq!(f["metric"], "time");
        assert!(
            f["lo"].as_f64().unwrap() <= f["value"].as_f64().unwrap(),
            "{f}"
        );
        assert!(
            f["value"].as_f64().unwrap() <= f["hi"].as_f64().unwrap(),
            "{f}"
        );
    }
    for c in doc["detail"]["cells"].as_array().unwrap() {
        assert_eq!(c["ns"].as_array().unwrap().len(), 6, "{c}");
        if c["framework"] == fw.name {
            assert!(c["vs_floor"]["point"].as_f64().unwrap() > 1.0, "{c}");
        }
    }
    let (stdout, doc) = time(true, "time/loopback.json");
    assert!(
        stdout.contains("× raw") && stdout.contains("pinned"),
        "{stdout}"
    );
    assert!(
        doc["figures"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["bench"] == "time/loopback"),
        "{doc}"
    );
    // `diff` reads it: the same file against itself changes nothing.
    let same = dir.join("time/in_process.json");
    let out = run(&["diff", same.to_str().unwrap(), same.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    // `report` publishes these times in place of criterion's, and says so.
    let out_file = dir.join("results.md");
    let out = report(&dir, &out_file, &[]);
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&out_file).unwrap();
    assert!(
        text.contains("## In-process: time per request (`framebench time`, interleaved rounds)"),
        "{text}"
    );
    assert!(
        text.contains("`framebench time --loopback`, interleaved rounds"),
        "{text}"
    );
    // A results file that is not `time`'s is refused with one line.
    std::fs::write(
        &same,
        r#"{"schema":"framebench-results/1","command":"allocs","environment":null,"figures":[]}"#,
    )
    .unwrap();
    let out = report(&dir, &out_file, &[]);
    assert_eq!(out.status.code().map(|c| c != 0), Some(true), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).lines().count(),
        1,
        "{out:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// gungraun's ids are literals, so `benches/callgrind.rs` names the scenarios once more, one
/// `#[bench]` line per scenario and logging: it must name every scenario of the oracle that
/// runs without Redis and has an in-process cell (not `upload_chunked`, which exists only on
/// the wire), and nothing else. A gungraun cell cannot say `–`: every in-process framework serves
/// every such scenario (`Framework::CANNOT` names only `upload_chunked`).
#[test]
fn callgrind_bench_counts_every_scenario() {
    let source = include_str!("../../benches/callgrind.rs");
    let countable: Vec<_> = oracle::SCENARIOS
        .iter()
        .filter(|s| !s.needs_redis() && !s.wire_only())
        .collect();
    for e in framebench::frameworks::REGISTRY
        .iter()
        .filter(|e| e.in_process)
    {
        for s in &countable {
            assert!(
                e.cannot(s.name).is_none(),
                "{} cannot serve {}: it needs no callgrind line",
                e.name,
                s.name
            );
        }
    }
    for s in &countable {
        for (id, logging) in [("off", "Off"), ("sink", "Sink")] {
            let line = format!(
                "#[bench::{0}_{id}(target(stringify!($module), \"{0}\", Logging::{logging}))]",
                s.name
            );
            assert!(
                source.contains(&line),
                "benches/callgrind.rs does not count {}: add `{line}`",
                s.name
            );
        }
    }
    assert_eq!(
        source.matches("#[bench::").count(),
        2 * countable.len(),
        "benches/callgrind.rs counts a scenario the oracle does not have"
    );
}

/// `framebench diff`: two counts of one build differ in nothing, under the strictest gate; a
/// real difference of work (null's allocations against axum's, mapped onto the same cells with
/// `--pair`) crosses the gate and names the cells; bad gates and foreign files exit 2 in one line.
#[test]
fn diff_finds_no_change_between_repeats_and_gates_a_real_one() {
    let dir = std::env::temp_dir().join(format!("framebench-diff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
    let (a, b) = (path("a.json"), path("b.json"));
    for out in [&a, &b] {
        let allocs = run(&[
            "allocs",
            "null",
            "axum",
            "--scenarios",
            "hello,json",
            "--json",
            out,
        ]);
        assert!(allocs.status.success(), "{allocs:?}");
    }
    let same = run(&["diff", &a, &b, "--fail-if", "allocs>+0,bytes>+0"]);
    let stdout = String::from_utf8_lossy(&same.stdout);
    assert_eq!(same.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("16 figures in both, 0 changed"), "{stdout}");
    assert!(stdout.contains("no gate crossed"), "{stdout}");

    let worse = run(&["diff", &a, "--pair", "null:axum", "--fail-if", "allocs>+0"]);
    let stdout = String::from_utf8_lossy(&worse.stdout);
    assert_eq!(worse.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("allocs axum hello log=off allocs:")
            && stdout.contains("crosses allocs>+0"),
        "{stdout}"
    );
    // The other way round, axum's work replaced by null's, is better: nothing crosses.
    let better = run(&["diff", &a, "--pair", "axum:null", "--fail-if", "allocs>+0"]);
    assert_eq!(better.status.code(), Some(0), "{better:?}");
    let md = run(&["diff", &a, "--pair", "null:axum", "--markdown"]);
    assert!(
        String::from_utf8_lossy(&md.stdout).contains("|---|"),
        "{md:?}"
    );

    assert_usage_error(
        &run(&["diff", &a, &b, "--fail-if", "allocs>1"]),
        "--fail-if: 'allocs>1'",
    );
    assert_usage_error(
        &run(&["diff", &a, &b, "--fail-if", "speed>+1%"]),
        "metric is one of",
    );
    let foreign = path("foreign.json");
    std::fs::write(
        &foreign,
        r#"{"schema": "framebench-results/99", "figures": []}"#,
    )
    .unwrap();
    assert_usage_error(&run(&["diff", &a, &foreign]), "framebench-results/99");
    std::fs::write(&foreign, "not json").unwrap();
    assert_usage_error(&run(&["diff", &a, &foreign]), "is not JSON");
    std::fs::write(&foreign, r#"{"cells": []}"#).unwrap();
    assert_usage_error(
        &run(&["diff", &a, &foreign]),
        "not a framebench results file",
    );
    assert_usage_error(&run(&["diff", &a]), "--pair");
    assert_usage_error(
        &run(&["diff", &a, "--pair", "null:rocket"]),
        "no figures of 'rocket'",
    );
    assert_usage_error(
        &run(&["diff", &a, &b, "--scenarios", "helo"]),
        "no figures of 'helo'",
    );
    assert_usage_error(
        &run(&["diff", &a, &b, "--fail-if", "instructions>+0"]),
        "no instructions figures compared",
    );

    // Baselines by name, and the Bencher file beside them.
    let name = format!("test-{}", std::process::id());
    let bmf = path("allocs.bmf.json");
    let save = run(&[
        "allocs",
        "null",
        "--scenarios",
        "hello",
        "--bmf",
        &bmf,
        "--save-baseline",
        &name,
    ]);
    assert!(save.status.success(), "{save:?}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&bmf).unwrap()).unwrap();
    assert_eq!(
        doc["allocs/null/hello/log=off"]["allocations"]["value"]
            .as_f64()
            .map(|v| v > 0.0),
        Some(true)
    );
    let again = run(&[
        "allocs",
        "null",
        "--scenarios",
        "hello",
        "--baseline",
        &name,
    ]);
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert!(again.status.success(), "{again:?}");
    assert!(
        stdout.contains(&format!(
            "against baseline '{name}': 4 figures in both, 0 changed"
        )),
        "{stdout}"
    );
    assert_usage_error(
        &run(&["allocs", "null", "--baseline", "never-saved-here"]),
        "no baseline 'never-saved-here'",
    );
    assert_usage_error(
        &run(&["allocs", "null", "--save-baseline", "../x"]),
        "baseline name",
    );
    let _ = std::fs::remove_dir_all(
        framebench::results::target_dir()
            .join("framebench-baselines")
            .join(&name),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `framebench ab`: one build against itself compares every requested cell in paired rounds
/// and prints one row each; a binary that is not a framebench build is refused with one line.
#[test]
fn ab_pairs_two_builds_and_refuses_a_foreign_binary() {
    let out = run(&[
        "ab",
        BIN,
        BIN,
        "null",
        "--scenarios",
        "hello,json",
        "--restarts",
        "6",
        "--rounds",
        "3",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    for scenario in ["hello", "json"] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with("null") && l.contains(scenario))
            .unwrap_or_else(|| panic!("no null {scenario} row: {stdout}"));
        // The old side's time, then the ratio: `≈ (±…)` or a number with its interval.
        assert!(row.contains(" ns") && row.contains('±'), "{row}");
    }
    assert_usage_error(&run(&["ab", "/bin/true", BIN]), "is not a framebench build");
    assert_usage_error(
        &run(&["ab", BIN, BIN, "--scenarios", "nope"]),
        "unknown scenario",
    );
}
