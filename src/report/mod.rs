//! `framebench report`: reads criterion's `target/criterion/**/new/{benchmark,estimates}.json`
//! and gungraun's `target/gungraun/**/summary.json`, and writes docs/generated/results.md: an environment
//! header, frameworks × scenarios tables, the cost of logging and of disk I/O as deltas, loopback
//! as a fraction of the `raw` reference, instruction counts, and the allocation counts
//! `framebench allocs --json target/allocs/allocs.json` wrote ([`write_allocs`]).
//!
//! The file is generated; it is never edited by hand. Every figure in it comes from those files.

mod charts;
mod criterion;
mod gungraun;

use crate::table::{Align, Table};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::Context as _;

use crate::deltas::{self, Delta, Kind};
use crate::env::Environment;
use crate::frameworks::REGISTRY;
use crate::interval::{self, Estimate};
use crate::oracle::SCENARIOS;
use crate::units::{fmt_count, fmt_ns};

use crate::bench::{IO_SCENARIOS, LOOPBACK_THREADS};

/// One criterion measurement.
#[derive(Debug, Clone)]
pub(crate) struct Timing {
    /// `in_process/hello`.
    pub(crate) group: String,
    /// `axum`.
    pub(crate) function: String,
    /// `log=off,io=memory`, `raw-client`, `reqwest`.
    pub(crate) value: String,
    /// Criterion's estimate of the time per iteration (slope when present, else mean), ns,
    /// with criterion's confidence interval of that estimate.
    pub(crate) ns: Estimate,
    /// The target folder it was read from (`framebench report --target-dir A --target-dir B`,
    /// one per shard of a sharded `cargo bench`), 0 for the first.
    pub(crate) shard: usize,
}

/// One callgrind count.
#[derive(Debug, Clone)]
pub(crate) struct Count {
    /// `in_process/hello/off` or `loopback/hello`.
    pub(crate) key: String,
    /// Framework name.
    pub(crate) framework: String,
    /// Instructions (Ir).
    pub(crate) instructions: f64,
}

pub(crate) fn files_named(root: &Path, name: &str, out: &mut Vec<PathBuf>) {
    let Ok(dir) = std::fs::read_dir(root) else {
        return;
    };
    let mut entries: Vec<_> = dir.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files_named(&path, name, out);
        } else if path.file_name().is_some_and(|n| n == name) {
            out.push(path);
        }
    }
}

/// A markdown table: header row (the first column names, the others are figures), then rows.
fn table(out: &mut String, header: &[String], rows: &[Vec<String>]) {
    let mut t = Table::new(header.iter().enumerate().map(|(i, h)| {
        let align = if i == 0 { Align::Left } else { Align::Right };
        (h.as_str(), align)
    }));
    for r in rows {
        t.row(r.iter().cloned());
    }
    out.push_str(&t.markdown());
    out.push('\n');
}

fn framework_order() -> Vec<&'static str> {
    REGISTRY.iter().map(|e| e.name).collect()
}

/// Frameworks present in `names`, in registry order, then any others (sorted).
fn ordered(names: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut set: Vec<String> = names.into_iter().collect();
    set.sort();
    set.dedup();
    let mut out: Vec<String> = framework_order()
        .into_iter()
        .filter(|n| set.iter().any(|s| s == n))
        .map(str::to_owned)
        .collect();
    let rest: Vec<String> = set.into_iter().filter(|s| !out.contains(s)).collect();
    out.extend(rest);
    out
}

/// Whether `name` is a floor or reference measured for comparison
/// ([`crate::framework::Framework::BASELINE`]), not a framework.
fn is_baseline(name: &str) -> bool {
    crate::frameworks::find(name).is_some_and(|e| e.baseline)
}

fn scenario_header(first: &str) -> Vec<String> {
    std::iter::once(first.to_owned())
        .chain(SCENARIOS.iter().map(|s| s.name.to_owned()))
        .collect()
}

/// Builds the whole report from the files under `target_dirs` (one, or one per shard of a
/// sharded `cargo bench`, [`read_shards`]); with `charts`, draws its charts into that folder
/// (`(folder, the folder as the report links to it)`) and embeds them above the tables.
pub(crate) fn generate(
    target_dirs: &[PathBuf],
    charts: Option<(&Path, &str)>,
) -> anyhow::Result<(String, crate::results::Results)> {
    let Shards {
        timings,
        newest,
        counts,
        allocs,
        deltas,
        text: shards_text,
    } = read_shards(target_dirs)?;
    let target_dir = target_dirs.first().context("no target folder")?.as_path();
    anyhow::ensure!(
        !timings.is_empty() || !counts.is_empty() || !allocs.is_empty() || !deltas.is_empty(),
        "no results under {0}/criterion, {0}/gungraun, {0}/{ALLOCS_JSON} or {0}/{1}: run \
         `cargo bench`, `framebench allocs --json {0}/{ALLOCS_JSON}` or `framebench deltas \
         --json {0}/{1}` first",
        target_dir.display(),
        deltas::DELTAS_JSON
    );
    let results = results_of(&timings, &counts, &allocs);
    let timings = Timings(&timings);
    let mut out = String::new();
    write_preamble(&mut out);
    write_environment(&mut out, newest, target_dir);
    out.push_str(&shards_text);
    write_reading(&mut out);
    if let Some((dir, link)) = charts {
        let sources = charts::Sources {
            timings: timings.0,
            counts: &counts,
            allocs: &allocs,
        };
        charts::write(&mut out, &sources, dir, link)?;
    }
    write_in_process(&mut out, &timings);
    write_differences(&mut out, &deltas);
    write_counts(&mut out, &counts, "loopback");
    write_loopback(&mut out, &timings, &deltas);
    write_counts(&mut out, &counts, "in_process");
    write_allocs(&mut out, &allocs);
    write_consistency(&mut out, &deltas, &counts, &allocs);
    Ok((out, results))
}

