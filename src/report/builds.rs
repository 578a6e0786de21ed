//! Which build measured each source of a report, and the refusal to join several.
//!
//! A source is one bench target's results in one target folder (`target/criterion/in_process`,
//! `target/gungraun/callgrind`, …) or one of framebench's files (`target/allocs/allocs.json`,
//! `target/deltas/deltas.json`). framebench's files carry their build ([`Provenance`]). The bench
//! targets record theirs when they start measuring, in one file per target next to their tool's
//! output ([`crate::bench::run`]); criterion and gungraun write nothing of ours into
//! their own files, and one file per target costs each bench one line instead of a file per
//! cell in folders whose names are the tools' business. A filtered run (`cargo bench -- axum`)
//! rewrites the target's run file but only some cells: a cell written before the recorded run
//! began is kept by an earlier run, whose build is no longer on record, and so is counted as
//! measured by an unknown build. So is every cell of a target without a run file (benches of
//! before this file was written), and a file of framebench's that names no build.
//!
//! The report refuses sources of two known builds unless `--allow-mixed`, and then names each
//! build with its sources. A build is its commit and whether its tree was dirty: two dirty builds
//! of one commit count as one, as nothing recorded tells them apart. A source of an unknown
//! build is named but never refused: it may well be of the known build beside it, and a report
//! of older files should still be written (docs/usage.md, "framebench report").

use std::path::Path;
use std::time::{Duration, SystemTime};

use super::files_named;
use crate::bench::run::{self, RunRecord};
use crate::env::Environment;
use crate::provenance::{Build, Provenance, Source, Window};

/// The bench targets whose files the report reads, each with its tool.
const BENCHES: [(&str, &str); 4] = [
    ("criterion", "in_process"),
    ("criterion", "loopback"),
    ("gungraun", "callgrind"),
    ("gungraun", "callgrind_loopback"),
];

/// The sources of the bench targets in target folder `dir`, and the machines their run files
/// name.
pub(super) fn of_benches(dir: &Path) -> anyhow::Result<(Vec<Source>, Vec<Environment>)> {
    let mut sources = Vec::new();
    let mut machines = Vec::new();
    for (tool, bench) in BENCHES {
        let tool_dir = dir.join(tool);
        let written = written(&tool_dir, tool, bench);
        if written.is_empty() {
            continue;
        }
        let name = format!("{}/{tool}/{bench}", dir.display());
        let path = run::run_path(&tool_dir, bench);
        let record = if path.exists() {
            Some(crate::versioned::read::<RunRecord>(&path)?)
        } else {
            None
        };
        let (mine, older) = split(&written, record.as_ref());
        if let (Some(r), Some(last)) = (&record, mine.iter().max()) {
            let run = Source::of_file(&name, Some(&r.provenance), &r.environment, Some(*last));
            sources.extend(run.into_iter().map(|s| Source {
                window: s.window.map(|w| w.reaching(*last)),
                ..s
            }));
            machines.push(r.environment.clone());
        }
        if !older.is_empty() {
            let name = match record {
                Some(_) => format!("{name} ({} cells from before its last run)", older.len()),
                None => name,
            };
            sources.push(Source {
                name,
                build: Build::unknown(),
                window: span(&older),
            });
        }
    }
    Ok((sources, machines))
}

