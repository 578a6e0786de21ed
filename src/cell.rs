//! One checked in-process cell: the app built for a framework × scenario × options, its
//! response checked against the oracle, and the warm-up the counted benches add. Every mode
//! that measures a cell in-process (criterion, callgrind, `allocs`, `profile`, `deltas`, `ab`,
//! the quick compare) starts here, so "checked before measured" is written once.

use std::fmt;

use crate::fixtures::Fixtures;
use crate::framework::{App, Config, Entry};
use crate::oracle::{self, Observed, Scenario};

/// Why a cell was not measured: the one error a cell ends with, whichever mode measures it
/// (`check`'s rows, the quick compare's cells, the benches, `allocs`, `profile`). Each kind
/// carries its whole message, causes included, on one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CellError {
    /// It cannot run here (a missing tool or service); why, and how to get it.
    Skipped(String),
    /// The app did not build.
    Build(String),
    /// The answer differed from the oracle.
    Mismatch(String),
    /// A request could not be made or read, or a fixture not loaded.
    Io(String),
}

impl CellError {
    /// The app did not build: `e` with its causes.
    pub(crate) fn build(e: &anyhow::Error) -> CellError {
        CellError::Build(format!("{e:#}"))
    }

    /// A request or a fixture failed: `e` with its causes.
    pub(crate) fn io(e: &anyhow::Error) -> CellError {
        CellError::Io(format!("{e:#}"))
    }
}

impl fmt::Display for CellError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CellError::Skipped(why) => write!(f, "skipped: {why}"),
            CellError::Build(why) => write!(f, "build: {why}"),
            CellError::Mismatch(why) | CellError::Io(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for CellError {}

/// An app built for one cell, whose response was checked against the oracle.
pub struct Prepared {
    /// The built app.
    pub app: Box<dyn App>,
    /// The scenario's request path.
    pub path: &'static str,
    /// Length of the checked response body.
    pub body_len: usize,
}

/// Builds `entry` from `config`, dispatches the scenario once in-process and checks the answer.
pub fn prepare(
    entry: &Entry,
    config: &Config,
    scenario: &'static Scenario,
) -> Result<Prepared, CellError> {
    let app = entry.build(config).map_err(|e| CellError::build(&e))?;
    let observed = verify(&*app, &config.fixtures, scenario)?;
    Ok(Prepared {
        app,
        path: scenario.path,
        body_len: observed.body.len(),
    })
}

/// Dispatches `scenario` once on `app` and checks the answer against the oracle.
pub(crate) fn verify(
    app: &dyn App,
    fixtures: &Fixtures,
    scenario: &'static Scenario,
) -> Result<Observed, CellError> {
    let response = app
        .dispatch(oracle::request(scenario.path))
        .map_err(|e| CellError::io(&e))?;
    let observed = Observed::from_response(&response);
    check(fixtures, scenario, &observed)?;
    Ok(observed)
}

/// Checks one observed response against the oracle.
pub fn check(
    fixtures: &Fixtures,
    scenario: &'static Scenario,
    observed: &Observed,
) -> Result<(), CellError> {
    scenario
        .expected(fixtures)
        .map_err(|e| CellError::io(&e))?
        .check(observed)
        .map_err(|e| CellError::Mismatch(format!("{}: {e}", scenario.name)))
}

impl Prepared {
    /// The second warm-up request of the counted benches (callgrind, `allocs`): the first,
    /// in [`prepare`], may fill caches the steady state keeps.
    pub(crate) fn warm_up(&self) -> Result<(), CellError> {
        self.app
            .dispatch(oracle::request(self.path))
            .map(drop)
            .map_err(|e| CellError::io(&e.context("warm-up dispatch")))
    }
}
