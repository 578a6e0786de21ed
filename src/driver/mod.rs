//! The load driver: `framebench load`, `framebench compare` and the loopback column of the
//! quick compare.
//!
//! A cell is one target × scenario × connection count. For a framework, each cell starts a fresh
//! `framebench serve` child pinned to the server CPUs ([`crate::child`], [`crate::pinning`]),
//! checks the scenario once against the oracle with the cell's pipelining depth
//! ([`crate::check::precheck`]), then runs the client ([`client`]) pinned to the client CPUs,
//! samples responses against the oracle during the load, and reads the server's CPU and peak
//! RSS from /proc ([`proc`]). Results carry their environment ([`output`]) and can be drawn
//! ([`plot`]).

pub mod cli;
pub mod client;
pub mod output;
pub mod plot;
pub mod proc;
pub mod stats;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::check::precheck;
use crate::child::{framebench_exe, ServerProcess};
use crate::fixtures::Fixtures;
use crate::framework::Entry;
use crate::http1::{self, Connection};
use crate::options::Options;
use crate::oracle::{Observed, Scenario};
use crate::pinning::Pinning;

use stats::{CellResult, Latency, Merged, PerConnection, Status};

/// What is loaded.
#[derive(Clone)]
pub enum Target {
    /// A registry framework, served by a child process with these options.
    Framework(&'static Entry, Options),
    /// A server already running on a loopback address.
    Url(SocketAddr),
}

impl Target {
    fn name(&self) -> String {
        match self {
            Target::Framework(e, _) => e.name.to_owned(),
            Target::Url(a) => format!("http://{a}"),
        }
    }
}

/// How each cell is loaded.
#[derive(Debug, Clone, Serialize)]
pub struct LoadParams {
    /// Recorded time per cell.
    #[serde(serialize_with = "secs")]
    pub duration: Duration,
    /// Unrecorded time before it.
    #[serde(serialize_with = "secs")]
    pub warmup: Duration,
    /// Request timeout.
    #[serde(serialize_with = "secs")]
    pub timeout: Duration,
    /// Pipelining depth.
    pub pipeline: usize,
    /// Total requests per second (open loop).
    pub rate: Option<f64>,
    /// Count-bounded mode: exactly this many requests per cell.
    pub requests: Option<u64>,
    /// One response in this many per connection is checked whole.
    pub sample_every: u64,
    /// Pinning and client threads.
    pub pinning: Pinning,
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

impl LoadParams {
    /// Upper bound on the time one cell takes, startup excluded.
    pub fn cell_bound(&self) -> Duration {
        self.warmup + self.duration + self.timeout
    }
}

/// The Ctrl-C flag, shared with the builds: SIGINT sets it and every loop checks it.
pub use crate::tools::interrupted;

/// Runs one cell. `progress` is called every 100 ms with the elapsed time of the cell.
pub fn run_cell(
    target: &Target,
    scenario: &'static Scenario,
    fixtures: &Fixtures,
    connections: usize,
    params: &LoadParams,
    progress: &mut dyn FnMut(Duration),
) -> CellResult {
    let (version, variant, threads) = match target {
        Target::Framework(e, o) => (format!("{} {}", e.krate, e.version()), o.label(), o.threads),
        Target::Url(_) => ("-".to_owned(), String::new(), 0),
    };
    let mut cell = CellResult {
        target: target.name(),
        version,
        scenario: scenario.name.to_owned(),
        variant,
        server_threads: threads,
        connections,
        pipeline: params.pipeline,
        rate: params.rate,
        status: Status::Ok,
        seconds: 0.0,
        requests: 0,
        rps: 0.0,
        bytes_per_sec: 0.0,
        latency: Latency::default(),
        non_2xx: 0,
        socket_errors: 0,
        timeouts: 0,
        first_error: None,
        sampled: 0,
        per_connection: PerConnection::default(),
        server_cpu_pct: None,
        server_peak_rss: None,
        client_cpu_pct: None,
    };
    let stop = interrupted();
    if stop.load(Ordering::Relaxed) {
        cell.status = Status::Interrupted;
        return cell;
    }
    // A framework this machine cannot serve (the Go peers without `go`, or whose build
    // failed) is skipped; `available` said why, once, and built the Go peers before any
    // server start-up timeout runs.
    if let Target::Framework(e, _) = target {
        if let Err(why) = e.available() {
            cell.status = Status::Skipped(why);
            return cell;
        }
    }
    let expected = match scenario.expected(fixtures) {
        Ok(e) => e,
        Err(e) => {
            cell.status = Status::Error(format!("{e:#}"));
            return cell;
        }
    };
    let mut server = None;
    let addr = match target {
        Target::Url(a) => *a,
        Target::Framework(e, o) => {
            match framebench_exe()
                .and_then(|exe| ServerProcess::start(&exe, e.name, *o, &params.pinning.server_cpus))
            {
                Ok(s) => {
                    let a = s.addr();
                    server = Some(s);
                    a
                }
                Err(e) => {
                    cell.status = Status::Error(format!("{e:#}"));
                    return cell;
                }
            }
        }
    };
    if let Err(e) = precheck(
        addr,
        &expected,
        params.pipeline,
        params.timeout.max(Duration::from_secs(2)),
    ) {
        cell.status = match server.as_mut().and_then(|s| s.exited()) {
            Some(how) => Status::Crashed(format!(
                "{how} during the oracle check; {}",
                server.as_ref().map(|s| s.stderr_text()).unwrap_or_default()
            )),
            None => Status::Failing(format!("oracle check before load: {e}")),
        };
        return cell;
    }
    let sampler_expected = expected.clone();
    let sampler: client::Sampler =
        Arc::new(
            move |bytes: &[u8]| match http1::parse_response(bytes, false) {
                Ok(Some((res, _))) => sampler_expected.check(&Observed::from_response(&res)),
                Ok(None) => Err("incomplete response".into()),
                Err(e) => Err(format!("{e:#}")),
            },
        );
    let spec = client::ClientSpec {
        addr,
        request: http1::get_request(scenario.path, Connection::KeepAlive),
        connections,
        threads: params.pinning.client_threads,
        pipeline: params.pipeline,
        rate: params.rate,
        warmup: if params.requests.is_some() {
            Duration::ZERO
        } else {
            params.warmup
        },
        duration: params.duration,
        timeout: params.timeout,
        max_requests: params.requests,
        sample_every: params.sample_every,
        cpus: params.pinning.client_cpus.clone(),
    };
    // The client threads stop on Ctrl-C or when this cell's server dies.
    let cell_stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let record_from = start + spec.warmup;
    let handle = {
        let spec = spec.clone();
        let cell_stop = Arc::clone(&cell_stop);
        std::thread::spawn(move || client::run(&spec, sampler, &cell_stop))
    };
    let me = std::process::id();
    let mut meters = None;
    let mut crashed = None;
    while !handle.is_finished() {
        std::thread::sleep(Duration::from_millis(20));
        let now = Instant::now();
        if meters.is_none() && now >= record_from {
            meters = Some((
                server.as_ref().map(|s| proc::CpuMeter::start_tree(s.pid())),
                proc::CpuMeter::start(me),
            ));
        }
        if note_crash(server.as_mut(), &mut crashed) {
            cell_stop.store(true, Ordering::Relaxed);
        }
        if stop.load(Ordering::Relaxed) {
            cell_stop.store(true, Ordering::Relaxed);
        }
        progress(now - start);
    }
    let recorded = record_from.elapsed().as_secs_f64();
    if let Some((server_meter, client_meter)) = &meters {
        cell.server_cpu_pct = server_meter.as_ref().and_then(|m| m.percent());
        cell.client_cpu_pct = client_meter.percent();
    }
    cell.server_peak_rss = server.as_ref().and_then(|s| proc::peak_rss(s.pid()));
    let results = handle.join().unwrap_or_default();
    note_crash(server.as_mut(), &mut crashed);
    if let Some(s) = server.as_mut() {
        s.stop();
    }
    let m = Merged::from_threads(results);
    let seconds = if params.requests.is_some() {
        recorded
    } else {
        recorded.min(params.duration.as_secs_f64())
    };
    cell.seconds = seconds;
    cell.requests = m.hist.len();
    cell.rps = cell.requests as f64 / seconds.max(1e-9);
    cell.bytes_per_sec = m.bytes as f64 / seconds.max(1e-9);
    cell.latency = Latency::from_hist(&m.hist);
    cell.non_2xx = m.non_2xx;
    cell.socket_errors = m.socket_errors;
    cell.timeouts = m.timeouts;
    cell.first_error = m.first_error;
    cell.sampled = m.sampled;
    cell.per_connection = PerConnection::from_counts(&m.per_conn);
    cell.status = if let Some(c) = crashed {
        Status::Crashed(c)
    } else if let Some(e) = m.first_mismatch {
        Status::Failing(format!(
            "{} of {} sampled responses differ from the oracle: {e}",
            m.mismatches, m.sampled
        ))
    } else if stop.load(Ordering::Relaxed) {
        Status::Interrupted
    } else {
        Status::Ok
    };
    cell
}

/// A sweep: targets × scenarios × connection counts.
pub struct Plan {
    /// What is loaded.
    pub targets: Vec<Target>,
    /// Scenarios.
    pub scenarios: Vec<&'static Scenario>,
    /// Connection counts.
    pub connections: Vec<usize>,
    /// How.
    pub params: LoadParams,
}

impl Plan {
    /// Number of cells.
    pub fn cells(&self) -> usize {
        self.targets.len() * self.scenarios.len() * self.connections.len()
    }
}

/// Records the first exit of the server as a crash, with the end of its stderr. Returns true
/// when this call found it.
fn note_crash(server: Option<&mut ServerProcess>, crashed: &mut Option<String>) -> bool {
    let Some(s) = server else { return false };
    if crashed.is_some() {
        return false;
    }
    match s.exited() {
        Some(how) => {
            *crashed = Some(format!(
                "server exited mid-run ({how}); {}",
                s.stderr_text()
            ));
            true
        }
        None => false,
    }
}

/// Runs every cell of `plan` with a progress bar on stderr (hidden when it is not a
/// terminal). Stops early on Ctrl-C.
pub fn run_plan(plan: &Plan, fixtures: &Fixtures, quiet: bool) -> Vec<CellResult> {
    let per_cell = plan.params.warmup + plan.params.duration;
    let total_ms = (per_cell.as_millis() as u64).max(1) * plan.cells() as u64;
    let bar = if quiet {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new(total_ms)
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {percent:>3}% ~{eta} left  {msg}")
            .expect("valid template"),
    );
    // Build what the targets need (the Go peers) now, before the first cell starts a server.
    for target in &plan.targets {
        if let Target::Framework(e, _) = target {
            let _ = e.available();
        }
    }
    let mut out = Vec::new();
    let mut done_ms = 0u64;
    let n = plan.cells();
    for target in &plan.targets {
        for &scenario in &plan.scenarios {
            for &c in &plan.connections {
                if interrupted().load(Ordering::Relaxed) {
                    bar.abandon_with_message("interrupted");
                    return out;
                }
                bar.set_message(format!(
                    "cell {}/{n}: {} {} c={c}",
                    out.len() + 1,
                    target.name(),
                    scenario.name
                ));
                let base = done_ms;
                let cell = run_cell(target, scenario, fixtures, c, &plan.params, &mut |t| {
                    bar.set_position(
                        base + (t.as_millis() as u64).min(per_cell.as_millis() as u64),
                    );
                });
                done_ms += per_cell.as_millis() as u64;
                bar.set_position(done_ms);
                out.push(cell);
            }
        }
    }
    bar.finish_and_clear();
    out
}
