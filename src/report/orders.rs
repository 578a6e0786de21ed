//! The report's consistency checks of order, column by column over loopback: the time order of
//! two servers against the order of their paired ratios to `raw` ([`time_against_ratios`]), and
//! against the order of their instructions per request ([`instructions_against_time`]). A pair
//! is listed only when both witnesses order it, each beyond its intervals (or margin), and in
//! opposite ways; a pair either witness leaves unordered claims nothing and is not listed.
//!
//! Times are compared only within one shard (`framebench report --target-dir A --target-dir B`):
//! two shards ran at two times, or on two machines.

use std::cmp::Ordering;
use std::fmt::Write as _;

use super::read::{Count, Timing};
use super::table_of;
use crate::interval::{self, Estimate};
use crate::paired::{Delta, Kind};
use crate::units::fmt_count;

/// The loopback client of the times `framebench deltas`' ratios are read against: pre-encoded
/// requests and exact-length reads, the client `deltas` times its rounds with.
pub(super) const PAIRED_CLIENT: &str = "raw-client";

/// How much larger one loopback count has to be than another for the counts to order the two
/// servers: 20 %. A loopback count per request has moved by 4 % between two runs of one build
/// (raw: 838 and 875) and by a few percent between builds (docs/methodology/callgrind.md); 20 %
/// is well beyond both.
pub(crate) const INSTRUCTION_MARGIN: f64 = 1.2;

/// Two servers of one column that the loopback times order one way and another witness the
/// other way.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Disagreement {
    /// The scenario (the column).
    pub(crate) scenario: String,
    /// The times, the faster first: `gotham 18.61 µs ±1 % < actix 24.04 µs ±<1 %`.
    pub(crate) times: String,
    /// The other witness, the same two servers in the same order.
    pub(crate) against: String,
}

/// One column's time order against its paired ratios.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Column {
    /// The scenario.
    pub(crate) scenario: String,
    /// Pairs that both the times and the ratios order.
    pub(crate) ordered: usize,
    /// Those of them the two order in opposite ways.
    pub(crate) disagreements: Vec<Disagreement>,
}

/// `Less` when `a`'s interval lies wholly below `b`'s, `Greater` when wholly above, `None` when
/// they overlap or either is unbounded.
fn separated_order(a: &Estimate, b: &Estimate) -> Option<Ordering> {
    if a.hi < b.lo {
        Some(Ordering::Less)
    } else if b.hi < a.lo {
        Some(Ordering::Greater)
    } else {
        None
    }
}

/// The scenarios among `names`, in the oracle's order (any other after them, sorted).
fn scenarios<'a>(names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = names.collect();
    let rank = |s: &str| crate::oracle::SCENARIOS.iter().position(|o| o.name == s);
    out.sort_by_key(|s| (rank(s).unwrap_or(usize::MAX), *s));
    out.dedup();
    out
}

/// The loopback times of `scenario` with the pre-encoded client.
fn loopback_times<'a>(timings: &'a [Timing], scenario: &str) -> impl Iterator<Item = &'a Timing> {
    let group = format!("loopback/{scenario}");
    timings
        .iter()
        .filter(move |t| t.group == group && t.value == PAIRED_CLIENT)
}

/// Every pair of two servers timed in one shard, each pair once.
fn same_shard_pairs<T>(items: &[(&Timing, T)]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (i, (a, _)) in items.iter().enumerate() {
        for (j, (b, _)) in items.iter().enumerate().skip(i + 1) {
            if a.shard == b.shard && a.function != b.function {
                out.push((i, j));
            }
        }
    }
    out
}

/// `a` and `b` with the faster by time first.
fn faster_first<P>(a: P, b: P, by_time: Ordering) -> [P; 2] {
    if by_time == Ordering::Less {
        [a, b]
    } else {
        [b, a]
    }
}

/// `gotham 18.61 µs ±1 % < actix 24.04 µs ±<1 %`.
fn times_text(fast: &Timing, slow: &Timing) -> String {
    format!(
        "{} {} < {} {}",
        fast.function,
        interval::time_text(&fast.ns),
        slow.function,
        interval::time_text(&slow.ns)
    )
}