/// What a report reads from one or several target folders.
struct Shards {
    timings: Vec<Timing>,
    newest: Option<SystemTime>,
    counts: Vec<Count>,
    allocs: Vec<crate::allocs::Measured>,
    deltas: Vec<Delta>,
    /// With several folders, the "Shards" section: which folder each framework came from.
    text: String,
}

/// Reads every folder's criterion, callgrind, allocation and `deltas` results. Several folders
/// are the shards of one bench run split over CI runners (docs/usage.md, "Sharding the
/// benches"): a cell measured in two of them is refused in one line, every timing keeps its
/// shard, and ratios are taken only within one shard (the floor's here; `raw`'s come from
/// `deltas`' paired rounds, which are within one process by construction).
fn read_shards(dirs: &[PathBuf]) -> anyhow::Result<Shards> {
    let mut all = Shards {
        timings: Vec::new(),
        newest: None,
        counts: Vec::new(),
        allocs: Vec::new(),
        deltas: Vec::new(),
        text: String::new(),
    };
    let mut names: Vec<Vec<String>> = Vec::new();
    for (shard, dir) in dirs.iter().enumerate() {
        let (mut timings, newest) = criterion::read(&dir.join("criterion"))?;
        let counts = gungraun::read(&dir.join("gungraun"))?;
        // The baselines are built into every shard (`null`, `raw`): the tables show the first
        // shard's figures.
        for t in &mut timings {
            t.shard = shard;
            if is_baseline(&t.function) {
                continue;
            }
            if let Some(o) = all
                .timings
                .iter()
                .find(|o| (&o.group, &o.function, &o.value) == (&t.group, &t.function, &t.value))
            {
                anyhow::bail!(
                    "{} {} {} was measured in both {} and {}: give each shard its own frameworks",
                    t.group,
                    t.function,
                    t.value,
                    dirs[o.shard].display(),
                    dir.display()
                );
            }
        }
        for c in counts.iter().filter(|c| !is_baseline(&c.framework)) {
            if all
                .counts
                .iter()
                .any(|o| (&o.key, &o.framework) == (&c.key, &c.framework))
            {
                anyhow::bail!(
                    "the callgrind count {} {} is in two shards (one of them {})",
                    c.key,
                    c.framework,
                    dir.display()
                );
            }
        }
        let mut here: Vec<String> = timings.iter().map(|t| t.function.clone()).collect();
        here.extend(counts.iter().map(|c| c.framework.clone()));
        here.retain(|n| !is_baseline(n));
        names.push(ordered(here));
        all.newest = all.newest.max(newest);
        all.timings.extend(timings);
        all.counts.extend(counts);
        all.allocs.extend(read_allocs(&dir.join(ALLOCS_JSON))?);
        all.deltas
            .extend(read_deltas(&dir.join(deltas::DELTAS_JSON))?);
    }
    if dirs.len() > 1 {
        all.text.push_str(
            "## Shards\n\nThis report joins the bench runs of several target folders, one per \
             shard of the run. Every figure comes from one of them. The baselines (`null`, \
             `raw`), built into every shard, are shown from the first; the floor's ratio is \
             taken only within the first shard, and the ratios to `raw` come from `framebench \
             deltas`' paired rounds, each within one process.\n\n",
        );
        let rows: Vec<Vec<String>> = dirs
            .iter()
            .zip(&names)
            .map(|(d, n)| vec![format!("`{}`", d.display()), n.join(", ")])
            .collect();
        table(&mut all.text, &["shard".into(), "frameworks".into()], &rows);
    }
    Ok(all)
}

/// The figures of a bench run as one results file (`framebench diff` reads it): criterion's
/// times with their intervals, callgrind's instructions per request, and the allocation counts.
fn results_of(
    timings: &[Timing],
    counts: &[Count],
    allocs: &[crate::allocs::Measured],
) -> crate::results::Results {
    use crate::results::{Figure, Metric};
    let mut figures = Vec::new();
    for t in timings {
        if let Some((bench, scenario)) = t.group.split_once('/') {
            figures.push(Figure::timed(
                &format!("criterion/{bench}"),
                &t.function,
                scenario,
                &t.value,
                Metric::Time,
                t.ns,
            ));
        }
    }
    for c in counts {
        let mut parts = c.key.split('/');
        let (bench, scenario, variant) = match (parts.next(), parts.next(), parts.next()) {
            (Some(b), Some(s), Some(log)) => (b, s, format!("log={log}")),
            (Some(b), Some(s), None) => (b, s, String::new()),
            _ => continue,
        };
        figures.push(Figure::count(
            &format!("callgrind/{bench}"),
            &c.framework,
            scenario,
            &variant,
            Metric::Instructions,
            c.instructions,
        ));
    }
    let allocs = crate::allocs::report::Report {
        repeats: 0,
        cells: allocs.to_vec(),
    };
    if let Ok(r) = allocs.results() {
        figures.extend(r.figures);
    }
    crate::results::Results::new("report", figures)
}

/// The differences `framebench deltas` wrote to `path`, or none when it has not run; a file of
/// another schema is refused with one line.
pub(crate) fn read_deltas(path: &Path) -> anyhow::Result<Vec<Delta>> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    Ok(deltas::read(path)?.cells)
}

