//! Allocations per request, through the `framebench` binary: `framebench allocs` counts every
//! in-process framework, repeats agree within a run and across processes, a handler that
//! renders a template allocates more than the floor, and `framebench profile --allocs`
//! attributes every counted allocation to a site.

use std::process::{Command, Output};

use framebench::allocs::report::Report;
use framebench::allocs::{Counts, Measured};
use framebench::frameworks::{self, REGISTRY};

const BIN: &str = env!("CARGO_BIN_EXE_framebench");

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("RUST_LIB_BACKTRACE", "0")
        .output()
        .unwrap()
}

/// `framebench allocs ARGS --json -`, which must succeed.
fn allocs(args: &[&str]) -> Report {
    let out = run(&[&["allocs", "--json", "-"], args].concat());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "framebench allocs {args:?}: {stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().rev().find(|l| l.starts_with('{')).unwrap();
    Report::from_results(framebench::results::Results::parse(line, "allocs --json -").unwrap())
        .unwrap()
}

fn counts(cells: &[Measured], framework: &str, scenario: &str, logging: &str) -> Counts {
    cells
        .iter()
        .find(|c| c.framework == framework && c.scenario == scenario && c.logging == logging)
        .and_then(|c| c.counts)
        .unwrap_or_else(|| panic!("{framework} {scenario} {logging} not counted: {cells:?}"))
}

/// The cells whose repeats disagree, measured (2026-11-26) and explained in
/// docs/methodology/bodies.md: ohkami's reads of a body reallocate 7 or 8 times from one repeat
/// to the next. `framebench allocs` reports each such cell as failed, with every count seen.
const VARYING: &[(&str, &str)] = &[("ohkami", "upload"), ("ohkami", "json_in")];

/// Every in-process framework × scenario without Redis × logging is counted, but for the
/// scenarios a framework cannot serve (`Framework::CANNOT`) and the [`VARYING`] cells, each with
/// every repeat equal (the command fails otherwise), and rendering the template allocates more
/// than the floor's canned answer in every framework. The varying cells fail, and say so.
#[test]
fn every_cell_is_counted_and_the_template_allocates() {
    let in_process: Vec<&framebench::framework::Entry> =
        REGISTRY.iter().filter(|e| e.in_process).collect();
    let steady: Vec<(&str, &str)> = in_process
        .iter()
        .flat_map(|e| {
            framebench::allocs::scenarios()
                .filter(|s| e.cannot(s.name).is_none() && !VARYING.contains(&(e.name, s.name)))
                .map(|s| (e.name, s.name))
        })
        .collect();
    // One run per framework with its steady scenarios.
    let mut cells = Vec::new();
    for e in &in_process {
        let mine: Vec<&str> = steady
            .iter()
            .filter(|(f, _)| f == &e.name)
            .map(|(_, s)| *s)
            .collect();
        let report = allocs(&[e.name, "--scenarios", &mine.join(",")]);
        assert_eq!(report.cells.len(), mine.len() * 2, "{}", e.name);
        cells.extend(report.cells);
    }
    let floor = frameworks::floor().unwrap().name;
    let null = counts(&cells, floor, "template", "off");
    for name in in_process.iter().map(|e| e.name).filter(|n| *n != floor) {
        let template = counts(&cells, name, "template", "off");
        assert!(
            template.allocs > null.allocs,
            "{name} renders the template with {} allocations, the floor answers with {}",
            template.allocs,
            null.allocs
        );
    }
    for (fw, scenario) in VARYING
        .iter()
        .filter(|(fw, _)| frameworks::find(fw).is_some())
    {
        let out = run(&["allocs", fw, "--scenarios", scenario, "--logging", "off"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains("repeats disagree"),
            "{fw} {scenario} no longer varies: move it out of VARYING and the methodology: {stderr}"
        );
    }
}

/// The floor's count is the same in two processes, each repeating its cells 20 times.
#[test]
fn the_floor_repeats_exactly_across_processes() {
    let floor = frameworks::floor().unwrap().name;
    let args = [floor, "--repeats", "20", "--logging", "off"];
    let (a, b) = (allocs(&args), allocs(&args));
    assert_eq!(a.cells, b.cells);
    assert!(counts(&a.cells, floor, "hello", "off").allocs > 0);
}

/// `profile --allocs` prints the counts of one dispatch and sites whose calls add up to them.
#[test]
fn profile_allocs_attributes_every_allocation_to_a_site() {
    let name = REGISTRY
        .iter()
        .find(|e| e.in_process && !e.baseline)
        .map_or("null", |e| e.name);
    let out = run(&["profile", name, "template", "--allocs", "--depth", "2"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines = stdout.lines();
    let head = lines.next().unwrap();
    let number_before = |word: &str| -> u64 {
        let at = head.find(word).unwrap_or_else(|| panic!("{head}"));
        head[..at]
            .split_whitespace()
            .last()
            .unwrap()
            .parse()
            .unwrap()
    };
    let (allocs, reallocs) = (number_before(" allocs,"), number_before(" reallocs,"));
    assert!(allocs > 0, "{head}");
    let (mut site_allocs, mut site_reallocs) = (0, 0);
    for line in lines.skip(1) {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if let [a, r, _bytes, ..] = cols[..] {
            if let (Ok(a), Ok(r)) = (a.parse::<u64>(), r.parse::<u64>()) {
                site_allocs += a;
                site_reallocs += r;
            }
        }
    }
    assert_eq!((site_allocs, site_reallocs), (allocs, reallocs), "{stdout}");
}

/// A scenario that needs Redis, or a framework without an in-process path, is a usage error.
#[test]
fn allocs_refuses_what_it_cannot_count() {
    let out = run(&["allocs", "--scenarios", "redis"]);
    assert_eq!(out.status.code(), Some(2));
    if let Some(lb) = REGISTRY.iter().find(|e| !e.in_process) {
        let out = run(&["allocs", lb.name]);
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("no in-process path"));
    }
}
