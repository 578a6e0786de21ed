//! The `framebench` command: the clap enum of its commands and a match that hands each to its
//! module; with no arguments, the quick compare (`src/quick/`).

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use framebench::cli::{OptArgs, RedisArg, ServerArgs};
use framebench::error::CliError;
use framebench::quick;

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
}

#[derive(Subcommand)]
enum Command {
    /// Lists frameworks with their exact versions, then scenarios with their routes.
    List,
    /// Serves every route of one framework until SIGINT or SIGTERM.
    Serve {
        /// Framework name (see `framebench list`).
        framework: String,
        /// Address to bind; loopback only unless --allow-remote.
        #[arg(long, default_value = "127.0.0.1:0")]
        addr: SocketAddr,
        /// Allow a non-loopback --addr (e.g. 0.0.0.0:8080): the server is reachable from
        /// other hosts.
        #[arg(long)]
        allow_remote: bool,
        /// When the server stops, write its request count, CPU time and peak memory here
        /// (JSON; `framebench merge --server-stats` reads it).
        #[arg(long, value_name = "PATH")]
        stats: Option<std::path::PathBuf>,
        #[command(flatten)]
        server: ServerArgs,
        /// Exit by itself after this many requests (for `cargo bench --bench
        /// callgrind_loopback`).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        max_requests: Option<u64>,
        #[command(flatten)]
        redis: RedisArg,
    },
    /// Internal: serves a framework that runs in a child process (may-minihttp) on the listener
    /// its parent passed as descriptor 3, until SIGINT or SIGTERM. `serve` starts it.
    #[command(hide = true)]
    Child {
        /// Framework name.
        framework: String,
        #[command(flatten)]
        server: ServerArgs,
        /// The parent's Redis, used as given (no server is started for it).
        #[arg(long, value_name = "URL")]
        redis: Option<String>,
    },
    /// Internal: the quick compare's in-process figure for one cell, in ns per request, measured
    /// as its table measures it (`scripts/harness-agreement.sh`).
    #[command(hide = true)]
    QuickCell {
        /// Framework name.
        framework: String,
        /// Scenario name.
        scenario: String,
    },
    /// Runs one framework × scenario in a hot loop for a bounded time, for `perf record`; or
    /// samples it into a flamegraph, or counts it under callgrind.
    Profile(framebench::bench::cli::ProfileArgs),
    /// Counts allocations per in-process request: frameworks × scenarios × logging.
    Allocs(framebench::allocs::cli::AllocsArgs),
    /// Measures the differences the report prints (logging, disk I/O, against raw) in paired
    /// rounds, each with its interval.
    Deltas(framebench::deltas::DeltasArgs),
    /// Compares two results files (`--json` of allocs, load or compare, or docs/generated/results.json),
    /// or two frameworks of one with --pair; exits 1 when a --fail-if gate is crossed.
    Diff(framebench::results::DiffArgs),
    /// Times two framebench builds against each other in paired rounds (in-process cells):
    /// NEW's time over OLD's with its interval, `≈` when it holds 1.00.
    Ab(framebench::ab::AbArgs),
    /// Internal: one build's side of `framebench ab`, driven line by line on stdin.
    #[command(hide = true)]
    AbWorker,
    /// Writes docs/generated/results.md from criterion's and gungraun's output in target/.
    Report(framebench::report::cli::ReportArgs),
    /// Loads one target (a framework served by a child process, or http://127.0.0.1:PORT)
    /// and reports throughput, latency, errors, starvation, CPU and memory.
    Load(framebench::driver::cli::LoadArgs),
    /// Combines the results of one load run by several processes (`load --shard I/N --hdr-log
    /// FILE --json FILE`, on one host or several) into one result, adding their latency
    /// histograms exactly.
    Merge(framebench::driver::merge::MergeArgs),
    /// `load` over frameworks × scenarios × connection counts.
    Compare(framebench::driver::cli::CompareArgs),
    /// How each framework's loopback rate grows with its server threads: a sweep over T (the
    /// server on T CPUs of one half, the driver on the other), in rounds, with the speed-up,
    /// the efficiency and a check of the server's threads.
    Scale(framebench::scale::ScaleArgs),
    /// Checks frameworks × scenarios × variants against the oracle, in-process and over
    /// loopback. Exits 1 on any mismatch. With --conformance: a report of each server against
    /// the protocol rules instead, which exits 0.
    Check {
        /// Frameworks to check (default: all).
        frameworks: Vec<String>,
        /// Report each server against TechEmpower's header rules and HttpArena's protocol
        /// checks (Server, Date, framing, Connection: close, HEAD, HTTP/1.0, pipelining, split
        /// requests): a table, not a gate.
        #[arg(long)]
        conformance: bool,
        #[command(flatten)]
        opts: OptArgs,
        #[command(flatten)]
        redis: RedisArg,
    },
}

fn main() -> ExitCode {
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
    match run(cli) {
        Ok(code) => code,
        Err(CliError(code, msg)) => {
            eprintln!("error: {}", msg.replace('\n', " "));
            ExitCode::from(code)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode, CliError> {
    // Commands that run frameworks for the user detect the optional tools first, build what
    // they need (the Go peers), and honour FRAMEBENCH_REQUIRE. `serve` (the driver's child),
    // `list`, `report` and `allocs` (in-process only, no Redis) need none of it.
    if !matches!(
        cli.command,
        Some(
            Command::Serve { .. }
                | Command::Child { .. }
                | Command::List
                | Command::Report(_)
                | Command::Allocs(_)
                | Command::QuickCell { .. }
                | Command::Diff(_)
                | Command::Merge(_)
                | Command::Ab(_)
                | Command::AbWorker
        )
    ) {
        framebench::cli::prepare_tools()?;
    }
    match cli.command {
        None if cli.full => framebench::driver::cli::full_sweep(),
        None => quick::command(cli.long),
        Some(Command::Load(args)) => framebench::driver::cli::load(args),
        Some(Command::Merge(args)) => framebench::driver::merge::command(args),
        Some(Command::Compare(args)) => framebench::driver::cli::compare(args),
        Some(Command::Scale(args)) => framebench::scale::command(args),
        Some(Command::List) => {
            framebench::cli::list();
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Serve {
            framework,
            addr,
            allow_remote,
            server,
            max_requests,
            stats,
            redis,
        }) => framebench::serve::serve(
            &framework,
            addr,
            allow_remote,
            server.options(),
            max_requests,
            stats.as_deref(),
            &redis,
        ),
        Some(Command::Child {
            framework,
            server,
            redis,
        }) => framebench::serve::child(&framework, server.options(), redis.as_deref()),
        Some(Command::Profile(args)) => framebench::bench::cli::profile(args),
        Some(Command::Report(args)) => framebench::report::cli::report(args),
        Some(Command::Allocs(args)) => framebench::allocs::cli::run(args),
        Some(Command::Deltas(args)) => framebench::deltas::run(args),
        Some(Command::Diff(args)) => framebench::results::run(args),
        Some(Command::Ab(args)) => framebench::ab::run(args),
        Some(Command::AbWorker) => framebench::ab::worker(),
        Some(Command::QuickCell {
            framework,
            scenario,
        }) => quick::cell_command(&framework, &scenario),
        Some(Command::Check {
            frameworks,
            conformance: true,
            opts,
            ..
        }) => framebench::check::conformance(&frameworks, &opts),
        Some(Command::Check {
            frameworks,
            opts,
            redis,
            ..
        }) => framebench::check::command(&frameworks, &opts, &redis),
    }
}
