//! `framebench time`: the times compared across frameworks, taken in interleaved rounds
//! (`crate::timing`): in-process by default, over loopback with `--loopback`. Prints one table
//! per scenario with shared ranks, and writes a `framebench-results` file (`--json`) that
//! `framebench diff` and `framebench report` read.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use crate::fixtures::Fixtures;
use crate::framework::{Config, Entry};
use crate::options::{Io, Logging, Options};
use crate::results::{Figure, Metric, Results};
use crate::timing::cells::{self, Plan};
use crate::timing::{CellRounds, Detail, BATCH_MS, MIN_ROUNDS, ROUNDS};

/// `framebench time`.
#[derive(clap::Args)]
pub struct TimeArgs {
    /// Frameworks, comma-separated (default: every one with the path measured). The floor
    /// (`null` in-process, `raw` over loopback) is always added: every ratio is taken to it.
    #[arg(long, value_delimiter = ',')]
    pub(crate) frameworks: Vec<String>,
    /// Scenarios, comma-separated (default: all; redis needs `redis-server`).
    #[arg(long, value_delimiter = ',')]
    pub(crate) scenarios: Vec<String>,
    /// Logging variants, comma-separated (default: off,sink in-process; off over loopback).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub(crate) logging: Vec<Logging>,
    /// File I/O variants, comma-separated; disk applies to the routes that read a file
    /// (default: memory,disk in-process; memory over loopback).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub(crate) io: Vec<Io>,
    /// Rounds (at least 6: fewer cannot bound a median at 95 %).
    #[arg(long, default_value_t = ROUNDS, value_parser = clap::value_parser!(u16).range(i64::from(MIN_ROUNDS)..=1000))]
    pub(crate) rounds: u16,
    /// The length of one cell's batch in a round, in ms.
    #[arg(long, value_name = "MS", default_value_t = BATCH_MS, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub(crate) batch_ms: u16,
    /// Time one keep-alive connection's round trip to each framework's server (one thread,
    /// pinned to one core, the client on another) instead of the in-process dispatch.
    #[arg(long)]
    pub(crate) loopback: bool,
    /// Write the results to this file (`-`: stdout, instead of the table), e.g.
    /// `target/time/in_process.json`, which `framebench report` reads.
    #[arg(long, value_name = "PATH")]
    pub(crate) json: Option<PathBuf>,
}

