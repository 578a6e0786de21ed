//! `framebench diff`: two results files (or two frameworks of one) compared figure by figure,
//! a count exactly and a time through its interval, with the `--fail-if` gates; and the
//! `--save-baseline`/`--baseline` of the measuring commands, which compare the same way.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::table::{Align, Table};

use super::{Figure, Metric, Results};
use crate::env::target_dir;

/// `--save-baseline NAME` and `--baseline NAME`, as criterion and gungraun users know them: a
/// run's results file kept under `target/framebench-baselines/NAME/`, and the next run
/// compared with it without naming files.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct BaselineArgs {
    /// Keep this run's results as the baseline NAME (under target/framebench-baselines/).
    #[arg(long, value_name = "NAME")]
    pub(crate) save_baseline: Option<String>,
    /// Print this run against the baseline NAME saved earlier, as `framebench diff` prints it
    /// (no gate: run `framebench diff --fail-if` on the saved files for one).
    #[arg(long, value_name = "NAME")]
    pub(crate) baseline: Option<String>,
}

impl BaselineArgs {
    /// Checks the names before anything is measured (a bad name is a usage error, and a
    /// missing baseline is one too: nothing to compare with).
    pub(crate) fn check(&self, command: &str) -> anyhow::Result<()> {
        for name in [&self.save_baseline, &self.baseline].into_iter().flatten() {
            let ok = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
                && !name.starts_with('.');
            if !ok {
                return Err(crate::error::usage(format!(
                    "baseline name '{name}': use letters, digits, '-', '_' and '.'"
                )));
            }
        }
        if let Some(name) = &self.baseline {
            let path = baseline_path(name, command);
            if !path.exists() {
                return Err(crate::error::usage(format!(
                    "no baseline '{name}' for `{command}` ({} not found): save one with \
                     --save-baseline {name}",
                    path.display()
                )));
            }
        }
        Ok(())
    }

    /// After a run: compares it with `--baseline`, then saves it as `--save-baseline`.
    pub(crate) fn apply(&self, results: &Results) -> anyhow::Result<()> {
        if let Some(name) = &self.baseline {
            let path = baseline_path(name, &results.command);
            let base = Results::read(&path).map_err(|e| crate::error::usage(format!("{e:#}")))?;
            let c = compare(&base.figures, &results.figures, None, &Filter::default());
            let changed = c.changes.iter().filter(|ch| ch.separated).count();
            println!(
                "\nagainst baseline '{name}': {} figures in both, {changed} changed",
                c.changes.len()
            );
            print!("{}", table(&c, false, false, name, "this run"));
        }
        if let Some(name) = &self.save_baseline {
            let path = baseline_path(name, &results.command);
            results.write(&path)?;
            println!("saved baseline '{name}': {}", path.display());
        }
        Ok(())
    }
}

/// Where the baseline `name` of `command` lives.
fn baseline_path(name: &str, command: &str) -> std::path::PathBuf {
    target_dir()
        .join("framebench-baselines")
        .join(name)
        .join(format!("{command}.json"))
}

/// One gate: fail when `metric` gets worse by more than `limit` (absolute, or percent).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gate {
    /// The metric gated.
    pub(crate) metric: Metric,
    /// How much worse is allowed.
    pub(crate) limit: f64,
    /// Whether `limit` is in percent of the base.
    pub(crate) percent: bool,
}

/// Parses `instructions>+1%,allocs>+0`: comma-separated `METRIC>+N` or `METRIC>+N%`.
pub(crate) fn parse_gates(text: &str) -> anyhow::Result<Vec<Gate>> {
    text.split(',')
        .map(|part| {
            let part = part.trim();
            let bad = |why: &str| crate::error::usage(format!("--fail-if: '{part}': {why}"));
            let (name, limit) = part
                .split_once('>')
                .ok_or_else(|| bad("expected METRIC>+N or METRIC>+N%"))?;
            let metric = Metric::ALL
                .into_iter()
                .find(|m| m.name() == name.trim())
                .ok_or_else(|| {
                    bad("metric is one of instructions, allocs, bytes, time, rps, \
                         heap_bytes_per_conn")
                })?;
            if metric == Metric::RssPerConn {
                return Err(bad(
                    "the kernel's figure has no interval to tell a change from noise; gate on \
                     heap_bytes_per_conn, which is exact",
                ));
            }
            let limit = limit
                .trim()
                .strip_prefix('+')
                .ok_or_else(|| bad("the limit starts with '+' (how much worse is allowed)"))?;
            let (number, percent) = match limit.strip_suffix('%') {
                Some(n) => (n, true),
                None => (limit, false),
            };
            let limit: f64 = number
                .parse()
                .ok()
                .filter(|n: &f64| n.is_finite() && *n >= 0.0)
                .ok_or_else(|| bad("the limit is a number, e.g. +1 or +1%"))?;
            Ok(Gate {
                metric,
                limit,
                percent,
            })
        })
        .collect()
}

