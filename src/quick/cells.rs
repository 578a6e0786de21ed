//! What the quick compare measures: the in-process cells (each response checked against the
//! oracle, then timed in batches), and [`Run`], everything one quick compare measured, with the
//! queries its views ask of it (a cell, a rate, the hello ranks; [`super::claims`] asks who
//! leads a column).

use std::time::Duration;

use crate::allocs::report::Report as Allocs;
use crate::chart::bars::Kind;
use crate::driver::output::bound_mark;
use crate::driver::stats::{CellResult, Status};
use crate::framework::{App, Config, Entry};
use crate::options::Options;
use crate::oracle;
use crate::outcome::NotOk;
use crate::quick::QUICK_SCENARIOS;

use super::hello;
use super::loopback::QuickLoopback;

/// One in-process batch of the quick compare: one per cell in each of [`ROUNDS`] interleaved
/// rounds, median taken. 20 ms: ten rounds of it cost each cell what five batches of 40 ms
/// did when the cells were timed one after another.
pub(crate) const SAMPLE: Duration = Duration::from_millis(20);

/// One measured cell.
#[derive(Debug)]
pub(crate) enum Cell {
    /// Median time per request over the samples, with their spread.
    Time(Timed),
    /// Not timed: the app did not build, its answer differed from the oracle, or the scenario
    /// cannot run here (the redis one without a Redis, skipped) or through the framework's own
    /// API (unsupported).
    Failed(NotOk),
}

/// An in-process time: the median of a cell's rounds and how far the farthest end of its
/// interval lay from it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timed {
    /// Median time per request.
    pub(crate) median: Duration,
    /// The largest distance of a batch from the median, in percent of it.
    pub(crate) spread_pct: f64,
}

/// Rounds of the quick compare's in-process cells: ten, the fewest whose distribution-free
/// 95 % interval leaves out the lowest and the highest round (the 2nd and 9th bound the median
/// at 97.9 %), so that one round caught in a hiccup of the host does not widen a cell's
/// interval to a tie with every other (at 8 rounds one such round read iron's json ±89 %).
pub(crate) const ROUNDS: usize = 10;

