//! A cross-check of `framebench allocs` by valgrind's DHAT (through gungraun): a few cells,
//! prepared as `framebench allocs` prepares them ([`framebench::allocs::ready`]), then one
//! `dispatch` under DHAT with `--num-callers=500`, so that deep allocation sites keep the
//! bench frame that gungraun's entry point looks for.
//!
//! DHAT counts a `realloc` as one more block, so its "total blocks" should equal
//! `framebench allocs`'s allocs + reallocs when everything runs on the bench's thread (the
//! cells below). It sees only stacks that contain the bench function: what another thread
//! allocates is not in its count (rocket's local client and the tokio blocking pool are left
//! out for that reason). docs/methodology.md records the comparison.
//!
//! Without valgrind or the matching `gungraun-runner` it prints one line and exits 0, as the
//! callgrind targets do.

use std::hint::black_box;

use gungraun::{
    library_benchmark, library_benchmark_group, main, Dhat, LibraryBenchmarkConfig, Tool,
};

use framebench::allocs::Ready;
use framebench::fixtures::Fixtures;
use framebench::framework::{Config, Request, Response};
use framebench::frameworks;
use framebench::options::{Logging, Options};
use framebench::oracle;

/// The cells cross-checked: framework, scenario, logging. Those not compiled in are left out.
const CELLS: &[(&str, &str, Logging)] = &[
    ("null", "hello", Logging::Off),
    ("hyper", "hello", Logging::Off),
    ("hyper", "template", Logging::Sink),
    ("axum", "hello", Logging::Off),
    ("axum", "json", Logging::Sink),
    ("actix", "static", Logging::Off),
];

fn cells() -> impl Iterator<Item = (&'static str, &'static str, Logging)> {
    CELLS
        .iter()
        .copied()
        .filter(|(fw, _, _)| frameworks::find(fw).is_some())
}

/// Builds, checks and warms up the cell (not counted), and builds its request.
fn prepare((framework, scenario, logging): (&str, &str, Logging)) -> (Ready, Request) {
    let entry = frameworks::find(framework).expect("compiled in");
    let scenario = oracle::scenario(scenario).expect("a scenario of the oracle");
    let fixtures = Fixtures::load_default().expect("fixtures");
    let config = Config::new(fixtures, None).with(Options {
        logging,
        ..Options::default()
    });
    let ready = framebench::allocs::ready(entry, &config, scenario)
        .unwrap_or_else(|e| panic!("{framework} {}: {e:#}", scenario.name));
    let request = ready.request();
    (ready, request)
}

#[library_benchmark]
#[benches::cell(iter = cells(), setup = prepare)]
fn dispatch((ready, request): (Ready, Request)) -> (Response, Ready) {
    let res = ready.app().dispatch(black_box(request)).expect("dispatch");
    // The response and the app are dropped after the benchmark, outside the count.
    (black_box(res), ready)
}

library_benchmark_group!(name = allocs_dhat, benchmarks = [dispatch]);

fn config() -> LibraryBenchmarkConfig {
    framebench::bench::callgrind_preflight("allocs_dhat");
    let mut config = LibraryBenchmarkConfig::default();
    config
        .default_tool(Tool::DHAT)
        .tool(Dhat::with_args(["--num-callers=500"]));
    config
}

main!(config = config(), library_benchmark_groups = allocs_dhat);
