//! Several passes over the same cells made into one result per cell: the quick compare's
//! loopback cells and its hello cells run in passes, and both report their best pass with the
//! CPU split pooled over every pass. A leaf of `quick/`: [`super::loopback`] and
//! [`super::hello`] both use it, and it uses neither.

use crate::driver::stats::{CellResult, Status};

/// One result per cell from several passes over the same cells: a cell that did not end `ok`
/// in some pass (a wrong answer, a crash) reports that pass, so a failure is never hidden by a
/// good pass; otherwise the pass with the most requests per second, with its own CPU figures,
/// except that its CPU time per request is split into user and system time by the shares of
/// every `ok` pass, weighted by its CPU time: one pass of 60 ms holds six 10 ms clock ticks, all
/// eight about fifty.
pub(crate) fn best_of(passes: Vec<Vec<CellResult>>) -> Vec<CellResult> {
    pooled(
        passes,
        |kept, new| kept.status == Status::Ok && new.status == Status::Ok && new.rps > kept.rps,
        // The best pass's CPU time per request (the scheduler's clock).
        |b| {
            b.server_cpu_pct
                .map(|pct| 1e4 * pct / b.rps)
                .filter(|_| b.status == Status::Ok)
        },
    )
}

/// One result per cell (its target, scenario, variant and connections) from several passes: a
/// pass that did not end `ok` wins, else the first pass until `better(kept, new)`. The kept
/// pass's CPU time per request (`total`, when it has one) is split into user and system time by
/// the pooled shares of every `ok` pass ([`split_weight`]). Its peak RSS is the highest of its
/// passes: the quick compare's server serves every pass, so that is the server's peak up to
/// the cell's last pass.
pub(crate) fn pooled(
    passes: Vec<Vec<CellResult>>,
    better: impl Fn(&CellResult, &CellResult) -> bool,
    total: impl Fn(&CellResult) -> Option<f64>,
) -> Vec<CellResult> {
    let failed = |c: &CellResult| {
        !matches!(
            c.status,
            Status::Ok | Status::Interrupted | Status::NotRun(_)
        )
    };
    // Per cell: the kept pass, user and system µs summed over its `ok` passes, and the highest
    // peak RSS.
    let mut kept: Vec<(CellResult, [f64; 2], Option<u64>)> = Vec::new();
    for cell in passes.into_iter().flatten() {
        let split = split_weight(&cell);
        let same = |(b, _, _): &&mut (CellResult, [f64; 2], Option<u64>)| {
            b.target == cell.target
                && b.scenario == cell.scenario
                && b.variant == cell.variant
                && b.connections == cell.connections
        };
        let Some((b, sum, rss)) = kept.iter_mut().find(same) else {
            let rss = cell.server_peak_rss;
            kept.push((cell, split, rss));
            continue;
        };
        sum[0] += split[0];
        sum[1] += split[1];
        *rss = (*rss).max(cell.server_peak_rss);
        if !failed(b) && (failed(&cell) || better(b, &cell)) {
            *b = cell;
        }
    }
    kept.into_iter()
        .map(|(mut b, [user, system], rss)| {
            b.server_peak_rss = rss;
            if let Some(total) = total(&b) {
                split_pooled(&mut b, total, [user, system]);
            }
            b
        })
        .collect()
}

/// A pass's user and system CPU time in all, in µs (per request × requests), to pool the
/// split over passes; zero for a pass that did not end `ok` or had no tick to split.
pub(crate) fn split_weight(c: &CellResult) -> [f64; 2] {
    let n = c.requests as f64;
    match (&c.status, c.server_user_us_per_req, c.server_sys_us_per_req) {
        (Status::Ok, Some(user), Some(system)) => [user * n, system * n],
        _ => [0.0; 2],
    }
}

/// Splits `total` µs of CPU per request of `b` into user and system time by the pooled sums
/// of [`split_weight`]; leaves `b` as it is when they hold no tick.
pub(crate) fn split_pooled(b: &mut CellResult, total: f64, [user, system]: [f64; 2]) {
    if user + system > 0.0 {
        b.server_user_us_per_req = Some(total * user / (user + system));
        b.server_sys_us_per_req = Some(total * system / (user + system));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::{LoadParams, Target};
    use crate::pinning::Pinning;
    use std::time::Duration;

    #[test]
    fn best_of_keeps_the_fastest_pass_and_every_failure() {
        let target = Target::Url("127.0.0.1:9".parse().unwrap());
        let params = LoadParams::closed_loop(
            Duration::from_secs(1),
            Duration::from_millis(250),
            Duration::from_secs(2),
            Pinning::resolve(None, None, None),
        );
        let cell = |scenario: &str, rps: f64, status: Status| {
            let mut c = CellResult::empty(
                &target,
                crate::oracle::scenario(scenario).unwrap(),
                16,
                &params,
            );
            c.rps = rps;
            c.requests = (rps / 10.0) as u64;
            c.server_cpu_pct = Some(96.0);
            // The fastest pass's ticks all fell in user mode, the others' 1 to 3.
            let user = if rps == 120.0 { 4.0 } else { 1.0 };
            c.server_user_us_per_req = Some(user);
            c.server_sys_us_per_req = Some(4.0 - user);
            // The last pass's server had grown most.
            c.server_peak_rss = Some(if rps == 100.0 { 7 } else { 5 });
            c.status = status;
            c
        };
        let failing = || Status::Failing("wrong body".into());
        let best = best_of(vec![
            vec![
                cell("hello", 90.0, Status::Ok),
                cell("json", 50.0, Status::Ok),
            ],
            vec![
                cell("hello", 120.0, Status::Ok),
                cell("json", 0.0, failing()),
            ],
            vec![
                cell("hello", 100.0, Status::Ok),
                cell("json", 70.0, Status::Ok),
            ],
        ]);
        assert_eq!(best.len(), 2);
        assert_eq!((best[0].rps, &best[0].status), (120.0, &Status::Ok));
        // Its CPU per request, 96 % of a second over 120 requests, split by every pass's
        // ticks: user 1 × 9 + 4 × 12 + 1 × 10 = 67 µs, system 3 × 9 + 3 × 10 = 57 µs.
        let total = 1e4 * 96.0 / 120.0;
        let user = best[0].server_user_us_per_req.unwrap();
        let system = best[0].server_sys_us_per_req.unwrap();
        assert!((user - total * 67.0 / 124.0).abs() < 1e-9, "{user}");
        assert!((system - total * 57.0 / 124.0).abs() < 1e-9, "{system}");
        assert_eq!(best[0].server_peak_rss, Some(7));
        // A fast later pass does not hide a wrong answer.
        assert_eq!(best[1].status, failing());
    }
}
