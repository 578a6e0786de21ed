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
use crate::framework::{Config, Entry, ServerHandle};
use crate::oracle::Scenario;

use super::client::KeepAlive;

/// Where the profiled requests go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ProfileMode {
    /// Through `dispatch`, no socket.
    InProcess,
    /// Through the framework's server on 127.0.0.1, one keep-alive connection.
    Loopback,
}

/// What a profile run did.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Summary {
    /// Requests answered.
    pub(crate) requests: u64,
    /// Wall time of the loop.
    pub(crate) elapsed: Duration,
    /// Time inside the measured calls: the dispatch calls in-process (building the requests and
    /// dropping the responses left out), the whole loop over loopback.
    pub(crate) measured: Duration,
}

/// A cell ready for its hot loop: built and checked, and over loopback served and connected.
/// Apart from the loop itself, so that a sampler ([`super::flamegraph`]) can start between the
/// two and see none of the set-up.
pub(crate) enum HotLoop {
    /// The checked app, dispatched on this thread.
    InProcess(crate::cell::Prepared),
    /// The server in this process and one keep-alive connection to it.
    Loopback {
        /// The running server.
        server: ServerHandle,
        /// The client, checked on its first exchange.
        conn: KeepAlive,
    },
}

impl HotLoop {
    /// Builds the cell and checks it against the oracle; over loopback, serves it on
    /// 127.0.0.1:0 and connects.
    pub(crate) fn start(
        entry: &Entry,
        scenario: &'static Scenario,
        config: &Config,
        mode: ProfileMode,
    ) -> anyhow::Result<HotLoop> {
        match mode {
            ProfileMode::InProcess => {
                if !entry.in_process {
                    bail!("{} is loopback only (try --mode loopback)", entry.name);
                }
                Ok(HotLoop::InProcess(crate::cell::prepare(
                    entry, config, scenario,
                )?))
            }
            ProfileMode::Loopback => {
                if !entry.loopback {
                    bail!("{} has no server (try --mode in-process)", entry.name);
                }
                let app = entry.build(config)?;
                let server = app.serve(check::bind_local()?)?;
                let conn = KeepAlive::connect(server.addr(), scenario, &config.fixtures)?;
                Ok(HotLoop::Loopback { server, conn })
            }
        }
    }

    /// Runs the loop until `seconds` have passed, checking the clock every batch.
    pub(crate) fn run(&mut self, seconds: Duration) -> anyhow::Result<Summary> {
        let start = Instant::now();
        let end = start + seconds;
        let mut requests = 0u64;
        let mut measured = Duration::ZERO;
        loop {
            match self {
                // Batches built outside the dispatch calls and dropped after them, as every
                // in-process timer does ([`super::timed_batch`]).
                HotLoop::InProcess(prepared) => {
                    measured += super::timed_batch(&*prepared.app, &prepared.instances, 256)?;
                    requests += 256;
                }
                HotLoop::Loopback { conn, .. } => {
                    for _ in 0..64 {
                        conn.round_trip()?;
                    }
                    requests += 64;
                }
            }
            if Instant::now() >= end {
                break;
            }
        }
        let elapsed = start.elapsed();
        if matches!(self, HotLoop::Loopback { .. }) {
            measured = elapsed;
        }
        Ok(Summary {
            requests,
            elapsed,
            measured,
        })
    }

    /// Closes the connection and stops the server (loopback); drops the app.
    pub(crate) fn finish(self) -> anyhow::Result<()> {
        match self {
            HotLoop::InProcess(_) => Ok(()),
            HotLoop::Loopback { server, conn } => {
                drop(conn);
                server.shutdown()
            }
        }
    }
}

/// One in-process dispatch of `entry` × `scenario` after the warm-up of `framebench allocs`
/// ([`crate::allocs::ready`]), its allocations grouped by site ([`crate::allocs::sites`]) with
/// `depth` frames each: the table `framebench profile --allocs` prints.
pub(crate) fn allocation_sites(
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
