//! `framebench serve`: every route of one framework until SIGINT or SIGTERM (`crate::serve`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;

use super::args::{RedisArg, ServerArgs};
use crate::framework::Config;
use crate::serve::{announce, check_addr, install_limit, serve_until_limit, stats_now};

/// `framebench serve`.
#[derive(clap::Args)]
pub struct ServeArgs {
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
    stats: Option<PathBuf>,
    #[command(flatten)]
    server: ServerArgs,
    /// Exit by itself after this many requests, or with --protocol ws this many echoed
    /// messages (for `cargo bench --bench callgrind_loopback`).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    max_requests: Option<u64>,
    #[command(flatten)]
    redis: RedisArg,
    /// Count every allocation from the start (slower) and, on each SIGUSR1, write the live heap
    /// (bytes and blocks allocated and not yet freed) to this file as JSON: what `framebench
    /// memory` reads.
    #[arg(long, value_name = "PATH", conflicts_with = "max_requests")]
    heap: Option<PathBuf>,
}

/// `framebench serve`: one framework on `--addr` until SIGINT or SIGTERM, or until
/// `--max-requests` responses when given; `--stats` is written when it stops.
pub fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let ServeArgs {
        framework: name,
        addr,
        allow_remote,
        stats,
        server,
        max_requests,
        redis,
        heap,
    } = args;
    if heap.is_some() {
        crate::serve::count_heap()?;
    }
    let (name, options, stats) = (name.as_str(), server.options(), stats.as_deref());
    let entry = crate::select::framework(name)?;
    check_addr(addr, allow_remote)?;
    if !entry.loopback {
        return Err(crate::error::usage(format!(
            "{name} has no server (in-process only)"
        )));
    }
    crate::select::for_runtime(
        &[name.to_owned()],
        vec![entry],
        options.runtime,
        &[options.protocol],
    )?;
    crate::select::speaks(entry, &options)?;
    if options.transport == crate::options::Transport::Tls {
        // The certificate before anything starts: a bad one is one line.
        crate::transport::tls::identity()?;
    }
    if let Some(max) = max_requests {
        install_limit(name, options.protocol, max)?;
    } else if stats.is_some() && entry.counts_requests {
        // The same counting hook as --max-requests, with no limit: the count for --stats.
        crate::server::limit::install(u64::MAX, crate::server::limit::Counted::Responses)?;
    }
    let fixtures = crate::fixtures::Fixtures::load_default()?;
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
            signal_hook::iterator::Signals::new(
                [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM]
                    .into_iter()
                    .chain(heap.is_some().then_some(signal_hook::consts::SIGUSR1)),
            )
            .context("cannot install signal handlers")?,
        ),
    };
    let server = app.serve(listener)?;
    let since = std::time::Instant::now();
    let Some(mut signals) = signals else {
        // `--max-requests`: `install_limit` set the limit before the app was built.
        let limit = crate::server::limit::active()
            .ok_or_else(|| anyhow::anyhow!("--max-requests set no limit"))?;
        announce(&server, options.transport);
        return serve_until_limit(server, limit);
    };
    announce(&server, options.transport);
    'serving: loop {
        for signal in signals.pending() {
            match (signal, &heap) {
                (signal_hook::consts::SIGUSR1, Some(path)) => {
                    crate::serve::Heap::now().write(path)?
                }
                _ => break 'serving,
            }
        }
        if server.has_died() {
            return Err(anyhow::anyhow!("{name} server stopped unexpectedly"));
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
