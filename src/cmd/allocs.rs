//! `framebench allocs`: counts allocations per request for frameworks × scenarios × logging,
//! prints a table or writes JSON (`--json PATH`, `-` for stdout), and exits 1 with one line
//! when a cell fails the oracle or its repeats disagree.

use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::allocs::report::{Report, REPEATS};
use crate::fixtures::Fixtures;
use crate::framework::{Config, Entry};
use crate::oracle::Scenario;
use crate::table::{Align, Table};

/// `framebench allocs`.
#[derive(clap::Args)]
pub struct AllocsArgs {
    /// Frameworks to count (default: every one with an in-process path).
    pub(crate) frameworks: Vec<String>,
    /// Scenarios, comma-separated (default: every one that runs without Redis).
    #[arg(long, value_delimiter = ',')]
    pub(crate) scenarios: Vec<String>,
    /// Logging variants, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [crate::options::Logging::Off, crate::options::Logging::Sink])]
    pub(crate) logging: Vec<crate::options::Logging>,
    /// Dispatches counted per cell; every one must count the same.
    #[arg(long, default_value_t = REPEATS, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub(crate) repeats: u16,
    /// Write the cells as JSON to this file (`-`: to stdout, instead of the table), e.g.
    /// `target/allocs/allocs.json`, which `framebench report` reads.
    #[arg(long, value_name = "PATH")]
    pub(crate) json: Option<PathBuf>,
    /// Also write the counts in Bencher Metric Format (for `bencher run --adapter json`).
    #[arg(long, value_name = "PATH")]
    pub(crate) bmf: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) baselines: crate::results::BaselineArgs,
}

/// The in-process frameworks named, or all of them.
fn entries(names: &[String]) -> anyhow::Result<Vec<&'static Entry>> {
    crate::select::frameworks(
        names,
        |e| e.in_process,
        "has no in-process path: its allocations cannot be counted here",
    )
}

/// The scenarios named, or every one without Redis.
fn scenarios(names: &[String]) -> anyhow::Result<Vec<&'static Scenario>> {
    if names.is_empty() {
        return Ok(crate::allocs::scenarios().collect());
    }
    names
        .iter()
        .map(|n| match crate::select::scenario(n)? {
            s if !s.needs_redis() => Ok(s),
            _ => Err(crate::error::usage(format!(
                "{n}: allocations are counted without Redis; pick another scenario"
            ))),
        })
        .collect()
}

/// Runs `framebench allocs`.
pub fn run(args: AllocsArgs) -> anyhow::Result<ExitCode> {
    if !crate::allocs::installed() {
        return Err(anyhow::anyhow!("this binary's global allocator is not framebench::allocs::Global: nothing can be counted",
        ));
    }
    args.baselines.check("allocs")?;
    if args.json.as_deref() == Some(std::path::Path::new("-"))
        && (args.baselines.baseline.is_some() || args.baselines.save_baseline.is_some())
    {
        return Err(crate::error::usage(
            "--json - writes only JSON to stdout: use --json PATH with a baseline",
        ));
    }
    let entries = entries(&args.frameworks)?;
    let scenarios = scenarios(&args.scenarios)?;
    let started = std::time::SystemTime::now();
    let fixtures = Fixtures::load_default()?;
    let base = Config::new(fixtures, None);
    let mut cells = Vec::new();
    for entry in &entries {
        // A scenario the framework cannot serve through its own API has no cell (`list` and
        // `check` say why), nor has `upload_chunked` in-process.
        for scenario in scenarios
            .iter()
            .filter(|s| crate::cell::supported(entry, s, true).is_ok())
        {
            for logging in &args.logging {
                cells.push(crate::allocs::measure(
                    entry,
                    &base,
                    scenario,
                    *logging,
                    args.repeats.into(),
                ));
            }
        }
    }
    let report = Report {
        repeats: args.repeats.into(),
        cells,
    };
    let results = report.results(crate::provenance::Window::since(started))?;
    if let Some(p) = &args.bmf {
        results.write_bmf(p)?;
    }
    match args.json.as_deref() {
        Some(p) if p.as_os_str() == "-" => {
            let text = serde_json::to_string(&results).context("cannot serialize the results")?;
            println!("{text}");
        }
        Some(p) => {
            results.write(p)?;
            print_table(&report);
            println!("wrote {}", p.display());
        }
        None => print_table(&report),
    }
    args.baselines.apply(&results)?;
    let failed: Vec<String> = report
        .cells
        .iter()
        .filter_map(|c| {
            c.error
                .as_ref()
                .map(|e| format!("{} {} log={}: {e}", c.framework, c.scenario, c.logging))
        })
        .collect();
    super::cells_failed(&failed, report.cells.len(), "counted")
}

/// One row per cell.
fn print_table(report: &Report) {
    println!(
        "framebench allocs: one in-process dispatch after two warm-up requests, io memory, every \
         thread counted; each cell repeated {} times, all equal",
        report.repeats
    );
    let mut table = Table::new([
        ("framework", Align::Left),
        ("scenario", Align::Left),
        ("log", Align::Left),
        ("allocs", Align::Right),
        ("reallocs", Align::Right),
        ("deallocs", Align::Right),
        ("B alloc", Align::Right),
        ("B freed", Align::Right),
    ]);
    for c in &report.cells {
        let names = [
            c.framework.to_string(),
            c.scenario.to_string(),
            c.logging.to_string(),
        ];
        let counts = match c.counts {
            Some(n) => [
                n.allocs,
                n.reallocs,
                n.deallocs,
                n.bytes_allocated,
                n.bytes_deallocated,
            ]
            .map(|v| v.to_string()),
            None => std::array::from_fn(|i| if i == 0 { "FAIL".into() } else { String::new() }),
        };
        table.row(names.into_iter().chain(counts));
    }
    print!("{}", table.markdown_aligned());
}
