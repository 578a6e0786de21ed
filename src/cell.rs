//! One checked in-process cell: the app built for a framework × scenario × options, its
//! response checked against the oracle, and the warm-up the counted benches add. Every mode
//! that measures a cell in-process (criterion, callgrind, `allocs`, `profile`, `deltas`, `ab`,
//! the quick compare) starts here, so "checked before measured" is written once.

use anyhow::Context as _;

use crate::fixtures::Fixtures;
use crate::framework::{App, Config, Entry};
use crate::oracle::{Instance, Observed, Scenario};
use crate::outcome::{NotOk, Outcome};

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
pub fn prepare(entry: &Entry, config: &Config, scenario: &'static Scenario) -> Outcome<Prepared> {
    supported(entry, scenario, true)?;
    let app = entry.build(config).context("build")?;
    let observed = verify(&*app, &config.fixtures, scenario)?;
    Ok(Prepared {
        app,
        scenario,
        instances: scenario.instances(RING),
        body_len: observed.body.len(),
    })
}

/// Whether `entry` serves `scenario` through its own API, and in-process when `in_process`
/// (a wire-only or loopback-only scenario has no in-process cell): unsupported, with why, if
/// not.
pub fn supported(entry: &Entry, scenario: &Scenario, in_process: bool) -> Outcome {
    if in_process && scenario.loopback_only() {
        return Err(NotOk::unsupported(scenario.loopback_reason()));
    }
    if let Some(why) = entry.cannot(scenario.name) {
        return Err(NotOk::unsupported(why));
    }
    if in_process && scenario.wire_only() {
        return Err(NotOk::unsupported(
            "a chunked body exists only on the wire; in-process it is `upload`",
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
) -> Outcome<Observed> {
    let mut first = None;
    for instance in scenario.instances(VERIFIED) {
        let response = app.dispatch(instance.request())?;
        let observed = Observed::from_response(&response);
        check(fixtures, scenario, &instance, &observed)?;
        first.get_or_insert(observed);
    }
    Ok(first.expect("every scenario has a request"))
}

/// Checks one observed response to `instance` against the oracle; a mismatch names the
/// scenario.
pub fn check(
    fixtures: &Fixtures,
    scenario: &'static Scenario,
    instance: &Instance,
    observed: &Observed,
) -> Outcome {
    Ok(scenario
        .expected(fixtures)?
        .check_instance(instance, observed)
        .context(scenario.name)?)
}

impl Prepared {
    /// The request the counted benches send (callgrind, `allocs`): always the first, so that
    /// every repeat counts the same work.
    pub(crate) fn counted_request(&self) -> crate::framework::Request {
        self.instances[0].request()
    }

    /// The second warm-up request of the counted benches (callgrind, `allocs`): the first,
    /// in [`prepare`], may fill caches the steady state keeps.
    pub(crate) fn warm_up(&self) -> Outcome {
        self.app
            .dispatch(self.counted_request())
            .context("warm-up dispatch")?;
        Ok(())
    }
}