/// Runs `framebench time`.
pub fn run(args: TimeArgs) -> anyhow::Result<ExitCode> {
    let entries = entries(&args)?;
    let scenarios = crate::select::served_scenarios(&args.scenarios, false)?;
    let variants = variants(&args);
    let started = std::time::SystemTime::now();
    let rounds = usize::from(args.rounds);
    let batch = std::time::Duration::from_millis(args.batch_ms.into());
    let stop = crate::interrupt::interrupted();
    let interrupted = || stop.load(std::sync::atomic::Ordering::Relaxed);
    let fixtures = Fixtures::load_default()?;
    let (bench, floor, pinning, cells) = if args.loopback {
        let plan = cells::plan(&entries, &scenarios, &variants, false);
        let pinning = crate::pinning::Pinning::one_core_each();
        if !pinning.client_cpus.is_empty() {
            crate::pinning::pin_current_thread(&pinning.client_cpus);
        }
        let label = pinned_label(&pinning);
        eprintln!("{}", announce(&plan, rounds, batch, &label));
        let out = cells::loopback(
            &plan,
            &fixtures,
            rounds,
            batch,
            &pinning.server_cpus,
            &interrupted,
        )?;
        ("time/loopback", "raw", label, out)
    } else {
        let redis = crate::redis::provide(None)?;
        let config = Config::new(Arc::clone(&fixtures), redis.url());
        let plan = cells::plan(&entries, &scenarios, &variants, true);
        let label = format!(
            "in-process, this thread on CPUs {}",
            crate::pinning::format_cpus(&crate::pinning::allowed_cpus())
        );
        eprintln!("{}", announce(&plan, rounds, batch, &label));
        let out = cells::in_process(&plan, &config, rounds, batch, &interrupted);
        ("time/in_process", "null", label, out)
    };
    let detail = Detail {
        rounds,
        batch_ms: batch.as_secs_f64() * 1e3,
        floor: floor.to_owned(),
        order: "every cell once per round; rounds in pairs, an order and its reverse, each \
                pair's order the last pair's rotated by one"
            .into(),
        pinning,
        cells,
    };
    let results = results_of(bench, &detail, started);
    let to_stdout = args.json.as_deref() == Some(std::path::Path::new("-"));
    if to_stdout {
        println!("{}", serde_json::to_string_pretty(&results)?);
    } else {
        print!("{}", table(&detail));
    }
    if let Some(path) = args.json.as_deref().filter(|_| !to_stdout) {
        results.write(path)?;
        println!("wrote {}", path.display());
    }
    if interrupted() {
        eprintln!("interrupted: the rounds measured so far are above");
        return Ok(ExitCode::from(130));
    }
    let failed: Vec<String> = detail
        .cells
        .iter()
        .filter_map(|c| {
            c.error
                .as_ref()
                .filter(|e| !e.starts_with("skipped"))
                .map(|e| format!("{} {} {}: {e}", c.framework, c.scenario, c.variant))
        })
        .collect();
    super::cells_failed(&failed, detail.cells.len(), "timed")
}

/// The frameworks named, or every one with the path measured; the floor added when missing.
fn entries(args: &TimeArgs) -> anyhow::Result<Vec<&'static Entry>> {
    let (can, cannot): (fn(&Entry) -> bool, _) = if args.loopback {
        (
            |e| e.loopback,
            "has no server: it cannot be timed over loopback",
        )
    } else {
        (
            |e| e.in_process,
            "has no in-process path: time it with --loopback",
        )
    };
    let mut entries = crate::select::frameworks(&args.frameworks, can, cannot)?;
    let floor = if args.loopback {
        crate::frameworks::reference()
    } else {
        crate::frameworks::floor()
    };
    if let Some(f) = floor.filter(|f| !entries.iter().any(|e| e.name == f.name)) {
        entries.insert(0, f);
    }
    Ok(entries)
}

/// The variants asked for, or the mode's defaults.
fn variants(args: &TimeArgs) -> Vec<Options> {
    let (logging, io) = match (args.loopback, &args.logging[..], &args.io[..]) {
        (true, [], []) => (vec![Logging::Off], vec![Io::Memory]),
        (false, l, i) => (
            if l.is_empty() {
                vec![Logging::Off, Logging::Sink]
            } else {
                l.to_vec()
            },
            if i.is_empty() {
                vec![Io::Memory, Io::Disk]
            } else {
                i.to_vec()
            },
        ),
        (true, l, i) => (
            if l.is_empty() {
                vec![Logging::Off]
            } else {
                l.to_vec()
            },
            if i.is_empty() {
                vec![Io::Memory]
            } else {
                i.to_vec()
            },
        ),
    };
    let mut out = Vec::new();
    for l in &logging {
        for i in &io {
            out.push(Options {
                logging: *l,
                io: *i,
                ..Options::default()
            });
        }
    }
    out
}

fn pinned_label(p: &crate::pinning::Pinning) -> String {
    if p.server_cpus.is_empty() {
        "loopback, one thread per server, not pinned (one CPU)".into()
    } else {
        format!(
            "loopback, one thread per server pinned to CPU {}, the client to CPU {}",
            crate::pinning::format_cpus(&p.server_cpus),
            crate::pinning::format_cpus(&p.client_cpus)
        )
    }
}

