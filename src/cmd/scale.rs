//! `framebench scale`: how each framework's loopback rate grows with its server threads (the
//! sweep itself is `crate::scale`).

use std::process::ExitCode;

use crate::options::{Io, Logging, Options, Protocol, Runtime};
use crate::pinning::Sides;
use crate::protocol::Shape;
use anyhow::Context;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::chart::scale_lines;
use crate::fixtures::Fixtures;
use crate::scale::{output, plan, read_written, summary, Sweep};
use crate::units::parse_duration;

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
    /// What the servers speak: HTTP/1.1, or h2c (HTTP/2 with prior knowledge). Under h2c only
    /// the frameworks that serve it run (the others are skipped with one line, or refused when
    /// named).
    #[arg(long, value_enum, default_value = "http1")]
    protocol: Protocol,
    /// h2c: concurrent streams per connection.
    #[arg(short = 'm', long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1000))]
    streams: u16,
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
    /// Draw req/s against T (.svg or .png), and the speed-up beside it (`NAME-speedup.svg`), both as small multiples by thread model.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// Measure nothing: draw the charts of `--plot` and write the `--markdown` again from a
    /// results file that `scale --json` wrote (its cells, reduced by this build's rules), for
    /// instance after the charts' style or the rules changed. The Markdown keeps the machine,
    /// build and date that measured.
    #[arg(long, value_name = "JSON",
          conflicts_with_all = ["threads", "runtime", "frameworks", "scenarios", "json", "resume"])]
    replot: Option<PathBuf>,
    /// Go on with a sweep that stopped early (Ctrl-C, or a time limit sending SIGINT: the sweep
    /// writes its files then): keep the cells of this results file, which `scale --json` wrote
    /// with the same flags, build and machine, and run only the rest. Give `--json` again to
    /// write the whole sweep.
    #[arg(long, value_name = "JSON")]
    resume: Option<PathBuf>,
    #[command(flatten)]
    tls: super::args::TlsArg,
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

/// `framebench scale`.
pub fn run(args: ScaleArgs) -> anyhow::Result<ExitCode> {
    if let Some(from) = &args.replot {
        replot(from, args.plot.as_deref(), args.markdown.as_deref())?;
        return Ok(ExitCode::SUCCESS);
    }
    args.baselines.check("scale")?;
    let (sweep, note) = sweep(&args)?;
    if let Some(note) = note {
        eprintln!("{note}");
    }
    let kept = match &args.resume {
        Some(path) => {
            let kept = crate::scale::resume::read(path, &sweep)?;
            eprintln!(
                "resuming {}: {} of {} cells kept",
                path.display(),
                kept.cells.len(),
                sweep.cells()
            );
            kept
        }
        None => crate::scale::resume::Kept::none(),
    };
    let fixtures = Fixtures::load_default()?;
    crate::select::prepare_entries(sweep.targets.iter().map(|t| t.entry));
    crate::interrupt::interrupted();
    crate::driver::make_room(sweep.connections)?;
    let started = std::time::SystemTime::now();
    let measured = crate::scale::run(&sweep, &fixtures, &kept, args.quiet);
    let window = crate::provenance::Window::since(started);
    let window = kept.window.map_or(window, |w| w.union(window));
    let rows = summary::rows(&measured);
    print!("{}", output::terminal(&sweep, &rows));
    let header = output::Header::of(&sweep);
    let results = output::results(&sweep, &header, &rows, &measured, window);
    if let Some(p) = &args.json {
        results.write(p)?;
    }
    let views = Views {
        header,
        rows: &rows,
        cells: &measured,
        env: &results.environment,
    };
    views.write(args.markdown.as_deref(), args.plot.as_deref())?;
    args.baselines.apply(&results)?;
    if crate::interrupt::interrupted().load(Ordering::Relaxed) {
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

/// `--replot`: the rows of `from` again, from its cells, drawn to `plot` and written to
/// `markdown` as the sweep that measured them would have.
fn replot(
    from: &std::path::Path,
    plot: Option<&std::path::Path>,
    markdown: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    if plot.is_none() && markdown.is_none() {
        return Err(crate::error::usage(
            "--replot writes nothing without --plot or --markdown",
        ));
    }
    let (results, written) = read_written(from)?;
    let rows = summary::rows(&written.cells);
    Views {
        header: output::Header::written(&written),
        rows: &rows,
        cells: &written.cells,
        env: &results.environment,
    }
    .write(markdown, plot)
}

/// What a sweep's Markdown and charts are written from, whether it was measured now or read
/// back by `--replot`.
struct Views<'a> {
    header: output::Header,
    rows: &'a [summary::Row],
    cells: &'a [summary::Measured],
    env: &'a crate::env::Environment,
}

impl Views<'_> {
    /// The Markdown to `markdown` and the charts to `plot`, each where asked for.
    fn write(
        &self,
        markdown: Option<&std::path::Path>,
        plot: Option<&std::path::Path>,
    ) -> anyhow::Result<()> {
        if let Some(p) = markdown {
            let text = output::markdown(&self.header, self.rows, self.cells, self.env);
            std::fs::write(p, crate::generated::markdown(&text))
                .with_context(|| format!("cannot write {}", p.display()))?;
        }
        if let Some(p) = plot {
            scale_lines::draw_scale(self.rows, p)?;
        }
        Ok(())
    }
}

