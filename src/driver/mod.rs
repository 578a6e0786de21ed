//! The load driver: `framebench load`, `framebench compare` and the loopback column of the
//! quick compare.
//!
//! A cell is one target × scenario × connection count. For a framework, each cell starts a fresh
//! (or, in the quick compare, reuses its framework's) `framebench serve` child pinned to the
//! server CPUs ([`crate::child`], [`crate::pinning`]), checks the scenario once against the
//! oracle with the cell's pipelining depth ([`crate::options::Protocol::precheck`]), then runs the client
//! ([`client`]) pinned to the client CPUs, samples responses against the oracle during the
//! load, and reads the server's CPU and peak RSS from /proc ([`proc`]). Results carry their
//! environment ([`output`]) and can be drawn ([`plot`]). Before a run, [`make_room`] raises the
//! open-file limit for its connections.

mod cell;
pub(crate) mod client;
pub(crate) mod hdrlog;
pub(crate) mod intervals;
pub(crate) mod merge;
pub(crate) mod output;
mod params;
mod plan;
pub(crate) mod rounds;
pub(crate) mod stats;
pub(crate) mod threads;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::child::{framebench_exe, ServerProcess};
use crate::fixtures::Fixtures;
use crate::framework::Entry;
use crate::interrupt::interrupted;
use crate::options::{Options, Protocol, Transport};
use crate::oracle::{Expected, Instance, Observed, Scenario};
use crate::outcome::NotRun;
use crate::proc;

pub(crate) use params::{LoadParams, Shard};
pub(crate) use plan::{cell_progress, progress_bar, run_plan, run_plan_on, Plan};
use stats::{CellResult, Status};

