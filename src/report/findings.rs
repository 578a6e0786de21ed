//! The report's consistency section: every timed difference checked against the exact counts
//! of the same difference (instructions, allocations), and listed when they disagree or when
//! nothing exact can check it.

use std::fmt::Write as _;

use super::orders::{
    instructions_against_time, time_against_ratios, write_instructions_against_time,
    write_time_against_ratios,
};
use super::outliers::{baseline_outliers, write_baseline_outliers};
use super::read::{Count, Timing};
use super::table_of;
use crate::interval;
use crate::paired::{Delta, Kind};
use crate::units::fmt_count;

/// One timed difference the report lists under Consistency.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Finding {
    /// `logging axum hello`.
    pub(crate) cell: String,
    /// What the time says, as printed.
    pub(crate) time: String,
    /// What the exact counts say, or that there are none.
    pub(crate) counts: String,
    /// Whether the counts contradict the time (time says less work, counts more, or the
    /// reverse); otherwise the finding is listed because nothing exact can check it.
    pub(crate) contradiction: bool,
}

/// The exact counts a timed difference can be checked against: instructions per request
/// (callgrind) and allocation calls per request.
struct Witnesses<'a> {
    counts: &'a [Count],
    allocs: &'a [crate::allocs::Measured],
}

impl Witnesses<'_> {
    fn instructions(&self, fw: &str, key: &str) -> Option<f64> {
        self.counts
            .iter()
            .find(|c| c.framework == fw && c.key == key)
            .map(|c| c.instructions)
    }

    fn alloc_calls(&self, fw: &str, scenario: &str, logging: &str) -> Option<f64> {
        self.allocs
            .iter()
            .find(|c| c.framework == fw && c.scenario == scenario && c.logging == logging)
            .and_then(|c| c.counts.as_ref())
            .map(|c| (c.allocs + c.reallocs) as f64)
    }
}

/// Every timed difference that needs an explanation: a separated negative cost (logging or
/// disk I/O making a request cheaper), a separated cost whose exact counts go the other way,
/// and a framework faster than `raw` beyond the interval. Differences printed as `≈` are never
/// listed: they claim nothing.
pub(crate) fn findings(
    deltas: &[Delta],
    counts: &[Count],
    allocs: &[crate::allocs::Measured],
) -> Vec<Finding> {
    let w = Witnesses { counts, allocs };
    deltas
        .iter()
        .filter(|d| d.error.is_none())
        .filter_map(|d| match d.kind {
            Kind::Logging | Kind::Disk => variant_finding(d, &w),
            Kind::VsRaw => vs_raw_finding(d, &w),
        })
        .collect()
}

