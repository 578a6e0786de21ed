//! `framebench profile`: one framework × scenario in a hot loop for a bounded time, for
//! `perf record` or a flamegraph tool. The response is checked against the oracle first.
//!
//! In-process mode calls `dispatch` on this thread. Loopback mode serves the app on
//! 127.0.0.1:0 in this process and drives it with the keep-alive bench client from this thread,
//! so one `perf record` sees the server's threads and the client.
//!
//! With `--allocs` there is no loop: [`allocation_sites`] counts one dispatch, prepared as
//! `framebench allocs` prepares it, and groups its allocations by the site that made them.

use std::time::{Duration, Instant};

use anyhow::bail;

use crate::check;
use crate::framework::{Config, Entry};
use crate::oracle::Scenario;

use super::client::KeepAlive;

/// Where the profiled requests go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProfileMode {
    /// Through `dispatch`, no socket.
    InProcess,
    /// Through the framework's server on 127.0.0.1, one keep-alive connection.
    Loopback,
}

/// What a profile run did.
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    /// Requests answered.
    pub requests: u64,
    /// Wall time of the loop.
    pub elapsed: Duration,
    /// Time inside the measured calls: the dispatch calls in-process (building the requests and
    /// dropping the responses left out), the whole loop over loopback.
    pub measured: Duration,
}

/// Runs the hot loop for `seconds`.
pub fn run(
    entry: &Entry,
    scenario: &'static Scenario,
    config: &Config,
    mode: ProfileMode,
    seconds: Duration,
) -> anyhow::Result<Summary> {
    let deadline = |start: Instant| start + seconds;
    match mode {
        ProfileMode::InProcess => {
            if !entry.in_process {
                bail!("{} is loopback only (try --mode loopback)", entry.name);
            }
            let prepared = super::prepare(entry, config, scenario)?;
            let start = Instant::now();
            let end = deadline(start);
            let mut requests = 0u64;
            let mut measured = Duration::ZERO;
            loop {
                // Batches built outside the dispatch calls and dropped after them, as every
                // in-process timer does ([`super::timed_batch`]); the clock checked per batch.
                measured += super::timed_batch(&*prepared.app, prepared.path, 256)?;
                requests += 256;
                if Instant::now() >= end {
                    break;
                }
            }
            Ok(Summary {
                requests,
                elapsed: start.elapsed(),
                measured,
            })
        }
        ProfileMode::Loopback => {
            if !entry.loopback {
                bail!("{} has no server (try --mode in-process)", entry.name);
            }
            let app = entry.build(config)?;
            let server = app.serve(check::bind_local()?)?;
            let mut conn = KeepAlive::connect(server.addr(), scenario, &config.fixtures)?;
            let start = Instant::now();
            let end = deadline(start);
            let mut requests = 0u64;
            loop {
                for _ in 0..64 {
                    conn.round_trip()?;
                }
                requests += 64;
                if Instant::now() >= end {
                    break;
                }
            }
            let elapsed = start.elapsed();
            drop(conn);
            server.shutdown()?;
            Ok(Summary {
                requests,
                elapsed,
                measured: elapsed,
            })
        }
    }
}

/// One in-process dispatch of `entry` × `scenario` after the warm-up of `framebench allocs`
/// ([`crate::allocs::ready`]), its allocations grouped by site ([`crate::allocs::sites`]) with
/// `depth` frames each: the table `framebench profile --allocs` prints.
pub fn allocation_sites(
    entry: &Entry,
    scenario: &'static Scenario,
    config: &Config,
    depth: usize,
) -> anyhow::Result<String> {
    use crate::allocs;
    if !entry.in_process {
        bail!(
            "{} is loopback only: allocations are counted in-process",
            entry.name
        );
    }
    anyhow::ensure!(
        allocs::installed(),
        "this binary's global allocator is not framebench::allocs::Global: nothing can be counted"
    );
    let ready = allocs::ready(entry, config, scenario)?;
    let (counts, recorded) = ready.sites()?;
    let sites = allocs::sites::group(&recorded, depth);
    Ok(format!(
        "{} {} {}: one dispatch after two warm-up requests, every thread: {counts}\n{}",
        entry.name,
        scenario.name,
        config.options.label(),
        allocs::sites::render(&sites)
    ))
}
