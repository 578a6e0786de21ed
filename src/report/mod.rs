//! `framebench report`: reads criterion's `target/criterion/**/new/{benchmark,estimates}.json`
//! and gungraun's `target/gungraun/**/summary.json`, and writes docs/generated/results.md: an environment
//! header, frameworks × scenarios tables, the cost of logging and of disk I/O as deltas, loopback
//! as a fraction of the `raw` reference, instruction counts, and the allocation counts
//! `framebench allocs --json target/allocs/allocs.json` wrote ([`write_allocs`]), and a
//! consistency section that checks each figure against another witness ([`findings`],
//! [`orders`], [`outliers`]).
//!
//! The file is generated; it is never edited by hand. Every figure in it comes from those files.

mod builds;
mod charts;
mod criterion;
mod findings;
mod gungraun;
mod orders;
mod outliers;
mod read;
pub(crate) mod scenario_ratios;
mod sections;

use findings::write_consistency;
pub(crate) use read::{files_named, Count, Timing, ALLOCS_JSON};
use read::{read_shards, results_of, Shards};
use sections::*;
pub(crate) use sections::{update_allocs, write_allocs};

use crate::table::{Align, Table};
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::frameworks::REGISTRY;
use crate::oracle::SCENARIOS;
use crate::paired;

/// A markdown table: header row (the first column names, the others are figures), then rows.
pub(super) fn table(out: &mut String, header: &[String], rows: &[Vec<String>]) {
    let mut t = Table::new(header.iter().enumerate().map(|(i, h)| {
        let align = if i == 0 { Align::Left } else { Align::Right };
        (h.as_str(), align)
    }));
    for r in rows {
        t.row(r.iter().cloned());
    }
    out.push_str(&t.markdown());
    out.push('\n');
}

/// A markdown table of `items`, one row each (`row`), under the column names `header`.
pub(super) fn table_of<T>(
    out: &mut String,
    header: &[&str],
    items: &[T],
    row: impl Fn(&T) -> Vec<String>,
) {
    let header: Vec<String> = header.iter().map(|s| (*s).to_owned()).collect();
    let rows: Vec<Vec<String>> = items.iter().map(row).collect();
    table(out, &header, &rows);
}

pub(super) fn framework_order() -> Vec<&'static str> {
    REGISTRY.iter().map(|e| e.name).collect()
}

/// Frameworks present in `names`, in registry order, then any others (sorted).
pub(super) fn ordered(names: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut set: Vec<String> = names.into_iter().collect();
    set.sort();
    set.dedup();
    let mut out: Vec<String> = framework_order()
        .into_iter()
        .filter(|n| set.iter().any(|s| s == n))
        .map(str::to_owned)
        .collect();
    let rest: Vec<String> = set.into_iter().filter(|s| !out.contains(s)).collect();
    out.extend(rest);
    out
}

/// Whether `name` is a floor or reference measured for comparison
/// ([`crate::framework::Framework::BASELINE`]), not a framework.
pub(super) fn is_baseline(name: &str) -> bool {
    crate::frameworks::find(name).is_some_and(|e| e.baseline)
}

pub(super) fn scenario_header(first: &str) -> Vec<String> {
    std::iter::once(first.to_owned())
        .chain(SCENARIOS.iter().map(|s| s.name.to_owned()))
        .collect()
}

/// Where the loopback times come from when `framebench time --loopback` took them: the tables'
/// and the consistency checks' one name for it.
const INTERLEAVED_LOOPBACK: &str = "`framebench time --loopback`, interleaved rounds";

