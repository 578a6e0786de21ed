//! The long table of the quick compare: every framework × scenario as a row, in-process and
//! loopback columns, with the environment above it and the legend and notes below.

use std::fmt::Write as _;
use std::time::Duration;

use crate::allocs::report::Report as Allocs;
use crate::driver::output::{bound_mark, BOUND_LEGEND};
use crate::driver::stats::{CellResult, Status};
use crate::env::Environment;
use crate::options::Options;
use crate::outcome::{NotOk, NotRun};
use crate::quick::cells::{Cell, Run};
use crate::quick::loopback::QuickLoopback;
use crate::quick::QUICK_SCENARIOS;
use crate::table::{Align, Table};
use crate::units::{kilo, per_req, us};

use super::notes::Notes;
use super::scale_pointer;

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

impl Run {
    /// The long table: every framework × scenario as a row, in-process and loopback columns,
    /// with the environment above it and the legend and notes below.
    pub(crate) fn long(&self) -> Long {
        let mut out = String::new();
        long_header(&mut out, &self.setup, self.options, self.sample);
        let mut notes = Notes::default();
        let mut table = Table::new(LONG_COLUMNS);
        for name in self.names() {
            for (k, s) in QUICK_SCENARIOS.iter().enumerate() {
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
        "options: {}; in-process: median time per request of {} interleaved rounds of one \
         ~{sample:?} batch per cell (± the farthest end of the rounds' 95 % interval), one thread; \
         allocs/req: alloc calls of one dispatch (+ reallocs), every thread, `framebench allocs` \
         (`~`: its repeats agreed on these calls but not on the bytes; `varies`: not on the \
         calls either)",
        options.label(),
        crate::quick::ROUNDS,
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

/// The in-process column of one row; `what` names the cell in a failure note.
fn in_process_text(cell: Option<&Cell>, notes: &mut Notes, what: impl Fn() -> String) -> String {
    match cell {
        None => "–".to_owned(),
        Some(Cell::Time(t)) => {
            format!("{} ±{:.0}%", crate::units::fmt_time(t.median), t.spread_pct)
        }
        Some(Cell::Failed(NotOk::NotRun(NotRun::Skipped(why)))) => {
            notes.skip(why);
            "skip".to_owned()
        }
        Some(Cell::Failed(NotOk::NotRun(NotRun::Unsupported(_)))) => "–".to_owned(),
        Some(Cell::Failed(e)) => {
            notes.failed.push(format!("{}: {e}", what()));
            "FAIL".to_owned()
        }
    }
}

/// The allocs/req column of one row: alloc calls, and `+N` reallocations when there are any.
fn allocs_text(
    allocs: &anyhow::Result<Allocs>,
    name: &str,
    scenario: &str,
    notes: &mut Notes,
) -> String {
    let allocs = match allocs {
        Ok(a) => a,
        Err(why) => {
            notes.skip(&format!("{why:#}"));
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
    if !cell.varies.is_empty() {
        // Not an oracle failure: the handler answered right every time, but its count is not
        // exact. The column prints the calls when every repeat made the same ones.
        let why = cell.error.as_deref().unwrap_or("repeats disagree");
        notes.findings.push(format!(
            "{name} {scenario} allocs/req: {why} (not exact, so not a failure; `~` where \
             the calls agreed and only another count varied)"
        ));
        return match cell.calls() {
            Some((allocs, 0)) => format!("{allocs}~"),
            Some((allocs, reallocs)) => format!("{allocs} +{reallocs}~"),
            None => "varies".to_owned(),
        };
    }
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
            status: Status::NotRun(NotRun::Skipped(why)),
            ..
        }) => {
            notes.skip(why);
            std::array::from_fn(|i| if i == 0 { "skip".to_owned() } else { dash() })
        }
        Some(CellResult {
            status: Status::NotRun(NotRun::Unsupported(_)),
            ..
        }) => std::array::from_fn(|_| dash()),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quick::fixture::made_up;

    #[test]
    fn long_table_keeps_framework_and_scenario_first_and_writes_the_chart() {
        let (run, [a, _]) = made_up();
        let Long { table, failed, .. } = run.long();
        assert_eq!(failed, 0, "{table}");
        // The first two cells of a row, whatever the padding.
        let first = [a, QUICK_SCENARIOS[0].name];
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

    /// A count whose repeats disagree is not exact, and not an oracle failure: it is printed
    /// marked where the calls agreed (only the bytes varied), `varies` where they did not, with
    /// a note either way, and the run does not fail for it.
    #[test]
    fn a_varying_count_is_marked_and_noted_not_failed() {
        use crate::allocs::{Counts, Measured};
        let (mut run, [a, b]) = made_up();
        let counts = |allocs, reallocs, bytes_allocated| Counts {
            allocs,
            reallocs,
            bytes_allocated,
            ..Counts::default()
        };
        let cell = |name: &str, varies: Vec<Counts>| Measured {
            framework: name.to_owned(),
            scenario: QUICK_SCENARIOS[0].name.to_owned(),
            logging: "off".to_owned(),
            counts: None,
            error: Some("3 repeats disagree".to_owned()),
            varies,
        };
        run.allocs = Ok(Allocs {
            repeats: 3,
            cells: vec![
                cell(a, vec![counts(33, 8, 8085), counts(33, 8, 8076)]),
                cell(b, vec![counts(33, 7, 6171), counts(34, 7, 6225)]),
            ],
        });
        let Long {
            table,
            notes,
            failed,
        } = run.long();
        assert_eq!(failed, 0, "{table}");
        let allocs_of = |name: &str| {
            table
                .lines()
                .map(|l| l.split('|').skip(1).map(str::trim).collect::<Vec<_>>())
                .find(|c| c.len() > 3 && c[0] == name && c[1] == QUICK_SCENARIOS[0].name)
                .map(|c| c[3].to_owned())
                .unwrap_or_else(|| panic!("no row for {name}:\n{table}"))
        };
        assert_eq!(allocs_of(a), "33 +8~");
        assert_eq!(allocs_of(b), "varies");
        assert_eq!(notes.matches("repeats disagree").count(), 2, "{notes}");
        assert!(!notes.contains("FAIL"), "{notes}");
    }
}
