//! One checked in-process cell: the app built for a framework × scenario × options, its
//! response checked against the oracle, and the warm-up the counted benches add. Every mode
//! that measures a cell in-process (criterion, callgrind, `allocs`, `profile`, `deltas`, `ab`,
//! the quick compare) starts here, so "checked before measured" is written once.

use anyhow::Context as _;

use crate::fixtures::Fixtures;
use crate::framework::{App, Config, Entry};
use crate::oracle::{self, Observed, Scenario};

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
) -> anyhow::Result<Prepared> {
    let app = entry.build(config).context("build")?;
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
) -> anyhow::Result<Observed> {
    let observed = crate::check::in_process(app, scenario.path)?;
    check(fixtures, scenario, &observed)?;
    Ok(observed)
}

/// Checks one observed response against the oracle.
pub fn check(
    fixtures: &Fixtures,
    scenario: &'static Scenario,
    observed: &Observed,
) -> anyhow::Result<()> {
    scenario
        .expected(fixtures)?
        .check(observed)
        .map_err(|e| anyhow::anyhow!("{}: {e}", scenario.name))
}

impl Prepared {
    /// The second warm-up request of the counted benches (callgrind, `allocs`): the first,
    /// in [`prepare`], may fill caches the steady state keeps.
    pub(crate) fn warm_up(&self) -> anyhow::Result<()> {
        self.app
            .dispatch(oracle::request(self.path))
            .map(drop)
            .context("warm-up dispatch")
    }
}