/// Builds the whole report from the files under `target_dirs` (one, or one per shard of a
/// sharded `cargo bench`, [`read_shards`]); with `charts`, draws its charts into that folder
/// (`(folder, the folder as the report links to it)`) and embeds them above the tables. Sources
/// of several builds are refused in one line unless `allow_mixed` ([`builds`]).
pub(crate) fn generate(
    target_dirs: &[PathBuf],
    charts: Option<(&Path, &str)>,
    allow_mixed: bool,
) -> anyhow::Result<(String, crate::results::Results)> {
    let Shards {
        timings,
        newest,
        counts,
        allocs,
        deltas,
        text: shards_text,
        sources,
        machines,
        interleaved,
    } = read_shards(target_dirs)?;
    let target_dir = target_dirs.first().context("no target folder")?.as_path();
    anyhow::ensure!(
        !timings.is_empty() || !counts.is_empty() || !allocs.is_empty() || !deltas.is_empty(),
        "no results under {0}/criterion, {0}/gungraun, {0}/{ALLOCS_JSON} or {0}/{1}: run \
         `cargo bench`, `framebench allocs --json {0}/{ALLOCS_JSON}` or `framebench deltas \
         --json {0}/{1}` first",
        target_dir.display(),
        paired::DELTAS_JSON
    );
    let provenance = builds::provenance(&sources, allow_mixed)?;
    // The machine the first source recorded (the benches', `allocs`' or `deltas`'), else this one.
    let machine = machines
        .into_iter()
        .next()
        .unwrap_or_else(crate::env::Environment::current);
    let header = provenance.lines();
    let results = results_of(&timings, &counts, &allocs, provenance, &machine);
    let timings = Timings(&timings);
    let mut out = String::new();
    write_preamble(&mut out);
    write_environment(&mut out, &header, &machine, newest, target_dir);
    out.push_str(&shards_text);
    write_reading(&mut out);
    if let Some((dir, link)) = charts {
        let sources = charts::Sources {
            timings: timings.0,
            counts: &counts,
            allocs: &allocs,
            interleaved: &interleaved,
        };
        charts::write(&mut out, &sources, dir, link)?;
    }
    write_in_process(&mut out, &timings, interleaved.contains(&"in_process"));
    write_differences(&mut out, &deltas);
    write_counts(&mut out, &counts, "loopback");
    write_loopback(
        &mut out,
        &timings,
        &deltas,
        interleaved.contains(&"loopback"),
    );
    write_counts(&mut out, &counts, "in_process");
    write_allocs(&mut out, &allocs);
    let loopback_source = if interleaved.contains(&"loopback") {
        INTERLEAVED_LOOPBACK
    } else {
        "criterion, pre-encoded client"
    };
    write_consistency(
        &mut out,
        timings.0,
        &deltas,
        &counts,
        &allocs,
        loopback_source,
    );
    Ok((out, results))
}

#[cfg(test)]
mod tests {
    use super::findings::findings;
    use super::*;
    use crate::allocs::{Counts, Measured};
    use crate::interval::Estimate;
    use crate::paired::{Delta, Kind};

    /// Every in-process framework counted 12 allocations (15 with logging), the floor 2.
    /// Frameworks of the allocation tests, the floor first: the unit tests' registry holds the
    /// baselines only (src/frameworks/mod.rs), and the report names whatever its cells name.
    const ALLOCS_NAMES: [&str; 3] = ["null", "axum", "actix"];

    fn cells() -> Vec<Measured> {
        let floor = crate::frameworks::floor().unwrap().name;
        let mut out = Vec::new();
        for name in ALLOCS_NAMES {
            for s in crate::allocs::scenarios() {
                for logging in ["off", "sink"] {
                    let allocs = match (name == floor, logging) {
                        (true, _) => 2,
                        (false, "off") => 12,
                        (false, _) => 15,
                    };
                    out.push(Measured {
                        framework: name.to_owned(),
                        scenario: s.name.to_owned(),
                        logging: logging.to_owned(),
                        counts: Some(Counts {
                            allocs,
                            bytes_allocated: allocs * 100,
                            ..Counts::default()
                        }),
                        error: None,
                        varies: Vec::new(),
                    });
                }
            }
        }
        out
    }

    fn logging_delta(framework: &str, scenario: &str, point: f64, lo: f64, hi: f64) -> Delta {
        let at = |p: f64| {
            Some(Estimate {
                point: p,
                lo: p - 10.0,
                hi: p + 10.0,
            })
        };
        Delta {
            kind: Kind::Logging,
            framework: framework.into(),
            scenario: scenario.into(),
            base: "log=off,io=memory".into(),
            with: "log=sink,io=memory".into(),
            rounds: 30,
            batch: 1000,
            base_ns: at(3800.0),
            with_ns: at(3800.0 + point),
            delta_ns: Some(Estimate { point, lo, hi }),
            ratio: None,
            error: None,
        }
    }

    fn count(framework: &str, key: &str, instructions: f64) -> Count {
        Count {
            key: key.into(),
            framework: framework.into(),
            instructions,
        }
    }