/// How to read a figure: its interval, and the `≈` rule.
fn write_reading(out: &mut String) {
    out.push_str(
        "## How to read these tables\n\n\
         - A time carries its 95 % interval as a share of it (`1.52 µs ±2 %`): criterion's \
         confidence interval for one run. It does not cover the machine's drift between runs: \
         on this project's machine two criterion runs of one build have differed by −27 % and \
         +31 % (docs/usage.md, \"Differences\"). Compare times across rows with that in mind; \
         `framebench diff` counts a timed change only beyond it.\n\
         - A difference (what logging costs, what reading from disk costs, a ratio to `raw`) \
         comes from `framebench deltas`: the two sides timed alternately in paired rounds, so \
         the drift cancels, and printed as the median of the rounds with the larger distance \
         to either end of its 95 % interval (`+802 ns ±48 ns (+21 %)`). When that interval \
         holds no change (0, or 1.00 for a ratio), the cell says `≈` and gives only the \
         interval's half-width: the data does not separate that difference from noise.\n\
         - Instruction and allocation counts are exact: they repeat to the instruction. They \
         are the first witness; every timed difference that disagrees with them is listed \
         under [Consistency](#consistency-time-against-the-exact-counts).\n\n",
    );
}

/// The criterion timings, looked up by group, function and value.
struct Timings<'a>(&'a [Timing]);

impl Timings<'_> {
    /// The time of `in_process/hello` × `axum` × `log=off,io=memory`, if measured.
    fn get(&self, group: &str, function: &str, value: &str) -> Option<Estimate> {
        self.0
            .iter()
            .find(|t| t.group == group && t.function == function && t.value == value)
            .map(|t| t.ns)
    }

    /// The frameworks measured in groups starting with `prefix`, in registry order.
    fn frameworks(&self, prefix: &str) -> Vec<String> {
        ordered(
            self.0
                .iter()
                .filter(|t| t.group.starts_with(prefix))
                .map(|t| t.function.clone()),
        )
    }
}

/// One row per name: the name, then `cell(name, column)` for each column.
fn rows<C>(names: &[String], columns: &[C], cell: impl Fn(&str, &C) -> String) -> Vec<Vec<String>> {
    names
        .iter()
        .map(|name| {
            std::iter::once(name.clone())
                .chain(columns.iter().map(|column| cell(name, column)))
                .collect()
        })
        .collect()
}

/// The title, and how to reproduce the file.
fn write_preamble(out: &mut String) {
    out.push_str("# Results\n\n");
    out.push_str(
        "Generated by `framebench report` from `target/criterion`, `target/gungraun`, \
         `target/allocs` and `target/deltas`: never \
         edit this file by hand. To reproduce, on a quiet machine:\n\n\
         ```sh\n\
         rm -rf target/criterion target/gungraun\n\
         cargo bench --bench in_process\n\
         cargo bench --bench loopback\n\
         cargo bench --bench callgrind\n\
         cargo bench --bench callgrind_loopback\n\
         cargo run --release -- allocs --json target/allocs/allocs.json\n\
         cargo run --release -- deltas --json target/deltas/deltas.json\n\
         cargo run --release -- report   # or, after `allocs` alone: report --allocs-only\n\
         ```\n\n",
    );
}

/// Compiler, machine, build, threads, dates and the crates measured.
fn write_environment(out: &mut String, criterion_written: Option<SystemTime>, target_dir: &Path) {
    out.push_str("## Environment\n\n");
    let env = Environment::current();
    let _ = writeln!(out, "- Compiler: {}", env.rustc);
    let _ = writeln!(out, "- CPU: {} ({} cores available)", env.cpu, env.cores);
    let _ = writeln!(out, "- Kernel: Linux {}", env.kernel);
    out.push_str(
        "- Build: cargo's `bench` profile (the release settings: optimized, no debug info)\n",
    );
    let _ = writeln!(
        out,
        "- Threads: in-process benches run on one thread; loopback servers run with \
         `--threads {LOOPBACK_THREADS}`, one keep-alive client connection"
    );
    let date = |t: SystemTime| httpdate::fmt_http_date(t);
    if let Some(t) = criterion_written {
        let _ = writeln!(out, "- Criterion results written: {}", date(t));
    }
    // When each source was written, so that a report read from runs of different days (or
    // builds) says so.
    let mut summaries = Vec::new();
    files_named(&target_dir.join("gungraun"), "summary.json", &mut summaries);
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    // Only the callgrind targets' summaries: the DHAT target writes its own beside them.
    let times: Vec<SystemTime> = summaries
        .iter()
        .filter(|p| {
            p.components()
                .any(|c| c.as_os_str().to_string_lossy().starts_with("callgrind"))
        })
        .filter_map(|p| modified(p))
        .collect();
    if let (Some(first), Some(last)) = (times.iter().min(), times.iter().max()) {
        let _ = writeln!(
            out,
            "- Callgrind counts written: {} to {}",
            date(*first),
            date(*last)
        );
    }
    for (what, file) in [
        ("Allocation counts", ALLOCS_JSON),
        ("Differences (`framebench deltas`)", deltas::DELTAS_JSON),
    ] {
        if let Some(t) = modified(&target_dir.join(file)) {
            let _ = writeln!(out, "- {what} written: {}", date(t));
        }
    }
    let _ = writeln!(out, "- Report generated: {}", date(SystemTime::now()));
    out.push_str("- Crates measured:");
    for e in REGISTRY {
        let _ = write!(out, " {} {} ({}),", e.krate, e.version(), e.name);
    }
    out.pop();
    out.push_str("\n\n");
}