/// The scenarios a sweep runs by default: the three the many-core results cover.
const DEFAULT_SCENARIOS: &[&str] = &["hello", "json", "static"];

impl ScaleArgs {
    /// The flags of `load` and `compare` that would break the sweep, with why.
    fn refused(&self) -> anyhow::Result<()> {
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
            Some((_, flag, why)) => Err(crate::error::usage(format!(
                "framebench scale does not take {flag}: {why}"
            ))),
            None => Ok(()),
        }
    }
}

/// The sweep the arguments ask for on this machine, or the one line that refuses them.
fn sweep(args: &ScaleArgs) -> anyhow::Result<(Sweep, Option<String>)> {
    args.refused()?;
    let sides = Sides::here();
    let allowed = sides.server.len() + sides.client.len();
    let asked: Option<Vec<usize>> = args
        .threads
        .as_ref()
        .map(|v| v.iter().map(|&t| t.into()).collect());
    let (threads, note) = plan::thread_list(asked.as_deref(), sides.server.len(), allowed)?;
    let runtimes = if args.runtime.is_empty() {
        vec![Runtime::WorkStealing, Runtime::PerCore]
    } else {
        let mut r = args.runtime.clone();
        r.dedup();
        r
    };
    let entries = crate::select::frameworks(
        &args.frameworks,
        |e| e.loopback,
        "has no server (in-process only)",
    )?;
    // Only per-core asked for: the frameworks without it have nothing to run.
    let entries = if runtimes == [Runtime::PerCore] {
        crate::select::for_runtime(
            &args.frameworks,
            entries,
            Runtime::PerCore,
            &[args.protocol],
        )?
    } else {
        entries
    };
    let shape = Shape {
        pipeline: args.pipeline.into(),
        streams: args.streams.into(),
    };
    args.protocol
        .check_shape(shape, false)
        .map_err(crate::error::usage)?;
    let transport = args.tls.transport();
    let served = Options {
        protocol: args.protocol,
        transport,
        ..Options::default()
    };
    let entries = crate::select::serving(&args.frameworks, entries, &served)?;
    let mut variants = Vec::new();
    for &logging in &args.logging {
        for &io in &args.io {
            variants.push(Options {
                logging,
                io,
                ..served
            });
        }
    }
    // The sweep's default scenarios that the protocol carries; none (WebSocket) leaves the
    // protocol's own default (`echo`).
    let names: Vec<String> = if args.scenarios.is_empty() {
        DEFAULT_SCENARIOS
            .iter()
            .filter(|n| {
                crate::oracle::loopback_scenario(n).is_some_and(|s| args.protocol.carries(s))
            })
            .map(|&s| s.to_owned())
            .collect()
    } else {
        args.scenarios.clone()
    };
    let scenarios = crate::select::loaded_scenarios(&names, false, &[args.protocol])?;
    if scenarios.is_empty() {
        return Err(crate::error::usage(
            "no scenario left to run (the redis scenario needs a redis-server)",
        ));
    }
    let widest = threads.last().copied().unwrap_or(1);
    let sweep = Sweep {
        connections: plan::connections(args.connections.map(|c| c as usize), widest),
        threads,
        sides,
        rounds: args.rounds.into(),
        targets: plan::targets(&entries, &runtimes, &variants, args.protocol),
        scenarios,
        duration: args.duration,
        warmup: args.warmup,
        timeout: args.timeout,
        pipeline: args.pipeline.into(),
        protocol: args.protocol,
        transport,
        streams: args.streams.into(),
        sample_every: args.sample_every,
    };
    Ok((sweep, note))
}
