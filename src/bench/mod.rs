//! Shared by the benches (`benches/*.rs`), `framebench profile` and `framebench report`: which
//! cells are measured, a prepared and checked in-process cell and the keep-alive loopback client.
//! The loopback benches start their servers with [`crate::child`], pinned by [`crate::pinning`],
//! as the load driver does.
//!
//! Every cell is checked against the oracle here, once, before anything is timed: a cell that
//! fails is reported and skipped by the caller.

pub mod cli;
pub mod client;
pub mod profile;
pub mod report;

use anyhow::Context as _;

use crate::fixtures::Fixtures;
use crate::framework::{App, Config, Entry};
use crate::options::{Io, Options};
use crate::oracle::{Observed, Scenario};

/// For the callgrind targets, before gungraun does anything: checks valgrind and
/// `gungraun-runner` at exactly the gungraun version in Cargo.lock. When one is missing or of
/// another version, prints one line per cause with the command that installs the right one and
/// ends the process with 0, so that `cargo bench` goes on to the criterion targets; with
/// `FRAMEBENCH_REQUIRE` naming the tool (or `callgrind`), with 1. When the runner is found, its
/// folder goes first on `PATH`, where gungraun looks for it.
pub fn callgrind_preflight(target: &str) {
    use crate::tools::Tool;
    if let Err(e) = crate::tools::check_required() {
        eprintln!("error: {target}: {e}");
        std::process::exit(1);
    }
    let missing: Vec<&str> = [Tool::Valgrind, Tool::Runner]
        .into_iter()
        .filter_map(|t| t.path().err())
        .collect();
    if missing.is_empty() {
        if let Ok(runner) = Tool::Runner.path() {
            if let (Some(dir), Some(path)) = (runner.parent(), std::env::var_os("PATH")) {
                let dirs = std::iter::once(dir.to_owned()).chain(std::env::split_paths(&path));
                if let Ok(joined) = std::env::join_paths(dirs) {
                    // SAFETY: called from `main` of the bench binary before any thread starts.
                    unsafe { std::env::set_var("PATH", joined) };
                }
            }
        }
        return;
    }
    for why in &missing {
        eprintln!("skipping `cargo bench --bench {target}`: {why}");
    }
    std::process::exit(0);
}

/// The environment of a counted process with libfaketime at `faketime` preloaded: a frozen
/// clock (`FAKETIME`), read once (`FAKETIME_CACHE_DURATION` longer than any run, so libfaketime
/// never re-parses it in the middle of a counted call), and a fixed `getrandom` stream
/// (`FAKERANDOM_SEED`): std's `HashMap` seeds come from `getrandom`, and a different seed per
/// run hashes, probes and grows the maps of axum's router, rocket and minijinja differently.
pub fn faketime_env(faketime: &std::path::Path) -> Vec<(&'static str, String)> {
    vec![
        ("LD_PRELOAD", faketime.display().to_string()),
        ("FAKETIME", "2026-01-01 00:00:00".into()),
        ("FAKETIME_CACHE_DURATION", "1000000".into()),
        ("FAKERANDOM_SEED", "0x12345678DEADBEEF".into()),
    ]
}

/// Scenarios whose route reads a file, so `io=disk` differs from `io=memory`.
pub const IO_SCENARIOS: &[&str] = &["static", "paste"];

/// Server threads of the loopback benches (`framebench serve --threads`).
pub const LOOPBACK_THREADS: usize = 1;

/// The variants measured in-process for `entry` × `scenario`: logging off and sink, and io
/// disk only where the route reads a file. The baselines ignore options and run once.
pub fn in_process_variants(entry: &Entry, scenario: &Scenario) -> Vec<Options> {
    if entry.baseline {
        return vec![Options::default()];
    }
    Options::variants(Options::default().threads)
        .into_iter()
        .filter(|o| o.io == Io::Memory || IO_SCENARIOS.contains(&scenario.name))
        .collect()
}

/// The variant label used in bench ids: `log=off,io=memory`.
pub fn label(options: &Options) -> String {
    options.label()
}

/// An app built for one cell, whose response was checked against the oracle.
pub struct Prepared {
    /// The built app.
    pub app: Box<dyn App>,
    /// The scenario's request path.
    pub path: &'static str,
    /// Length of the checked response body.
    pub body_len: usize,
}

/// Builds `entry` from `config`, dispatches the scenario once in-process and checks the answer.
pub fn prepare(
    entry: &Entry,
    config: &Config,
    scenario: &'static Scenario,
) -> anyhow::Result<Prepared> {
    let app = entry.build(config).context("build")?;
    let observed = crate::check::in_process(&*app, scenario.path)?;
    check(&config.fixtures, scenario, &observed)?;
    Ok(Prepared {
        app,
        path: scenario.path,
        body_len: observed.body.len(),
    })
}

/// Checks one observed response against the oracle.
pub fn check(
    fixtures: &Fixtures,
    scenario: &'static Scenario,
    observed: &Observed,
) -> anyhow::Result<()> {
    scenario
        .expected(fixtures)?
        .check(observed)
        .map_err(|e| anyhow::anyhow!("{}: {e}", scenario.name))
}