/// What is loaded.
#[derive(Clone)]
pub(crate) enum Target {
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

/// Runs one cell on the server in `kept` if there is one (and it is alive), else on a new one,
/// which is left in `kept` for the next cell unless this cell crashed it: the caller stops it
/// by dropping it (pass `&mut None` for a fresh server). `progress` is called every 20 ms or
/// less with the elapsed time of the cell. The server is checked against the oracle before it
/// is loaded; one that failed the check is stopped.
pub(crate) fn run_cell(
    target: &Target,
    scenario: &'static Scenario,
    fixtures: &Fixtures,
    connections: usize,
    params: &LoadParams,
    progress: &mut dyn FnMut(Duration),
    kept: &mut Option<ServerProcess>,
) -> CellResult {
    let mut cell = CellResult::empty(target, scenario, connections, params);
    // `Err` is the status of a cell that never ran its load.
    let mut load = || -> Result<Run, Status> {
        refuse(target, scenario, params.protocol)?;
        let expected = scenario.expected(fixtures)?;
        let alive = kept.as_mut().is_some_and(|s| s.exited().is_none());
        let (addr, mut server) = match kept.take() {
            Some(s) if alive => (s.addr(), Some(s)),
            _ => start(target, params)?,
        };
        let instances: Arc<[Instance]> = scenario
            .instances_sized(
                crate::cell::RING,
                scenario.sized(params.body_size, params.message_size),
            )
            .into();
        check_first(addr, &expected, &instances, params, server.as_mut())?;
        let spec = client_spec(addr, &instances, connections, params)?;
        let start_at = params
            .start_at
            .map(|s| std::time::UNIX_EPOCH + Duration::from_secs_f64(s));
        let warmup = spec.warmup;
        let client: Client = if params.protocol.multiplexed() {
            let (streams, sampler) = (params.streams, h2_sampler(expected, &instances));
            Box::new(move |stop| client::streams::run(&spec, instances, streams, sampler, stop))
        } else {
            let sampler = sampler(params.protocol, expected, instances);
            Box::new(move |stop| client::run(&spec, sampler, stop))
        };
        let run = drive(
            warmup,
            client,
            server.as_mut(),
            start_at,
            params.check_threads,
            progress,
        );
        if run.crashed.is_none() {
            *kept = server;
        }
        Ok(run)
    };
    match load() {
        Ok(run) => cell.record(run, params),
        Err(status) => cell.status = status,
    }
    cell
}

/// What one cell's load produced, before it becomes a [`CellResult`].
struct Run {
    merged: client::ThreadResult,
    /// Seconds from the end of the warm-up to the end of the load.
    recorded: f64,
    server_cpu: Option<proc::CpuUse>,
    client_cpu: Option<proc::CpuUse>,
    server_peak_rss: Option<u64>,
    /// The server's threads over the recorded window ([`threads`]).
    server_threads: Option<Vec<threads::ThreadUse>>,
    crashed: Option<String>,
}

/// Why a cell does not run at all: Ctrl-C, a framework this machine cannot serve (the Go
/// peers without `go`, or whose build failed; `available` said why, once, and built the Go
/// peers before any server start-up timeout runs), or a scenario the framework cannot serve
/// through its own API, or a framework that does not speak the cell's protocol.
fn refuse(target: &Target, scenario: &Scenario, protocol: Protocol) -> Result<(), Status> {
    if interrupted().load(Ordering::Relaxed) {
        return Err(Status::Interrupted);
    }
    if let Target::Framework(e, options) = target {
        let options = Options {
            protocol,
            ..*options
        };
        if let Some((what, why)) = e.lacks(&options) {
            return Err(NotRun::Unsupported(format!("no {what}: {why}")).into());
        }
        e.available()?;
        if let Some(why) = e.cannot(scenario.name) {
            return Err(NotRun::Unsupported(why.to_owned()).into());
        }
    }
    Ok(())
}

/// The address to load, and the `framebench serve` child behind it for a framework.
fn start(
    target: &Target,
    params: &LoadParams,
) -> Result<(SocketAddr, Option<ServerProcess>), Status> {
    match target {
        Target::Url(a) => Ok((*a, None)),
        Target::Framework(e, o) => framebench_exe()
            .and_then(|exe| ServerProcess::start(&exe, e.name, *o, &params.pinning.server_cpus))
            .map(|s| (s.addr(), Some(s)))
            .map_err(Status::from),
    }
}

/// The oracle check before load, with the cell's pipelining depth.
fn check_first(
    addr: SocketAddr,
    expected: &Expected,
    requests: &[Instance],
    params: &LoadParams,
    server: Option<&mut ServerProcess>,
) -> Result<(), Status> {
    let timeout = params.timeout.max(Duration::from_secs(2));
    let checked = params.protocol.precheck(
        params.transport,
        addr,
        expected,
        requests,
        params.pipeline,
        timeout,
    );
    let Err(e) = checked else {
        return Ok(());
    };
    Err(match server {
        Some(s) => match s.exited() {
            Some(how) => Status::Crashed(format!(
                "{how} during the oracle check; {}",
                s.stderr_text()
            )),
            None => Status::Failing(format!("oracle check before load: {e}")),
        },
        None => Status::Failing(format!("oracle check before load: {e}")),
    })
}

/// Checks one sampled response, whole, against the oracle and the request it answers.
fn sampler(protocol: Protocol, expected: Expected, requests: Arc<[Instance]>) -> client::Sampler {
    Arc::new(move |bytes: &[u8], index: usize| {
        expected.check_instance(&requests[index], &protocol.observed(bytes)?)
    })
}

/// Checks one h2c answer, whole, against the oracle and the request it answers.
fn h2_sampler(expected: Expected, requests: &Arc<[Instance]>) -> client::streams::Sampler {
    let requests = Arc::clone(requests);
    Arc::new(move |res: &http::Response<bytes::Bytes>, index: usize| {
        expected.check_instance(&requests[index], &Observed::from_response(res))
    })
}

/// A cell's client, HTTP/1.1 or h2c, run on a thread of its own until it is done or the flag
/// it is given is set; one result per client thread (or h2c connection).
type Client = Box<dyn FnOnce(&Arc<AtomicBool>) -> Vec<client::ThreadResult> + Send>;

/// The client's half of a cell.
fn client_spec(
    addr: SocketAddr,
    requests: &[Instance],
    connections: usize,
    params: &LoadParams,
) -> anyhow::Result<client::ClientSpec> {
    Ok(client::ClientSpec {
        addr,
        requests: Arc::new(client::Ring::new(
            requests,
            params.pipeline,
            params.protocol,
        )?),
        requests_per_connection: params.requests_per_connection,
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
        hdr_interval: params.hdr_interval.map(Duration::from_secs_f64),
        tls: match params.transport {
            Transport::Tls => Some(crate::transport::tls::client_config(
                params.resumption,
                params.protocol,
            )?),
            Transport::Tcp => None,
        },
        protocol: params.protocol,
        upgrade: params.protocol.upgrade(&requests[0]),
    })
}

/// The load client alone against the server at `addr`, for tests/driver_allocs.rs: exactly
/// `requests` requests of `scenario` on `connections` connections, `pipeline` deep, one thread,
/// only each connection's first answer checked. Returns what every thread of this process
/// allocated while it ran (the binary's allocator must be [`crate::allocs::Global`]) and how
/// many answers came back. The oracle and the request ring are built before the count, as
/// `run_cell` builds them before the client threads start.
#[doc(hidden)]
pub fn count_client(
    addr: SocketAddr,
    scenario: &'static Scenario,
    requests: u64,
    pipeline: usize,
    connections: usize,
) -> anyhow::Result<(crate::allocs::Counts, u64)> {
    let expected = scenario.expected(&*Fixtures::load_default()?)?;
    let instances: Arc<[Instance]> = scenario.instances(crate::cell::RING).into();
    let spec = client::ClientSpec {
        addr,
        requests: Arc::new(client::Ring::new(&instances, pipeline, Default::default())?),
        requests_per_connection: None,
        connections,
        threads: 1,
        pipeline,
        rate: None,
        warmup: Duration::ZERO,
        duration: Duration::from_secs(60),
        timeout: Duration::from_secs(5),
        max_requests: Some(requests),
        sample_every: u64::MAX,
        cpus: Vec::new(),
        hdr_interval: None,
        tls: None,
        protocol: Default::default(),
        upgrade: None,
    };
    let sampler = sampler(Protocol::default(), expected, instances);
    let stop = Arc::new(AtomicBool::new(false));
    let (results, counts) = crate::allocs::count(|| client::run(&spec, sampler, &stop));
    for r in &results {
        anyhow::ensure!(
            r.socket_errors == 0 && r.timeouts == 0 && r.mismatches == 0,
            "{} socket errors, {} timeouts, {} mismatches: {:?} {:?}",
            r.socket_errors,
            r.timeouts,
            r.mismatches,
            r.first_error,
            r.first_mismatch
        );
    }
    let answered = results.iter().flat_map(|r| &r.per_conn).sum();
    Ok((counts, answered))
}

/// Runs the client against the server, metering both from the end of the warm-up, until the
/// client is done, the server dies or Ctrl-C.
fn drive(
    warmup: Duration,
    client: Client,
    mut server: Option<&mut ServerProcess>,
    start_at: Option<std::time::SystemTime>,
    check_threads: bool,
    progress: &mut dyn FnMut(Duration),
) -> Run {
    // The client threads stop on Ctrl-C or when this cell's server dies.
    let cell_stop = Arc::new(AtomicBool::new(false));
    if let Some(at) = start_at {
        wait_until(at.checked_sub(warmup).unwrap_or(at));
    }
    let start = Instant::now();
    let record_from = start + warmup;
    // The client thread says when it is done, so that a short cell waits for no tick: the
    // quick compare runs hundreds of 0.1 s cells.
    let (done_tx, done) = std::sync::mpsc::channel();
    let handle = {
        let cell_stop = Arc::clone(&cell_stop);
        std::thread::spawn(move || {
            let results = client(&cell_stop);
            let _ = done_tx.send(());
            results
        })
    };
    let mut meters = None;
    let mut crashed = None;
    loop {
        // Wake at the end of the warm-up to start the meters there, else every 20 ms to
        // watch the server and Ctrl-C, or as soon as the client is done.
        let tick = match meters {
            None => record_from
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(20)),
            Some(_) => Duration::from_millis(20),
        };
        let finished = !matches!(
            done.recv_timeout(tick),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout)
        );
        let now = Instant::now();
        if meters.is_none() && now >= record_from && !finished {
            meters = Some(start_meters(server.as_deref(), check_threads));
        }
        if finished {
            break;
        }
        if note_crash(server.as_deref_mut(), &mut crashed) || interrupted().load(Ordering::Relaxed)
        {
            cell_stop.store(true, Ordering::Relaxed);
        }
        progress(now - start);
    }
    let recorded = record_from.elapsed().as_secs_f64();
    let (server_cpu, client_cpu, server_threads) = read_meters(meters, server.as_deref());
    let server_peak_rss = server.as_deref().and_then(|s| proc::peak_rss(s.pid()));
    let results = handle.join().unwrap_or_default();
    note_crash(server, &mut crashed);
    Run {
        merged: client::ThreadResult::merge(results),
        recorded,
        server_cpu,
        client_cpu,
        server_peak_rss,
        server_threads,
        crashed,
    }
}

