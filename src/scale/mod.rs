//! `framebench scale`: how each framework's loopback rate grows with its server threads T. Every
//! target (a framework, on each runtime it takes) runs every scenario at every T of the list in
//! at least three rounds, interleaved with the others in an order that rotates each round; the
//! server is pinned to T CPUs of one half of the machine and the driver to the other half.
//! Each cell also reads the server's threads from /proc ([`crate::driver::threads`]), so that a
//! server that ran more busy threads than T, or outside its CPUs, is marked.
//!
//! [`plan`] decides what runs, [`summary`] reduces the rounds, [`output`] prints and writes them
//! and [`chart`] draws them.

mod chart;
mod output;
mod plan;
mod summary;

use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::driver::cli::parse_duration;
use crate::driver::{self, LoadParams};
use crate::error::CliError;
use crate::fixtures::Fixtures;
use crate::options::{Io, Logging, Options, Runtime};
use crate::oracle::Scenario;
use crate::pinning::Sides;

use plan::Target;
use summary::Measured;

/// The scenarios a sweep runs by default: the three the many-core results cover.
const DEFAULT_SCENARIOS: &[&str] = &["hello", "json", "static"];

/// `framebench scale`.
#[derive(clap::Args, Debug)]
pub struct ScaleArgs {
    /// Server threads T to sweep, comma-separated (default: 1, 2, 4 … 64, cut to half the CPUs
    /// this process may use). The server runs on T CPUs of one half, the driver on the other.
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Option<Vec<u16>>,
    /// Runtimes of the tokio frameworks that take either, comma-separated (default: both, side
    /// by side). The other frameworks run their own thread model.
    #[arg(long, value_enum, value_delimiter = ',')]
    runtime: Vec<Runtime>,
    /// Rounds per cell: the targets are interleaved and their order rotates each round; the
    /// median and the range of the rounds are reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(3..=100))]
    rounds: u16,
    /// Frameworks, comma-separated (default: every one that serves).
    #[arg(long, value_delimiter = ',')]
    frameworks: Vec<String>,
    /// Scenarios, comma-separated (default: hello, json, static).
    #[arg(long, value_delimiter = ',')]
    scenarios: Vec<String>,
    /// Connections, one count for every T (default: 256, or 32 per thread at the widest T if
    /// more).
    #[arg(short = 'c', long = "connections", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    connections: Option<u32>,
    /// Recorded time per cell.
    #[arg(short = 'd', long, value_parser = parse_duration, default_value = "2s")]
    duration: Duration,
    /// Unrecorded load before each cell.
    #[arg(long, value_parser = parse_duration, default_value = "1s")]
    warmup: Duration,
    /// A request unanswered this long is a timeout.
    #[arg(long, value_parser = parse_duration, default_value = "2s")]
    timeout: Duration,
    /// Request logging of the server; a comma-separated list runs each.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "off")]
    logging: Vec<Logging>,
    /// File I/O of the server; a comma-separated list runs each.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "memory")]
    io: Vec<Io>,
    /// HTTP/1.1 pipelining depth.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pipeline: u16,
    /// Check one response in this many per connection against the oracle (plus the first).
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..))]
    sample_every: u64,
    /// Write the results as JSON (the `framebench-results` schema: `framebench diff` reads
    /// it), with every round of every cell.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the results as Markdown, stamped with the machine and the commit.
    #[arg(long)]
    markdown: Option<PathBuf>,
    /// Draw req/s against T (.svg or .png), and the efficiency beside it (`NAME-efficiency.svg`).
    #[arg(long)]
    plot: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// Measure nothing: draw the charts of `--plot` again from a results file that `scale
    /// --json` wrote (its rows), for instance after the charts' style changed.
    #[arg(long, value_name = "JSON", requires = "plot",
          conflicts_with_all = ["threads", "runtime", "frameworks", "scenarios", "json", "markdown"])]
    replot: Option<PathBuf>,
    #[command(flatten)]
    baselines: crate::results::BaselineArgs,
    /// Refused: the sweep pins the server and the client itself.
    #[arg(long, hide = true, value_name = "CPUS")]
    server_cpus: Option<String>,
    /// Refused: see --server-cpus.
    #[arg(long, hide = true, value_name = "CPUS")]
    client_cpus: Option<String>,
    /// Refused: one driver thread per client CPU.
    #[arg(long, hide = true, value_name = "N")]
    client_threads: Option<String>,
    /// Refused: the sweep measures the rate each T reaches.
    #[arg(long, hide = true, value_name = "RPS")]
    rate: Option<String>,
    /// Refused: one process drives the sweep.
    #[arg(long, hide = true, value_name = "I/N")]
    shard: Option<String>,
    /// Refused: a sweep has many cells.
    #[arg(long, hide = true, value_name = "UNIX_SECONDS")]
    start_at: Option<String>,
}

