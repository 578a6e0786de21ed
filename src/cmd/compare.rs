//! `framebench compare`: `load` over frameworks × scenarios × connection counts; and
//! `framebench --full`, `compare` with its defaults.

use std::process::ExitCode;
use std::time::Duration;

use super::load::{conns, execute, framework_targets, params, streams, LoadOpts};
use crate::driver::Plan;

/// `framebench compare`.
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// Frameworks, comma-separated (default: every one that serves).
    #[arg(long, value_delimiter = ',')]
    pub(crate) frameworks: Vec<String>,
    /// Scenarios, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    pub(crate) scenarios: Vec<String>,
    #[command(flatten)]
    pub(crate) opts: LoadOpts,
}

/// `framebench compare`: frameworks × scenarios × connection counts.
pub fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let plan = Plan {
        targets: framework_targets(&args.frameworks, &args.opts)?,
        scenarios: crate::select::loaded_scenarios(&args.scenarios, false, &args.opts.protocol)?,
        connections: conns(&args.opts, &[5, 10, 25, 50, 100, 500]),
        streams: streams(&args.opts),
        params: params(&args.opts, Duration::from_secs(5))?,
        server_per_target: false,
    };
    execute(plan, &args.opts, "compare")
}

#[derive(clap::Parser)]
struct FullSweep {
    #[command(flatten)]
    args: CompareArgs,
}

/// `framebench --full`: `compare` with its defaults.
pub fn full() -> anyhow::Result<ExitCode> {
    use clap::Parser as _;
    run(FullSweep::parse_from(["framebench"]).args)
}
