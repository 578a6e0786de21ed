//! `framebench profile --flamegraph FILE.svg`: the hot loop of [`super::profile`] sampled from
//! inside the process with pprof-rs, drawn as a flamegraph by inferno. No perf, no kernel
//! settings: it works in a container or on CI (docs/methodology/callgrind.md, "Flamegraphs").
//!
//! The sampler is SIGPROF on the process's CPU-time timer, so it lands on whichever thread is
//! using the CPU: over loopback the server's threads and the client's alike. It starts after the
//! cell is built, checked and (over loopback) connected, and stops when the loop ends, so the
//! graph holds the loop and nothing of the set-up.

use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;

use super::profile::{HotLoop, Summary};

/// Samples asked per second of CPU time: a prime, so that the timer does not beat with a loop
/// of a round period. The kernel's CPU-time timer fires at most once per scheduler tick, so
/// the rate a run gets is lower where the tick is (`CONFIG_HZ=250`: about 236 per second
/// in-process on the README's machine); the command prints what it got.
pub(crate) const FREQUENCY: i32 = 997;

/// What a sampled run wrote.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Written {
    /// The loop's own summary, as without the sampler.
    pub(crate) summary: Summary,
    /// Samples drawn (one per tick that landed in a thread).
    pub(crate) samples: u64,
}

/// Runs `hot` for `seconds` under the sampler, writes the flamegraph to `out` with `title`, and
/// finishes the loop.
pub(crate) fn write(
    hot: HotLoop,
    seconds: Duration,
    out: &Path,
    title: &str,
) -> anyhow::Result<Written> {
    // Made before the loop, so that a path that cannot be written fails at once; removed again
    // if no graph is written into it.
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let file = std::fs::File::create(out).with_context(|| format!("writing {}", out.display()))?;
    let written = sample(hot, seconds, file, title);
    if written.is_err() {
        let _ = std::fs::remove_file(out);
    }
    written.with_context(|| format!("writing {}", out.display()))
}

/// [`write`] once `file` is open.
fn sample(
    mut hot: HotLoop,
    seconds: Duration,
    mut file: std::fs::File,
    title: &str,
) -> anyhow::Result<Written> {
    // Blocked: ticks that land in libgcc's unwinder (pprof-rs unwinds with it, which is not
    // safe when the tick interrupts an unwind already running; the hot loop never panics, so
    // this loses nothing) and in the vDSO (whose unwind tables some kernels get wrong). libc is
    // sampled, unlike pprof's README example: malloc, free and memcpy are part of a request.
    let guard = pprof::ProfilerGuardBuilder::default()
        .frequency(FREQUENCY)
        .blocklist(&["libgcc", "vdso"])
        .build()
        .context("starting the sampler")?;
    let summary = hot.run(seconds);
    let report = guard.report().build().context("resolving the samples");
    drop(guard);
    hot.finish()?;
    let (summary, report) = (summary?, report?);
    let samples: u64 = report.data.values().map(|&n| n.max(0) as u64).sum();
    anyhow::ensure!(
        samples > 0,
        "no samples were taken in {} s",
        seconds.as_secs()
    );
    let mut options = pprof::flamegraph::Options::default();
    options.title = title.to_owned();
    options.count_name = "samples".into();
    let mut svg = Vec::new();
    report
        .flamegraph_with_options(&mut svg, &mut options)
        .context("drawing the flamegraph")?;
    std::io::Write::write_all(&mut file, &svg)?;
    Ok(Written { summary, samples })
}
