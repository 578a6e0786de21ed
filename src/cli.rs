//! What every command shares: the name lookups, the arguments several commands
//! take (Redis, threads, a server's options), the tool and fixture checks before a run, and
//! `framebench list`.

use std::sync::Arc;

use crate::error::CliError;
use crate::fixtures::Fixtures;
use crate::framework::Entry;
use crate::frameworks::REGISTRY;
use crate::options::{Io, Logging, Options, Runtime};
use crate::oracle::SCENARIOS;
use crate::table::{Align, Table};

/// The oracle's scenario called `name`, or the usage error every command gives for an unknown
/// one.
pub(crate) fn scenario(name: &str) -> Result<&'static crate::oracle::Scenario, CliError> {
    crate::oracle::scenario(name).ok_or_else(|| {
        CliError::usage(format!(
            "unknown scenario '{name}' (one of: {})",
            crate::oracle::names().join(", ")
        ))
    })
}

/// The registry entry called `name`, or the usage error every command gives for an unknown one.
pub(crate) fn framework(name: &str) -> Result<&'static crate::framework::Entry, CliError> {
    crate::frameworks::find(name).ok_or_else(|| {
        CliError::usage(format!(
            "unknown framework '{name}' (compiled in: {}; others need their Cargo feature)",
            crate::frameworks::names().join(", ")
        ))
    })
}

/// The registry entries called `names`, in that order, or every one `can` keeps when `names` is
/// empty. An unknown name is [`framework`]'s usage error; a named entry `can` refuses is the
/// usage error `<name> <cannot>`.
pub(crate) fn frameworks(
    names: &[String],
    can: impl Fn(&Entry) -> bool,
    cannot: &str,
) -> Result<Vec<&'static Entry>, CliError> {
    if names.is_empty() {
        return Ok(REGISTRY.iter().filter(|e| can(e)).collect());
    }
    names
        .iter()
        .map(|n| {
            let e = framework(n)?;
            if can(e) {
                Ok(e)
            } else {
                Err(CliError::usage(format!("{n} {cannot}")))
            }
        })
        .collect()
}

/// Why a framework has no `--runtime per-core`, in the one line that refuses or skips it.
const NO_PER_CORE: &str =
    "a thread model of its own, not a tokio runtime framebench builds; docs/methodology/many-cores.md, \
     \"Threads and runtimes\"";

/// `entries` under `runtime`: all of them for `work-stealing`; for `per-core`, those that take
/// it ([`Entry::per_core`]). A framework the user named that cannot is refused with one line
/// (exit 2); from the default list, the others are skipped with one line.
pub(crate) fn for_runtime(
    names: &[String],
    entries: Vec<&'static Entry>,
    runtime: Runtime,
) -> Result<Vec<&'static Entry>, CliError> {
    if runtime == Runtime::WorkStealing {
        return Ok(entries);
    }
    let (keep, left): (Vec<&Entry>, Vec<&Entry>) = entries.into_iter().partition(|e| e.per_core);
    if !left.is_empty() {
        let list = left.iter().map(|e| e.name).collect::<Vec<_>>().join(", ");
        if !names.is_empty() {
            return Err(CliError::usage(format!(
                "--runtime {runtime}: {list} cannot take it ({NO_PER_CORE})"
            )));
        }
        eprintln!("--runtime {runtime}: skipping {list} ({NO_PER_CORE})");
    }
    Ok(keep)
}

/// `--redis URL`, for the commands that serve the redis scenario.
#[derive(clap::Args)]
pub struct RedisArg {
    /// Redis for the redis scenario (`redis://127.0.0.1:PORT`, loopback only; its keys are
    /// seeded). Default: `$FRAMEBENCH_REDIS`, else a `redis-server` started for the run.
    #[arg(long, value_name = "URL", value_parser = redis_url)]
    pub(crate) redis: Option<String>,
}

/// `--redis`, checked while the command line is parsed, before anything runs: a bad URL is one
/// line, not a line after the tools were prepared (a Go build's progress line, for one).
fn redis_url(text: &str) -> Result<String, String> {
    crate::redis::parse_url(text)
        .map(|_| text.to_owned())
        .map_err(|e| format!("{e:#}"))
}

impl RedisArg {
    /// The run's Redis (see `crate::redis::provide`); keep the result alive.
    pub(crate) fn provide(&self) -> Result<crate::redis::Redis, CliError> {
        // `--redis` was checked by its parser; the variable is checked here.
        let url = self
            .redis
            .clone()
            .or_else(|| std::env::var(crate::redis::REDIS_ENV).ok());
        if let Some(url) = &url {
            crate::redis::parse_url(url)
                .map_err(|e| CliError::usage(format!("${} {e:#}", crate::redis::REDIS_ENV)))?;
        }
        Ok(crate::redis::provide(url.as_deref())?)
    }
}

/// What a server is started with: threads, logging and io.
#[derive(clap::Args)]
pub struct ServerArgs {
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
    /// The server's options from these arguments.
    pub fn options(&self) -> Options {
        Options {
            logging: self.logging,
            io: self.io,
            threads: self.opts.threads.into(),
            runtime: self.opts.runtime,
        }
    }
}

/// `--threads N` and `--runtime R`, for the commands that start servers.
#[derive(clap::Args)]
pub struct OptArgs {
    /// Server worker threads.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: u16,
    /// How a tokio server arranges its workers: one work-stealing runtime (what
    /// `#[tokio::main]` gives), or one pinned current-thread runtime per worker. Only the
    /// frameworks `framebench list` marks `per-core` take the second.
    #[arg(long, value_enum, default_value_t = Runtime::WorkStealing)]
    pub runtime: Runtime,
}

/// Checks `FRAMEBENCH_REQUIRE`: a framework that needs a required tool must also be ready (the
/// Go peers must build).
pub fn prepare_tools() -> Result<(), CliError> {
    crate::tools::check_required().map_err(|e| CliError(1, e))?;
    for entry in REGISTRY {
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
pub(crate) fn prepare_entries<'a>(entries: impl IntoIterator<Item = &'a Entry>) {
    for entry in entries {
        let _ = entry.available();
    }
}

/// The fixtures every command serves, or the error that says which one is missing.
pub(crate) fn load_fixtures() -> Result<Arc<Fixtures>, CliError> {
    Ok(Fixtures::load_default()?)
}

/// `framebench list`: every framework compiled in with its exact version, then the scenarios.
pub fn list() {
    println!("frameworks:");
    let mut frameworks = Table::new([
        ("name", Align::Left),
        ("crate", Align::Left),
        ("version", Align::Left),
        ("modes", Align::Left),
    ]);
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
        frameworks.row([
            e.name.to_string(),
            e.krate.to_string(),
            e.version().to_string(),
            format!("{modes}{note}"),
        ]);
    }
    print!("{}", frameworks.terminal("  "));
    println!("scenarios:");
    let mut scenarios = Table::new([
        ("name", Align::Left),
        ("request", Align::Left),
        ("status", Align::Right),
    ]);
    for s in SCENARIOS {
        scenarios.row([
            s.name.to_string(),
            format!("GET {}", s.path),
            s.status.to_string(),
        ]);
    }
    print!("{}", scenarios.terminal("  "));
}
