//! The quick comparison `framebench` prints with no arguments: in-process time per request for
//! every framework × scenario, each response checked against the oracle before it is timed,
//! beside a short loopback load of the same cell by the driver ([`crate::driver`]), and the
//! allocations of one dispatch, counted by `framebench allocs` in a child process
//! ([`crate::allocs::report::spawn`]) so that counting never shares a process with the timing.
//!
//! The whole command lives here: [`command`] orchestrates it within its time budget, this file
//! times the in-process cells and prints every view, and [`loopback`] runs the loopback cells.

mod hello;
pub(crate) mod loopback;
mod passes;

use std::fmt::Write as _;
use std::time::Duration;

use crate::allocs::report::Report as Allocs;
use crate::cell::CellError;
use crate::chart::{Bar, Kind, Panel};
use crate::driver::output::{bound_mark, BOUND_LEGEND};
use crate::driver::stats::{CellResult, Status};
use crate::env::Environment;
use crate::fixtures::Fixtures;
use crate::framework::{App, Config, Entry};
use crate::options::Options;
use crate::oracle::{self, SCENARIOS};
use crate::table::{Align, Table};
use crate::units::{kilo, per_req, sig3, us};
use loopback::QuickLoopback;

/// One in-process batch of the quick compare: five of them per cell, median taken.
pub(crate) const SAMPLE: Duration = Duration::from_millis(60);

/// One measured cell.
#[derive(Debug, Clone)]
pub(crate) enum Cell {
    /// Median time per request over the samples, with their spread.
    Time(Timed),
    /// Not timed: the app did not build, its answer differed from the oracle, or the scenario
    /// cannot run here (the redis one without a Redis, [`CellError::Skipped`]).
    Failed(CellError),
}

/// Times `path` on `app`: calibrate a batch size worth about `sample` of work, then take
/// `samples` batches of pre-built requests ([`crate::bench::timed_batch`]) and return the
/// median time per request with the batches' spread. Only the dispatch calls are inside the
/// timed region.
pub(crate) fn time_per_request(
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
pub(crate) struct Timed {
    /// Median time per request.
    pub(crate) median: Duration,
    /// The largest distance of a batch from the median, in percent of it.
    pub(crate) spread_pct: f64,
}

/// Measures every in-process framework in `entries` on every scenario.
pub(crate) fn run(
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
                    Some(why) => Cell::Failed(CellError::Skipped(why)),
                    None => measure_cell(&*app, s, &config.fixtures, sample),
                })
                .collect(),
            Err(e) => vec![Cell::Failed(CellError::build(&e)); SCENARIOS.len()],
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
    if let Err(e) = crate::cell::verify(app, fixtures, s) {
        return Cell::Failed(e);
    }
    match time_per_request(app, s.path, sample, 5) {
        Ok(t) => Cell::Time(t),
        Err(e) => Cell::Failed(CellError::io(&e)),
    }
}

/// Everything one quick compare measured: the in-process rows, the allocation counts, the
/// loopback cells and how they were run.
pub(crate) struct Run {
    /// In-process cells per framework, in the oracle's scenario order.
    pub(crate) rows: Vec<(&'static str, Vec<Cell>)>,
    /// The allocation counts of `framebench allocs`, or why there are none.
    pub(crate) allocs: Result<Allocs, String>,
    /// The loopback cells.
    pub(crate) loopback: Vec<CellResult>,
    /// How the loopback cells were run.
    pub(crate) setup: QuickLoopback,
    /// The hello cells past saturation: churn, the bill and the standing cost.
    pub(crate) hello: hello::Hello,
    /// Logging, io and threads.
    pub(crate) options: Options,
    /// The in-process batch length.
    pub(crate) sample: Duration,
}

/// Width of the compact view's first column, and of each scenario's column.
const NAME_WIDTH: usize = 13;
const COLUMN_WIDTH: usize = 11;
/// The compact view's legend and notes wrap at this width (its table is 97 columns).
pub(crate) const SCREEN_WIDTH: usize = 100;

impl Run {
    /// The frameworks with a row, in registry order.
    fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        crate::frameworks::REGISTRY
            .iter()
            .map(|e| e.name)
            .filter(|n| {
                self.rows.iter().any(|(r, _)| r == n)
                    || self.loopback.iter().any(|c| c.target == *n)
            })
    }