/// The in-process timings: frameworks × scenarios, and the floor's ratio.
fn write_in_process(out: &mut String, timings: &Timings) {
    let names = timings.frameworks("in_process/");
    if names.is_empty() {
        return;
    }
    out.push_str("## In-process: time per request (criterion)\n\n");
    out.push_str(
        "`log=off,io=memory`. `null` and `null-hyper010` are the floors: no routing, no \
         handler, a canned response.\n\n",
    );
    let rows = rows(&names, SCENARIOS, |fw, s| {
        timings
            .get(&format!("in_process/{}", s.name), fw, "log=off,io=memory")
            .map_or("—".into(), |t| interval::time_text(&t))
    });
    table(out, &scenario_header("framework"), &rows);
    floor_ratio(out, &names, timings);
}

/// What logging and reading from disk cost, from `framebench deltas`' paired rounds.
fn write_differences(out: &mut String, deltas: &[Delta]) {
    let in_process: Vec<&Delta> = deltas.iter().filter(|d| d.kind != Kind::VsRaw).collect();
    if in_process.is_empty() {
        let _ = writeln!(
            out,
            "## In-process: what logging and disk I/O cost\n\n\
             Not measured: these are differences, printed only from paired rounds. Run \
             `framebench deltas --json target/{}` and `framebench report` again.\n",
            deltas::DELTAS_JSON
        );
        return;
    }
    out.push_str("## In-process: what logging and disk I/O cost (`framebench deltas`)\n\n");
    let rounds = in_process.iter().map(|d| d.rounds).max().unwrap_or(0);
    let _ = writeln!(
        out,
        "Each cell: the median over {rounds} paired rounds of (the variant − the base), one \
         thread, no socket; `≈` where the 95 % interval holds zero. `†`: less time with the \
         variant than without it, beyond the interval: not a saving, listed under Consistency \
         (docs/methodology/callgrind.md, \"Time against the counts\", explains those of the published \
         run). `FAIL`: not measured (`framebench deltas` says why).\n"
    );
    let io: Vec<&str> = IO_SCENARIOS.to_vec();
    let all: Vec<&str> = SCENARIOS.iter().map(|s| s.name).collect();
    for (kind, title, scenarios) in [
        (
            Kind::Logging,
            "### Cost of logging (`log=sink` − `log=off`, io memory)",
            &all,
        ),
        (
            Kind::Disk,
            "### Cost of disk I/O (`io=disk` − `io=memory`, logging off)",
            &io,
        ),
    ] {
        let cells: Vec<&&Delta> = in_process.iter().filter(|d| d.kind == kind).collect();
        if cells.is_empty() {
            continue;
        }
        let _ = writeln!(out, "{title}\n");
        let names = ordered(cells.iter().map(|d| d.framework.clone()));
        let header: Vec<String> = std::iter::once("framework".to_owned())
            .chain(scenarios.iter().map(|s| (*s).to_owned()))
            .collect();
        let rows = rows(&names, scenarios, |fw, s| {
            cells
                .iter()
                .find(|d| d.framework == fw && d.scenario == *s)
                .map_or("—".into(), |d| difference_text(d))
        });
        table(out, &header, &rows);
    }
}

/// One `framebench deltas` cell as the report prints it.
fn difference_text(d: &Delta) -> String {
    if d.error.is_some() {
        return "FAIL".into();
    }
    d.text().unwrap_or_else(|| "—".into())
}

/// One table per loopback client: each framework's time per request, and (for the pre-encoded
/// client) its speed as a fraction of `raw`'s from paired rounds.
fn write_loopback(out: &mut String, timings: &Timings, deltas: &[Delta]) {
    let names = timings.frameworks("loopback/");
    if names.is_empty() {
        return;
    }
    let raw = crate::frameworks::reference().map_or("raw", |e| e.name);
    let paired = deltas.iter().any(|d| d.kind == Kind::VsRaw);
    for (client, title) in [
        ("raw-client", "pre-encoded requests, exact-length reads"),
        ("reqwest", "reqwest blocking client"),
    ] {
        let _ = writeln!(
            out,
            "## Loopback: time per request, {title} (criterion)\n\n\
             One keep-alive connection, one request at a time: most of a round trip here is \
             the kernel and two wake-ups, and frameworks differ by a few µs of it, so the \
             instruction counts above are the headline loopback cost and these times the \
             second witness."
        );
        if client == "raw-client" {
            if paired {
                let _ = writeln!(
                    out,
                    " After the time, in brackets: `{raw}`'s time over this one's, from \
                     `framebench deltas`' paired rounds (one connection to each server, timed \
                     alternately; 1.00 = as fast as `{raw}`, higher is faster), `≈` where its \
                     95 % interval holds 1.00. `‡`: faster than `{raw}` beyond the interval, \
                     listed under Consistency."
                );
            } else {
                let _ = writeln!(
                    out,
                    " No ratio to `{raw}`: run `framebench deltas --json target/{}` for it.",
                    deltas::DELTAS_JSON
                );
            }
        }
        out.push('\n');
        let rows = rows(&names, SCENARIOS, |fw, s| {
            let g = format!("loopback/{}", s.name);
            let Some(t) = timings.get(&g, fw, client) else {
                return "—".into();
            };
            let ratio = deltas
                .iter()
                .find(|d| d.kind == Kind::VsRaw && d.framework == fw && d.scenario == s.name)
                .filter(|_| client == "raw-client");
            match ratio {
                Some(d) => format!("{} ({})", interval::time_text(&t), difference_text(d)),
                None => interval::time_text(&t),
            }
        });
        table(out, &scenario_header("framework"), &rows);
    }
}

