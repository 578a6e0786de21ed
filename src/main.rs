//! The `framebench` command: `list`, `serve`, `check`, and with no arguments a quick
//! in-process comparison.

use std::io::Write as _;
use std::net::{SocketAddr, TcpListener};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};

use framebench::check;
use framebench::cli::CliError;
use framebench::fixtures::Fixtures;
use framebench::framework::{Config, Entry};
use framebench::frameworks::{self, REGISTRY};
use framebench::options::{Io, Logging, Options};
use framebench::oracle::SCENARIOS;
use framebench::quick;

/// The system allocator behind a switch that only `framebench allocs` and `framebench profile
/// --allocs` turn on (src/allocs/gate.rs; its cost when off is in docs/methodology.md).
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
        /// Address to bind; loopback only.
        #[arg(long, default_value = "127.0.0.1:0")]
        addr: SocketAddr,
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
    /// Compares two results files (`--json` of allocs, load or compare, or docs/results.json),
    /// or two frameworks of one with --pair; exits 1 when a --fail-if gate is crossed.
    Diff(framebench::results::DiffArgs),
    /// Times two framebench builds against each other in paired rounds (in-process cells):
    /// NEW's time over OLD's with its interval, `≈` when it holds 1.00.
    Ab(framebench::ab::AbArgs),
    /// Internal: one build's side of `framebench ab`, driven line by line on stdin.
    #[command(hide = true)]
    AbWorker,
    /// Writes docs/results.md from criterion's and gungraun's output in target/.
    Report(framebench::report::cli::ReportArgs),
    /// Loads one target (a framework served by a child process, or http://127.0.0.1:PORT)
    /// and reports throughput, latency, errors, starvation, CPU and memory.
    Load(framebench::driver::cli::LoadArgs),
    /// `load` over frameworks × scenarios × connection counts.
    Compare(framebench::driver::cli::CompareArgs),
    /// Checks frameworks × scenarios × variants against the oracle, in-process and over
    /// loopback. Exits 1 on any mismatch.
    Check {
        /// Frameworks to check (default: all).
        frameworks: Vec<String>,
        #[command(flatten)]
        opts: OptArgs,
        #[command(flatten)]
        redis: RedisArg,
    },
}

#[derive(clap::Args)]
struct RedisArg {
    /// Redis for the redis scenario (`redis://127.0.0.1:PORT`, loopback only; its keys are
    /// seeded). Default: `$FRAMEBENCH_REDIS`, else a `redis-server` started for the run.
    #[arg(long, value_name = "URL")]
    redis: Option<String>,
}

impl RedisArg {
    /// The run's Redis (see `framebench::redis::provide`); keep the result alive.
    fn provide(&self) -> Result<framebench::redis::Redis, CliError> {
        let url = self
            .redis
            .clone()
            .or_else(|| std::env::var(framebench::redis::REDIS_ENV).ok());
        if let Some(url) = &url {
            framebench::redis::parse_url(url)
                .map_err(|e| CliError::usage(format!("--redis {e:#}")))?;
        }
        framebench::redis::provide(url.as_deref()).map_err(CliError::fail)
    }
}

/// What a server is started with: threads, logging and io.
#[derive(clap::Args)]
struct ServerArgs {
    #[command(flatten)]
    opts: OptArgs,
    /// Request logging.
    #[arg(long, value_enum, default_value_t = Logging::Off)]
    logging: Logging,
    /// Where static files and pastes are read from.
    #[arg(long, value_enum, default_value_t = Io::Memory)]
    io: Io,
}

impl ServerArgs {
    fn options(&self) -> Options {
        Options {
            logging: self.logging,
            io: self.io,
            threads: self.opts.threads.into(),
        }
    }
}

#[derive(clap::Args)]
struct OptArgs {
    /// Server worker threads.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: u16,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            // One line, not clap's usage block: the message lines before the usage, joined.
            let text = e.render().to_string();
            let message: Vec<&str> = text
                .lines()
                .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more"))
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with("tip:"))
                .collect();
            eprintln!("{} (see framebench --help)", message.join(" "));
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
                | Command::Ab(_)
                | Command::AbWorker
        )
    ) {
        prepare_tools()?;
    }
    match cli.command {
        None if cli.full => framebench::driver::cli::full_sweep(),
        None => quick_compare(cli.long),
        Some(Command::Load(args)) => framebench::driver::cli::load(args),
        Some(Command::Compare(args)) => framebench::driver::cli::compare(args),
        Some(Command::List) => {
            list();
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Serve {
            framework,
            addr,
            server,
            max_requests,
            redis,
        }) => serve(&framework, addr, server.options(), max_requests, &redis),
        Some(Command::Child {
            framework,
            server,
            redis,
        }) => {
            let config = Config::new(load_fixtures()?, redis.as_deref()).with(server.options());
            framebench::cli::framework(&framework)?
                .serve_child(&config)
                .map_err(CliError::fail)?;
            Ok(ExitCode::SUCCESS)
        }
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
        }) => quick_cell(&framework, &scenario),
        Some(Command::Check {
            frameworks,
            opts,
            redis,
        }) => check_cmd(&frameworks, opts.threads.into(), &redis),
    }
}

