//! The quick comparison `framebench` prints with no arguments: in-process time per request for
//! every framework × scenario, each response checked against the oracle before it is timed,
//! beside a short loopback load of the same cell by the driver ([`crate::driver`]), and the
//! allocations of one dispatch, counted by `framebench allocs` in a child process
//! ([`crate::allocs::report::spawn`]) so that counting never shares a process with the timing.
//!
//! Its cells and its views: [`cells`] times the in-process cells and holds [`Run`], everything
//! one quick compare measured; [`loopback`] runs the loopback cells and [`hello`] the hello
//! cells past saturation; [`claims`] says what the first screen may claim from the data (a
//! column's best, a noisy host); [`views`] prints and writes what was measured.
//! `crate::cmd::quick` orchestrates it within its time budget.

mod cells;
mod claims;
#[cfg(test)]
mod fixture;
mod hello;
pub(crate) mod loopback;
mod passes;
mod views;

pub(crate) use cells::{run, time_per_request, Run, SAMPLE};

/// The scenarios the quick compare measures: the fixed ones. The query and body scenarios
/// (issue 42) join it with their frameworks' routes, and with the trade its time budget needs
/// then (a second block of the compact view, fewer passes per body cell); until then `framebench
/// check`, `load` and the benches measure them.
pub(crate) const QUICK_SCENARIOS: &[crate::oracle::Scenario] = crate::oracle::FIXED_SCENARIOS;
