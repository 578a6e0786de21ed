//! A sweep's rounds reduced to one row per target × scenario × T: the median rate and the
//! rounds' range, the speed-up over the narrowest T and the efficiency, with the range carried
//! through, the server's CPU per request, p99, and every mark a round got. Two figures are
//! ordered only where their ranges do not overlap ([`ranking`]); otherwise `≈`. Each figure
//! with its range is an [`Estimate`] ([`Estimate::range_of`]).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::driver::stats::{Bound, CellResult, Status};
use crate::interval::Estimate;

/// One cell of one round.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Measured {
    /// The round, from 1.
    pub(crate) round: usize,
    /// Its place in the round's order of targets at its T, from 1.
    pub(crate) position: usize,
    /// The target's label (`hyper (per-core)`).
    pub(crate) target: String,
    /// The target's runtime label.
    pub(crate) runtime: String,
    /// Its logging and io (`log=off,io=memory`), without the runtime, which the target names.
    pub(crate) variant: String,
    /// Server threads.
    pub(crate) threads: usize,
    /// The cell.
    pub(crate) cell: CellResult,
}

/// One target × scenario × T over every round.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Row {
    /// The target's label.
    pub(crate) target: String,
    /// Framework name.
    pub(crate) framework: String,
    /// `work-stealing`, `per-core` or `own`.
    pub(crate) runtime: String,
    /// `log=off,io=memory`.
    pub(crate) variant: String,
    /// Scenario.
    pub(crate) scenario: String,
    /// Server threads T.
    pub(crate) threads: usize,
    /// Rounds that measured it.
    pub(crate) rounds: usize,
    /// Requests per second.
    pub(crate) rps: Option<Estimate>,
    /// Over the narrowest T's rate (`None` at the narrowest T itself).
    pub(crate) speedup: Option<Estimate>,
    /// Speed-up over the ratio of the threads.
    pub(crate) efficiency: Option<Estimate>,
    /// The server's user + system CPU per request, µs (median of the rounds).
    pub(crate) cpu_us_per_req: Option<f64>,
    /// p99 latency, µs (median of the rounds).
    pub(crate) p99_us: Option<f64>,
    /// Saturation marks (`unsat 2/3`) and thread marks, each once.
    pub(crate) marks: Vec<String>,
    /// Why the rate is not the server's own (`unsat 2/3`, `client-bound 3/3`): some round had
    /// neither side saturated, or the client at its limit. Such a row is left out of every
    /// ranking, speed-up and comparison. Absent in files from before it was kept.
    #[serde(default)]
    pub(crate) not_the_servers: Option<String>,
    /// Why a round did not measure it (the first such round's status).
    pub(crate) failed: Option<String>,
}

/// The rows of `measured`, in the order their targets, scenarios and Ts first appear, with
/// speed-ups over the narrowest T of each.
pub(crate) fn rows(measured: &[Measured]) -> Vec<Row> {
    let mut keys: Vec<(String, String, String, usize)> = Vec::new();
    for m in measured {
        let key = key(m);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    let rows: Vec<Row> = keys
        .iter()
        .map(|k| {
            let of: Vec<&Measured> = measured.iter().filter(|m| &key(m) == k).collect();
            row(&of)
        })
        .collect();
    with_speedups(rows)
}

/// `rows` with each one's speed-up and efficiency over the narrowest T of its line.
pub(crate) fn with_speedups(mut rows: Vec<Row>) -> Vec<Row> {
    let narrowest = |r: &Row| {
        rows_of(&rows, r)
            .iter()
            .map(|o| o.threads)
            .min()
            .unwrap_or(r.threads)
    };
    // A base whose rate is not the server's gives no speed-up.
    let bases: Vec<Option<(usize, Estimate)>> = rows
        .iter()
        .map(|r| {
            let t0 = narrowest(r);
            rows_of(&rows, r)
                .into_iter()
                .find(|o| o.threads == t0 && o.not_the_servers.is_none())
                .and_then(|o| o.rps.map(|rps| (t0, rps)))
        })
        .collect();
    for (r, base) in rows.iter_mut().zip(bases) {
        if r.not_the_servers.is_some() {
            continue;
        }
        // The narrowest T is the base: its speed-up is 1 by definition, not a ratio of rounds.
        if let (Some(rps), Some((t0, base))) = (r.rps, base.filter(|(t0, _)| *t0 != r.threads)) {
            let speedup = rps.ratio(&base);
            r.speedup = Some(speedup);
            r.efficiency = Some(speedup.map(|x| x / (r.threads as f64 / t0 as f64)));
        }
    }
    rows
}

/// Target, variant and scenario: the rows of one line across T.
fn key(m: &Measured) -> (String, String, String, usize) {
    (
        m.target.clone(),
        m.variant.clone(),
        m.cell.scenario.clone(),
        m.threads,
    )
}

/// The rows of `r`'s line (its target, variant and scenario) at every T.
fn rows_of<'a>(rows: &'a [Row], r: &Row) -> Vec<&'a Row> {
    rows.iter()
        .filter(|o| o.target == r.target && o.variant == r.variant && o.scenario == r.scenario)
        .collect()
}