/// The callgrind counts of `only` (`in_process` or `loopback`): one table in-process, one for
/// the whole server process.
fn write_counts(out: &mut String, counts: &[Count], only: &str) {
    for (prefix, title, note) in [
        (
            "in_process",
            "## In-process: instructions per request (callgrind)",
            "One `dispatch` on the bench's thread, io memory, after two warm-up requests. \
             `off` / `sink` logging.",
        ),
        (
            "loopback",
            "## Loopback: instructions per request (callgrind, whole server process)",
            "The headline loopback cost: exact, and the same on a busy machine. \
             `framebench serve <fw> --threads 1 --max-requests N` under callgrind, every thread \
             counted; per request = (count at N₂ − count at N₁) / (N₂ − N₁), which removes \
             startup and shutdown.",
        ),
    ] {
        if prefix != only {
            continue;
        }
        let cells: Vec<&Count> = counts
            .iter()
            .filter(|c| c.key.starts_with(prefix))
            .collect();
        if cells.is_empty() {
            continue;
        }
        let _ = writeln!(out, "{title}\n\n{note}\n");
        count_table(out, &cells);
        // No silent gaps: name the frameworks the table leaves out, and why.
        let missing: Vec<&str> = REGISTRY
            .iter()
            .filter(|e| {
                let measurable = if prefix == "in_process" {
                    e.in_process
                } else {
                    e.loopback && e.counts_requests
                };
                !measurable && !e.baseline
            })
            .map(|e| e.name)
            .collect();
        if !missing.is_empty() {
            let why = if prefix == "in_process" {
                "no in-process path"
            } else {
                "their servers cannot be counted per request under callgrind \
                 (`COUNTS_REQUESTS`, docs/methodology/callgrind.md)"
            };
            let _ = writeln!(out, "Not in this table: {} ({why}).\n", missing.join(", "));
        }
    }
}

/// Frameworks × `scenario/variant` columns, in the oracle's scenario order.
fn count_table(out: &mut String, cells: &[&Count]) {
    let mut keys: Vec<String> = cells.iter().map(|c| column(&c.key)).collect();
    keys.dedup();
    let mut columns: Vec<String> = Vec::new();
    for s in SCENARIOS {
        for k in &keys {
            if k.split('/').next() == Some(s.name) && !columns.contains(k) {
                columns.push(k.clone());
            }
        }
    }
    let names = ordered(cells.iter().map(|c| c.framework.clone()));
    let by: BTreeMap<(String, String), f64> = cells
        .iter()
        .map(|c| ((c.framework.clone(), column(&c.key)), c.instructions))
        .collect();
    let header: Vec<String> = std::iter::once("framework".to_owned())
        .chain(columns.iter().cloned())
        .collect();
    let rows = rows(&names, &columns, |fw, k| {
        by.get(&(fw.to_owned(), k.clone()))
            .map_or("—".into(), |n| fmt_count(*n))
    });
    table(out, &header, &rows);
}

/// `in_process/hello/off` → `hello/off`.
fn column(key: &str) -> String {
    key.split_once('/').map_or(key, |(_, rest)| rest).to_owned()
}

/// The `null` floor against the fastest framework's hello.
fn floor_ratio(out: &mut String, names: &[String], timings: &Timings) {
    // Within the floor's shard only: two shards ran on two machines, or at two times.
    let shard_of = |fw: &str| {
        timings
            .0
            .iter()
            .find(|t| t.group == "in_process/hello" && t.function == fw)
            .map(|t| t.shard)
    };
    let floor_shard = crate::frameworks::floor().and_then(|e| shard_of(e.name));
    let hello = |fw: &str| {
        timings
            .get("in_process/hello", fw, "log=off,io=memory")
            .filter(|_| shard_of(fw) == floor_shard)
            .map(|t| t.point)
    };
    let fastest = names
        .iter()
        .filter(|n| !is_baseline(n))
        .filter_map(|n| hello(n).map(|t| (n, t)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let floor = crate::frameworks::floor().and_then(|e| hello(e.name));
    if let (Some(null), Some((name, t))) = (floor, fastest) {
        let _ = writeln!(
            out,
            "`null` hello takes {} per call; the fastest framework's hello ({name}) takes {}, \
             {:.1}× as long.\n",
            fmt_ns(null),
            fmt_ns(t),
            t / null
        );
    }
}

/// The heading [`write_allocs`] starts its section with.
const ALLOCS_HEADING: &str = "## In-process: allocations per request";

/// `report` as it was (`old`) with the preamble and the allocation section made anew from
/// `target_dir`, every other section kept (`framebench report --allocs-only`).
pub(crate) fn update_allocs(old: &str, target_dir: &Path) -> anyhow::Result<String> {
    let path = target_dir.join(ALLOCS_JSON);
    let cells = read_allocs(&path)?;
    anyhow::ensure!(
        !cells.is_empty(),
        "no {}: run `framebench allocs --json {}` first",
        path.display(),
        path.display()
    );
    let env = old
        .find("## Environment")
        .context("the report has no `## Environment` section: run `framebench report` first")?;
    let mut kept = old[env..].to_owned();
    if let Some(start) = kept.find(ALLOCS_HEADING) {
        let after = &kept[start + ALLOCS_HEADING.len()..];
        let end = after
            .find("\n## ")
            .map_or(kept.len(), |i| start + ALLOCS_HEADING.len() + i + 1);
        kept.replace_range(start..end, "");
    }
    let mut out = String::new();
    write_preamble(&mut out);
    out.push_str(kept.trim_end());
    out.push_str("\n\n");
    write_allocs(&mut out, &cells);
    let env = Environment::current();
    let written = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .map(httpdate::fmt_http_date)
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "Counted {written}: {}, {} ({} cores), Linux {}.\n",
        env.rustc, env.cpu, env.cores, env.kernel
    );
    Ok(out)
}

/// Where `framebench allocs --json` writes for the report, under the target folder.
pub(crate) const ALLOCS_JSON: &str = "allocs/allocs.json";

/// The cells `framebench allocs --json` wrote to `path`, or none when it has not run.
pub(crate) fn read_allocs(path: &Path) -> anyhow::Result<Vec<crate::allocs::Measured>> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let results = crate::results::Results::read(path)?;
    let report = crate::allocs::report::Report::from_results(results)
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(report.cells)
}

