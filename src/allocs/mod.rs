//! Allocations per request: how many times one in-process `dispatch` calls the allocator, how
//! many bytes it asks for, and how often it reallocates, counted by a switchable global
//! allocator ([`gate`]).
//!
//! A cell is prepared as `benches/callgrind.rs` prepares it: the app is built, one request is
//! checked against the oracle ([`crate::cell::prepare`]), a second warm-up request follows,
//! and then each repeat counts exactly one `dispatch`. The request is built before the counted
//! region and the response dropped after it. The counters are process-global, so what
//! tokio's or rocket's worker threads allocate while the region is open is counted too. A cell
//! whose repeats disagree is an error, never averaged ([`Varies`]).
//!
//! Counting needs the binary's global allocator to be [`Global`] (the `framebench` binary's
//! is); [`installed`] says whether it is. `framebench allocs` ([`cli`]) counts a set of cells
//! and writes them as JSON for `framebench report` and the quick compare, which runs it as a
//! child process so that no cell shares a process with the timed runs.

pub(crate) mod gate;
pub mod report;
pub(crate) mod sites;

use std::alloc::{GlobalAlloc, Layout};
use std::fmt;

use serde::{Deserialize, Serialize};
use stats_alloc::Region;

use crate::framework::{Config, Entry};
use crate::options::{Logging, Options};
use crate::oracle::{self, Scenario};

pub(crate) use gate::{Gate, Mode};

/// The gate every counting binary installs through [`Global`].
pub static GATE: Gate = Gate::new();

/// The global allocator of a binary that counts: `#[global_allocator] static GLOBAL:
/// framebench::allocs::Global = framebench::allocs::Global;` ([`GATE`] behind it).
pub struct Global;

// SAFETY: passes every call on to `GATE`, itself a `GlobalAlloc`.
unsafe impl GlobalAlloc for Global {
    #[inline(always)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        GATE.alloc(layout)
    }
    #[inline(always)]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        GATE.alloc_zeroed(layout)
    }
    #[inline(always)]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        GATE.dealloc(ptr, layout)
    }
    #[inline(always)]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        GATE.realloc(ptr, layout, new_size)
    }
}

/// What one counted region did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Calls to `alloc` and `alloc_zeroed`.
    pub allocs: u64,
    /// Calls to `realloc`.
    pub(crate) reallocs: u64,
    /// Calls to `dealloc`.
    pub(crate) deallocs: u64,
    /// Bytes asked for by `alloc`, plus what `realloc` grew by.
    pub bytes_allocated: u64,
    /// Bytes given back by `dealloc`, plus what `realloc` shrank by.
    pub(crate) bytes_deallocated: u64,
}

impl From<stats_alloc::Stats> for Counts {
    fn from(s: stats_alloc::Stats) -> Counts {
        Counts {
            allocs: s.allocations as u64,
            reallocs: s.reallocations as u64,
            deallocs: s.deallocations as u64,
            bytes_allocated: s.bytes_allocated as u64,
            bytes_deallocated: s.bytes_deallocated as u64,
        }
    }
}

impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} allocs, {} reallocs, {} deallocs, {} B allocated, {} B freed",
            self.allocs, self.reallocs, self.deallocs, self.bytes_allocated, self.bytes_deallocated
        )
    }
}

/// Runs `f` with the gate on in `mode` and returns what every thread allocated meanwhile.
fn counted<R>(mode: Mode, f: impl FnOnce() -> R) -> (R, Counts) {
    let region = Region::new(GATE.stats());
    GATE.set(mode);
    let out = std::hint::black_box(f());
    GATE.set(Mode::Off);
    let counts = region.change().into();
    (out, counts)
}

/// Runs `f` and returns what every thread allocated while it ran.
pub fn count<R>(f: impl FnOnce() -> R) -> (R, Counts) {
    counted(Mode::Count, f)
}

