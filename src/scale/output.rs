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

/// What a sweep ran, as its header says: from the sweep itself ([`Header::of`]), or read back
/// from the file it wrote ([`Header::written`]), so that `--replot` writes the same Markdown.
pub(crate) struct Header {
    scenarios: Vec<String>,
    targets: usize,
    threads: Vec<usize>,
    rounds: usize,
    connections: usize,
    protocol: crate::options::Protocol,
    streams: usize,
    duration: std::time::Duration,
    warmup: std::time::Duration,
    sides: crate::pinning::Sides,
    /// When it was measured (`25 Nov 2026 23:40:12`).
    date: String,
}

impl Header {
    /// The sweep's, measured now.
    pub(crate) fn of(sweep: &Sweep) -> Header {
        Header {
            scenarios: sweep.scenarios.iter().map(|s| s.name.to_owned()).collect(),
            targets: sweep.targets.len(),
            threads: sweep.threads.clone(),
            rounds: sweep.rounds,
            connections: sweep.connections,
            protocol: sweep.protocol,
            streams: sweep.streams,
            duration: sweep.duration,
            warmup: sweep.warmup,
            sides: sweep.sides.clone(),
            date: now(),
        }
    }

    /// A sweep's file's, with its targets, scenarios and protocol read off its cells.
    pub(crate) fn written(w: &super::Written) -> Header {
        let mut scenarios: Vec<String> = Vec::new();
        let mut targets: Vec<&str> = Vec::new();
        for m in &w.cells {
            if !scenarios.contains(&m.cell.scenario) {
                scenarios.push(m.cell.scenario.clone());
            }
            if !targets.contains(&m.target.as_str()) {
                targets.push(&m.target);
            }
        }
        let first = w.cells.first().map(|m| &m.cell);
        Header {
            scenarios,
            targets: targets.len(),
            threads: w.threads.clone(),
            rounds: w.rounds,
            connections: w.connections,
            protocol: first.map(|c| c.protocol).unwrap_or_default(),
            streams: first.map_or(1, |c| c.streams),
            duration: std::time::Duration::from_secs_f64(w.duration_s),
            warmup: std::time::Duration::from_secs_f64(w.warmup_s),
            sides: crate::pinning::Sides {
                server: w.server_cpus.clone(),
                client: w.client_cpus.clone(),
                smt: w.smt,
            },
            date: w.date.clone(),
        }
    }
}

/// What was run, in two lines.
fn conditions(h: &Header) -> String {
    let streams = match h.protocol.multiplexed() {
        true => format!(" over {}, {} streams each,", h.protocol, h.streams),
        false => String::new(),
    };
    format!(
        "{} × {} targets × T = {} × {} rounds (targets interleaved, their order rotated each \
         round); {} connections{streams} at every T, {} cells after {} of warm-up\n\
         {}; server and client pinned to separate CPUs\n",
        h.scenarios.join(", "),
        h.targets,
        list(&h.threads),
        h.rounds,
        h.connections,
        seconds(h.duration),
        seconds(h.warmup),
        plan::sides_label(&h.sides),
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

/// The rows of one group (a scenario × variant), in order.
fn of_group<'a>(rows: &'a [Row], group: &(String, String)) -> Vec<&'a Row> {
    rows.iter()
        .filter(|r| r.scenario == group.0 && r.variant == group.1)
        .collect()
}