/// The meters of a cell's recorded window: the server's CPU (and its threads, when checked)
/// and the client's (this process's) CPU.
type Meters = (
    Option<(proc::CpuMeter, Option<threads::Snapshot>)>,
    proc::CpuMeter,
);

/// Starts the meters at the end of the warm-up.
fn start_meters(server: Option<&ServerProcess>, check_threads: bool) -> Meters {
    (
        server.map(|s| {
            (
                proc::CpuMeter::start_tree(s.pid()),
                check_threads.then(|| threads::Snapshot::take(s.pid())),
            )
        }),
        proc::CpuMeter::start(std::process::id()),
    )
}

/// What the meters read at the end of the load: the server's CPU, the client's, and the
/// server's threads over the window; nothing for a load that ended before its warm-up did.
fn read_meters(
    meters: Option<Meters>,
    server: Option<&ServerProcess>,
) -> (
    Option<proc::CpuUse>,
    Option<proc::CpuUse>,
    Option<Vec<threads::ThreadUse>>,
) {
    let Some((server_meter, client_meter)) = meters else {
        return (None, None, None);
    };
    // The CPU first, then the threads, whose reading takes a few milliseconds of /proc.
    let (server_cpu, client_cpu) = (
        server_meter.as_ref().and_then(|(m, _)| m.used()),
        client_meter.used(),
    );
    let server_threads = match (&server_meter, server) {
        (Some((_, Some(before))), Some(s)) => Some(threads::Snapshot::take(s.pid()).since(before)),
        _ => None,
    };
    (server_cpu, client_cpu, server_threads)
}

