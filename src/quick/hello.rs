//! The quick compare's hello cells past saturation, on the servers its loopback passes kept:
//!
//! - **churn**: closed loop with a new connection every [`CHURN_REQUESTS`] requests (HttpArena's
//!   `limited-conn`), the rate with connects and closes in it;
//! - **the bill**: the server's CPU time per request at [`BILL_RATE`], one open-loop rate every
//!   server in the registry sustains on this project's machine;
//! - **the standing cost**: the server's CPU time per second of wall time at
//!   [`STANDING_RATE`], a near-idle load, where wake-ups and timers are most of what it spends.
//!
//! Each runs in [`PASSES`] passes over every server, spread over the column as the saturated
//! passes are, and reports its best pass: the highest churn rate, the lowest CPU. A slow spell
//! of the machine makes a request cost more CPU time and never less (docs/methodology/loopback.md, "The
//! bill at a fixed rate"). Only hello: the budget of `cargo run --release` holds no more.

use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::bail;

use crate::child::ServerProcess;
use crate::driver::stats::{CellResult, Status};
use crate::driver::{interrupted, run_plan_on, LoadParams, Plan, Target};
use crate::fixtures::Fixtures;

/// Requests per connection in the churn cells: HttpArena's `limited-conn` closes each
/// connection after 10.
pub(crate) const CHURN_REQUESTS: u64 = 10;

/// The bill's rate, in requests per second over all connections. The slowest saturated hello
/// server in the quick compare on this project's machine served 29.5 k req/s (rocket; iron and
/// go-nethttp 35–38 k, README), so 10 k is a third of what the slowest one can do: every server
/// answers it without a queue, and the figure is its cost per request, not its capacity. A
/// cell that reaches less than [`SUSTAINED`] of it is marked, not billed.
pub(crate) const BILL_RATE: f64 = 10_000.0;

/// The standing cost's rate: 1 % of [`BILL_RATE`], one request every 160 ms on each of the 16
/// connections. At a few µs per request that is well under 1 ms of work per second, so what
/// a server spends beyond it is its own idle work (timers, polling, housekeeping threads).
pub(crate) const STANDING_RATE: f64 = 100.0;

/// The share of an open-loop rate a cell must reach to count as sustained.
pub(crate) const SUSTAINED: f64 = 0.97;

/// Passes over every server; each cell reports its best.
pub(crate) const PASSES: usize = 2;

/// Warm-up and recorded window of each kind of cell in one pass.
const CHURN_WINDOW: (Duration, Duration) = (Duration::from_millis(100), Duration::from_millis(300));
/// The churn cells' request timeout, which bounds how long the client waits for the server to
/// close after answering `Connection: close` ([`crate::driver::client`]): shorter than the
/// cell, so that a server ignoring the header is caught inside it (at the default 2 s, a
/// 0.4 s cell ended before the wait did and reported 0 req/s as `ok`). A server closes in
/// microseconds; hello is answered in microseconds too.
const CHURN_TIMEOUT: Duration = Duration::from_millis(200);
const BILL_WINDOW: (Duration, Duration) = (Duration::from_millis(100), Duration::from_millis(500));
const STANDING_WINDOW: (Duration, Duration) =
    (Duration::from_millis(50), Duration::from_millis(500));

/// The time one server takes here over all passes, for the quick compare's budget: the three
/// windows and about 5 ms of oracle check and meters per cell.
pub(crate) fn per_server() -> Duration {
    let cell =
        |(warmup, recorded): (Duration, Duration)| warmup + recorded + Duration::from_millis(5);
    (cell(CHURN_WINDOW) + cell(BILL_WINDOW) + cell(STANDING_WINDOW)) * PASSES as u32
}

/// What the hello cells past saturation measured, one best cell per server in each list.
#[derive(Debug, Clone, Default)]
pub(crate) struct Hello {
    /// Closed loop, a new connection every [`CHURN_REQUESTS`] requests.
    pub(crate) churn: Vec<CellResult>,
    /// Open loop at [`BILL_RATE`].
    pub(crate) bill: Vec<CellResult>,
    /// Open loop at [`STANDING_RATE`].
    pub(crate) standing: Vec<CellResult>,
    /// Connections of every cell.
    pub(crate) connections: usize,
}

