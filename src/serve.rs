//! `framebench serve` and its internal twin `framebench child`: one framework's server on a
//! loopback listener, with the first line (`listening on URL`) that scripts and the driver wait
//! for, stopped by SIGINT or SIGTERM.

use std::io::Write as _;
use std::net::{SocketAddr, TcpListener};
use std::process::ExitCode;
use std::time::Duration;

use crate::cli::{load_fixtures, CliError, RedisArg};
use crate::framework::Config;
use crate::options::Options;

/// `framebench serve`: one framework on `addr` (loopback only) until SIGINT or SIGTERM, or
/// until `max_requests` responses when given.
pub fn serve(
    name: &str,
    addr: SocketAddr,
    options: Options,
    max_requests: Option<u64>,
    redis: &RedisArg,
) -> Result<ExitCode, CliError> {
    let entry = crate::cli::framework(name)?;
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
        crate::bench::cli::install_limit(name, max)?;
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
    if let Some(limit) = crate::server::limit::active() {
        announce(&server);
        return crate::bench::cli::serve_until_limit(server, limit);
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
fn announce(server: &crate::framework::ServerHandle) {
    println!("listening on {}", server.url());
    let _ = std::io::stdout().flush();
}

/// `framebench child`: serves a framework that runs in a child process (may-minihttp) on the
/// listener its parent passed as descriptor 3, with the parent's Redis as given.
pub fn child(name: &str, options: Options, redis: Option<&str>) -> Result<ExitCode, CliError> {
    let config = Config::new(load_fixtures()?, redis).with(options);
    crate::cli::framework(name)?
        .serve_child(&config)
        .map_err(CliError::fail)?;
    Ok(ExitCode::SUCCESS)
}