/// Whether this binary's global allocator is [`Global`]: a box made while counting is seen.
pub fn installed() -> bool {
    let (b, counts) = count(|| Box::new(std::hint::black_box(1u64)));
    drop(b);
    counts.allocs >= 1
}

/// One cell: a framework × scenario × logging.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Measured {
    /// Framework name.
    pub framework: String,
    /// Scenario name.
    pub scenario: String,
    /// `off` or `sink`.
    pub logging: String,
    /// The counts of one dispatch (every repeat's, all equal), or `None` when the cell failed.
    pub counts: Option<Counts>,
    /// Why the cell failed: the oracle, the build, or repeats that disagree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When the repeats disagreed: each distinct count they saw, in the order first seen. The
    /// cell has no `counts` then (a count that varies is not exact), but a view may still print
    /// a figure every repeat agreed on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub varies: Vec<Counts>,
}

impl Measured {
    /// Allocation calls per dispatch (`alloc`, `realloc`) when every repeat counted the same
    /// ones, even where they disagreed on another count (bytes, say); `None` when the cell
    /// failed for another reason or the calls themselves varied.
    pub(crate) fn calls(&self) -> Option<(u64, u64)> {
        match (&self.counts, self.varies.first()) {
            (Some(c), _) => Some((c.allocs, c.reallocs)),
            (None, Some(first)) => self
                .varies
                .iter()
                .all(|c| (c.allocs, c.reallocs) == (first.allocs, first.reallocs))
                .then_some((first.allocs, first.reallocs)),
            (None, None) => None,
        }
    }
}

/// Repeats of one cell that did not all count the same.
#[derive(Debug)]
pub(crate) struct Varies(pub(crate) Vec<Counts>);

impl fmt::Display for Varies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Each distinct count once, with how many repeats saw it: `allocs 32 ×199, 33 ×1`.
        let seen = |g: fn(&Counts) -> u64| {
            let mut distinct: Vec<(u64, usize)> = Vec::new();
            for v in self.0.iter().map(g) {
                match distinct.iter_mut().find(|(d, _)| *d == v) {
                    Some((_, n)) => *n += 1,
                    None => distinct.push((v, 1)),
                }
            }
            distinct
                .iter()
                .map(|(v, n)| format!("{v} ×{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        write!(
            f,
            "{} repeats disagree: allocs {}; reallocs {}; deallocs {}; bytes {}",
            self.0.len(),
            seen(|c| c.allocs),
            seen(|c| c.reallocs),
            seen(|c| c.deallocs),
            seen(|c| c.bytes_allocated)
        )
    }
}

impl std::error::Error for Varies {}

/// A cell built and warmed up as the callgrind bench does it, ready to count.
pub struct Ready {
    prepared: crate::cell::Prepared,
}

/// Builds `entry` from `config`, checks `scenario` against the oracle and sends the second
/// warm-up request (`benches/callgrind.rs` `prepare`).
pub fn ready(entry: &Entry, config: &Config, scenario: &'static Scenario) -> anyhow::Result<Ready> {
    let prepared = crate::cell::prepare(entry, config, scenario)?;
    prepared.warm_up()?;
    settle();
    Ok(Ready { prepared })
}

/// A window of [`settle`].
const QUIET: std::time::Duration = std::time::Duration::from_millis(10);

/// Waits until a [`QUIET`] window, with no dispatch in it, counts no allocation on any thread
/// (at most 200 windows, 2 s): a thread the app started while it was built allocates once as it
/// starts (std's stack-overflow handler records the thread's info), and rocket's local client
/// starts one whose start could otherwise fall inside the first counted dispatch (seen about
/// once in 200 repeats before this wait). Whatever still allocates in the background after
/// that shows up as repeats that disagree.
fn settle() {
    for _ in 0..200 {
        let ((), counts) = count(|| std::thread::sleep(QUIET));
        if counts == Counts::default() {
            return;
        }
    }
}

