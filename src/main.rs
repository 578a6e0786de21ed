//! The `framebench` command: the clap enum of its commands and a match that hands each to its
//! home, `src/cmd/<name>.rs`; with no arguments, the quick compare (`src/cmd/quick.rs`).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use framebench::cmd;
use framebench::error::CliError;

/// The system allocator behind a switch that only `framebench allocs` and `framebench profile
/// --allocs` turn on (src/allocs/gate.rs; its cost when off is in docs/methodology/in-process.md).
#[global_allocator]
static GLOBAL: framebench::allocs::Global = framebench::allocs::Global;

/// Measures what a Rust web framework costs per request.
#[derive(Parser)]
#[command(name = "framebench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// With no command: run the full sweep (`framebench compare` with its defaults) instead of
    /// the quick compare.
    #[arg(long)]
    full: bool,
    /// With no command: print the quick compare's long table (one row per framework ×
    /// scenario, every column; the same as target/quick/long.md) instead of its compact view.
    #[arg(long, conflicts_with = "full")]
    long: bool,
    /// With no command: the folder the quick compare writes its files to (the screen, the long
    /// table, the results file and the chart); `--out docs/generated/quick` writes the ones the
    /// README quotes.
    #[arg(long, value_name = "DIR", conflicts_with = "full")]
    out: Option<std::path::PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Lists frameworks with their exact versions, then scenarios with their routes.
    List(cmd::list::ListArgs),
    /// Serves every route of one framework until SIGINT or SIGTERM.
    Serve(cmd::serve::ServeArgs),
    /// Internal: serves a framework that runs in a child process (may-minihttp) on the listener
    /// its parent passed as descriptor 3, until SIGINT or SIGTERM. `serve` starts it.
    #[command(hide = true)]
    Child(cmd::child::ChildArgs),
    /// Internal: the quick compare's in-process figure for one cell, in ns per request, measured
    /// as its table measures it (`scripts/harness-agreement.sh`).
    #[command(hide = true)]
    QuickCell(cmd::quick_cell::QuickCellArgs),
    /// Runs one framework × scenario in a hot loop for a bounded time, for `perf record`; or
    /// samples it into a flamegraph, or counts it under callgrind.
    Profile(cmd::profile::ProfileArgs),
    /// Counts allocations per in-process request: frameworks × scenarios × logging.
    Allocs(cmd::allocs::AllocsArgs),
    /// Measures the differences the report prints (logging, disk I/O, against raw) in paired
    /// rounds, each with its interval.
    Deltas(cmd::deltas::DeltasArgs),
    /// Compares two results files (`--json` of allocs, load or compare, or docs/generated/results.json),
    /// or two frameworks of one with --pair; exits 1 when a --fail-if gate is crossed.
    Diff(cmd::diff::DiffArgs),
    /// Times frameworks × scenarios in interleaved rounds (in-process, or over loopback with
    /// --loopback): each cell's median with its interval, its ratio to the floor within each
    /// round, and ranks shared where the rounds do not separate two cells.
    Time(cmd::time::TimeArgs),
    /// Times two framebench builds against each other in paired rounds (in-process cells):
    /// NEW's time over OLD's with its interval, `≈` when it holds 1.00.
    Ab(cmd::ab::AbArgs),
    /// Internal: one build's side of `framebench ab`, driven line by line on stdin.
    #[command(hide = true)]
    AbWorker,
    /// Writes docs/generated/results.md from criterion's and gungraun's output in target/.
    Report(cmd::report::ReportArgs),
    /// Loads one target (a framework served by a child process, or http://127.0.0.1:PORT)
    /// and reports throughput, latency, errors, starvation, CPU and memory.
    Load(cmd::load::LoadArgs),
    /// Combines the results of one load run by several processes (`load --shard I/N --hdr-log
    /// FILE --json FILE`, on one host or several) into one result, adding their latency
    /// histograms exactly.
    Merge(cmd::merge::MergeArgs),
    /// What each framework's server holds per idle keep-alive connection (its live heap,
    /// exact, and the kernel's RSS and PSS), and per connection after a large body.
    Memory(cmd::memory::MemoryArgs),
    /// Each framework's time from `exec` of its server to the first 200, in interleaved rounds
    /// beside the reference server's, and its memory right after.
    Startup(cmd::startup::StartupArgs),
    /// The footprint table, chart and results file from what scripts/footprint.sh measured
    /// (its builds file): build time, binary size, start-up and memory per framework.
    Footprint(cmd::footprint::FootprintArgs),
    /// `load` over frameworks × scenarios × connection counts.
    Compare(cmd::compare::CompareArgs),
    /// How each framework's loopback rate grows with its server threads: a sweep over T (the
    /// server on T CPUs of one half, the driver on the other), in rounds, with the speed-up,
    /// the efficiency and a check of the server's threads.
    Scale(cmd::scale::ScaleArgs),
    /// Checks frameworks × scenarios × variants against the oracle, in-process and over
    /// loopback. Exits 1 on any mismatch. With --conformance: a report of each server against
    /// the protocol rules instead, which exits 0.
    Check(cmd::check::CheckArgs),
}

fn main() -> ExitCode {
    framebench::error::one_line_thread_panics();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            // One line, not clap's usage block.
            eprintln!(
                "error: {} (see framebench --help)",
                framebench::error::usage_line(&e)
            );
            return ExitCode::from(2);
        }
    };
    // The one error boundary (src/error.rs).
    run(cli).unwrap_or_else(|e| CliError::from(e).exit())
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    // Commands that run frameworks for the user detect the optional tools first, build what
    // they need (the Go peers), and honour FRAMEBENCH_REQUIRE. `serve` (the driver's child),
    // `list`, `report` and `allocs` (in-process only, no Redis) need none of it.
    if !matches!(
        cli.command,
        Some(
            Command::Serve(_)
                | Command::Child(_)
                | Command::List(_)
                | Command::Report(_)
                | Command::Allocs(_)
                | Command::QuickCell(_)
                | Command::Diff(_)
                | Command::Merge(_)
                | Command::Footprint(_)
                | Command::Ab(_)
                | Command::AbWorker
        )
    ) {
        cmd::prepare_tools()?;
    }
    match cli.command {
        None if cli.full => cmd::compare::full(),
        None => cmd::quick::run(cli.long, cli.out),
        Some(Command::List(args)) => cmd::list::run(args),
        Some(Command::Serve(args)) => cmd::serve::run(args),
        Some(Command::Child(args)) => cmd::child::run(args),
        Some(Command::QuickCell(args)) => cmd::quick_cell::run(args),
        Some(Command::Profile(args)) => cmd::profile::run(args),
        Some(Command::Allocs(args)) => cmd::allocs::run(args),
        Some(Command::Deltas(args)) => cmd::deltas::run(args),
        Some(Command::Time(args)) => cmd::time::run(args),
        Some(Command::Diff(args)) => cmd::diff::run(args),
        Some(Command::Ab(args)) => cmd::ab::run(args),
        Some(Command::AbWorker) => cmd::ab_worker::run(),
        Some(Command::Report(args)) => cmd::report::run(args),
        Some(Command::Load(args)) => cmd::load::run(args),
        Some(Command::Merge(args)) => cmd::merge::run(args),
        Some(Command::Memory(args)) => cmd::memory::run(args),
        Some(Command::Startup(args)) => cmd::startup::run(args),
        Some(Command::Footprint(args)) => cmd::footprint::run(args),
        Some(Command::Compare(args)) => cmd::compare::run(args),
        Some(Command::Scale(args)) => cmd::scale::run(args),
        Some(Command::Check(args)) => cmd::check::run(args),
    }
}