impl ScaleArgs {
    /// The flags of `load` and `compare` that would break the sweep, with why.
    fn refused(&self) -> Result<(), CliError> {
        let refusals = [
            (
                self.server_cpus.is_some(),
                "--server-cpus",
                "the sweep pins the server to T CPUs of its half itself",
            ),
            (
                self.client_cpus.is_some(),
                "--client-cpus",
                "the sweep gives the client the other half of the CPUs",
            ),
            (
                self.client_threads.is_some(),
                "--client-threads",
                "the client runs one driver thread per CPU of its half",
            ),
            (
                self.rate.is_some(),
                "--rate",
                "the sweep measures the rate each T reaches (use `framebench load --rate`)",
            ),
            (
                self.shard.is_some(),
                "--shard",
                "one process drives a sweep (use `framebench load --shard`)",
            ),
            (
                self.start_at.is_some(),
                "--start-at",
                "a sweep has many cells (use `framebench load --start-at`)",
            ),
        ];
        match refusals.iter().find(|(given, ..)| *given) {
            Some((_, flag, why)) => Err(CliError::usage(format!(
                "framebench scale does not take {flag}: {why}"
            ))),
            None => Ok(()),
        }
    }
}

/// What a sweep runs, decided before anything is measured.
pub(crate) struct Sweep {
    /// Server threads, ascending.
    pub(crate) threads: Vec<usize>,
    /// The two halves of the CPUs.
    pub(crate) sides: Sides,
    /// Connections at every T.
    pub(crate) connections: usize,
    /// Rounds.
    pub(crate) rounds: usize,
    /// Targets, in their first round's order.
    pub(crate) targets: Vec<Target>,
    /// Scenarios.
    pub(crate) scenarios: Vec<&'static Scenario>,
    /// Recorded time per cell.
    pub(crate) duration: Duration,
    /// Warm-up per cell.
    pub(crate) warmup: Duration,
    timeout: Duration,
    pipeline: usize,
    sample_every: u64,
}

impl Sweep {
    /// The sweep the arguments ask for on this machine, or the one line that refuses them.
    fn from_args(args: &ScaleArgs) -> Result<(Sweep, Option<String>), CliError> {
        args.refused()?;
        let sides = Sides::here();
        let allowed = sides.server.len() + sides.client.len();
        let asked: Option<Vec<usize>> = args
            .threads
            .as_ref()
            .map(|v| v.iter().map(|&t| t.into()).collect());
        let (threads, note) = plan::thread_list(asked.as_deref(), sides.server.len(), allowed)
            .map_err(CliError::usage)?;
        let runtimes = if args.runtime.is_empty() {
            vec![Runtime::WorkStealing, Runtime::PerCore]
        } else {
            let mut r = args.runtime.clone();
            r.dedup();
            r
        };
        let entries = crate::cli::frameworks(
            &args.frameworks,
            |e| e.loopback,
            "has no server (in-process only)",
        )?;
        // Only per-core asked for: the frameworks without it have nothing to run.
        let entries = if runtimes == [Runtime::PerCore] {
            crate::cli::for_runtime(&args.frameworks, entries, Runtime::PerCore)?
        } else {
            entries
        };
        let mut variants = Vec::new();
        for &logging in &args.logging {
            for &io in &args.io {
                variants.push(Options {
                    logging,
                    io,
                    ..Options::default()
                });
            }
        }
        let names: Vec<String> = if args.scenarios.is_empty() {
            DEFAULT_SCENARIOS.iter().map(|&s| s.to_owned()).collect()
        } else {
            args.scenarios.clone()
        };
        let scenarios = crate::driver::cli::scenarios(&names, false)?;
        if scenarios.is_empty() {
            return Err(CliError::usage(
                "no scenario left to run (the redis scenario needs a redis-server)".into(),
            ));
        }
        let widest = threads.last().copied().unwrap_or(1);
        let sweep = Sweep {
            connections: plan::connections(args.connections.map(|c| c as usize), widest),
            threads,
            sides,
            rounds: args.rounds.into(),
            targets: plan::targets(&entries, &runtimes, &variants),
            scenarios,
            duration: args.duration,
            warmup: args.warmup,
            timeout: args.timeout,
            pipeline: args.pipeline.into(),
            sample_every: args.sample_every,
        };
        Ok((sweep, note))
    }

    /// How each cell at T is loaded.
    fn params(&self, t: usize) -> LoadParams {
        let mut p = LoadParams::closed_loop(
            self.duration,
            self.warmup,
            self.timeout,
            plan::pinning(&self.sides, t),
        );
        p.pipeline = self.pipeline;
        p.sample_every = self.sample_every;
        p.check_threads = true;
        p
    }

