//! A made-up quick compare for the views' tests: two frameworks, the floor and the reference,
//! with figures chosen so that each mark and rank of the views has one right answer.

use std::time::Duration;

use crate::driver::stats::{Bound, CellResult, Status};
use crate::driver::{LoadParams, Target};
use crate::framework::Entry;
use crate::frameworks::REGISTRY;
use crate::options::Options;
use crate::oracle::SCENARIOS;
use crate::pinning::Pinning;

use super::cells::{Cell, Run, Timed, SAMPLE};
use super::hello;
use super::loopback::QuickLoopback;

/// A quick compare of two frameworks, the floor and the reference, with made-up figures:
/// the second framework is faster over loopback than the first, but its server was not
/// saturated.
pub(super) fn made_up() -> Option<(Run, [&'static str; 2])> {
    let mut frameworks = REGISTRY
        .iter()
        .filter(|e| e.in_process && e.loopback && !e.baseline);
    let (a, b) = (frameworks.next()?, frameworks.next()?);
    let floor = crate::frameworks::floor()?;
    let reference = crate::frameworks::reference()?;
    let params = LoadParams::closed_loop(
        Duration::from_secs(1),
        Duration::from_millis(100),
        Duration::from_secs(1),
        Pinning::one_core_each(),
    );
    let time = |us: f64| {
        Cell::Time(Timed {
            median: Duration::from_secs_f64(us / 1e6),
            spread_pct: 1.0,
        })
    };
    let rows = vec![
        (a.name, SCENARIOS.iter().map(|_| time(1.0)).collect()),
        (b.name, SCENARIOS.iter().map(|_| time(2.0)).collect()),
        (floor.name, SCENARIOS.iter().map(|_| time(0.3)).collect()),
    ];
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
        loopback: loopback_cells([a, b, reference], &params),
        setup,
        hello: hello_cells([a, b, reference], &params),
        options: Options::default(),
        sample: SAMPLE,
    };
    Some((run, [a.name, b.name]))
}

/// The loopback cells: `a` at 100 k req/s saturated, `b` at 150 k unsaturated, the reference
/// at 200 k, in every scenario.
fn loopback_cells([a, b, reference]: [&'static Entry; 3], params: &LoadParams) -> Vec<CellResult> {
    let mut loopback = Vec::new();
    for s in SCENARIOS {
        for (entry, rps, bound) in [
            (a, 100e3, Bound::Server),
            (b, 150e3, Bound::Unsaturated),
            (reference, 200e3, Bound::Server),
        ] {
            let mut c =
                CellResult::empty(&Target::Framework(entry, Options::default()), s, 4, params);
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
fn hello_cells([a, b, reference]: [&'static Entry; 3], params: &LoadParams) -> hello::Hello {
    let mut hello = hello::Hello {
        connections: 4,
        ..Default::default()
    };
    for (entry, churn, bill_cpu, status) in [
        (a, 30e3, 20.0, Status::Ok),
        (b, 20e3, 10.0, Status::Ok),
        (
            reference,
            0.0,
            5.0,
            Status::IgnoredClose("kept open".into()),
        ),
    ] {
        let target = Target::Framework(entry, Options::default());
        let hello_scenario = crate::oracle::scenario("hello").unwrap();
        let mut c = CellResult::empty(&target, hello_scenario, 4, params);
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
            let mut c = CellResult::empty(&target, hello_scenario, 4, &open);
            c.rps = rate;
            c.server_cpu_pct = Some(bill_cpu);
            list.push(c);
        }
    }
    hello
}