/// A logging or disk I/O difference, when it is a separated negative cost or its exact counts
/// go the other way.
fn variant_finding(d: &Delta, w: &Witnesses<'_>) -> Option<Finding> {
    let (Some(delta), Some(base)) = (d.delta_ns, d.base_ns) else {
        return None;
    };
    if !delta.separated(0.0) {
        return None;
    }
    // The exact witnesses of the same difference: callgrind and allocation counts exist for
    // logging (io memory), none for disk I/O.
    let mut witnesses = Vec::new();
    if d.kind == Kind::Logging {
        let off = |k: &str| format!("in_process/{}/{k}", d.scenario);
        if let (Some(a), Some(b)) = (
            w.instructions(&d.framework, &off("off")),
            w.instructions(&d.framework, &off("sink")),
        ) {
            witnesses.push(("instructions", a, b));
        }
        if let (Some(a), Some(b)) = (
            w.alloc_calls(&d.framework, &d.scenario, "off"),
            w.alloc_calls(&d.framework, &d.scenario, "sink"),
        ) {
            witnesses.push(("allocations", a, b));
        }
    }
    let against = witnesses
        .iter()
        .any(|(_, a, b)| b != a && (b - a).signum() != delta.point.signum());
    if !against && delta.point >= 0.0 {
        return None;
    }
    let counts = if witnesses.is_empty() {
        "no exact count of this difference".to_owned()
    } else {
        witnesses
            .iter()
            .map(|(what, a, b)| {
                let sign = if b >= a { "+" } else { "−" };
                format!("{sign}{} {what}", fmt_count((b - a).abs()))
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    Some(Finding {
        cell: cell_name(d),
        time: interval::delta_text(&delta, base.point),
        counts,
        contradiction: against,
    })
}

/// A framework against raw over loopback, when it is faster beyond the interval or its
/// instruction count says the opposite of its time.
fn vs_raw_finding(d: &Delta, w: &Witnesses<'_>) -> Option<Finding> {
    let ratio = d.ratio?;
    let faster = ratio.separated(1.0) && ratio.point > 1.0;
    let slower = ratio.separated(1.0) && ratio.point < 1.0;
    let key = format!("loopback/{}", d.scenario);
    let (fw, raw) = (
        w.instructions(&d.framework, &key),
        w.instructions(&d.base, &key),
    );
    // The time and the count of the same two servers: slower than raw in time but fewer
    // instructions, or the reverse, is a contradiction.
    let (counts, contradiction) = match (fw, raw) {
        (Some(f), Some(r)) => (
            format!(
                "{} instructions per request against {}'s {}",
                fmt_count(f),
                d.base,
                fmt_count(r)
            ),
            (faster && f > r) || (slower && f < r),
        ),
        _ => ("no loopback count of this cell".to_owned(), false),
    };
    if !faster && !contradiction {
        return None;
    }
    Some(Finding {
        cell: cell_name(d),
        time: interval::ratio_text(&ratio),
        counts,
        contradiction,
    })
}

/// `logging axum hello`.
fn cell_name(d: &Delta) -> String {
    format!("{} {} {}", d.kind_name(), d.framework, d.scenario)
}

/// The consistency section: [`findings`], contradictions first, then the checks of order
/// ([`super::orders`]) and of the baselines against themselves ([`super::outliers`]).
pub(super) fn write_consistency(
    out: &mut String,
    timings: &[Timing],
    deltas: &[Delta],
    counts: &[Count],
    allocs: &[crate::allocs::Measured],
    loopback_source: &str,
) {
    out.push_str(
        "## Consistency: time against the exact counts\n\n\
         Five checks, each of a figure against another witness of the same thing, each listing \
         what disagrees with the figures of both. docs/methodology/callgrind.md (\"Time against \
         the counts\") gives their rules and explains the findings of the published run.\n\n",
    );
    write_count_findings(out, deltas, counts, allocs);
    write_time_against_ratios(out, &time_against_ratios(timings, deltas), loopback_source);
    super::scenario_ratios::write(out, &super::scenario_ratios::pairs(timings, counts));
    let baselines: Vec<&str> = crate::frameworks::REGISTRY
        .iter()
        .filter(|e| e.baseline)
        .map(|e| e.name)
        .collect();
    write_baseline_outliers(out, &baseline_outliers(timings, &baselines));
    write_instructions_against_time(
        out,
        &instructions_against_time(timings, counts),
        loopback_source,
    );
}

/// [`findings`] as a table, contradictions first.
fn write_count_findings(
    out: &mut String,
    deltas: &[Delta],
    counts: &[Count],
    allocs: &[crate::allocs::Measured],
) {
    out.push_str("### Differences against the counts\n\n");
    if deltas.is_empty() {
        out.push_str("No paired differences to check: `framebench deltas` has not run.\n\n");
        return;
    }
    let mut found = findings(deltas, counts, allocs);
    found.sort_by_key(|f| !f.contradiction);
    let contradictions = found.iter().filter(|f| f.contradiction).count();
    let _ = writeln!(
        out,
        "Every difference printed as a number above is checked here. A contradiction is a time \
         that says less work where the exact counts (callgrind instructions, allocation calls) \
         say more, or the reverse: for the loopback ratio, slower than `raw` with fewer \
         instructions per request than `raw`, or faster with more. Also listed, for \
         explanation: a cost that comes out negative, and a framework faster than `raw`, the \
         loopback reference. {contradictions} contradiction(s), {} other finding(s).\n",
        found.len() - contradictions
    );
    if found.is_empty() {
        return;
    }
    table_of(
        out,
        &["cell", "time says", "counts say", "contradiction"],
        &found[..],
        |f| {
            vec![
                f.cell.clone(),
                f.time.clone(),
                f.counts.clone(),
                if f.contradiction { "yes" } else { "no" }.to_owned(),
            ]
        },
    );
}
