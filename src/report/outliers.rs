//! The report's consistency check of a baseline against itself: a floor or reference (`null`,
//! `raw`) serves a canned answer in every scenario, so its time in one scenario far from its
//! times in the others says more about when that cell was measured than about the scenario,
//! and every ratio read against that cell inherits it ([`baseline_outliers`]).

use std::fmt::Write as _;

use super::read::Timing;
use super::table_of;
use crate::interval::{self, Estimate};
use crate::units::fmt_ns;

/// The fewest other scenarios a baseline's cell is compared with.
const MIN_OTHERS: usize = 2;

/// A baseline's time in one scenario out of line with its own times in the table's other
/// scenarios.
#[derive(Debug, Clone)]
pub(crate) struct Outlier {
    /// The cell: the baseline (`function`), the scenario (`group`), the table (the transport,
    /// the `value` and the `shard`) and its time.
    pub(crate) cell: Timing,
    /// The band `M ± S` of the other scenarios in the table ([`baseline_outliers`]): `point` is
    /// `M`, `lo` and `hi` its ends.
    pub(crate) band: Estimate,
    /// How many other scenarios.
    pub(crate) others: usize,
}

/// A cell's table: `loopback raw-client`, `in_process log=off,io=memory`, `loopback reqwest,
/// shard 1`.
fn table_name(c: &Timing) -> String {
    match c.shard {
        0 => format!("{} {}", transport(c), c.value),
        n => format!("{} {}, shard {n}", transport(c), c.value),
    }
}

/// `hello` of `loopback/hello`.
fn scenario(t: &Timing) -> &str {
    t.group.split_once('/').map_or("", |(_, s)| s)
}

/// `loopback` of `loopback/hello`.
fn transport(t: &Timing) -> &str {
    t.group.split_once('/').map_or("", |(tr, _)| tr)
}

/// Every baseline cell out of line with the baseline's other scenarios in the same table.
///
/// The rule: a table is one transport and one variant (`in_process` × `log=off,io=memory`,
/// `loopback` × `raw-client`, …) in one shard. For a baseline's time in scenario `s` (point
/// `p`, interval half-width `h`: the larger distance from `p` to either end), let `M` be the
/// median of the points of the same baseline's times in the table's other scenarios (at least
/// [`MIN_OTHERS`]), and `S` their spread: the largest distance from `M` to either end of any of
/// their intervals. The cell is out of line when `|p − M| > h + S`: its interval, as `p ± h`,
/// misses the band `M ± S` that holds every other scenario's interval.
pub(crate) fn baseline_outliers(timings: &[Timing], baselines: &[&str]) -> Vec<Outlier> {
    let same_table = |a: &Timing, b: &Timing| {
        (&a.function, &a.value, a.shard, transport(a))
            == (&b.function, &b.value, b.shard, transport(b))
    };
    timings
        .iter()
        .filter(|t| baselines.contains(&t.function.as_str()) && t.group.contains('/'))
        .filter_map(|t| {
            let others: Vec<Estimate> = timings
                .iter()
                .filter(|o| same_table(t, o) && o.group != t.group)
                .map(|o| o.ns)
                .collect();
            Some(Outlier {
                band: out_of_line(&t.ns, &others)?,
                cell: t.clone(),
                others: others.len(),
            })
        })
        .collect()
}

/// The others' band `M ± S` when `time` is out of line with them ([`baseline_outliers`]).
fn out_of_line(time: &Estimate, others: &[Estimate]) -> Option<Estimate> {
    if others.len() < MIN_OTHERS {
        return None;
    }
    let points: Vec<f64> = others.iter().map(|e| e.point).collect();
    let median = interval::median_interval(&points)?.point;
    let spread = others
        .iter()
        .map(|e| (median - e.lo).max(e.hi - median))
        .fold(0.0, f64::max);
    ((time.point - median).abs() > time.half_width() + spread).then_some(Estimate {
        point: median,
        lo: median - spread,
        hi: median + spread,
    })
}

