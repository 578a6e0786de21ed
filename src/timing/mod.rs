//! Times compared across frameworks, taken in interleaved rounds (`framebench time`, and the
//! quick compare's in-process column).
//!
//! criterion times one cell to the end before the next starts, so on a host whose speed moves
//! by 2× within an hour (docs/hosts.md) the drift falls between cells, and a ranking of cells
//! timed minutes apart ranks the minutes. Here every cell is timed once per round, one batch of
//! a few milliseconds each, and the rounds repeat: a slow spell lands on every cell alike, and
//! the median of each cell's rounds is about the cell. Rounds come in pairs, an order and its
//! reverse, each pair's order the last pair's rotated by one place ([`order`]), so that no cell
//! always runs first or always runs next to the same neighbour on the same side.
//!
//! Each cell reports the median of its rounds with the distribution-free interval of
//! [`crate::interval`], and its ratio to a floor (`null` in-process, `raw` over loopback) taken
//! within each round, whose median cancels a drift slower than one round. Two cells are
//! ordered only where the interval of the median of their per-round ratio lies beyond
//! [`MARGIN`] of 1 ([`separated`]); every ranking made of these figures gives a shared rank
//! otherwise ([`shared_ranks`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::interval::{self, Estimate};

pub(crate) mod cells;

/// Rounds unless `--rounds` says otherwise: 30 rounds bound a median by the 10th and 21st of
/// them (95.7 %).
pub(crate) const ROUNDS: u16 = 30;
/// The fewest rounds that bound a median at 95 % without assuming a distribution.
pub(crate) const MIN_ROUNDS: u16 = 6;
/// One cell's batch in a round, ms, unless `--batch-ms` says otherwise: long enough that the
/// clock's resolution and one timer interrupt are small beside it (in-process; over loopback
/// about a hundred round trips), short enough that a round of every framework × scenario
/// × variant stays near a second.
pub(crate) const BATCH_MS: u16 = 5;

/// A cell to time: `time(n)` takes `n` requests and returns how long they took.
pub(crate) type Timer<'a> = Box<dyn FnMut(usize) -> anyhow::Result<Duration> + 'a>;

/// One cell's rounds, or why it has none.
#[derive(Debug, Clone)]
pub(crate) struct Rounds {
    /// Requests per batch.
    pub(crate) batch: usize,
    /// Nanoseconds per request, one per round, in round order.
    pub(crate) ns: Vec<f64>,
}

/// Times every timer in interleaved rounds: each is calibrated to a batch of about `target`,
/// then one unrecorded round warms every cell, then `rounds` rounds follow, rotated and
/// alternately reversed. A timer that fails is dropped from the rounds with its error; the
/// others go on. `stop` ends the run early (SIGINT); what was measured is kept.
pub(crate) fn interleave(
    timers: &mut [Timer<'_>],
    rounds: usize,
    target: Duration,
    stop: &dyn Fn() -> bool,
) -> Vec<anyhow::Result<Rounds>> {
    let mut out: Vec<anyhow::Result<Rounds>> = timers
        .iter_mut()
        .map(|t| {
            let batch = crate::bench::calibrate(target, t)?;
            Ok(Rounds {
                batch,
                ns: Vec::with_capacity(rounds),
            })
        })
        .collect();
    let n = timers.len();
    // Round 0 is the warm-up: caches, lazily built state and branch predictors, for every cell.
    for round in 0..=rounds {
        if stop() {
            break;
        }
        for i in order(n, round) {
            let Ok(r) = &mut out[i] else { continue };
            match timers[i](r.batch) {
                Ok(t) if round > 0 => r.ns.push(t.as_secs_f64() * 1e9 / r.batch as f64),
                Ok(_) => {}
                Err(e) => out[i] = Err(e),
            }
        }
    }
    out
}

/// The order of round `round` over `n` cells: rounds come in pairs, an order and its reverse
/// (A B, B A), and each pair's order is the last pair's rotated left by one. Over `2n` rounds
/// every cell runs first twice and beside each of its neighbours both ways. (Rotating by `round`
/// itself and reversing odd rounds, as before, cancels out for two cells: every round ran
/// `[0, 1]`.)
pub(crate) fn order(n: usize, round: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).map(|i| (i + round / 2) % n.max(1)).collect();
    if round % 2 == 1 {
        v.reverse();
    }
    v
}