/// The largest move of a timed figure between two sequential runs of one build on this
/// project's machine: criterion put identical builds −27 % and +31 % apart
/// (docs/history/usage.md, "Differences"). A timed change counts, prints as a number and can
/// cross a gate only beyond it, and only when the two intervals separate
/// (docs/methodology/README.md, "Comparing runs").
pub(crate) const TIME_NOISE_PCT: f64 = 31.0;

/// One cell present in both files.
#[derive(Debug, Clone)]
pub(crate) struct Change {
    /// The base figure.
    pub(crate) base: Figure,
    /// The new figure.
    pub(crate) new: Figure,
    /// New − base.
    pub(crate) delta: f64,
    /// Change in percent of the base (infinite from 0).
    pub(crate) pct: f64,
    /// For a timed figure: whether the intervals separate and the change exceeds
    /// [`TIME_NOISE_PCT`]. For an exact count: whether it changed.
    pub(crate) separated: bool,
}

impl Change {
    fn of(base: Figure, new: Figure) -> Change {
        let delta = new.value - base.value;
        let pct = if base.value == 0.0 {
            if delta == 0.0 {
                0.0
            } else {
                f64::INFINITY * delta.signum()
            }
        } else {
            100.0 * delta / base.value
        };
        let separated = if base.metric.exact() {
            delta != 0.0
        } else {
            // Two independent intervals that do not overlap, and a change larger than two runs
            // of one build differ here: anything less is not told apart from a rerun.
            let apart = match (base.lo, base.hi, new.lo, new.hi) {
                (Some(bl), Some(bh), Some(nl), Some(nh)) => nl - bh > 0.0 || nh - bl < 0.0,
                _ => false,
            };
            apart && pct.abs() > TIME_NOISE_PCT
        };
        Change {
            base,
            new,
            delta,
            pct,
            separated,
        }
    }

    /// A change whose `separated` its measurement decided (paired rounds, whose ratio's
    /// interval leaves out 1, or two exact counts that differ), not the two figures' own
    /// intervals.
    pub(crate) fn paired(base: Figure, new: Figure, separated: bool) -> Change {
        Change {
            separated,
            ..Change::of(base, new)
        }
    }

    /// How much worse, in the metric's units (negative: better).
    fn worse_by(&self) -> f64 {
        self.delta * self.base.metric.worse()
    }

    /// Whether `gate` fails on this change.
    pub(crate) fn crosses(&self, gate: &Gate) -> bool {
        if gate.metric != self.base.metric || !self.separated {
            return false;
        }
        let worse_pct = self.pct * self.base.metric.worse();
        if gate.percent {
            worse_pct > gate.limit
        } else {
            self.worse_by() > gate.limit
        }
    }

    /// `+1,234 (+2.1 %)`, or `≈` for a timed change not told apart from a rerun.
    pub(crate) fn text(&self) -> String {
        let m = self.base.metric;
        if !m.exact() && !self.separated {
            return "≈".to_owned();
        }
        let abs = match m {
            Metric::Time => crate::units::fmt_ns(self.delta.abs()),
            Metric::Rps => format!("{:.0} req/s", self.delta.abs()),
            _ => crate::units::fmt_count(self.delta.abs()),
        };
        let sign = if self.delta < 0.0 { '−' } else { '+' };
        if self.delta == 0.0 {
            "0".to_owned()
        } else if self.pct.is_finite() {
            format!("{sign}{abs} ({sign}{:.1} %)", self.pct.abs())
        } else {
            format!("{sign}{abs} (from 0)")
        }
    }
}

/// The first of `gates` whose metric no change has: a gate with nothing to check would pass
/// whatever happened, so `diff` and `ab --patch` refuse it.
pub(crate) fn unchecked<'a>(gates: &'a [Gate], changes: &[Change]) -> Option<&'a Gate> {
    gates
        .iter()
        .find(|g| !changes.iter().any(|ch| ch.base.metric == g.metric))
}

