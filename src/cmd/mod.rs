//! One home per command, as cargo keeps them (`src/bin/cargo/commands/`): `cmd/<name>.rs` holds
//! a subcommand's clap arguments and its `run`, which checks the arguments, calls the topic's
//! module (`driver/`, `report/`, `quick/`…) to measure, and prints. `main.rs` is the enum and
//! the dispatch. Every `run` returns `anyhow::Result`; `main` is the one error boundary
//! (src/error.rs).

pub mod ab;
pub mod ab_worker;
pub mod allocs;
pub(crate) mod args;
pub mod callgrind_cell;
pub mod check;
pub mod child;
pub mod compare;
pub mod deltas;
pub mod diff;
pub mod footprint;
pub mod list;
pub mod load;
pub mod memory;
pub mod merge;
pub mod profile;
pub mod quick;
pub mod quick_cell;
pub mod report;
pub mod scale;
pub mod serve;
pub mod startup;
pub mod time;

use anyhow::Context as _;
use std::process::ExitCode;

use crate::frameworks::REGISTRY;

/// A measuring command's exit: success when no cell failed, else one error that counts the
/// failed cells of `total` and names each (`not` says what they missed: `counted`, `timed`).
pub(crate) fn cells_failed(failed: &[String], total: usize, not: &str) -> anyhow::Result<ExitCode> {
    if failed.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    Err(anyhow::anyhow!(
        "{} of {total} cells not {not}: {}",
        failed.len(),
        failed.join("; ")
    ))
}

/// Checks `FRAMEBENCH_REQUIRE`: a framework that needs a required tool must also be ready (the
/// Go peers must build).
pub fn prepare_tools() -> anyhow::Result<()> {
    crate::tools::check_required()?;
    for entry in REGISTRY {
        if let Some(tool) = entry.tool.filter(|t| t.required()) {
            entry
                .available()
                .with_context(|| format!("FRAMEBENCH_REQUIRE requires {}", tool.name()))?;
        }
    }
    Ok(())
}
