//! `framebench` with no command: the quick compare (`crate::quick` measures and renders it).

use std::process::ExitCode;

use anyhow::Context as _;

use crate::framework::{Config, Entry};
use crate::options::Options;
use crate::quick::{Run, SAMPLE};

/// The quick compare, `cargo run --release`: the in-process cells, the allocation counts (a
/// child process) and the loopback cells in what is left of the time budget; the compact view
/// (or the long table with `long`) on screen, the long table, results file and chart in
/// `target/quick/`. Exit 1 when a cell failed the oracle, 130 when interrupted.
pub fn run(long: bool) -> anyhow::Result<ExitCode> {
    let started = std::time::Instant::now();
    let fixtures = crate::fixtures::Fixtures::load_default()?;
    crate::select::prepare_entries(crate::frameworks::REGISTRY);
    let redis = crate::cmd::args::RedisArg { redis: None }.provide()?;
    let entries: Vec<&Entry> = crate::frameworks::REGISTRY.iter().collect();
    let options = Options::default();
    let sample = SAMPLE;
    let config = Config::new(std::sync::Arc::clone(&fixtures), redis.url()).with(options);
    let rows = crate::quick::run(&entries, &config, sample);
    if crate::tools::interrupted().load(std::sync::atomic::Ordering::Relaxed) {
        eprintln!("interrupted");
        return Ok(ExitCode::from(130));
    }
    // Counted in a child process (this binary, `framebench allocs`): no app of the timed runs
    // lives there, and this process's allocator is never switched on.
    let names: Vec<&str> = rows.iter().map(|(name, _)| *name).collect();
    let allocs =
        crate::allocs::report::spawn(&names, options.logging, 3).context("allocs/req not counted");
    // The loopback cells get what is left of the quick compare's time.
    let budget = crate::quick::loopback::QUICK_BUDGET.saturating_sub(started.elapsed());
    let (loopback, setup, hello) =
        crate::quick::loopback::quick_loopback(&fixtures, options, budget);
    let run = Run {
        rows,
        allocs,
        loopback,
        setup,
        hello,
        options,
        sample,
    };
    // The first screen is the compact view; the long table, the results file (for `framebench
    // diff` against a later quick compare) and the chart go to files, and `--long` prints the
    // long table instead.
    let dir = crate::results::target_dir().join("quick");
    let long_table = run.long();
    let long_path = dir.join("long.md");
    let chart_path = dir.join("summary.svg");
    let json_path = dir.join("results.json");
    let mut written = Vec::new();
    let mut lost = Vec::new();
    let mut note = |what: &str, path: &std::path::Path, r: anyhow::Result<()>| match r {
        Ok(()) => written.push(format!("{what}: {}", path.display())),
        Err(e) => lost.push(format!("{what} not written: {e:#}")),
    };
    note(
        "long table",
        &long_path,
        std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(&long_path, &long_table.table))
            .map_err(anyhow::Error::from),
    );
    note(
        "results (framebench diff reads them)",
        &json_path,
        run.results().write(&json_path),
    );
    note("chart", &chart_path, run.chart(&chart_path));
    if long {
        print!("{}", long_table.table);
    } else {
        let files = format!("Files: {}.", written.join(" · "));
        print!("{}", run.compact(&files, &long_table.notes));
    }
    for l in &lost {
        eprintln!("{l}");
    }
    Ok(if long_table.failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
