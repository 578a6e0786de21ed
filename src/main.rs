//! The `framebench` command: `list`, `serve`, `check`, and with no arguments a quick
//! in-process comparison.

use std::io::Write as _;
use std::net::{SocketAddr, TcpListener};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};

use framebench::check;
use framebench::fixtures::Fixtures;
use framebench::framework::{Config, Entry};
use framebench::frameworks::{self, REGISTRY};
use framebench::options::{Io, Logging, Options};
use framebench::oracle::SCENARIOS;
use framebench::quick;

/// Measures what a Rust web framework costs per request.
#[derive(Parser)]
#[command(name = "framebench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
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
        opts: OptArgs,
        /// Request logging.
        #[arg(long, value_enum, default_value_t = Logging::Off)]
        logging: Logging,
        /// Where static files and pastes are read from.
        #[arg(long, value_enum, default_value_t = Io::Memory)]
        io: Io,
    },
    /// Checks frameworks × scenarios × variants against the oracle, in-process and over
    /// loopback. Exits 1 on any mismatch.
    Check {
        /// Frameworks to check (default: all).
        frameworks: Vec<String>,
        #[command(flatten)]
        opts: OptArgs,
    },
}

#[derive(clap::Args)]
struct OptArgs {
    /// Server worker threads.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: u16,
}

/// A failure with its exit code: 2 for usage errors, 1 for everything else.
struct Failure(u8, String);

fn usage(msg: String) -> Failure {
    Failure(2, msg)
}

fn fail(e: anyhow::Error) -> Failure {
    Failure(1, format!("{e:#}"))
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
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("error: bad arguments");
            eprintln!("{first} (see framebench --help)");
            return ExitCode::from(2);
        }
    };
    match run(cli) {
        Ok(code) => code,
        Err(Failure(code, msg)) => {
            eprintln!("error: {}", msg.replace('\n', " "));
            ExitCode::from(code)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode, Failure> {
    match cli.command {
        None => quick_compare(),
        Some(Command::List) => {
            list();
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Serve {
            framework,
            addr,
            opts,
            logging,
            io,
        }) => serve(
            &framework,
            addr,
            Options {
                logging,
                io,
                threads: opts.threads.into(),
            },
        ),
        Some(Command::Check { frameworks, opts }) => check_cmd(&frameworks, opts.threads.into()),
    }
}

fn find(name: &str) -> Result<&'static Entry, Failure> {
    frameworks::find(name).ok_or_else(|| {
        usage(format!(
            "unknown framework '{name}' (compiled in: {}; others need their Cargo feature)",
            frameworks::names().join(", ")
        ))
    })
}

fn load_fixtures() -> Result<Arc<Fixtures>, Failure> {
    Fixtures::load_default().map_err(fail)
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
        println!(
            "  {:<14} {:<12} {:<10} {modes}",
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

fn serve(name: &str, addr: SocketAddr, options: Options) -> Result<ExitCode, Failure> {
    let entry = find(name)?;
    if !addr.ip().is_loopback() {
        return Err(usage(format!(
            "refusing to bind {addr}: framebench serves on loopback addresses only"
        )));
    }
    if !entry.loopback {
        return Err(usage(format!("{name} has no server (in-process only)")));
    }
    let fixtures = load_fixtures()?;
    let app = entry.build(&Config { fixtures, options }).map_err(fail)?;
    let listener =
        TcpListener::bind(addr).map_err(|e| Failure(1, format!("cannot bind {addr}: {e}")))?;
    let server = app.serve(listener).map_err(fail)?;
    println!("listening on {}", server.url());
    let _ = std::io::stdout().flush();
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ])
    .map_err(|e| Failure(1, format!("cannot install signal handlers: {e}")))?;
    loop {
        if signals.pending().next().is_some() {
            break;
        }
        if server.has_died() {
            return Err(Failure(1, format!("{name} server stopped unexpectedly")));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    server.shutdown().map_err(fail)?;
    Ok(ExitCode::SUCCESS)
}

fn check_cmd(names: &[String], threads: usize) -> Result<ExitCode, Failure> {
    let entries: Vec<&Entry> = if names.is_empty() {
        REGISTRY.iter().collect()
    } else {
        names.iter().map(|n| find(n)).collect::<Result<_, _>>()?
    };
    let fixtures = load_fixtures()?;
    let mut rows = Vec::new();
    for entry in entries {
        rows.extend(check::check_framework(
            entry,
            &fixtures,
            &Options::variants(threads),
        ));
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

fn quick_compare() -> Result<ExitCode, Failure> {
    let fixtures = load_fixtures()?;
    let entries: Vec<&Entry> = REGISTRY.iter().collect();
    let options = Options::default();
    let sample = Duration::from_millis(100);
    let rows = quick::run(&entries, &fixtures, options, sample);
    let failed = quick::print(&rows, options, sample);
    Ok(if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
