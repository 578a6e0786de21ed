//! One checked in-process cell: the app built for a framework × scenario × options, its
//! response checked against the oracle, and the warm-up the counted benches add. Every mode
//! that measures a cell in-process (criterion, callgrind, `allocs`, `profile`, `deltas`, `ab`,
//! the quick compare) starts here, so "checked before measured" is written once.

use std::fmt;

use crate::fixtures::Fixtures;
use crate::framework::{App, Config, Entry};
use crate::oracle::{Instance, Observed, Scenario};

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
    /// The framework cannot serve the scenario through its own API
    /// ([`crate::framework::Framework::CANNOT`]), or the mode has no such cell (`upload_chunked`
    /// in-process); why. Shown as `–`, never as a failure.
    Unsupported(String),
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
            CellError::Unsupported(why) => write!(f, "– ({why})"),
            CellError::Mismatch(why) | CellError::Io(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for CellError {}

/// How many distinct requests an in-process cell cycles through ([`Prepared::instances`]): one
/// for a fixed scenario, this many for a query or body scenario, so that a handler that caches
/// its answer fails and the timed loop still builds nothing new per request.
pub const RING: usize = 64;

/// How many of a computed scenario's requests [`verify`] checks before anything is timed.
const VERIFIED: usize = 3;

/// An app built for one cell, whose response was checked against the oracle.
pub struct Prepared {
    /// The built app.
    pub app: Box<dyn App>,
    /// The scenario.
    pub scenario: &'static Scenario,
    /// The requests the cell sends, in turn ([`RING`]); the counted benches send the first
    /// only, so that their counts repeat exactly.
    pub instances: Vec<Instance>,
    /// Length of the checked response body.
    pub body_len: usize,
}

/// Builds `entry` from `config`, dispatches the scenario in-process and checks the answers.
pub fn prepare(
    entry: &Entry,
    config: &Config,
    scenario: &'static Scenario,
) -> Result<Prepared, CellError> {
    supported(entry, scenario, true)?;
    let app = entry.build(config).map_err(|e| CellError::build(&e))?;
    let observed = verify(&*app, &config.fixtures, scenario)?;
    Ok(Prepared {
        app,
        scenario,
        instances: scenario.instances(RING),
        body_len: observed.body.len(),
    })
}

/// Whether `entry` serves `scenario` through its own API, and in-process when `in_process`
/// (a wire-only scenario has no in-process cell): [`CellError::Unsupported`] with why if not.
pub fn supported(entry: &Entry, scenario: &Scenario, in_process: bool) -> Result<(), CellError> {
    if let Some(why) = entry.cannot(scenario.name) {
        return Err(CellError::Unsupported(why.to_owned()));
    }
    if in_process && scenario.wire_only() {
        return Err(CellError::Unsupported(
            "a chunked body exists only on the wire; in-process it is `upload`".to_owned(),
        ));
    }
    Ok(())
}

/// Dispatches `scenario` on `app` and checks the answers against the oracle: its one request,
/// or the first few of a computed scenario, which differ. Returns the first answer.
pub(crate) fn verify(
    app: &dyn App,
    fixtures: &Fixtures,
    scenario: &'static Scenario,
) -> Result<Observed, CellError> {
    let mut first = None;
    for instance in scenario.instances(VERIFIED) {
        let response = app
            .dispatch(instance.request())
            .map_err(|e| CellError::io(&e))?;
        let observed = Observed::from_response(&response);
        check(fixtures, scenario, &instance, &observed)?;
        first.get_or_insert(observed);
    }
    Ok(first.expect("every scenario has a request"))
}

/// Checks one observed response to `instance` against the oracle.
pub fn check(
    fixtures: &Fixtures,
    scenario: &'static Scenario,
    instance: &Instance,
    observed: &Observed,
) -> Result<(), CellError> {
    scenario
        .expected(fixtures)
        .map_err(|e| CellError::io(&e))?
        .check_instance(instance, observed)
        .map_err(|e| CellError::Mismatch(format!("{}: {e}", scenario.name)))
}

impl Prepared {
    /// The request the counted benches send (callgrind, `allocs`): always the first, so that
    /// every repeat counts the same work.
    pub(crate) fn counted_request(&self) -> crate::framework::Request {
        self.instances[0].request()
    }

    /// The second warm-up request of the counted benches (callgrind, `allocs`): the first,
    /// in [`prepare`], may fill caches the steady state keeps.
    pub(crate) fn warm_up(&self) -> Result<(), CellError> {
        self.app
            .dispatch(self.counted_request())
            .map(drop)
            .map_err(|e| CellError::io(&e.context("warm-up dispatch")))
    }
}
