//! A consistency check of the in-process times against themselves: the canned scenarios
//! (hello, not_found, json) do the same work in every framework but for a few bytes, so a
//! framework's time ratio between two of them should follow its instruction ratio. A host that
//! drifted between two groups of criterion's shows up here as a ratio far from the counts' (the
//! published run of 78d4afe missed by more than 1.3× in 32 of 63 pairs).

use std::fmt::Write as _;

use super::read::{Count, Timing};
use super::table_of;

/// The scenarios compared: the canned ones, whose work differs by a few bytes.
const CANNED: [&str; 3] = ["hello", "not_found", "json"];
/// How far a time ratio may lie from the instruction ratio before it is listed.
pub(crate) const LIMIT: f64 = 1.3;

/// One framework × pair of scenarios.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Pair {
    pub(crate) framework: String,
    /// `hello / not_found`.
    pub(crate) scenarios: (&'static str, &'static str),
    /// The time ratio: the medians' ratio, and the widest ratio the two intervals allow.
    pub(crate) time: (f64, f64, f64),
    /// The instruction ratio.
    pub(crate) instructions: f64,
}

impl Pair {
    /// Whether even the end of the time ratio's range nearest the instruction ratio lies more
    /// than [`LIMIT`] from it.
    pub(crate) fn misses(&self) -> bool {
        let (_, lo, hi) = self.time;
        lo > self.instructions * LIMIT || hi < self.instructions / LIMIT
    }

    /// The time ratio's point over the instruction ratio.
    fn off_by(&self) -> f64 {
        self.time.0 / self.instructions
    }
}

/// Every framework × pair of canned scenarios with both a time (`log=off,io=memory`) and an
/// instruction count (logging off) in both.
pub(crate) fn pairs(timings: &[Timing], counts: &[Count]) -> Vec<Pair> {
    let time = |fw: &str, s: &str| {
        timings
            .iter()
            .find(|t| {
                t.group == format!("in_process/{s}")
                    && t.function == fw
                    && t.value == "log=off,io=memory"
            })
            .map(|t| t.ns)
    };
    let count = |fw: &str, s: &str| {
        counts
            .iter()
            .find(|c| c.framework == fw && c.key == format!("in_process/{s}/off"))
            .map(|c| c.instructions)
    };
    let mut names: Vec<String> = timings.iter().map(|t| t.function.clone()).collect();
    names = super::ordered(names);
    let mut out = Vec::new();
    for fw in &names {
        for (i, a) in CANNED.iter().enumerate() {
            for b in &CANNED[i + 1..] {
                let (Some(ta), Some(tb), Some(ia), Some(ib)) =
                    (time(fw, a), time(fw, b), count(fw, a), count(fw, b))
                else {
                    continue;
                };
                let (lo, hi) = if ta.bounded() && tb.bounded() {
                    (ta.lo / tb.hi, ta.hi / tb.lo)
                } else {
                    (0.0, f64::INFINITY)
                };
                out.push(Pair {
                    framework: fw.clone(),
                    scenarios: (a, b),
                    time: (ta.point / tb.point, lo, hi),
                    instructions: ia / ib,
                });
            }
        }
    }
    out
}

/// The check as a section of the report; returns how many pairs miss.
pub(crate) fn write(out: &mut String, pairs: &[Pair]) -> usize {
    out.push_str("### Time ratios between scenarios against the instruction ratios\n\n");
    if pairs.is_empty() {
        out.push_str(
            "Nothing to check: no framework has both times and instruction counts of two of \
             hello, not_found and json.\n\n",
        );
        return 0;
    }
    let missed: Vec<&Pair> = pairs.iter().filter(|p| p.misses()).collect();
    let _ = writeln!(
        out,
        "hello, not_found and json do the same work in a framework but for a few bytes, so its \
         time ratio between two of them should follow its instruction ratio. A pair is listed \
         when even the end of the time ratio's range (from the two times' intervals) nearest the \
         instruction ratio lies more than {LIMIT}× from it: a drift of the host between the two \
         cells, or a cost that instructions do not count (cache misses, a system call). \
         {} of {} pairs miss.\n",
        missed.len(),
        pairs.len()
    );
    if missed.is_empty() {
        return 0;
    }
    table_of(
        out,
        &[
            "framework",
            "scenarios",
            "time ratio (range)",
            "instruction ratio",
            "off by",
        ],
        &missed,
        |p| {
            vec![
                p.framework.clone(),
                format!("{} / {}", p.scenarios.0, p.scenarios.1),
                format!("{:.2} ({:.2}–{:.2})", p.time.0, p.time.1, p.time.2),
                format!("{:.2}", p.instructions),
                format!("{:.2}×", p.off_by()),
            ]
        },
    );
    missed.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn time(fw: &str, s: &str, us: f64, pct: f64) -> Timing {
        Timing::of(&format!("in_process/{s}"), fw, "log=off,io=memory", us, pct)
    }

    fn count(fw: &str, s: &str, n: f64) -> Count {
        Count {
            key: format!("in_process/{s}/off"),
            framework: fw.into(),
            instructions: n,
        }
    }

    #[test]
    fn a_drifted_group_is_listed_and_a_consistent_one_is_not() {
        // iron's hello ran in a slow spell: 11.06 µs against 6.39 for not_found, although it
        // counts fewer instructions for hello (0.89 of not_found's). axum's follow its counts.
        let timings = vec![
            time("iron", "hello", 11.06, 2.0),
            time("iron", "not_found", 6.39, 2.0),
            time("axum", "hello", 1.10, 2.0),
            time("axum", "not_found", 1.00, 2.0),
        ];
        let counts = vec![
            count("iron", "hello", 8_900.0),
            count("iron", "not_found", 10_000.0),
            count("axum", "hello", 5_300.0),
            count("axum", "not_found", 5_000.0),
        ];
        let pairs = pairs(&timings, &counts);
        assert_eq!(pairs.len(), 2);
        let mut out = String::new();
        assert_eq!(write(&mut out, &pairs), 1);
        assert!(out.contains("| iron") && !out.contains("| axum"), "{out}");
        assert!(out.contains("1 of 2 pairs miss"), "{out}");
    }

    #[test]
    fn an_interval_that_reaches_the_band_is_not_listed() {
        // 1.5× off at the medians, but the intervals (±20 %) reach within 1.3×.
        let timings = vec![time("x", "hello", 1.5, 20.0), time("x", "json", 1.0, 20.0)];
        let counts = vec![count("x", "hello", 100.0), count("x", "json", 100.0)];
        assert!(!pairs(&timings, &counts)[0].misses());
    }
}
