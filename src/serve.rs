//! `framebench serve` and its internal twin `framebench child`: one framework's server on a
//! loopback listener (another address only with `--allow-remote`), with the first line
//! (`listening on URL`) that scripts and the driver wait for, stopped by SIGINT or SIGTERM. With
//! `--stats FILE` it writes its own request count, CPU time and peak memory there when it
//! stops: what a load from other hosts cannot meter.

use std::io::Write as _;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::framework::ServerHandle;
use crate::server::limit::{self, Limit};

/// What `serve --stats` writes when the server stops.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ServerStats {
    /// [`ServerStats::SCHEMA`].
    pub(crate) schema: String,
    /// The framework.
    pub(crate) framework: String,
    /// Responses the server produced in its whole life, oracle checks and warm-ups included
    /// (`None`: this framework does not count, [`crate::framework::Framework::COUNTS_REQUESTS`]).
    pub(crate) requests: Option<u64>,
    /// CPU seconds in user mode, of the server process and its children.
    pub(crate) user_s: f64,
    /// CPU seconds in the kernel.
    pub(crate) system_s: f64,
    /// CPU seconds in all, from the scheduler's clock.
    pub(crate) cpu_s: f64,
    /// Peak resident memory in bytes.
    pub(crate) peak_rss_bytes: Option<u64>,
    /// Seconds from listening to stopping.
    pub(crate) wall_s: f64,
}

impl ServerStats {
    /// The version of the `serve --stats` format.
    pub(crate) const SCHEMA: &'static str = "framebench-server-stats/1";

    /// Reads a `serve --stats` file; anything else is one line ([`crate::versioned`]).
    pub(crate) fn read(path: &std::path::Path) -> anyhow::Result<ServerStats> {
        crate::versioned::read(path)
    }
}

impl crate::versioned::Versioned for ServerStats {
    const SCHEMAS: &'static [&'static str] = &[ServerStats::SCHEMA];
    const WHAT: &'static str = "a `serve --stats` file";
    const HOW: &'static str = "write one with `framebench serve --stats FILE`";
}

/// What `serve --heap FILE` writes on each SIGUSR1: the live heap of the whole process, counted
/// by its global allocator ([`crate::allocs::GATE`]) since `serve` started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Heap {
    /// Bytes allocated and not yet freed. Counting starts when `serve` does, so what the
    /// process freed of its earlier allocations makes it a few hundred bytes low: a constant of
    /// the build, which a difference between two readings cancels.
    pub(crate) live_bytes: i64,
    /// Blocks allocated and not yet freed, likewise.
    pub(crate) live_blocks: i64,
}

impl Heap {
    /// This process's live heap now.
    pub(crate) fn now() -> Heap {
        let s = crate::allocs::GATE.stats().stats();
        let signed = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        Heap {
            live_bytes: signed(s.bytes_allocated) - signed(s.bytes_deallocated),
            live_blocks: signed(s.allocations) - signed(s.deallocations),
        }
    }

    /// Writes it to `path` whole: a reader never sees half a file.
    pub(crate) fn write(self, path: &std::path::Path) -> anyhow::Result<()> {
        let part = path.with_extension("part");
        let text = serde_json::to_string(&self).expect("two numbers serialize");
        std::fs::write(&part, text)
            .and_then(|()| std::fs::rename(&part, path))
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
    }

    /// Reads what [`Heap::write`] wrote.
    pub(crate) fn read(path: &std::path::Path) -> anyhow::Result<Heap> {
        let text = std::fs::read_to_string(path)?;
        Ok(serde_json::from_str(&text)?)
    }
}

/// `serve --heap`: counts every allocation from now on; fails when this binary's allocator is
/// not the counting one.
pub(crate) fn count_heap() -> anyhow::Result<()> {
    anyhow::ensure!(
        crate::allocs::installed(),
        "--heap needs the framebench binary, whose allocator counts"
    );
    crate::allocs::GATE.set(crate::allocs::Mode::Count);
    Ok(())
}

/// How long `serve --max-requests` waits for its requests before giving up.
pub(crate) const LIMIT_TIMEOUT: Duration = Duration::from_secs(300);

/// How long `serve --max-requests` keeps serving after the last counted request, so that its
/// response reaches the client before the server stops.
pub(crate) const LINGER: Duration = Duration::from_millis(300);

/// This process's figures now, for `--stats`.
pub(crate) fn stats_now(framework: &str, since: std::time::Instant) -> ServerStats {
    let pid = std::process::id();
    let times = crate::proc::tree_cpu_times(pid);
    let (user, system) = times.as_ref().and_then(|t| t.split()).unwrap_or((0.0, 0.0));
    ServerStats {
        schema: ServerStats::SCHEMA.to_owned(),
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
pub(crate) fn check_addr(addr: SocketAddr, allow_remote: bool) -> anyhow::Result<()> {
    if addr.ip().is_loopback() {
        return Ok(());
    }
    if !allow_remote {
        return Err(crate::error::usage(format!(
            "refusing to bind {addr}: framebench serves on loopback addresses only \
             (--allow-remote serves other hosts)"
        )));
    }
    eprintln!("warning: serving on {addr}, reachable from other hosts (--allow-remote)");
    Ok(())
}

/// Prints `serve`'s first line, which scripts and the driver wait for: `listening on
/// http://ADDR`, or `https://ADDR` over TLS.
pub(crate) fn announce(
    server: &crate::framework::ServerHandle,
    transport: crate::options::Transport,
) {
    println!("listening on {}://{}", transport.scheme(), server.addr());
    let _ = std::io::stdout().flush();
}

/// Installs the `--max-requests` limit for `framework`, before its app is built: its responses,
/// or under `--protocol ws` the messages its echo sends back.
pub(crate) fn install_limit(
    framework: &str,
    protocol: crate::options::Protocol,
    max: u64,
) -> anyhow::Result<()> {
    let counted = protocol.counted();
    let (what, counts): (_, fn(&crate::framework::Entry) -> bool) = match counted {
        limit::Counted::Messages => ("messages", |e| e.counts_messages),
        limit::Counted::Responses => ("requests", |e| e.counts_requests),
    };
    if !crate::frameworks::find(framework).is_some_and(counts) {
        let counting: Vec<_> = crate::frameworks::REGISTRY
            .iter()
            .filter(|e| counts(e))
            .map(|e| e.name)
            .collect();
        return Err(crate::error::usage(format!(
            "{framework} does not count {what}; --max-requests works with: {}",
            counting.join(", ")
        )));
    }
    limit::install(max, counted)
        .map(|_| ())
        .map_err(|e| crate::error::usage(format!("{e:#}")))
}

/// Serves until the limit is reached, then stops the server and exits. Fails if the limit is
/// not reached within [`LIMIT_TIMEOUT`].
pub(crate) fn serve_until_limit(server: ServerHandle, limit: &Limit) -> anyhow::Result<ExitCode> {
    if !limit.wait(LIMIT_TIMEOUT) {
        return Err(anyhow::anyhow!(
            "--max-requests not reached within {} s ({} requests counted)",
            LIMIT_TIMEOUT.as_secs(),
            limit.count()
        ));
    }
    std::thread::sleep(LINGER);
    server.shutdown()?;
    Ok(ExitCode::SUCCESS)
}