/// The allocation counts: frameworks × scenarios with the `null` floor's count subtracted
/// (calls, then bytes, logging off), then what `log=sink` adds.
pub(crate) fn write_allocs(out: &mut String, cells: &[crate::allocs::Measured]) {
    use crate::allocs::Counts;
    if cells.is_empty() {
        return;
    }
    let get = |fw: &str, scenario: &str, logging: &str| -> Option<Result<Counts, ()>> {
        let c = cells
            .iter()
            .find(|c| c.framework == fw && c.scenario == scenario && c.logging == logging)?;
        Some(c.counts.ok_or(()))
    };
    let floor = crate::frameworks::floor().map_or("null", |e| e.name);
    let names = ordered(cells.iter().map(|c| c.framework.clone()));
    let scenarios: Vec<&str> = SCENARIOS
        .iter()
        .map(|s| s.name)
        .filter(|s| cells.iter().any(|c| c.scenario == *s))
        .collect();
    let header: Vec<String> = std::iter::once("framework".to_owned())
        .chain(scenarios.iter().map(|s| (*s).to_owned()))
        .collect();
    // One cell: `f` of the framework's counts minus `f` of the floor's (the floor's own row
    // unsubtracted), `FAIL` for a cell that was not counted, a dash for one not measured.
    let cell = |fw: &str, s: &str, f: &dyn Fn(&Counts) -> i64| -> String {
        let base = if fw == floor {
            Some(Ok(Counts::default()))
        } else {
            get(floor, s, "off")
        };
        match (get(fw, s, "off"), base) {
            (Some(Ok(c)), Some(Ok(b))) => (f(&c) - f(&b)).to_string(),
            (Some(Ok(c)), _) => format!("{} (no floor)", f(&c)),
            (Some(Err(())), _) => "FAIL".into(),
            (None, _) => "—".into(),
        }
    };
    let _ = writeln!(
        out,
        "{ALLOCS_HEADING} (`framebench allocs`)\n\n\
         One `dispatch` after two warm-up requests, io memory, `log=off`, every thread counted; \
         each cell repeated and all repeats equal. The `{floor}` row is the floor itself; every \
         other row has the floor's count for the same scenario subtracted (below zero: fewer than the \
         floor, whose canned response is cloned, headers and all). `FAIL`: not counted \
         (the oracle, or repeats that disagree: `framebench allocs` says why).\n"
    );
    let _ = writeln!(
        out,
        "### Allocation calls (`alloc`; reallocations in brackets)\n"
    );
    let calls = rows(&names, &scenarios, |fw, s| {
        let allocs = cell(fw, s, &|c| c.allocs as i64);
        match cell(fw, s, &|c| c.reallocs as i64) {
            r if r == "0" || allocs.parse::<i64>().is_err() => allocs,
            r => format!("{allocs} ({r})"),
        }
    });
    table(out, &header, &calls);
    let _ = writeln!(
        out,
        "### Bytes allocated (reallocations' growth included)\n"
    );
    let bytes = rows(&names, &scenarios, |fw, s| {
        cell(fw, s, &|c| c.bytes_allocated as i64)
    });
    table(out, &header, &bytes);
    let _ = writeln!(
        out,
        "### Cost of logging in allocation calls (`log=sink` − `log=off`)\n"
    );
    let frameworks: Vec<String> = names.into_iter().filter(|fw| !is_baseline(fw)).collect();
    let logging = rows(&frameworks, &scenarios, |fw, s| {
        match (get(fw, s, "off"), get(fw, s, "sink")) {
            (Some(Ok(off)), Some(Ok(sink))) => {
                format!("{:+}", sink.allocs as i64 - off.allocs as i64)
            }
            (Some(Err(())), _) | (_, Some(Err(()))) => "FAIL".into(),
            _ => "—".into(),
        }
    });
    table(out, &header, &logging);
}

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