/// The median of `a`'s rounds over `b`'s, round by round, with its interval; `None` when no
/// round has both.
pub(crate) fn ratio(a: &[f64], b: &[f64]) -> Option<Estimate> {
    let r: Vec<f64> = a.iter().zip(b).map(|(a, b)| a / b).collect();
    interval::median_interval(&r)
}

/// The smallest difference the rounds rank: two cells whose per-round ratio may lie within
/// 5 % of 1 share a rank. A loaded host does not slow every framework alike to the percent: in
/// scripts/drift.sh at fa09593 a busy loop on the same CPU turned axum / axum07 on json from
/// 0.970 (0.966–0.976) to 1.039 (1.027–1.109), each interval clear of 1, as context switches
/// cost the two working sets differently. Interleaving cancels a host that runs slower; it
/// cannot cancel one that runs differently, so a gap that small is not an order.
pub(crate) const MARGIN: f64 = 1.05;

/// Whether the rounds order `a` and `b`: `Some(Less)` when `a` is faster beyond the interval
/// of their per-round ratio and beyond [`MARGIN`], `Some(Greater)` when slower, `None`
/// otherwise (the interval reaches within the margin of 1, or is unbounded).
pub(crate) fn separated(a: &[f64], b: &[f64]) -> Option<std::cmp::Ordering> {
    let r = ratio(a, b)?;
    if !r.bounded() {
        return None;
    }
    if r.hi < 1.0 / MARGIN {
        Some(std::cmp::Ordering::Less)
    } else if r.lo > MARGIN {
        Some(std::cmp::Ordering::Greater)
    } else {
        None
    }
}

/// Ranks (1 = fastest) for cells given by their rounds, fastest first by median: a cell shares
/// the rank of the one before it unless the rounds separate it from every cell of that rank.
/// Returns each input's rank, in input order.
pub(crate) fn shared_ranks(cells: &[&[f64]]) -> Vec<usize> {
    let median = |v: &[f64]| interval::median_interval(v).map_or(f64::INFINITY, |e| e.point);
    interval::ranks_by(
        cells.len(),
        |a, b| median(cells[a]).total_cmp(&median(cells[b])),
        |g, i| separated(cells[g], cells[i]) == Some(std::cmp::Ordering::Less),
    )
}

/// One timed cell as `--json` keeps it beside its figure: the rounds themselves, so that a
/// reader can take any other ratio within a round.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CellRounds {
    /// Framework name.
    pub(crate) framework: String,
    /// Scenario name.
    pub(crate) scenario: String,
    /// `log=off,io=memory`.
    pub(crate) variant: String,
    /// Requests per batch.
    pub(crate) batch: usize,
    /// Nanoseconds per request, one per round.
    pub(crate) ns: Vec<f64>,
    /// The median with its interval.
    pub(crate) time: Option<Estimate>,
    /// Its time over the floor's of the same scenario in the same round (`null` in-process,
    /// `raw` over loopback): the median with its interval.
    pub(crate) vs_floor: Option<Estimate>,
    /// Why it was not timed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
}

/// The `detail` of a `framebench time` results file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Detail {
    /// Rounds run.
    pub(crate) rounds: usize,
    /// The batch length each cell was calibrated to, ms.
    pub(crate) batch_ms: f64,
    /// The floor each `vs_floor` is taken against.
    pub(crate) floor: String,
    /// How the cells were ordered.
    pub(crate) order: String,
    /// Where the client and the servers ran (loopback), or the thread's CPUs (in-process).
    pub(crate) pinning: String,
    /// Every cell.
    pub(crate) cells: Vec<CellRounds>,
}

/// Where `framebench report` looks for the in-process and loopback files, under the target
/// folder.
pub(crate) const IN_PROCESS_JSON: &str = "time/in_process.json";
/// See [`IN_PROCESS_JSON`].
pub(crate) const LOOPBACK_JSON: &str = "time/loopback.json";