/// Each column's loopback time order against the paired ratios of `framebench deltas`.
///
/// The rule: in one scenario, two servers `A` and `B` with a criterion loopback time (the
/// pre-encoded client) and a paired ratio to `raw` (`raw`'s time over theirs, higher is faster;
/// `raw`'s own is 1 exactly) disagree when their time intervals do not overlap and put `A`
/// first, while the paired ratio of the pair excludes 1 and puts `B` first. The pair's ratio
/// `R_A / R_B` has, from the two ratios' intervals and without assuming anything about how they
/// depend on each other, the interval `[R_A.lo / R_B.hi, R_A.hi / R_B.lo]`, which excludes 1
/// exactly when the two intervals do not overlap; against `raw` it is `R_A` itself. (Two 95 %
/// intervals hold both ratios together with at least 90 %, so the pair's interval covers at
/// least that.)
pub(crate) fn time_against_ratios(timings: &[Timing], deltas: &[Delta]) -> Vec<Column> {
    let paired: Vec<&Delta> = deltas
        .iter()
        .filter(|d| d.kind == Kind::VsRaw && d.error.is_none())
        .collect();
    scenarios(paired.iter().map(|d| d.scenario.as_str()))
        .into_iter()
        .map(|s| ratio_column(s, timings, &paired))
        .collect()
}

/// [`time_against_ratios`] of one column.
fn ratio_column(scenario: &str, timings: &[Timing], paired: &[&Delta]) -> Column {
    let ratio_of = |fw: &str| -> Option<Estimate> {
        let mut column = paired.iter().filter(|d| d.scenario == scenario);
        if let Some(d) = column.clone().find(|d| d.framework == fw) {
            return d.ratio;
        }
        // The reference the column's ratios are taken against: 1, exactly.
        column.any(|d| d.base == fw).then_some(Estimate {
            point: 1.0,
            lo: 1.0,
            hi: 1.0,
        })
    };
    let servers: Vec<(&Timing, Estimate)> = loopback_times(timings, scenario)
        .filter_map(|t| Some((t, ratio_of(&t.function)?)))
        .collect();
    let mut column = Column {
        scenario: scenario.to_owned(),
        ordered: 0,
        disagreements: Vec::new(),
    };
    for (i, j) in same_shard_pairs(&servers) {
        let (a, b) = (&servers[i], &servers[j]);
        // Faster is less time, and a higher ratio.
        let (Some(by_time), Some(by_ratio)) = (
            separated_order(&a.0.ns, &b.0.ns),
            separated_order(&b.1, &a.1),
        ) else {
            continue;
        };
        column.ordered += 1;
        if by_time == by_ratio {
            continue;
        }
        let [fast, slow] = faster_first(a, b, by_time);
        column.disagreements.push(Disagreement {
            scenario: scenario.to_owned(),
            times: times_text(fast.0, slow.0),
            against: format!(
                "{} {} < {} {}",
                fast.0.function,
                ratio_figure(&fast.1),
                slow.0.function,
                ratio_figure(&slow.1)
            ),
        });
    }
    column
}

/// A paired ratio with its interval to three places (`0.456 (0.455–0.458)`: the report's two
/// places print most of these as `±0.00`), or `1 (reference)`.
fn ratio_figure(r: &Estimate) -> String {
    if r.lo == r.hi {
        return format!("{} (reference)", r.point);
    }
    format!("{:.3} ({:.3}–{:.3})", r.point, r.lo, r.hi)
}