    #[test]
    fn an_overlapping_difference_prints_approximately_and_is_not_listed() {
        let deltas = vec![logging_delta("nickel", "hello", -802.0, -1500.0, 200.0)];
        let mut out = String::new();
        write_differences(&mut out, &deltas);
        let row = out.lines().find(|l| l.starts_with("| nickel |")).unwrap();
        assert!(row.contains("≈ (±1.00 µs)"), "{out}");
        assert!(!row.contains('−'), "a signed figure for noise: {row}");
        assert!(findings(&deltas, &[], &[]).is_empty());
    }

    #[test]
    fn a_separated_negative_cost_prints_its_sign_and_is_listed() {
        let deltas = vec![logging_delta("nickel", "hello", -802.0, -900.0, -700.0)];
        let counts = vec![
            count("nickel", "in_process/hello/off", 27_055.0),
            count("nickel", "in_process/hello/sink", 32_893.0),
        ];
        let mut out = String::new();
        write_differences(&mut out, &deltas);
        assert!(out.contains("−802 ns ±102 ns (−21 %) †"), "{out}");
        let found = findings(&deltas, &counts, &[]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contradiction,
            "faster by time, +5,838 instructions"
        );
        assert_eq!(found[0].counts, "+5,838 instructions");
        let mut out = String::new();
        write_consistency(&mut out, &[], &deltas, &counts, &[], "criterion");
        assert!(
            out.contains("1 contradiction(s), 0 other finding(s)"),
            "{out}"
        );
        assert!(out.contains("| logging nickel hello |"), "{out}");
    }

    #[test]
    fn a_separated_cost_that_the_counts_confirm_is_not_listed() {
        let deltas = vec![logging_delta("axum", "hello", 300.0, 250.0, 350.0)];
        let counts = vec![
            count("axum", "in_process/hello/off", 20_000.0),
            count("axum", "in_process/hello/sink", 22_000.0),
        ];
        assert!(findings(&deltas, &counts, &[]).is_empty());
        // The reverse: the time says dearer, the counts say less work.
        let counts = vec![
            count("axum", "in_process/hello/off", 22_000.0),
            count("axum", "in_process/hello/sink", 20_000.0),
        ];
        let found = findings(&deltas, &counts, &[]);
        assert!(found.len() == 1 && found[0].contradiction, "{found:?}");
    }

    #[test]
    fn faster_than_raw_is_marked_and_checked_against_the_loopback_count() {
        let ratio = |point: f64, lo: f64, hi: f64| Delta {
            kind: Kind::VsRaw,
            base: "raw".into(),
            with: "may-minihttp".into(),
            delta_ns: None,
            ratio: Some(Estimate { point, lo, hi }),
            ..logging_delta("may-minihttp", "hello", 0.0, 0.0, 0.0)
        };
        let counts = vec![
            count("may-minihttp", "loopback/hello", 60_000.0),
            count("raw", "loopback/hello", 20_000.0),
        ];
        let noise = ratio(1.31, 0.95, 1.60);
        assert_eq!(difference_text(&noise), "≈ (±0.36)");
        assert!(findings(&[noise], &counts, &[]).is_empty());
        let faster = ratio(1.10, 1.05, 1.15);
        assert_eq!(difference_text(&faster), "1.10 ±0.05 ‡");
        let found = findings(&[faster], &counts, &[]);
        assert!(found.len() == 1 && found[0].contradiction, "{found:?}");
        assert!(found[0].counts.contains("60,000"), "{found:?}");
        let slower = ratio(0.80, 0.78, 0.82);
        assert_eq!(difference_text(&slower), "0.80 ±0.02");
        assert!(findings(std::slice::from_ref(&slower), &counts, &[]).is_empty());
        // Slower than raw in time, yet fewer instructions per request than raw: listed.
        let fewer = vec![
            count("may-minihttp", "loopback/hello", 10_000.0),
            count("raw", "loopback/hello", 20_000.0),
        ];
        let found = findings(&[slower], &fewer, &[]);
        assert!(found.len() == 1 && found[0].contradiction, "{found:?}");
    }

