//! What `ab --patch` measures of its two builds, each figure from a process of that build: the
//! exact counts (`framebench allocs`, and callgrind's instructions through `framebench profile
//! --callgrind` where valgrind is installed), the in-process time in paired rounds of worker
//! processes ([`super::cell`]) and the loopback rate in paired rounds of `framebench load`.
//! Every figure comes in two, `ab/base` and `ab/new`, for one cell and metric.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::bench::callgrind::TOGGLE;
use crate::bench::callgrind_out::Profile;
use crate::interval::{self, Estimate};
use crate::results::diff::Change;
use crate::results::{Figure, Metric, Results};

use super::checkout::last_error;

/// The bench of a base figure in `--json`.
pub(crate) const BASE: &str = "ab/base";
/// The bench of a new figure in `--json`.
pub(crate) const NEW: &str = "ab/new";
/// The variant of the in-process figures: as the counts' cells, logging off, io memory.
const IN_PROCESS: &str = "log=off";
/// Dispatches counted under callgrind per cell, as `profile --callgrind` counts by default.
const CALLGRIND_REQUESTS: u32 = 100;

/// One build: its binary and its scratch folder, where its runs write their files.
#[derive(Clone, Copy)]
pub(crate) struct Build<'a> {
    /// Its `framebench`.
    pub(crate) exe: &'a Path,
    /// Its scratch folder.
    pub(crate) dir: &'a Path,
}