impl Ready {
    /// The built app, for a caller that dispatches without counting (the DHAT cross-check,
    /// `benches/allocs_dhat.rs`).
    pub fn app(&self) -> &dyn crate::framework::App {
        &*self.prepared.app
    }

    /// The cell's request, built as every counted one is: always the first of the scenario, so
    /// that repeats count the same work.
    pub fn request(&self) -> crate::framework::Request {
        self.prepared.counted_request()
    }

    /// Counts one dispatch: the request is built before the region, the response dropped
    /// after it.
    pub(crate) fn count_one(&self) -> anyhow::Result<Counts> {
        self.one(Mode::Count)
    }

    fn one(&self, mode: Mode) -> anyhow::Result<Counts> {
        let req = self.request();
        let (res, counts) = counted(mode, || self.prepared.app.dispatch(req));
        drop(res?);
        Ok(counts)
    }

    /// Counts `repeats` dispatches one by one; fails with [`Varies`] unless all agree.
    pub(crate) fn count(&self, repeats: usize) -> anyhow::Result<Counts> {
        anyhow::ensure!(repeats >= 1, "at least one repeat");
        let seen = (0..repeats)
            .map(|_| self.count_one())
            .collect::<anyhow::Result<Vec<_>>>()?;
        if seen.iter().all(|c| *c == seen[0]) {
            Ok(seen[0])
        } else {
            Err(Varies(seen).into())
        }
    }

    /// Records where one dispatch allocates ([`sites`]), with its counts.
    ///
    /// Refused when library backtraces are on (`RUST_LIB_BACKTRACE`, else `RUST_BACKTRACE`,
    /// set and not `0`, the rule of std's `Backtrace::capture` and anyhow): a dispatch that
    /// captured one itself would allocate while holding std's backtrace lock, which recording
    /// takes again. `RUST_LIB_BACKTRACE=0` turns them off and keeps panics' backtraces.
    pub(crate) fn sites(&self) -> anyhow::Result<(Counts, Vec<gate::Recorded>)> {
        let on = |v: std::ffi::OsString| v != "0";
        let lib = std::env::var_os("RUST_LIB_BACKTRACE")
            .or_else(|| std::env::var_os("RUST_BACKTRACE"))
            .is_some_and(on);
        anyhow::ensure!(
            !lib,
            "library backtraces are on (RUST_BACKTRACE or RUST_LIB_BACKTRACE): run with \
             RUST_LIB_BACKTRACE=0 to record allocation sites"
        );
        GATE.take_recorded();
        let counts = self.one(Mode::Sites)?;
        Ok((counts, GATE.take_recorded()))
    }
}

/// Counts one cell, `repeats` times, into a [`Measured`] (failures included, with why).
pub fn measure(
    entry: &Entry,
    base: &Config,
    scenario: &'static Scenario,
    logging: Logging,
    repeats: usize,
) -> Measured {
    let config = base.with(Options {
        logging,
        ..Options::default()
    });
    let result = ready(entry, &config, scenario).and_then(|r| r.count(repeats));
    let mut varies = Vec::new();
    if let Some(Varies(seen)) = result.as_ref().err().and_then(|e| e.downcast_ref()) {
        for c in seen {
            if !varies.contains(c) {
                varies.push(*c);
            }
        }
    }
    Measured {
        framework: entry.name.to_owned(),
        scenario: scenario.name.to_owned(),
        logging: logging.to_string(),
        counts: result.as_ref().ok().copied(),
        error: result.err().map(|e| format!("{e:#}")),
        varies,
    }
}

/// The scenarios counted: every scenario of the oracle that runs without Redis and has an
/// in-process cell (not `upload_chunked`, which exists only on the wire).
pub fn scenarios() -> impl Iterator<Item = &'static Scenario> {
    oracle::SCENARIOS
        .iter()
        .filter(|s| !s.needs_redis() && !s.wire_only())
}