    #[test]
    fn the_consistency_section_runs_every_check() {
        // raw's hello is out of line with its other scenarios; by that time "quick" beats raw,
        // against its paired ratio and against its instruction count.
        let time = |fw: &str, scenario: &str, us: f64| {
            Timing::of(&format!("loopback/{scenario}"), fw, "raw-client", us, 0.2)
        };
        let mut timings = vec![time("raw", "hello", 15.36), time("quick", "hello", 12.0)];
        for s in ["json", "static", "paste"] {
            timings.push(time("raw", s, 8.5));
        }
        let mut ratio =
            crate::paired::empty(Kind::VsRaw, "quick", "hello", "raw".into(), "quick".into());
        ratio.ratio = Some(Estimate {
            point: 0.67,
            lo: 0.66,
            hi: 0.68,
        });
        let counts = vec![
            count("raw", "loopback/hello", 2_216.0),
            count("quick", "loopback/hello", 9_865.0),
        ];
        let mut out = String::new();
        write_consistency(&mut out, &timings, &[ratio], &counts, &[], "criterion");
        for expected in [
            "### Differences against the counts",
            "| hello | 1 | 1 |",
            "| hello | quick 12.00 µs ±<1 % < raw 15.36 µs ±<1 % | quick 0.670 (0.660–0.680) < raw 1 (reference) |",
            "| raw | loopback raw-client | hello | 15.36 µs ±<1 % | 3 within 8.50 µs ± 17 ns |",
            "| hello | quick 12.00 µs ±<1 % < raw 15.36 µs ±<1 % | quick 9,865 > raw 2,216 (×4.45) |",
        ] {
            assert!(out.contains(expected), "no {expected:?} in:\n{out}");
        }
    }

    #[test]
    fn the_allocation_table_has_every_framework_with_the_floor_subtracted() {
        let mut out = String::new();
        write_allocs(&mut out, &cells());
        let floor = crate::frameworks::floor().unwrap().name;
        let row = |name: &str| {
            out.lines()
                .find(|l| l.starts_with(&format!("| {name} |")))
                .unwrap_or_else(|| panic!("no row for {name}:\n{out}"))
                .to_owned()
        };
        assert!(row(floor).starts_with(&format!("| {floor} | 2 | 2 |")));
        for name in ALLOCS_NAMES.into_iter().filter(|n| *n != floor) {
            assert!(
                row(name).starts_with(&format!("| {name} | 10 | 10 |")),
                "{out}"
            );
        }
        assert!(out.contains("| 1000 |"), "bytes, floor subtracted: {out}");
        assert!(out.contains("| axum | +3 |"), "{out}");
    }

    #[test]
    fn a_cell_not_counted_says_fail() {
        let mut cells = cells();
        let floor = crate::frameworks::floor().unwrap().name;
        let cell = cells.iter_mut().find(|c| c.framework == floor).unwrap();
        cell.counts = None;
        cell.error = Some("repeats disagree".into());
        let mut out = String::new();
        write_allocs(&mut out, &cells);
        assert!(out.contains(&format!("| {floor} | FAIL |")), "{out}");
    }

    #[test]
    fn allocs_only_replaces_its_section_and_keeps_the_others() {
        let dir = std::env::temp_dir().join(format!("framebench-report-{}", std::process::id()));
        let json = dir.join(ALLOCS_JSON);
        std::fs::create_dir_all(json.parent().unwrap()).unwrap();
        let report = crate::allocs::report::Report {
            repeats: 5,
            cells: cells(),
        };
        let results = report
            .results(crate::provenance::Window::since(
                std::time::SystemTime::now(),
            ))
            .unwrap();
        std::fs::write(&json, serde_json::to_string(&results).unwrap()).unwrap();
        let old = format!(
            "# Results\n\nold preamble\n\n## Environment\n\n- kept\n\n{ALLOCS_HEADING} \
             (`framebench allocs`)\n\nstale table\n\n## Loopback\n\nkept table\n"
        );
        let new = update_allocs(&old, &dir).unwrap();
        let again = update_allocs(&new, &dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            !new.contains("old preamble") && !new.contains("stale table"),
            "{new}"
        );
        assert!(
            new.contains("- kept") && new.contains("kept table"),
            "{new}"
        );
        assert_eq!(new.matches(ALLOCS_HEADING).count(), 1, "{new}");
        assert!(new.find("kept table") < new.find(ALLOCS_HEADING), "{new}");
        // Running it again changes nothing but the counted date, which is the same here.
        assert_eq!(again, new);
    }
}