/// The bounds under which a cell's rate is not the server's: neither side saturated (round
/// trips and wake-ups set it), or the client at its limit.
const NOT_THE_SERVERS: [Bound; 2] = [Bound::Unsaturated, Bound::Client];

/// One row from its rounds.
fn row(of: &[&Measured]) -> Row {
    let first = of[0];
    let ok: Vec<&CellResult> = of
        .iter()
        .map(|m| &m.cell)
        .filter(|c| c.status == Status::Ok)
        .collect();
    let median = |values: Vec<f64>| Estimate::range_of(&values).map(|r| r.point);
    let mut marks: Vec<String> = Vec::new();
    let mut bounds: Vec<&str> = ok
        .iter()
        .map(|c| c.bound.mark())
        .filter(|m| !m.is_empty())
        .collect();
    bounds.sort_unstable();
    for mark in bounds.iter().copied().collect::<BTreeSet<_>>() {
        let n = bounds.iter().filter(|&&b| b == mark).count();
        marks.push(format!("{mark} {n}/{}", ok.len()));
    }
    let not_the_servers: Vec<String> = NOT_THE_SERVERS
        .iter()
        .filter_map(|&b| {
            let n = ok.iter().filter(|c| c.bound == b).count();
            (n > 0).then(|| format!("{} {n}/{}", b.mark(), ok.len()))
        })
        .collect();
    let checks: Vec<_> = ok.iter().filter_map(|c| c.thread_check.as_ref()).collect();
    marks.extend(crate::driver::threads::merged(&checks));
    Row {
        target: first.target.clone(),
        framework: first.cell.target.clone(),
        runtime: first.runtime.clone(),
        variant: first.variant.clone(),
        scenario: first.cell.scenario.clone(),
        threads: first.threads,
        rounds: ok.len(),
        rps: Estimate::range_of(&ok.iter().map(|c| c.rps).collect::<Vec<_>>()),
        speedup: None,
        efficiency: None,
        cpu_us_per_req: median(
            ok.iter()
                .filter_map(|c| Some(c.server_user_us_per_req? + c.server_sys_us_per_req?))
                .collect(),
        ),
        p99_us: median(ok.iter().map(|c| c.latency.p99_us).collect()),
        marks,
        not_the_servers: (!not_the_servers.is_empty()).then(|| not_the_servers.join(", ")),
        failed: of
            .iter()
            .find(|m| m.cell.status != Status::Ok)
            .map(|m| format!("{}: {}", m.cell.status.short(), m.cell.status.reason())),
    }
}

/// `a > b ≈ c`: `items` (a label and a range) from the largest median down, with `>` only where
/// every round of the left is above every round of the right.
pub(crate) fn ranking(items: &[(String, Estimate)]) -> String {
    let mut sorted: Vec<&(String, Estimate)> = items.iter().collect();
    sorted.sort_by(|a, b| b.1.point.total_cmp(&a.1.point));
    let mut out = String::new();
    for (i, (label, range)) in sorted.iter().enumerate() {
        if i > 0 {
            let (_, before) = sorted[i - 1];
            // `>` only where every round of the one before is above every round of this one.
            out.push_str(if before.lo > range.hi { " > " } else { " ≈ " });
        }
        out.push_str(label);
    }
    out
}

/// A ratio and its range in words: `1.31× (1.20–1.41)` where the range leaves out 1, `≈ 1
/// (0.95–1.08)` where it holds 1.
pub(crate) fn ratio_text(r: &Estimate) -> String {
    if r.separated(1.0) {
        format!("{:.2}× ({:.2}–{:.2})", r.point, r.lo, r.hi)
    } else {
        format!("≈ 1 ({:.2}–{:.2})", r.lo, r.hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(point: f64, lo: f64, hi: f64) -> Estimate {
        Estimate { point, lo, hi }
    }

    #[test]
    fn overlapping_ranges_print_approximately_equal() {
        let items = vec![
            ("a".to_owned(), r(100.0, 95.0, 105.0)),
            ("b".to_owned(), r(98.0, 90.0, 99.0)),
            ("c".to_owned(), r(50.0, 45.0, 55.0)),
        ];
        // a and b overlap (95 < 99); b is above c.
        assert_eq!(ranking(&items), "a ≈ b > c");
        let apart = vec![
            ("x".to_owned(), r(10.0, 9.0, 11.0)),
            ("y".to_owned(), r(20.0, 19.5, 21.0)),
        ];
        assert_eq!(ranking(&apart), "y > x");
    }

    #[test]
    fn a_speedup_carries_the_widest_range_and_prints_approximately_one_when_it_holds_one() {
        let t8 = r(800.0, 700.0, 900.0);
        let t1 = r(100.0, 90.0, 110.0);
        let s = t8.ratio(&t1);
        assert_eq!(s.point, 8.0);
        assert!((s.lo - 700.0 / 110.0).abs() < 1e-9);
        assert!((s.hi - 900.0 / 90.0).abs() < 1e-9);
        assert_eq!(ratio_text(&s), "8.00× (6.36–10.00)");
        assert_eq!(ratio_text(&r(1.02, 0.95, 1.08)), "≈ 1 (0.95–1.08)");
        assert_eq!(ratio_text(&r(0.8, 0.7, 0.9)), "0.80× (0.70–0.90)");
    }
}