impl Build<'_> {
    /// Runs this build's `framebench` with `args`, its target folder in its scratch folder, and
    /// returns stdout, or one line of what went wrong.
    fn output(&self, args: &[&str]) -> anyhow::Result<String> {
        let out = Command::new(self.exe)
            .args(args)
            .env("CARGO_TARGET_DIR", self.dir.join("runs"))
            .output()
            .map_err(|e| anyhow::anyhow!("running {}: {e}", self.exe.display()))?;
        if !out.status.success() {
            anyhow::bail!(
                "framebench {}: {}",
                args.join(" "),
                last_error(&String::from_utf8_lossy(&out.stderr))
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// Allocations and bytes per request of `fw` on `scenarios`, logging off, from `build`'s
/// `framebench allocs`: exact.
pub(crate) fn counts(build: Build, fw: &str, scenarios: &[&str]) -> anyhow::Result<Vec<Figure>> {
    let text = build.output(&[
        "allocs",
        fw,
        "--scenarios",
        &scenarios.join(","),
        "--logging",
        "off",
        "--json",
        "-",
    ])?;
    let results = Results::parse(&text, "framebench allocs --json -")?;
    Ok(results
        .figures
        .into_iter()
        .map(|f| Figure {
            variant: IN_PROCESS.to_owned(),
            ..f
        })
        .collect())
}

/// Instructions per request of `fw` × `scenario` under callgrind, from `build`'s `framebench
/// profile --callgrind`, and its profile (for where they went).
pub(crate) fn instructions(
    build: Build,
    fw: &str,
    scenario: &str,
) -> anyhow::Result<(Figure, Profile)> {
    let requests = CALLGRIND_REQUESTS.to_string();
    build.output(&[
        "profile",
        fw,
        scenario,
        "--callgrind",
        "--requests",
        &requests,
        "--top",
        "1",
    ])?;
    let file = build
        .dir
        .join("runs/framebench-profile")
        .join(format!("callgrind.out.{fw}.{scenario}.off.memory"));
    let text = std::fs::read_to_string(&file)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", file.display()))?;
    let profile = Profile::parse(&text, TOGGLE)?;
    let per = profile.total as f64 / f64::from(CALLGRIND_REQUESTS);
    let figure = Figure::count(
        "callgrind",
        fw,
        scenario,
        IN_PROCESS,
        Metric::Instructions,
        per,
    );
    Ok((figure, profile))
}

/// Per function, the self instructions per request the new build spends beyond the base, the
/// `top` largest each way: where a change of the instruction count went.
pub(crate) fn functions(base: &Profile, new: &Profile, top: usize) -> Vec<(String, f64)> {
    let per = f64::from(CALLGRIND_REQUESTS);
    crate::bench::callgrind::each_way(&new.difference(per, base, per), top)
}

/// The in-process time of `fw` × `scenario`: NEW / OLD in paired rounds of worker processes
/// ([`super::cell`]); the base figure is the old build's median time, the new one that times
/// the ratio, with the ratio's interval.
pub(crate) fn time(
    (old, new, cpus): (&PathBuf, &PathBuf, &[usize]),
    fw: &str,
    scenario: &str,
    (restarts, rounds): (usize, usize),
) -> anyhow::Result<Change> {
    let row = super::cell((old, new, cpus), fw, scenario, restarts, rounds);
    let ratio = row.ratio?;
    let old_ns = row
        .old_ns
        .ok_or_else(|| anyhow::anyhow!("no time of the base build"))?;
    Ok(paired(
        fw,
        scenario,
        IN_PROCESS,
        Metric::Time,
        old_ns,
        ratio,
    ))
}

/// One `framebench load` of `fw` × `scenario` by `build`, serving and loading itself on
/// separate cores (its default pinning): requests per second.
fn rate(build: Build, fw: &str, scenario: &str, load: &Load) -> anyhow::Result<f64> {
    let json = build.dir.join("load.json");
    let connections = load.connections.to_string();
    let duration = format!("{}ms", load.duration.as_millis());
    build.output(&[
        "load",
        "--target",
        fw,
        "--scenario",
        scenario,
        "-c",
        &connections,
        "--threads",
        "1",
        "-d",
        &duration,
        "--warmup",
        "500ms",
        "--quiet",
        "--json",
        &json.to_string_lossy(),
    ])?;
    let results = Results::read(&json)?;
    results
        .figures
        .iter()
        .find(|f| f.metric == Metric::Rps)
        .map(|f| f.value)
        .ok_or_else(|| anyhow::anyhow!("{}: no rate", json.display()))
}

/// How the loopback rate is taken.
pub(crate) struct Load {
    /// Paired rounds (0: not measured).
    pub(crate) rounds: usize,
    /// Connections.
    pub(crate) connections: u32,
    /// Each load's measured time.
    pub(crate) duration: Duration,
}

impl Load {
    /// The variant its figures carry.
    pub(crate) fn variant(&self) -> String {
        format!("loopback,c{},threads1", self.connections)
    }
}

/// The loopback rate of `fw` × `scenario`: `load.rounds` paired rounds (base then new, new then
/// base, …), NEW / OLD per round; the base figure is the base's median rate, the new one that
/// times the median ratio, with the ratio's interval.
pub(crate) fn loopback(
    (base, new): (Build, Build),
    fw: &str,
    scenario: &str,
    load: &Load,
) -> anyhow::Result<Change> {
    let (olds, news) = crate::paired::paired(load.rounds, |side| {
        rate(if side { new } else { base }, fw, scenario, load)
    })?;
    let ratios: Vec<f64> = olds.iter().zip(&news).map(|(o, n)| n / o).collect();
    let ratio = interval::median_interval(&ratios).ok_or_else(|| anyhow::anyhow!("no rounds"))?;
    let old = interval::median_interval(&olds).ok_or_else(|| anyhow::anyhow!("no rounds"))?;
    Ok(paired(
        fw,
        scenario,
        &load.variant(),
        Metric::Rps,
        old,
        ratio,
    ))
}

/// A change taken in paired rounds: the base figure is `old`, the new one `old` times `ratio`
/// with the ratio's interval, and it is told apart from no change where the ratio's interval
/// leaves out 1.
fn paired(
    fw: &str,
    scenario: &str,
    variant: &str,
    metric: Metric,
    old: Estimate,
    ratio: Estimate,
) -> Change {
    let base = Figure::timed(BASE, fw, scenario, variant, metric, old);
    let new = Figure::timed(
        NEW,
        fw,
        scenario,
        variant,
        metric,
        ratio.map(|r| r * old.point),
    );
    Change::paired(base, new, ratio.separated(1.0))
}

/// An exact change: the base and new counts of one cell.
pub(crate) fn exact(base: &Figure, new: &Figure) -> Change {
    let side = |f: &Figure, bench: &str| Figure {
        bench: bench.to_owned(),
        ..f.clone()
    };
    Change::paired(side(base, BASE), side(new, NEW), base.value != new.value)
}
