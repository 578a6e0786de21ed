//! The quick compare's loopback cells: every serving framework × scenario in passes that share
//! what is left of the time budget, each cell reporting its best pass, and each cell's ratio to
//! the reference (`raw`) in the same pass.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::driver::stats::{CellResult, Status};
use crate::driver::{run_plan_on, LoadParams, Plan, Target};
use crate::fixtures::Fixtures;
use crate::framework::Entry;
use crate::frameworks::REGISTRY;
use crate::interrupt::interrupted;
use crate::options::Options;
use crate::oracle::Scenario;
use crate::pinning::Pinning;
use crate::quick::QUICK_SCENARIOS;

/// Time the whole quick compare aims for, from its start to its table: in-process cells,
/// allocation counts, loopback cells and the hello cells past saturation ([`super::hello`]).
/// The saturated loopback passes get what the others left. The bound is 4 minutes
/// after the build; 225 s leaves a margin for writing the files and a slower machine.
pub(crate) const QUICK_BUDGET: Duration = Duration::from_secs(225);

/// Connections per server thread in the quick compare's loopback cells. On this project's
/// 2-core machine, `load --threads 1` keeps event-driven servers at 93–98 % of their core from
/// 8 connections on, against 45–70 % at 2 (docs/history/driver.md); 16 leaves a margin. A
/// cell whose server still is not saturated is marked ([`super::stats::Bound`]).
pub(crate) const QUICK_CONNECTIONS_PER_THREAD: usize = 16;

/// Passes over every loopback cell in the quick compare; each cell reports its best pass. This
/// project's machine (a VM) changes speed by itself: a CPU-bound loop pinned to one idle core
/// ran at 0.5–1.0× its top speed in 0.2 s windows, in slow spells of 0.5–4 s that took 18–80 %
/// of a minute, a different share each minute. A slow spell slows a cell and never speeds it
/// up, so the best of passes spread over the whole column is the figure least moved by how
/// slow a given minute was; every pass is checked against the oracle, and a cell failing in any
/// pass fails. docs/methodology/loopback.md ("Repeatability of the quick compare") gives the trials
/// behind this choice: with best of 3 passes of 0.2 s, 61 % of cells stayed within 10 % across
/// two runs; with the median of 13 passes of 50 ms, 51 %; with the best of 8 of 80 ms, 98 %.
/// Six since the query and body scenarios joined (eleven columns rather than seven): the fewest
/// at which the ratio to raw over the passes has a bounded 95 % interval
/// ([`crate::interval::median_interval`]), without which no loopback leader can be named.
pub(crate) const QUICK_PASSES: usize = 6;

/// Start-up of one server (once per framework: every pass reuses it), about 0.1 s.
const QUICK_SERVER_OVERHEAD: Duration = Duration::from_millis(150);
/// The oracle check, connecting and CPU meters of one cell in one pass (about 1 ms measured).
const QUICK_CELL_OVERHEAD: Duration = Duration::from_millis(4);
/// The shortest pass of one cell: a quarter warm-up (the server has served this cell in
/// earlier passes) and the rest recorded, about 6,000 requests at 100 k req/s. Shorter
/// windows read the server's CPU too low to tell a saturated server from an idle one.
const QUICK_MIN_SLICE: Duration = Duration::from_millis(80);

/// How the quick compare's loopback cells were run, for its header.
#[derive(Debug, Clone)]
pub(crate) struct QuickLoopback {
    /// Load parameters of every cell.
    pub(crate) params: LoadParams,
    /// Passes; each cell reports its best.
    pub(crate) passes: usize,
    /// Server worker threads (one per server CPU).
    pub(crate) threads: usize,
    /// Connections per cell.
    pub(crate) connections: usize,
    /// Frameworks given a pool of `connections` threads instead
    /// ([`crate::framework::Framework::THREAD_PER_CONNECTION`]).
    pub(crate) pooled: Vec<&'static str>,
    /// Each cell's req/s over the reference's (`raw`) in the same pass, as a median over the
    /// passes with its interval ([`ratios_to`]).
    pub(crate) of_reference: Vec<PassRatio>,
}

/// One cell's speed as a fraction of the reference's, from passes that measured both.
#[derive(Debug, Clone)]
pub(crate) struct PassRatio {
    /// Framework name.
    pub(crate) target: String,
    /// Scenario name.
    pub(crate) scenario: String,
    /// The median over passes of (this cell's req/s ÷ the reference's in the same pass).
    pub(crate) ratio: crate::interval::Estimate,
}

/// For every cell, the ratio of its req/s to `reference`'s req/s on the same scenario in the
/// same pass, over the passes where both ended `ok`. The passes run every framework one after
/// another, so the two cells of a pass are seconds apart rather than a whole column: pairing
/// them cancels most of the machine's drift, and the median's interval says what is left.
pub(crate) fn ratios_to(reference: &str, passes: &[Vec<CellResult>]) -> Vec<PassRatio> {
    let mut per_cell: Vec<(String, String, Vec<f64>)> = Vec::new();
    for pass in passes {
        for cell in pass
            .iter()
            .filter(|c| c.target != reference && c.status == Status::Ok && c.rps > 0.0)
        {
            let Some(r) = pass.iter().find(|r| {
                r.target == reference
                    && r.scenario == cell.scenario
                    && r.status == Status::Ok
                    && r.rps > 0.0
            }) else {
                continue;
            };
            let ratio = cell.rps / r.rps;
            match per_cell
                .iter_mut()
                .find(|(t, s, _)| *t == cell.target && *s == cell.scenario)
            {
                Some((_, _, v)) => v.push(ratio),
                None => per_cell.push((cell.target.clone(), cell.scenario.clone(), vec![ratio])),
            }
        }
    }
    per_cell
        .into_iter()
        .filter_map(|(target, scenario, v)| {
            Some(PassRatio {
                target,
                scenario,
                ratio: crate::interval::median_interval(&v)?,
            })
        })
        .collect()
}

