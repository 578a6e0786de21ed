//! `framebench merge`: the results of one load run by several processes (`load --shard I/N`,
//! on one host or several) combined into one result, exactly. Percentiles cannot be averaged;
//! histograms can be added. Each result names its HdrHistogram interval log (`--hdr-log`);
//! `merge` reads the logs, adds every process's interval histograms of a cell, and takes the
//! latencies from the sum. Counts are summed; the rate is taken over the window every process
//! was measuring (the common window), from the intervals that fall in it. The result has the
//! format `load --json` writes, so `diff`, `--markdown` and `--plot` read it as they read one
//! process's, with one row per process kept below (`run.merged_from`).

use std::path::{Path, PathBuf};

use super::output::Report;
use super::stats::{Bound, CellResult, Latency, PerConnection, Status};

/// One process's result and its interval log.
pub(crate) struct Part {
    pub(crate) file: PathBuf,
    pub(crate) report: Report,
    pub(crate) intervals: Vec<super::hdrlog::Interval>,
    /// The builds that measured it and when ([`crate::provenance`]), one source of the merge.
    pub(crate) sources: Vec<crate::provenance::Source>,
}

/// Reads one process's result and the interval log it names (relative to the result's folder
/// when not found as given).
pub(crate) fn read_part(file: &Path) -> anyhow::Result<Part> {
    let what = file.display();
    let results =
        crate::results::Results::read(file).map_err(|e| crate::error::usage(format!("{e:#}")))?;
    if !matches!(results.command.as_str(), "load" | "merge") {
        return Err(crate::error::usage(format!(
            "{what} is a result of `{}`, not of `load`",
            results.command
        )));
    }
    let written = std::fs::metadata(file).and_then(|m| m.modified()).ok();
    let sources = crate::provenance::Source::of_file(
        &what.to_string(),
        results.provenance.as_ref(),
        &results.environment,
        written,
    );
    let report: Report = results
        .detail
        .ok_or_else(|| crate::error::usage(format!("{what} has no load detail")))
        .and_then(|d| {
            serde_json::from_value(d)
                .map_err(|e| crate::error::usage(format!("{what}: not a load result: {e}")))
        })?;
    let named = report.run.hdr_log.clone().ok_or_else(|| {
        crate::error::usage(format!(
            "{what} names no interval log: run each load with --hdr-log FILE --json FILE"
        ))
    })?;
    let beside = file.parent().unwrap_or(Path::new("")).join(&named);
    let log = [PathBuf::from(&named), beside]
        .into_iter()
        .find(|p| p.is_file())
        .ok_or_else(|| {
            crate::error::usage(format!(
                "{what} names the interval log {named}, which is not there"
            ))
        })?;
    let intervals = super::hdrlog::read(&log)
        .map_err(|e| crate::error::usage(format!("{}: {e:#}", log.display())))?;
    Ok(Part {
        file: file.to_owned(),
        report,
        intervals,
        sources,
    })
}

/// What every process of one run must share: the target, scenario and variant of each cell
/// and every setting but the shard's index.
fn experiment(r: &Report) -> Vec<(&'static str, String)> {
    let p = &r.params;
    let cells: Vec<String> = r
        .cells
        .iter()
        .map(|c| format!("{} {} {}", server_key(&c.target), c.scenario, c.variant))
        .collect();
    vec![
        ("cells", cells.join("; ")),
        ("duration", format!("{:?}", p.duration)),
        ("warm-up", format!("{:?}", p.warmup)),
        ("timeout", format!("{:?}", p.timeout)),
        ("pipeline", p.pipeline.to_string()),
        ("open or closed loop", p.rate.is_some().to_string()),
        (
            "requests per connection",
            format!("{:?}", p.requests_per_connection),
        ),
        ("count-bounded", p.requests.is_some().to_string()),
        ("start time", format!("{:?}", p.start_at)),
        ("shard count", format!("{:?}", p.shard.map(|s| s.count))),
        ("log interval", format!("{:?}", p.hdr_interval)),
    ]
}

/// What names one server in every process's result: a framework's name, or a URL's port (each
/// client host may reach the server at an address of its own, as the namespace test does).
fn server_key(target: &str) -> String {
    match target.strip_prefix("http://") {
        Some(hostport) => format!(
            "a server on port {}",
            hostport.rsplit(':').next().unwrap_or(hostport)
        ),
        None => target.to_owned(),
    }
}

/// Refuses results that are not one run: different settings, or one shard twice.
pub(crate) fn same_run(parts: &[Part]) -> anyhow::Result<()> {
    let first = &parts[0];
    let want = experiment(&first.report);
    for p in &parts[1..] {
        for ((what, a), (_, b)) in want.iter().zip(experiment(&p.report)) {
            if *a != b {
                return Err(crate::error::usage(format!(
                    "{} and {} are not one run: their {what} differ ({a} against {b})",
                    first.file.display(),
                    p.file.display()
                )));
            }
        }
    }
    let mut shards: Vec<_> = parts.iter().map(|p| p.report.params.shard).collect();
    shards.sort_by_key(|s| s.map(|s| s.index));
    if shards.windows(2).any(|w| w[0] == w[1]) {
        return Err(crate::error::usage(
            "the same shard appears twice: merge each process's result once",
        ));
    }
    Ok(())
}