/// Every timed difference that needs an explanation: a separated negative cost (logging or
/// disk I/O making a request cheaper), a separated cost whose exact counts go the other way,
/// and a framework faster than `raw` beyond the interval. Differences printed as `≈` are never
/// listed: they claim nothing.
pub(crate) fn findings(
    deltas: &[Delta],
    counts: &[Count],
    allocs: &[crate::allocs::Measured],
) -> Vec<Finding> {
    let instructions = |fw: &str, key: String| {
        counts
            .iter()
            .find(|c| c.framework == fw && c.key == key)
            .map(|c| c.instructions)
    };
    let alloc_calls = |fw: &str, scenario: &str, logging: &str| {
        allocs
            .iter()
            .find(|c| c.framework == fw && c.scenario == scenario && c.logging == logging)
            .and_then(|c| c.counts.as_ref())
            .map(|c| (c.allocs + c.reallocs) as f64)
    };
    let mut out = Vec::new();
    for d in deltas.iter().filter(|d| d.error.is_none()) {
        let cell = format!("{} {} {}", d.kind_name(), d.framework, d.scenario);
        match d.kind {
            Kind::Logging | Kind::Disk => {
                let (Some(delta), Some(base)) = (d.delta_ns, d.base_ns) else {
                    continue;
                };
                if !delta.separated(0.0) {
                    continue;
                }
                // The exact witnesses of the same difference: callgrind and allocation counts
                // exist for logging (io memory), none for disk I/O.
                let mut witnesses = Vec::new();
                if d.kind == Kind::Logging {
                    let off = |k: &str| format!("in_process/{}/{k}", d.scenario);
                    if let (Some(a), Some(b)) = (
                        instructions(&d.framework, off("off")),
                        instructions(&d.framework, off("sink")),
                    ) {
                        witnesses.push(("instructions", a, b));
                    }
                    if let (Some(a), Some(b)) = (
                        alloc_calls(&d.framework, &d.scenario, "off"),
                        alloc_calls(&d.framework, &d.scenario, "sink"),
                    ) {
                        witnesses.push(("allocations", a, b));
                    }
                }
                let against = witnesses
                    .iter()
                    .any(|(_, a, b)| b != a && (b - a).signum() != delta.point.signum());
                let negative = delta.point < 0.0;
                if !against && !negative {
                    continue;
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
                out.push(Finding {
                    cell,
                    time: interval::delta_text(&delta, base.point),
                    counts,
                    contradiction: against,
                });
            }
            Kind::VsRaw => {
                let Some(ratio) = d.ratio else { continue };
                let faster = ratio.separated(1.0) && ratio.point > 1.0;
                let slower = ratio.separated(1.0) && ratio.point < 1.0;
                let key = format!("loopback/{}", d.scenario);
                let (fw, raw) = (
                    instructions(&d.framework, key.clone()),
                    instructions(&d.base, key),
                );
                // The time and the count of the same two servers: slower than raw in time but
                // fewer instructions, or the reverse, is a contradiction.
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
                    continue;
                }
                out.push(Finding {
                    cell,
                    time: interval::ratio_text(&ratio),
                    counts,
                    contradiction,
                });
            }
        }
    }
    out
}

