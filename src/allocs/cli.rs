//! `framebench allocs`: counts allocations per request for frameworks × scenarios × logging,
//! prints a table or writes JSON (`--json PATH`, `-` for stdout), and exits 1 with one line
//! when a cell fails the oracle or its repeats disagree. [`spawn`] runs it as a child process
//! for the quick compare.

use crate::table::{Align, Table};
use anyhow::Context;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};

use serde::{Deserialize, Serialize};

use crate::fixtures::Fixtures;
use crate::framework::{Config, Entry};
use crate::oracle::Scenario;

use super::Measured;

/// Repeats per cell unless `--repeats` says otherwise.
pub(crate) const REPEATS: u16 = 5;

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

/// What `--json` writes.
#[derive(Debug, Serialize, Deserialize)]
pub struct Report {
    /// Dispatches counted per cell.
    pub(crate) repeats: usize,
    /// Every cell, in registry × scenario × logging order.
    pub cells: Vec<Measured>,
}

impl Report {
    /// The results file `--json` writes: every cell's allocation calls (`alloc` + `realloc`)
    /// and bytes allocated as figures for `framebench diff`, and the whole report as its detail.
    pub(crate) fn results(&self) -> anyhow::Result<crate::results::Results> {
        use crate::results::{Figure, Metric};
        let figures = self
            .cells
            .iter()
            .filter_map(|c| c.counts.map(|n| (c, n)))
            .flat_map(|(c, n)| {
                let variant = format!("log={}", c.logging);
                [
                    (Metric::Allocs, (n.allocs + n.reallocs) as f64),
                    (Metric::Bytes, n.bytes_allocated as f64),
                ]
                .map(|(m, v)| Figure::count("allocs", &c.framework, &c.scenario, &variant, m, v))
            })
            .collect();
        let mut results = crate::results::Results::new("allocs", figures);
        results.detail = Some(serde_json::to_value(self)?);
        Ok(results)
    }

    /// The report inside a results file `allocs --json` wrote.
    pub fn from_results(results: crate::results::Results) -> anyhow::Result<Report> {
        anyhow::ensure!(
            results.command == "allocs",
            "a `{}` results file, not one of `framebench allocs`",
            results.command
        );
        let detail = results
            .detail
            .ok_or_else(|| anyhow::anyhow!("the allocs results file has no detail"))?;
        Ok(serde_json::from_value(detail)?)
    }
}

/// The in-process frameworks named, or all of them.
fn entries(names: &[String]) -> anyhow::Result<Vec<&'static Entry>> {
    crate::cli::frameworks(
        names,
        |e| e.in_process,
        "has no in-process path: its allocations cannot be counted here",
    )
}

/// The scenarios named, or every one without Redis.
fn scenarios(names: &[String]) -> anyhow::Result<Vec<&'static Scenario>> {
    if names.is_empty() {
        return Ok(super::scenarios().collect());
    }
    names
        .iter()
        .map(|n| match crate::cli::scenario(n)? {
            s if !s.needs_redis() => Ok(s),
            _ => Err(crate::error::usage(format!(
                "{n}: allocations are counted without Redis; pick another scenario"
            ))),
        })
        .collect()
}

/// Runs `framebench allocs`.
pub fn run(args: AllocsArgs) -> anyhow::Result<ExitCode> {
    if !super::installed() {
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
    let fixtures = Fixtures::load_default()?;
    let base = Config::new(fixtures, None);
    let mut cells = Vec::new();
    for entry in &entries {
        for scenario in &scenarios {
            for logging in &args.logging {
                cells.push(super::measure(
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
    let results = report.results()?;
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
    if failed.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    Err(anyhow::anyhow!(format!(
        "{} of {} cells not counted: {}",
        failed.len(),
        report.cells.len(),
        failed.join("; ")
    ),))
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
            None => [
                "FAIL".to_string(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ],
        };
        table.row(names.into_iter().chain(counts));
    }
    print!("{}", table.markdown_aligned());
}

/// Runs `framebench allocs --json -` as a child of this process (the same binary) for
/// `frameworks` with `logging`, and reads its cells. The child exits 1 when a cell fails; its
/// cells are read all the same, failures with their reason.
pub(crate) fn spawn(
    frameworks: &[&str],
    logging: crate::options::Logging,
    repeats: usize,
) -> anyhow::Result<Report> {
    let exe = std::env::current_exe()?;
    let out = Command::new(exe)
        .arg("allocs")
        .args(frameworks)
        .args(["--logging", &logging.to_string()])
        .args(["--repeats", &repeats.to_string(), "--json", "-"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().rev().find(|l| l.starts_with('{'));
    match line {
        Some(l) => Report::from_results(crate::results::Results::parse(l, "`framebench allocs`")?),
        None => anyhow::bail!(
            "`framebench allocs` wrote no cells ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    }
}