impl Hello {
    /// The churn cell of `name`.
    pub(crate) fn churn(&self, name: &str) -> Option<&CellResult> {
        self.churn.iter().find(|c| c.target == name)
    }

    /// The bill cell of `name`.
    pub(crate) fn bill(&self, name: &str) -> Option<&CellResult> {
        self.bill.iter().find(|c| c.target == name)
    }

    /// The standing-cost cell of `name`.
    pub(crate) fn standing(&self, name: &str) -> Option<&CellResult> {
        self.standing.iter().find(|c| c.target == name)
    }
}

/// The server's CPU time per request in µs of an `ok` open-loop cell that reached
/// [`SUSTAINED`] of its rate, from the scheduler's clock (the same meter as the saturated
/// cells' CPU). `Err` says why there is none.
pub(crate) fn cpu_us_per_request(c: &CellResult) -> anyhow::Result<f64> {
    if c.status != Status::Ok {
        bail!("{}", c.status.short());
    }
    let rate = c.rate.unwrap_or(0.0);
    if c.rps < SUSTAINED * rate {
        bail!("reached {:.0} of {:.0} req/s", c.rps.round(), rate);
    }
    match c.server_cpu_pct {
        Some(pct) if c.rps > 0.0 => Ok(1e4 * pct / c.rps),
        _ => bail!("no CPU reading"),
    }
}

/// The server's CPU time per second of wall time in ms, for a sustained `ok` cell.
pub(crate) fn cpu_ms_per_second(c: &CellResult) -> anyhow::Result<f64> {
    cpu_us_per_request(c).map(|us| us * c.rps / 1e3)
}

/// Runs the hello cells past saturation on `targets`, reusing (and leaving) the servers in
/// `servers` (one slot per target, as [`run_plan_on`] keeps them).
pub(crate) fn measure(
    targets: Vec<Target>,
    connections: usize,
    pinning: crate::pinning::Pinning,
    fixtures: &Fixtures,
    servers: &mut Vec<Option<ServerProcess>>,
) -> Hello {
    let hello = crate::oracle::scenario("hello").expect("the oracle has a hello scenario");
    let params = |(warmup, recorded): (Duration, Duration)| {
        LoadParams::closed_loop(recorded, warmup, Duration::from_secs(2), pinning.clone())
    };
    let churn = LoadParams {
        requests_per_connection: Some(CHURN_REQUESTS),
        timeout: CHURN_TIMEOUT,
        ..params(CHURN_WINDOW)
    };
    let bill = LoadParams {
        rate: Some(BILL_RATE),
        ..params(BILL_WINDOW)
    };
    let standing = LoadParams {
        rate: Some(STANDING_RATE),
        ..params(STANDING_WINDOW)
    };
    let mut plan = Plan {
        targets,
        scenarios: vec![hello],
        connections: vec![connections],
        streams: vec![1],
        params: churn.clone(),
        server_per_target: true,
    };
    let mut passes: [Vec<Vec<CellResult>>; 3] = Default::default();
    for _ in 0..PASSES {
        for (params, kind) in [&churn, &bill, &standing]
            .into_iter()
            .zip(passes.iter_mut())
        {
            if interrupted().load(Ordering::Relaxed) {
                break;
            }
            plan.params = params.clone();
            kind.push(run_plan_on(&plan, fixtures, false, servers));
        }
    }
    let [churn, bill, standing] = passes;
    Hello {
        churn: super::passes::best_of(churn),
        bill: cheapest_of(bill),
        standing: cheapest_of(standing),
        connections,
    }
}