/// The baselines part of the consistency section.
pub(super) fn write_baseline_outliers(out: &mut String, found: &[Outlier]) {
    out.push_str("### Baselines against their own other scenarios\n\n");
    let _ = writeln!(
        out,
        "A baseline serves a canned answer in every scenario. Its time in one scenario is out of \
         line when it lies farther from the median `M` of its times in the table's other \
         scenarios than its own interval's half-width and their spread together (`S`, the \
         largest distance from `M` to either end of any of their intervals): then even its \
         interval misses the band `M ± S` that holds all of theirs. Every ratio read against \
         such a cell inherits it. {} cell(s) out of line.\n",
        found.len()
    );
    if found.is_empty() {
        return;
    }
    table_of(
        out,
        &[
            "baseline",
            "table",
            "scenario",
            "time",
            "its other scenarios",
        ],
        found,
        |o| {
            vec![
                o.cell.function.clone(),
                table_name(&o.cell),
                scenario(&o.cell).to_owned(),
                interval::time_text(&o.cell.ns),
                format!(
                    "{} within {} ± {}",
                    o.others,
                    fmt_ns(o.band.point),
                    fmt_ns(o.band.half_width())
                ),
            ]
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `fw`'s loopback time in `scenario`, `us` µs ±`pct` %.
    fn time(fw: &str, scenario: &str, us: f64, pct: f64) -> Timing {
        Timing::of(&format!("loopback/{scenario}"), fw, "raw-client", us, pct)
    }

    /// raw at 8.39–8.63 µs ±0.4 % in six scenarios, and `hello` at `us` ±`pct` %.
    fn raw(hello_us: f64, pct: f64) -> Vec<Timing> {
        let mut out = vec![time("raw", "hello", hello_us, pct)];
        for (s, us) in [
            ("not_found", 8.43),
            ("static", 8.56),
            ("template", 8.55),
            ("paste", 8.63),
            ("json", 8.40),
            ("redis", 8.39),
        ] {
            out.push(time("raw", s, us, 0.4));
        }
        out
    }

    #[test]
    fn a_baseline_in_line_with_itself_is_not_listed() {
        assert!(baseline_outliers(&raw(8.60, 0.4), &["raw"]).is_empty());
        // Far out, but within its own wide interval.
        assert!(baseline_outliers(&raw(15.36, 50.0), &["raw"]).is_empty());
    }

    #[test]
    fn a_baseline_cell_far_from_its_others_is_listed_with_its_figures() {
        let found = baseline_outliers(&raw(15.36, 2.0), &["raw"]);
        assert_eq!(found.len(), 1, "{found:?}");
        let o = &found[0];
        assert_eq!(
            (
                o.cell.function.as_str(),
                table_name(&o.cell),
                scenario(&o.cell)
            ),
            ("raw", "loopback raw-client".to_owned(), "hello")
        );
        // The others' median is between 8.43 and 8.55; paste's top end is the farthest from it.
        assert!((o.band.point - 8_490.0).abs() < 0.5, "{o:?}");
        assert!((o.band.hi - 8_630.0 * 1.004).abs() < 0.5, "{o:?}");
        let mut out = String::new();
        write_baseline_outliers(&mut out, &found);
        assert!(out.contains("1 cell(s) out of line"), "{out}");
        assert!(
            out.contains(
                "| raw | loopback raw-client | hello | 15.36 µs ±2 % | 6 within 8.49 µs ± 175 ns |"
            ),
            "{out}"
        );
    }

    #[test]
    fn only_baselines_are_checked_and_each_table_apart() {
        let mut timings = raw(15.36, 2.0);
        for t in &mut timings {
            t.function = "fw".into();
        }
        assert!(baseline_outliers(&timings, &["raw"]).is_empty());
        // raw at 8.5 µs with the pre-encoded client and 15.36 µs with reqwest: two tables, each
        // in line with itself.
        let mut timings = Vec::new();
        for (client, us, scenarios) in [
            ("raw-client", 8.5, &["json", "static", "paste"][..]),
            ("reqwest", 15.36, &["hello", "json", "static", "paste"][..]),
        ] {
            for s in scenarios {
                let t = time("raw", s, us, 0.4);
                timings.push(Timing {
                    value: client.into(),
                    ..t
                });
            }
        }
        assert!(baseline_outliers(&timings, &["raw"]).is_empty());
        // reqwest's hello read as the pre-encoded client's: out of line there.
        timings[3].value = "raw-client".into();
        let found = baseline_outliers(&timings, &["raw"]);
        assert_eq!(found.len(), 1, "{found:?}");
        let cell = &found[0].cell;
        assert_eq!(
            (table_name(cell), scenario(cell)),
            ("loopback raw-client".to_owned(), "hello")
        );
    }
}
