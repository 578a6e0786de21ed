//! `framebench` with no command: the quick compare (`crate::quick` measures and renders it).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::Context as _;

use crate::framework::{Config, Entry};
use crate::options::Options;
use crate::provenance::Window;
use crate::quick::{Run, SAMPLE};

/// The quick compare, `cargo run --release`: the in-process cells, the allocation counts (a
/// child process) and the loopback cells in what is left of the time budget; the compact view
/// (or the long table with `long`) on screen; the screen, the long table, results file and chart
/// in `out` (default `target/quick/`). Exit 1 when a cell failed the oracle, 130 when
/// interrupted.
pub fn run(long: bool, out: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let started = SystemTime::now();
    let Some(run) = measure()? else {
        eprintln!("interrupted");
        return Ok(ExitCode::from(130));
    };
    let window = Window::since(started);
    let dir = out.unwrap_or_else(|| crate::env::target_dir().join("quick"));
    let long_table = run.long();
    let (written, mut lost) = write_files(&run, &long_table.table, &dir, window);
    // The first screen is the compact view; `--long` prints the long table instead. The screen
    // file holds the compact view either way, with the commit and window on lines of their own.
    let files = format!("Files: {}.", written.join(" · "));
    let screen = run.compact(&files, &long_table.notes);
    let screen_path = dir.join("screen.md");
    if let Err(e) = std::fs::write(&screen_path, screen_file(&screen, window)) {
        lost.push(format!(
            "screen not written to {}: {e}",
            screen_path.display()
        ));
    }
    if long {
        print!("{}", long_table.table);
    } else {
        print!("{screen}");
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

/// Every cell of the quick compare, or `None` when interrupted.
fn measure() -> anyhow::Result<Option<Run>> {
    let started = std::time::Instant::now();
    let fixtures = crate::fixtures::Fixtures::load_default()?;
    crate::select::prepare_entries(crate::frameworks::REGISTRY);
    let redis = crate::cmd::args::RedisArg { redis: None }.provide()?;
    let entries: Vec<&Entry> = crate::frameworks::REGISTRY.iter().collect();
    let options = Options::default();
    let sample = SAMPLE;
    let config = Config::new(std::sync::Arc::clone(&fixtures), redis.url()).with(options);
    let rows = crate::quick::run(&entries, &config, sample);
    if crate::interrupt::interrupted().load(std::sync::atomic::Ordering::Relaxed) {
        return Ok(None);
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
    Ok(Some(Run {
        rows,
        allocs,
        loopback,
        setup,
        hello,
        options,
        sample,
    }))
}

/// Writes the long table, the results file (for `framebench diff` against a later quick
/// compare, stamped with `window`) and the chart into `dir`: what was written (`what: path`),
/// and a line for each that was not.
fn write_files(
    run: &Run,
    long_table: &str,
    dir: &Path,
    window: Window,
) -> (Vec<String>, Vec<String>) {
    let long_path = dir.join("long.md");
    let chart_path = dir.join("summary.svg");
    let json_path = dir.join("results.json");
    let mut written = Vec::new();
    let mut lost = Vec::new();
    let mut note = |what: &str, path: &Path, r: anyhow::Result<()>| match r {
        Ok(()) => written.push(format!("{what}: {}", path.display())),
        Err(e) => lost.push(format!("{what} not written: {e:#}")),
    };
    note(
        "long table",
        &long_path,
        std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::write(&long_path, crate::generated::markdown(long_table)))
            .map_err(anyhow::Error::from),
    );
    note(
        "results (framebench diff reads them)",
        &json_path,
        run.results(window).write(&json_path),
    );
    note("chart", &chart_path, run.chart(&chart_path));
    (written, lost)
}

/// The screen file: the stamp, the commit and the window on lines of their own, then the screen
/// as a text block. The README quotes it whole but for the stamp (tests/testsuite/docs.rs).
fn screen_file(screen: &str, window: Window) -> String {
    crate::generated::markdown(&format!(
        "{}\n\n```text\n{}\n```\n",
        crate::provenance::Provenance::header(window),
        screen.trim_end_matches('\n')
    ))
}