/// One result per cell from several open-loop passes: a pass that did not end `ok` wins (a
/// failure is never hidden), then a sustained pass over one that was not, then the pass whose
/// server spent the least CPU time per request. Its CPU time is split into user and system by
/// the shares of every `ok` pass, weighted by requests, as [`super::passes::best_of`] does: a
/// 0.5 s pass at 10 k req/s holds only a few 10 ms clock ticks.
pub(crate) fn cheapest_of(passes: Vec<Vec<CellResult>>) -> Vec<CellResult> {
    let failed = |c: &CellResult| {
        !matches!(
            c.status,
            Status::Ok | Status::Interrupted | Status::NotRun(_)
        )
    };
    // Per cell: the best pass so far, and user and system µs summed over its `ok` passes.
    let mut best: Vec<(CellResult, [f64; 2])> = Vec::new();
    for cell in passes.into_iter().flatten() {
        let split = super::passes::split_weight(&cell);
        let Some((b, sum)) = best.iter_mut().find(|(b, _)| b.target == cell.target) else {
            best.push((cell, split));
            continue;
        };
        sum[0] += split[0];
        sum[1] += split[1];
        if failed(b) {
            continue;
        }
        let better = match (cpu_us_per_request(b), cpu_us_per_request(&cell)) {
            _ if failed(&cell) => true,
            (Ok(old), Ok(new)) => new < old,
            (Err(_), Ok(_)) => true,
            _ => false,
        };
        if better {
            *b = cell;
        }
    }
    best.into_iter()
        .map(|(mut b, [user, system])| {
            if let Ok(total) = cpu_us_per_request(&b) {
                super::passes::split_pooled(&mut b, total, [user, system]);
            }
            b
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Options;
    use crate::pinning::Pinning;

    fn cell(target: &str, rate: f64, rps: f64, cpu_pct: f64, status: Status) -> CellResult {
        let params = LoadParams {
            rate: Some(rate),
            ..LoadParams::closed_loop(
                Duration::from_secs(1),
                Duration::ZERO,
                Duration::from_secs(2),
                Pinning::resolve(None, None, None),
            )
        };
        let entry = &crate::frameworks::REGISTRY[0];
        let mut c = CellResult::empty(
            &Target::Framework(entry, Options::default()),
            crate::oracle::scenario("hello").unwrap(),
            16,
            &params,
        );
        c.target = target.to_owned();
        c.rps = rps;
        c.server_cpu_pct = Some(cpu_pct);
        c.status = status;
        c
    }

    #[test]
    fn the_bill_is_cpu_per_request_of_a_sustained_cell() {
        // 20 % of a core at 10 k req/s: 20 µs per request, 200 ms per second.
        let c = cell("a", 10_000.0, 9_990.0, 20.0, Status::Ok);
        let us = cpu_us_per_request(&c).unwrap();
        assert!((us - 1e4 * 20.0 / 9_990.0).abs() < 1e-9);
        assert!((cpu_ms_per_second(&c).unwrap() - 200.0).abs() < 1e-9);
        // A server that fell behind the rate has no bill: its figure would be at another rate.
        let slow = cell("b", 10_000.0, 8_000.0, 99.0, Status::Ok);
        assert!(cpu_us_per_request(&slow)
            .unwrap_err()
            .to_string()
            .contains("of 10000 req/s"));
    }

    #[test]
    fn cheapest_of_keeps_the_least_cpu_and_every_failure() {
        let bad = || Status::Failing("wrong body".into());
        let best = cheapest_of(vec![
            vec![
                cell("a", 1e4, 1e4, 30.0, Status::Ok),
                cell("b", 1e4, 5e3, 99.0, Status::Ok),
                cell("c", 1e4, 1e4, 10.0, Status::Ok),
            ],
            vec![
                cell("a", 1e4, 1e4, 20.0, Status::Ok),
                cell("b", 1e4, 1e4, 40.0, Status::Ok),
                cell("c", 1e4, 0.0, 0.0, bad()),
            ],
            vec![
                cell("a", 1e4, 1e4, 25.0, Status::Ok),
                cell("b", 1e4, 1e4, 45.0, Status::Ok),
                cell("c", 1e4, 1e4, 5.0, Status::Ok),
            ],
        ]);
        assert_eq!(best[0].server_cpu_pct, Some(20.0));
        // The pass that sustained the rate, though the one that did not spent more per request.
        assert_eq!(best[1].server_cpu_pct, Some(40.0));
        // A cheaper later pass does not hide a wrong answer.
        assert_eq!(best[2].status, bad());
    }
}
