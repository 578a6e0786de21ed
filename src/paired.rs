//! Paired rounds: two sides timed alternately ([`paired`]), as `framebench deltas` measures
//! every difference `framebench report` prints ([`Delta`], its file [`Report`]) and
//! `framebench ab` times two builds (src/ab.rs). The command's arguments and table are
//! src/cmd/deltas.rs.
//!
//! Two criterion runs of one build on this project's machine moved by −27 % and +31 % (issue
//! 23), so the difference of two cells timed a minute apart says more about the minute than
//! about the cells. Here the two sides of each difference are timed alternately, in batches of
//! a few milliseconds (A then B in even rounds, B then A in odd ones), and every round gives one
//! difference (or ratio) of two batches that ran back to back. A slow spell of the machine
//! slows both batches of a round, so it cancels in the round's difference. The published figure
//! is the median of the rounds with its distribution-free interval ([`crate::interval`]); a
//! difference whose interval holds "no change" is printed as `≈`.
//!
//! The differences:
//! - `logging`: `log=sink` − `log=off` in-process (io memory), every framework × scenario;
//! - `disk`: `io=disk` − `io=memory` in-process (logging off), for the routes that read a file;
//! - `vs-raw`: over loopback, one keep-alive connection to the framework's server and one to
//!   `raw`'s (both `--threads 1`, pinned to the server core), alternately; the ratio is `raw`'s
//!   time per request over the framework's (1.00: as fast as raw).
//!
//! Each side is checked against the oracle ([`crate::cell::prepare`], or the keep-alive
//! client's checked warm-up) before a round is timed.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::bench::client::KeepAlive;
use crate::bench::LOOPBACK_THREADS;
use crate::child::ServerProcess;
use crate::env::Environment;
use crate::fixtures::Fixtures;
use crate::framework::{Config, Entry};
use crate::interval::{self, Estimate};
use crate::options::Options;
use crate::oracle::Scenario;

/// Rounds per difference unless `--rounds` says otherwise: 30 rounds bound the median by the
/// 10th and 21st of them (95.7 %).
pub(crate) const ROUNDS: u16 = 30;
/// One in-process batch: long enough that the clock's resolution and one timer interrupt are
/// small beside it, short enough that a slow spell (0.5–4 s here) covers both halves of a round.
const IN_PROCESS_BATCH: Duration = Duration::from_millis(2);
/// One loopback batch: about 50 round trips of 80 µs.
const LOOPBACK_BATCH: Duration = Duration::from_millis(4);
/// The schema of the JSON `--json` writes; `framebench report` refuses any other.
pub(crate) const SCHEMA: &str = "framebench-deltas/1";
/// Where `framebench report` looks for it, under the target folder.
pub(crate) const DELTAS_JSON: &str = "deltas/deltas.json";

/// Which difference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Kind {
    /// `log=sink` − `log=off`, in-process.
    Logging,
    /// `io=disk` − `io=memory`, in-process.
    Disk,
    /// `raw`'s time over the framework's, over loopback.
    VsRaw,
}

impl Kind {
    /// `logging`, `disk`, `vs-raw`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Logging => "logging",
            Kind::Disk => "disk",
            Kind::VsRaw => "vs-raw",
        }
    }
}

/// One measured difference.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Delta {
    /// Which difference.
    pub(crate) kind: Kind,
    /// Framework name.
    pub(crate) framework: String,
    /// Scenario name.
    pub(crate) scenario: String,
    /// The side subtracted (`log=off,io=memory`, or `raw`).
    pub(crate) base: String,
    /// The other side.
    pub(crate) with: String,
    /// Rounds measured.
    pub(crate) rounds: usize,
    /// Requests per batch.
    pub(crate) batch: usize,
    /// Time per request of the base side, ns (median of its batches, with its interval).
    pub(crate) base_ns: Option<Estimate>,
    /// Time per request of the other side, ns.
    pub(crate) with_ns: Option<Estimate>,
    /// `with − base` per request, ns: the median of the rounds' differences.
    pub(crate) delta_ns: Option<Estimate>,
    /// `base / with`, the median of the rounds' ratios (for `vs-raw`: raw's time over the
    /// framework's, 1.00 = as fast as raw).
    pub(crate) ratio: Option<Estimate>,
    /// Why it was not measured (the oracle, a server that failed).
    pub(crate) error: Option<String>,
}

impl Delta {
    /// [`Kind::name`] of its kind.
    pub(crate) fn kind_name(&self) -> &'static str {
        self.kind.name()
    }

    /// The measured difference in the words of the terminal table and the report, or `None`
    /// when nothing was measured. A ratio to raw beyond its interval on the faster side is
    /// marked `‡`, a cost beyond its interval on the negative side `†`: neither is a saving to
    /// take at its word (both are listed under the report's Consistency).
    pub(crate) fn text(&self) -> Option<String> {
        let (text, marked) = match self.kind {
            Kind::VsRaw => {
                let r = self.ratio.as_ref()?;
                (interval::ratio_text(r), r.separated(1.0) && r.point > 1.0)
            }
            Kind::Logging | Kind::Disk => {
                let (delta, base) = (self.delta_ns.as_ref()?, self.base_ns.as_ref()?);
                let negative = delta.bounded() && delta.separated(0.0) && delta.point < 0.0;
                (interval::delta_text(delta, base.point), negative)
            }
        };
        Some(match (marked, self.kind) {
            (false, _) => text,
            (true, Kind::VsRaw) => format!("{text} ‡"),
            (true, _) => format!("{text} †"),
        })
    }
}

