//! `framebench deltas`: the differences the report prints, measured in paired rounds (the
//! measurement itself is [`crate::paired`]).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use crate::bench::IO_SCENARIOS;
use crate::env::Environment;
use crate::fixtures::Fixtures;
use crate::framework::Config;
use crate::framework::Entry;
use crate::frameworks::REGISTRY;
use crate::options::{Io, Logging, Options};
use crate::oracle::Scenario;
use crate::oracle::SCENARIOS;
use crate::paired::{in_process, loopback, Delta, Kind, Report, ROUNDS, SCHEMA};
use anyhow::Context;

/// `framebench deltas`.
#[derive(clap::Args)]
pub struct DeltasArgs {
    /// Frameworks (default: every one that has the path a difference needs).
    pub(crate) frameworks: Vec<String>,
    /// Scenarios, comma-separated (default: all; redis needs `redis-server`).
    #[arg(long, value_delimiter = ',')]
    pub(crate) scenarios: Vec<String>,
    /// Which differences, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Kind::Logging, Kind::Disk, Kind::VsRaw])]
    pub(crate) kinds: Vec<Kind>,
    /// Paired rounds per difference (at least 6: fewer cannot bound a median at 95 %).
    #[arg(long, default_value_t = ROUNDS, value_parser = clap::value_parser!(u16).range(6..=1000))]
    pub(crate) rounds: u16,
    /// Write the results as JSON to this file (`-`: stdout, instead of the table), e.g.
    /// `target/deltas/deltas.json`, which `framebench report` reads.
    #[arg(long, value_name = "PATH")]
    pub(crate) json: Option<PathBuf>,
}

/// Runs `framebench deltas`.
pub fn run(args: DeltasArgs) -> anyhow::Result<ExitCode> {
    let entries = entries(&args.frameworks)?;
    let scenarios = scenarios(&args.scenarios)?;
    let started = std::time::SystemTime::now();
    let rounds = usize::from(args.rounds);
    let fixtures = Fixtures::load_default()?;
    let redis = crate::redis::provide(None)?;
    let config = Config::new(Arc::clone(&fixtures), redis.url());
    let to_stdout = args.json.as_deref() == Some(std::path::Path::new("-"));
    let mut cells = Vec::new();
    let mut record = |d: Delta| {
        if !to_stdout {
            print_row(&d);
        }
        cells.push(d);
    };
    if !to_stdout {
        print_header(rounds);
    }
    let runnable: Vec<&&Scenario> = scenarios
        .iter()
        .filter(|s| s.skip_reason(&config).is_none())
        .collect();
    let stop = crate::interrupt::interrupted();
    let interrupted = || stop.load(std::sync::atomic::Ordering::Relaxed);
    let in_process_kinds = [Kind::Logging, Kind::Disk]
        .into_iter()
        .filter(|k| args.kinds.contains(k));
    for kind in in_process_kinds {
        for entry in entries.iter().filter(|e| e.in_process && !e.baseline) {
            // A scenario the framework cannot serve through its own API has no difference.
            for scenario in runnable
                .iter()
                .filter(|s| crate::cell::supported(entry, s, true).is_ok())
            {
                if interrupted() {
                    break;
                }
                if let Some(pair) = variant_pair(kind, scenario) {
                    record(in_process(kind, entry, &config, scenario, pair, rounds));
                }
            }
        }
    }
    if args.kinds.contains(&Kind::VsRaw) {
        loopback(
            &entries,
            &runnable,
            &fixtures,
            rounds,
            &mut record,
            &interrupted,
        )?;
    }
    let failed = cells.iter().filter(|d| d.error.is_some()).count();
    let report = Report {
        schema: SCHEMA.to_owned(),
        environment: Environment::current(),
        pinning: PINNING.to_owned(),
        provenance: Some(crate::provenance::Provenance::here(
            crate::provenance::Window::since(started),
        )),
        cells,
    };
    if let Some(path) = &args.json {
        write_json(&report, path, to_stdout)?;
    }
    // Interrupted: what was measured is written above; the exit says it is not the whole run.
    if interrupted() {
        eprintln!("interrupted: {} difference(s) measured", report.cells.len());
        return Ok(ExitCode::from(130));
    }
    if failed > 0 {
        return Err(anyhow::anyhow!(
            "{failed} difference(s) not measured (FAIL above)"
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// The header of the table `run` prints row by row.
fn print_header(rounds: usize) {
    println!(
        "framebench deltas: {rounds} paired rounds per difference; the median with its 95 % \
         interval, `≈` when it holds no change; `‡`: faster than raw, `†`: less time with \
         the variant, both beyond the interval and no saving to take at its word \
         (docs/methodology/callgrind.md, \"Time against the counts\")"
    );
    println!("environment: {}", Environment::current());
    println!(
        "{:<8} {:<14} {:<10} {:>10} {:>10}  difference",
        "kind", "framework", "scenario", "base", "with"
    );
}

/// The two options an in-process difference of `kind` compares for `scenario`; none for disk
/// I/O on a scenario that reads no file.
fn variant_pair(kind: Kind, scenario: &Scenario) -> Option<(Options, Options)> {
    let off = Options::default();
    match kind {
        Kind::Logging => Some((
            off,
            Options {
                logging: Logging::Sink,
                ..off
            },
        )),
        _ if !IO_SCENARIOS.contains(&scenario.name) => None,
        _ => Some((
            off,
            Options {
                io: Io::Disk,
                ..off
            },
        )),
    }
}

/// `--json`: the report to stdout (`-`) or to a file, its folder made.
fn write_json(report: &Report, path: &std::path::Path, to_stdout: bool) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(report).context("cannot serialize the report")?;
    if to_stdout {
        println!("{text}");
        return Ok(());
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(())
}

/// One line of the terminal table.
fn print_row(d: &Delta) {
    let what = match &d.error {
        Some(e) => format!("FAIL {e}"),
        None => d.text().unwrap_or_else(|| "–".into()),
    };
    let base = d
        .base_ns
        .map_or("–".into(), |e| crate::units::fmt_ns(e.point));
    let with = d
        .with_ns
        .map_or("–".into(), |e| crate::units::fmt_ns(e.point));
    println!(
        "{:<8} {:<14} {:<10} {:>10} {:>10}  {what}",
        d.kind.name(),
        d.framework,
        d.scenario,
        base,
        with
    );
}

/// The frameworks named, or all of them; each kind then takes the ones it applies to.
fn entries(names: &[String]) -> anyhow::Result<Vec<&'static Entry>> {
    if names.is_empty() {
        return Ok(REGISTRY.iter().filter(|e| !e.baseline).collect());
    }
    names.iter().map(|n| crate::select::framework(n)).collect()
}

/// The scenarios named, or all of them.
fn scenarios(names: &[String]) -> anyhow::Result<Vec<&'static Scenario>> {
    if names.is_empty() {
        return Ok(SCENARIOS.iter().collect());
    }
    names.iter().map(|n| crate::select::scenario(n)).collect()
}

/// Where `deltas` runs the server and the client.
const PINNING: &str = "server core 0, client core 1 (vs-raw), when there are two cores";
