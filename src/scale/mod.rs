//! `framebench scale`: how each framework's loopback rate grows with its server threads T. Every
//! target (a framework, on each runtime it takes) runs every scenario at every T of the list in
//! at least three rounds, interleaved with the others in an order that rotates each round; the
//! server is pinned to T CPUs of one half of the machine and the driver to the other half.
//! Each cell also reads the server's threads from /proc ([`crate::driver::threads`]), so that a
//! server that ran more busy threads than T, or outside its CPUs, is marked.
//!
//! [`plan`] decides what runs, [`summary`] reduces the rounds, [`output`] prints and writes them
//! and [`chart`] draws them.

pub(crate) mod output;
pub(crate) mod plan;
pub(crate) mod resume;
pub(crate) mod summary;

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::driver::{self, LoadParams};
use crate::fixtures::Fixtures;
use crate::oracle::Scenario;
use crate::pinning::Sides;

use plan::Target;
use summary::Measured;

/// What a sweep runs, decided before anything is measured.
pub(crate) struct Sweep {
    /// Server threads, ascending.
    pub(crate) threads: Vec<usize>,
    /// The two halves of the CPUs.
    pub(crate) sides: Sides,
    /// Connections at every T.
    pub(crate) connections: usize,
    /// Rounds.
    pub(crate) rounds: usize,
    /// Targets, in their first round's order.
    pub(crate) targets: Vec<Target>,
    /// Scenarios.
    pub(crate) scenarios: Vec<&'static Scenario>,
    /// Recorded time per cell.
    pub(crate) duration: Duration,
    /// Warm-up per cell.
    pub(crate) warmup: Duration,
    pub(crate) timeout: Duration,
    pub(crate) pipeline: usize,
    /// What the servers and the client speak.
    pub(crate) protocol: crate::options::Protocol,
    /// What they speak it over.
    pub(crate) transport: crate::options::Transport,
    /// h2c: concurrent streams per connection.
    pub(crate) streams: usize,
    pub(crate) sample_every: u64,
}

impl Sweep {
    /// How each cell at T is loaded.
    fn params(&self, t: usize) -> LoadParams {
        let mut p = LoadParams::closed_loop(
            self.duration,
            self.warmup,
            self.timeout,
            plan::pinning(&self.sides, t),
        );
        p.pipeline = self.pipeline;
        p.protocol = self.protocol;
        p.transport = self.transport;
        p.streams = self.streams;
        p.sample_every = self.sample_every;
        p.check_threads = true;
        p
    }

    /// Cells in all: rounds × T × targets × scenarios.
    pub(crate) fn cells(&self) -> usize {
        self.rounds * self.threads.len() * self.targets.len() * self.scenarios.len()
    }
}

/// What a sweep's results file holds in its `detail` beside the rows: what it ran and every
/// round's cell. `--replot` draws and writes from it, `--resume` goes on with it.
#[derive(serde::Deserialize)]
pub(crate) struct Written {
    pub(crate) threads: Vec<usize>,
    pub(crate) connections: usize,
    pub(crate) rounds: usize,
    pub(crate) duration_s: f64,
    pub(crate) warmup_s: f64,
    pub(crate) server_cpus: Vec<usize>,
    pub(crate) client_cpus: Vec<usize>,
    #[serde(default)]
    pub(crate) smt: bool,
    /// When it was measured (`25 Nov 2026 23:40:12`).
    #[serde(default)]
    pub(crate) date: String,
    /// The targets' labels, in their first round's order (absent in older files).
    #[serde(default)]
    pub(crate) targets: Vec<String>,
    pub(crate) cells: Vec<Measured>,
}

/// A results file that `scale --json` wrote, and its [`Written`] detail; `Err` in one line for
/// any other file.
pub(crate) fn read_written(
    path: &std::path::Path,
) -> anyhow::Result<(crate::results::Results, Written)> {
    let mut results = crate::results::Results::read(path)?;
    let name = path.display();
    if results.command != "scale" {
        return Err(crate::error::usage(format!(
            "{name} holds `framebench {}` results, not a sweep's",
            results.command
        )));
    }
    let written = results
        .detail
        .take()
        .ok_or_else(|| anyhow::anyhow!("no detail"))
        .and_then(|d| serde_json::from_value(d).map_err(anyhow::Error::from))
        .map_err(|e| crate::error::usage(format!("{name}: not a sweep's detail: {e:#}")))?;
    Ok((results, written))
}

/// Every round: at each T, every target in the round's order, each on a fresh server that
/// serves every scenario in turn; a cell `kept` holds (`--resume`) is taken from it instead.
/// Stops early on Ctrl-C.
pub(crate) fn run(
    sweep: &Sweep,
    fixtures: &Fixtures,
    kept: &resume::Kept,
    quiet: bool,
) -> Vec<Measured> {
    let per_cell = sweep.warmup + sweep.duration;
    let bar = driver::progress_bar(per_cell, sweep.cells(), quiet);
    let mut out = Vec::new();
    let mut done_ms = 0u64;
    for round in 0..sweep.rounds {
        for &t in &sweep.threads {
            let params = sweep.params(t);
            let order = driver::rounds::round_order(sweep.targets.len(), round);
            for (position, &i) in order.iter().enumerate() {
                let target = sweep.targets[i];
                let load =
                    driver::Target::Framework(target.entry, target.options(t, sweep.connections));
                // One server per target and T, for its scenarios; dropping it stops it.
                let mut server = None;
                for &scenario in &sweep.scenarios {
                    let label = target.label();
                    let variant = target.variant.label();
                    if let Some(m) = kept.find(round + 1, t, &label, &variant, scenario.name) {
                        done_ms += per_cell.as_millis() as u64;
                        bar.set_position(done_ms);
                        out.push(m.clone());
                        continue;
                    }
                    if crate::interrupt::interrupted().load(Ordering::Relaxed) {
                        bar.abandon_with_message("interrupted");
                        return out;
                    }
                    bar.set_message(format!(
                        "round {}/{} T={t}: {} {}",
                        round + 1,
                        sweep.rounds,
                        target.label(),
                        scenario.name
                    ));
                    let mut progress = driver::cell_progress(&bar, done_ms, per_cell);
                    let cell = driver::run_cell(
                        &load,
                        scenario,
                        fixtures,
                        sweep.connections,
                        &params,
                        &mut progress,
                        &mut server,
                    );
                    done_ms += per_cell.as_millis() as u64;
                    bar.set_position(done_ms);
                    out.push(Measured {
                        round: round + 1,
                        position: position + 1,
                        target: label,
                        runtime: target.runtime_label(),
                        variant,
                        threads: t,
                        cell,
                    });
                }
            }
        }
    }
    bar.finish_and_clear();
    out
}