/// Each column's loopback time order against the loopback instructions per request.
///
/// The rule: in one scenario, two servers with a callgrind loopback count and a criterion
/// loopback time (the pre-encoded client) disagree when one counts at least
/// [`INSTRUCTION_MARGIN`] times the other's instructions per request (20 % more) yet takes less
/// time, their time intervals not overlapping.
pub(crate) fn instructions_against_time(timings: &[Timing], counts: &[Count]) -> Vec<Disagreement> {
    let counted = |key: &str, fw: &str| {
        counts
            .iter()
            .find(|c| c.key == key && c.framework == fw)
            .map(|c| c.instructions)
    };
    let columns = scenarios(counts.iter().filter_map(|c| {
        let s = c.key.strip_prefix("loopback/")?;
        (!s.contains('/')).then_some(s)
    }));
    let mut found = Vec::new();
    for scenario in columns {
        let key = format!("loopback/{scenario}");
        let servers: Vec<(&Timing, f64)> = loopback_times(timings, scenario)
            .filter_map(|t| Some((t, counted(&key, &t.function)?)))
            .collect();
        for (i, j) in same_shard_pairs(&servers) {
            let (a, b) = (&servers[i], &servers[j]);
            let by_count = if b.1 >= a.1 * INSTRUCTION_MARGIN {
                Ordering::Less
            } else if a.1 >= b.1 * INSTRUCTION_MARGIN {
                Ordering::Greater
            } else {
                continue;
            };
            let Some(by_time) = separated_order(&a.0.ns, &b.0.ns) else {
                continue;
            };
            if by_time == by_count {
                continue;
            }
            let [fast, slow] = faster_first(a, b, by_time);
            found.push(Disagreement {
                scenario: scenario.to_owned(),
                times: times_text(fast.0, slow.0),
                against: format!(
                    "{} {} > {} {} (×{:.2})",
                    fast.0.function,
                    fmt_count(fast.1),
                    slow.0.function,
                    fmt_count(slow.1),
                    fast.1 / slow.1
                ),
            });
        }
    }
    found
}

/// The time-against-ratios part of the consistency section.
/// `source` names where the loopback times come from (`framebench time --loopback`'s
/// interleaved rounds, or criterion's).
pub(super) fn write_time_against_ratios(out: &mut String, columns: &[Column], source: &str) {
    out.push_str("### Loopback time order against the paired ratios\n\n");
    if columns.is_empty() {
        out.push_str("No paired ratios to `raw`: `framebench deltas` has not run.\n\n");
        return;
    }
    let _ = writeln!(
        out,
        "Two servers of one column disagree when their loopback times ({source}) order them one \
         way, the two intervals not overlapping, and their paired ratios to `raw` (`framebench \
         deltas`, run at another time, one connection held for its rounds) the other way, the \
         two ratios' intervals not overlapping (so that the pair's own ratio, `[R_A.lo / \
         R_B.hi, R_A.hi / R_B.lo]`, excludes 1; against `raw` itself, whose ratio is 1, the \
         other's ratio excludes 1). The two runs differ in when they ran and in the connection \
         (the times open one per batch), so a disagreement names the pair to measure again, \
         not which witness is right.\n"
    );
    table_of(
        out,
        &["scenario", "pairs ordered by both", "disagree"],
        columns,
        |c| {
            vec![
                c.scenario.clone(),
                c.ordered.to_string(),
                c.disagreements.len().to_string(),
            ]
        },
    );
    let all: Vec<Disagreement> = columns
        .iter()
        .flat_map(|c| c.disagreements.iter().cloned())
        .collect();
    write_disagreements(out, &all, "ratios to `raw` (higher is faster)");
}

/// The instructions-against-time part of the consistency section.
/// `source` as in [`write_time_against_ratios`].
pub(super) fn write_instructions_against_time(
    out: &mut String,
    found: &[Disagreement],
    source: &str,
) {
    out.push_str("### Loopback instructions against loopback time\n\n");
    let _ = writeln!(
        out,
        "Two servers disagree when one counts at least {:.0} % more loopback instructions per \
         request than the other (callgrind, whole server process) yet takes less time over \
         loopback ({}), the two time intervals not overlapping. The \
         counts hold user-space instructions only; the time holds the kernel and the wake-ups \
         too. {} disagreement(s).\n",
        (INSTRUCTION_MARGIN - 1.0) * 100.0,
        source,
        found.len()
    );
    write_disagreements(out, found, "instructions per request");
}

