//! Instruction counts of one in-process request (gungraun, callgrind): every framework ×
//! scenario, io `memory`, logging `off` and `sink`.
//!
//! The setup (not counted) builds the app with its own current-thread runtime, dispatches the
//! scenario twice and checks the answer against the oracle, so lazy statics, caches and the
//! runtime are warm; a cell that fails panics here, loudly, instead of being counted. The
//! benchmark then counts exactly one `dispatch` on this thread: routing, middleware, handler and
//! collecting the response, with `block_on` on the bench's own thread so that callgrind sees all
//! of it.
//!
//! Ids: one benchmark function, [`dispatch`], and an id `<scenario>_<logging>_<i>` per cell,
//! where `<i>` indexes the in-process frameworks in registry order (`framebench list`;
//! `framebench report` prints the names). Reduce the set with gungraun's filter, e.g. hello only:
//! `cargo bench --bench callgrind -- '*::hello_*'` (a wildcard on
//! `callgrind::in_process::dispatch::hello_off_0`).
//!
//! gungraun's ids are literals, so the scenarios are named once more below, one `#[benches]`
//! line per scenario and logging; everything else about a cell is read from the oracle and the
//! registry. `tests/bench_cli.rs` checks that the lines name every scenario of the oracle that
//! runs without Redis, so a new scenario cannot be left uncounted.

use std::hint::black_box;

use gungraun::{library_benchmark, library_benchmark_group, main, LibraryBenchmarkConfig};

use framebench::bench::{self, Prepared};
use framebench::fixtures::Fixtures;
use framebench::framework::{Config, Entry, Request, Response};
use framebench::frameworks::REGISTRY;
use framebench::options::{Logging, Options};
use framebench::oracle::{self, Scenario};
use framebench::tools::Tool;

/// What one benchmark counts: a scenario of the oracle, with this logging, on this framework.
struct Target {
    scenario: &'static Scenario,
    logging: Logging,
    entry: &'static Entry,
}

/// The targets of one `#[benches]` line: `scenario` with `logging` on every framework with an
/// in-process path, in registry order (the `<i>` of the ids).
fn targets(scenario: &str, logging: Logging) -> impl Iterator<Item = Target> {
    let scenario = oracle::scenario(scenario)
        .filter(|s| !s.needs_redis())
        .unwrap_or_else(|| panic!("{scenario}: not a scenario of the oracle without Redis"));
    // Collected first, as this bench always has: the counted process's heap then looks the
    // same when the count starts, and malloc takes the same paths inside it (a lazy iterator
    // moves some counts by a few hundred instructions).
    let frameworks: Vec<&'static Entry> = REGISTRY.iter().filter(|e| e.in_process).collect();
    frameworks.into_iter().map(move |entry| Target {
        scenario,
        logging,
        entry,
    })
}

/// A prepared cell and the request to count.
struct Cell {
    prepared: Prepared,
    request: Option<Request>,
}

/// Builds the target's app, checks it against the oracle and warms it up (not counted).
fn prepare(target: Target) -> Cell {
    let Target {
        scenario,
        logging,
        entry,
    } = target;
    let fixtures = Fixtures::load_default().expect("fixtures");
    let options = Options {
        logging,
        ..Options::default()
    };
    let prepared = bench::prepare(entry, &Config::new(fixtures, None).with(options), scenario)
        .unwrap_or_else(|e| {
            panic!(
                "{} {} {}: fails the oracle, not counted: {e:#}",
                entry.name,
                scenario.name,
                options.label()
            )
        });
    // A second warm-up request: the first one may fill caches the steady state keeps.
    prepared
        .app
        .dispatch(oracle::request(prepared.path))
        .expect("warm-up dispatch");
    let request = Some(oracle::request(prepared.path));
    Cell { prepared, request }
}

fn count(mut cell: Cell) -> (Response, Cell) {
    let req = cell.request.take().expect("request");
    let res = cell
        .prepared
        .app
        .dispatch(black_box(req))
        .expect("dispatch");
    // The response and the app are dropped after the benchmark, outside the count.
    (black_box(res), cell)
}

#[library_benchmark]
#[benches::hello_off(iter = targets("hello", Logging::Off), setup = prepare)]
#[benches::hello_sink(iter = targets("hello", Logging::Sink), setup = prepare)]
#[benches::not_found_off(iter = targets("not_found", Logging::Off), setup = prepare)]
#[benches::not_found_sink(iter = targets("not_found", Logging::Sink), setup = prepare)]
#[benches::static_off(iter = targets("static", Logging::Off), setup = prepare)]
#[benches::static_sink(iter = targets("static", Logging::Sink), setup = prepare)]
#[benches::template_off(iter = targets("template", Logging::Off), setup = prepare)]
#[benches::template_sink(iter = targets("template", Logging::Sink), setup = prepare)]
#[benches::paste_off(iter = targets("paste", Logging::Off), setup = prepare)]
#[benches::paste_sink(iter = targets("paste", Logging::Sink), setup = prepare)]
#[benches::json_off(iter = targets("json", Logging::Off), setup = prepare)]
#[benches::json_sink(iter = targets("json", Logging::Sink), setup = prepare)]
fn dispatch(cell: Cell) -> (Response, Cell) {
    count(cell)
}

library_benchmark_group!(name = in_process, benchmarks = [dispatch]);

/// gungraun evaluates this first, in `cargo bench`'s own process (the runs it starts under
/// valgrind never call it): without valgrind or the matching `gungraun-runner` the target says
/// so in one line and ends with 0, so `cargo bench` goes on to the criterion targets.
///
/// The counted process sees a frozen clock when libfaketime is installed: hyper 0.10's `Date`
/// header and every log line's timestamp and latency then format the same digits on every run,
/// so their instruction counts repeat exactly. Without it they vary by up to about 2 %
/// (docs/methodology.md).
fn config() -> LibraryBenchmarkConfig {
    bench::callgrind_preflight("callgrind");
    let mut config = LibraryBenchmarkConfig::default();
    match Tool::Faketime.path() {
        Ok(faketime) => {
            config.envs(bench::faketime_env(faketime));
        }
        Err(_) => {
            Tool::Faketime.skip();
        }
    }
    config
}

main!(config = config(), library_benchmark_groups = in_process);
