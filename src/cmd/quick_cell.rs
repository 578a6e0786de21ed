//! `framebench quick-cell` (hidden): the quick compare's in-process figure for one cell, in ns
//! per request, measured as its table measures it (`scripts/harness-agreement.sh`).

use std::process::ExitCode;

use crate::framework::Config;
use crate::options::Options;
use crate::quick::{Timed, ROUNDS, SAMPLE};

/// `framebench quick-cell`.
#[derive(clap::Args)]
pub struct QuickCellArgs {
    /// Framework name.
    framework: String,
    /// Scenario name.
    scenario: String,
}

/// `framebench quick-cell`: one in-process cell of the quick compare, checked, then timed as
/// the table times it: [`ROUNDS`] rounds of one [`SAMPLE`] batch ([`crate::timing::interleave`]
/// with one cell), their median ([`Timed::of_rounds`]).
pub fn run(args: QuickCellArgs) -> anyhow::Result<ExitCode> {
    let entry = crate::select::framework(&args.framework)?;
    let scenario = crate::select::scenario(&args.scenario)?;
    let config =
        Config::new(crate::fixtures::Fixtures::load_default()?, None).with(Options::default());
    let prepared = crate::cell::prepare(entry, &config, scenario)?;
    let (app, ring) = (&*prepared.app, &prepared.instances);
    let mut timers: Vec<crate::timing::Timer<'_>> =
        vec![Box::new(|n| crate::bench::timed_batch(app, ring, n))];
    let stop = crate::interrupt::interrupted();
    let interrupted = || stop.load(std::sync::atomic::Ordering::Relaxed);
    let rounds = crate::timing::interleave(&mut timers, ROUNDS, SAMPLE, &interrupted)
        .pop()
        .expect("one timer")?;
    anyhow::ensure!(!rounds.ns.is_empty(), "interrupted");
    let timed = Timed::of_rounds(&rounds.ns);
    println!("{:.1}", timed.median.as_secs_f64() * 1e9);
    Ok(ExitCode::SUCCESS)
}
