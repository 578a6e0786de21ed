//! Instruction counts of in-process dispatches under callgrind: the prepared cell and the
//! counted call that `cargo bench --bench callgrind` makes once per cell ([`count`]).

use anyhow::Context as _;

use crate::framework::{Config, Entry, Request, Response};
use crate::oracle::{self, Scenario};

use super::Prepared;

/// A prepared cell: the app, the request to count and, once counted, the response.
pub struct Cell {
    /// The checked app.
    pub prepared: Prepared,
    /// The request the next [`count`] moves into `dispatch`.
    pub request: Option<Request>,
    /// The response of the last [`count`], dropped outside it.
    pub response: Option<Response>,
}

/// Builds `entry` from `config`, checks `scenario` against the oracle (one dispatch), warms it
/// up with a second dispatch (the first may fill caches the steady state keeps) and builds the
/// request to count. Nothing here is counted.
pub fn ready(
    entry: &Entry,
    config: &Config,
    scenario: &'static Scenario,
) -> anyhow::Result<Box<Cell>> {
    let prepared = super::prepare(entry, config, scenario)?;
    prepared
        .app
        .dispatch(oracle::request(prepared.path))
        .context("warm-up dispatch")?;
    let request = Some(oracle::request(prepared.path));
    Ok(Box::new(Cell {
        prepared,
        request,
        response: None,
    }))
}

/// The counted call: exactly one `dispatch`, and the one move of the request into it. The cell
/// comes in and goes out as a box (one pointer), so the count holds no copies of the harness's
/// own structs (it did: four `memcpy`s, 151 of `null`'s 1,190 instructions); the response and
/// the app are dropped after the benchmark, outside the count.
///
/// Out of line, so that the bench function of benches/callgrind.rs and `profile --callgrind`
/// run the same machine code: inlined into the worker's loop, the drop of the
/// empty response slot compiled to nothing, and to a call of 9 instructions in the bench.
#[inline(never)]
pub fn count(mut cell: Box<Cell>) -> Box<Cell> {
    let req = cell.request.take().expect("request");
    cell.response = Some(cell.prepared.app.dispatch(req).expect("dispatch"));
    cell
}