/// The loopback half of the quick compare: every serving framework × every scenario, a short
/// closed-loop load checked against the oracle first, with enough connections to saturate the
/// server ([`QUICK_CONNECTIONS_PER_THREAD`] per server thread, one thread per server CPU).
/// Thread-per-connection servers get one thread per connection, so that the table compares
/// their cost per request and not their pool size. Each framework gets one server for all its
/// scenarios and passes; [`QUICK_PASSES`] passes share `budget` once the hello cells past
/// saturation ([`super::hello`]) have taken their fixed time, each cell getting 0.08–2 s per
/// pass, and each cell reports its best pass ([`super::passes::best_of`]). The hello cells run last, on the
/// same servers.
pub(crate) fn quick_loopback(
    fixtures: &Fixtures,
    options: Options,
    budget: Duration,
) -> (Vec<CellResult>, QuickLoopback, super::hello::Hello) {
    interrupted();
    let pinning = Pinning::resolve(None, None, None);
    let threads = pinning.server_cores(usize::MAX);
    let connections = QUICK_CONNECTIONS_PER_THREAD * threads;
    let entries: Vec<_> = REGISTRY.iter().filter(|e| e.loopback).collect();
    let targets = loopback_targets(&entries, options, threads, connections);
    let scenarios: Vec<&'static Scenario> = QUICK_SCENARIOS
        .iter()
        .filter(|s| crate::redis::children_can_serve(s))
        .collect();
    let per_cell = cell_slice(&entries, scenarios.len(), budget);
    // A quarter warm-up, three quarters recorded, in whole milliseconds.
    let ms = |d: Duration| Duration::from_millis(d.as_millis() as u64);
    let plan = Plan {
        targets,
        scenarios,
        connections: vec![connections],
        streams: vec![1],
        params: LoadParams::closed_loop(
            ms(per_cell * 3 / 4),
            ms(per_cell / 4),
            Duration::from_secs(2),
            pinning,
        ),
        server_per_target: true,
    };
    let mut runs = Vec::new();
    // One server per framework for the whole column; dropping them stops them.
    let mut servers = Vec::new();
    for _ in 0..QUICK_PASSES {
        if interrupted().load(Ordering::Relaxed) {
            break;
        }
        runs.push(run_plan_on(&plan, fixtures, false, &mut servers));
    }
    let hello = super::hello::measure(
        plan.targets.clone(),
        connections,
        plan.params.pinning.clone(),
        fixtures,
        &mut servers,
    );
    drop(servers);
    let reference = crate::frameworks::reference().map_or("raw", |e| e.name);
    let of_reference = ratios_to(reference, &runs);
    let pooled = entries
        .iter()
        .filter(|e| e.thread_per_connection)
        .map(|e| e.name)
        .collect();
    (
        super::passes::best_of(runs),
        QuickLoopback {
            params: plan.params,
            passes: QUICK_PASSES,
            threads,
            connections,
            pooled,
            of_reference,
        },
        hello,
    )
}

/// The quick compare's loopback targets: every entry with `threads` server threads, or one per
/// connection for a thread-per-connection server.
fn loopback_targets(
    entries: &[&'static Entry],
    options: Options,
    threads: usize,
    connections: usize,
) -> Vec<Target> {
    entries
        .iter()
        .map(|e| {
            let threads = if e.thread_per_connection {
                connections
            } else {
                threads
            };
            Target::Framework(e, Options { threads, ..options })
        })
        .collect()
}

/// Each cell's time in one pass: what `budget` leaves once the hello cells past saturation and
/// the servers' start-up are paid, shared by every runnable framework × `scenarios` × pass.
fn cell_slice(entries: &[&'static Entry], scenarios: usize, budget: Duration) -> Duration {
    // Frameworks this machine cannot serve (the Go peers without `go`, already built or
    // refused by the caller) take no time.
    let runnable = entries
        .iter()
        .filter(|e| e.available().is_ok())
        .count()
        .max(1) as u32;
    let passes = QUICK_PASSES as u32;
    let cells = runnable * scenarios.max(1) as u32 * passes;
    let budget = budget.saturating_sub(super::hello::per_server() * runnable);
    (budget.saturating_sub(QUICK_SERVER_OVERHEAD * runnable) / cells)
        .saturating_sub(QUICK_CELL_OVERHEAD)
        .clamp(QUICK_MIN_SLICE, Duration::from_secs(2))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The passes are the fewest that bound the ratio to raw: with one fewer, no loopback
    /// leader could ever be named.
    #[test]
    fn the_passes_bound_the_ratio_to_raw_and_one_fewer_would_not() {
        let ratios = |n: usize| -> Vec<f64> { (1..=n).map(|i| 0.5 + i as f64 / 100.0).collect() };
        let bounded = |n: usize| {
            crate::interval::median_interval(&ratios(n))
                .unwrap()
                .bounded()
        };
        assert!(bounded(QUICK_PASSES));
        assert!(!bounded(QUICK_PASSES - 1));
    }
}
