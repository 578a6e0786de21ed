//! `framebench-callgrind-cell`, the second binary's one command: one in-process cell counted
//! under valgrind, as benches/callgrind.rs counts it (`crate::bench::callgrind::worker`).

use std::process::ExitCode;

use crate::bench::callgrind;
use crate::bench::profile::ProfileMode;
use crate::cmd::profile::check_mode;
use crate::fixtures::Fixtures;
use crate::framework::Config;
use crate::options::{Io, Logging, Options};

/// `framebench-callgrind-cell`: the process `profile --callgrind` runs under valgrind.
#[derive(clap::Parser)]
#[command(name = "framebench-callgrind-cell")]
pub struct CallgrindCellArgs {
    /// The build id of the `framebench` that started it ([`crate::env::BUILD`]): refused when
    /// it is not this binary's.
    #[arg(long)]
    pub(crate) build: String,
    /// Framework name.
    pub(crate) framework: String,
    /// Scenario name.
    pub(crate) scenario: String,
    /// Request logging.
    #[arg(long, value_enum, default_value_t = Logging::Off)]
    pub(crate) logging: Logging,
    /// Where static files and pastes are read from.
    #[arg(long, value_enum, default_value_t = Io::Memory)]
    pub(crate) io: Io,
    /// Dispatches counted.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) requests: u32,
}

/// Runs `framebench-callgrind-cell` (see [`callgrind::worker`]).
pub fn run(args: CallgrindCellArgs) -> anyhow::Result<ExitCode> {
    if args.build != crate::env::BUILD {
        return Err(anyhow::anyhow!(
            "{} is from another build than the framebench that started it: build both \
                 with `cargo build --release`",
            callgrind::CELL_BIN
        ));
    }
    let entry = crate::select::framework(&args.framework)?;
    let scenario = crate::select::scenario(&args.scenario)?;
    check_mode(entry, ProfileMode::InProcess)?;
    let fixtures = Fixtures::load_default()?;
    // The options of the callgrind bench's cells: only logging and io are the run's.
    let options = Options {
        logging: args.logging,
        io: args.io,
        ..Options::default()
    };
    let config = Config::new(fixtures, None).with(options);
    callgrind::worker(entry, &config, scenario, args.requests)?;
    Ok(ExitCode::SUCCESS)
}