/// What [`compare`] found.
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    /// Cells in both, sorted by the size of the change (largest first).
    pub(crate) changes: Vec<Change>,
    /// Cells only in the base.
    pub(crate) only_base: Vec<String>,
    /// Cells only in the new file.
    pub(crate) only_new: Vec<String>,
}

/// Which cells [`compare`] looks at; an empty list keeps all.
#[derive(Debug, Default, Clone)]
pub(crate) struct Filter {
    /// Frameworks.
    pub(crate) frameworks: Vec<String>,
    /// Scenarios.
    pub(crate) scenarios: Vec<String>,
    /// Variants (substrings: `log=off` keeps `log=off,io=memory`).
    pub(crate) variants: Vec<String>,
}

impl Filter {
    /// Whether the scenario and variant filters keep `f`.
    fn keeps_cell(&self, f: &Figure) -> bool {
        (self.scenarios.is_empty() || self.scenarios.contains(&f.scenario))
            && (self.variants.is_empty() || self.variants.iter().any(|v| f.variant.contains(v)))
    }

    /// Whether every filter keeps `f`.
    fn keeps(&self, f: &Figure) -> bool {
        (self.frameworks.is_empty() || self.frameworks.contains(&f.framework)) && self.keeps_cell(f)
    }
}

/// Pairs `base`'s figures with `new`'s by cell. With `pair = Some((a, b))` both lists are the
/// one file's: `a`'s figures are the base and `b`'s the new, matched by everything but the
/// framework.
pub(crate) fn compare(
    base: &[Figure],
    new: &[Figure],
    pair: Option<(&str, &str)>,
    filter: &Filter,
) -> Comparison {
    type Key = (String, (String, String, String, Metric));
    let key = |f: &Figure| -> Key {
        let fw = if pair.is_some() {
            String::new()
        } else {
            f.framework.clone()
        };
        (fw, f.slot())
    };
    let side = |figures: &[Figure], fw: Option<&str>| -> BTreeMap<Key, Figure> {
        figures
            .iter()
            .filter(|f| fw.is_none_or(|fw| f.framework == fw))
            // With --pair the framework filter does not apply (the pair names them).
            .filter(|f| match pair {
                Some(_) => filter.keeps_cell(f),
                None => filter.keeps(f),
            })
            .map(|f| (key(f), f.clone()))
            .collect()
    };
    let (a, b) = match pair {
        Some((a, b)) => (side(base, Some(a)), side(new, Some(b))),
        None => (side(base, None), side(new, None)),
    };
    let mut out = Comparison::default();
    for (k, f) in &a {
        match b.get(k) {
            Some(g) => out.changes.push(Change::of(f.clone(), g.clone())),
            None => out
                .only_base
                .push(format!("{} {}", f.name(), f.metric.name())),
        }
    }
    for (k, g) in &b {
        if !a.contains_key(k) {
            out.only_new
                .push(format!("{} {}", g.name(), g.metric.name()));
        }
    }
    // Largest relative change first; a timed change that is noise after every separated one.
    out.changes.sort_by(|x, y| {
        y.separated
            .cmp(&x.separated)
            .then(y.pct.abs().total_cmp(&x.pct.abs()))
    });
    out
}

