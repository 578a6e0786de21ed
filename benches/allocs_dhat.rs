//! A cross-check of `framebench allocs` by valgrind's DHAT (through gungraun): a few cells,
//! prepared as `framebench allocs` prepares them ([`framebench::allocs::ready`]), then one
//! `dispatch` under DHAT with `--num-callers=500`, so that deep allocation sites keep the
//! bench frame that gungraun's entry point looks for.
//!
//! DHAT counts a `realloc` as one more block, so its "total blocks" should equal
//! `framebench allocs`'s allocs + reallocs when everything runs on the bench's thread (the
//! cells below). It sees only stacks that contain the bench function: what another thread
//! allocates is not in its count (rocket's local client and the tokio blocking pool are left
//! out for that reason). docs/methodology/in-process.md records the comparison.
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

/// One cross-checked cell (framework, scenario, logging), or none when the framework is
/// compiled out (gungraun then says the id's iterator was empty). The ids name the cell:
/// `allocs_dhat::allocs_dhat::dispatch::axum_json_sink_0`.
fn cell(
    framework: &'static str,
    scenario: &'static str,
    logging: Logging,
) -> Option<(&'static str, &'static str, Logging)> {
    frameworks::find(framework).map(|_| (framework, scenario, logging))
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

#[library_benchmark(setup = prepare)]
#[benches::null_hello_off(iter = cell("null", "hello", Logging::Off))]
#[benches::hyper_hello_off(iter = cell("hyper", "hello", Logging::Off))]
#[benches::hyper_template_sink(iter = cell("hyper", "template", Logging::Sink))]
#[benches::axum_hello_off(iter = cell("axum", "hello", Logging::Off))]
#[benches::axum_json_sink(iter = cell("axum", "json", Logging::Sink))]
#[benches::actix_static_off(iter = cell("actix", "static", Logging::Off))]
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