/// Measures every in-process framework in `entries` on every quick scenario, in interleaved
/// rounds ([`crate::timing`]): every cell's response is checked against the oracle, then each
/// round times one batch of every cell, so that a drift of the host lands on every framework
/// alike rather than on the ones measured last.
pub(crate) fn run(
    entries: &[&Entry],
    config: &Config,
    sample: Duration,
) -> Vec<(&'static str, Vec<Cell>)> {
    let stop = crate::interrupt::interrupted();
    let interrupted = || stop.load(std::sync::atomic::Ordering::Relaxed);
    let entries: Vec<&Entry> = entries.iter().copied().filter(|e| e.in_process).collect();
    let apps: Vec<anyhow::Result<Box<dyn App>>> = entries.iter().map(|e| e.build(config)).collect();
    let rings: Vec<Vec<oracle::Instance>> = QUICK_SCENARIOS
        .iter()
        .map(|s| s.instances(crate::cell::RING))
        .collect();
    let mut rows: Vec<(&'static str, Vec<Cell>)> = Vec::new();
    let mut timers: Vec<crate::timing::Timer<'_>> = Vec::new();
    // (row, column) of each timer.
    let mut slots: Vec<(usize, usize)> = Vec::new();
    for (row, (entry, app)) in entries.iter().zip(&apps).enumerate() {
        let cells = match app {
            Ok(app) => QUICK_SCENARIOS
                .iter()
                .enumerate()
                .map(|(k, s)| {
                    let checked = match s.skip_reason(config) {
                        Some(why) => Err(NotOk::skipped(why)),
                        None => crate::cell::supported(entry, s, true)
                            .and_then(|()| crate::cell::verify(&**app, &config.fixtures, s)),
                    };
                    match checked {
                        Err(e) => Cell::Failed(e),
                        Ok(_) => {
                            let (app, ring) = (&**app, &rings[k]);
                            timers.push(Box::new(move |n| crate::bench::timed_batch(app, ring, n)));
                            slots.push((row, k));
                            // Replaced by its rounds below.
                            Cell::Failed(anyhow::anyhow!("not timed").into())
                        }
                    }
                })
                .collect(),
            // The one build failure, in each of the row's cells.
            Err(e) => QUICK_SCENARIOS
                .iter()
                .map(|_| Cell::Failed(anyhow::anyhow!("build: {e:#}").into()))
                .collect(),
        };
        rows.push((entry.name, cells));
    }
    let measured = crate::timing::interleave(&mut timers, ROUNDS, sample, &interrupted);
    drop(timers);
    for ((row, k), m) in slots.into_iter().zip(measured) {
        rows[row].1[k] = match m {
            Ok(r) if r.ns.is_empty() => Cell::Failed(anyhow::anyhow!("interrupted").into()),
            Ok(r) => Cell::Time(Timed::of_rounds(&r.ns)),
            Err(e) => Cell::Failed(e.into()),
        };
    }
    rows
}

impl Timed {
    /// The median of a cell's rounds, with the farthest end of its 95 % interval as the spread
    /// (at [`ROUNDS`] rounds, the second fastest and second slowest round).
    pub(crate) fn of_rounds(ns: &[f64]) -> Timed {
        let e = crate::interval::median_interval(ns).expect("at least one round");
        let ends = if e.bounded() {
            [e.lo, e.hi]
        } else {
            [
                ns.iter().copied().fold(f64::INFINITY, f64::min),
                ns.iter().copied().fold(0.0, f64::max),
            ]
        };
        let spread = ends.iter().map(|t| (t - e.point).abs()).fold(0.0, f64::max);
        Timed {
            median: Duration::from_secs_f64(e.point / 1e9),
            spread_pct: spread / e.point * 100.0,
        }
    }
}

/// Everything one quick compare measured: the in-process rows, the allocation counts, the
/// loopback cells and how they were run.
pub(crate) struct Run {
    /// In-process cells per framework, in the oracle's scenario order.
    pub(crate) rows: Vec<(&'static str, Vec<Cell>)>,
    /// The allocation counts of `framebench allocs`, or why there are none.
    pub(crate) allocs: anyhow::Result<Allocs>,
    /// The loopback cells.
    pub(crate) loopback: Vec<CellResult>,
    /// How the loopback cells were run.
    pub(crate) setup: QuickLoopback,
    /// The hello cells past saturation: churn, the bill and the standing cost.
    pub(crate) hello: hello::Hello,
    /// Logging, io and threads.
    pub(crate) options: Options,
    /// The in-process batch length.
    pub(crate) sample: Duration,
}

impl Run {
    /// The frameworks with a row, in registry order, then the names outside the registry that
    /// have an in-process row, in their order (the views' tests name frameworks of their own).
    pub(super) fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        let registered = crate::frameworks::REGISTRY
            .iter()
            .map(|e| e.name)
            .filter(|n| {
                self.rows.iter().any(|(r, _)| r == n)
                    || self.loopback.iter().any(|c| c.target == *n)
            });
        let unregistered = self
            .rows
            .iter()
            .map(|(n, _)| *n)
            .filter(|n| crate::frameworks::find(n).is_none());
        registered.chain(unregistered)
    }

    /// The in-process cell of `name` × scenario `k`.
    pub(super) fn in_process(&self, name: &str, k: usize) -> Option<&Cell> {
        self.rows
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, c)| &c[k])
    }

    /// The loopback cell of `name` × `scenario`.
    pub(super) fn loopback(&self, name: &str, scenario: &str) -> Option<&CellResult> {
        self.loopback
            .iter()
            .find(|c| c.target == name && c.scenario == scenario)
    }

    /// The in-process time of `name` × scenario `k` in µs, when measured.
    pub(super) fn time_us(&self, name: &str, k: usize) -> Option<f64> {
        match self.in_process(name, k) {
            Some(Cell::Time(t)) => Some(t.median.as_secs_f64() * 1e6),
            _ => None,
        }
    }

    /// The loopback rate of `name` × `scenario` in req/s and whether it is the server's own
    /// (the server was saturated), when measured.
    pub(super) fn rate(&self, name: &str, scenario: &str) -> Option<(f64, bool)> {
        self.loopback(name, scenario)
            .filter(|c| c.status == Status::Ok && c.rps > 0.0)
            .map(|c| (c.rps, bound_mark(c).is_empty()))
    }

    /// The servers of the hello cells past saturation, in registry order.
    pub(super) fn hello_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.names().filter(|n| self.hello.churn(n).is_some())
    }

    /// The frameworks' ranks by saturated hello req/s (1 = most), shared where their
    /// intervals overlap: each rate compared by its ratio to the reference over the passes
    /// (the interval [`Run::busiest`] compares by), or by none when it has none. A rate the
    /// server did not set is not ranked.
    pub(super) fn hello_ranks(&self) -> Vec<(&'static str, usize)> {
        let rated: Vec<(&'static str, (f64, f64, f64))> = self
            .hello_names()
            .filter(|n| Kind::of(n) == Kind::Framework)
            .filter_map(|n| match self.rate(n, "hello") {
                Some((rps, true)) => Some((n, (rps, self.reference_interval(n, "hello")))),
                _ => None,
            })
            .map(|(n, (rps, (lo, hi)))| (n, (rps, lo, hi)))
            .collect();
        let figures: Vec<(f64, f64, f64)> = rated.iter().map(|(_, f)| *f).collect();
        let ranks = crate::interval::shared_ranks(&figures, true);
        rated.iter().map(|(n, _)| *n).zip(ranks).collect()
    }

    /// `name` × `scenario`'s ratio to the reference over the quick compare's passes, as the
    /// interval its rate is compared by: infinite when it has none.
    pub(super) fn reference_interval(&self, name: &str, scenario: &str) -> (f64, f64) {
        self.setup
            .of_reference
            .iter()
            .find(|r| r.target == name && r.scenario == scenario)
            .map(|r| r.ratio)
            .filter(crate::interval::Estimate::bounded)
            .map_or((f64::NEG_INFINITY, f64::INFINITY), |r| (r.lo, r.hi))
    }
}
