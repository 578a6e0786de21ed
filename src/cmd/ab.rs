//! `framebench ab`: two framebench builds timed against each other in paired rounds
//! (`crate::ab` drives the workers).

use std::path::PathBuf;
use std::process::ExitCode;

use crate::ab::{cell, Worker, BATCH};

/// `framebench ab` arguments.
#[derive(Debug, clap::Args)]
pub struct AbArgs {
    /// The old build's `framebench` binary.
    pub(crate) old: PathBuf,
    /// The new build's `framebench` binary (the same path compares a build with itself).
    pub(crate) new: PathBuf,
    /// In-process frameworks to compare (default: every one of this build; a framework the
    /// other build lacks is a FAIL row).
    pub(crate) frameworks: Vec<String>,
    /// Scenarios, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "hello")]
    pub(crate) scenarios: Vec<String>,
    /// Fresh pairs of worker processes per cell (at least 6, which bounds a median at 95 %).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(6..=1000))]
    pub(crate) restarts: u16,
    /// Paired rounds per pair of workers.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub(crate) rounds: u16,
}

/// Runs `framebench ab`.
pub fn run(args: AbArgs) -> anyhow::Result<ExitCode> {
    let pinning = crate::pinning::Pinning::one_core_each();
    let cpus = pinning.server_cpus.clone();
    // Both binaries must answer before anything is timed.
    drop(Worker::start(&args.old, &cpus)?);
    drop(Worker::start(&args.new, &cpus)?);
    let frameworks: Vec<String> = if args.frameworks.is_empty() {
        crate::frameworks::REGISTRY
            .iter()
            .filter(|e| e.in_process && !e.baseline)
            .map(|e| e.name.to_owned())
            .collect()
    } else {
        args.frameworks.clone()
    };
    for s in &args.scenarios {
        crate::select::scenario(s)?;
    }
    println!(
        "framebench ab: {} fresh pairs of workers per cell, {} paired rounds each, batches of about \
         {} ms, both builds pinned to {}; NEW / OLD time per request, the median over the pairs \
         with its 95 % interval, `≈` when it holds 1.00",
        args.restarts,
        args.rounds,
        BATCH.as_millis(),
        pinning
            .server_cpus
            .first()
            .map_or("no core (pinning unavailable)".to_owned(), |c| format!("core {c}"))
    );
    println!("old: {}\nnew: {}", args.old.display(), args.new.display());
    println!(
        "{:<14} {:<10} {:>12}  new / old",
        "framework", "scenario", "old"
    );
    let mut rows = Vec::new();
    for fw in &frameworks {
        for scenario in &args.scenarios {
            let binaries = (&args.old, &args.new, cpus.as_slice());
            let row = cell(
                binaries,
                fw,
                scenario,
                args.restarts.into(),
                args.rounds.into(),
            );
            let text = match &row.ratio {
                Ok(r) if r.separated(1.0) => format!(
                    "{:.3} ±{:.3} ({:+.1} %)",
                    r.point,
                    r.half_width(),
                    100.0 * (r.point - 1.0)
                ),
                Ok(r) => format!("≈ (±{:.3})", r.half_width()),
                Err(e) => format!("FAIL {e:#}"),
            };
            let old_ns = row
                .old_ns
                .map_or("–".to_owned(), |e| crate::units::fmt_ns(e.point));
            println!(
                "{:<14} {:<10} {:>12}  {text}",
                row.framework, row.scenario, old_ns
            );
            rows.push(row);
        }
    }
    let failed = rows.iter().filter(|r| r.ratio.is_err()).count();
    if failed > 0 {
        return Err(anyhow::anyhow!(
            "{failed} cell(s) not compared (FAIL above)"
        ));
    }
    Ok(ExitCode::SUCCESS)
}