    /// The in-process cell of `name` × scenario `k`.
    fn in_process(&self, name: &str, k: usize) -> Option<&Cell> {
        self.rows
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, c)| &c[k])
    }

    /// The loopback cell of `name` × `scenario`.
    fn loopback(&self, name: &str, scenario: &str) -> Option<&CellResult> {
        self.loopback
            .iter()
            .find(|c| c.target == name && c.scenario == scenario)
    }

    /// The in-process time of `name` × scenario `k` in µs, when measured.
    fn time_us(&self, name: &str, k: usize) -> Option<f64> {
        match self.in_process(name, k) {
            Some(Cell::Time(t)) => Some(t.median.as_secs_f64() * 1e6),
            _ => None,
        }
    }

    /// The loopback rate of `name` × `scenario` in req/s and whether it is the server's own
    /// (the server was saturated), when measured.
    fn rate(&self, name: &str, scenario: &str) -> Option<(f64, bool)> {
        self.loopback(name, scenario)
            .filter(|c| c.status == Status::Ok && c.rps > 0.0)
            .map(|c| (c.rps, bound_mark(c).is_empty()))
    }

    /// The best framework of scenario `k`: the lowest in-process time, and the highest
    /// loopback rate among the cells whose server was saturated. Floors and the reference are
    /// not frameworks and never best.
    fn best(&self, k: usize) -> (Option<&'static str>, Option<&'static str>) {
        let scenario = SCENARIOS[k].name;
        let frameworks = || self.names().filter(|n| Kind::of(n) == Kind::Framework);
        let fastest = frameworks()
            .filter_map(|n| Some((n, self.time_us(n, k)?)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(n, _)| n);
        let busiest = frameworks()
            .filter_map(|n| match self.rate(n, scenario) {
                Some((rps, true)) => Some((n, rps)),
                _ => None,
            })
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(n, _)| n);
        (fastest, busiest)
    }

    /// The first screen: frameworks as rows, scenarios as columns, each cell the in-process
    /// time per request in µs and the loopback rate in thousands of requests per second, `*`
    /// beside the best framework of the column and `~` beside a rate that is not the server's
    /// own. The floors and the reference follow the frameworks, under a rule. `files` names
    /// where the long table, the results file and the chart went, and `notes` are the long
    /// table's ([`Long::notes`]). The table is 97 columns wide; the text around it wraps at
    /// [`SCREEN_WIDTH`].
    pub(crate) fn compact(&self, files: &str, notes: &str) -> String {
        let mut out = String::new();
        out.push_str(&wrap(
            &format!("framebench quick · {}", Environment::current()),
            SCREEN_WIDTH,
        ));
        out.push('\n');
        let mut head = format!("{:<NAME_WIDTH$}", "");
        let mut units = format!("{:<NAME_WIDTH$}", "framework");
        for s in SCENARIOS {
            let _ = write!(head, " {:^COLUMN_WIDTH$}", s.name);
            let _ = write!(units, " {:>4}  {:>4} ", "µs", "k/s");
        }
        let _ = writeln!(out, "{}\n{}", head.trim_end(), units.trim_end());
        let best: Vec<_> = (0..SCENARIOS.len()).map(|k| self.best(k)).collect();
        let row = |out: &mut String, name: &str| {
            let mut line = format!("{name:<NAME_WIDTH$}");
            for (k, s) in SCENARIOS.iter().enumerate() {
                let time = match self.in_process(name, k) {
                    Some(Cell::Time(t)) => sig3(t.median.as_secs_f64() * 1e6),
                    Some(Cell::Failed(CellError::Skipped(_))) => "skip".into(),
                    Some(Cell::Failed(_)) => "FAIL".into(),
                    None => "–".into(),
                };
                let time_mark = if best[k].0 == Some(name) { "*" } else { " " };
                let (rate, rate_mark) = match (self.loopback(name, s.name), self.rate(name, s.name))
                {
                    (_, Some((rps, own))) => (
                        sig3(rps / 1e3),
                        if !own {
                            "~"
                        } else if best[k].1 == Some(name) {
                            "*"
                        } else {
                            " "
                        },
                    ),
                    (Some(c), None) if matches!(c.status, Status::Skipped(_)) => {
                        ("skip".into(), " ")
                    }
                    (Some(c), None) => (c.status.short().chars().take(5).collect(), " "),
                    (None, None) => ("–".into(), " "),
                };
                let _ = write!(line, " {time:>4}{time_mark}{rate:>5}{rate_mark}");
            }
            let _ = writeln!(out, "{}", line.trim_end());
        };
        let (frameworks, others): (Vec<&str>, Vec<&str>) =
            self.names().partition(|n| Kind::of(n) == Kind::Framework);
        for name in &frameworks {
            row(&mut out, name);
        }
        if !others.is_empty() {
            let _ = writeln!(
                out,
                "{:-<width$}",
                "-- floors and reference, not frameworks ",
                width = NAME_WIDTH + SCENARIOS.len() * (COLUMN_WIDTH + 1)
            );
            for name in &others {
                row(&mut out, name);
            }
        }
        // The best per column once more, in words: a name does not fit a column.
        type Pick = fn(&(Option<&'static str>, Option<&'static str>)) -> Option<&'static str>;
        let picks: [(&str, Pick); 2] = [
            ("fastest in-process (µs)", |b| b.0),
            ("most req/s (k/s)", |b| b.1),
        ];
        for (title, pick) in picks {
            let mut by: Vec<(&str, Vec<&str>)> = Vec::new();
            for (b, s) in best.iter().zip(SCENARIOS) {
                let Some(name) = pick(b) else {
                    continue;
                };
                match by.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, scenarios)) => scenarios.push(s.name),
                    None => by.push((name, vec![s.name])),
                }
            }
            let list: Vec<String> = by
                .iter()
                .map(|(n, scenarios)| format!("{n} in {}", scenarios.join(", ")))
                .collect();
            out.push_str(&wrap(
                &format!(
                    "{title}: {}",
                    if list.is_empty() {
                        "–".to_owned()
                    } else {
                        list.join("; ")
                    }
                ),
                SCREEN_WIDTH,
            ));
        }
        out.push('\n');
        out.push_str(&self.hello_compact());
        let setup = &self.setup;
        let legend = format!(
            "µs: in-process time per request, median of 5 batches, one thread, no socket. \
             k/s: thousands of requests per second over loopback, {} connections, server {} \
             thread{}, {}. *: the best framework in the column (floors and raw are not \
             frameworks). ~: the server was not saturated, so the rate is not its own \
             (client-bound or unsat in the long table). \
             Every cell was checked against the oracle first. Allocations, CPU per request, \
             p99, the ratio to raw and the marks explained: the long table.",
            setup.connections,
            setup.threads,
            if setup.threads == 1 { "" } else { "s" },
            setup.params.pinning.label(),
        );
        out.push_str(&wrap(&legend, SCREEN_WIDTH));
        if let Some(pointer) = scale_pointer(setup.threads, crate::pinning::allowed_cpus().len()) {
            out.push_str(&wrap(&pointer, SCREEN_WIDTH));
        }
        out.push_str(&wrap(files, SCREEN_WIDTH));
        out.push_str(notes);
        out
    }

    /// The summary chart: per scenario, in-process time per request (left) and loopback
    /// requests per second (right), sorted, best on top.
    pub(crate) fn chart(&self, path: &std::path::Path) -> anyhow::Result<()> {
        let mut panels = Vec::new();
        for (k, s) in SCENARIOS.iter().enumerate() {
            let times = self
                .names()
                .filter_map(|n| Some(Bar::new(n, self.time_us(n, k)? * 1e3, None)))
                .collect();
            panels.push(Panel {
                title: format!("{}: in-process time per request", s.name),
                axis: "median of 5 batches, one thread (lower is better)".into(),
                higher_is_better: false,
                format: crate::units::fmt_ns,
                bars: times,
            });
            let rates = self
                .names()
                .filter_map(|n| {
                    let (rps, own) = self.rate(n, s.name)?;
                    Some(rate_bar(n, rps, own))
                })
                .collect();
            panels.push(Panel {
                title: format!("{}: requests per second over loopback", s.name),
                axis: format!(
                    "{} connections, server {} thread(s) (higher is better)",
                    self.setup.connections, self.setup.threads
                ),
                higher_is_better: true,
                format: |v| kilo(v),
                bars: rates,
            });
        }
        // The hello cells past saturation: the churn rate beside the bill.
        let churn = self
            .hello_names()
            .filter_map(|n| {
                let c = self.hello.churn(n).filter(|c| c.status == Status::Ok)?;
                Some(rate_bar(n, c.rps, bound_mark(c).is_empty()))
            })
            .collect();
        panels.push(Panel {
            title: format!(
                "hello: req/s with a new connection every {} requests",
                hello::CHURN_REQUESTS
            ),
            axis: format!(
                "{} connections, closed loop (higher is better)",
                self.hello.connections
            ),
            higher_is_better: true,
            format: |v| kilo(v),
            bars: churn,
        });
        let bill = self
            .hello_names()
            .filter_map(|n| {
                let us = hello::cpu_us_per_request(self.hello.bill(n)?).ok()?;
                Some(Bar::new(n, us * 1e3, None))
            })
            .collect();
        panels.push(Panel {
            title: format!(
                "hello: server CPU time per request at {:.0} k req/s",
                hello::BILL_RATE / 1e3
            ),
            axis: "user + system, open loop (lower is better)".into(),
            higher_is_better: false,
            format: crate::units::fmt_ns,
            bars: bill,
        });
        crate::chart::draw(path, &panels, 2)
    }

    /// The quick compare as a results file (`framebench diff` reads it): every in-process time,
    /// the allocation counts, and every loopback rate. The times and rates carry no interval: the
    /// batches' and passes' range is one process's, and two processes of one build differ by more
    /// (docs/methodology/README.md, "Two builds' times"), so `diff` prints `≈` for them and compares the
    /// counts exactly. `framebench ab` is the comparison of times.
    pub(crate) fn results(&self) -> crate::results::Results {
        use crate::results::{Figure, Metric};
        let Run {
            rows,
            allocs,
            loopback,
            setup,
            options,
            ..
        } = self;
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
        let hello = &self.hello;
        let hello_variant = |what: String| format!("{variant},c{},{what}", hello.connections);
        for c in hello.churn.iter().filter(|c| c.status == Status::Ok) {
            figures.push(Figure::count(
                "quick/churn",
                &c.target,
                &c.scenario,
                &hello_variant(format!("rpc{}", hello::CHURN_REQUESTS)),
                Metric::Rps,
                c.rps,
            ));
        }
        // The bill and the standing cost are CPU times: ns per request, ns per second.
        for (bench, cells, value, rate) in [
            (
                "quick/bill",
                &hello.bill,
                hello::cpu_us_per_request as fn(&CellResult) -> Result<f64, String>,
                hello::BILL_RATE,
            ),
            (
                "quick/standing",
                &hello.standing,
                hello::cpu_ms_per_second,
                hello::STANDING_RATE,
            ),
        ] {
            let scale = if bench == "quick/bill" { 1e3 } else { 1e6 };
            for c in cells {
                if let Ok(v) = value(c) {
                    figures.push(Figure::count(
                        bench,
                        &c.target,
                        &c.scenario,
                        &hello_variant(format!("r{rate:.0}")),
                        Metric::Time,
                        v * scale,
                    ));
                }
            }
        }
        crate::results::Results::new("quick", figures)
    }

    /// The long table: every framework × scenario as a row, in-process and loopback columns,
    /// with the environment above it and the legend and notes below.
    pub(crate) fn long(&self) -> Long {
        let mut out = String::new();
        long_header(&mut out, &self.setup, self.options, self.sample);
        let mut notes = Notes::default();
        let mut table = Table::new(LONG_COLUMNS);
        for name in self.names() {
            for (k, s) in SCENARIOS.iter().enumerate() {
                let inproc = in_process_text(self.in_process(name, k), &mut notes, || {
                    format!("{name} {} in-process", s.name)
                });
                let allocs = allocs_text(&self.allocs, name, s.name, &mut notes);
                let ratio = self
                    .setup
                    .of_reference
                    .iter()
                    .find(|r| r.target == name && r.scenario == s.name)
                    .map(|r| &r.ratio);
                let [rps, of_raw, bound, user, sys, p99, cpu, rss] =
                    loopback_texts(self.loopback(name, s.name), ratio, &mut notes, || {
                        format!("{name} {} loopback", s.name)
                    });
                table.row([
                    name.to_string(),
                    s.name.to_string(),
                    inproc,
                    allocs,
                    rps,
                    of_raw,
                    bound,
                    user,
                    sys,
                    p99,
                    cpu,
                    rss,
                ]);
            }
        }
        out.push_str(&table.markdown_aligned());
        let _ = writeln!(out, "\n{BOUND_LEGEND}");
        out.push_str(&self.hello_long(&mut notes));
        let mut written = String::new();
        let failed = notes.write(&mut written);
        out.push_str(&written);
        Long {
            table: out,
            notes: written,
            failed,
        }
    }
}

