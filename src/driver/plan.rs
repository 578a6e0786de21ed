//! A sweep ([`Plan`]): targets × scenarios × connection counts (× streams, for h2c), each cell
//! run by [`super::run_cell`] in turn under one progress bar, in rounds when asked
//! ([`super::rounds`]): `load`, `compare` and the quick compare's loopback passes.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::stats::CellResult;
use super::{run_cell, LoadParams, Target};
use crate::child::ServerProcess;
use crate::fixtures::Fixtures;
use crate::interrupt::interrupted;
use crate::options::{Protocol, Transport};
use crate::oracle::Scenario;

/// A sweep: targets × scenarios × connection counts.
pub(crate) struct Plan {
    /// What is loaded.
    pub(crate) targets: Vec<Target>,
    /// Scenarios.
    pub(crate) scenarios: Vec<&'static Scenario>,
    /// Connection counts.
    pub(crate) connections: Vec<usize>,
    /// Concurrent streams per connection, each a cell of its own (h2c; `[1]` for HTTP/1.1).
    pub(crate) streams: Vec<usize>,
    /// How.
    pub(crate) params: LoadParams,
    /// One server per target for all its cells, instead of a fresh one per cell (the quick
    /// compare's passes: start-up is most of a short cell), kept for the next pass by
    /// [`run_plan_on`]. Its peak RSS is then the peak up to each cell.
    pub(crate) server_per_target: bool,
}

impl Plan {
    /// Number of cells, each counted once however many rounds it runs.
    pub(crate) fn cells(&self) -> usize {
        (0..self.targets.len()).map(|i| self.cells_of(i)).sum()
    }

    /// The cells of the target at `i`.
    fn cells_of(&self, i: usize) -> usize {
        let target = &self.targets[i];
        self.scenarios_of(target).count() * self.connections.len() * self.streams_of(target).len()
    }

    /// The scenarios `target`'s protocol carries (`echo` under WebSocket, the others else).
    fn scenarios_of(&self, target: &Target) -> impl Iterator<Item = &'static Scenario> + '_ {
        let protocol = self.protocol_of(target);
        self.scenarios
            .iter()
            .copied()
            .filter(move |s| protocol.carries(s))
    }

    /// The protocol `target` is loaded with: its server's, or the run's for a URL.
    fn protocol_of(&self, target: &Target) -> Protocol {
        match target {
            Target::Framework(_, o) => o.protocol,
            Target::Url(_) => self.params.protocol,
        }
    }

    /// What `target`'s cells run over: a framework's own, the run's for a URL.
    fn transport_of(&self, target: &Target) -> Transport {
        match target {
            Target::Framework(_, o) => o.transport,
            Target::Url(_) => self.params.transport,
        }
    }

    /// The stream counts of `target`'s cells: one for HTTP/1.1.
    fn streams_of(&self, target: &Target) -> &[usize] {
        self.protocol_of(target).streams_of(&self.streams)
    }
}

/// The progress callback of one cell: moves `bar` to `base` (the milliseconds of the cells
/// before it) plus the cell's elapsed time, at most `per_cell`.
pub(crate) fn cell_progress(
    bar: &indicatif::ProgressBar,
    base: u64,
    per_cell: Duration,
) -> impl FnMut(Duration) + '_ {
    let cap = per_cell.as_millis() as u64;
    move |t: Duration| bar.set_position(base + (t.as_millis() as u64).min(cap))
}

/// The progress bar of a run of `cells` cells of `per_cell` each, in milliseconds, on stderr
/// (hidden when `quiet`): `compare`'s and `scale`'s.
pub(crate) fn progress_bar(
    per_cell: Duration,
    cells: usize,
    quiet: bool,
) -> indicatif::ProgressBar {
    let total_ms = (per_cell.as_millis() as u64).max(1) * cells as u64;
    let bar = if quiet {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new(total_ms)
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {percent:>3}% ~{eta} left  {msg}")
            .expect("valid template"),
    );
    bar
}

/// Runs every cell of `plan` with a progress bar on stderr (hidden when it is not a
/// terminal). Stops early on Ctrl-C.
pub(crate) fn run_plan(plan: &Plan, fixtures: &Fixtures, quiet: bool) -> Vec<CellResult> {
    run_plan_on(plan, fixtures, quiet, &mut Vec::new())
}