/// When each result file of `bench` under `tool_dir` was written: criterion's
/// `<group>/<function>/<value>/new/estimates.json` under the folders of the target's groups
/// (`in_process/hello` is `in_process_hello`), gungraun's `summary.json` under the target's
/// folder (`framebench/callgrind/…`).
fn written(tool_dir: &Path, tool: &str, bench: &str) -> Vec<SystemTime> {
    let is_criterion = tool == "criterion";
    let ours = |p: &Path| {
        let names: Vec<String> = p
            .strip_prefix(tool_dir)
            .map(|r| r.iter().map(|c| c.to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        if is_criterion {
            names
                .first()
                .is_some_and(|g| g.starts_with(&format!("{bench}_")))
                && names.iter().rev().nth(1).is_some_and(|n| n == "new")
        } else {
            names.iter().any(|n| n == bench)
        }
    };
    let mut files = Vec::new();
    let name = if is_criterion {
        "estimates.json"
    } else {
        "summary.json"
    };
    files_named(tool_dir, name, &mut files);
    files
        .iter()
        .filter(|p| ours(p))
        .filter_map(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .collect()
}

/// `written` split into the times of the run `record` names (from its start on) and the older
/// ones (all of them without a record). The record keeps whole seconds.
fn split(written: &[SystemTime], record: Option<&RunRecord>) -> (Vec<SystemTime>, Vec<SystemTime>) {
    let Some(r) = record else {
        return (Vec::new(), written.to_vec());
    };
    let Some(start) = r.provenance.window.map(|w| w.start()) else {
        return (written.to_vec(), Vec::new());
    };
    written
        .iter()
        .partition(|&&t| t + Duration::from_secs(1) > start)
}

/// The window from the first to the last of `times`.
fn span(times: &[SystemTime]) -> Option<Window> {
    let (first, last) = (times.iter().min()?, times.iter().max()?);
    Some(Window::new(*first, *last))
}

/// The provenance of a report of `sources`: refused, one line of bad input (exit 2), when they
/// come from two known builds and `allow_mixed` is off.
pub(super) fn provenance(sources: &[Source], allow_mixed: bool) -> anyhow::Result<Provenance> {
    let joined = Provenance::joined(sources);
    let known = joined.known();
    if known.len() > 1 && !allow_mixed {
        let builds: Vec<String> = known
            .iter()
            .map(|m| format!("{} ({})", m.build, m.sources.join(", ")))
            .collect();
        return Err(crate::error::usage(format!(
            "the sources were measured by {} builds: {}; measure them again with one build, or \
             pass --allow-mixed to report them together",
            known.len(),
            builds.join("; ")
        )));
    }
    Ok(joined)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provenance::MeasuredBy;

    fn at(secs: u64) -> SystemTime {
        std::time::UNIX_EPOCH + Duration::from_secs(secs)
    }

    fn record(start: u64) -> RunRecord {
        RunRecord {
            schema: run::RUN_SCHEMA.into(),
            provenance: Provenance::here(Window::new(at(start), at(start))),
            environment: Environment::current(),
        }
    }

    #[test]
    fn cells_written_before_the_recorded_run_are_of_an_unknown_build() {
        let written = [at(990), at(1_000), at(1_500)];
        let (mine, older) = split(&written, Some(&record(1_000)));
        assert_eq!((mine, older), (vec![at(1_000), at(1_500)], vec![at(990)]));
        let (mine, older) = split(&written, None);
        assert!(mine.is_empty() && older.len() == 3);
    }

    #[test]
    fn two_known_builds_are_refused_in_one_line_and_allowed_with_the_flag() {
        let source = |name: &str, revision: &str| Source {
            name: name.into(),
            build: Build::parse(revision),
            window: Some(Window::new(at(0), at(60))),
        };
        let (a, b) = ("a".repeat(40), "b".repeat(40));
        let mixed = [
            source("t/criterion/in_process", &a),
            source("t/gungraun/callgrind", &b),
            source("t/allocs/allocs.json", ""),
        ];
        let e = provenance(&mixed, false).unwrap_err();
        assert!(e.is::<crate::error::BadInput>());
        assert_eq!(
            e.to_string(),
            format!(
                "the sources were measured by 2 builds: {a} (t/criterion/in_process); {b} \
                 (t/gungraun/callgrind); measure them again with one build, or pass \
                 --allow-mixed to report them together"
            )
        );
        let allowed = provenance(&mixed, true).unwrap();
        let sources: Vec<&[String]> = allowed.measured.iter().map(|m| &m.sources[..]).collect();
        assert_eq!(sources.len(), 3, "{allowed:?}");
        // One known build beside an unknown one: named, not refused.
        let one = provenance(&[mixed[0].clone(), mixed[2].clone()], false).unwrap();
        assert_eq!(
            one.measured,
            [
                MeasuredBy {
                    build: Build::parse(&a),
                    sources: vec!["t/criterion/in_process".into()]
                },
                MeasuredBy {
                    build: Build::unknown(),
                    sources: vec!["t/allocs/allocs.json".into()]
                }
            ]
        );
    }
}