/// Checks `FRAMEBENCH_REQUIRE`: a framework that needs a required tool must also be ready (the
/// Go peers must build).
fn prepare_tools() -> Result<(), CliError> {
    framebench::tools::check_required().map_err(|e| CliError(1, e))?;
    for entry in frameworks::REGISTRY {
        if let Some(tool) = entry.tool.filter(|t| t.required()) {
            entry.available().map_err(|e| {
                CliError(
                    1,
                    format!("FRAMEBENCH_REQUIRE requires {}: {e}", tool.name()),
                )
            })?;
        }
    }
    Ok(())
}

/// Asks each of `entries` whether it can run here, before anything is timed: this builds the Go
/// peers (a progress line, a bound of its own) and says once why anything is skipped.
fn prepare_entries<'a>(entries: impl IntoIterator<Item = &'a Entry>) {
    for entry in entries {
        let _ = entry.available();
    }
}

fn load_fixtures() -> Result<Arc<Fixtures>, CliError> {
    Fixtures::load_default().map_err(CliError::fail)
}

fn list() {
    println!("frameworks:");
    for e in REGISTRY {
        let modes = match (e.in_process, e.loopback) {
            (true, true) => "in-process, loopback",
            (true, false) => "in-process",
            (false, true) => "loopback",
            (false, false) => "-",
        };
        let note = if e.note.is_empty() {
            String::new()
        } else {
            format!(" ({})", e.note)
        };
        println!(
            "  {:<14} {:<12} {:<10} {modes}{note}",
            e.name,
            e.krate,
            e.version()
        );
    }
    println!("scenarios:");
    for s in SCENARIOS {
        println!("  {:<14} GET {:<24} -> {}", s.name, s.path, s.status);
    }
}

fn serve(
    name: &str,
    addr: SocketAddr,
    options: Options,
    max_requests: Option<u64>,
    redis: &RedisArg,
) -> Result<ExitCode, CliError> {
    let entry = framebench::cli::framework(name)?;
    if !addr.ip().is_loopback() {
        return Err(CliError::usage(format!(
            "refusing to bind {addr}: framebench serves on loopback addresses only"
        )));
    }
    if !entry.loopback {
        return Err(CliError::usage(format!(
            "{name} has no server (in-process only)"
        )));
    }
    if let Some(max) = max_requests {
        framebench::bench::cli::install_limit(name, max)?;
    }
    let fixtures = load_fixtures()?;
    // The redis scenario's Redis, alive as long as the server.
    let redis = redis.provide()?;
    let app = entry
        .build(&Config::new(fixtures, redis.url()).with(options))
        .map_err(CliError::fail)?;
    let listener =
        TcpListener::bind(addr).map_err(|e| CliError(1, format!("cannot bind {addr}: {e}")))?;
    let server = app.serve(listener).map_err(CliError::fail)?;
    if let Some(limit) = framebench::server::limit::active() {
        announce(&server);
        return framebench::bench::cli::serve_until_limit(server, limit);
    }
    // Handlers first, then the line a supervisor waits for: a signal sent as soon as the line
    // is read must stop the server cleanly, not kill it.
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ])
    .map_err(|e| CliError(1, format!("cannot install signal handlers: {e}")))?;
    announce(&server);
    loop {
        if signals.pending().next().is_some() {
            break;
        }
        if server.has_died() {
            return Err(CliError(1, format!("{name} server stopped unexpectedly")));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    server.shutdown().map_err(CliError::fail)?;
    Ok(ExitCode::SUCCESS)
}

/// Prints `serve`'s first line, which scripts and the driver wait for.
fn announce(server: &framebench::framework::ServerHandle) {
    println!("listening on {}", server.url());
    let _ = std::io::stdout().flush();
}

fn check_cmd(names: &[String], threads: usize, redis: &RedisArg) -> Result<ExitCode, CliError> {
    let entries: Vec<&Entry> = if names.is_empty() {
        REGISTRY.iter().collect()
    } else {
        names
            .iter()
            .map(|n| framebench::cli::framework(n))
            .collect::<Result<_, _>>()?
    };
    let fixtures = load_fixtures()?;
    prepare_entries(entries.iter().copied());
    let redis = redis.provide()?;
    let base = Config::new(fixtures, redis.url());
    let mut rows = Vec::new();
    let stop = framebench::tools::interrupted();
    for entry in entries {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            eprintln!("interrupted");
            return Ok(ExitCode::from(130));
        }
        rows.extend(check::check_framework(
            entry,
            &base,
            &Options::variants(threads),
        ));
    }
    if rows.is_empty() {
        // Every framework named was skipped (a missing tool, said above): nothing failed.
        println!("no rows checked: every framework named was skipped");
        return Ok(ExitCode::SUCCESS);
    }
    let failing = check::print_table(&rows);
    if failing > 0 {
        eprintln!(
            "error: {failing} of {} rows do not match the oracle",
            rows.len()
        );
        return Ok(ExitCode::from(1));
    }
    println!("all {} rows match the oracle", rows.len());
    Ok(ExitCode::SUCCESS)
}

