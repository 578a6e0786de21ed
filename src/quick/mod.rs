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

pub(crate) use cells::{run, Run, Timed, ROUNDS, SAMPLE};

/// The scenarios the quick compare measures: every one, the seven fixed `GET`s and the four that
/// read a query or a body (issue 42). Taking in the four cost the other columns some of their
/// time: in-process batches of 40 ms rather than 60 (now [`ROUNDS`] interleaved rounds of
/// [`SAMPLE`]) and 6 loopback passes rather than 8 ([`loopback::QUICK_PASSES`]);
/// docs/history/driver.md ("Best of 6 passes") gives the figures.
pub(crate) const QUICK_SCENARIOS: &[crate::oracle::Scenario] = crate::oracle::SCENARIOS;
