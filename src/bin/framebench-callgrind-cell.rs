//! The process `framebench profile --callgrind` runs under valgrind: one in-process cell,
//! counted as benches/callgrind.rs counts it (`framebench::bench::callgrind::worker`).
//!
//! A binary of its own, not a hidden command of `framebench`, for its allocator: this one has
//! the default, as the callgrind bench has. The shims of `framebench`'s switchable allocator
//! (src/allocs/gate.rs) took 143 more instructions of axum hello (7,579 against the bench's
//! 7,436, +1.9 %) and put axum − hyper 2.4 % above the bench's (docs/methodology/callgrind.md).

use std::process::ExitCode;

use clap::Parser as _;

use framebench::cmd::callgrind_cell::{run as callgrind_cell, CallgrindCellArgs};
use framebench::error::CliError;

fn main() -> ExitCode {
    // The one error boundary (src/error.rs).
    callgrind_cell(CallgrindCellArgs::parse()).unwrap_or_else(|e| CliError::from(e).exit())
}
