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
//! Ids: one benchmark function per scenario, `off_<i>` / `sink_<i>` per logging, where `<i>`
//! indexes the in-process frameworks in registry order (`framebench list`; `framebench report`
//! prints the names). Reduce the set with gungraun's filter, e.g. hello only:
//! `cargo bench --bench callgrind -- '*::hello::*'` (a wildcard on `callgrind::in_process::hello::off_0`).

use std::hint::black_box;

use gungraun::{library_benchmark, library_benchmark_group, main, LibraryBenchmarkConfig};

use framebench::bench::{self, Prepared};
use framebench::fixtures::Fixtures;
use framebench::framework::{Config, Entry, Request, Response};
use framebench::frameworks::REGISTRY;
use framebench::options::{Logging, Options};
use framebench::oracle;
use framebench::tools::Tool;

/// The frameworks with an in-process path, in registry order: the `<i>` of the ids.
fn frameworks() -> Vec<&'static Entry> {
    REGISTRY.iter().filter(|e| e.in_process).collect()
}

/// A prepared cell and the request to count.
struct Cell {
    prepared: Prepared,
    request: Option<Request>,
}

fn prepare(entry: &'static Entry, scenario: &str, logging: Logging) -> Cell {
    let scenario = oracle::scenario(scenario).expect("scenario");
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

/// Setup functions: one per scenario × logging, each taking the framework.
macro_rules! setups {
    ($($fn_name:ident = ($scenario:expr, $logging:expr);)*) => {
        $(
            fn $fn_name(entry: &'static Entry) -> Cell {
                prepare(entry, $scenario, $logging)
            }
        )*
    };
}

setups! {
    hello_off = ("hello", Logging::Off);
    hello_sink = ("hello", Logging::Sink);
    not_found_off = ("not_found", Logging::Off);
    not_found_sink = ("not_found", Logging::Sink);
    static_off = ("static", Logging::Off);
    static_sink = ("static", Logging::Sink);
    template_off = ("template", Logging::Off);
    template_sink = ("template", Logging::Sink);
    paste_off = ("paste", Logging::Off);
    paste_sink = ("paste", Logging::Sink);
    json_off = ("json", Logging::Off);
    json_sink = ("json", Logging::Sink);
}

#[library_benchmark]
#[benches::off(iter = frameworks(), setup = hello_off)]
#[benches::sink(iter = frameworks(), setup = hello_sink)]
fn hello(cell: Cell) -> (Response, Cell) {
    count(cell)
}

#[library_benchmark]
#[benches::off(iter = frameworks(), setup = not_found_off)]
#[benches::sink(iter = frameworks(), setup = not_found_sink)]
fn not_found(cell: Cell) -> (Response, Cell) {
    count(cell)
}

#[library_benchmark]
#[benches::off(iter = frameworks(), setup = static_off)]
#[benches::sink(iter = frameworks(), setup = static_sink)]
fn static_(cell: Cell) -> (Response, Cell) {
    count(cell)
}

#[library_benchmark]
#[benches::off(iter = frameworks(), setup = template_off)]
#[benches::sink(iter = frameworks(), setup = template_sink)]
fn template(cell: Cell) -> (Response, Cell) {
    count(cell)
}

#[library_benchmark]
#[benches::off(iter = frameworks(), setup = paste_off)]
#[benches::sink(iter = frameworks(), setup = paste_sink)]
fn paste(cell: Cell) -> (Response, Cell) {
    count(cell)
}

#[library_benchmark]
#[benches::off(iter = frameworks(), setup = json_off)]
#[benches::sink(iter = frameworks(), setup = json_sink)]
fn json(cell: Cell) -> (Response, Cell) {
    count(cell)
}

library_benchmark_group!(
    name = in_process,
    benchmarks = [hello, not_found, static_, template, paste, json]
);

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