/// A table of disagreements, if any: scenario, the times, the other witness.
fn write_disagreements(out: &mut String, found: &[Disagreement], witness: &str) {
    if found.is_empty() {
        return;
    }
    table_of(
        out,
        &["scenario", "times (lower is faster)", witness],
        found,
        |d| vec![d.scenario.clone(), d.times.clone(), d.against.clone()],
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loopback time of `us` µs ±0.2 %, in shard 0.
    fn time(fw: &str, us: f64) -> Timing {
        Timing::of("loopback/hello", fw, PAIRED_CLIENT, us, 0.2)
    }

    /// A paired ratio to raw of `point` ±0.01.
    fn ratio(fw: &str, point: f64) -> Delta {
        let mut d = crate::paired::empty(Kind::VsRaw, fw, "hello", "raw".into(), fw.into());
        d.ratio = Some(Estimate {
            point,
            lo: point - 0.01,
            hi: point + 0.01,
        });
        d
    }

    fn count(fw: &str, instructions: f64) -> Count {
        Count {
            key: "loopback/hello".into(),
            framework: fw.into(),
            instructions,
        }
    }

    /// raw 10 µs, quick 12 µs, slow 15 µs.
    fn times() -> Vec<Timing> {
        vec![time("raw", 10.0), time("quick", 12.0), time("slow", 15.0)]
    }

    #[test]
    fn times_and_ratios_in_one_order_disagree_nowhere() {
        let deltas = vec![ratio("quick", 0.83), ratio("slow", 0.67)];
        let columns = time_against_ratios(&times(), &deltas);
        assert_eq!(columns.len(), 1, "{columns:?}");
        assert_eq!(columns[0].ordered, 3, "{columns:?}");
        assert!(columns[0].disagreements.is_empty(), "{columns:?}");
    }

    #[test]
    fn a_pair_the_ratios_order_the_other_way_is_listed_with_its_figures() {
        // slow's ratio says it is the faster of the two, and faster than raw.
        let deltas = vec![ratio("quick", 0.83), ratio("slow", 1.10)];
        let columns = time_against_ratios(&times(), &deltas);
        let found = &columns[0].disagreements;
        assert_eq!((columns[0].ordered, found.len()), (3, 2), "{found:?}");
        assert_eq!(found[0].times, "raw 10.00 µs ±<1 % < slow 15.00 µs ±<1 %");
        assert_eq!(
            found[0].against,
            "raw 1 (reference) < slow 1.100 (1.090–1.110)"
        );
        assert!(found[1].times.starts_with("quick 12.00 µs"), "{found:?}");
        assert!(found[1].against.starts_with("quick 0.830"), "{found:?}");
        let mut out = String::new();
        write_time_against_ratios(&mut out, &columns, "criterion");
        assert!(out.contains("| hello | 3 | 2 |"), "{out}");
        assert!(out.contains("| hello | quick 12.00 µs"), "{out}");
    }

    #[test]
    fn a_pair_either_witness_leaves_unordered_is_not_compared() {
        // quick's and slow's ratios overlap; raw and quick overlap in time.
        let deltas = vec![ratio("quick", 0.70), ratio("slow", 0.71)];
        let mut timings = times();
        timings[1] = time("quick", 10.02);
        let columns = time_against_ratios(&timings, &deltas);
        assert_eq!(columns[0].ordered, 1, "{columns:?}");
        assert!(columns[0].disagreements.is_empty(), "{columns:?}");
        // Two shards: their times are not compared.
        timings[2].shard = 1;
        assert_eq!(time_against_ratios(&timings, &deltas)[0].ordered, 0);
    }

    #[test]
    fn counts_in_the_time_order_or_within_the_margin_disagree_nowhere() {
        let counts = vec![
            count("raw", 2_000.0),
            count("quick", 10_000.0),
            count("slow", 30_000.0),
        ];
        assert!(instructions_against_time(&times(), &counts).is_empty());
        // slow is slower with 15 % fewer instructions than quick: inside the margin.
        let counts = vec![count("quick", 10_000.0), count("slow", 8_700.0)];
        assert!(instructions_against_time(&times(), &counts).is_empty());
    }

    #[test]
    fn fewer_instructions_beyond_the_margin_but_more_time_is_listed() {
        // raw counts a fifth of quick's instructions but takes more time.
        let mut timings = times();
        timings[0] = time("raw", 15.36);
        let counts = vec![count("raw", 2_216.0), count("quick", 9_865.0)];
        let found = instructions_against_time(&timings, &counts);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].times, "quick 12.00 µs ±<1 % < raw 15.36 µs ±<1 %");
        assert_eq!(found[0].against, "quick 9,865 > raw 2,216 (×4.45)");
        let mut out = String::new();
        write_instructions_against_time(&mut out, &found, "criterion");
        assert!(out.contains("at least 20 % more"), "{out}");
        assert!(out.contains("1 disagreement(s)"), "{out}");
        assert!(out.contains("| hello | quick 12.00 µs"), "{out}");
    }
}