/// Sleeps until the wall clock reads `at` (`--start-at`, less the warm-up), in steps that
/// watch Ctrl-C. The CLI bounds `at` to the next hour.
fn wait_until(at: std::time::SystemTime) {
    while let Ok(left) = at.duration_since(std::time::SystemTime::now()) {
        if left.is_zero() || interrupted().load(Ordering::Relaxed) {
            break;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
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

/// Descriptors a load's processes hold besides their connections: stdio, epoll and timer
/// descriptors, the server's threads and files (as `framebench memory` counts them).
const HEADROOM: u64 = 512;

/// Makes room for `connections` connections under the open-file limit: a descriptor each in
/// this process and in the server child, which inherits the limit when it starts
/// ([`proc::raise_open_files`]; a shell's soft limit is often 1,024). A count past the hard limit
/// is one line before anything runs.
pub(crate) fn make_room(connections: usize) -> anyhow::Result<()> {
    proc::raise_open_files(connections as u64 + HEADROOM)
        .map(drop)
        .map_err(|e| anyhow::anyhow!("-c {connections}: {e}"))
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_connection_count_past_the_hard_limit_is_one_line() {
        super::make_room(10).unwrap();
        let e = super::make_room(usize::MAX / 4).unwrap_err().to_string();
        assert!(
            e.starts_with("-c ") && e.contains("hard limit") && !e.contains('\n'),
            "{e}"
        );
    }
}
