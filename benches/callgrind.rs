//! Instruction counts of one in-process request (gungraun, callgrind): every framework ×
//! scenario, io `memory`, logging `off` and `sink`.
//!
//! The setup (not counted) builds the app with its own current-thread runtime, dispatches the
//! scenario twice and checks the answer against the oracle, so lazy statics, caches and the
//! runtime are warm; a cell that fails panics here, loudly, instead of being counted. The
//! benchmark then counts exactly one `dispatch` on this thread: routing, middleware, handler and
//! collecting the response, with `block_on` on the bench's own thread so that callgrind sees all
//! of it. The setup and the counted call are `framebench::bench::callgrind`'s, which `framebench
//! profile --callgrind` makes too, once per request, to say where the instructions go.
//!
//! Ids: `callgrind::in_process::<framework>::<scenario>_<logging>`, one benchmark function per
//! in-process framework, named after its module in `src/frameworks/` (e.g.
//! `callgrind::in_process::axum::hello_off`, `…::null010::json_sink`). Reduce the set with
//! gungraun's filter: one framework with `cargo bench --bench callgrind -- '*::axum::*'`, one
//! scenario with `'*::hello_*'`, one cell with `'*::axum::hello_off'`.
//!
//! gungraun's ids are literals, so the functions come from the registry's own list
//! (`framebench::registry!`, the same lines that build `REGISTRY`): a framework added there gets
//! its function here, and a framework whose feature is off gets a function with no cells. The
//! scenarios are named once more below, one `#[bench]` line per scenario and logging; everything
//! else about a cell is read from the oracle and the registry. `tests/testsuite/bench_cli.rs`
//! checks that the lines name every scenario of the oracle that runs without Redis, so a new
//! scenario cannot be left uncounted.

use gungraun::{library_benchmark, library_benchmark_group, main, LibraryBenchmarkConfig};

use framebench::bench;
use framebench::bench::callgrind::{self, Cell};
use framebench::fixtures::Fixtures;
use framebench::framework::{Config, Entry};
use framebench::frameworks;
use framebench::options::{Logging, Options};
use framebench::oracle::{self, Scenario};
use framebench::tools::Tool;

/// What one benchmark counts: a scenario of the oracle, with this logging, on this framework.
struct Target {
    scenario: &'static Scenario,
    logging: Logging,
    entry: &'static Entry,
}

/// The in-process framework of the registry line for `module`, `scenario` with `logging`.
fn target(module: &str, scenario: &str, logging: Logging) -> Target {
    let scenario = oracle::scenario(scenario)
        .filter(|s| !s.needs_redis())
        .unwrap_or_else(|| panic!("{scenario}: not a scenario of the oracle without Redis"));
    let entry = frameworks::REGISTRY
        .iter()
        .find(|e| e.module == module && e.in_process)
        .unwrap_or_else(|| panic!("{module}: not an in-process line of the registry"));
    Target {
        scenario,
        logging,
        entry,
    }
}

/// Builds the target's app, checks it against the oracle and warms it up (not counted), as
/// `framebench profile --callgrind` does ([`callgrind::ready`]).
fn prepare(target: Target) -> Box<Cell> {
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
    callgrind::ready(entry, &Config::new(fixtures, None).with(options), scenario).unwrap_or_else(
        |e| {
            panic!(
                "{} {} {}: fails the oracle, not counted: {e:#}",
                entry.name,
                scenario.name,
                options.label()
            )
        },
    )
}

/// One benchmark function per in-process framework of the registry (see the module doc); a
/// framework compiled out gets one with no cells, so that the group's list stays the same.
macro_rules! counted {
    ($([$($feature:literal)?] $kind:ident $module:ident: $($ty:ident$(<$generic:ty>)?),+;)*) => {
        counted!(@each [] $([$($feature)?] $kind $module: $($ty),+;)*);
    };
    (@each [$($done:ident)*] [$($feature:literal)?] in_process $module:ident: $ty:ident; $($rest:tt)*) => {
        #[cfg(all($(feature = $feature)?))]
        #[library_benchmark(setup = prepare)]
        #[bench::hello_off(target(stringify!($module), "hello", Logging::Off))]
        #[bench::hello_sink(target(stringify!($module), "hello", Logging::Sink))]
        #[bench::not_found_off(target(stringify!($module), "not_found", Logging::Off))]
        #[bench::not_found_sink(target(stringify!($module), "not_found", Logging::Sink))]
        #[bench::static_off(target(stringify!($module), "static", Logging::Off))]
        #[bench::static_sink(target(stringify!($module), "static", Logging::Sink))]
        #[bench::template_off(target(stringify!($module), "template", Logging::Off))]
        #[bench::template_sink(target(stringify!($module), "template", Logging::Sink))]
        #[bench::paste_off(target(stringify!($module), "paste", Logging::Off))]
        #[bench::paste_sink(target(stringify!($module), "paste", Logging::Sink))]
        #[bench::json_off(target(stringify!($module), "json", Logging::Off))]
        #[bench::json_sink(target(stringify!($module), "json", Logging::Sink))]
        #[bench::query_off(target(stringify!($module), "query", Logging::Off))]
        #[bench::query_sink(target(stringify!($module), "query", Logging::Sink))]
        #[bench::upload_off(target(stringify!($module), "upload", Logging::Off))]
        #[bench::upload_sink(target(stringify!($module), "upload", Logging::Sink))]
        #[bench::json_in_off(target(stringify!($module), "json_in", Logging::Off))]
        #[bench::json_in_sink(target(stringify!($module), "json_in", Logging::Sink))]
        fn $module(cell: Box<Cell>) -> Box<Cell> {
            callgrind::count(cell)
        }

        #[cfg(not(all($(feature = $feature)?)))]
        #[library_benchmark(setup = prepare)]
        #[benches::compiled_out(iter = std::iter::empty::<Target>())]
        fn $module(cell: Box<Cell>) -> Box<Cell> {
            callgrind::count(cell)
        }

        counted!(@each [$($done)* $module] $($rest)*);
    };
    // Entries without an in-process path (`raw`, the Go peers) have no function here.
    (@each [$($done:ident)*] [$($feature:literal)?] server $module:ident: $($ty:ident),+; $($rest:tt)*) => {
        counted!(@each [$($done)*] $($rest)*);
    };
    (@each [$($done:ident)*]) => {
        library_benchmark_group!(name = in_process, benchmarks = [$($done),*]);
    };
}

framebench::registry!(counted);

/// gungraun evaluates this first, in `cargo bench`'s own process (the runs it starts under
/// valgrind never call it): without valgrind or the matching `gungraun-runner` the target says
/// so in one line and ends with 0, so `cargo bench` goes on to the criterion targets.
///
/// The counted process sees a frozen clock when libfaketime is installed: hyper 0.10's `Date`
/// header and every log line's timestamp and latency then format the same digits on every run,
/// so their instruction counts repeat exactly. Without it they vary by up to about 2 %
/// (docs/methodology/callgrind.md).
fn config() -> LibraryBenchmarkConfig {
    bench::callgrind_preflight("callgrind");
    // Which build measured, for `framebench report`; gungraun has no hook after the last
    // benchmark, so the run's end is its newest summary.
    bench::record_run("gungraun", "callgrind");
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
