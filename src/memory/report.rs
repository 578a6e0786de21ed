//! `framebench memory`'s summary of its points: per framework and load, the heap, RSS and PSS
//! one connection holds, with whether the heap figure repeated over the runs; the slope over
//! the idle loads; the table it prints; and the figures of its results file.

use serde::{Deserialize, Serialize};

use super::{Load, Point};
use crate::outcome::Outcome;
use crate::results::{Figure, Metric};

/// The bench name of every figure `framebench memory` writes.
pub(crate) const BENCH: &str = "memory";

/// A framework under one load, over its runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Summary {
    /// The framework.
    pub(crate) framework: String,
    /// The load.
    pub(crate) load: Load,
    /// Heap bytes per connection: the runs' figure when they agree to the byte (exact), their
    /// median otherwise. `None`: not counted (a server in a process of its own).
    pub(crate) heap_per_conn: Option<f64>,
    /// Whether every run gave the same heap figure.
    pub(crate) heap_exact: bool,
    /// The runs' heap figures, when they differ.
    pub(crate) heap_runs: Vec<f64>,
    /// Median RSS bytes per connection.
    pub(crate) rss_per_conn: f64,
    /// Median PSS bytes per connection.
    pub(crate) pss_per_conn: f64,
    /// Median live heap at rest, before any connection.
    pub(crate) base_heap: Option<f64>,
    /// Median RSS at rest.
    pub(crate) base_rss: f64,
    /// Every run's readings.
    pub(crate) points: Vec<Point>,
}

/// Summarizes the runs of one framework under one load: `None` when no run measured it.
pub(crate) fn summarize(framework: &str, load: Load, runs: &[Point]) -> Option<Summary> {
    let first = runs.first()?;
    let heaps: Vec<f64> = runs.iter().filter_map(Point::heap_per_conn).collect();
    // One run cannot say whether the figure repeats.
    let heap_exact = heaps.len() >= 2 && heaps.windows(2).all(|w| w[0] == w[1]);
    let heap_per_conn = first.heap_per_conn().map(|_| median(&heaps));
    Some(Summary {
        framework: framework.to_owned(),
        load,
        heap_per_conn,
        heap_exact: heap_per_conn.is_some() && heap_exact,
        heap_runs: if heap_exact { Vec::new() } else { heaps },
        rss_per_conn: median(&runs.iter().map(Point::rss_per_conn).collect::<Vec<_>>()),
        pss_per_conn: median(&runs.iter().map(Point::pss_per_conn).collect::<Vec<_>>()),
        base_heap: first.base.heap.map(|_| {
            median(
                &runs
                    .iter()
                    .filter_map(|p| Some(p.base.heap?.live_bytes as f64))
                    .collect::<Vec<_>>(),
            )
        }),
        base_rss: median(
            &runs
                .iter()
                .map(|p| p.base.resident.rss as f64)
                .collect::<Vec<_>>(),
        ),
        points: runs.to_vec(),
    })
}

/// The median of the runs' figures (NaN for none: [`summarize`] has at least one run).
fn median(v: &[f64]) -> f64 {
    crate::interval::median(v).unwrap_or(f64::NAN)
}

/// The least-squares slope through the origin of `(connections, bytes per connection)` over
/// the idle loads: bytes per connection weighted toward the largest load, where fixed costs
/// that come with the first connections (a slab page, a grown list) weigh least.
pub(crate) fn slope(points: &[(usize, f64)]) -> Option<f64> {
    let n2: f64 = points.iter().map(|(n, _)| (*n as f64).powi(2)).sum();
    // Each point's total is `n * per_conn`: Σ n·total / Σ n².
    let nd: f64 = points
        .iter()
        .map(|(n, per)| (*n as f64).powi(2) * per)
        .sum();
    (n2 > 0.0).then(|| nd / n2)
}

/// Heap bytes per connection, to the byte (`28,360 B`): the figure is exact.
fn heap_bytes(v: f64) -> String {
    format!("{} B", crate::units::fmt_count(v))
}

