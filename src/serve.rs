//! `framebench serve` and its internal twin `framebench child`: one framework's server on a
//! loopback listener (another address only with `--allow-remote`), with the first line
//! (`listening on URL`) that scripts and the driver wait for, stopped by SIGINT or SIGTERM. With
//! `--stats FILE` it writes its own request count, CPU time and peak memory there when it
//! stops: what a load from other hosts cannot meter.

use anyhow::Context;
use std::io::Write as _;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use crate::cli::{load_fixtures, RedisArg};
use crate::driver::output::ServerStats as Stats;
use crate::error::CliError;
use crate::framework::{Config, ServerHandle};
use crate::options::Options;
use crate::server::limit::{self, Limit};

/// How long `serve --max-requests` waits for its requests before giving up.
pub(crate) const LIMIT_TIMEOUT: Duration = Duration::from_secs(300);

/// How long `serve --max-requests` keeps serving after the last counted request, so that its
/// response reaches the client before the server stops.
pub(crate) const LINGER: Duration = Duration::from_millis(300);

/// This process's figures now, for `--stats`.
fn stats_now(framework: &str, since: std::time::Instant) -> Stats {
    let pid = std::process::id();
    let times = crate::proc::tree_cpu_times(pid);
    let (user, system) = times.as_ref().and_then(|t| t.split()).unwrap_or((0.0, 0.0));
    Stats {
        schema: Stats::SCHEMA.to_owned(),
        framework: framework.to_owned(),
        requests: crate::server::limit::active().map(|l| l.count()),
        user_s: user,
        system_s: system,
        cpu_s: times.as_ref().map_or(0.0, |t| t.total()),
        peak_rss_bytes: crate::proc::peak_rss(pid),
        wall_s: since.elapsed().as_secs_f64(),
    }
}

/// Where `serve` may bind: loopback, or any address with `allow_remote` (with a warning).
fn check_addr(addr: SocketAddr, allow_remote: bool) -> Result<(), CliError> {
    if addr.ip().is_loopback() {
        return Ok(());
    }
    if !allow_remote {
        return Err(CliError::usage(format!(
            "refusing to bind {addr}: framebench serves on loopback addresses only \
             (--allow-remote serves other hosts)"
        )));
    }
    eprintln!("warning: serving on {addr}, reachable from other hosts (--allow-remote)");
    Ok(())
}

/// `framebench serve`: one framework on `addr` until SIGINT or SIGTERM, or until
/// `max_requests` responses when given; `stats` is written when it stops.
pub fn serve(
    name: &str,
    addr: SocketAddr,
    allow_remote: bool,
    options: Options,
    max_requests: Option<u64>,
    stats: Option<&std::path::Path>,
    redis: &RedisArg,
) -> Result<ExitCode, CliError> {
    let entry = crate::cli::framework(name)?;
    check_addr(addr, allow_remote)?;
    if !entry.loopback {
        return Err(CliError::usage(format!(
            "{name} has no server (in-process only)"
        )));
    }
    crate::cli::for_runtime(&[name.to_owned()], vec![entry], options.runtime)?;
    if let Some(max) = max_requests {
        install_limit(name, max)?;
    } else if stats.is_some() && entry.counts_requests {
        // The same counting hook as --max-requests, with no limit: the count for --stats.
        crate::server::limit::install(u64::MAX)?;
    }
    let fixtures = load_fixtures()?;
    // The redis scenario's Redis, alive as long as the server.
    let redis = redis.provide()?;
    let app = entry.build(&Config::new(fixtures, redis.url()).with(options))?;
    let listener = crate::server::bind(addr).with_context(|| format!("cannot bind {addr}"))?;
    // Handlers before the server starts and before the line a supervisor waits for: a signal
    // sent as soon as the line is read must stop the server cleanly, not kill it, and a
    // framework that installs a SIGINT handler of its own (ohkami, through `ctrlc`) puts back
    // the one it found when it starts, which must be these. A `--max-requests` server has
    // none: a signal ends it.
    let signals = match max_requests {
        Some(_) => None,
        None => Some(
            signal_hook::iterator::Signals::new([
                signal_hook::consts::SIGINT,
                signal_hook::consts::SIGTERM,
            ])
            .context("cannot install signal handlers")?,
        ),
    };
    let server = app.serve(listener)?;
    let since = std::time::Instant::now();
    let Some(mut signals) = signals else {
        // `--max-requests`: `install_limit` set the limit before the app was built.
        let limit = crate::server::limit::active()
            .ok_or_else(|| CliError(1, "--max-requests set no limit".into()))?;
        announce(&server);
        return serve_until_limit(server, limit);
    };
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
    // Read before the shutdown, which may wait on connections the clients left open.
    let figures = stats_now(name, since);
    server.shutdown()?;
    if let Some(path) = stats {
        let text = serde_json::to_string_pretty(&figures).expect("stats serialize") + "\n";
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints `serve`'s first line, which scripts and the driver wait for.
fn announce(server: &crate::framework::ServerHandle) {
    println!("listening on {}", server.url());
    let _ = std::io::stdout().flush();
}

/// `framebench child`: serves a framework that runs in a child process (may-minihttp) on the
/// listener its parent passed as descriptor 3, with the parent's Redis as given.
pub fn child(name: &str, options: Options, redis: Option<&str>) -> Result<ExitCode, CliError> {
    let config = Config::new(load_fixtures()?, redis).with(options);
    crate::cli::framework(name)?.serve_child(&config)?;
    Ok(ExitCode::SUCCESS)
}

/// Installs the `--max-requests` limit for `framework`, before its app is built.
pub(crate) fn install_limit(framework: &str, max: u64) -> Result<(), CliError> {
    if !crate::frameworks::find(framework).is_some_and(|e| e.counts_requests) {
        let counting: Vec<_> = crate::frameworks::REGISTRY
            .iter()
            .filter(|e| e.counts_requests)
            .map(|e| e.name)
            .collect();
        return Err(CliError::usage(format!(
            "{framework} does not count requests; --max-requests works with: {}",
            counting.join(", ")
        )));
    }
    limit::install(max)
        .map(|_| ())
        .map_err(|e| CliError::usage(format!("{e:#}")))
}

/// Serves until the limit is reached, then stops the server and exits. Fails if the limit is
/// not reached within [`LIMIT_TIMEOUT`].
pub(crate) fn serve_until_limit(server: ServerHandle, limit: &Limit) -> Result<ExitCode, CliError> {
    if !limit.wait(LIMIT_TIMEOUT) {
        return Err(CliError(
            1,
            format!(
                "--max-requests not reached within {} s ({} requests counted)",
                LIMIT_TIMEOUT.as_secs(),
                limit.count()
            ),
        ));
    }
    std::thread::sleep(LINGER);
    server.shutdown()?;
    Ok(ExitCode::SUCCESS)
}