    /// Cells in all: rounds × T × targets × scenarios.
    fn cells(&self) -> usize {
        self.rounds * self.threads.len() * self.targets.len() * self.scenarios.len()
    }
}

/// `framebench scale`.
pub fn command(args: ScaleArgs) -> Result<ExitCode, CliError> {
    if let (Some(from), Some(plot)) = (&args.replot, &args.plot) {
        let rows = read_rows(from)?;
        chart::draw(&rows, plot)?;
        return Ok(ExitCode::SUCCESS);
    }
    args.baselines.check("scale")?;
    let (sweep, note) = Sweep::from_args(&args)?;
    if let Some(note) = note {
        eprintln!("{note}");
    }
    let fixtures = Fixtures::load_default()?;
    crate::cli::prepare_entries(sweep.targets.iter().map(|t| t.entry));
    driver::interrupted();
    let measured = run(&sweep, &fixtures, args.quiet);
    let rows = summary::rows(&measured);
    print!("{}", output::terminal(&sweep, &rows));
    let results = output::results(&sweep, &rows, &measured);
    if let Some(p) = &args.json {
        results.write(p)?;
    }
    if let Some(p) = &args.markdown {
        std::fs::write(
            p,
            crate::generated::markdown(&output::markdown(
                &sweep,
                &rows,
                &measured,
                &results.environment,
            )),
        )
        .with_context(|| format!("cannot write {}", p.display()))?;
    }
    if let Some(p) = &args.plot {
        chart::draw(&rows, p)?;
    }
    args.baselines.apply(&results)?;
    if driver::interrupted().load(Ordering::Relaxed) {
        eprintln!("interrupted: child servers stopped");
        return Ok(ExitCode::from(130));
    }
    let failed = rows.iter().filter(|r| r.failed.is_some()).count();
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        eprintln!("error: {failed} rows had a round that did not measure (see above)");
        ExitCode::from(1)
    })
}

/// The rows of a results file that `scale --json` wrote.
fn read_rows(path: &std::path::Path) -> anyhow::Result<Vec<summary::Row>> {
    let results = crate::results::Results::read(path)?;
    anyhow::ensure!(
        results.command == "scale",
        "{} holds `framebench {}` results, not a sweep's",
        path.display(),
        results.command
    );
    let rows = results
        .detail
        .and_then(|mut d| d.get_mut("rows").map(serde_json::Value::take))
        .ok_or_else(|| anyhow::anyhow!("{} has no rows in its detail", path.display()))?;
    serde_json::from_value(rows)
        .map_err(|e| anyhow::anyhow!("{}: the rows are not a sweep's: {e}", path.display()))
}

/// Every round: at each T, every target in the round's order, each on a fresh server that
/// serves every scenario in turn. Stops early on Ctrl-C.
fn run(sweep: &Sweep, fixtures: &Fixtures, quiet: bool) -> Vec<Measured> {
    let per_cell = sweep.warmup + sweep.duration;
    let bar = driver::progress_bar(per_cell, sweep.cells(), quiet);
    let mut out = Vec::new();
    let mut done_ms = 0u64;
    for round in 0..sweep.rounds {
        for &t in &sweep.threads {
            let params = sweep.params(t);
            let order = plan::round_order(sweep.targets.len(), round);
            for (position, &i) in order.iter().enumerate() {
                let target = sweep.targets[i];
                let load =
                    driver::Target::Framework(target.entry, target.options(t, sweep.connections));
                // One server per target and T, for its scenarios; dropping it stops it.
                let mut kept = None;
                for &scenario in &sweep.scenarios {
                    if driver::interrupted().load(Ordering::Relaxed) {
                        bar.abandon_with_message("interrupted");
                        return out;
                    }
                    bar.set_message(format!(
                        "round {}/{} T={t}: {} {}",
                        round + 1,
                        sweep.rounds,
                        target.label(),
                        scenario.name
                    ));
                    let base = done_ms;
                    let mut progress = |e: Duration| {
                        bar.set_position(
                            base + (e.as_millis() as u64).min(per_cell.as_millis() as u64),
                        );
                    };
                    let cell = driver::run_cell(
                        &load,
                        scenario,
                        fixtures,
                        sweep.connections,
                        &params,
                        &mut progress,
                        &mut kept,
                    );
                    done_ms += per_cell.as_millis() as u64;
                    bar.set_position(done_ms);
                    out.push(Measured {
                        round: round + 1,
                        position: position + 1,
                        target: target.label(),
                        runtime: target.runtime_label(),
                        variant: target.variant.label(),
                        threads: t,
                        cell,
                    });
                }
            }
        }
    }
    bar.finish_and_clear();
    out
}
