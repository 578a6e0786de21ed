//! `framebench quick-cell` (hidden): the quick compare's in-process figure for one cell, in ns
//! per request, measured as its table measures it (`scripts/harness-agreement.sh`).

use std::process::ExitCode;

use crate::framework::Config;
use crate::options::Options;
use crate::quick::{time_per_request, SAMPLE};

/// `framebench quick-cell`.
#[derive(clap::Args)]
pub struct QuickCellArgs {
    /// Framework name.
    framework: String,
    /// Scenario name.
    scenario: String,
}

/// `framebench quick-cell`: one in-process cell of the quick compare, checked, then timed
/// with the quick compare's sample and batch count.
pub fn run(args: QuickCellArgs) -> anyhow::Result<ExitCode> {
    let entry = crate::select::framework(&args.framework)?;
    let scenario = crate::select::scenario(&args.scenario)?;
    let config =
        Config::new(crate::fixtures::Fixtures::load_default()?, None).with(Options::default());
    let prepared = crate::cell::prepare(entry, &config, scenario)?;
    let timed = time_per_request(&*prepared.app, &prepared.instances, SAMPLE, 5)?;
    println!("{:.1}", timed.median.as_secs_f64() * 1e9);
    Ok(ExitCode::SUCCESS)
}