/// What `--json` writes.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Report {
    /// [`SCHEMA`].
    pub(crate) schema: String,
    /// Where it ran.
    pub(crate) environment: Environment,
    /// Which cores the server and the client ran on (older files: inside `environment`).
    #[serde(default)]
    pub(crate) pinning: String,
    /// The build that measured and wrote it, and when (older files: none, and `report` takes
    /// the build from `environment`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) provenance: Option<crate::provenance::Provenance>,
    /// Every difference.
    pub cells: Vec<Delta>,
}

/// Reads a `--json` file, refusing another schema with one line ([`crate::versioned`]).
pub(crate) fn read(path: &std::path::Path) -> anyhow::Result<Report> {
    crate::versioned::read(path)
}

impl crate::versioned::Versioned for Report {
    const SCHEMAS: &'static [&'static str] = &[SCHEMA];
    const WHAT: &'static str = "a `framebench deltas` file";
    const HOW: &'static str = "measure again with `framebench deltas --json FILE`";
}

/// Times two sides alternately: `time(false)` is A, `time(true)` B, each returning ns per
/// request of one batch. Returns A's and B's times in round order.
pub(crate) fn paired(
    rounds: usize,
    mut time: impl FnMut(bool) -> anyhow::Result<f64>,
) -> anyhow::Result<(Vec<f64>, Vec<f64>)> {
    let (mut a, mut b) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    // One unrecorded round first: caches, lazily built state and the branch predictors are
    // warm for both sides before any round counts.
    time(false)?;
    time(true)?;
    for r in 0..rounds {
        if r % 2 == 0 {
            a.push(time(false)?);
            b.push(time(true)?);
        } else {
            b.push(time(true)?);
            a.push(time(false)?);
        }
    }
    Ok((a, b))
}

/// `delta` with the estimates of a measurement's batch size and paired rounds, or its error.
pub(crate) fn finish(
    mut delta: Delta,
    measured: anyhow::Result<(usize, Vec<f64>, Vec<f64>)>,
) -> Delta {
    match measured {
        Ok((batch, a, b)) => {
            delta.batch = batch;
            estimates(&mut delta, &a, &b);
        }
        Err(e) => delta.error = Some(format!("{e:#}")),
    }
    delta
}

/// The estimates of two sides' paired rounds.
pub(crate) fn estimates(delta: &mut Delta, a: &[f64], b: &[f64]) {
    let diffs: Vec<f64> = a.iter().zip(b).map(|(a, b)| b - a).collect();
    let ratios: Vec<f64> = a.iter().zip(b).map(|(a, b)| a / b).collect();
    delta.rounds = a.len();
    delta.base_ns = interval::median_interval(a);
    delta.with_ns = interval::median_interval(b);
    delta.delta_ns = interval::median_interval(&diffs);
    delta.ratio = interval::median_interval(&ratios);
}

/// A difference not measured yet.
pub(crate) fn empty(
    kind: Kind,
    framework: &str,
    scenario: &str,
    base: String,
    with: String,
) -> Delta {
    Delta {
        kind,
        framework: framework.to_owned(),
        scenario: scenario.to_owned(),
        base,
        with,
        rounds: 0,
        batch: 0,
        base_ns: None,
        with_ns: None,
        delta_ns: None,
        ratio: None,
        error: None,
    }
}

/// One in-process difference: `base` and `with` options of `entry` × `scenario`.
pub(crate) fn in_process(
    kind: Kind,
    entry: &Entry,
    config: &Config,
    scenario: &'static Scenario,
    (base, with): (Options, Options),
    rounds: usize,
) -> Delta {
    let delta = empty(kind, entry.name, scenario.name, base.label(), with.label());
    let measured = (|| {
        let a = crate::cell::prepare(entry, &config.with(base), scenario)?;
        let b = crate::cell::prepare(entry, &config.with(with), scenario)?;
        let batch = crate::bench::calibrate(IN_PROCESS_BATCH, |n| {
            crate::bench::timed_batch(&*a.app, &a.instances, n)
        })?;
        let per_request = |side: bool| {
            let app = if side { &*b.app } else { &*a.app };
            let t = crate::bench::timed_batch(app, &a.instances, batch)?;
            Ok(t.as_secs_f64() * 1e9 / batch as f64)
        };
        let (ta, tb) = paired(rounds, per_request)?;
        Ok::<_, anyhow::Error>((batch, ta, tb))
    })();
    finish(delta, measured)
}

