//! The quick comparison `framebench` prints with no arguments: in-process time per request for
//! every framework × scenario, each response checked against the oracle before it is timed,
//! beside a short loopback load of the same cell by the driver ([`crate::driver`]), and the
//! allocations of one dispatch, counted by `framebench allocs` in a child process
//! ([`crate::allocs::cli::spawn`]) so that counting never shares a process with the timing.

use std::time::Duration;

use crate::allocs::cli::Report as Allocs;
use crate::check;
use crate::driver::cli::QuickLoopback;
use crate::driver::output::{bound_mark, kilo, per_req, us, BOUND_LEGEND};
use crate::driver::stats::{CellResult, Status};
use crate::env::Environment;
use crate::fixtures::Fixtures;
use crate::framework::{App, Config, Entry};
use crate::options::Options;
use crate::oracle::{self, SCENARIOS};

/// One in-process batch of the quick compare: five of them per cell, median taken.
pub const SAMPLE: Duration = Duration::from_millis(60);

/// The quick compare as a results file (`framebench diff` reads it): every in-process time,
/// the allocation counts, and every loopback rate. The times and rates carry no interval: the
/// batches' and passes' range is one process's, and two processes of one build differ by more
/// (docs/methodology.md, "Two builds' times"), so `diff` prints `≈` for them and compares the
/// counts exactly. `framebench ab` is the comparison of times.
pub fn results(
    rows: &[(&'static str, Vec<Cell>)],
    allocs: &Result<Allocs, String>,
    loopback: &[CellResult],
    setup: &QuickLoopback,
    options: Options,
) -> crate::results::Results {
    use crate::results::{Figure, Metric};
    let variant = options.label();
    let mut figures = Vec::new();
    for (name, cells) in rows {
        for (cell, s) in cells.iter().zip(SCENARIOS) {
            if let Cell::Time(t) = cell {
                let ns = t.median.as_secs_f64() * 1e9;
                figures.push(Figure::count(
                    "quick/in_process",
                    name,
                    s.name,
                    &variant,
                    Metric::Time,
                    ns,
                ));
            }
        }
    }
    if let Ok(a) = allocs {
        if let Ok(r) = a.results() {
            figures.extend(r.figures);
        }
    }
    let loopback_variant = format!("{variant},c{}", setup.connections);
    for c in loopback
        .iter()
        .filter(|c| c.status == Status::Ok && c.rps > 0.0)
    {
        figures.push(Figure::count(
            "quick/loopback",
            &c.target,
            &c.scenario,
            &loopback_variant,
            Metric::Rps,
            c.rps,
        ));
    }
    crate::results::Results::new("quick", figures)
}

/// One measured cell.
#[derive(Debug, Clone)]
pub enum Cell {
    /// Median time per request over the samples, with their spread.
    Time(Timed),
    /// The response did not match the oracle; not timed.
    Failed(String),
    /// The scenario cannot run here (the redis one without a Redis); why.
    Skipped(String),
}

/// Times `path` on `app`: calibrate a batch size worth about `sample` of work, then take
/// `samples` batches of pre-built requests ([`crate::bench::timed_batch`]) and return the
/// median time per request with the batches' spread. Only the dispatch calls are inside the
/// timed region.
pub fn time_per_request(
    app: &dyn App,
    path: &str,
    sample: Duration,
    samples: usize,
) -> anyhow::Result<Timed> {
    let batch = crate::bench::calibrate(sample, |n| crate::bench::timed_batch(app, path, n))?;
    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples {
        let t = crate::bench::timed_batch(app, path, batch)?;
        times.push(t.as_secs_f64() * 1e9 / batch as f64);
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    let spread = times.iter().map(|t| (t - median).abs()).fold(0.0, f64::max);
    Ok(Timed {
        median: Duration::from_secs_f64(median / 1e9),
        spread_pct: spread / median * 100.0,
    })
}

/// An in-process time: the median of the batches and how far the farthest batch lay from it.
#[derive(Debug, Clone, Copy)]
pub struct Timed {
    /// Median time per request.
    pub median: Duration,
    /// The largest distance of a batch from the median, in percent of it.
    pub spread_pct: f64,
}

/// Measures every in-process framework in `entries` on every scenario.
pub fn run(
    entries: &[&Entry],
    config: &Config,
    sample: Duration,
) -> Vec<(&'static str, Vec<Cell>)> {
    let mut rows = Vec::new();
    let stop = crate::tools::interrupted();
    for entry in entries.iter().filter(|e| e.in_process) {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        let cells = match entry.build(config) {
            Ok(app) => SCENARIOS
                .iter()
                .map(|s| match s.skip_reason(config) {
                    Some(why) => Cell::Skipped(why),
                    None => measure_cell(&*app, s, &config.fixtures, sample),
                })
                .collect(),
            Err(e) => vec![Cell::Failed(format!("{e:#}")); SCENARIOS.len()],
        };
        rows.push((entry.name, cells));
    }
    rows
}

fn measure_cell(
    app: &dyn App,
    s: &'static oracle::Scenario,
    fixtures: &Fixtures,
    sample: Duration,
) -> Cell {
    let verdict = s
        .expected(fixtures)
        .map_err(|e| format!("{e:#}"))
        .and_then(|exp| {
            check::in_process(app, s.path)
                .map_err(|e| format!("{e:#}"))
                .and_then(|got| exp.check(&got))
        });
    if let Err(e) = verdict {
        return Cell::Failed(e);
    }
    match time_per_request(app, s.path, sample, 5) {
        Ok(t) => Cell::Time(t),
        Err(e) => Cell::Failed(format!("{e:#}")),
    }
}

/// Prints in-process and loopback columns for every framework × scenario, with the
/// environment. Returns the number of failed cells.
pub fn print_both(
    rows: &[(&'static str, Vec<Cell>)],
    allocs: &Result<Allocs, String>,
    loopback: &[CellResult],
    setup: &QuickLoopback,
    options: Options,
    sample: Duration,
) -> usize {
    print_both_header(setup, options, sample);
    let mut notes = Notes::default();
    let names = crate::frameworks::REGISTRY
        .iter()
        .map(|e| e.name)
        .filter(|n| rows.iter().any(|(r, _)| r == n) || loopback.iter().any(|c| c.target == *n));
    for name in names {
        for (k, s) in SCENARIOS.iter().enumerate() {
            let cell = rows.iter().find(|(n, _)| *n == name).map(|(_, c)| &c[k]);
            let inproc =
                in_process_text(cell, &mut notes, || format!("{name} {} in-process", s.name));
            let allocs = allocs_text(allocs, name, s.name, &mut notes);
            let find = |target: &str| {
                loopback
                    .iter()
                    .find(|c| c.target == target && c.scenario == s.name)
            };
            let lb = find(name);
            let ratio = setup
                .of_reference
                .iter()
                .find(|r| r.target == name && r.scenario == s.name)
                .map(|r| &r.ratio);
            let [rps, of_raw, bound, user, sys, p99, cpu, rss] =
                loopback_texts(lb, ratio, &mut notes, || {
                    format!("{name} {} loopback", s.name)
                });
            println!(
                "| {name:<14} | {:<10} | {inproc:>13} | {allocs:>10} | {rps:>10} | {of_raw:>12} | {bound:<12} | {user:>9} | {sys:>9} | {p99:>10} | {cpu:>7} | {rss:>8} |",
                s.name
            );
        }
    }
    println!();
    println!("{BOUND_LEGEND}");
    notes.print()
}

/// The lines above the combined table: what was measured, how, and the table's head.
fn print_both_header(setup: &QuickLoopback, options: Options, sample: Duration) {
    let params = &setup.params;
    println!("framebench quick: every framework × scenario, in-process and over loopback");
    println!("environment: {}", Environment::current());
    println!(
        "options: {}; in-process: median time per request of 5 batches of ~{sample:?} (± the \
         farthest batch), one thread; \
         allocs/req: alloc calls of one dispatch (+ reallocs), every thread, `framebench allocs`",
        options.label(),
    );
    let pooled = if setup.pooled.is_empty() {
        String::new()
    } else {
        format!(
            " ({}: a pool of {} threads, one per connection, so the table compares their cost \
             per request and not their pool size)",
            setup.pooled.join(", "),
            setup.connections
        )
    };
    println!(
        "loopback: {} connections against a server with {} thread{}{pooled}; {:?} warmup + {:?} \
         closed loop per cell, best of {} passes spread over the column (one server per \
         framework for all its passes; srv rss: that server's peak up to the cell's last \
         pass), {}; of raw: the median over passes of req/s as a fraction of raw's in the same pass, \
         ± the larger distance to either end of its interval over the passes, `≈` where that \
         interval holds 1.00, `‡` above 1.00 beyond it; usr/sys: the server's CPU time per \
         request in user mode (its own code) and in the kernel (syscalls, TCP), from /proc",
        setup.connections,
        setup.threads,
        if setup.threads == 1 { "" } else { "s" },
        params.warmup,
        params.duration,
        setup.passes,
        params.pinning.label()
    );
    println!("every cell checked against the oracle first; full sweep: framebench --full (or framebench compare)");
    println!();
    println!(
        "| {:<14} | {:<10} | {:>13} | {:>10} | {:>10} | {:>12} | {:<12} | {:>9} | {:>9} | {:>10} | {:>7} | {:>8} |",
        "framework",
        "scenario",
        "in-process",
        "allocs/req",
        "loopback/s",
        "of raw",
        "bound",
        "usr/req",
        "sys/req",
        "p99",
        "srv cpu",
        "srv rss"
    );
    println!(
        "|{:-<16}|{:-<12}|{:-<14}:|{:-<11}:|{:-<11}:|{:-<13}:|{:-<14}|{:-<10}:|{:-<10}:|{:-<11}:|{:-<8}:|{:-<9}:|",
        "", "", "", "", "", "", "", "", "", "", "", ""
    );
}

/// What the combined table says under itself: why cells say `skip` (a missing optional tool),
/// once each, and every failure.
#[derive(Default)]
struct Notes {
    skipped: Vec<String>,
    failed: Vec<String>,
}

impl Notes {
    fn skip(&mut self, why: &str) {
        if !self.skipped.iter().any(|s| s == why) {
            self.skipped.push(why.to_owned());
        }
    }

    /// Prints the notes; returns the number of failures.
    fn print(&self) -> usize {
        for why in &self.skipped {
            println!("skip: {why}");
        }
        for f in &self.failed {
            println!("FAIL {f}");
        }
        self.failed.len()
    }
}

/// The in-process column of one row; `what` names the cell in a failure note.
fn in_process_text(cell: Option<&Cell>, notes: &mut Notes, what: impl Fn() -> String) -> String {
    match cell {
        None => "–".to_owned(),
        Some(Cell::Time(t)) => format!("{} ±{:.0}%", format_time(t.median), t.spread_pct),
        Some(Cell::Skipped(why)) => {
            notes.skip(why);
            "skip".to_owned()
        }
        Some(Cell::Failed(e)) => {
            notes.failed.push(format!("{}: {e}", what()));
            "FAIL".to_owned()
        }
    }
}

/// The allocs/req column of one row: alloc calls, and `+N` reallocations when there are any.
fn allocs_text(
    allocs: &Result<Allocs, String>,
    name: &str,
    scenario: &str,
    notes: &mut Notes,
) -> String {
    let allocs = match allocs {
        Ok(a) => a,
        Err(why) => {
            notes.skip(why);
            return "–".to_owned();
        }
    };
    let Some(cell) = allocs
        .cells
        .iter()
        .find(|c| c.framework == name && c.scenario == scenario)
    else {
        return "–".to_owned();
    };
    match (&cell.counts, &cell.error) {
        (Some(c), _) if c.reallocs > 0 => format!("{} +{}", c.allocs, c.reallocs),
        (Some(c), _) => c.allocs.to_string(),
        (None, e) => {
            let why = e.as_deref().unwrap_or("not counted");
            notes
                .failed
                .push(format!("{name} {scenario} allocs/req: {why}"));
            "FAIL".to_owned()
        }
    }
}

/// The loopback columns of one row: requests per second, as a fraction of raw's, whose rate it
/// is ([`crate::driver::stats::Bound`]), the server's user and system CPU time per request,
/// p99, server CPU and peak RSS.
fn loopback_texts(
    cell: Option<&CellResult>,
    of_raw: Option<&crate::interval::Estimate>,
    notes: &mut Notes,
    what: impl Fn() -> String,
) -> [String; 8] {
    let dash = || "–".to_owned();
    match cell {
        None => std::array::from_fn(|_| dash()),
        Some(CellResult {
            status: Status::Skipped(why),
            ..
        }) => {
            notes.skip(why);
            std::array::from_fn(|i| if i == 0 { "skip".to_owned() } else { dash() })
        }
        Some(c) if c.status == Status::Ok => [
            kilo(c.rps),
            of_raw.map_or_else(dash, |r| {
                let text = crate::interval::ratio_text(r);
                if r.separated(1.0) && r.point > 1.0 {
                    format!("{text} ‡")
                } else {
                    text
                }
            }),
            bound_mark(c).to_owned(),
            per_req(c.server_user_us_per_req),
            per_req(c.server_sys_us_per_req),
            us(c.latency.p99_us),
            c.server_cpu_pct.map_or_else(dash, |v| format!("{v:.0}%")),
            c.server_peak_rss
                .map_or_else(dash, |v| format!("{:.1} MB", v as f64 / 1e6)),
        ],
        Some(c) => {
            notes.failed.push(format!("{}: {:?}", what(), c.status));
            std::array::from_fn(|i| {
                if i == 0 {
                    c.status.short().to_owned()
                } else {
                    dash()
                }
            })
        }
    }
}

/// `1.23 µs`, `456 ns`.
pub fn format_time(t: Duration) -> String {
    let ns = t.as_secs_f64() * 1e9;
    if ns >= 1000.0 {
        format!("{:.2} µs", ns / 1000.0)
    } else {
        format!("{ns:.0} ns")
    }
}
