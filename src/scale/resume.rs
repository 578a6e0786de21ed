//! `framebench scale --resume FILE`: a sweep that stopped early (Ctrl-C, a time limit on a lent
//! machine: the sweep writes its files on SIGINT) goes on from its results file. The cells it
//! measured are kept as they are; only the others (and any that failed) run, in their places in
//! the same rounds, so
//! the file at the end is the one an unbroken sweep would have written. The file must come from
//! the same build on the same machine with the same sweep, or it is refused in one line (exit 2,
//! as a bad flag is).

use std::path::Path;

use crate::driver::stats::Status;
use crate::error::usage;
use crate::provenance::Window;

use super::summary::Measured;
use super::Sweep;

/// What a stopped sweep leaves to the next: its measured cells and when they ran.
pub(crate) struct Kept {
    pub(crate) cells: Vec<Measured>,
    pub(crate) window: Option<Window>,
}

impl Kept {
    /// Nothing kept: a sweep from the start.
    pub(crate) fn none() -> Self {
        Kept {
            cells: Vec::new(),
            window: None,
        }
    }

    /// The kept cell of `target` × `scenario` at `threads` in `round`, if any.
    pub(crate) fn find(
        &self,
        round: usize,
        threads: usize,
        target: &str,
        variant: &str,
        scenario: &str,
    ) -> Option<&Measured> {
        self.cells.iter().find(|m| {
            m.round == round
                && m.threads == threads
                && m.target == target
                && m.variant == variant
                && m.cell.scenario == scenario
        })
    }
}

/// The cells of `path` that `sweep` keeps: every one that measured (or was not run, by the
/// framework's own limits). Refused when the file is not a sweep, or another build, machine or
/// sweep wrote it.
pub(crate) fn read(path: &Path, sweep: &Sweep) -> anyhow::Result<Kept> {
    let (results, detail) = super::read_written(path)?;
    let name = path.display();
    let here = crate::env::Environment::current();
    let there = &results.environment;
    let differs = [
        ("build", there.git_revision != here.git_revision),
        ("CPU", there.cpu != here.cpu || there.cores != here.cores),
        ("kernel", there.kernel != here.kernel),
    ];
    if let Some((what, _)) = differs.iter().find(|(_, d)| *d) {
        return Err(usage(format!(
            "{name} was measured by another {what} ({} on {} CPUs of {}, Linux {}): a sweep \
             resumes only with the build and on the machine that began it",
            there.git_revision, there.cores, there.cpu, there.kernel
        )));
    }
    let same = detail.threads == sweep.threads
        && detail.connections == sweep.connections
        && detail.rounds == sweep.rounds
        && detail.duration_s == sweep.duration.as_secs_f64()
        && detail.warmup_s == sweep.warmup.as_secs_f64()
        && detail.server_cpus == sweep.sides.server
        && detail.client_cpus == sweep.sides.client;
    if !same {
        return Err(usage(format!(
            "{name} is another sweep (T = {:?}, {} connections, {} rounds, {} s cells after {} \
             s): resume with the flags that began it",
            detail.threads, detail.connections, detail.rounds, detail.duration_s, detail.warmup_s
        )));
    }
    let labels: Vec<String> = sweep.targets.iter().map(|t| t.label()).collect();
    // The targets' order decides each round's rotation: a sweep of other targets would rotate
    // its new cells otherwise than its kept ones. (Files from before `targets` was written
    // name none; their cells are still checked one by one below.)
    if !detail.targets.is_empty() && detail.targets != labels {
        return Err(usage(format!(
            "{name} swept {}: resume with the frameworks and runtimes that began it",
            detail.targets.join(", ")
        )));
    }
    let scenarios: Vec<&str> = sweep.scenarios.iter().map(|s| s.name).collect();
    if let Some(stray) = detail
        .cells
        .iter()
        .find(|m| !labels.contains(&m.target) || !scenarios.contains(&m.cell.scenario.as_str()))
    {
        return Err(usage(format!(
            "{name} holds {} {}, which this sweep does not run: resume with the frameworks and \
             scenarios that began it",
            stray.target, stray.cell.scenario
        )));
    }
    // Each cell as this sweep would load it: the same connections, protocol, streams and
    // pipelining.
    if let Some(other) = detail.cells.iter().find(|m| {
        let c = &m.cell;
        c.connections != sweep.connections
            || c.protocol != sweep.protocol
            || c.streams != sweep.streams
            || c.pipeline != sweep.pipeline
    }) {
        let c = &other.cell;
        return Err(usage(format!(
            "{name} loaded {} with {} connections over {}, {} streams, pipeline {}: resume \
             with the flags that began it",
            other.target, c.connections, c.protocol, c.streams, c.pipeline
        )));
    }
    // A cell that did not measure runs again: Ctrl-C from a terminal reaches the servers too,
    // so the cell it cut short may read as a crash or an error rather than as interrupted.
    let cells = detail
        .cells
        .into_iter()
        .filter(|m| matches!(m.cell.status, Status::Ok | Status::NotRun(_)))
        .collect();
    Ok(Kept {
        cells,
        window: results.provenance.and_then(|p| p.window),
    })
}