/// One loopback difference: `raw`'s server against `entry`'s, one keep-alive connection each.
pub(crate) fn vs_raw(
    entry: &Entry,
    scenario: &'static Scenario,
    fixtures: &Fixtures,
    servers: (&ServerProcess, &ServerProcess),
    rounds: usize,
) -> Delta {
    let raw_name = crate::frameworks::reference().map_or("raw", |e| e.name);
    let delta = empty(
        Kind::VsRaw,
        entry.name,
        scenario.name,
        raw_name.to_owned(),
        entry.name.to_owned(),
    );
    let measured = (|| {
        let mut raw = KeepAlive::connect(servers.0.addr(), scenario, fixtures)?;
        let mut fw = KeepAlive::connect(servers.1.addr(), scenario, fixtures)?;
        let time = |conn: &mut KeepAlive, n: usize| {
            let start = std::time::Instant::now();
            for _ in 0..n {
                conn.round_trip()?;
            }
            Ok::<_, anyhow::Error>(start.elapsed())
        };
        let batch = crate::bench::calibrate(LOOPBACK_BATCH, |n| time(&mut raw, n))?;
        let (ta, tb) = paired(rounds, |side| {
            let conn = if side { &mut fw } else { &mut raw };
            Ok(time(conn, batch)?.as_secs_f64() * 1e9 / batch as f64)
        })?;
        // Fairness: iron's and nickel's pools serve one connection per thread until it closes;
        // both connections close here, before the next cell opens its own.
        Ok::<_, anyhow::Error>((batch, ta, tb))
    })();
    finish(delta, measured)
}

/// The `vs-raw` differences: one server per framework and one for raw, started first and
/// pinned to the server core, this thread to the client core.
pub(crate) fn loopback(
    entries: &[&'static Entry],
    scenarios: &[&&'static Scenario],
    fixtures: &Fixtures,
    rounds: usize,
    record: &mut impl FnMut(Delta),
    interrupted: &impl Fn() -> bool,
) -> anyhow::Result<()> {
    let Some(raw_entry) = crate::frameworks::reference() else {
        return Ok(());
    };
    let exe = crate::child::framebench_exe()?;
    let pinning = crate::pinning::Pinning::one_core_each();
    if !pinning.client_cpus.is_empty() {
        crate::pinning::pin_current_thread(&pinning.client_cpus);
    }
    let options = Options {
        threads: LOOPBACK_THREADS,
        ..Options::default()
    };
    let start = |name: &str| ServerProcess::start(&exe, name, options, &pinning.server_cpus);
    let raw = start(raw_entry.name)?;
    for entry in entries.iter().filter(|e| e.loopback && !e.baseline) {
        if let Err(why) = entry.available() {
            eprintln!("skipping {} over loopback: {why}", entry.name);
            continue;
        }
        let server = start(entry.name);
        for scenario in scenarios
            .iter()
            .filter(|s| crate::cell::supported(entry, s, false).is_ok())
        {
            if interrupted() {
                return Ok(());
            }
            match &server {
                Ok(server) => record(vs_raw(entry, scenario, fixtures, (&raw, server), rounds)),
                Err(e) => {
                    let mut d = empty(
                        Kind::VsRaw,
                        entry.name,
                        scenario.name,
                        raw_entry.name.to_owned(),
                        entry.name.to_owned(),
                    );
                    d.error = Some(format!("server: {e:#}"));
                    record(d);
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paired_rounds_alternate_and_cancel_a_shared_drift() {
        // Side B costs 10 more than A; the machine's speed drifts by a factor of 3 over the run,
        // in steps each round. Each round's two batches see the same speed, so every
        // difference is 10 × that round's factor and the ratio A/B is the same in every round.
        let mut calls = Vec::new();
        let mut tick = 0usize;
        let (a, b) = paired(20, |side| {
            calls.push(side);
            tick += 1;
            let slow = 1.0 + 2.0 * ((tick - 1) / 2) as f64 / 21.0;
            Ok(if side { 110.0 } else { 100.0 } * slow)
        })
        .unwrap();
        assert_eq!(&calls[..6], &[false, true, false, true, true, false]);
        let mut d = empty(Kind::Logging, "x", "hello", "a".into(), "b".into());
        estimates(&mut d, &a, &b);
        let ratio = d.ratio.unwrap();
        assert!((ratio.point - 100.0 / 110.0).abs() < 1e-9, "{ratio:?}");
        assert!(ratio.separated(1.0));
        assert!(d.delta_ns.unwrap().separated(0.0));
    }

    #[test]
    fn a_foreign_file_is_refused_with_one_line() {
        let dir = std::env::temp_dir().join(format!("framebench-deltas-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("d.json");
        std::fs::write(&path, r#"{"schema": "framebench-deltas/0", "cells": []}"#).unwrap();
        let e = format!("{:#}", read(&path).unwrap_err());
        std::fs::write(&path, "not json").unwrap();
        let e2 = format!("{:#}", read(&path).unwrap_err());
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            e.contains("framebench-deltas/0") && !e.contains('\n'),
            "{e}"
        );
        assert!(e2.contains("not JSON") && !e2.contains('\n'), "{e2}");
    }
}
