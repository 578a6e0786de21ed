//! `--rounds N` for `load` and `compare`: every cell run N times, the targets interleaved with
//! their order rotated each round ([`round_order`]), and each cell's rounds reduced to one
//! ([`reduce`]). One run of a cell on a shared VM can fall in a slow spell longer than the cell,
//! which its own spread cannot show; rounds spread over the run can.

use super::stats::{CellResult, Status};

/// The order of `n` targets in round `round` (from 0): the list rotated by the round, so that
/// every target runs at a different place in each of up to `n` rounds and none always runs
/// first, right after another's load, or last.
pub(crate) fn round_order(n: usize, round: usize) -> Vec<usize> {
    (0..n).map(|i| (i + round) % n.max(1)).collect()
}

/// One cell's rounds, in the order they ran, reduced to the cell reported:
///
/// - any round that failed: the first such round, so that the failure is printed and the run
///   exits 1, never hidden by the rounds that passed;
/// - else the median round by rate (the lower of the two middle ones for an even count), whole:
///   its latency, CPU and marks are one round's, not a blend;
///
/// with every round's rate in [`CellResult::round_rps`] when there were several.
pub(crate) fn reduce(mut rounds: Vec<CellResult>) -> Option<CellResult> {
    let mut ok: Vec<usize> = (0..rounds.len())
        .filter(|&i| rounds[i].status == Status::Ok)
        .collect();
    let rates: Vec<f64> = ok.iter().map(|&i| rounds[i].rps).collect();
    let chosen = match rounds.iter().position(|c| c.status.is_failure()) {
        Some(failed) => failed,
        None => {
            ok.sort_by(|&a, &b| rounds[a].rps.total_cmp(&rounds[b].rps));
            // None ok: all skipped or unsupported alike; the first says why.
            ok.get(ok.len().saturating_sub(1) / 2).copied().unwrap_or(0)
        }
    };
    if chosen >= rounds.len() {
        return None;
    }
    let mut cell = rounds.swap_remove(chosen);
    if rates.len() > 1 {
        cell.round_rps = rates;
    }
    Some(cell)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_rotates_each_round() {
        assert_eq!(round_order(3, 0), vec![0, 1, 2]);
        assert_eq!(round_order(3, 1), vec![1, 2, 0]);
        assert_eq!(round_order(3, 2), vec![2, 0, 1]);
        // Over n rounds each target takes every place once.
        for n in 1..6 {
            for target in 0..n {
                let mut places: Vec<usize> = (0..n)
                    .map(|r| round_order(n, r).iter().position(|&t| t == target).unwrap())
                    .collect();
                places.sort_unstable();
                assert_eq!(places, (0..n).collect::<Vec<_>>());
            }
        }
    }

    fn cell(rps: f64, status: Status) -> CellResult {
        let mut c = CellResult::of_url("hello", 1, status);
        c.rps = rps;
        c
    }

    #[test]
    fn the_median_round_is_reported_whole_with_every_rate() {
        let got = reduce(vec![
            cell(300.0, Status::Ok),
            cell(100.0, Status::Ok),
            cell(200.0, Status::Ok),
        ])
        .unwrap();
        assert_eq!(got.rps, 200.0);
        assert_eq!(got.round_rps, vec![300.0, 100.0, 200.0]);
        // An even count takes the lower middle round.
        let got = reduce(vec![cell(4.0, Status::Ok), cell(1.0, Status::Ok)]).unwrap();
        assert_eq!(got.rps, 1.0);
        // One round: no rates beside it.
        let got = reduce(vec![cell(7.0, Status::Ok)]).unwrap();
        assert!(got.round_rps.is_empty());
    }

    #[test]
    fn a_failed_round_is_the_cell_reported() {
        let failed = Status::Failing("oracle mismatch".into());
        let got = reduce(vec![
            cell(300.0, Status::Ok),
            cell(0.0, failed.clone()),
            cell(200.0, Status::Ok),
        ])
        .unwrap();
        assert_eq!(got.status, failed);
        assert_eq!(got.round_rps, vec![300.0, 200.0]);
        assert!(reduce(Vec::new()).is_none());
    }
}