/// The heap figure's cell: `4,096 B`, `4,096 B (1 run)`, `≈ 4,100 B (varies: 4,090.2–4,110.0)`,
/// or `–` (not counted: a server in a process of its own).
fn heap_cell(s: &Summary) -> String {
    match s.heap_per_conn {
        None => "–".to_owned(),
        Some(v) if s.heap_exact => heap_bytes(v),
        Some(v) if s.heap_runs.len() < 2 => format!("{} (1 run)", heap_bytes(v)),
        Some(v) => {
            let lo = s.heap_runs.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = s
                .heap_runs
                .iter()
                .copied()
                .fold(f64::NEG_INFINITY, f64::max);
            format!("≈ {} (varies: {lo:.1}–{hi:.1})", heap_bytes(v))
        }
    }
}

/// One framework's results: a summary per load measured, or why a load was not.
pub(crate) struct Framework {
    /// Its name.
    pub(crate) name: String,
    /// Per load: the summary, or why not.
    pub(crate) loads: Vec<(Load, Outcome<Summary>)>,
}

impl Framework {
    /// The idle loads' summaries.
    fn idle(&self) -> impl Iterator<Item = &Summary> {
        self.loads.iter().filter_map(|(load, s)| match load {
            Load::Idle { .. } => s.as_ref().ok(),
            Load::Body { .. } => None,
        })
    }

    /// Heap bytes per idle connection over every idle load ([`slope`]), when each was exact.
    pub(crate) fn heap_slope(&self) -> Option<f64> {
        let idle: Vec<&Summary> = self.idle().collect();
        if idle.is_empty() || !idle.iter().all(|s| s.heap_exact) {
            return None;
        }
        slope(
            &idle
                .iter()
                .map(|s| (s.load.connections(), s.heap_per_conn.unwrap_or(0.0)))
                .collect::<Vec<_>>(),
        )
    }

    /// RSS bytes per idle connection over every idle load ([`slope`]).
    pub(crate) fn rss_slope(&self) -> Option<f64> {
        slope(
            &self
                .idle()
                .map(|s| (s.load.connections(), s.rss_per_conn))
                .collect::<Vec<_>>(),
        )
    }
}

/// The table: one row per framework and load; a load not measured shows its mark.
fn table(frameworks: &[Framework]) -> crate::table::Table {
    use crate::table::{Align, Table};
    let mut table = Table::new([
        ("framework", Align::Left),
        ("load", Align::Left),
        ("heap/conn", Align::Right),
        ("RSS/conn", Align::Right),
        ("PSS/conn", Align::Right),
        ("heap at rest", Align::Right),
        ("RSS at rest", Align::Right),
    ]);
    for fw in frameworks {
        for (load, outcome) in &fw.loads {
            match outcome {
                Ok(s) => table.row([
                    fw.name.clone(),
                    load.label(),
                    heap_cell(s),
                    crate::units::fmt_bytes(s.rss_per_conn),
                    crate::units::fmt_bytes(s.pss_per_conn),
                    s.base_heap.map_or("–".to_owned(), crate::units::fmt_bytes),
                    crate::units::fmt_bytes(s.base_rss),
                ]),
                Err(e) => table.row([fw.name.clone(), load.label(), e.mark().to_owned()]),
            }
        }
    }
    table
}

/// After the table: per framework its slopes and what [`PROJECTED`] idle connections would
/// hold at them, then why each load not measured was not.
fn lines(frameworks: &[Framework]) -> Vec<String> {
    let mut out = Vec::new();
    for fw in frameworks {
        let (heap, rss) = (fw.heap_slope(), fw.rss_slope());
        if heap.is_none() && rss.is_none() {
            continue;
        }
        let at = |per: f64| crate::units::fmt_bytes(per * PROJECTED as f64);
        let heap = heap.map_or_else(
            || "heap not counted or not exact".to_owned(),
            |h| format!("heap {} (exact) → {}", heap_bytes(h), at(h)),
        );
        let rss = rss.map_or_else(String::new, |r| {
            format!(", RSS {} → {}", crate::units::fmt_bytes(r), at(r))
        });
        out.push(format!(
            "{}: per idle connection {heap}{rss} at {} idle connections (projected)",
            fw.name,
            crate::units::fmt_count(PROJECTED as f64),
        ));
    }
    for fw in frameworks {
        for (load, s) in &fw.loads {
            if let Err(e) = s {
                out.push(e.note(format!("{} {}", fw.name, load.label())));
            }
        }
    }
    out
}