/// [`run_plan`] with the servers of a `server_per_target` plan left in `servers` (one slot
/// per target, in order) when it returns, so that another pass over the same plan reuses them
/// instead of starting each again. Dropping them stops them. The cells come back in the plan's
/// order, each reduced over its rounds.
pub(crate) fn run_plan_on(
    plan: &Plan,
    fixtures: &Fixtures,
    quiet: bool,
    servers: &mut Vec<Option<ServerProcess>>,
) -> Vec<CellResult> {
    servers.resize_with(plan.targets.len(), || None);
    let per_cell = plan.params.warmup + plan.params.duration;
    let rounds = plan.params.rounds.max(1);
    let cells = plan.cells() * rounds;
    let bar = progress_bar(per_cell, cells, quiet);
    // Build what the targets need (the Go peers) now, before the first cell starts a server.
    for target in &plan.targets {
        if let Target::Framework(e, _) = target {
            let _ = e.available();
        }
    }
    // Every round's cells, per target: `runs[target][cell]` holds one entry per round run.
    let mut runs: Vec<Vec<Vec<CellResult>>> = (0..plan.targets.len())
        .map(|i| (0..plan.cells_of(i)).map(|_| Vec::new()).collect())
        .collect();
    let mut progress = Progress {
        bar: &bar,
        per_cell,
        done: 0,
        cells,
    };
    'rounds: for round in 0..rounds {
        let round_label = if rounds > 1 {
            format!("round {}/{rounds} ", round + 1)
        } else {
            String::new()
        };
        for i in super::rounds::round_order(plan.targets.len(), round) {
            let done = run_target(
                plan,
                i,
                fixtures,
                &round_label,
                &mut servers[i],
                &mut progress,
            );
            for (slot, cell) in runs[i].iter_mut().zip(done.cells) {
                slot.push(cell);
            }
            if done.interrupted {
                bar.abandon_with_message("interrupted");
                break 'rounds;
            }
        }
    }
    if !bar.is_finished() {
        bar.finish_and_clear();
    }
    runs.into_iter()
        .flatten()
        .filter_map(super::rounds::reduce)
        .collect()
}

/// Where the progress bar stands: `done` cells of `cells`, `per_cell` each.
struct Progress<'a> {
    bar: &'a indicatif::ProgressBar,
    per_cell: Duration,
    done: usize,
    cells: usize,
}

/// What one round of one target gave: its cells in the plan's order, and whether Ctrl-C cut it.
struct TargetRun {
    cells: Vec<CellResult>,
    interrupted: bool,
}

/// The cells of the target at `i`, once: each scenario × connection count × stream count.
fn run_target(
    plan: &Plan,
    i: usize,
    fixtures: &Fixtures,
    round_label: &str,
    kept: &mut Option<ServerProcess>,
    progress: &mut Progress,
) -> TargetRun {
    let target = &plan.targets[i];
    let protocol = plan.protocol_of(target);
    let per_cell_ms = progress.per_cell.as_millis() as u64;
    let mut out = TargetRun {
        cells: Vec::new(),
        interrupted: false,
    };
    for scenario in plan.scenarios_of(target) {
        for (c, m) in plan
            .connections
            .iter()
            .flat_map(|&c| plan.streams_of(target).iter().map(move |&m| (c, m)))
        {
            if interrupted().load(Ordering::Relaxed) {
                out.interrupted = true;
                return out;
            }
            let streams = protocol.streams_suffix(m);
            progress.bar.set_message(format!(
                "{round_label}cell {}/{}: {} {} c={c}{streams}",
                progress.done + 1,
                progress.cells,
                target.name(),
                scenario.name
            ));
            let base = progress.done as u64 * per_cell_ms;
            let mut moved = cell_progress(progress.bar, base, progress.per_cell);
            if !plan.server_per_target {
                // Dropping it stops it.
                *kept = None;
            }
            let params = LoadParams {
                protocol,
                transport: plan.transport_of(target),
                streams: m,
                ..plan.params.clone()
            };
            let cell = run_cell(target, scenario, fixtures, c, &params, &mut moved, kept);
            progress.done += 1;
            progress
                .bar
                .set_position(progress.done as u64 * per_cell_ms);
            out.cells.push(cell);
        }
    }
    if !plan.server_per_target {
        *kept = None;
    }
    out
}