/// `framebench quick-cell`: one in-process cell of the quick compare, checked, then timed
/// with the quick compare's sample and batch count.
fn quick_cell(framework: &str, scenario: &str) -> Result<ExitCode, CliError> {
    let entry = framebench::cli::framework(framework)?;
    let scenario = framebench::cli::scenario(scenario)?;
    let config = Config::new(load_fixtures()?, None).with(Options::default());
    let prepared = framebench::cell::prepare(entry, &config, scenario).map_err(CliError::fail)?;
    let timed = quick::time_per_request(&*prepared.app, prepared.path, quick::SAMPLE, 5)
        .map_err(CliError::fail)?;
    println!("{:.1}", timed.median.as_secs_f64() * 1e9);
    Ok(ExitCode::SUCCESS)
}

fn quick_compare(long: bool) -> Result<ExitCode, CliError> {
    let started = std::time::Instant::now();
    let fixtures = load_fixtures()?;
    prepare_entries(REGISTRY);
    let redis = RedisArg { redis: None }.provide()?;
    let entries: Vec<&Entry> = REGISTRY.iter().collect();
    let options = Options::default();
    let sample = quick::SAMPLE;
    let config = Config::new(Arc::clone(&fixtures), redis.url()).with(options);
    let rows = quick::run(&entries, &config, sample);
    if framebench::tools::interrupted().load(std::sync::atomic::Ordering::Relaxed) {
        eprintln!("interrupted");
        return Ok(ExitCode::from(130));
    }
    // Counted in a child process (this binary, `framebench allocs`): no app of the timed runs
    // lives there, and this process's allocator is never switched on.
    let names: Vec<&str> = rows.iter().map(|(name, _)| *name).collect();
    let allocs = framebench::allocs::cli::spawn(&names, options.logging, 3)
        .map_err(|e| format!("allocs/req not counted: {e:#}"));
    // The loopback cells get what is left of the quick compare's time.
    let budget = framebench::driver::cli::QUICK_BUDGET.saturating_sub(started.elapsed());
    let (loopback, setup) = framebench::driver::cli::quick_loopback(&fixtures, options, budget);
    let run = quick::Run {
        rows,
        allocs,
        loopback,
        setup,
        options,
        sample,
    };
    // The first screen is the compact view; the long table, the results file (for `framebench
    // diff` against a later quick compare) and the chart go to files, and `--long` prints the
    // long table instead.
    let dir = framebench::results::target_dir().join("quick");
    let long_table = run.long();
    let long_path = dir.join("long.md");
    let chart_path = dir.join("summary.svg");
    let json_path = dir.join("results.json");
    let mut written = Vec::new();
    let mut lost = Vec::new();
    let mut note = |what: &str, path: &std::path::Path, r: anyhow::Result<()>| match r {
        Ok(()) => written.push(format!("{what}: {}", path.display())),
        Err(e) => lost.push(format!("{what} not written: {e:#}")),
    };
    note(
        "long table",
        &long_path,
        std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(&long_path, &long_table.table))
            .map_err(anyhow::Error::from),
    );
    note(
        "results (framebench diff reads them)",
        &json_path,
        run.results().write(&json_path),
    );
    note("chart", &chart_path, run.chart(&chart_path));
    if long {
        print!("{}", long_table.table);
    } else {
        let files = format!("Files: {}.", written.join(" · "));
        print!("{}", run.compact(&files, &long_table.notes));
    }
    for l in &lost {
        eprintln!("{l}");
    }
    Ok(if long_table.failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