/// The rows of one group, by target, in the order targets first appear.
fn by_target<'a>(rows: &'a [Row], group: &(String, String)) -> Vec<(String, Vec<&'a Row>)> {
    let mut out: Vec<(String, Vec<&Row>)> = Vec::new();
    for r in of_group(rows, group) {
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
    let of_group = of_group(rows, group);
    // Only rates the server set are compared; the others are named once per T.
    let servers = |r: &&&Row| r.not_the_servers.is_none();
    for &t in threads {
        let at_t: Vec<&Row> = of_group
            .iter()
            .copied()
            .filter(|r| r.threads == t)
            .collect();
        let items: Vec<(String, Estimate)> = at_t
            .iter()
            .filter(servers)
            .filter_map(|r| Some((r.target.clone(), r.rps?)))
            .collect();
        let left_out: Vec<String> = at_t
            .iter()
            .filter_map(|r| Some(format!("{} ({})", r.target, r.not_the_servers.as_ref()?)))
            .collect();
        // A line wherever there were two to rank, saying which were left out.
        if items.len() + left_out.len() > 1 {
            let ranked = match items.is_empty() {
                true => "–".to_owned(),
                false => summary::ranking(&items),
            };
            let mut line = format!("ranking at T={t}: {ranked}");
            if !left_out.is_empty() {
                let _ = write!(
                    line,
                    "; left out, the rate not the server's: {}",
                    left_out.join(", ")
                );
            }
            out.push(line);
        }
    }
    for &t in threads {
        let mut pairs = Vec::new();
        for pc in of_group
            .iter()
            .filter(|r| r.threads == t && r.runtime == "per-core")
            .filter(servers)
        {
            let ws = of_group.iter().filter(servers).find(|r| {
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

/// The rows whose efficiency rounds above 100 %, as a table beside their server's CPU per
/// request at the narrowest T and at theirs: a saturated server's rate is T ÷ its cost per
/// request, so an efficiency above 100 % is a request that cost less at T than at the narrowest
/// T, by about the same factor (docs/scaling.md, "Efficiency above 100 %"). Empty where none.
fn above_ideal(rows: &[&Row]) -> String {
    let mut table = Table::new([
        ("target", Align::Left),
        ("T", Align::Right),
        ("efficiency", Align::Right),
        ("its range", Align::Right),
        ("server CPU µs/req at the narrowest T", Align::Right),
        ("at T", Align::Right),
        ("narrowest ÷ T", Align::Right),
    ]);
    let mut any = false;
    for r in rows {
        let Some(e) = r.efficiency.filter(|e| (100.0 * e.point).round() > 100.0) else {
            continue;
        };
        let base = rows
            .iter()
            .filter(|o| o.target == r.target)
            .min_by_key(|o| o.threads);
        let at = |row: Option<&&Row>| {
            row.and_then(|x| x.cpu_us_per_req)
                .map_or("–".to_owned(), |c| format!("{c:.2}"))
        };
        let ratio = match (base.and_then(|b| b.cpu_us_per_req), r.cpu_us_per_req) {
            (Some(b), Some(c)) if c > 0.0 => format!("{:.2}", b / c),
            _ => "–".to_owned(),
        };
        table.row([
            r.target.clone(),
            r.threads.to_string(),
            format!("{:.0} %", 100.0 * e.point),
            format!("{:.0}–{:.0} %", 100.0 * e.lo, 100.0 * e.hi),
            format!("{} (T={})", at(base), base.map_or(0, |b| b.threads)),
            at(Some(r)),
            ratio,
        ]);
        any = true;
    }
    if !any {
        return String::new();
    }
    format!(
        "Efficiency above 100 %, beside the server's CPU per request: a saturated server's rate \
         is T ÷ its cost per request, so each of these is a request that cost less at T than at \
         the narrowest T (docs/scaling.md, \"Efficiency above 100 %\"). Where its range holds \
         100 %, the rounds do not separate it from 100 %.\n\n{}",
        table.markdown()
    )
}

/// The terminal's view: per scenario, a table of targets × T (the median rate and the rounds'
/// range), the speed-up and efficiency at the widest T, the marks; then the comparisons.
pub(crate) fn terminal(sweep: &Sweep, rows: &[Row]) -> String {
    let mut out = format!("framebench scale: {}", conditions(&Header::of(sweep)));
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
    header: &Header,
    rows: &[Row],
    measured: &[Measured],
    env: &Environment,
) -> String {
    // The build that measured, which a file drawn again by `--replot` keeps.
    let mut out = format!(
        "{}{}\n\n# framebench scale\n\n",
        crate::generated::MEASURED_AT,
        env.git_revision
    );
    let _ =
        writeln!(
        out,
        "Measured by `framebench scale` on {} UTC: framebench {}, {}, {} ({} CPUs{}), Linux {}.\n",
        header.date,
        env.git_revision,
        env.rustc,
        env.cpu,
        env.cores,
        if header.sides.smt { ", SMT" } else { ", no SMT" },
        env.kernel
    );
    let _ = writeln!(out, "{}", conditions(header).replace('\n', "\n\n"));
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
            for r in &of {
                let dash = || "–".to_owned();
                // The narrowest T is the base; elsewhere no speed-up is one withheld (its rate,
                // or its base's, is not the server's: the marks say which).
                let narrowest = of.iter().map(|o| o.threads).min() == Some(r.threads)
                    && r.not_the_servers.is_none()
                    && r.rps.is_some();
                let base = || if narrowest { "base" } else { "–" }.to_owned();
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
        for line in comparisons(rows, &group, &header.threads) {
            let _ = writeln!(out, "- {line}");
        }
        out.push('\n');
        let above = above_ideal(&of_group(rows, &group));
        if !above.is_empty() {
            out.push_str(&above);
            out.push('\n');
        }
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
    header: &Header,
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
        "date": header.date,
        "threads": sweep.threads,
        "server_cpus": sweep.sides.server,
        "client_cpus": sweep.sides.client,
        "smt": sweep.sides.smt,
        "connections": sweep.connections,
        "rounds": sweep.rounds,
        "duration_s": sweep.duration.as_secs_f64(),
        "warmup_s": sweep.warmup.as_secs_f64(),
        "targets": sweep.targets.iter().map(|t| t.label()).collect::<Vec<_>>(),
        "rows": rows,
        "cells": measured,
    }));
    results
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// hello at T on `target`: a rate of `rps` in rounds within ±5 %, its CPU per request, and
    /// why the rate is not the server's, if so.
    fn row(target: &str, runtime: &str, t: usize, rps: f64, cpu: f64, not: Option<&str>) -> Row {
        Row {
            target: target.to_owned(),
            framework: target.split(' ').next().unwrap().to_owned(),
            runtime: runtime.to_owned(),
            variant: "log=off,io=memory".to_owned(),
            scenario: "hello".to_owned(),
            threads: t,
            rounds: 3,
            rps: Some(Estimate {
                point: rps,
                lo: rps * 0.95,
                hi: rps * 1.05,
            }),
            speedup: None,
            efficiency: None,
            cpu_us_per_req: Some(cpu),
            p99_us: None,
            marks: not.map(str::to_owned).into_iter().collect(),
            not_the_servers: not.map(str::to_owned),
            failed: None,
        }
    }

    /// A rate the server did not set (unsat, client-bound) gives no speed-up, as a row or as a
    /// base, and stays out of the ranking (named beside it) and of per-core over work-stealing;
    /// an efficiency above 100 % is listed beside the server's CPU per request.
    #[test]
    fn rates_the_server_did_not_set_are_left_out_of_speedups_rankings_and_comparisons() {
        let rows = summary::with_speedups(vec![
            row("raw", "own", 1, 100.0, 5.0, None),
            row("raw", "own", 8, 900.0, 4.4, None),
            row("fiber", "own", 1, 50.0, 9.0, None),
            row("fiber", "own", 8, 300.0, 9.0, Some("client-bound 3/3")),
            row("nickel", "own", 1, 40.0, 9.0, Some("unsat 2/3")),
            row("nickel", "own", 8, 250.0, 9.0, None),
            row(
                "hyper (work-stealing)",
                "work-stealing",
                8,
                600.0,
                9.0,
                Some("unsat 1/3"),
            ),
            row("hyper (per-core)", "per-core", 8, 800.0, 9.0, None),
        ]);
        let at = |target: &str, t: usize| {
            rows.iter()
                .find(|r| r.target == target && r.threads == t)
                .unwrap()
        };
        assert!(at("raw", 8).speedup.is_some());
        assert!(
            at("fiber", 8).speedup.is_none(),
            "its own rate is the client's"
        );
        assert!(at("nickel", 8).speedup.is_none(), "its base is unsat");
        let group = ("hello".to_owned(), "log=off,io=memory".to_owned());
        let lines = comparisons(&rows, &group, &[1, 8]);
        assert_eq!(
            lines[0],
            "ranking at T=1: raw > fiber; left out, the rate not the server's: nickel (unsat 2/3)"
        );
        assert_eq!(
            lines[1],
            "ranking at T=8: raw > hyper (per-core) > nickel; left out, the rate not the \
             server's: fiber (client-bound 3/3), hyper (work-stealing) (unsat 1/3)"
        );
        assert_eq!(
            lines.len(),
            2,
            "no per-core pair without work-stealing's rate: {lines:?}"
        );
        let of_group: Vec<&Row> = rows.iter().collect();
        let above = above_ideal(&of_group);
        assert!(
            above.contains("| raw | 8 | 112 % | 102–124 % | 5.00 (T=1) | 4.40 | 1.14 |"),
            "{above}"
        );
        let listed = above
            .lines()
            .filter(|l| l.starts_with("| ") && !l.starts_with("| target"));
        assert_eq!(listed.count(), 1, "raw alone: {above}");
    }

    #[test]
    fn durations_keep_their_decimals() {
        assert_eq!(seconds(Duration::from_millis(50)), "0.05 s");
        assert_eq!(seconds(Duration::from_millis(200)), "0.2 s");
        assert_eq!(seconds(Duration::from_secs(2)), "2 s");
    }
}
