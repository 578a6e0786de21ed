//! In-process criterion benches: every framework × scenario × variant, through
//! `Framework::dispatch`, no socket. One group per scenario (`in_process/<scenario>`), the
//! framework and variant as the id, so criterion compares frameworks side by side.
//!
//! Each cell is built and its response checked against the oracle before it is timed; a cell
//! that fails is reported and skipped. Requests are built outside the timed region.
//! Filter as usual: `cargo bench --bench in_process -- axum`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput};

use framebench::bench;
use framebench::fixtures::Fixtures;
use framebench::framework::Config;
use framebench::frameworks::REGISTRY;
use framebench::oracle::SCENARIOS;

fn in_process(c: &mut Criterion) {
    if let Err(e) = framebench::tools::check_required() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
    let fixtures = Fixtures::load_default().expect("fixtures");
    // A real redis-server for the redis scenario (the served children inherit its URL); without
    // one that scenario is skipped with one line saying how to install it.
    let redis = framebench::redis::provide(None).expect("redis-server starts");
    let base = Config::new(fixtures, redis.url());
    let mut failed = Vec::new();
    for scenario in SCENARIOS {
        // Says why once per run (the redis scenario without redis-server).
        if scenario.skip_reason(&base).is_some() {
            continue;
        }
        let mut group = c.benchmark_group(format!("in_process/{}", scenario.name));
        for entry in REGISTRY.iter().filter(|e| e.in_process) {
            // Not a failure: the framework cannot serve this scenario through its own API, or
            // the scenario has no in-process cell; said once, not timed.
            if let Err(e) = framebench::cell::supported(entry, scenario, true) {
                eprintln!(
                    "{}",
                    e.note(format_args!("in_process/{}/{}", scenario.name, entry.name))
                );
                continue;
            }
            for options in bench::in_process_variants(entry, scenario) {
                let label = bench::label(&options);
                let prepared = match framebench::cell::prepare(entry, &base.with(options), scenario)
                {
                    Ok(p) => p,
                    Err(e) => {
                        let msg =
                            format!("in_process/{}/{}/{label}: {e:#}", scenario.name, entry.name);
                        eprintln!("FAIL {msg} (skipped, not timed)");
                        failed.push(msg);
                        continue;
                    }
                };
                group.throughput(Throughput::Bytes(prepared.body_len as u64));
                let app = &*prepared.app;
                // Batches of CHUNK requests, as every in-process timer of framebench builds
                // them (`bench::timed_batch`): `SmallInput` built a tenth of a sample at once,
                // tens of thousands of requests for the cheapest cells, which had left the
                // cache by the time they were dispatched (docs/methodology/in-process.md, "The in-process
                // timers agree").
                // A computed scenario cycles through its ring of distinct requests.
                let mut next = prepared.instances.iter().cycle();
                group.bench_function(BenchmarkId::new(entry.name, label), |b| {
                    b.iter_batched(
                        || next.next().expect("a ring").request(),
                        |req| black_box(app.dispatch(black_box(req)).expect("dispatch")),
                        BatchSize::NumIterations(bench::CHUNK as u64),
                    )
                });
            }
        }
        group.finish();
    }
    if !failed.is_empty() {
        eprintln!(
            "{} cell(s) failed the oracle and were skipped:",
            failed.len()
        );
        for f in &failed {
            eprintln!("  {f}");
        }
    }
}

fn config() -> Criterion {
    // Budget: about 1.6 s per cell keeps the whole `cargo bench` within 15 minutes on 2 cores.
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(1000))
        .sample_size(30)
        // 20,000 bootstrap resamples instead of 100,000: the analysis of each cell stays short.
        .nresamples(20_000)
        .configure_from_args()
}

fn main() {
    // Which build measured: `framebench report` names it (target/criterion/framebench-run-*.json).
    let run = framebench::bench::record_run("criterion", "in_process");
    let mut c = config();
    in_process(&mut c);
    c.final_summary();
    run.finish();
}