/// The consistency section: [`findings`], contradictions first.
fn write_consistency(
    out: &mut String,
    deltas: &[Delta],
    counts: &[Count],
    allocs: &[crate::allocs::Measured],
) {
    out.push_str("## Consistency: time against the exact counts\n\n");
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
         loopback reference. docs/methodology/callgrind.md (\"Time against the counts\") explains every \
         contradiction of the published run. {contradictions} contradiction(s), {} other finding(s).\n",
        found.len() - contradictions
    );
    if found.is_empty() {
        return;
    }
    let header: Vec<String> = ["cell", "time says", "counts say", "contradiction"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let rows: Vec<Vec<String>> = found
        .iter()
        .map(|f| {
            vec![
                f.cell.clone(),
                f.time.clone(),
                f.counts.clone(),
                if f.contradiction { "yes" } else { "no" }.to_owned(),
            ]
        })
        .collect();
    table(out, &header, &rows);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocs::{Counts, Measured};
    use crate::deltas::{Delta, Kind};

    /// Every in-process framework counted 12 allocations (15 with logging), the floor 2.
    fn cells() -> Vec<Measured> {
        let floor = crate::frameworks::floor().unwrap().name;
        let mut out = Vec::new();
        for e in REGISTRY.iter().filter(|e| e.in_process) {
            for s in crate::allocs::scenarios() {
                for logging in ["off", "sink"] {
                    let allocs = match (e.name == floor, logging) {
                        (true, _) => 2,
                        (false, "off") => 12,
                        (false, _) => 15,
                    };
                    out.push(Measured {
                        framework: e.name.to_owned(),
                        scenario: s.name.to_owned(),
                        logging: logging.to_owned(),
                        counts: Some(Counts {
                            allocs,
                            bytes_allocated: allocs * 100,
                            ..Counts::default()
                        }),
                        error: None,
                    });
                }
            }
        }
        out
    }

    fn logging_delta(framework: &str, scenario: &str, point: f64, lo: f64, hi: f64) -> Delta {
        let at = |p: f64| {
            Some(Estimate {
                point: p,
                lo: p - 10.0,
                hi: p + 10.0,
            })
        };
        Delta {
            kind: Kind::Logging,
            framework: framework.into(),
            scenario: scenario.into(),
            base: "log=off,io=memory".into(),
            with: "log=sink,io=memory".into(),
            rounds: 30,
            batch: 1000,
            base_ns: at(3800.0),
            with_ns: at(3800.0 + point),
            delta_ns: Some(Estimate { point, lo, hi }),
            ratio: None,
            error: None,
        }
    }

    fn count(framework: &str, key: &str, instructions: f64) -> Count {
        Count {
            key: key.into(),
            framework: framework.into(),
            instructions,
        }
    }

    #[test]
    fn an_overlapping_difference_prints_approximately_and_is_not_listed() {
        let deltas = vec![logging_delta("nickel", "hello", -802.0, -1500.0, 200.0)];
        let mut out = String::new();
        write_differences(&mut out, &deltas);
        let row = out.lines().find(|l| l.starts_with("| nickel |")).unwrap();
        assert!(row.contains("≈ (±1.00 µs)"), "{out}");
        assert!(!row.contains('−'), "a signed figure for noise: {row}");
        assert!(findings(&deltas, &[], &[]).is_empty());
    }

    #[test]
    fn a_separated_negative_cost_prints_its_sign_and_is_listed() {
        let deltas = vec![logging_delta("nickel", "hello", -802.0, -900.0, -700.0)];
        let counts = vec![
            count("nickel", "in_process/hello/off", 27_055.0),
            count("nickel", "in_process/hello/sink", 32_893.0),
        ];
        let mut out = String::new();
        write_differences(&mut out, &deltas);
        assert!(out.contains("−802 ns ±102 ns (−21 %) †"), "{out}");
        let found = findings(&deltas, &counts, &[]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contradiction,
            "faster by time, +5,838 instructions"
        );
        assert_eq!(found[0].counts, "+5,838 instructions");
        let mut out = String::new();
        write_consistency(&mut out, &deltas, &counts, &[]);
        assert!(
            out.contains("1 contradiction(s), 0 other finding(s)"),
            "{out}"
        );
        assert!(out.contains("| logging nickel hello |"), "{out}");
    }

    #[test]
    fn a_separated_cost_that_the_counts_confirm_is_not_listed() {
        let deltas = vec![logging_delta("axum", "hello", 300.0, 250.0, 350.0)];
        let counts = vec![
            count("axum", "in_process/hello/off", 20_000.0),
            count("axum", "in_process/hello/sink", 22_000.0),
        ];
        assert!(findings(&deltas, &counts, &[]).is_empty());
        // The reverse: the time says dearer, the counts say less work.
        let counts = vec![
            count("axum", "in_process/hello/off", 22_000.0),
            count("axum", "in_process/hello/sink", 20_000.0),
        ];
        let found = findings(&deltas, &counts, &[]);
        assert!(found.len() == 1 && found[0].contradiction, "{found:?}");
    }

    #[test]
    fn faster_than_raw_is_marked_and_checked_against_the_loopback_count() {
        let ratio = |point: f64, lo: f64, hi: f64| Delta {
            kind: Kind::VsRaw,
            base: "raw".into(),
            with: "may-minihttp".into(),
            delta_ns: None,
            ratio: Some(Estimate { point, lo, hi }),
            ..logging_delta("may-minihttp", "hello", 0.0, 0.0, 0.0)
        };
        let counts = vec![
            count("may-minihttp", "loopback/hello", 60_000.0),
            count("raw", "loopback/hello", 20_000.0),
        ];
        let noise = ratio(1.31, 0.95, 1.60);
        assert_eq!(difference_text(&noise), "≈ (±0.36)");
        assert!(findings(&[noise], &counts, &[]).is_empty());
        let faster = ratio(1.10, 1.05, 1.15);
        assert_eq!(difference_text(&faster), "1.10 ±0.05 ‡");
        let found = findings(&[faster], &counts, &[]);
        assert!(found.len() == 1 && found[0].contradiction, "{found:?}");
        assert!(found[0].counts.contains("60,000"), "{found:?}");
        let slower = ratio(0.80, 0.78, 0.82);
        assert_eq!(difference_text(&slower), "0.80 ±0.02");
        assert!(findings(std::slice::from_ref(&slower), &counts, &[]).is_empty());
        // Slower than raw in time, yet fewer instructions per request than raw: listed.
        let fewer = vec![
            count("may-minihttp", "loopback/hello", 10_000.0),
            count("raw", "loopback/hello", 20_000.0),
        ];
        let found = findings(&[slower], &fewer, &[]);
        assert!(found.len() == 1 && found[0].contradiction, "{found:?}");
    }

    #[test]
    fn the_allocation_table_has_every_framework_with_the_floor_subtracted() {
        let mut out = String::new();
        write_allocs(&mut out, &cells());
        let floor = crate::frameworks::floor().unwrap().name;
        let row = |name: &str| {
            out.lines()
                .find(|l| l.starts_with(&format!("| {name} |")))
                .unwrap_or_else(|| panic!("no row for {name}:\n{out}"))
                .to_owned()
        };
        assert!(row(floor).starts_with(&format!("| {floor} | 2 | 2 |")));
        for e in REGISTRY.iter().filter(|e| e.in_process && e.name != floor) {
            assert!(
                row(e.name).starts_with(&format!("| {} | 10 | 10 |", e.name)),
                "{out}"
            );
        }
        assert!(out.contains("| 1000 |"), "bytes, floor subtracted: {out}");
        if let Some(fw) = REGISTRY.iter().find(|e| e.in_process && !e.baseline) {
            assert!(out.contains(&format!("| {} | +3 |", fw.name)), "{out}");
        }
    }

    #[test]
    fn a_cell_not_counted_says_fail() {
        let mut cells = cells();
        let floor = crate::frameworks::floor().unwrap().name;
        let cell = cells.iter_mut().find(|c| c.framework == floor).unwrap();
        cell.counts = None;
        cell.error = Some("repeats disagree".into());
        let mut out = String::new();
        write_allocs(&mut out, &cells);
        assert!(out.contains(&format!("| {floor} | FAIL |")), "{out}");
    }

    #[test]
    fn allocs_only_replaces_its_section_and_keeps_the_others() {
        let dir = std::env::temp_dir().join(format!("framebench-report-{}", std::process::id()));
        let json = dir.join(ALLOCS_JSON);
        std::fs::create_dir_all(json.parent().unwrap()).unwrap();
        let report = crate::allocs::report::Report {
            repeats: 5,
            cells: cells(),
        };
        let results = report.results().unwrap();
        std::fs::write(&json, serde_json::to_string(&results).unwrap()).unwrap();
        let old = format!(
            "# Results\n\nold preamble\n\n## Environment\n\n- kept\n\n{ALLOCS_HEADING} \
             (`framebench allocs`)\n\nstale table\n\n## Loopback\n\nkept table\n"
        );
        let new = update_allocs(&old, &dir).unwrap();
        let again = update_allocs(&new, &dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            !new.contains("old preamble") && !new.contains("stale table"),
            "{new}"
        );
        assert!(
            new.contains("- kept") && new.contains("kept table"),
            "{new}"
        );
        assert_eq!(new.matches(ALLOCS_HEADING).count(), 1, "{new}");
        assert!(new.find("kept table") < new.find(ALLOCS_HEADING), "{new}");
        // Running it again changes nothing but the counted date, which is the same here.
        assert_eq!(again, new);
    }
}
