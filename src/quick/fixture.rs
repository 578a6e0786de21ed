//! A made-up quick compare for the views' tests: two frameworks of its own (the unit tests'
//! registry holds only the baselines), the floor and the reference, with figures chosen so that
//! each mark and rank of the views has one right answer.

use std::time::Duration;

use crate::driver::stats::{Bound, CellResult, Status};
use crate::driver::{LoadParams, Target};
use crate::options::Options;
use crate::oracle::Scenario;
use crate::pinning::Pinning;
use crate::quick::QUICK_SCENARIOS;

use super::cells::{Cell, Run, Timed, SAMPLE};
use super::hello;
use super::loopback::QuickLoopback;

/// The made-up frameworks, outside the registry.
pub(super) const FRAMEWORKS: [&str; 2] = ["fw-a", "fw-b"];

/// A quick compare of two frameworks ([`FRAMEWORKS`]), the floor and the reference, with
/// made-up figures: the first framework is twice as fast in-process as the second (1 and 2 µs,
/// ±1 %); the second is faster over loopback than the first, but its server was not saturated.
pub(super) fn made_up() -> (Run, [&'static str; 2]) {
    let [a, b] = FRAMEWORKS;
    let floor = crate::frameworks::floor().expect("the floor is always built");
    let reference = crate::frameworks::reference().expect("the reference is always built");
    let params = LoadParams::closed_loop(
        Duration::from_secs(1),
        Duration::from_millis(100),
        Duration::from_secs(1),
        Pinning::one_core_each(),
    );
    let time = |us: f64| QUICK_SCENARIOS.iter().map(|_| timed(us, 1.0)).collect();
    let rows = vec![(a, time(1.0)), (b, time(2.0)), (floor.name, time(0.3))];
    let setup = QuickLoopback {
        params: params.clone(),
        passes: 3,
        threads: 1,
        connections: 4,
        pooled: Vec::new(),
        of_reference: Vec::new(),
    };
    let run = Run {
        rows,
        allocs: Err(anyhow::anyhow!("not counted here")),
        loopback: loopback_cells([a, b, reference.name], &params),
        setup,
        hello: hello_cells([a, b, reference.name], &params),
        options: Options::default(),
        sample: SAMPLE,
    };
    (run, [a, b])
}

/// An in-process cell of `us` µs per request, its farthest batch `spread_pct` % from it.
pub(super) fn timed(us: f64, spread_pct: f64) -> Cell {
    Cell::Time(Timed {
        median: Duration::from_secs_f64(us / 1e6),
        spread_pct,
    })
}

/// An empty cell of `name` on `scenario`, whatever `name` is (a registry entry or not).
fn named_cell(name: &str, scenario: &'static Scenario, params: &LoadParams) -> CellResult {
    let target = Target::Url(([127, 0, 0, 1], 9).into());
    let mut c = CellResult::empty(&target, scenario, 4, params);
    c.target = name.to_owned();
    c
}

/// The loopback cells: `a` at 100 k req/s saturated, `b` at 150 k unsaturated, the reference
/// at 200 k, in every scenario.
fn loopback_cells([a, b, reference]: [&str; 3], params: &LoadParams) -> Vec<CellResult> {
    let mut loopback = Vec::new();
    for s in QUICK_SCENARIOS {
        for (name, rps, bound) in [
            (a, 100e3, Bound::Server),
            (b, 150e3, Bound::Unsaturated),
            (reference, 200e3, Bound::Server),
        ] {
            let mut c = named_cell(name, s, params);
            c.rps = rps;
            c.requests = 1000;
            c.bound = bound;
            loopback.push(c);
        }
    }
    loopback
}

/// Past saturation: a churns fastest, b's bill is the lowest, the reference ignores
/// `Connection: close`.
fn hello_cells([a, b, reference]: [&str; 3], params: &LoadParams) -> hello::Hello {
    let mut hello = hello::Hello {
        connections: 4,
        ..Default::default()
    };
    let hello_scenario = crate::oracle::scenario("hello").unwrap();
    for (name, churn, bill_cpu, status) in [
        (a, 30e3, 20.0, Status::Ok),
        (b, 20e3, 10.0, Status::Ok),
        (
            reference,
            0.0,
            5.0,
            Status::IgnoredClose("kept open".into()),
        ),
    ] {
        let mut c = named_cell(name, hello_scenario, params);
        c.rps = churn;
        c.bound = Bound::Server;
        c.status = status;
        hello.churn.push(c);
        for (rate, list) in [
            (hello::BILL_RATE, &mut hello.bill),
            (hello::STANDING_RATE, &mut hello.standing),
        ] {
            let open = LoadParams {
                rate: Some(rate),
                ..params.clone()
            };
            let mut c = named_cell(name, hello_scenario, &open);
            c.rps = rate;
            c.server_cpu_pct = Some(bill_cpu);
            list.push(c);
        }
    }
    hello
}