/// The rounds a `framebench time` results file keeps.
pub(crate) fn detail_of(results: &crate::results::Results) -> anyhow::Result<Detail> {
    let value = results
        .detail
        .clone()
        .ok_or_else(|| anyhow::anyhow!("not a `framebench time` file: it has no rounds"))?;
    serde_json::from_value(value)
        .map_err(|e| anyhow::anyhow!("not a `framebench time` file: its rounds do not read ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_is_the_last_rotated_and_every_other_reversed() {
        assert_eq!(order(4, 0), [0, 1, 2, 3]);
        assert_eq!(order(4, 1), [3, 2, 1, 0]);
        assert_eq!(order(4, 2), [1, 2, 3, 0]);
        assert_eq!(order(4, 3), [0, 3, 2, 1]);
        assert_eq!(order(0, 3), Vec::<usize>::new());
        // Over 2n rounds every cell runs first twice.
        let mut firsts: Vec<usize> = (0..8).map(|r| order(4, r)[0]).collect();
        firsts.sort_unstable();
        assert_eq!(firsts, [0, 0, 1, 1, 2, 2, 3, 3]);
        // Two cells alternate: A B, B A, B A, A B.
        let two: Vec<Vec<usize>> = (0..4).map(|r| order(2, r)).collect();
        assert_eq!(two, [[0, 1], [1, 0], [1, 0], [0, 1]]);
    }

    /// The host slows down threefold in the middle of the run; criterion's way (every batch of
    /// one cell, then every batch of the next) ranks the cell that ran in the fast part first,
    /// although it costs 10 % more. Interleaved rounds rank them by their cost.
    #[test]
    fn a_drift_in_the_middle_of_the_run_does_not_reorder_two_cells() {
        let clock = std::cell::Cell::new(0usize);
        let slow = |tick: usize| if tick > 60 { 3.0 } else { 1.0 };
        let cost = [110.0, 100.0];
        let timer = |k: usize| -> Timer<'_> {
            let clock = &clock;
            Box::new(move |n| {
                let t = clock.get() + 1;
                clock.set(t);
                Ok(Duration::from_nanos((cost[k] * slow(t) * n as f64) as u64))
            })
        };
        let mut timers = vec![timer(0), timer(1)];
        let out = interleave(&mut timers, 40, Duration::from_micros(100), &|| false);
        let a = &out[0].as_ref().unwrap().ns;
        let b = &out[1].as_ref().unwrap().ns;
        assert_eq!((a.len(), b.len()), (40, 40));
        assert_eq!(separated(a, b), Some(std::cmp::Ordering::Greater));
        let r = ratio(a, b).unwrap();
        assert!((r.point - 1.1).abs() < 0.01, "{r:?}");
        // One group after the other, on the same host: every batch of cell 0, then every
        // batch of cell 1, which falls in the slow spell and reads slower although it costs less.
        clock.set(0);
        let mut one_by_one = Vec::new();
        for k in 0..2 {
            let mut t = timer(k);
            let batch = crate::bench::calibrate(Duration::from_micros(100), &mut t).unwrap();
            let ns: Vec<f64> = (0..41)
                .map(|_| t(batch).unwrap().as_secs_f64() * 1e9 / batch as f64)
                .collect();
            one_by_one.push(interval::median_interval(&ns).unwrap().point);
        }
        assert!(one_by_one[0] < one_by_one[1], "{one_by_one:?}");
    }

    #[test]
    fn a_failing_timer_is_dropped_and_the_others_go_on() {
        let mut calls = 0;
        let mut timers: Vec<Timer<'_>> = vec![
            Box::new(|n| Ok(Duration::from_nanos(50 * n as u64))),
            Box::new(move |n| {
                calls += 1;
                anyhow::ensure!(calls < 12, "the server died");
                Ok(Duration::from_nanos(70 * n as u64))
            }),
        ];
        let out = interleave(&mut timers, 10, Duration::from_micros(100), &|| false);
        assert_eq!(out[0].as_ref().unwrap().ns.len(), 10);
        assert!(format!("{:#}", out[1].as_ref().unwrap_err()).contains("died"));
    }

    #[test]
    fn ranks_are_shared_where_the_rounds_do_not_separate() {
        // a and b alternate which is faster round by round: not separated. c is 2× both.
        let a: Vec<f64> = (0..20)
            .map(|r| if r % 2 == 0 { 100.0 } else { 104.0 })
            .collect();
        let b: Vec<f64> = (0..20)
            .map(|r| if r % 2 == 0 { 103.0 } else { 101.0 })
            .collect();
        let c: Vec<f64> = (0..20).map(|r| 200.0 + r as f64).collect();
        assert_eq!(separated(&a, &b), None);
        assert_eq!(shared_ranks(&[&c, &a, &b]), [3, 1, 1]);
        // 3 % apart in every round: clear of 1, but within the margin, so one rank.
        let d: Vec<f64> = a.iter().map(|x| x * 1.03).collect();
        assert_eq!(separated(&a, &d), None);
        assert_eq!(shared_ranks(&[&a, &d]), [1, 1]);
        // With too few rounds nothing is separated.
        assert_eq!(shared_ranks(&[&c[..4], &a[..4]]), [1, 1]);
    }
}
