//! `framebench profile`: one framework × scenario in a hot loop for a bounded time (for `perf
//! record`), sampled into a flamegraph, or counted under callgrind.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::fixtures::Fixtures;
use crate::framework::{Config, Entry};
use crate::options::{Io, Logging, Options};
use crate::oracle;

use crate::bench::profile::{self, HotLoop, ProfileMode};
use crate::bench::{callgrind, flamegraph};
use crate::tools::Tool;

/// Longest `profile --seconds`.
pub(crate) const MAX_SECONDS: u64 = 3600;

/// `framebench profile`.
#[derive(clap::Args)]
pub struct ProfileArgs {
    /// Framework name (see `framebench list`).
    pub(crate) framework: String,
    /// Scenario name (see `framebench list`).
    pub(crate) scenario: String,
    /// In-process (dispatch, no socket) or loopback (served on 127.0.0.1, one keep-alive
    /// connection).
    #[arg(long, value_enum, default_value_t = ProfileMode::InProcess)]
    pub(crate) mode: ProfileMode,
    /// How long to run the hot loop [default: 10, 5 with --flamegraph].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=MAX_SECONDS))]
    pub(crate) seconds: Option<u64>,
    /// Request logging.
    #[arg(long, value_enum, default_value_t = Logging::Off)]
    pub(crate) logging: Logging,
    /// Where static files and pastes are read from.
    #[arg(long, value_enum, default_value_t = Io::Memory)]
    pub(crate) io: Io,
    /// Server worker threads (loopback).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub(crate) threads: u16,
    /// Instead of the hot loop: one in-process dispatch after the warm-up of `framebench
    /// allocs`, its allocations grouped by the site that made them, most first.
    #[arg(long, conflicts_with_all = ["mode", "seconds"])]
    pub(crate) allocs: bool,
    /// With `--allocs`: frames that name a site (more splits the sites finer).
    #[arg(long, default_value_t = 3, requires = "allocs", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub(crate) depth: u16,
    /// Samples the hot loop (every thread, no perf needed) and writes a flamegraph there.
    #[arg(long, value_name = "FILE.svg", conflicts_with = "allocs")]
    pub(crate) flamegraph: Option<PathBuf>,
    /// Instead of the hot loop: counts in-process dispatches under callgrind (valgrind) as
    /// `cargo bench --bench callgrind` counts one, writes the callgrind.out file and prints the
    /// functions with the most instructions per request.
    #[arg(long, conflicts_with_all = ["allocs", "flamegraph", "seconds"])]
    pub(crate) callgrind: bool,
    /// With `--callgrind`: also counts OTHER's cell and prints, per function, the instructions
    /// per request FRAMEWORK spends beyond OTHER.
    #[arg(long, value_name = "OTHER", requires = "callgrind")]
    pub(crate) against: Option<String>,
    /// With `--callgrind`: count the cell in two builds of framebench, the pinned release of
    /// CRATE and your checkout of it at PATH (built as `ab --patch` builds them; logging off, io
    /// memory, 100 dispatches), and print per function the instructions per request the
    /// checkout spends beyond the release.
    #[arg(long, value_name = "CRATE=PATH", value_parser = crate::ab::parse_patch, requires = "callgrind", conflicts_with_all = ["against", "logging", "io", "requests"])]
    pub(crate) patch: Option<crate::ab::checkout::Patch>,
    /// With `--patch`: the checkout at REV is the base, instead of the pinned release.
    #[arg(long, value_name = "REV", requires = "patch")]
    pub(crate) base: Option<String>,
    /// With `--patch`: the scratch folder, as `ab --patch --scratch` [default: target/ab-patch].
    #[arg(long, value_name = "DIR", requires = "patch")]
    pub(crate) scratch: Option<PathBuf>,
    /// With `--callgrind`: dispatches counted (the figures are per request).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub(crate) requests: u32,
    /// With `--callgrind`: functions listed (each way with `--against`).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub(crate) top: u16,
}