/// For the terminal: the table, then [`lines`].
pub(crate) fn render(frameworks: &[Framework]) -> String {
    let mut out = table(frameworks).terminal("");
    for line in lines(frameworks) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The stamped Markdown file: the commit, window and machine, the table, [`lines`] as a list,
/// and what each column is.
pub(crate) fn markdown(
    frameworks: &[Framework],
    window: crate::provenance::Window,
    how: &str,
) -> String {
    let mut out = format!(
        "# framebench memory\n\n{}\n\nMachine: {}\n\n{how}\n\n",
        crate::provenance::Provenance::header(window),
        crate::env::Environment::current()
    );
    out.push_str(&table(frameworks).markdown());
    out.push('\n');
    for line in lines(frameworks) {
        out.push_str(&format!("- {line}\n"));
    }
    out.push_str(LEGEND);
    crate::generated::markdown(&out)
}

/// What each column of the table is (docs/methodology/memory.md says more).
const LEGEND: &str = "
`heap/conn`: live heap bytes one connection adds to its server, counted by the serve process's
allocator; exact, and written as a figure only where every run agreed to the byte (else `≈`
with the runs' range). `RSS/conn`, `PSS/conn`: resident and proportional bytes per connection,
the kernel's (`/proc/PID/smaps_rollup`), which hold what the allocator keeps after a free and
pages touched once. `at rest`: the fresh server before its first connection. A Go peer and
may-minihttp serve from a process of their own, whose allocator framebench does not see: RSS
only. Methodology: [memory](../methodology/memory.md).
";

/// The chart: heap and RSS bytes per idle connection, one bar per framework, least first.
pub(crate) fn chart(frameworks: &[Framework], path: &std::path::Path) -> anyhow::Result<()> {
    use crate::chart::bars::{Bar, Panel};
    let panel = |title: &str, of: fn(&Framework) -> Option<f64>| Panel {
        title: title.to_owned(),
        axis: "bytes per idle keep-alive connection".to_owned(),
        higher_is_better: false,
        format: |v| format!("{:.1} KiB", v / 1024.0),
        bars: frameworks
            .iter()
            .filter_map(|f| Some(Bar::new(&f.name, of(f)?, None)))
            .collect(),
    };
    crate::chart::bars::draw(
        path,
        &[
            panel(
                "Live heap per idle connection (exact)",
                Framework::heap_slope,
            ),
            panel(
                "RSS per idle connection (the kernel's)",
                Framework::rss_slope,
            ),
        ],
        2,
    )
}

/// The connection count the summary line projects to: a server of mostly idle connections.
pub(crate) const PROJECTED: usize = 50_000;

/// The results file's figures: per framework and load, heap bytes per connection (exact, only
/// where the runs agreed) and RSS bytes per connection; per framework, the slopes over the idle
/// loads as variant `idle`.
pub(crate) fn figures(frameworks: &[Framework]) -> Vec<Figure> {
    let mut out = Vec::new();
    for fw in frameworks {
        for (load, s) in &fw.loads {
            let Ok(s) = s else { continue };
            let scenario = match load {
                Load::Idle { .. } => "hello",
                Load::Body { .. } => "upload",
            };
            if let (Some(v), true) = (s.heap_per_conn, s.heap_exact) {
                out.push(Figure::count(
                    BENCH,
                    &fw.name,
                    scenario,
                    &load.label(),
                    Metric::HeapPerConn,
                    v,
                ));
            }
            out.push(Figure::count(
                BENCH,
                &fw.name,
                scenario,
                &load.label(),
                Metric::RssPerConn,
                s.rss_per_conn,
            ));
        }
        if let Some(v) = fw.heap_slope() {
            out.push(Figure::count(
                BENCH,
                &fw.name,
                "hello",
                "idle",
                Metric::HeapPerConn,
                v,
            ));
        }
        if let Some(v) = fw.rss_slope() {
            out.push(Figure::count(
                BENCH,
                &fw.name,
                "hello",
                "idle",
                Metric::RssPerConn,
                v,
            ));
        }
    }
    out
}

/// The results file's detail: every framework's loads, each a summary with its runs' readings
/// or why it was not measured.
pub(crate) fn detail(frameworks: &[Framework]) -> Vec<serde_json::Value> {
    frameworks
        .iter()
        .flat_map(|fw| {
            fw.loads.iter().map(|(load, s)| match s {
                Ok(s) => serde_json::json!({ "framework": fw.name, "load": load, "summary": s }),
                Err(e) => serde_json::json!({
                    "framework": fw.name,
                    "load": load,
                    "not_measured": e.note(format!("{} {}", fw.name, load.label())),
                }),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Reading;
    use crate::proc::Resident;
    use crate::serve::Heap;

    fn point(connections: usize, heap: i64, rss: u64) -> Point {
        let r = |b: i64, rss: u64| Reading {
            heap: Some(Heap {
                live_bytes: b,
                live_blocks: 0,
            }),
            resident: Resident { rss, pss: rss },
        };
        Point {
            load: Load::Idle { connections },
            base: r(1000, 1 << 20),
            loaded: r(1000 + heap, (1 << 20) + rss),
            took_s: 0.1,
        }
    }

    #[test]
    fn runs_that_agree_are_exact_and_others_show_their_spread() {
        let load = Load::Idle { connections: 1000 };
        let same = [
            point(1000, 4_096_000, 8 << 20),
            point(1000, 4_096_000, 9 << 20),
        ];
        let s = summarize("axum", load, &same).unwrap();
        assert!(s.heap_exact);
        assert_eq!(s.heap_per_conn, Some(4096.0));
        assert_eq!(heap_cell(&s), "4,096 B");
        assert_eq!(crate::memory::size(16 << 20), "16MiB");
        let differ = [
            point(1000, 4_096_000, 8 << 20),
            point(1000, 4_100_000, 8 << 20),
        ];
        let s = summarize("axum", load, &differ).unwrap();
        assert!(!s.heap_exact);
        assert!(heap_cell(&s).starts_with("≈ "), "{}", heap_cell(&s));
        assert!(summarize("axum", load, &[]).is_none());
    }

    #[test]
    fn the_slope_weighs_the_largest_load() {
        assert_eq!(slope(&[(1000, 4096.0)]), Some(4096.0));
        // 1,000 at 5,000 B and 10,000 at 4,000 B: (1e6·5000 + 1e8·4000) / (1e6 + 1e8).
        let s = slope(&[(1000, 5000.0), (10_000, 4000.0)]).unwrap();
        assert!((s - 4009.9).abs() < 0.1, "{s}");
        assert_eq!(slope(&[]), None);
    }

    #[test]
    fn only_exact_heap_figures_are_written() {
        let load = Load::Idle { connections: 1000 };
        let exact = Framework {
            name: "axum".into(),
            loads: vec![(
                load,
                Ok(summarize("axum", load, &vec![point(1000, 4_096_000, 0); 2]).unwrap()),
            )],
        };
        let f = figures(&[exact]);
        assert!(f
            .iter()
            .any(|f| f.metric == Metric::HeapPerConn && f.variant == "idle" && f.value == 4096.0));
        let varies = Framework {
            name: "axum".into(),
            loads: vec![(
                load,
                Ok(summarize(
                    "axum",
                    load,
                    &[point(1000, 4_096_000, 0), point(1000, 4_097_000, 0)],
                )
                .unwrap()),
            )],
        };
        let f = figures(&[varies]);
        assert!(f.iter().all(|f| f.metric != Metric::HeapPerConn));
        assert!(f.iter().any(|f| f.metric == Metric::RssPerConn));
    }
}