/// The requests of `part`'s cell `tag` answered inside `[from, to]` (seconds since the
/// epoch), from its intervals: an interval that straddles an end counts in proportion.
fn requests_within(part: &Part, tag: &str, from: f64, to: f64) -> f64 {
    part.intervals
        .iter()
        .filter(|i| i.tag == tag)
        .map(|i| {
            let overlap = (i.start + i.length).min(to) - i.start.max(from);
            i.histogram.len() as f64 * (overlap / i.length.max(1e-9)).clamp(0.0, 1.0)
        })
        .sum()
}

/// Merges cell `k` of every part.
pub(crate) fn merge_cell(parts: &[Part], k: usize) -> anyhow::Result<CellResult> {
    let cells: Vec<&CellResult> = parts.iter().map(|p| &p.report.cells[k]).collect();
    let mut m = cells[0].clone();
    let (histogram, from, to) = merged_histogram(parts, &cells)?;
    add_counts(&mut m, &cells);
    m.latency = histogram
        .as_ref()
        .map(Latency::from_hist)
        .unwrap_or_default();
    // The rate over the window every process measured.
    if m.status == Status::Ok {
        if to <= from {
            return Err(crate::error::usage(
                "the processes' recorded windows do not overlap (see --start-at)",
            ));
        }
        let within: f64 = parts
            .iter()
            .zip(&cells)
            .map(|(p, c)| requests_within(p, c.hdr_tag.as_deref().unwrap_or_default(), from, to))
            .sum();
        m.seconds = to - from;
        m.rps = within / m.seconds;
        m.recorded_from_unix = Some(from);
    }
    m.per_connection = per_connection(&cells, m.requests, m.connections);
    // Several clients: no one client's CPU, and no server meter (see --server-stats).
    m.client_cpu_pct = None;
    m.client_idle_polling_pct = None;
    m.server_cpu_pct = None;
    m.server_user_us_per_req = None;
    m.server_sys_us_per_req = None;
    m.server_peak_rss = None;
    m.rps_spread = None;
    m.bound = Bound::Unknown;
    m.hdr_tag = None;
    Ok(m)
}

/// The parts' latencies of one cell in one histogram, and the window every part recorded
/// (from the latest start to the earliest end, in seconds since the Unix epoch).
fn merged_histogram(
    parts: &[Part],
    cells: &[&CellResult],
) -> anyhow::Result<(Option<hdrhistogram::Histogram<u64>>, f64, f64)> {
    let mut histogram = None::<hdrhistogram::Histogram<u64>>;
    let (mut from, mut to) = (f64::NEG_INFINITY, f64::INFINITY);
    for (part, c) in parts.iter().zip(cells) {
        let tag = c.hdr_tag.as_deref().unwrap_or_default();
        let mine: Vec<_> = part.intervals.iter().filter(|i| i.tag == tag).collect();
        if c.status == Status::Ok && mine.is_empty() {
            return Err(crate::error::usage(format!(
                "{}: its log holds no interval tagged {tag}",
                part.file.display()
            )));
        }
        for i in mine {
            match &mut histogram {
                None => histogram = Some(i.histogram.clone()),
                Some(h) => h
                    .add(&i.histogram)
                    .map_err(|e| crate::error::usage(format!("{e:?}")))?,
            }
        }
        let start = c.recorded_from_unix.unwrap_or(0.0);
        from = from.max(start);
        to = to.min(start + c.seconds);
    }
    Ok((histogram, from, to))
}

/// The parts' counts added up into `m`, their first failure and first error.
fn add_counts(m: &mut CellResult, cells: &[&CellResult]) {
    let sum = |f: fn(&CellResult) -> u64| cells.iter().map(|c| f(c)).sum::<u64>();
    m.requests = sum(|c| c.requests);
    m.non_2xx = sum(|c| c.non_2xx);
    m.socket_errors = sum(|c| c.socket_errors);
    m.timeouts = sum(|c| c.timeouts);
    m.connects = sum(|c| c.connects);
    m.sampled = sum(|c| c.sampled);
    m.unrecorded = sum(|c| c.unrecorded);
    m.prechecked = sum(|c| c.prechecked);
    m.connections = cells.iter().map(|c| c.connections).sum();
    m.rate = cells.iter().map(|c| c.rate).sum();
    m.bytes_per_sec = cells.iter().map(|c| c.bytes_per_sec).sum();
    m.status = cells
        .iter()
        .map(|c| c.status.clone())
        .find(|s| *s != Status::Ok)
        .unwrap_or(Status::Ok);
    m.first_error = cells.iter().find_map(|c| c.first_error.clone());
}

/// Requests per connection over every part's connections.
fn per_connection(cells: &[&CellResult], requests: u64, connections: usize) -> PerConnection {
    PerConnection {
        min: cells
            .iter()
            .map(|c| c.per_connection.min)
            .min()
            .unwrap_or(0),
        mean: requests as f64 / connections.max(1) as f64,
        max: cells
            .iter()
            .map(|c| c.per_connection.max)
            .max()
            .unwrap_or(0),
        zero: cells.iter().map(|c| c.per_connection.zero).sum(),
        starved: cells.iter().map(|c| c.per_connection.starved).sum(),
    }
}