/// Runs `framebench profile`.
pub fn run(args: ProfileArgs) -> anyhow::Result<ExitCode> {
    let entry = crate::select::framework(&args.framework)?;
    let scenario = crate::select::scenario(&args.scenario)?;
    check_mode(entry, args.mode)?;
    let options = Options {
        logging: args.logging,
        io: args.io,
        threads: args.threads.into(),
        ..Options::default()
    };
    if args.callgrind {
        return profile_callgrind(&args, entry, scenario, options);
    }
    let fixtures = Fixtures::load_default()?;
    let config = Config::new(fixtures, None).with(options);
    if args.allocs {
        let text = profile::allocation_sites(entry, scenario, &config, args.depth.into())?;
        print!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    let default_seconds = if args.flamegraph.is_some() { 5 } else { 10 };
    let seconds = args.seconds.unwrap_or(default_seconds);
    eprintln!(
        "profiling {} {} ({:?}, {}) for {} s, pid {}",
        entry.name,
        scenario.name,
        args.mode,
        options.label(),
        seconds,
        std::process::id()
    );
    let hot = HotLoop::start(entry, scenario, &config, args.mode)?;
    let seconds = Duration::from_secs(seconds);
    let (summary, samples) = match &args.flamegraph {
        Some(out) => {
            let title = format!(
                "framebench profile {} {} --mode {} ({})",
                entry.name,
                scenario.name,
                mode_name(args.mode),
                options.label()
            );
            let written = flamegraph::write(hot, seconds, out, &title)?;
            (written.summary, Some((out, written.samples)))
        }
        None => {
            let mut hot = hot;
            let summary = hot.run(seconds)?;
            hot.finish()?;
            (summary, None)
        }
    };
    let per = summary.measured.as_secs_f64() / summary.requests.max(1) as f64;
    println!(
        "{} {} {:?}: {} requests in {:.2} s, {:.0} ns per request",
        entry.name,
        scenario.name,
        args.mode,
        summary.requests,
        summary.elapsed.as_secs_f64(),
        per * 1e9
    );
    if let Some((out, samples)) = samples {
        println!(
            "wrote {} ({samples} samples of every thread, {:.0} per second)",
            out.display(),
            samples as f64 / summary.elapsed.as_secs_f64()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// A usage error when `entry` cannot run in `mode`.
pub(crate) fn check_mode(entry: &Entry, mode: ProfileMode) -> anyhow::Result<()> {
    match mode {
        ProfileMode::InProcess if !entry.in_process => Err(crate::error::usage(format!(
            "{} is loopback only: use --mode loopback",
            entry.name
        ))),
        ProfileMode::Loopback if !entry.loopback => Err(crate::error::usage(format!(
            "{} has no server: use --mode in-process",
            entry.name
        ))),
        _ => Ok(()),
    }
}

/// `--mode`'s spelling of `mode`.
fn mode_name(mode: ProfileMode) -> &'static str {
    match mode {
        ProfileMode::InProcess => "in-process",
        ProfileMode::Loopback => "loopback",
    }
}

/// `framebench profile --callgrind [--against OTHER]`.
fn profile_callgrind(
    args: &ProfileArgs,
    entry: &'static Entry,
    scenario: &'static oracle::Scenario,
    options: Options,
) -> anyhow::Result<ExitCode> {
    if args.mode == ProfileMode::Loopback {
        return Err(crate::error::usage(
            "--callgrind counts in-process dispatches; over loopback use `cargo bench --bench \
             callgrind_loopback`",
        ));
    }
    let against = match &args.against {
        Some(name) => {
            let other = crate::select::framework(name)?;
            check_mode(other, ProfileMode::InProcess)?;
            Some(other)
        }
        None => None,
    };
    let Ok(valgrind) = Tool::Valgrind.path() else {
        Tool::Valgrind.skip();
        return Ok(ExitCode::SUCCESS);
    };
    if let Some(patch) = &args.patch {
        let names = [entry.name.to_owned()];
        let plan = crate::ab::patch::prepare(
            patch,
            args.base.as_deref(),
            &names,
            args.scratch.as_deref(),
        )?;
        let builds = plan.build()?;
        let [(base, base_profile), (new, new_profile)] =
            builds.instructions(entry.name, scenario.name)?;
        let rows = crate::ab::measure::functions(&base_profile, &new_profile, args.top.into());
        print!("{}", crate::ab::functions(&builds, (&base, &new), &rows));
        return Ok(ExitCode::SUCCESS);
    }
    let count = |entry: &Entry| {
        eprintln!(
            "counting {} {} ({}) under callgrind: {} dispatches",
            entry.name,
            scenario.name,
            options.label(),
            args.requests
        );
        callgrind::run(valgrind, entry, scenario, options, args.requests)
    };
    let counted = count(entry)?;
    let top = args.top.into();
    match against {
        None => print!("{}", callgrind::render_top(entry, scenario, &counted, top)),
        Some(other) => {
            let base = count(other)?;
            print!(
                "{}",
                callgrind::render_difference((entry, &counted), (other, &base), scenario, top)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
