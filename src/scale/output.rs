//! A sweep's rows as the terminal shows them (a frameworks × T table per scenario, the ranking
//! at each T, per-core against work-stealing), as Markdown stamped with the machine and the
//! commit, and as a `framebench-results` file whose figures `framebench diff` reads.

use std::fmt::Write as _;

use crate::env::Environment;
use crate::provenance::{Provenance, Window};
use crate::results::{Figure, Metric, Results};
use crate::table::{Align, Table};

use super::plan;
use super::summary::{self, Measured, Row};
use super::Sweep;
use crate::interval::Estimate;

/// `412.3k`, `1.21M`, `950`.
fn rate(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// `412.3k (405.0k–420.1k)`.
fn rate_range(r: &Estimate) -> String {
    format!("{} ({}–{})", rate(r.point), rate(r.lo), rate(r.hi))
}

/// `1, 2, 4`.
fn list(threads: &[usize]) -> String {
    threads
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `2 s`, `0.2 s`, `0.05 s`: as many decimals as the duration has (a fixed one rounded 0.05 s
/// of warm-up to 0.1 s).
fn seconds(d: std::time::Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// What was run, in two lines.
fn conditions(sweep: &Sweep) -> String {
    let scenarios: Vec<&str> = sweep.scenarios.iter().map(|s| s.name).collect();
    let streams = match sweep.protocol.multiplexed() {
        true => format!(" over {}, {} streams each,", sweep.protocol, sweep.streams),
        false => String::new(),
    };
    format!(
        "{} × {} targets × T = {} × {} rounds (targets interleaved, their order rotated each \
         round); {} connections{streams} at every T, {} cells after {} of warm-up\n\
         {}; server and client pinned to separate CPUs\n",
        scenarios.join(", "),
        sweep.targets.len(),
        list(&sweep.threads),
        sweep.rounds,
        sweep.connections,
        seconds(sweep.duration),
        seconds(sweep.warmup),
        plan::sides_label(&sweep.sides),
    )
}

/// The lines of rows: one per scenario × variant, in order.
fn groups(rows: &[Row]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for r in rows {
        let g = (r.scenario.clone(), r.variant.clone());
        if !out.contains(&g) {
            out.push(g);
        }
    }
    out
}

/// The rows of one group, by target, in the order targets first appear.
fn by_target<'a>(rows: &'a [Row], group: &(String, String)) -> Vec<(String, Vec<&'a Row>)> {
    let mut out: Vec<(String, Vec<&Row>)> = Vec::new();
    for r in rows
        .iter()
        .filter(|r| r.scenario == group.0 && r.variant == group.1)
    {
        match out.iter_mut().find(|(t, _)| *t == r.target) {
            Some((_, v)) => v.push(r),
            None => out.push((r.target.clone(), vec![r])),
        }
    }
    out
}

/// The ranking at each T and, for each framework on both runtimes, per-core over
/// work-stealing at each T: the lines under a group's table.
fn comparisons(rows: &[Row], group: &(String, String), threads: &[usize]) -> Vec<String> {
    let mut out = Vec::new();
    let of_group: Vec<&Row> = rows
        .iter()
        .filter(|r| r.scenario == group.0 && r.variant == group.1)
        .collect();
    for &t in threads {
        let items: Vec<(String, Estimate)> = of_group
            .iter()
            .filter(|r| r.threads == t)
            .filter_map(|r| Some((r.target.clone(), r.rps?)))
            .collect();
        if items.len() > 1 {
            out.push(format!("ranking at T={t}: {}", summary::ranking(&items)));
        }
    }
    for &t in threads {
        let mut pairs = Vec::new();
        for pc in of_group
            .iter()
            .filter(|r| r.threads == t && r.runtime == "per-core")
        {
            let ws = of_group.iter().find(|r| {
                r.threads == t && r.runtime == "work-stealing" && r.framework == pc.framework
            });
            if let (Some(p), Some(w)) = (pc.rps, ws.and_then(|w| w.rps)) {
                pairs.push(format!(
                    "{} {}",
                    pc.framework,
                    summary::ratio_text(&p.ratio(&w))
                ));
            }
        }
        if !pairs.is_empty() {
            out.push(format!(
                "per-core over work-stealing at T={t}: {}",
                pairs.join(", ")
            ));
        }
    }
    out
}

/// The terminal's view: per scenario, a table of targets × T (the median rate and the rounds'
/// range), the speed-up and efficiency at the widest T, the marks; then the comparisons.
pub(crate) fn terminal(sweep: &Sweep, rows: &[Row]) -> String {
    let mut out = format!("framebench scale: {}", conditions(sweep));
    let widest = sweep.threads.last().copied().unwrap_or(1);
    let narrowest = sweep.threads.first().copied().unwrap_or(1);
    for group in groups(rows) {
        let _ = writeln!(
            out,
            "\n{} ({}): req/s, median of the rounds (their range)",
            group.0, group.1
        );
        let mut columns = vec![("target".to_owned(), Align::Left)];
        for t in &sweep.threads {
            columns.push((format!("T={t}"), Align::Right));
        }
        let swept = widest > narrowest;
        if swept {
            columns.push((format!("speed-up {widest}/{narrowest}"), Align::Right));
            columns.push(("efficiency".to_owned(), Align::Right));
        }
        columns.push(("marks".to_owned(), Align::Left));
        let mut table = Table::new(columns);
        let mut failures = Vec::new();
        for (target, of) in by_target(rows, &group) {
            let mut cells = vec![target.clone()];
            for &t in &sweep.threads {
                let r = of.iter().find(|r| r.threads == t);
                cells.push(match r {
                    Some(Row { rps: Some(rps), .. }) => rate_range(rps),
                    Some(_) => "failed".to_owned(),
                    None => "–".to_owned(),
                });
            }
            let wide = of.iter().find(|r| r.threads == widest);
            if swept {
                cells.push(wide.and_then(|r| r.speedup).map_or("–".into(), |s| {
                    format!("{:.2}× ({:.2}–{:.2})", s.point, s.lo, s.hi)
                }));
                cells.push(
                    wide.and_then(|r| r.efficiency)
                        .map_or("–".into(), |e| format!("{:.0} %", 100.0 * e.point)),
                );
            }
            let mut marks: Vec<String> = Vec::new();
            for r in &of {
                for m in &r.marks {
                    let m = format!("T={}: {m}", r.threads);
                    if !marks.contains(&m) {
                        marks.push(m);
                    }
                }
                if let Some(f) = &r.failed {
                    failures.push(format!("{target} T={}: {f}", r.threads));
                }
            }
            cells.push(marks.join("; "));
            table.row(cells);
        }
        out.push_str(&table.terminal("  "));
        for line in comparisons(rows, &group, &sweep.threads) {
            let _ = writeln!(out, "  {line}");
        }
        for f in failures {
            let _ = writeln!(out, "  {f}");
        }
    }
    out.push_str(
        "\n`>` only where every round of the left is above every round of the right, `≈` \
         otherwise; marks: unsat (neither side saturated), client-bound (the rate is the \
         driver's), busy threads beyond T or threads outside the server's CPUs (`--threads T` \
         did not mean T)\n",
    );
    out
}

/// The Markdown file: the stamp, the conditions, and per scenario a row per target × T with
/// every figure, then the comparisons.
pub(crate) fn markdown(
    sweep: &Sweep,
    rows: &[Row],
    measured: &[Measured],
    env: &Environment,
) -> String {
    let mut out = String::from("# framebench scale\n\n");
    let _ = writeln!(
        out,
        "Written by `framebench scale` on {} UTC: framebench {}, {}, {} ({} CPUs{}), Linux {}.\n",
        now(),
        env.git_revision,
        env.rustc,
        env.cpu,
        env.cores,
        if sweep.sides.smt { ", SMT" } else { ", no SMT" },
        env.kernel
    );
    let _ = writeln!(out, "{}", conditions(sweep).replace('\n', "\n\n"));
    for group in groups(rows) {
        let _ = writeln!(out, "## {} ({})\n", group.0, group.1);
        let mut table = Table::new([
            ("target", Align::Left),
            ("T", Align::Right),
            ("req/s", Align::Right),
            ("rounds' range", Align::Right),
            ("speed-up", Align::Right),
            ("efficiency", Align::Right),
            ("server CPU µs/req", Align::Right),
            ("p99 µs", Align::Right),
            ("rounds", Align::Right),
            ("marks", Align::Left),
        ]);
        for (target, of) in by_target(rows, &group) {
            for r in of {
                let dash = || "–".to_owned();
                let base = || "base".to_owned();
                table.row([
                    target.clone(),
                    r.threads.to_string(),
                    r.rps.map_or_else(dash, |x| rate(x.point)),
                    r.rps
                        .map_or_else(dash, |x| format!("{}–{}", rate(x.lo), rate(x.hi))),
                    r.speedup.map_or_else(base, |s| {
                        format!("{:.2}× ({:.2}–{:.2})", s.point, s.lo, s.hi)
                    }),
                    r.efficiency
                        .map_or_else(base, |e| format!("{:.0} %", 100.0 * e.point)),
                    r.cpu_us_per_req.map_or_else(dash, |c| format!("{c:.2}")),
                    r.p99_us.map_or_else(dash, |p| format!("{p:.0}")),
                    r.rounds.to_string(),
                    r.failed
                        .clone()
                        .into_iter()
                        .chain(r.marks.iter().cloned())
                        .collect::<Vec<_>>()
                        .join("; "),
                ]);
            }
        }
        out.push_str(&table.markdown());
        out.push('\n');
        for line in comparisons(rows, &group, &sweep.threads) {
            let _ = writeln!(out, "- {line}");
        }
        out.push('\n');
    }
    out.push_str(&helpers(measured));
    out
}

/// The helper threads each target ran busy beside its workers, with what each does and the
/// most of a CPU it used in any cell: listed apart, not counted against T.
fn helpers(measured: &[Measured]) -> String {
    // (target, thread name) → the largest share of a CPU.
    let mut seen: Vec<(String, String, f64)> = Vec::new();
    for m in measured {
        for t in m.cell.thread_check.iter().flat_map(|c| &c.helpers) {
            match seen
                .iter_mut()
                .find(|(target, name, _)| *target == m.target && *name == t.name)
            {
                Some(s) => s.2 = s.2.max(t.cpu_pct),
                None => seen.push((m.target.clone(), t.name.clone(), t.cpu_pct)),
            }
        }
    }
    let mut out = String::from("## Helper threads\n\n");
    if seen.is_empty() {
        out.push_str(
            "No server ran a helper thread (framebench's, an accept thread, a pool) at 10 % of \
             a CPU or more in any cell.\n",
        );
        return out;
    }
    out.push_str(
        "Threads beside the workers that used 10 % of a CPU or more in some cell; they are not \
         counted against T (docs/methodology/many-cores.md, \"Threads and runtimes\").\n\n",
    );
    let mut table = Table::new([
        ("target", Align::Left),
        ("thread", Align::Left),
        ("what it does", Align::Left),
        ("most CPU in a cell", Align::Right),
    ]);
    for (target, name, pct) in seen {
        let what = crate::driver::threads::helper(&name).unwrap_or("");
        table.row([target, name, what.to_owned(), format!("{pct:.0} %")]);
    }
    out.push_str(&table.markdown());
    out
}

/// Now, `2026-11-25 23:40`.
fn now() -> String {
    let text = httpdate::fmt_http_date(std::time::SystemTime::now());
    // `Wed, 25 Nov 2026 23:40:12 GMT`: kept as it is but for the weekday and the zone.
    let text = text.trim_end_matches(" GMT");
    text.split_once(", ")
        .map_or(text.to_owned(), |(_, d)| d.to_owned())
}

/// The results file: one rate figure per row (the median, the rounds' range as its interval,
/// the rounds' count), its variant naming T and the runtime; the sweep and every round's cell
/// in `detail`; measured in `window`.
pub(crate) fn results(
    sweep: &Sweep,
    rows: &[Row],
    measured: &[Measured],
    window: Window,
) -> Results {
    let figures = rows
        .iter()
        .filter_map(|r| {
            let rps = r.rps?;
            let variant = format!(
                "threads={},runtime={},{},c{},p{}",
                r.threads, r.runtime, r.variant, sweep.connections, sweep.pipeline
            );
            let mut f = Figure::count(
                "scale",
                &r.framework,
                &r.scenario,
                &variant,
                Metric::Rps,
                rps.point,
            );
            f.lo = Some(rps.lo);
            f.hi = Some(rps.hi);
            f.rounds = Some(r.rounds);
            Some(f)
        })
        .collect();
    let mut results = Results::new("scale", figures, Provenance::here(window));
    results.detail = Some(serde_json::json!({
        "date": now(),
        "threads": sweep.threads,
        "server_cpus": sweep.sides.server,
        "client_cpus": sweep.sides.client,
        "smt": sweep.sides.smt,
        "connections": sweep.connections,
        "rounds": sweep.rounds,
        "duration_s": sweep.duration.as_secs_f64(),
        "warmup_s": sweep.warmup.as_secs_f64(),
        "rows": rows,
        "cells": measured,
    }));
    results
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn durations_keep_their_decimals() {
        assert_eq!(seconds(Duration::from_millis(50)), "0.05 s");
        assert_eq!(seconds(Duration::from_millis(200)), "0.2 s");
        assert_eq!(seconds(Duration::from_secs(2)), "2 s");
    }
}
