//! The cells `framebench time` interleaves: in-process (one app per framework × variant, each
//! scenario checked against the oracle before it is timed) and over loopback (one server per
//! framework × variant, pinned to the server core, a keep-alive connection per batch that is
//! checked against the oracle as it opens). Then each cell's estimates and its ratio to the
//! floor within each round.

use std::time::Duration;

use crate::bench::client::KeepAlive;
use crate::child::ServerProcess;
use crate::fixtures::Fixtures;
use crate::framework::{App, Config, Entry};
use crate::options::Options;
use crate::oracle::{Instance, Scenario};

use super::{interleave, CellRounds, Rounds, Timer};

/// One cell to time: which, and how.
pub(crate) struct Plan {
    /// The framework.
    pub(crate) entry: &'static Entry,
    /// The scenario.
    pub(crate) scenario: &'static Scenario,
    /// The variant.
    pub(crate) options: Options,
}

impl Plan {
    fn empty(&self) -> CellRounds {
        CellRounds {
            framework: self.entry.name.to_owned(),
            scenario: self.scenario.name.to_owned(),
            variant: self.options.label(),
            batch: 0,
            ns: Vec::new(),
            time: None,
            vs_floor: None,
            error: None,
        }
    }
}

/// The cells of `entries` × `scenarios` × `variants`, in-process or over loopback (a framework
/// without that path has none): a variant applies only where
/// [`crate::bench::in_process_variants`] has it (disk I/O for the routes that read a file), a
/// baseline runs once per scenario (with the first variant), and a scenario a framework cannot
/// serve that way has no cell. Scenario-major, so that a round's cells of one scenario, the
/// floor's among them, run close together.
pub(crate) fn plan(
    entries: &[&'static Entry],
    scenarios: &[&'static Scenario],
    variants: &[Options],
    in_process: bool,
) -> Vec<Plan> {
    let mut plan = Vec::new();
    for scenario in scenarios {
        let has_path = |e: &&&Entry| if in_process { e.in_process } else { e.loopback };
        for entry in entries.iter().filter(has_path) {
            if crate::cell::supported(entry, scenario, in_process).is_err() {
                continue;
            }
            let possible = crate::bench::in_process_variants(entry, scenario);
            for options in variants.iter().filter(|o| {
                entry.baseline && **o == variants[0] || !entry.baseline && possible.contains(o)
            }) {
                plan.push(Plan {
                    entry,
                    scenario,
                    options: *options,
                });
            }
        }
    }
    plan
}

/// An app built for a framework × variant, or why it did not build.
type Built = anyhow::Result<Box<dyn App>>;

/// Times the in-process `plan` in `rounds` interleaved rounds, the floor's cell of each
/// scenario included when it is in the plan.
pub(crate) fn in_process(
    plan: &[Plan],
    config: &Config,
    rounds: usize,
    batch: Duration,
    stop: &dyn Fn() -> bool,
) -> Vec<CellRounds> {
    // One app per framework × variant, shared by its scenarios, as a server would be.
    let mut apps: Vec<(&str, Options, Built)> = Vec::new();
    for p in plan {
        if !apps
            .iter()
            .any(|(n, o, _)| *n == p.entry.name && *o == p.options)
        {
            apps.push((
                p.entry.name,
                p.options,
                p.entry.build(&config.with(p.options)),
            ));
        }
    }
    let app_of = |p: &Plan| {
        apps.iter()
            .find(|(n, o, _)| *n == p.entry.name && *o == p.options)
            .map(|(_, _, a)| a)
            .expect("built above")
    };
    let mut out: Vec<CellRounds> = plan.iter().map(Plan::empty).collect();
    let rings: Vec<Vec<Instance>> = plan
        .iter()
        .map(|p| p.scenario.instances(crate::cell::RING))
        .collect();
    let mut timers: Vec<Timer<'_>> = Vec::new();
    let mut timed: Vec<usize> = Vec::new();
    for (i, p) in plan.iter().enumerate() {
        let app = match app_of(p) {
            Ok(app) => &**app,
            Err(e) => {
                out[i].error = Some(format!("build: {e:#}"));
                continue;
            }
        };
        let with = config.with(p.options);
        if let Err(e) = crate::cell::verify(app, &with.fixtures, p.scenario) {
            out[i].error = Some(e.to_string());
            continue;
        }
        let ring = &rings[i];
        timers.push(Box::new(move |n| crate::bench::timed_batch(app, ring, n)));
        timed.push(i);
    }
    let measured = interleave(&mut timers, rounds, batch, stop);
    drop(timers);
    fill(&mut out, &timed, measured);
    with_floor(&mut out, crate::frameworks::floor().map(|e| e.name));
    out
}

/// Times the loopback `plan` in `rounds` interleaved rounds: every server started first (one
/// thread each, on `server_cpus`), this thread on the client's CPUs. Each batch opens its own
/// connection and closes it (iron's and nickel's pools serve one connection per thread until
/// it closes), checking two answers against the oracle before its clock starts.
pub(crate) fn loopback(
    plan: &[Plan],
    fixtures: &Fixtures,
    rounds: usize,
    batch: Duration,
    server_cpus: &[usize],
    stop: &dyn Fn() -> bool,
) -> anyhow::Result<Vec<CellRounds>> {
    let exe = crate::child::framebench_exe()?;
    let mut servers: Vec<(&str, Options, anyhow::Result<ServerProcess>)> = Vec::new();
    for p in plan {
        if servers
            .iter()
            .any(|(n, o, _)| *n == p.entry.name && *o == p.options)
        {
            continue;
        }
        let options = Options {
            threads: crate::bench::LOOPBACK_THREADS,
            ..p.options
        };
        let server = p
            .entry
            .available()
            .map_err(|why| anyhow::anyhow!("skipped: {why}"))
            .and_then(|()| ServerProcess::start(&exe, p.entry.name, options, server_cpus));
        servers.push((p.entry.name, p.options, server));
    }
    let mut out: Vec<CellRounds> = plan.iter().map(Plan::empty).collect();
    let mut timers: Vec<Timer<'_>> = Vec::new();
    let mut timed = Vec::new();
    for (i, p) in plan.iter().enumerate() {
        let server = servers
            .iter()
            .find(|(n, o, _)| *n == p.entry.name && *o == p.options)
            .map(|(_, _, s)| s)
            .expect("started above");
        let addr = match server {
            Ok(s) => s.addr(),
            Err(e) => {
                out[i].error = Some(format!("server: {e:#}"));
                continue;
            }
        };
        let scenario = p.scenario;
        let name = p.entry.name;
        timers.push(Box::new(move |n| {
            let mut conn = KeepAlive::connect(addr, scenario, fixtures)
                .map_err(|e| e.context(format!("{name}'s server")))?;
            let start = std::time::Instant::now();
            for _ in 0..n {
                conn.round_trip()?;
            }
            Ok(start.elapsed())
        }));
        timed.push(i);
    }
    let measured = interleave(&mut timers, rounds, batch, stop);
    drop(timers);
    fill(&mut out, &timed, measured);
    with_floor(&mut out, crate::frameworks::reference().map(|e| e.name));
    Ok(out)
}

/// Moves the rounds of the timed cells (`timed[k]` is the plan index of `measured[k]`) into
/// `out` with their estimates.
fn fill(out: &mut [CellRounds], timed: &[usize], measured: Vec<anyhow::Result<Rounds>>) {
    for (&i, m) in timed.iter().zip(measured) {
        match m {
            Ok(r) => {
                out[i].batch = r.batch;
                out[i].time = crate::interval::median_interval(&r.ns);
                out[i].ns = r.ns;
            }
            Err(e) => out[i].error = Some(format!("{e:#}")),
        }
    }
}

/// Each cell's ratio to `floor`'s cell of its scenario, round by round.
fn with_floor(out: &mut [CellRounds], floor: Option<&str>) {
    let Some(floor) = floor else { return };
    let floors: Vec<(String, Vec<f64>)> = out
        .iter()
        .filter(|c| c.framework == floor && c.error.is_none())
        .map(|c| (c.scenario.clone(), c.ns.clone()))
        .collect();
    for c in out.iter_mut() {
        if let Some((_, f)) = floors.iter().find(|(s, _)| *s == c.scenario) {
            c.vs_floor = super::ratio(&c.ns, f);
        }
    }
}