/// The line printed before the rounds start.
fn announce(plan: &[Plan], rounds: usize, batch: std::time::Duration, pinning: &str) -> String {
    format!(
        "framebench time: {} cells × {rounds} interleaved rounds of one {} ms batch each \
         (in pairs, an order and its reverse, rotated each pair), about {} s; {pinning}",
        plan.len(),
        batch.as_millis(),
        (plan.len() * (rounds + 1) * batch.as_millis() as usize).div_ceil(1000)
    )
}

/// The results file: one `time` figure per timed cell, and the rounds themselves in `detail`.
fn results_of(bench: &str, detail: &Detail, started: std::time::SystemTime) -> Results {
    let figures = detail
        .cells
        .iter()
        .filter_map(|c| {
            let t = c.time?;
            Some(Figure::timed(
                bench,
                &c.framework,
                &c.scenario,
                &c.variant,
                Metric::Time,
                t,
            ))
        })
        .collect();
    let mut results = Results::new(
        "time",
        figures,
        crate::provenance::Provenance::here(crate::provenance::Window::since(started)),
    );
    results.detail = serde_json::to_value(detail).ok();
    results
}

/// The terminal table: per scenario and variant, the cells fastest first with their shared
/// rank, median and interval, and ratio to the floor.
pub(crate) fn table(detail: &Detail) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} rounds; median per request with its 95 % interval over the rounds; × {}: the ratio \
         to {} within each round; a rank is shared (=) unless the rounds put two cells more than 5 % apart",
        detail.rounds, detail.floor, detail.floor
    );
    let _ = writeln!(out, "{}", detail.pinning);
    let median = |c: &CellRounds| c.time.map_or(f64::INFINITY, |t| t.point);
    let mut groups: Vec<(&str, &str)> = Vec::new();
    for c in &detail.cells {
        if !groups.contains(&(&c.scenario, &c.variant)) {
            groups.push((&c.scenario, &c.variant));
        }
    }
    for (scenario, variant) in groups {
        let cells: Vec<&CellRounds> = detail
            .cells
            .iter()
            .filter(|c| c.scenario == scenario && c.variant == variant)
            .collect();
        let ranked: Vec<&CellRounds> = cells.iter().copied().filter(|c| c.time.is_some()).collect();
        let rounds: Vec<&[f64]> = ranked.iter().map(|c| &c.ns[..]).collect();
        let ranks = crate::timing::shared_ranks(&rounds);
        let mut rows: Vec<(usize, &CellRounds)> = ranks.into_iter().zip(ranked).collect();
        rows.sort_by(|a, b| a.0.cmp(&b.0).then(median(a.1).total_cmp(&median(b.1))));
        let _ = writeln!(out, "\n{scenario} ({variant})");
        let _ = writeln!(
            out,
            "{:>5}  {:<14} {:>10} {:>22} {:>20}",
            "rank",
            "framework",
            "time",
            "95 % interval",
            format!("× {}", detail.floor)
        );
        for (rank, c) in &rows {
            let t = c.time.expect("ranked cells are timed");
            let shared = rows.iter().filter(|(r, _)| r == rank).count() > 1;
            let rank = format!("{}{rank}", if shared { "=" } else { "" });
            let vs = c.vs_floor.map_or("–".into(), |r| {
                format!("{:.2} ({:.2}–{:.2})", r.point, r.lo, r.hi)
            });
            let _ = writeln!(
                out,
                "{rank:>5}  {:<14} {:>10} {:>22} {vs:>20}",
                c.framework,
                crate::units::fmt_ns(t.point),
                format!(
                    "{} – {}",
                    crate::units::fmt_ns(t.lo),
                    crate::units::fmt_ns(t.hi)
                ),
            );
        }
        for c in cells.iter().filter(|c| c.time.is_none()) {
            let why = c.error.as_deref().unwrap_or("no round measured");
            let _ = writeln!(out, "{:>5}  {:<14} {why}", "–", c.framework);
        }
    }
    out
}