/// A loopback rate's bar, faded and marked when the rate is not the server's own.
fn rate_bar(name: &str, rps: f64, own: bool) -> Bar {
    let mut bar = Bar::new(name, rps, None);
    if !own {
        bar.name.push_str(" ~not saturated");
        bar.faded = true;
    }
    bar
}

/// The hello cells past saturation as a table, for both views.
impl Run {
    /// The servers of the hello cells past saturation, in registry order.
    fn hello_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.names().filter(|n| self.hello.churn(n).is_some())
    }

    /// Whether the bill ranks the frameworks as saturated hello req/s does: Spearman's ρ over
    /// the frameworks with both figures (a saturated rate and a sustained bill), and each one's
    /// rank in both (1 = most req/s, 1 = cheapest).
    fn hello_ranks(&self) -> Option<(f64, Vec<hello::RankPair>)> {
        let frameworks = || {
            self.hello_names()
                .filter(|n| Kind::of(n) == Kind::Framework)
        };
        let mut by_rate: Vec<(&'static str, f64)> = frameworks()
            .filter_map(|n| match self.rate(n, "hello") {
                Some((rps, true)) => Some((n, rps)),
                _ => None,
            })
            .collect();
        by_rate.sort_by(|a, b| b.1.total_cmp(&a.1));
        let mut by_bill: Vec<(&'static str, f64)> = frameworks()
            .filter_map(|n| Some((n, hello::cpu_us_per_request(self.hello.bill(n)?).ok()?)))
            .collect();
        by_bill.sort_by(|a, b| a.1.total_cmp(&b.1));
        hello::rank_agreement(&by_rate, &by_bill)
    }

    /// One sentence on how the bill ranks the frameworks against saturated req/s.
    fn hello_ranking_text(&self) -> String {
        let Some((rho, moves)) = self.hello_ranks() else {
            return "rank: fewer than 3 frameworks have both a saturated hello rate and a bill"
                .into();
        };
        let far: Vec<String> = moves
            .iter()
            .filter(|(_, a, b)| a.abs_diff(*b) >= 3)
            .map(|(n, a, b)| format!("{n} ({a} by req/s, {b} by bill)"))
            .collect();
        format!(
            "rank: the bill orders the {} frameworks with both figures as saturated hello req/s \
             does with Spearman's rho = {rho:.2}; {}.",
            moves.len(),
            if far.is_empty() {
                "no framework moves 3 places or more".to_owned()
            } else {
                format!("3 places or more apart: {}", far.join(", "))
            }
        )
    }

    /// The hello cells past saturation for the first screen: churn rate, bill and standing
    /// cost per server, and the two ranks.
    fn hello_compact(&self) -> String {
        let mut out = String::new();
        if self.hello.churn.is_empty() {
            return out;
        }
        let ranks = self.hello_ranks();
        let mut table = Table::new([
            ("hello", Align::Left),
            ("churn k/s", Align::Right),
            ("bill µs/req", Align::Right),
            ("standing ms/s", Align::Right),
            ("rank k/s", Align::Right),
            ("rank bill", Align::Right),
        ]);
        for name in self.hello_names() {
            let (by_rate, by_bill) = rank_texts(ranks.as_ref(), name);
            table.row([
                name.to_owned(),
                churn_short(self.hello.churn(name)),
                open_short(self.hello.bill(name), hello::cpu_us_per_request),
                open_short(self.hello.standing(name), hello::cpu_ms_per_second),
                by_rate,
                by_bill,
            ]);
        }
        out.push_str(&table.terminal(""));
        out.push_str(&wrap(&self.hello_ranking_text(), SCREEN_WIDTH));
        out.push_str(&wrap(
            &format!(
                "churn: closed loop, {} connections, each closed after {} requests (~: not the \
                 server's own rate; OPEN: the server ignored Connection: close, see framebench \
                 check --conformance). bill: the server's CPU time per request (user + system) \
                 at {:.0} k req/s, a rate every server here sustains (behind: it did not). \
                 standing: its CPU time per second at {:.0} req/s. Best of {} passes each.",
                self.hello.connections,
                hello::CHURN_REQUESTS,
                hello::BILL_RATE / 1e3,
                hello::STANDING_RATE,
                hello::PASSES,
            ),
            SCREEN_WIDTH,
        ));
        out.push('\n');
        out
    }

    /// The hello cells past saturation for the long table, every figure and its notes.
    fn hello_long(&self, notes: &mut Notes) -> String {
        let mut out = String::new();
        if self.hello.churn.is_empty() {
            return out;
        }
        let _ = writeln!(
            out,
            "\nhello past saturation, {} connections, best of {} passes each: churn (closed \
             loop, a new connection every {} requests: its rate, the connects per second and \
             their mean time), the bill (open loop at {:.0} req/s: the server's CPU time per \
             request in user and system mode, and p99 from the intended send time) and the \
             standing cost (open loop at {:.0} req/s: the server's CPU time per second)\n",
            self.hello.connections,
            hello::PASSES,
            hello::CHURN_REQUESTS,
            hello::BILL_RATE,
            hello::STANDING_RATE,
        );
        let ranks = self.hello_ranks();
        let mut table = Table::new([
            ("framework", Align::Left),
            ("churn/s", Align::Right),
            ("bound", Align::Left),
            ("connects/s", Align::Right),
            ("connect", Align::Right),
            ("bill/req", Align::Right),
            ("usr/req", Align::Right),
            ("sys/req", Align::Right),
            ("p99 at rate", Align::Right),
            ("standing/s", Align::Right),
            ("rank k/s", Align::Right),
            ("rank bill", Align::Right),
        ]);
        let dash = || "–".to_owned();
        for name in self.hello_names() {
            let churn = self.hello.churn(name);
            let (rate, bound, connects, connect) = match churn {
                Some(c) if c.status == Status::Ok => (
                    kilo(c.rps),
                    bound_mark(c).to_owned(),
                    kilo(c.connects as f64 / c.seconds.max(1e-9)),
                    c.connect_us_mean
                        .map_or_else(dash, |v| format!("{v:.0} µs")),
                ),
                other => (churn_short(other), dash(), dash(), dash()),
            };
            let bill = self.hello.bill(name);
            let (total, user, system, p99) = match bill.map(|c| (c, hello::cpu_us_per_request(c))) {
                Some((c, Ok(total))) => (
                    per_req(Some(total)),
                    per_req(c.server_user_us_per_req),
                    per_req(c.server_sys_us_per_req),
                    us(c.latency.p99_us),
                ),
                _ => (
                    open_short(bill, hello::cpu_us_per_request),
                    dash(),
                    dash(),
                    dash(),
                ),
            };
            let standing = match self.hello.standing(name).map(hello::cpu_ms_per_second) {
                Some(Ok(ms)) => format!("{ms:.2} ms"),
                _ => open_short(self.hello.standing(name), hello::cpu_ms_per_second),
            };
            let (by_rate, by_bill) = rank_texts(ranks.as_ref(), name);
            table.row([
                name.to_owned(),
                rate,
                bound,
                connects,
                connect,
                total,
                user,
                system,
                p99,
                standing,
                by_rate,
                by_bill,
            ]);
            for (kind, cell) in [
                ("churn", churn),
                ("bill", bill),
                ("standing", self.hello.standing(name)),
            ] {
                hello_note(cell, notes, || format!("{name} hello {kind}"));
            }
        }
        out.push_str(&table.markdown_aligned());
        out.push('\n');
        out.push_str(&self.hello_ranking_text());
        out.push('\n');
        out
    }
}

/// The two ranks of `name` (by saturated req/s, by the bill), or dashes.
fn rank_texts(ranks: Option<&(f64, Vec<hello::RankPair>)>, name: &str) -> (String, String) {
    ranks
        .and_then(|(_, m)| m.iter().find(|(n, _, _)| *n == name))
        .map_or(("–".to_owned(), "–".to_owned()), |(_, a, b)| {
            (a.to_string(), b.to_string())
        })
}

/// A churn cell in a few characters: thousands of requests per second (`~` when the rate is
/// not the server's own), `OPEN` when the server ignored `Connection: close`, or the status.
fn churn_short(cell: Option<&CellResult>) -> String {
    match cell {
        None => "–".to_owned(),
        Some(c) if c.status == Status::Ok => {
            let own = bound_mark(c).is_empty();
            format!("{}{}", sig3(c.rps / 1e3), if own { "" } else { "~" })
        }
        Some(c) => c.status.short().to_owned(),
    }
}

/// An open-loop cell's figure (`value` of it) in a few characters: `behind` when the server
/// did not sustain the rate, else the status.
fn open_short(
    cell: Option<&CellResult>,
    value: impl Fn(&CellResult) -> Result<f64, String>,
) -> String {
    match cell {
        None => "–".to_owned(),
        Some(c) if c.status == Status::Ok => match value(c) {
            Ok(v) => sig3(v),
            Err(_) if c.rps < hello::SUSTAINED * c.rate.unwrap_or(0.0) => "behind".to_owned(),
            Err(_) => "–".to_owned(),
        },
        Some(c) => c.status.short().to_owned(),
    }
}

/// Adds a hello cell's note: a skip once, a server that ignored `Connection: close` or fell
/// behind the rate as a finding (not a failure: the conformance report says the same), and any
/// other end as a failure.
fn hello_note(cell: Option<&CellResult>, notes: &mut Notes, what: impl Fn() -> String) {
    let Some(c) = cell else { return };
    match &c.status {
        Status::Ok => {
            if let Some(rate) = c.rate.filter(|r| c.rps < hello::SUSTAINED * r) {
                notes.findings.push(format!(
                    "{}: reached {:.0} of {rate:.0} req/s, so it has no figure at that rate",
                    what(),
                    c.rps
                ));
            }
        }
        Status::Skipped(why) => notes.skip(why),
        Status::IgnoredClose(why) => notes.findings.push(format!("{}: {why}", what())),
        Status::Interrupted => {}
        other => notes.failed.push(format!("{}: {other:?}", what())),
    }
}

/// The long table's columns.
const LONG_COLUMNS: [(&str, Align); 12] = [
    ("framework", Align::Left),
    ("scenario", Align::Left),
    ("in-process", Align::Right),
    ("allocs/req", Align::Right),
    ("loopback/s", Align::Right),
    ("of raw", Align::Right),
    ("bound", Align::Left),
    ("usr/req", Align::Right),
    ("sys/req", Align::Right),
    ("p99", Align::Right),
    ("srv cpu", Align::Right),
    ("srv rss", Align::Right),
];

/// The long table of a quick compare, and what its notes say.
pub(crate) struct Long {
    /// The whole text: environment, table, legend and notes.
    pub(crate) table: String,
    /// The notes alone (each skip cause once, each failure), which the compact view repeats.
    pub(crate) notes: String,
    /// Cells that failed.
    pub(crate) failed: usize,
}

/// `text` broken into lines of at most `width` characters at spaces, each line ended.
pub(crate) fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The lines above the long table: what was measured, how, and the table's head.
fn long_header(out: &mut String, setup: &QuickLoopback, options: Options, sample: Duration) {
    let params = &setup.params;
    let _ = writeln!(
        out,
        "framebench quick: every framework × scenario, in-process and over loopback"
    );
    let _ = writeln!(out, "environment: {}", Environment::current());
    let _ = writeln!(
        out,
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
    let _ = writeln!(
        out,
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
    if let Some(pointer) = scale_pointer(setup.threads, crate::pinning::allowed_cpus().len()) {
        let _ = writeln!(out, "{pointer}");
    }
    let _ = writeln!(
        out,
        "every cell checked against the oracle first; full sweep: framebench --full (or framebench compare)\n"
    );
}

/// What the combined table says under itself: why cells say `skip` (a missing optional tool),
/// once each, and every failure.
#[derive(Default)]
struct Notes {
    skipped: Vec<String>,
    /// What a server did that the table marks without failing the run.
    findings: Vec<String>,
    failed: Vec<String>,
}

impl Notes {
    fn skip(&mut self, why: &str) {
        if !self.skipped.iter().any(|s| s == why) {
            self.skipped.push(why.to_owned());
        }
    }

    /// Writes the notes; returns the number of failures.
    fn write(&self, out: &mut String) -> usize {
        for why in &self.skipped {
            let _ = writeln!(out, "skip: {why}");
        }
        for what in &self.findings {
            let _ = writeln!(out, "note: {what}");
        }
        for f in &self.failed {
            let _ = writeln!(out, "FAIL {f}");
        }
        self.failed.len()
    }
}

/// The in-process column of one row; `what` names the cell in a failure note.
fn in_process_text(cell: Option<&Cell>, notes: &mut Notes, what: impl Fn() -> String) -> String {
    match cell {
        None => "–".to_owned(),
        Some(Cell::Time(t)) => {
            format!("{} ±{:.0}%", crate::units::fmt_time(t.median), t.spread_pct)
        }
        Some(Cell::Failed(CellError::Skipped(why))) => {
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

/// On a machine of 8 CPUs or more, the line that says how many server threads the loopback
/// column ran and points to `framebench scale`: there the rankings move with the threads (a
/// 16-core machine ranked 20 frameworks at ρ = 0.71 between 1 and 8 threads). Nothing on fewer.
fn scale_pointer(threads: usize, cpus: usize) -> Option<String> {
    (cpus >= 8).then(|| {
        format!(
            "Loopback ran every server on {threads} thread{} (half of this machine's {cpus} \
             CPUs); rankings move with the thread count: `framebench scale` sweeps it, with \
             each framework's speed-up and efficiency.",
            if threads == 1 { "" } else { "s" }
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scale_pointer_shows_from_8_cpus_only() {
        assert_eq!(scale_pointer(1, 2), None);
        assert_eq!(scale_pointer(3, 7), None);
        let line = scale_pointer(8, 16).unwrap();
        assert!(
            line.contains("8 threads (half of this machine's 16 CPUs)"),
            "{line}"
        );
        assert!(line.contains("`framebench scale`"), "{line}");
    }
    use crate::driver::stats::Bound;
    use crate::driver::{LoadParams, Target};
    use crate::frameworks::REGISTRY;
    use crate::pinning::Pinning;

    /// A quick compare of two frameworks, the floor and the reference, with made-up figures:
    /// the second framework is faster over loopback than the first, but its server was not
    /// saturated.
    fn made_up() -> Option<(Run, [&'static str; 2])> {
        let mut frameworks = REGISTRY
            .iter()
            .filter(|e| e.in_process && e.loopback && !e.baseline);
        let (a, b) = (frameworks.next()?, frameworks.next()?);
        let floor = crate::frameworks::floor()?;
        let reference = crate::frameworks::reference()?;
        let params = LoadParams::closed_loop(
            Duration::from_secs(1),
            Duration::from_millis(100),
            Duration::from_secs(1),
            Pinning::one_core_each(),
        );
        let time = |us: f64| {
            Cell::Time(Timed {
                median: Duration::from_secs_f64(us / 1e6),
                spread_pct: 1.0,
            })
        };
        let rows = vec![
            (a.name, SCENARIOS.iter().map(|_| time(1.0)).collect()),
            (b.name, SCENARIOS.iter().map(|_| time(2.0)).collect()),
            (floor.name, SCENARIOS.iter().map(|_| time(0.3)).collect()),
        ];
        let mut loopback = Vec::new();
        for s in SCENARIOS {
            for (entry, rps, bound) in [
                (a, 100e3, Bound::Server),
                (b, 150e3, Bound::Unsaturated),
                (reference, 200e3, Bound::Server),
            ] {
                let mut c =
                    CellResult::empty(&Target::Framework(entry, Options::default()), s, 4, &params);
                c.rps = rps;
                c.requests = 1000;
                c.bound = bound;
                loopback.push(c);
            }
        }
        let setup = QuickLoopback {
            params: params.clone(),
            passes: 3,
            threads: 1,
            connections: 4,
            pooled: Vec::new(),
            of_reference: Vec::new(),
        };
        // Past saturation: a churns fastest, b's bill is the lowest, the reference ignores
        // `Connection: close`.
        let mut hello = hello::Hello {
            connections: 4,
            ..Default::default()
        };
        for (entry, churn, bill_cpu, status) in [
            (a, 30e3, 20.0, Status::Ok),
            (b, 20e3, 10.0, Status::Ok),
            (
                reference,
                0.0,
                5.0,
                Status::IgnoredClose("kept open".into()),
            ),
        ] {
            let target = Target::Framework(entry, Options::default());
            let hello_scenario = crate::oracle::scenario("hello").unwrap();
            let mut c = CellResult::empty(&target, hello_scenario, 4, &params);
            c.rps = churn;
            c.bound = Bound::Server;
            c.status = status;
            hello.churn.push(c);
            for (rate, list) in [
                (hello::BILL_RATE, &mut hello.bill),
                (hello::STANDING_RATE, &mut hello.standing),
            ] {
                let open = LoadParams {
                    rate: Some(rate),
                    ..params.clone()
                };
                let mut c = CellResult::empty(&target, hello_scenario, 4, &open);
                c.rps = rate;
                c.server_cpu_pct = Some(bill_cpu);
                list.push(c);
            }
        }
        let run = Run {
            rows,
            allocs: Err("not counted here".into()),
            loopback,
            setup,
            hello,
            options: Options::default(),
            sample: SAMPLE,
        };
        Some((run, [a.name, b.name]))
    }

    #[test]
    fn compact_view_fits_100_columns_and_marks_the_best_saturated_cell() {
        let Some((run, [a, b])) = made_up() else {
            return; // fewer than two frameworks compiled in: nothing to compare
        };
        let long = run.long();
        let text = run.compact("Files: long table: target/quick/long.md", &long.notes);
        for line in text.lines() {
            assert!(line.chars().count() <= SCREEN_WIDTH, "too wide: {line}");
        }
        let lines: Vec<&str> = text.lines().collect();
        let header = lines.iter().find(|l| l.contains("not_found")).unwrap();
        for s in SCENARIOS {
            assert!(header.contains(s.name), "{header}");
        }
        let row = |name: &str| {
            *lines
                .iter()
                .find(|l| l.split_whitespace().next() == Some(name))
                .unwrap_or_else(|| panic!("no row for {name}:\n{text}"))
        };
        // One cell per scenario: a's time is the best, its rate the best saturated one; b's
        // rate is higher but not its server's own, so it is marked and never best.
        assert_eq!(row(a).matches("1.00*").count(), SCENARIOS.len(), "{text}");
        assert_eq!(row(a).matches(" 100*").count(), SCENARIOS.len(), "{text}");
        assert_eq!(row(b).matches(" 150~").count(), SCENARIOS.len(), "{text}");
        assert!(!row(b).contains('*'), "{text}");
        // The floor and the reference come after the rule, unmarked: they are not frameworks.
        let rule = lines
            .iter()
            .position(|l| l.starts_with("-- floors"))
            .unwrap();
        let floor = crate::frameworks::floor().unwrap().name;
        let reference = crate::frameworks::reference().unwrap().name;
        for name in [floor, reference] {
            let at = lines
                .iter()
                .position(|l| l.split_whitespace().next() == Some(name));
            assert!(at.unwrap() > rule, "{text}");
            assert!(!row(name).contains('*'), "{text}");
        }
        let best = lines
            .iter()
            .find(|l| l.starts_with("fastest in-process (µs): "))
            .unwrap();
        assert!(best.contains(&format!("{a} in hello")), "{text}");
        let busiest = lines
            .iter()
            .find(|l| l.starts_with("most req/s (k/s): "))
            .unwrap();
        assert!(busiest.contains(&format!("{a} in hello")), "{text}");
        assert!(!busiest.contains(b), "{text}");
        assert!(text.contains("target/quick/long.md"), "{text}");
        // Past saturation: a's churn rate, b's bill of 10 µs (10 % of a core at 10 k req/s),
        // the reference's ignored close marked and not a failure.
        let hello_row = |name: &str| {
            let head = lines.iter().position(|l| l.starts_with("hello ")).unwrap();
            *lines[head..]
                .iter()
                .find(|l| l.split_whitespace().next() == Some(name))
                .unwrap_or_else(|| panic!("no hello row for {name}:\n{text}"))
        };
        let cells = |name: &str| -> Vec<String> {
            hello_row(name)
                .split_whitespace()
                .map(str::to_owned)
                .collect()
        };
        // Standing: 20 % and 10 % of a core, 200 and 100 ms per second.
        assert_eq!(cells(a)[1..4], ["30.0", "20.0", "200"], "{text}");
        assert_eq!(cells(b)[1..4], ["20.0", "10.0", "100"], "{text}");
        assert_eq!(cells(reference)[1], "OPEN", "{text}");
        assert!(text.contains("rank: fewer than 3"), "{text}");
        assert_eq!(long.failed, 0, "{text}");
        assert!(long.notes.contains("kept open"), "{}", long.notes);
    }

    #[test]
    fn long_table_keeps_framework_and_scenario_first_and_writes_the_chart() {
        let Some((run, [a, _])) = made_up() else {
            return;
        };
        let super::Long { table, failed, .. } = run.long();
        assert_eq!(failed, 0, "{table}");
        // The first two cells of a row, whatever the padding.
        let first = [a, SCENARIOS[0].name];
        assert!(
            table
                .lines()
                .any(|l| l.split('|').skip(1).map(str::trim).take(2).eq(first)),
            "{table}"
        );
        let dir = std::env::temp_dir().join(format!("framebench-quick-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let svg = dir.join("summary.svg");
        run.chart(&svg).unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.contains("requests per second over loopback"));
        assert!(text.contains("not saturated"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn figures_keep_three_significant_digits_in_four_characters() {
        assert_eq!(sig3(0.942), "0.94");
        assert_eq!(sig3(11.96), "12.0");
        assert_eq!(sig3(57.36), "57.4");
        assert_eq!(sig3(154.3), "154");
        assert_eq!(wrap("aa bb cc", 5), "aa bb\ncc\n");
    }
}
