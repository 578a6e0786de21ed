//! What a framework costs before its first request: the time from `exec` of `framebench serve
//! X` to its first 200, and what its server holds in memory right after that answer
//! (`framebench startup`; scripts/footprint.sh adds compile time and binary size).
//!
//! Each run starts a fresh server, waits for its `listening on` line, sends `GET /` on a new
//! connection and stops the clock when the whole answer is read and found as the oracle's
//! `hello`. The figure includes what every framework pays alike (the exec, the fixtures read
//! from disk, the listener bound), so the reference server's (`raw`) is printed beside each.

use std::time::{Duration, Instant};

use anyhow::{anyhow, Context as _};
use serde::{Deserialize, Serialize};

use crate::child::ServerProcess;
use crate::framework::Entry;
use crate::interval::Estimate;
use crate::options::Options;
use crate::outcome::{NotOk, Outcome};
use crate::proc::Resident;

/// One start of one server.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct Start {
    /// Seconds from the spawn to the first answer read whole.
    pub(crate) to_first_200_s: f64,
    /// The serving processes' memory right after that answer.
    pub(crate) resident: Resident,
}

/// The answer every start must give: the oracle's `hello`.
pub(crate) fn expected() -> anyhow::Result<crate::oracle::Expected> {
    let fixtures = crate::fixtures::Fixtures::load_default()?;
    crate::select::scenario("hello")?.expected(&fixtures)
}

/// One start of `entry`'s server with `options`, pinned to `cpus`: not run when the framework
/// cannot run here (a Go peer without `go`), failed otherwise.
pub(crate) fn measure(
    exe: &std::path::Path,
    entry: &Entry,
    options: Options,
    cpus: &[usize],
    expected: &crate::oracle::Expected,
) -> Outcome<Start> {
    entry.available().map_err(NotOk::NotRun)?;
    start(exe, entry, options, cpus, expected)
        .with_context(|| format!("starting {}", entry.name))
        .map_err(NotOk::Failed)
}

/// One start, read and stopped.
fn start(
    exe: &std::path::Path,
    entry: &Entry,
    options: Options,
    cpus: &[usize],
    expected: &crate::oracle::Expected,
) -> anyhow::Result<Start> {
    let spawned = Instant::now();
    let mut server = ServerProcess::start(exe, entry.name, options, cpus)?;
    let request =
        crate::protocol::http1::get_request("/", crate::protocol::http1::Connection::Close);
    let answer = crate::protocol::http1::exchange(server.addr(), &request, TIMEOUT)?;
    let to_first_200_s = spawned.elapsed().as_secs_f64();
    expected.check(&crate::oracle::Observed::from_response(&answer))?;
    let (pids, _) = crate::proc::serving(server.pid());
    let resident = crate::proc::resident(&pids)
        .ok_or_else(|| anyhow!("cannot read the server's /proc/PID/smaps_rollup"))?;
    server.stop();
    Ok(Start {
        to_first_200_s,
        resident,
    })
}

/// One framework's start-ups in figures: what `framebench startup` writes as its results file's
/// detail, and what `framebench footprint` reads back.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Started {
    /// The framework.
    pub(crate) framework: String,
    /// Its starts' summary.
    pub(crate) summary: Summary,
    /// Its time over the reference server's, round by round: the median ratio and its
    /// interval; `None` for the reference itself.
    pub(crate) to_raw: Option<Estimate>,
}

/// The `× raw` cell: `1.18`, `≈` where the ratio's interval holds 1, `–` for the reference.
pub(crate) fn ratio_cell(to_raw: Option<Estimate>) -> String {
    to_raw.map_or("–".to_owned(), |x| {
        if x.separated(1.0) {
            format!("{:.2}", x.point)
        } else {
            "≈".to_owned()
        }
    })
}

/// The results file's figure of `framework`'s start-up: the median time to the first 200 with
/// its interval, in ns.
pub(crate) fn figure(framework: &str, summary: &Summary) -> crate::results::Figure {
    crate::results::Figure::timed(
        "startup",
        framework,
        "hello",
        "to-first-200",
        crate::results::Metric::Time,
        summary.to_first_200.map(|s| s * 1e9),
    )
}

/// How long the first answer may take once the server listens.
const TIMEOUT: Duration = Duration::from_secs(10);

/// A framework's starts in figures: the median time to the first 200 with its interval, and the
/// median RSS and PSS after it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct Summary {
    /// Median seconds to the first 200, with its 95 % interval.
    pub(crate) to_first_200: crate::interval::Estimate,
    /// Median RSS bytes after it.
    pub(crate) rss: f64,
    /// Median PSS bytes after it.
    pub(crate) pss: f64,
}

/// The summary of `starts`; `None` for none.
pub(crate) fn summarize(starts: &[Start]) -> Option<Summary> {
    let times: Vec<f64> = starts.iter().map(|s| s.to_first_200_s).collect();
    let rss: Vec<f64> = starts.iter().map(|s| s.resident.rss as f64).collect();
    let pss: Vec<f64> = starts.iter().map(|s| s.resident.pss as f64).collect();
    Some(Summary {
        to_first_200: crate::interval::median_interval(&times)?,
        rss: crate::interval::median(&rss)?,
        pss: crate::interval::median(&pss)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_is_the_median_of_the_starts() {
        let starts: Vec<Start> = [0.030, 0.010, 0.020]
            .iter()
            .zip([3u64 << 20, 1 << 20, 2 << 20])
            .map(|(&t, rss)| Start {
                to_first_200_s: t,
                resident: Resident { rss, pss: rss / 2 },
            })
            .collect();
        let s = summarize(&starts).unwrap();
        assert_eq!(s.to_first_200.point, 0.020);
        assert_eq!(s.rss, f64::from(2u32 << 20));
        assert_eq!(s.pss, f64::from(1u32 << 20));
        assert!(summarize(&[]).is_none());
    }
}
