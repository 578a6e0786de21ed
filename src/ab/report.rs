//! What `ab --patch` prints and writes: the table of changes (terminal, or Markdown for a
//! pull-request comment), the gates it crossed, and its results file, which `framebench diff`
//! reads ([`sides`]).

use std::fmt::Write as _;

use super::measure::{BASE, NEW};
use super::patch::{Builds, Measured, Plan};
use crate::results::diff::{table, Comparison, Gate};
use crate::results::{Figure, Results};

/// The whole report: what was compared, the table, where instructions went, what was not
/// measured and the gates' verdict.
pub(crate) fn render(
    plan: &Plan,
    builds: &Builds,
    m: &Measured,
    gates: &[Gate],
    markdown: bool,
) -> String {
    let mut s = String::new();
    let item = if markdown { "- " } else { "" };
    if markdown {
        let _ = writeln!(s, "### framebench ab --patch {}\n", plan.patch_arg());
    }
    let _ = writeln!(s, "{item}base: {}", builds.base_label);
    let _ = writeln!(s, "{item}new: {}", builds.new_label);
    for line in &plan.lines {
        let _ = writeln!(s, "{item}{line}");
    }
    for change in &builds.new.changes {
        let _ = writeln!(s, "{item}new manifest: {change}");
    }
    let _ = writeln!(
        s,
        "{item}lock: {}",
        if builds.moved.is_empty() {
            "nothing else moved between the two builds".to_owned()
        } else {
            format!("also moved for new: {}", builds.moved.join(", "))
        }
    );
    let _ = writeln!(
        s,
        "{item}builds: base {:.0} s, new {:.0} s (features of the frameworks measured only)",
        builds.took.0.as_secs_f64(),
        builds.took.1.as_secs_f64()
    );
    let _ = writeln!(s, "{item}run: {}", crate::generated::stamp());
    let _ = writeln!(s, "{item}machine: {}", crate::env::Environment::current());
    let _ = writeln!(
        s,
        "{item}counts are exact; time and rate are NEW / BASE in paired rounds (the change is \
         the median ratio, `≈` where its 95 % interval holds 1); instruction counts can move \
         between a registry build and a path build of the same source, so read them beside the \
         allocations"
    );
    s.push('\n');
    let mut changes: Vec<_> = m
        .changes
        .iter()
        .cloned()
        .map(|mut c| {
            c.base.bench = "ab".to_owned();
            c
        })
        .collect();
    // Cell by cell, each cell's metrics in one order: counts, then time, then rate.
    changes.sort_by(|a, b| {
        (&a.new.framework, &a.new.scenario, a.new.metric).cmp(&(
            &b.new.framework,
            &b.new.scenario,
            b.new.metric,
        ))
    });
    let shown = Comparison {
        changes,
        ..Comparison::default()
    };
    s.push_str(&table(&shown, markdown, false, "base", "new"));
    for (cell, functions) in &m.functions {
        let _ = writeln!(
            s,
            "\n{cell}: self instructions per request new spends beyond base:"
        );
        if markdown {
            s.push_str("```\n");
        }
        for (f, d) in functions {
            let _ = writeln!(s, "{d:>+10.1}  {}", crate::bench::callgrind::shorten(f));
        }
        if markdown {
            s.push_str("```\n");
        }
    }
    if !m.missing.is_empty() {
        let _ = writeln!(s, "\nnot measured:");
        for line in &m.missing {
            let _ = writeln!(s, "{}{line}", if markdown { "- " } else { "  " });
        }
    }
    let crossed = crossed(m, gates);
    if !gates.is_empty() {
        if crossed.is_empty() {
            let _ = writeln!(s, "\nno gate crossed");
        } else {
            let _ = writeln!(s, "\n{} cell(s) crossed a gate:", crossed.len());
            for c in &crossed {
                let _ = writeln!(s, "{}{c}", if markdown { "- " } else { "  " });
            }
        }
    }
    s
}

/// `profile --callgrind --patch`'s report: both sides' instructions per request, then per
/// function what the new build spends beyond the base (`rows`), and the rest in one line.
pub(crate) fn functions(
    builds: &Builds,
    (base, new): (&Figure, &Figure),
    rows: &[(String, f64)],
) -> String {
    let mut s = format!(
        "{} {} {}: {} → {} instructions per request under callgrind\nbase: {}\nnew: {}\n\
         self instructions per request new spends beyond base, by function:\n",
        new.framework,
        new.scenario,
        new.variant,
        crate::units::fmt_count(base.value),
        crate::units::fmt_count(new.value),
        builds.base_label,
        builds.new_label
    );
    let shown: f64 = rows.iter().map(|(_, d)| d).sum();
    for (f, d) in rows {
        let _ = writeln!(s, "{d:>+10.1}  {}", crate::bench::callgrind::shorten(f));
    }
    let total = new.value - base.value;
    if (total - shown).abs() > 0.05 {
        let _ = writeln!(
            s,
            "{:>+10.1}  the other functions that differ",
            total - shown
        );
    }
    let _ = writeln!(s, "{total:>+10.1}  total");
    s
}

/// Each change that crosses a gate, as `framework scenario variant metric: change`.
pub(crate) fn crossed(m: &Measured, gates: &[Gate]) -> Vec<String> {
    m.changes
        .iter()
        .filter(|c| gates.iter().any(|g| c.crosses(g)))
        .map(|c| {
            format!(
                "{} {} {} {}: {}",
                c.new.framework,
                c.new.scenario,
                c.new.variant,
                c.new.metric.name(),
                c.text()
            )
        })
        .collect()
}

/// Every gate names a metric that was measured ([`crate::results::diff::unchecked`]).
pub(crate) fn check_gates(m: &Measured, gates: &[Gate]) -> anyhow::Result<()> {
    match crate::results::diff::unchecked(gates, &m.changes) {
        Some(g) => Err(crate::error::usage(format!(
            "--fail-if {}: no {} figure was measured",
            g.metric.name(),
            g.metric.name()
        ))),
        None => Ok(()),
    }
}

/// The results file: each change's base figure (bench `ab/base`) and new figure (`ab/new`).
pub(crate) fn results(m: &Measured, provenance: crate::provenance::Provenance) -> Results {
    let figures = m
        .changes
        .iter()
        .flat_map(|c| [c.base.clone(), c.new.clone()])
        .collect();
    Results::new("ab", figures, provenance)
}

/// An `ab` results file as the two files `diff` compares: its base figures and its new
/// figures, each under the bench `ab`.
pub(crate) fn sides(results: &Results) -> (Results, Results) {
    let side = |bench: &str| Results {
        figures: results
            .figures
            .iter()
            .filter(|f| f.bench == bench)
            .map(|f| Figure {
                bench: "ab".to_owned(),
                ..f.clone()
            })
            .collect(),
        ..results.clone()
    };
    (side(BASE), side(NEW))
}
