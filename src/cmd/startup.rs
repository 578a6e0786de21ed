//! `framebench startup`: each framework's time from `exec` of `framebench serve X` to its first
//! 200, in interleaved rounds beside the reference server's, and its memory right after
//! (`crate::startup`). Prints one table; `--json` writes a `framebench-results` file.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::framework::Entry;
use crate::options::Options;
use crate::outcome::Outcome;
use crate::results::Results;
use crate::startup::{Start, Started};
use crate::table::{Align, Table};

/// `framebench startup`.
#[derive(clap::Args)]
pub struct StartupArgs {
    /// Frameworks, comma-separated (default: every one with a server). The reference server
    /// (`raw`) is always added: each time is also given as a ratio to its.
    #[arg(long, value_delimiter = ',')]
    frameworks: Vec<String>,
    /// Rounds: each starts every framework's server once, in turn.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(6..=200))]
    rounds: u16,
    /// Write the results to this file (`-`: stdout, instead of the table).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
}

/// Runs `framebench startup`.
pub fn run(args: StartupArgs) -> anyhow::Result<ExitCode> {
    let mut entries = crate::select::frameworks(
        &args.frameworks,
        |e| e.loopback,
        "has no server: it has no start-up to time",
    )?;
    let reference = crate::frameworks::reference();
    if let Some(r) = reference.filter(|r| !entries.iter().any(|e| e.name == r.name)) {
        entries.insert(0, r);
    }
    let pinning = crate::pinning::Pinning::one_core_each();
    if !pinning.client_cpus.is_empty() {
        crate::pinning::pin_current_thread(&pinning.client_cpus);
    }
    let exe = crate::child::framebench_exe()?;
    // One Redis for every server, started here: none starts its own.
    let _redis = crate::redis::provide(None)?;
    crate::select::prepare_entries(entries.iter().copied());
    let expected = crate::startup::expected()?;
    let options = Options {
        threads: 1,
        ..Options::default()
    };
    eprintln!(
        "framebench startup: {} framework(s) × {} interleaved rounds; from the spawn of \
         `framebench serve X --threads 1` to its first 200 on a new connection; {}",
        entries.len(),
        args.rounds,
        pinning.servers_and_client()
    );
    let started = std::time::SystemTime::now();
    let mut runs: Vec<Outcome<Vec<Start>>> = entries.iter().map(|_| Ok(Vec::new())).collect();
    for _ in 0..args.rounds {
        for (entry, runs) in entries.iter().zip(&mut runs) {
            let Ok(done) = runs else { continue };
            match crate::startup::measure(&exe, entry, options, &pinning.server_cpus, &expected) {
                Ok(start) => done.push(start),
                Err(e) => *runs = Err(e),
            }
        }
    }
    let rows = rows(&entries, &runs, reference.map(|r| r.name));
    let results = Results {
        detail: Some(serde_json::to_value(&rows)?),
        ..Results::new(
            "startup",
            rows.iter()
                .map(|r| crate::startup::figure(&r.framework, &r.summary))
                .collect(),
            crate::provenance::Provenance::here(crate::provenance::Window::since(started)),
        )
    };
    match args.json.as_deref() {
        Some(p) if p.as_os_str() == "-" => println!("{}", serde_json::to_string_pretty(&results)?),
        Some(p) => {
            print!("{}", render(&rows, &runs, &entries));
            results.write(p)?;
            eprintln!("wrote {}", p.display());
        }
        None => print!("{}", render(&rows, &runs, &entries)),
    }
    let failed: Vec<String> = entries
        .iter()
        .zip(&runs)
        .filter(|(_, r)| r.as_ref().is_err_and(|e| e.is_failure()))
        .map(|(e, _)| e.name.to_owned())
        .collect();
    super::cells_failed(&failed, entries.len(), "started")
}

/// The measured frameworks' rows, with each ratio to `reference` taken within each round.
fn rows(entries: &[&Entry], runs: &[Outcome<Vec<Start>>], reference: Option<&str>) -> Vec<Started> {
    let of = |name: &str| {
        entries
            .iter()
            .zip(runs)
            .find(|(e, _)| e.name == name)
            .and_then(|(_, r)| r.as_ref().ok())
    };
    let base = reference.and_then(of);
    entries
        .iter()
        .zip(runs)
        .filter_map(|(e, r)| {
            let starts = r.as_ref().ok()?;
            let to_raw = base.filter(|_| Some(e.name) != reference).and_then(|b| {
                let ratios: Vec<f64> = starts
                    .iter()
                    .zip(b)
                    .map(|(s, b)| s.to_first_200_s / b.to_first_200_s)
                    .collect();
                crate::interval::median_interval(&ratios)
            });
            Some(Started {
                framework: e.name.to_owned(),
                summary: crate::startup::summarize(starts)?,
                to_raw,
            })
        })
        .collect()
}

/// The table, then one line per framework not measured.
fn render(rows: &[Started], runs: &[Outcome<Vec<Start>>], entries: &[&Entry]) -> String {
    let mut table = Table::new([
        ("framework", Align::Left),
        ("to first 200", Align::Right),
        ("95 % interval", Align::Right),
        ("× raw", Align::Right),
        ("RSS after", Align::Right),
        ("PSS after", Align::Right),
    ]);
    let ms = |s: f64| format!("{:.1} ms", s * 1e3);
    for r in rows {
        let t = r.summary.to_first_200;
        table.row([
            r.framework.clone(),
            ms(t.point),
            format!("{}–{}", ms(t.lo), ms(t.hi)),
            crate::startup::ratio_cell(r.to_raw),
            crate::units::fmt_bytes(r.summary.rss),
            crate::units::fmt_bytes(r.summary.pss),
        ]);
    }
    let mut out = table.terminal("");
    for (e, r) in entries.iter().zip(runs) {
        if let Err(why) = r {
            out.push_str(&why.note(e.name));
            out.push('\n');
        }
    }
    out
}