/// The table of a comparison: terminal text, or Markdown for a pull-request comment.
pub(crate) fn table(c: &Comparison, markdown: bool, paired: bool, base: &str, new: &str) -> String {
    let mut s = String::new();
    let fmt_value = |f: &Figure| match f.metric {
        Metric::Time => match (f.lo, f.hi) {
            (Some(lo), Some(hi)) => {
                let pct = 100.0 * (f.value - lo).max(hi - f.value) / f.value.max(1e-9);
                if pct < 1.0 {
                    format!("{} ±<1 %", crate::units::fmt_ns(f.value))
                } else {
                    format!("{} ±{pct:.0} %", crate::units::fmt_ns(f.value))
                }
            }
            _ => crate::units::fmt_ns(f.value),
        },
        Metric::Rps => format!("{:.0}", f.value),
        _ => crate::units::fmt_count(f.value),
    };
    let rows: Vec<[String; 6]> = c
        .changes
        .iter()
        .map(|ch| {
            let cell = if paired {
                format!("{} → {}", ch.base.framework, ch.new.framework)
            } else {
                ch.new.framework.clone()
            };
            [
                ch.base.bench.clone(),
                cell,
                format!("{} {}", ch.base.scenario, ch.base.variant),
                ch.base.metric.name().to_owned(),
                format!("{} → {}", fmt_value(&ch.base), fmt_value(&ch.new)),
                ch.text(),
            ]
        })
        .collect();
    let mut table = Table::new([
        ("bench", Align::Left),
        ("framework", Align::Left),
        ("cell", Align::Left),
        ("metric", Align::Left),
        ("base → new", Align::Right),
        ("change", Align::Right),
    ]);
    for r in rows {
        table.row(r);
    }
    s.push_str(&if markdown {
        table.markdown()
    } else {
        table.terminal("")
    });
    for (label, cells) in [(base, &c.only_base), (new, &c.only_new)] {
        if !cells.is_empty() {
            let _ = writeln!(s, "\nonly in {label} ({}):", cells.len());
            for cell in cells {
                let _ = writeln!(s, "{}{cell}", if markdown { "- " } else { "  " });
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::test_figures::{count, timed};

    #[test]
    fn gates_parse_exactly_the_documented_form() {
        let g = parse_gates("instructions>+1%,allocs>+0").unwrap();
        assert_eq!(
            g,
            [
                Gate {
                    metric: Metric::Instructions,
                    limit: 1.0,
                    percent: true
                },
                Gate {
                    metric: Metric::Allocs,
                    limit: 0.0,
                    percent: false
                }
            ]
        );
        for bad in [
            "instructions",
            "instr>+1%",
            "allocs>1",
            "allocs>+x",
            "allocs>+-1",
            "allocs<+1",
            "",
        ] {
            let e = parse_gates(bad).unwrap_err().to_string();
            assert!(e.starts_with("--fail-if:"), "{bad}: {e}");
        }
    }

    #[test]
    fn an_exact_count_that_grows_crosses_its_gate_and_an_equal_one_does_not() {
        let base = [
            count("a", Metric::Allocs, 10.0),
            count("a", Metric::Bytes, 100.0),
        ];
        let same = compare(&base, &base, None, &Filter::default());
        let strict = parse_gates("allocs>+0,bytes>+0").unwrap();
        assert!(same
            .changes
            .iter()
            .all(|c| !c.separated && strict.iter().all(|g| !c.crosses(g))));
        let new = [
            count("a", Metric::Allocs, 11.0),
            count("a", Metric::Bytes, 100.0),
        ];
        let c = compare(&base, &new, None, &Filter::default());
        assert_eq!(c.changes[0].base.metric, Metric::Allocs, "largest first");
        assert_eq!(c.changes[0].text(), "+1 (+10.0 %)");
        assert!(c.changes[0].crosses(&strict[0]));
        assert!(!c.changes[0].crosses(&parse_gates("allocs>+10%").unwrap()[0]));
        // Fewer allocations are better: no gate fires.
        let c = compare(&new, &base, None, &Filter::default());
        assert!(!c.changes[0].crosses(&strict[0]));
    }

    #[test]
    fn a_time_change_inside_the_intervals_is_noise_and_never_gates() {
        let base = [timed("a", 100.0, 90.0, 110.0)];
        let overlap = [timed("a", 160.0, 105.0, 200.0)];
        let c = compare(&base, &overlap, None, &Filter::default());
        assert!(!c.changes[0].separated);
        assert_eq!(c.changes[0].text(), "≈");
        assert!(!c.changes[0].crosses(&parse_gates("time>+0").unwrap()[0]));
        // Intervals apart, but within the run-to-run spread of this machine: `≈`, no gate.
        let small = [timed("a", 120.0, 115.0, 125.0)];
        let c = compare(&base, &small, None, &Filter::default());
        assert!(!c.changes[0].separated);
        assert_eq!(c.changes[0].text(), "≈");
        assert!(!c.changes[0].crosses(&parse_gates("time>+1%").unwrap()[0]));
        // Separated and beyond it: the gate fires.
        let big = [timed("a", 200.0, 190.0, 210.0)];
        let c = compare(&base, &big, None, &Filter::default());
        assert!(c.changes[0].crosses(&parse_gates("time>+1%").unwrap()[0]));
    }
    #[test]
    fn pair_maps_one_framework_onto_another_and_lists_the_unmatched() {
        let figures = [
            count("old", Metric::Allocs, 5.0),
            count("new", Metric::Allocs, 7.0),
            Figure::count("allocs", "new", "json", "log=off", Metric::Allocs, 3.0),
        ];
        let c = compare(&figures, &figures, Some(("old", "new")), &Filter::default());
        assert_eq!(c.changes.len(), 1);
        assert_eq!(c.changes[0].delta, 2.0);
        assert_eq!(c.only_new, ["allocs new json log=off allocs"]);
        assert!(c.only_base.is_empty());
    }
}
